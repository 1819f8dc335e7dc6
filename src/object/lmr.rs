//! Local Memory Region: a registered range of the consumer's memory.

use std::sync::Arc;

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::attr::{
    MEM_TYPE_LMR, MEM_TYPE_SHARED_VIRTUAL, MEM_TYPE_SO_VIRTUAL, MEM_TYPE_VIRTUAL,
};
use crate::object::ia::{self, Ia};
use crate::object::{Object, Pz};
use crate::transport::api::MemoryFault;
use crate::transport::api::{Access, DeviceError, MemoryRegion, PdId};

/// `DAT_MEM_PRIV_*` bits.
pub const PRIV_LOCAL_READ: u32 = 0x01;
pub const PRIV_REMOTE_READ: u32 = 0x02;
pub const PRIV_LOCAL_WRITE: u32 = 0x10;
pub const PRIV_REMOTE_WRITE: u32 = 0x20;
pub const PRIV_RO_DISABLE: u32 = 0x100;
/// Bits accepted on input: the defined ones, RO_DISABLE, and 0x04, which the
/// reference accepts (it grants nothing).
const PRIV_ACCEPTED: u32 = 0x33 | PRIV_RO_DISABLE | 0x04;

/// `DAT_LMR_COOKIE_SIZE`.
pub const COOKIE_SIZE: usize = 40;

/// The region description an LMR was created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// `for_va`.
    Va(u64),
    /// `for_lmr_handle`.
    Lmr(Handle),
    /// `for_shared_memory`: address, the consumer's cookie pointer and the cookie bytes.
    Shared {
        va: u64,
        cookie_ptr: usize,
        cookie: [u8; COOKIE_SIZE],
    },
}

/// What `dat_lmr_create` was asked to register.
#[derive(Clone, Copy, Debug)]
pub struct LmrRequest {
    pub mem_type: u32,
    pub region: Region,
    pub length: u64,
    pub pz: Handle,
    pub privileges: u32,
}

/// Pinned memory: what a registration holds on to. An LMR created from
/// another LMR shares its base's, so freeing the base leaves it intact.
#[derive(Debug, PartialEq, Eq)]
pub struct Registration {
    pub address: u64,
    pub size: u64,
}

/// The memory an LMR registers.
enum Memory {
    /// The consumer's memory; `shared`: other processes map it too.
    Va { shared: bool },
    /// The memory of an existing LMR.
    SameAs(MemoryRegion),
}

/// A registered memory region.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Lmr {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    pub pz: Arc<Pz>,
    pub mem_type: u32,
    pub region: Region,
    /// Length as passed (ignored for `DAT_MEM_TYPE_LMR`).
    pub length: u64,
    /// Privileges as passed, RO_DISABLE masked out.
    pub privileges: u32,
    /// The local key.
    pub lmr_context: u32,
    /// The remote key; 0 unless remote privileges were asked for.
    pub rmr_context: u32,
    /// The memory this LMR (and any LMR created from it) uses.
    pub registration: Arc<Registration>,
    pub registered_address: u64,
    pub registered_size: u64,
    /// The device's registration.
    mr: MemoryRegion,
}

/// The device access rights of DAT privileges: each bit grants its access (a
/// Send or RDMA Write from an LMR without LOCAL_READ is a privileges
/// violation, §4.13).
pub(crate) fn rights_of(privileges: u32) -> Access {
    let mut r = Access::NONE;
    if privileges & PRIV_LOCAL_READ != 0 {
        r = r.union(Access::LOCAL_READ);
    }
    if privileges & PRIV_LOCAL_WRITE != 0 {
        r = r.union(Access::LOCAL_WRITE);
    }
    if privileges & PRIV_REMOTE_READ != 0 {
        r = r.union(Access::REMOTE_READ);
    }
    if privileges & PRIV_REMOTE_WRITE != 0 {
        r = r.union(Access::REMOTE_WRITE);
    }
    r
}

