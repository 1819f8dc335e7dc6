//! The DAT objects: state machines, checks and events, written once for
//! every transport.

pub mod cno;
pub mod evd;
pub mod event;
pub mod ia;
pub mod lmr;
pub mod pz;
pub mod rmr;

pub use cno::{Agent, AgentInvoker, Cno, CnoWake};
pub use evd::{Evd, EvdParams, WaitOutcome, EVD_ASYNC_FLAG, EVD_SOFTWARE_FLAG};
pub use event::{Event, EventData};
pub use ia::{AsyncRequest, Ia, Limits, OpenParams};
pub use lmr::{Lmr, LmrRequest, Region};
pub use pz::Pz;
pub use rmr::{Rmr, RmrParams};

use crate::error::{DatError, Result, Sub, Type};

/// Endpoints, service points, connection requests and SRQs arrive with the
/// connection layer; until then no handle of those types is live, so every
/// such handle is `DAT_INVALID_HANDLE` with the type's subtype.
pub fn ep_absent(_addr: usize) -> Result<()> {
    Err(DatError::handle(Sub::HandleEp))
}

/// The same for the other connection-layer object types.
pub fn absent(sub: Sub) -> Result<()> {
    Err(DatError::handle(sub))
}

/// Creating connection-layer objects is not available yet in this build.
pub fn connection_layer_pending() -> Result<()> {
    Err(DatError::of(Type::NotImplemented))
}
