//! Protection Zone.

use std::sync::Arc;

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::ia::Ia;
use crate::object::Object;
use crate::transport::api::PdId;

/// A Protection Zone. Its users (LMRs, RMRs, EPs, SRQs) are counted in the IA state.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Pz {
    /// Its handle.
    pub handle: Handle,
    /// Its IA.
    pub ia: Arc<Ia>,
    /// The device's protection domain.
    pd: PdId,
}

impl Pz {
    /// `dat_pz_create`.
    pub fn create(ia: &Arc<Ia>) -> Result<Arc<Pz>> {
        let mut st = ia.live_state()?;
        st.check_limit(
            HandleType::Pz,
            ia.limits.max_pzs,
            Sub::ResourceProtectionDomain,
        )?;
        let pd = ia
            .dev
            .alloc_pd()
            .map_err(|_| DatError::resources(Sub::ResourceProtectionDomain))?;
        let res = match handle::reserve(ia.provider_word) {
            Ok(r) => r,
            Err(e) => {
                let _ = ia.dev.dealloc_pd(pd);
                return Err(e);
            }
        };
        let pz = Arc::new(Pz {
            handle: res.handle(),
            ia: ia.clone(),
            pd,
        });
        st.insert(pz.handle, Object::Pz(pz.clone()));
        res.publish(pz.clone());
        Ok(pz)
    }

    /// The zone's identity in memory keys (never 0).
    pub fn key_id(&self) -> u64 {
        self.pd.0
    }

    /// `dat_pz_free`: refused while any LMR, RMR, EP or SRQ uses the PZ.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if st.users(self.handle) > 0 {
            return Err(DatError::state(Sub::PzInUse));
        }
        st.remove(self.handle, Sub::HandlePz)?;
        let _ = self.ia.dev.dealloc_pd(self.pd);
        Ok(())
    }
}

/// Looks up a live PZ, `DAT_INVALID_HANDLE/PZ` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Pz>> {
    handle::expect::<Pz>(addr, Sub::HandlePz)
}
