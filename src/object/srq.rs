//! Shared Receive Queue (semantics-ep.md §4.28–4.33) over a transport SRQ.
//!
//! A buffer occupies an SRQ entry from its post until the consumer has
//! dequeued its completion (§4.31's worked example): completion events of
//! SRQ receives carry a [`Credit::Srq`] that the EVD releases.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::ia::{self, Ia};
use crate::object::segment::{key_fault, sgl, Segment, MAX_IOV};
use crate::object::{lock, Object, Pz};
use crate::sync::lock_anyway;
use crate::transport::api::{DeviceError, PostError, RecvWr, Sge, SharedReceiveQueue};

/// `DAT_SRQ_PARAM` as the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqParams {
    pub ia: Handle,
    /// `DAT_SRQ_STATE_OPERATIONAL` (0) or `_ERROR` (1).
    pub state: u32,
    pub pz: Handle,
    pub max_recv_dtos: i32,
    pub max_recv_iov: i32,
    pub low_watermark: i32,
    pub available: i32,
    pub outstanding: i32,
}

/// `DAT_SRQ_FIELD_ALL`.
pub const SRQ_FIELD_ALL: u64 = 0xff;

struct State {
    max_recv_dtos: i32,
    freed: bool,
}

/// A shared receive queue.
#[repr(align(16))]
pub struct Srq {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    pub pz: Arc<Pz>,
    pub max_recv_iov: i32,
    srq: Arc<dyn SharedReceiveQueue>,
    /// Posted and not yet dequeued.
    outstanding: AtomicI32,
    state: Mutex<State>,
    /// The receive EVDs of the EPs on this SRQ (`Feeder`).
    feeders: Mutex<Vec<Weak<dyn Feeder>>>,
}

/// The receive EVD of an EP on an SRQ. A device tells that a receive was
/// consumed only through its CQ: `dat_srq_query` moves what the CQs hold
/// into the EVDs first, so that `available_dto_count` drops on arrival
/// (SQQ_01), not when the consumer polls.
pub(crate) trait Feeder: Send + Sync {
    /// Moves completions from the CQ into the event queue.
    fn fill(&self);
}

impl handle::Kind for Srq {
    const TYPE: HandleType = HandleType::Srq;
}

impl Srq {
    /// `dat_srq_create`.
    pub fn create(
        ia: &Arc<Ia>,
        pz: Handle,
        max_recv_dtos: i32,
        max_recv_iov: i32,
        low_watermark: i32,
    ) -> Result<Arc<Srq>> {
        let pz =
            crate::object::pz_for(ia, pz.addr(), false)?.ok_or(DatError::handle(Sub::HandlePz))?;
        if !ia.provider_attributes.srq_supported {
            return Err(DatError::of(Type::ModelNotSupported));
        }
        if max_recv_dtos <= 0 || max_recv_dtos > ia.limits.max_recv_per_srq {
            return Err(DatError::invalid(Input::SrqAttr));
        }
        if max_recv_iov <= 0 || max_recv_iov > ia.limits.max_iov_segments_per_dto {
            return Err(DatError::invalid(Input::SrqAttr));
        }
        if low_watermark != 0 {
            return Err(DatError::invalid(Input::SrqAttr));
        }
        let mut st = ia.live_state()?;
        st.check_limit(HandleType::Srq, ia.limits.max_srqs, Sub::ResourceSrq)?;
        if !handle::is_live(pz.handle) {
            return Err(DatError::handle(Sub::HandlePz));
        }
        let depth = u32::try_from(max_recv_dtos).map_err(|_| DatError::invalid(Input::SrqAttr))?;
        let sge = u32::try_from(max_recv_iov).map_err(|_| DatError::invalid(Input::SrqAttr))?;
        let srq = ia
            .dev
            .create_srq(crate::transport::api::PdId(pz.key_id()), depth, sge)
            .map_err(|e| match e {
                DeviceError::Unsupported => DatError::of(Type::ModelNotSupported),
                _ => DatError::resources(Sub::ResourceSrq),
            })?;
        let res = handle::reserve(ia.provider_word)?;
        let s = Arc::new(Srq {
            handle: res.handle(),
            ia: ia.clone(),
            pz: pz.arc(),
            max_recv_iov,
            srq,
            outstanding: AtomicI32::new(0),
            feeders: Mutex::default(),
            state: Mutex::new(State {
                max_recv_dtos,
                freed: false,
            }),
        });
        st.add_use(pz.handle);
        st.insert(s.handle, Object::Srq(s.clone()));
        res.publish(s.clone());
        Ok(s)
    }

