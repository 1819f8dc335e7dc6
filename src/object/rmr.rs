//! Remote Memory Region (memory window). Binding needs an endpoint; the
//! binding state lives here so that query and free work on every RMR.

use std::sync::{Arc, Mutex};

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, Handle, HandleType, Object};
use crate::object::ia::Ia;
use crate::object::{Lmr, Pz};

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
pub struct Rmr {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    pub pz: Arc<Pz>,
    binding: Mutex<Option<Binding>>,
}

impl Rmr {
    /// `dat_rmr_create`: an unbound RMR in `pz`.
    pub fn create(pz: &Arc<Pz>) -> Result<Arc<Rmr>> {
        let ia = &pz.ia;
        let mut st = ia.live_state()?;
        if !st.is_live(pz.handle) {
            return Err(DatError::handle(Sub::HandlePz));
        }
        st.check_limit(
            HandleType::Rmr,
            ia.limits.max_rmrs,
            Sub::ResourceMemoryRegion,
        )?;
        let res = handle::reserve(ia.provider_word)?;
        let rmr = Arc::new(Rmr {
            handle: res.handle(),
            ia: ia.clone(),
            pz: pz.clone(),
            binding: Mutex::new(None),
        });
        st.add_use(pz.handle);
        st.insert(rmr.handle, Object::Rmr(rmr.clone()));
        res.publish(Object::Rmr(rmr.clone()));
        Ok(rmr)
    }

    /// `dat_rmr_query` values.
    pub fn params(&self) -> RmrParams {
        let b = self.binding.lock().unwrap_or_else(|p| p.into_inner());
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
        p
    }

    /// `dat_rmr_free`: unbinds implicitly (no completion event), releasing
    /// the bound LMR and the PZ.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if !st.is_live(self.handle) {
            return Err(DatError::handle(Sub::HandleRmr));
        }
        let old = self
            .binding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(b) = old {
            st.drop_use(b.lmr.handle);
            st.live_contexts.remove(&b.rmr_context);
        }
        st.drop_use(self.pz.handle);
        st.remove(self.handle);
        Ok(())
    }
}

/// Looks up a live RMR, `DAT_INVALID_HANDLE/RMR` otherwise.
pub fn lookup(addr: usize) -> Result<Arc<Rmr>> {
    let rmr = handle::expect::<Rmr>(addr, Sub::HandleRmr)?;
    if !rmr.ia.live_state()?.is_live(rmr.handle) {
        return Err(DatError::handle(Sub::HandleRmr));
    }
    Ok(rmr)
}
