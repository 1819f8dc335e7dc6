//! The 72 exported DAT 1.2 functions, grouped by object.

pub mod cno;
pub mod cr;
pub mod ep;
pub mod evd;
pub mod ia;
pub mod mem;
pub mod misc;
pub mod registry;
pub mod sp;
pub mod srq;

pub use cno::*;
pub use cr::*;
pub use ep::*;
pub use evd::*;
pub use ia::*;
pub use mem::*;
pub use misc::*;
pub use registry::*;
pub use sp::*;
pub use srq::*;
