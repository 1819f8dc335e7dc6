//! Remote Memory Region (memory window). Binding needs an endpoint; the
//! binding state lives here so that query and free work on every RMR. Each
//! RMR owns a memory window of its IA's device from creation on (an opaque
//! id); a bind gives it a fresh remote key, chosen by the device (the
//! `rmr_context`).

use std::sync::{Arc, Mutex};

use crate::error::{DatError, Result, Sub};
use crate::error::{Input, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::ia;
use crate::object::ia::Ia;
use crate::object::lmr::{
    PRIV_LOCAL_READ, PRIV_LOCAL_WRITE, PRIV_REMOTE_READ, PRIV_REMOTE_WRITE, PRIV_RO_DISABLE,
};
use crate::object::segment::Segment;
use crate::object::{lock, lock_anyway, Lmr, Object, Pz};
use crate::transport::api::{Access, DeviceError, PdId, WindowId};

/// The endpoint a bind is posted on (implemented by the EP, which knows
/// RMRs: the RMR knows it only through this).
pub trait BindQueue {
    /// The endpoint's IA.
    fn ia(&self) -> &Ia;
    /// Posts the bind of `rmr` to `seg` on the endpoint's send queue;
    /// returns the new `rmr_context` (0 when it was flushed at once).
    fn post_bind(
        &self,
        rmr: &Rmr,
        seg: Segment,
        access: Access,
        cookie: u64,
        flags: u32,
    ) -> Result<u32>;
}

/// A current binding of an RMR.
#[derive(Clone)]
pub struct Binding {
    pub lmr: Arc<Lmr>,
    pub lmr_context: u32,
    pub virtual_address: u64,
    pub length: u64,
    pub privileges: u32,
    pub rmr_context: u32,
}

/// `DAT_RMR_PARAM` as the core sees it. Unbound fields read as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RmrParams {
    pub ia: Handle,
    pub pz: Handle,
    pub lmr_context: u32,
    pub virtual_address: u64,
    pub length: u64,
    pub privileges: u32,
    pub rmr_context: u32,
}

/// An RMR.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Rmr {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    pub pz: Arc<Pz>,
    binding: Mutex<Option<Binding>>,
    /// A bind posted and not yet completed.
    pending: Mutex<Option<Option<Binding>>>,
    /// The device's memory window.
    window: WindowId,
}

impl Rmr {
    /// `dat_rmr_create`: an unbound RMR in `pz`.
    pub fn create(pz: &Arc<Pz>) -> Result<Arc<Rmr>> {
        let ia = &pz.ia;
        let mut st = ia.live_state()?;
        if !handle::is_live(pz.handle) {
            return Err(DatError::handle(Sub::HandlePz));
        }
        if ia.limits.max_rmrs == 0 {
            // The transport has no memory windows.
            return Err(DatError::of(Type::ModelNotSupported));
        }
        st.check_limit(
            HandleType::Rmr,
            ia.limits.max_rmrs,
            Sub::ResourceMemoryRegion,
        )?;
        let window = ia
            .dev
            .alloc_window(PdId(pz.key_id()))
            .map_err(|e| match e {
                DeviceError::Unsupported => DatError::of(Type::ModelNotSupported),
                _ => DatError::resources(Sub::ResourceMemoryRegion),
            })?;
        let res = match handle::reserve(ia.provider_word) {
            Ok(r) => r,
            Err(e) => {
                let _ = ia.dev.dealloc_window(window);
                return Err(e);
            }
        };
        let rmr = Arc::new(Rmr {
            handle: res.handle(),
            ia: ia.clone(),
            pz: pz.clone(),
            binding: Mutex::new(None),
            pending: Mutex::new(None),
            window,
        });
        st.add_use(pz.handle);
        st.insert(rmr.handle, Object::Rmr(rmr.clone()));
        res.publish(rmr.clone());
        Ok(rmr)
    }

    /// `dat_rmr_query` values.
    pub fn params(&self) -> Result<RmrParams> {
        let b = lock(&self.binding)?;
        let mut p = RmrParams {
            ia: self.ia.handle,
            pz: self.pz.handle,
            ..Default::default()
        };
        if let Some(b) = b.as_ref() {
            p.lmr_context = b.lmr_context;
            p.virtual_address = b.virtual_address;
            p.length = b.length;
            p.privileges = b.privileges;
            p.rmr_context = b.rmr_context;
        }
        Ok(p)
    }

