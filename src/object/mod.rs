//! The DAT objects: state machines, checks and events, written once for
//! every transport.
//!
//! Invariants: an object is live while its handle slot says so
//! ([`crate::handle`]); modules depend one way, a lower object calling a
//! higher one through a trait it defines (docs/architecture.md, "The DAT
//! object layer"). Lock order: the IA's structural state ([`ia::Ia`]), then
//! one object's own state, then leaf locks; events are posted and consumer
//! callbacks run with no lock held; a mutex poisoned by a panic makes the
//! objects it guards answer `DAT_INTERNAL_ERROR`.

pub mod attr;
pub mod cno;
pub mod ep;
pub mod evd;
pub mod event;
pub mod ia;
pub mod lmr;
pub mod pz;
pub mod rmr;
pub mod segment;
#[cfg(test)]
mod small_device_tests;
pub mod sp;
pub mod srq;
#[cfg(test)]
pub(crate) mod tests;

pub use attr::{IaAttributes, Limits, ProviderAttributes};
pub use cno::{Cno, CnoWake};
pub use ep::Ep;
pub use evd::{Evd, EvdParams, WaitOutcome, EVD_ASYNC_FLAG, EVD_SOFTWARE_FLAG};
pub use event::{Event, EventData};
pub use ia::{Agent, AgentInvoker, AsyncRequest, Ia, OpenParams};
pub use lmr::{Lmr, LmrRequest, Region};
pub use pz::Pz;
pub use rmr::{Rmr, RmrParams};
pub use sp::{Cr, Psp, Rsp, Sp};
pub use srq::Srq;

use std::sync::Arc;

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, HandleType, Kind, Ref};

impl Kind for Ia {
    const TYPE: HandleType = HandleType::Ia;
}
impl Kind for Pz {
    const TYPE: HandleType = HandleType::Pz;
}
impl Kind for Evd {
    const TYPE: HandleType = HandleType::Evd;
}
impl Kind for Cno {
    const TYPE: HandleType = HandleType::Cno;
}
impl Kind for Lmr {
    const TYPE: HandleType = HandleType::Lmr;
}
impl Kind for Rmr {
    const TYPE: HandleType = HandleType::Rmr;
}

/// A child object an IA owns.
#[derive(Clone)]
pub(crate) enum Object {
    Pz(Arc<Pz>),
    Evd(Arc<Evd>),
    Cno(Arc<Cno>),
    Lmr(Arc<Lmr>),
    Rmr(Arc<Rmr>),
    Ep(Arc<Ep>),
    Psp(Arc<Psp>),
    Rsp(Arc<Rsp>),
    Cr(Arc<Cr>),
    Srq(Arc<Srq>),
}

impl Object {
    /// Its `DAT_HANDLE_TYPE`.
    pub(crate) fn handle_type(&self) -> HandleType {
        match self {
            Object::Pz(_) => HandleType::Pz,
            Object::Evd(_) => HandleType::Evd,
            Object::Cno(_) => HandleType::Cno,
            Object::Lmr(_) => HandleType::Lmr,
            Object::Rmr(_) => HandleType::Rmr,
            Object::Ep(_) => HandleType::Ep,
            Object::Psp(_) => HandleType::Psp,
            Object::Rsp(_) => HandleType::Rsp,
            Object::Cr(_) => HandleType::Cr,
            Object::Srq(_) => HandleType::Srq,
        }
    }

    /// Retires its handle; false if it was already retired.
    pub(crate) fn retire(&self) -> bool {
        match self {
            Object::Pz(o) => handle::retire::<Pz>(o.handle),
            Object::Evd(o) => handle::retire::<Evd>(o.handle),
            Object::Cno(o) => handle::retire::<Cno>(o.handle),
            Object::Lmr(o) => handle::retire::<Lmr>(o.handle),
            Object::Rmr(o) => handle::retire::<Rmr>(o.handle),
            Object::Ep(o) => handle::retire::<Ep>(o.handle),
            Object::Psp(o) => handle::retire::<Psp>(o.sp.handle),
            Object::Rsp(o) => handle::retire::<Rsp>(o.sp.handle),
            Object::Cr(o) => handle::retire::<Cr>(o.handle),
            Object::Srq(o) => handle::retire::<Srq>(o.handle),
        }
    }
}

pub(crate) use crate::sync::{lock, lock_anyway};

/// `DAT_EVD_CR_FLAG`, `DAT_EVD_DTO_FLAG`, `DAT_EVD_CONNECTION_FLAG`,
/// `DAT_EVD_RMR_BIND_FLAG`.
pub const EVD_CR_FLAG: u32 = 0x010;
pub const EVD_DTO_FLAG: u32 = 0x020;
pub const EVD_CONNECTION_FLAG: u32 = 0x040;
pub const EVD_RMR_BIND_FLAG: u32 = 0x080;

/// An EVD argument in a role (recv, request, connect, CR): NULL, or a live
/// EVD of `ia` whose flags include `need`; otherwise `DAT_INVALID_HANDLE/sub`.
pub fn evd_for_role(ia: &Ia, addr: usize, need: u32, sub: Sub) -> Result<Option<Arc<Evd>>> {
    if addr == 0 {
        return Ok(None);
    }
    let evd = handle::get::<Evd>(addr).ok_or(DatError::handle(sub))?;
    if !evd.is_alive() || evd.ia.handle != ia.handle || evd.flags & need != need {
        return Err(DatError::handle(sub));
    }
    Ok(Some(evd.arc()))
}

/// A PZ argument: a live PZ of `ia` (NULL allowed when `optional`).
pub fn pz_for(ia: &Ia, addr: usize, optional: bool) -> Result<Option<Ref<Pz>>> {
    if addr == 0 && optional {
        return Ok(None);
    }
    let pz = pz::lookup(addr)?;
    ia::same_ia(&pz.ia, ia, Sub::HandlePz)?;
    Ok(Some(pz))
}
