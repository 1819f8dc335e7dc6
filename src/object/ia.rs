//! The Interface Adapter: root of every other object.
//!
//! The structural state of an IA (its children and who uses whom) is kept
//! under one mutex, `IaState`: creating and freeing objects is not on the
//! data path, and one lock makes the in-use checks race-free. No lookup takes
//! it: handles are validated by the handle table, memory contexts by the
//! device ([`Device::check_local`]), and the async EVD sits behind its own leaf lock so that
//! posting an asynchronous event never needs the IA lock. See the lock order
//! in [`crate::object`].

use std::collections::HashMap;
use std::ffi::CString;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::attr::{IaAttributes, Limits, ProviderAttributes};
use crate::object::event::{self, Event, EventData};
use crate::object::{lock, lock_anyway, Object};
use crate::transport::api::{Access, Device};
use crate::transport::{self, DeviceConfig};

/// `DAT_OS_WAIT_PROXY_AGENT` as two opaque words. `func == 0` means no agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agent {
    pub instance_data: usize,
    pub func: usize,
}

/// Calls an agent function with `(instance_data, evd)`. Installed by the C
/// layer, which knows how to call a C function pointer.
pub type AgentInvoker = fn(Agent, Handle);

/// An EVD as the IA's async EVD (implemented by the EVD, which the IA
/// knows only through this): found or created when the IA opens, then
/// posted to.
pub trait AsyncSink: Send + Sync + 'static {
    /// A consumer-supplied async EVD: live and created with `DAT_EVD_ASYNC_FLAG`.
    fn supplied(h: Handle) -> Option<Arc<Self>>
    where
        Self: Sized;
    /// The IA's own async EVD of `qlen` events, an ordinary child of `ia`
    /// (created under the IA lock).
    fn create(ia: &Arc<Ia>, qlen: i32) -> Result<Arc<Self>>
    where
        Self: Sized;
    /// Its handle.
    fn handle(&self) -> Handle;
    /// Queues an asynchronous error event.
    fn post(&self, ev: Event);
}

/// The async EVD an IA reports and posts its asynchronous errors to.
#[derive(Clone)]
pub enum AsyncEvd {
    /// Created by `dat_ia_open`; destroyed with the IA; cannot be freed.
    Created(Arc<dyn AsyncSink>),
    /// Supplied by the consumer; never destroyed by the IA.
    Supplied(Arc<dyn AsyncSink>),
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
    /// Every child object, by handle (ownership; liveness is the handle's).
    pub objects: HashMap<Handle, Object>,
    /// How many objects use a child (PZ: LMR/RMR/EP; CNO: EVDs; EVD: streams; LMR: RMR bindings).
    pub uses: HashMap<Handle, usize>,
    /// Live children per `DAT_HANDLE_TYPE`.
    pub counts: [i32; 11],
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

    /// Retires a child's handle and forgets it. Fails with
    /// `DAT_INVALID_HANDLE/sub` if another thread freed it first.
    pub fn remove(&mut self, h: Handle, sub: Sub) -> Result<()> {
        let o = self.objects.get(&h).ok_or(DatError::handle(sub))?;
        if !o.retire() {
            return Err(DatError::handle(sub));
        }
        if let Some(o) = self.objects.remove(&h) {
            self.counts[o.handle_type() as usize] -= 1;
        }
        self.uses.remove(&h);
        Ok(())
    }
}

/// An open Interface Adapter.
#[repr(align(16))] // a handle tags its pointer in the low four bits
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
    /// Capacity limits (part of [`Ia::attributes`]).
    pub limits: Limits,
    /// `DAT_IA_ATTR` values.
    pub attributes: IaAttributes,
    /// `DAT_PROVIDER_ATTR` values.
    pub provider_attributes: ProviderAttributes,
    /// The transport and interface the IA uses.
    pub device: DeviceConfig,
    /// The IA address (`ia_address_ptr` points at [`Ia::sockaddr`]).
    pub address: SocketAddr,
    /// `struct sockaddr_in`/`sockaddr_in6` bytes of [`Ia::address`], Linux layout.
    pub sockaddr: Box<transport::SockAddrStorage>,
    /// The opened device (it chooses and checks the LMR and RMR contexts).
    pub dev: Arc<dyn Device>,
    /// The provider's named attributes (`provider_specific_attr`): the
    /// transport and the options this IA was opened with.
    pub named_attributes: Vec<(CString, CString)>,
    /// Kept for the C layer while the IA lives (the `DAT_NAMED_ATTR`
    /// array that points into [`Ia::named_attributes`]).
    pub c_cache: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    state: Mutex<IaState>,
    /// The async EVD (leaf lock: cloned out, then posted to).
    async_evd: Mutex<AsyncEvd>,
    /// Calls CNO proxy agents (installed by the C layer).
    pub(crate) agent_invoker: Option<AgentInvoker>,
}

