//! Remote Memory Region (memory window). Binding needs an endpoint; the
//! binding state lives here so that query and free work on every RMR. Each
//! RMR owns an entry of its IA's key table from creation on; a bind gives
//! the entry a fresh remote key (the `rmr_context`).

use std::sync::{Arc, Mutex};

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::ia::Ia;
use crate::object::{lock, lock_anyway, Lmr, Object, Pz};

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
    /// Index of its entry in the IA's key table.
    key_index: u32,
}

impl Rmr {
    /// `dat_rmr_create`: an unbound RMR in `pz`.
    pub fn create(pz: &Arc<Pz>) -> Result<Arc<Rmr>> {
        let ia = &pz.ia;
        let mut st = ia.live_state()?;
        if !handle::is_live(pz.handle) {
            return Err(DatError::handle(Sub::HandlePz));
        }
        st.check_limit(
            HandleType::Rmr,
            ia.limits.max_rmrs,
            Sub::ResourceMemoryRegion,
        )?;
        let key_index = ia.keys.reserve_window(pz.key_id())?;
        let res = match handle::reserve(ia.provider_word) {
            Ok(r) => r,
            Err(e) => {
                ia.keys.deregister(key_index);
                return Err(e);
            }
        };
        let rmr = Arc::new(Rmr {
            handle: res.handle(),
            ia: ia.clone(),
            pz: pz.clone(),
            binding: Mutex::new(None),
            key_index,
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

    /// Invalidates its key-table entry.
    pub(crate) fn release_keys(&self) {
        self.ia.keys.deregister(self.key_index);
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
        st.drop_use(self.pz.handle);
        self.release_keys();
        Ok(())
    }
}

/// Looks up a live RMR, `DAT_INVALID_HANDLE/RMR` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Rmr>> {
    handle::expect::<Rmr>(addr, Sub::HandleRmr)
}