    /// The transport queue (for the EPs' queue pairs).
    pub(crate) fn transport(&self) -> Arc<dyn SharedReceiveQueue> {
        self.srq.clone()
    }

    /// Its current capacity.
    pub(crate) fn depth(&self) -> u32 {
        self.srq.depth()
    }

    /// An SRQ receive's completion was dequeued.
    pub(crate) fn release(&self) {
        let _ = self
            .outstanding
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some((v - 1).max(0))
            });
    }

    fn live(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        let s = lock(&self.state)?;
        if s.freed {
            return Err(DatError::handle(Sub::HandleSrq));
        }
        Ok(s)
    }

    /// `dat_srq_post_recv`.
    pub fn post_recv(&self, iov: &[Segment], cookie: u64) -> Result<()> {
        let max = {
            let s = self.live()?;
            s.max_recv_dtos
        };
        if iov.len() > usize::try_from(self.max_recv_iov).unwrap_or(0) {
            return Err(DatError::invalid(Input::NumSegments));
        }
        let mut buf = [Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        }; MAX_IOV];
        // The transport's post checks every segment (key, the SRQ's PZ,
        // bounds, rights).
        let (n, _) = sgl(iov, &mut buf)?;
        self.outstanding
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                (v < max).then_some(v + 1)
            })
            .map_err(|_| DatError::resources(Sub::None))?;
        match self.srq.post_recv(&RecvWr {
            wr_id: cookie,
            ctx: 0,
            sgl: &buf[..n],
        }) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.release();
                Err(match e {
                    PostError::QueueFull => DatError::resources(Sub::None),
                    PostError::Protection(f) => key_fault(f, Input::LocalIov),
                    _ => DatError::invalid(Input::NumSegments),
                })
            }
        }
    }

    /// An EP on this SRQ has `evd` as its receive EVD.
    pub(crate) fn fed_by(&self, evd: &Arc<dyn Feeder>) {
        let mut f = lock_anyway(&self.feeders);
        f.retain(|w| w.strong_count() > 0);
        let w = Arc::downgrade(evd);
        if !f.iter().any(|x| x.ptr_eq(&w)) {
            f.push(w);
        }
    }

    /// `dat_srq_query`.
    pub fn query(&self, mask: u64) -> Result<SrqParams> {
        if mask & !SRQ_FIELD_ALL != 0 {
            return Err(DatError::invalid(Input::SrqParamMask));
        }
        drop(self.live()?);
        let feeders: Vec<_> = lock_anyway(&self.feeders)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for f in feeders {
            f.fill();
        }
        let s = self.live()?;
        Ok(SrqParams {
            ia: self.ia.handle,
            state: 0,
            pz: self.pz.handle,
            max_recv_dtos: s.max_recv_dtos,
            max_recv_iov: self.max_recv_iov,
            low_watermark: 0,
            available: i32::try_from(self.srq.outstanding()).unwrap_or(i32::MAX),
            outstanding: self.outstanding.load(Ordering::Acquire),
        })
    }

    /// `dat_srq_resize`: never below the entries in use.
    pub fn resize(&self, n: i32) -> Result<()> {
        let mut s = self.live()?;
        if n <= 0 || n > self.ia.limits.max_recv_per_srq {
            return Err(DatError::invalid(Input::SrqMaxRecvDto));
        }
        if n < self.outstanding.load(Ordering::Acquire) {
            return Err(ia::invalid_state());
        }
        let depth = u32::try_from(n).map_err(|_| DatError::invalid(Input::SrqMaxRecvDto))?;
        if depth > self.srq.depth() {
            self.srq
                .resize(depth)
                .map_err(|_| DatError::resources(Sub::ResourceSrq))?;
        }
        s.max_recv_dtos = n;
        Ok(())
    }

    /// `dat_srq_set_lw`: watermarks have no event in 1.2 (rulings).
    pub fn set_lw(&self, _lw: i32) -> Result<()> {
        drop(self.live()?);
        Err(DatError::of(Type::ModelNotSupported))
    }

    /// `dat_srq_free`: refused while an EP uses it (ruling E7).
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if st.users(self.handle) > 0 {
            return Err(DatError::state(Sub::SrqInUse));
        }
        st.remove(self.handle, Sub::HandleSrq)?;
        st.drop_use(self.pz.handle);
        if let Ok(mut s) = lock(&self.state) {
            s.freed = true;
        }
        Ok(())
    }
}

/// Looks up a live SRQ.
pub fn lookup(addr: usize) -> Result<Ref<Srq>> {
    handle::expect::<Srq>(addr, Sub::HandleSrq)
}
