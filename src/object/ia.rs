//! The Interface Adapter: root of every other object.
//!
//! All structural state of an IA and its children (which objects exist, who
//! uses whom, the LMR context map) is kept under one mutex, [`IaState`].
//! Creating and freeing objects is not on the data path, and one lock makes
//! the in-use checks race-free without lock-ordering rules. Hot paths (EVD
//! queues, CNO waits) have their own per-object locks and never take this one
//! while holding theirs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{DatError, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Object};
use crate::object::event::{self, Event, EventData};
use crate::object::{AgentInvoker, Cno, Evd, Lmr, EVD_ASYNC_FLAG};
use crate::transport::{self, DeviceConfig};

/// Capacity limits reported by `dat_ia_query` and enforced by the creators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_eps: i32,
    pub max_dto_per_ep: i32,
    pub max_rdma_read_per_ep_in: i32,
    pub max_rdma_read_per_ep_out: i32,
    pub max_evds: i32,
    pub max_evd_qlen: i32,
    pub max_iov_segments_per_dto: i32,
    pub max_lmrs: i32,
    pub max_lmr_block_size: u64,
    pub max_lmr_virtual_address: u64,
    pub max_pzs: i32,
    pub max_message_size: u64,
    pub max_rdma_size: u64,
    pub max_rmrs: i32,
    pub max_rmr_target_address: u64,
    pub max_srqs: i32,
    pub max_ep_per_srq: i32,
    pub max_recv_per_srq: i32,
    pub max_iov_segments_per_rdma_read: i32,
    pub max_iov_segments_per_rdma_write: i32,
    pub max_rdma_read_in: i32,
    pub max_rdma_read_out: i32,
    /// Not a 1.2 attribute; bounds CNOs per IA.
    pub max_cnos: i32,
}

/// The limits of the built-in provider (software transports).
pub const LIMITS: Limits = Limits {
    max_eps: 65_536,
    max_dto_per_ep: 16_384,
    max_rdma_read_per_ep_in: 64,
    max_rdma_read_per_ep_out: 64,
    max_evds: 65_536,
    max_evd_qlen: 1 << 24,
    max_iov_segments_per_dto: 64,
    max_lmrs: 262_144,
    max_lmr_block_size: 1 << 40,
    max_lmr_virtual_address: (1 << 47) - 1,
    max_pzs: 65_536,
    max_message_size: 1 << 31,
    max_rdma_size: 1 << 31,
    max_rmrs: 262_144,
    max_rmr_target_address: (1 << 47) - 1,
    max_srqs: 4_096,
    max_ep_per_srq: 65_536,
    max_recv_per_srq: 65_536,
    max_iov_segments_per_rdma_read: 64,
    max_iov_segments_per_rdma_write: 64,
    max_rdma_read_in: 65_536,
    max_rdma_read_out: 65_536,
    max_cnos: 65_536,
};

/// The async EVD an IA reports and posts its asynchronous errors to.
#[derive(Clone)]
pub enum AsyncEvd {
    /// Created by `dat_ia_open`; destroyed with the IA; cannot be freed.
    Created(Arc<Evd>),
    /// Supplied by the consumer; never destroyed by the IA.
    Supplied(Arc<Evd>),
    /// `DAT_EVD_ASYNC_EXISTS` was passed: reported as `DAT_EVD_OUT_OF_SCOPE`.
    OutOfScope,
}

/// What the consumer asked for as async EVD.
pub enum AsyncRequest {
    /// `*async_evd_handle == DAT_HANDLE_NULL`: create one with this minimum qlen.
    Create(i32),
    /// `DAT_EVD_ASYNC_EXISTS`.
    Exists,
    /// An existing EVD handle.
    Existing(Handle),
}

/// Parameters of [`Ia::open`].
pub struct OpenParams {
    /// Adapter name as opened, `RO_AWARE_` prefix removed.
    pub name: String,
    /// The name had the `RO_AWARE_` prefix.
    pub ro_aware: bool,
    /// `DAT_PROVIDER *` written as the first word of every handle of this IA.
    pub provider_word: usize,
    /// The registry key this IA was opened under.
    pub dapl_major: u32,
    pub dapl_minor: u32,
    pub thread_safe: bool,
    /// Transport and network interface.
    pub device: DeviceConfig,
    /// The async EVD request.
    pub async_evd: AsyncRequest,
}

/// Structural state of an IA (see the module doc).
pub(crate) struct IaState {
    pub closed: bool,
    /// Every live child object, by handle.
    pub objects: HashMap<Handle, Object>,
    /// How many objects use a child (PZ: LMR/RMR/EP; CNO: EVDs; EVD: streams; LMR: RMR bindings).
    pub uses: HashMap<Handle, usize>,
    /// Live children per `DAT_HANDLE_TYPE`.
    pub counts: [i32; 11],
    pub async_evd: AsyncEvd,
    /// `lmr_context` → LMR.
    pub lmr_contexts: HashMap<u32, Arc<Lmr>>,
    /// Every context (LMR lkey/rkey, RMR) ever handed out and still live.
    pub live_contexts: std::collections::HashSet<u32>,
    next_context: u32,
}