impl Lmr {
    /// `dat_lmr_create`.
    pub fn create(ia: &Arc<Ia>, req: LmrRequest) -> Result<Arc<Lmr>> {
        if !matches!(
            req.mem_type,
            MEM_TYPE_VIRTUAL | MEM_TYPE_LMR | MEM_TYPE_SHARED_VIRTUAL | MEM_TYPE_SO_VIRTUAL
        ) {
            return Err(DatError::invalid(Input::MemType));
        }
        let pz = crate::object::pz::lookup(req.pz.addr())?;
        ia::same_ia(&pz.ia, ia, Sub::HandlePz)?;
        let (registration, memory) = match (req.mem_type, req.region) {
            (MEM_TYPE_LMR, Region::Lmr(base)) => {
                let base = handle::expect::<Lmr>(base.addr(), Sub::HandleLmr)?;
                ia::same_ia(&base.ia, ia, Sub::HandleLmr)?;
                (base.registration.clone(), Memory::SameAs(base.mr))
            }
            (MEM_TYPE_SHARED_VIRTUAL, Region::Shared { va, cookie_ptr, .. }) => {
                if va == 0 || cookie_ptr == 0 {
                    return Err(DatError::invalid(Input::RegionDescription));
                }
                check_range(ia, va, req.length)?;
                check_privileges(req.privileges)?;
                let r = Registration {
                    address: va,
                    size: req.length,
                };
                (Arc::new(r), Memory::Va { shared: true })
            }
            (MEM_TYPE_VIRTUAL | MEM_TYPE_SO_VIRTUAL, Region::Va(va)) => {
                if va == 0 {
                    return Err(DatError::invalid(Input::RegionDescription));
                }
                check_range(ia, va, req.length)?;
                check_privileges(req.privileges)?;
                let r = Registration {
                    address: va,
                    size: req.length,
                };
                (Arc::new(r), Memory::Va { shared: false })
            }
            _ => return Err(DatError::of(Type::InternalError)),
        };
        check_privileges(req.privileges)?;
        let privileges = req.privileges & !PRIV_RO_DISABLE;
        let rights = rights_of(privileges);
        let (address, size) = (registration.address, registration.size);
        // The device checks the memory (outside the IA lock: it may take
        // system calls) and chooses both contexts.
        let pd = PdId(pz.key_id());
        let mr = match memory {
            Memory::Va { shared: false } => ia.dev.register(pd, address, size, rights),
            Memory::Va { shared: true } => ia.dev.register_shared(pd, address, size, rights),
            Memory::SameAs(base) => ia.dev.register_same(&base, pd, rights),
        }
        .map_err(register_error)?;
        let undo = |e: DatError| {
            let _ = ia.dev.deregister(&mr);
            e
        };
        let mut st = ia.live_state().map_err(undo)?;
        if !handle::is_live(pz.handle) {
            return Err(undo(DatError::handle(Sub::HandlePz)));
        }
        st.check_limit(
            HandleType::Lmr,
            ia.limits.max_lmrs,
            Sub::ResourceMemoryRegion,
        )
        .map_err(undo)?;
        let res = handle::reserve(ia.provider_word).map_err(undo)?;
        let lmr = Arc::new(Lmr {
            handle: res.handle(),
            ia: ia.clone(),
            pz: pz.arc(),
            mem_type: req.mem_type,
            region: req.region,
            length: req.length,
            privileges,
            lmr_context: mr.lkey,
            rmr_context: mr.rkey,
            registration,
            registered_address: address,
            registered_size: size,
            mr,
        });
        st.add_use(pz.handle);
        st.insert(lmr.handle, Object::Lmr(lmr.clone()));
        res.publish(lmr.clone());
        Ok(lmr)
    }

    /// The live LMR of `ia` whose `lmr_context` is `ctx`.
    pub(crate) fn of_context(ia: &Ia, ctx: u32) -> Option<Arc<Lmr>> {
        let st = ia.state();
        st.objects.values().find_map(|o| match o {
            Object::Lmr(l) if l.lmr_context == ctx => Some(l.clone()),
            _ => None,
        })
    }

    /// True if `[va, va + len)` lies inside the registered range.
    pub fn contains(&self, va: u64, len: u64) -> bool {
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        va >= self.registered_address
            && end <= self.registered_address.saturating_add(self.registered_size)
    }

    /// Invalidates both contexts.
    pub(crate) fn release_keys(&self) {
        let _ = self.ia.dev.deregister(&self.mr);
    }

    /// `dat_lmr_free`: refused while an RMR is bound to the LMR. Both
    /// contexts stop working at once.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if st.users(self.handle) > 0 {
            return Err(DatError::state(Sub::LmrInUse));
        }
        st.remove(self.handle, Sub::HandleLmr)?;
        st.drop_use(self.pz.handle);
        self.release_keys();
        Ok(())
    }
}

fn check_range(ia: &Ia, va: u64, len: u64) -> Result<()> {
    if len == 0 {
        return Err(DatError::invalid(Input::Length));
    }
    let last = va
        .checked_add(len - 1)
        .ok_or(DatError::invalid(Input::Length))?;
    if len > ia.limits.max_lmr_block_size {
        return Err(DatError::resources(Sub::ResourceMemoryRegion));
    }
    if last > ia.limits.max_lmr_virtual_address {
        return Err(DatError::invalid(Input::Length));
    }
    Ok(())
}

/// The DAT error of a registration the device refused: memory that is
/// not shared though it must be is in the wrong state; memory that cannot
/// be registered (unmapped, not readable, not writable for write
/// privileges) and a full key table are out of resources.
fn register_error(e: DeviceError) -> DatError {
    match e {
        DeviceError::Memory(MemoryFault::NotShared) => ia::invalid_state(),
        // The PZ's protection domain is gone: freed meanwhile.
        DeviceError::Invalid | DeviceError::NotFound => DatError::handle(Sub::HandlePz),
        _ => DatError::resources(Sub::ResourceMemoryRegion),
    }
}

fn check_privileges(p: u32) -> Result<()> {
    if p & !PRIV_ACCEPTED != 0 {
        Err(DatError::invalid(Input::Privileges))
    } else {
        Ok(())
    }
}

/// Looks up a live LMR, `DAT_INVALID_HANDLE/LMR` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Lmr>> {
    handle::expect::<Lmr>(addr, Sub::HandleLmr)
}
