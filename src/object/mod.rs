//! The DAT objects: state machines, checks and events, written once for
//! every transport.

pub mod cno;
pub mod event;
pub mod evd;
pub mod ia;
pub mod lmr;
pub mod pz;
pub mod rmr;

pub use cno::{Agent, AgentInvoker, Cno, CnoWake};
pub use event::{Event, EventData};
pub use evd::{Evd, EvdParams, WaitOutcome, EVD_ASYNC_FLAG, EVD_SOFTWARE_FLAG};
pub use ia::{AsyncRequest, Ia, Limits, OpenParams};
pub use lmr::{Lmr, LmrRequest, Region};
pub use pz::Pz;
pub use rmr::{Rmr, RmrParams};