    /// Frees its memory window: its remote key stops working.
    pub(crate) fn release_keys(&self) {
        let _ = self.ia.dev.dealloc_window(self.window);
    }

    /// The device's memory window.
    pub(crate) fn window(&self) -> WindowId {
        self.window
    }

    /// `dat_rmr_bind`: a bind (or, with a zero length, an unbind) posted on
    /// `ep`'s send queue; the new context works once its completion is
    /// reported. The LMR in use is counted from the post.
    pub fn bind(
        &self,
        seg: Segment,
        mem_priv: u32,
        ep: &impl BindQueue,
        cookie: u64,
        flags: u32,
    ) -> Result<u32> {
        ia::same_ia(ep.ia(), &self.ia, Sub::HandleEp)?;
        // The local bits and RO_DISABLE are accepted and ignored.
        let defined = PRIV_LOCAL_READ | PRIV_REMOTE_READ | PRIV_LOCAL_WRITE | PRIV_REMOTE_WRITE;
        if mem_priv & !(defined | PRIV_RO_DISABLE) != 0 {
            return Err(DatError::invalid(Input::MemPriv));
        }
        let unbind = seg.len == 0;
        let (lmr, access) = if unbind {
            (None, Access::NONE)
        } else {
            let lmr = Lmr::of_context(&self.ia, seg.lmr_context)
                .ok_or(DatError::invalid(Input::LmrTriplet))?;
            if !lmr.contains(seg.addr, seg.len) {
                return Err(DatError::invalid(Input::LmrTriplet));
            }
            let mut access = Access::NONE;
            if mem_priv & PRIV_REMOTE_READ != 0 {
                access = access.union(Access::REMOTE_READ);
            }
            if mem_priv & PRIV_REMOTE_WRITE != 0 {
                access = access.union(Access::REMOTE_WRITE);
                if lmr.privileges & PRIV_LOCAL_WRITE == 0 {
                    return Err(DatError::of(Type::PrivilegesViolation));
                }
            }
            if lmr.pz.handle != self.pz.handle {
                return Err(DatError::of(Type::ProtectionViolation));
            }
            (Some(lmr), access)
        };
        let key = ep.post_bind(self, seg, access, cookie, flags)?;
        let next = lmr.map(|lmr| Binding {
            lmr_context: seg.lmr_context,
            virtual_address: seg.addr,
            length: seg.len,
            privileges: mem_priv & (PRIV_REMOTE_READ | PRIV_REMOTE_WRITE),
            rmr_context: key,
            lmr,
        });
        // The new binding holds its LMR from now on; the old one lets go
        // when the bind completes.
        let mut st = self.ia.state();
        if let Some(b) = &next {
            st.add_use(b.lmr.handle);
        }
        drop(st);
        if key == 0 && !unbind {
            // Flushed at once (disconnected EP): nothing changes.
            if let Some(b) = &next {
                self.ia.state().drop_use(b.lmr.handle);
            }
            return Ok(0);
        }
        let replaced = lock_anyway(&self.pending).replace(next);
        if let Some(Some(b)) = replaced {
            self.ia.state().drop_use(b.lmr.handle);
        }
        Ok(key)
    }

    /// The bind posted last completed (`ok`: it took effect).
    pub(crate) fn bind_completed(&self, ok: bool) {
        let Some(next) = lock_anyway(&self.pending).take() else {
            return;
        };
        let old = if ok {
            std::mem::replace(&mut *lock_anyway(&self.binding), next)
        } else {
            next
        };
        if let Some(b) = old {
            self.ia.state().drop_use(b.lmr.handle);
        }
    }

    /// `dat_rmr_free`: unbinds implicitly (no completion event), releasing
    /// the bound LMR and the PZ; the RMR context stops working at once.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        st.remove(self.handle, Sub::HandleRmr)?;
        let old = lock_anyway(&self.binding).take();
        if let Some(b) = old {
            st.drop_use(b.lmr.handle);
        }
        if let Some(Some(b)) = lock_anyway(&self.pending).take() {
            st.drop_use(b.lmr.handle);
        }
        st.drop_use(self.pz.handle);
        self.release_keys();
        Ok(())
    }
}

/// Looks up a live RMR, `DAT_INVALID_HANDLE/RMR` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Rmr>> {
    handle::expect::<Rmr>(addr, Sub::HandleRmr)
}