impl IaState {
    /// `uses[h] += 1`.
    pub fn add_use(&mut self, h: Handle) {
        *self.uses.entry(h).or_insert(0) += 1;
    }

    /// `uses[h] -= 1`; returns what is left.
    pub fn drop_use(&mut self, h: Handle) -> usize {
        match self.uses.get_mut(&h) {
            Some(n) if *n > 1 => {
                *n -= 1;
                *n
            }
            _ => {
                self.uses.remove(&h);
                0
            }
        }
    }

    /// How many users `h` has.
    pub fn users(&self, h: Handle) -> usize {
        self.uses.get(&h).copied().unwrap_or(0)
    }

    /// Is `h` a live child of this IA?
    pub fn is_live(&self, h: Handle) -> bool {
        self.objects.contains_key(&h)
    }

    /// A fresh 32-bit memory context, never 0, unique among live ones.
    pub fn new_context(&mut self) -> u32 {
        loop {
            self.next_context = self.next_context.wrapping_add(1);
            let c = self.next_context;
            if c != 0 && self.live_contexts.insert(c) {
                return c;
            }
        }
    }

    /// Checks the per-type limit before a create.
    pub fn check_limit(&self, t: HandleType, max: i32, sub: Sub) -> Result<()> {
        if self.counts[t as usize] >= max {
            Err(DatError::resources(sub))
        } else {
            Ok(())
        }
    }

    /// Records a new child.
    pub fn insert(&mut self, h: Handle, o: Object) {
        self.counts[o.handle_type() as usize] += 1;
        self.objects.insert(h, o);
    }

    /// Forgets a child and retires its handle.
    pub fn remove(&mut self, h: Handle) {
        if let Some(o) = self.objects.remove(&h) {
            self.counts[o.handle_type() as usize] -= 1;
        }
        self.uses.remove(&h);
        handle::retire(h);
    }
}

/// An open Interface Adapter.
pub struct Ia {
    /// Its handle.
    pub handle: Handle,
    /// Adapter name (as opened, without `RO_AWARE_`).
    pub name: String,
    /// Opened with the `RO_AWARE_` prefix.
    pub ro_aware: bool,
    /// First word of every handle of this IA.
    pub provider_word: usize,
    pub dapl_major: u32,
    pub dapl_minor: u32,
    pub thread_safe: bool,
    /// Capacity limits.
    pub limits: &'static Limits,
    /// The transport and interface the IA uses.
    pub device: DeviceConfig,
    /// The IA address (`ia_address_ptr` points at [`Ia::sockaddr`]).
    pub address: SocketAddr,
    /// `struct sockaddr_in`/`sockaddr_in6` bytes of [`Ia::address`], Linux layout.
    pub sockaddr: Box<transport::SockAddrStorage>,
    state: Mutex<IaState>,
    /// Calls CNO proxy agents (installed by the C layer).
    pub(crate) agent_invoker: Option<AgentInvoker>,
}

impl Ia {
    /// Opens an IA. On failure nothing is left behind.
    pub fn open(p: OpenParams, agent_invoker: Option<AgentInvoker>) -> Result<Arc<Ia>> {
        // Check the async EVD request before anything is created.
        let supplied = match p.async_evd {
            AsyncRequest::Create(qlen) => {
                if qlen <= 0 {
                    return Err(DatError::arg(2));
                }
                if qlen > LIMITS.max_evd_qlen {
                    return Err(DatError::resources(Sub::ResourceTevd));
                }
                None
            }
            AsyncRequest::Exists => None,
            AsyncRequest::Existing(h) => {
                let evd = handle::get::<Evd>(h.addr())
                    .filter(|e| e.flags & EVD_ASYNC_FLAG != 0 && e.is_alive())
                    .ok_or(DatError::handle(Sub::HandleEvdAsync))?;
                Some(evd)
            }
        };
        let address = transport::resolve_address(&p.device)?;
        let sockaddr = Box::new(transport::SockAddrStorage::from(address));
        let res = handle::reserve(p.provider_word)?;
        let ia = Arc::new(Ia {
            handle: res.handle(),
            name: p.name,
            ro_aware: p.ro_aware,
            provider_word: p.provider_word,
            dapl_major: p.dapl_major,
            dapl_minor: p.dapl_minor,
            thread_safe: p.thread_safe,
            limits: &LIMITS,
            device: p.device,
            address,
            sockaddr,
            state: Mutex::new(IaState {
                closed: false,
                objects: HashMap::new(),
                uses: HashMap::new(),
                counts: [0; 11],
                async_evd: AsyncEvd::OutOfScope,
                lmr_contexts: HashMap::new(),
                live_contexts: Default::default(),
                next_context: 0,
            }),
            agent_invoker,
        });
        {
            let mut st = ia.state();
            st.async_evd = match (&p.async_evd, supplied) {
                (AsyncRequest::Create(qlen), _) => {
                    // Created EVDs are ordinary children, only marked as the IA's own.
                    let evd = Evd::create_locked(&ia, &mut st, *qlen, None, EVD_ASYNC_FLAG)?;
                    AsyncEvd::Created(evd)
                }
                (_, Some(evd)) => AsyncEvd::Supplied(evd),
                _ => AsyncEvd::OutOfScope,
            };
        }
        res.publish(Object::Ia(ia.clone()));
        tracing::debug!(ia = ia.handle.addr(), name = %ia.name, "IA opened");
        Ok(ia)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, IaState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The IA state, or `DAT_INVALID_HANDLE/IA` once the IA is closed.
    pub(crate) fn live_state(&self) -> Result<MutexGuard<'_, IaState>> {
        let st = self.state();
        if st.closed {
            Err(DatError::handle(Sub::HandleIa))
        } else {
            Ok(st)
        }
    }