/// The provider-specific attributes an IA reports: what a user checks when
/// two IAs behave differently (`dat-info -v` prints them).
fn named_attributes(
    d: &DeviceConfig,
    address: SocketAddr,
    device: &[(&'static str, String)],
) -> Vec<(CString, CString)> {
    // The device's own word on its interface wins over the configuration's.
    let netdev = device
        .iter()
        .find(|(n, _)| *n == "netdev")
        .map(|(_, v)| v.clone())
        .or_else(|| d.netdev.clone())
        .unwrap_or_else(|| "loopback".to_string());
    let head = [
        ("transport", d.transport.describe().to_string()),
        ("netdev", netdev),
        ("address", address.ip().to_string()),
    ];
    head.into_iter()
        .chain(device.iter().filter(|(n, _)| *n != "netdev").cloned())
        .chain(d.options.values())
        .filter_map(|(n, val)| Some((CString::new(n).ok()?, CString::new(val).ok()?)))
        .collect()
}

impl Ia {
    /// Opens an IA whose async EVD is an `E`. On failure nothing is left
    /// behind.
    pub fn open<E: AsyncSink>(
        p: OpenParams,
        agent_invoker: Option<AgentInvoker>,
    ) -> Result<Arc<Ia>> {
        if let Some(why) = p.device.transport.unavailable() {
            tracing::warn!(
                "IA {}: transport={}: {why}",
                p.name,
                p.device.transport.name()
            );
            return Err(DatError::of(Type::ProviderNotFound));
        }
        if let AsyncRequest::Create(qlen) = p.async_evd {
            if qlen <= 0 {
                return Err(DatError::invalid(Input::AsyncEvdQlen));
            }
        }
        let (dev, address) = transport::open(&p.device)?;
        Self::open_on::<E>(p, dev, address, agent_invoker)
    }

    /// Opens an IA on an opened device whose address is `address`.
    pub(crate) fn open_on<E: AsyncSink>(
        p: OpenParams,
        dev: Arc<dyn Device>,
        address: SocketAddr,
        agent_invoker: Option<AgentInvoker>,
    ) -> Result<Arc<Ia>> {
        let caps = *dev.capabilities();
        let attributes = IaAttributes::of(&caps);
        let limits = attributes.limits;
        // Check the async EVD request before anything is created.
        let supplied = match p.async_evd {
            AsyncRequest::Create(qlen) => {
                if qlen <= 0 {
                    return Err(DatError::invalid(Input::AsyncEvdQlen));
                }
                if qlen > limits.max_evd_qlen {
                    return Err(DatError::resources(Sub::ResourceTevd));
                }
                None
            }
            AsyncRequest::Exists => None,
            AsyncRequest::Existing(h) => {
                Some(E::supplied(h).ok_or(DatError::handle(Sub::HandleEvdAsync))?)
            }
        };
        let sockaddr = Box::new(transport::SockAddrStorage::from(address));
        let res = handle::reserve(p.provider_word)?;
        let named = named_attributes(&p.device, address, &dev.attributes());
        let ia = Arc::new(Ia {
            handle: res.handle(),
            name: p.name,
            ro_aware: p.ro_aware,
            provider_word: p.provider_word,
            dapl_major: p.dapl_major,
            dapl_minor: p.dapl_minor,
            thread_safe: p.thread_safe,
            limits,
            attributes,
            provider_attributes: ProviderAttributes::of(&caps),
            device: p.device,
            address,
            sockaddr,
            named_attributes: named,
            c_cache: std::sync::OnceLock::new(),
            dev,
            state: Mutex::new(IaState {
                closed: false,
                objects: HashMap::new(),
                uses: HashMap::new(),
                counts: [0; 11],
            }),
            async_evd: Mutex::new(AsyncEvd::OutOfScope),
            agent_invoker,
        });
        let async_evd = match (&p.async_evd, supplied) {
            (AsyncRequest::Create(qlen), _) => {
                // Created EVDs are ordinary children, only marked as the IA's own.
                AsyncEvd::Created(E::create(&ia, *qlen)?)
            }
            (_, Some(evd)) => AsyncEvd::Supplied(evd),
            _ => AsyncEvd::OutOfScope,
        };
        *lock_anyway(&ia.async_evd) = async_evd;
        res.publish(ia.clone());
        tracing::debug!(ia = ia.handle.addr(), name = %ia.name, "IA opened");
        Ok(ia)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, IaState> {
        lock_anyway(&self.state)
    }

    /// The IA state, or `DAT_INVALID_HANDLE/IA` once the IA is closed, or
    /// `DAT_INTERNAL_ERROR` if a panic left it half-updated.
    pub(crate) fn live_state(&self) -> Result<MutexGuard<'_, IaState>> {
        let st = lock(&self.state)?;
        if st.closed {
            Err(DatError::handle(Sub::HandleIa))
        } else {
            Ok(st)
        }
    }

    fn async_target(&self) -> Option<Arc<dyn AsyncSink>> {
        match &*lock_anyway(&self.async_evd) {
            AsyncEvd::Created(e) | AsyncEvd::Supplied(e) => Some(e.clone()),
            AsyncEvd::OutOfScope => None,
        }
    }

    /// True if `h` is the async EVD `dat_ia_open` created for this IA.
    pub(crate) fn is_own_async_evd(&self, h: Handle) -> bool {
        matches!(&*lock_anyway(&self.async_evd), AsyncEvd::Created(e) if e.handle() == h)
    }

    /// The async EVD handle `dat_ia_query` reports; `None` means `DAT_EVD_OUT_OF_SCOPE`.
    pub fn async_evd_handle(&self) -> Option<Handle> {
        self.async_target().map(|e| e.handle())
    }

    /// Posts an asynchronous error event to the IA's async EVD. Takes only
    /// the leaf async-EVD lock, then that EVD's queue lock.
    pub fn post_async(&self, number: u32, about: Handle, reason: i32) {
        if let Some(evd) = self.async_target() {
            let ev = Event::new(
                number,
                EventData::AsyncError {
                    handle: about,
                    reason,
                },
            );
            evd.post(ev);
        }
    }

    /// Closes the IA. Graceful close is refused while any consumer object
    /// exists; abrupt close destroys everything, waking every waiter and
    /// releasing every CNO's waiters and proxy agent.
    pub fn close(&self, graceful: bool) -> Result<()> {
        let mut st = self.live_state()?;
        let own_async = match &*lock_anyway(&self.async_evd) {
            AsyncEvd::Created(e) => Some(e.handle()),
            _ => None,
        };
        let consumer_objects = st.objects.len() - usize::from(own_async.is_some());
        if graceful && consumer_objects > 0 {
            return Err(DatError::state(Sub::IaInUse));
        }
        if !handle::retire::<Ia>(self.handle) {
            return Err(DatError::handle(Sub::HandleIa));
        }
        st.closed = true;
        let objects: Vec<(Handle, Object)> = st.objects.drain().collect();
        st.uses.clear();
        st.counts = [0; 11];
        drop(st);
        *lock_anyway(&self.async_evd) = AsyncEvd::OutOfScope;
        // Retire every handle first, so nothing can reach the objects, then
        // wake whoever is blocked on them.
        for (_, o) in &objects {
            o.retire();
        }
        // Windows first: a registration a window is bound to stays.
        for (_, o) in &objects {
            if let Object::Rmr(r) = o {
                r.release_keys();
            }
        }
        for (_, o) in objects {
            match o {
                Object::Evd(e) => e.destroy(),
                Object::Cno(c) => c.destroy(),
                Object::Lmr(l) => l.release_keys(),
                Object::Rmr(_) => {}
                Object::Pz(_) => {}
                Object::Ep(e) => e.destroy(),
                Object::Psp(p) => p.sp.destroy(),
                Object::Rsp(r) => r.sp.destroy(),
                Object::Cr(c) => c.destroy(),
                Object::Srq(_) => {}
            }
        }
        tracing::debug!(ia = self.handle.addr(), graceful, "IA closed");
        Ok(())
    }

    /// Validates a set of LMR triplets for `dat_lmr_sync_rdma_read/write`:
    /// each non-empty segment must lie inside a live LMR of this IA (the
    /// same lock-free key check a DTO post uses). Then a full fence: memory
    /// is cache-coherent here.
    pub fn sync_segments(&self, segments: impl Iterator<Item = (u32, u64, u64)>) -> Result<()> {
        for (ctx, va, len) in segments {
            if len == 0 {
                continue;
            }
            self.dev
                .check_local(ctx, va, len, Access::NONE, None)
                .map_err(|_| DatError::invalid(Input::LocalSegments))?;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// Looks up a live IA, `DAT_INVALID_HANDLE/IA` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Ia>> {
    handle::expect::<Ia>(addr, Sub::HandleIa)
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
