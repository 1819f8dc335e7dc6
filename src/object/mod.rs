//! The DAT objects: state machines, checks and events, written once for
//! every transport.

pub mod cno;
pub mod evd;
pub mod event;
pub mod ia;
pub mod lmr;
pub mod pz;
pub mod rmr;
#[cfg(test)]
mod tests;

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
pub fn absent(sub: Sub) -> Result<()> {
    Err(DatError::handle(sub))
}

/// Creating connection-layer objects is not available yet in this build.
pub fn connection_layer_pending() -> Result<()> {
    Err(DatError::of(Type::NotImplemented))
}

/// `DAT_EVD_CR_FLAG`, `DAT_EVD_DTO_FLAG`, `DAT_EVD_CONNECTION_FLAG`.
pub const EVD_CR_FLAG: u32 = 0x010;
pub const EVD_DTO_FLAG: u32 = 0x020;
pub const EVD_CONNECTION_FLAG: u32 = 0x040;

/// An EVD argument in a role (recv, request, connect, CR): NULL, or a live
/// EVD of `ia` whose flags include `need`; otherwise `DAT_INVALID_HANDLE/sub`.
pub fn evd_for_role(
    ia: &std::sync::Arc<Ia>,
    addr: usize,
    need: u32,
    sub: Sub,
) -> Result<Option<std::sync::Arc<Evd>>> {
    if addr == 0 {
        return Ok(None);
    }
    let evd = evd::lookup(addr).map_err(|_| DatError::handle(sub))?;
    if !evd.is_alive() || evd.ia.handle != ia.handle || evd.flags & need != need {
        return Err(DatError::handle(sub));
    }
    Ok(Some(evd))
}

/// A PZ argument: a live PZ of `ia` (NULL allowed when `optional`).
pub fn pz_for(
    ia: &std::sync::Arc<Ia>,
    addr: usize,
    optional: bool,
) -> Result<Option<std::sync::Arc<Pz>>> {
    if addr == 0 && optional {
        return Ok(None);
    }
    let pz = pz::lookup(addr)?;
    ia::same_ia(&pz.ia, ia, Sub::HandlePz)?;
    Ok(Some(pz))
}