    /// The async EVD handle `dat_ia_query` reports; `None` means `DAT_EVD_OUT_OF_SCOPE`.
    pub fn async_evd_handle(&self) -> Result<Option<Handle>> {
        let st = self.live_state()?;
        Ok(match &st.async_evd {
            AsyncEvd::Created(e) | AsyncEvd::Supplied(e) => Some(e.handle),
            AsyncEvd::OutOfScope => None,
        })
    }

    /// Fails with `DAT_INVALID_HANDLE/IA` if the IA is closed.
    pub fn check_open(&self) -> Result<()> {
        self.live_state().map(|_| ())
    }

    /// Posts an asynchronous error event to the IA's async EVD.
    pub fn post_async(&self, number: u32, about: Handle, reason: i32) {
        let target = match &self.state().async_evd {
            AsyncEvd::Created(e) | AsyncEvd::Supplied(e) => Some(e.clone()),
            AsyncEvd::OutOfScope => None,
        };
        if let Some(evd) = target {
            let ev = Event {
                number,
                evd: Handle::NULL,
                data: EventData::AsyncError {
                    handle: about,
                    reason,
                },
            };
            evd.post_async_event(ev);
        }
    }

    /// Closes the IA. Graceful close is refused while any consumer object
    /// exists; abrupt close destroys everything, waking every waiter.
    pub fn close(&self, graceful: bool) -> Result<()> {
        let mut st = self.live_state()?;
        let own_async = match &st.async_evd {
            AsyncEvd::Created(e) => Some(e.handle),
            _ => None,
        };
        let consumer_objects = st.objects.len() - usize::from(own_async.is_some());
        if graceful && consumer_objects > 0 {
            return Err(DatError::state(Sub::IaInUse));
        }
        st.closed = true;
        let objects: Vec<(Handle, Object)> = st.objects.drain().collect();
        st.uses.clear();
        st.lmr_contexts.clear();
        st.live_contexts.clear();
        st.counts = [0; 11];
        st.async_evd = AsyncEvd::OutOfScope;
        drop(st);
        // Retire every handle first, so nothing can reach the objects, then
        // wake whoever is blocked on them.
        for (h, _) in &objects {
            handle::retire(*h);
        }
        handle::retire(self.handle);
        for (_, o) in objects {
            match o {
                Object::Evd(e) => e.destroy(),
                Object::Cno(c) => c.destroy(),
                _ => {}
            }
        }
        tracing::debug!(ia = self.handle.addr(), graceful, "IA closed");
        Ok(())
    }

    /// Creates a CNO.
    pub fn create_cno(self: &Arc<Self>, agent: crate::object::Agent) -> Result<Arc<Cno>> {
        Cno::create(self, agent)
    }

    /// Validates a set of LMR triplets for `dat_lmr_sync_rdma_read/write`:
    /// each non-empty segment must lie inside a live LMR of this IA.
    pub fn sync_segments(&self, segments: &[(u32, u64, u64)]) -> Result<()> {
        let st = self.live_state()?;
        for &(ctx, va, len) in segments {
            if len == 0 {
                continue;
            }
            let lmr = st.lmr_contexts.get(&ctx).ok_or(DatError::arg(2))?;
            if !lmr.contains(va, len) {
                return Err(DatError::arg(2));
            }
        }
        drop(st);
        // Cache-coherent memory: the synchronisation is a full fence.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// Looks up a live IA, `DAT_INVALID_HANDLE/IA` otherwise.
pub fn lookup(addr: usize) -> Result<Arc<Ia>> {
    let ia = handle::expect::<Ia>(addr, Sub::HandleIa)?;
    ia.check_open()?;
    Ok(ia)
}

/// `DAT_INVALID_HANDLE` for a child of another IA.
pub(crate) fn same_ia(a: &Ia, b: &Ia, sub: Sub) -> Result<()> {
    if a.handle == b.handle {
        Ok(())
    } else {
        Err(DatError::handle(sub))
    }
}

/// The IA-owned async error posted when an EVD overflows.
pub(crate) fn overflow_event(evd: Handle) -> (u32, Handle, i32) {
    (event::ASYNC_EVD_OVERFLOW, evd, event::REASON_EVD_OVERFLOW)
}

/// `DAT_INVALID_STATE` for a type with no subtype.
pub(crate) fn invalid_state() -> DatError {
    DatError::of(Type::InvalidState)
}
