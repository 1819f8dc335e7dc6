//! A verbs device: one device context and port, bound through rdma_cm to
//! the IA's address, with its protection domains, registrations, memory
//! windows and rdma_cm event channel (served by [`super::events`]).
//!
//! Registrations are also kept in a copy-on-write key table, so that
//! [`Device::check_local`] answers without a lock.

pub(super) mod cm;
pub(super) mod cq;
mod events;
pub(super) mod qp;
mod srq;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use rustc_hash::FxHashMap;

use super::keymap::KeyMap;
use super::lib::Lib;
use super::sys::*;
use super::{errno, eventfd, sockaddr_of, Ptr};
use crate::sync::lock_anyway;
use crate::transport::api::*;
use crate::transport::soft::memcheck::{self, Need};
use crate::transport::Capabilities;
use cq::VerbsCq;
use events::EventLoop;
use qp::VerbsQp;
use srq::VerbsSrq;

/// An event this transport makes up for a queue pair (rdma_cm has none
/// to report), delivered from the event thread.
#[derive(Clone, Copy, Debug)]
pub(super) enum Made {
    /// A connection abandoned before it was made.
    Disconnected,
    /// A work request completed in error: the queue pair is in the error
    /// state, the connection is lost (the peer is told by a disconnect).
    Broken,
}

/// Who an rdma_cm id's context token names.
#[derive(Clone)]
pub(super) enum Owner {
    Listener(std::sync::Weak<cm::ListenerInner>),
    Qp(std::sync::Weak<qp::QpInner>),
}

/// A connection request not answered yet.
pub(super) struct Request {
    pub id: Ptr<rdma_cm_id>,
    /// What the requester offered: its RDMA Read depths.
    pub initiator_depth: u8,
    pub responder_resources: u8,
}

/// A registration as the key table keeps it.
#[derive(Clone, Copy)]
pub(super) struct Key {
    pub mr: Ptr<ibv_mr>,
    pub addr: u64,
    pub len: u64,
    pub access: Access,
    pub pd: PdId,
}

/// What a completion's work request id names: a slot of a ring of one of
/// the device's queues (see [`super::ring`]).
pub(super) type Rings = FxHashMap<u32, Arc<super::ring::Ring>>;

pub struct VerbsDevice {
    pub(super) lib: &'static Lib,
    /// A context of this process's own (`ibv_open_device`), not rdma_cm's:
    /// see [`VerbsDevice::open`].
    pub(super) ctx: Ptr<ibv_context>,
    /// siw's guard CQ ([`guard_siw_key`]), destroyed with the context.
    guard: Option<Ptr<ibv_cq>>,
    /// The rdma_cm id bound to the IA's address: it holds the device.
    anchor: Ptr<rdma_cm_id>,
    pub(super) channel: Ptr<rdma_event_channel>,
    pub(super) port: u8,
    pub(super) iwarp: bool,
    /// Whether the device resizes CQs (siw does not): if not, CQs are
    /// made deep enough from the start (cq.rs).
    pub(super) cq_resizable: bool,
    /// Whether the device resizes SRQs (siw does not): if not, SRQs are
    /// made deep enough from the start (srq.rs).
    pub(super) srq_resizable: bool,
    /// siw: a queue pair's send queue may not be flushed when it goes to
    /// the error state (qp.rs `to_error`).
    pub(super) loses_sq_flushes: bool,
    /// Send queue rings marked so, not yet flushed.
    pub(super) orphans: AtomicU32,
    address: SocketAddr,
    caps: Capabilities,
    attributes: Vec<(&'static str, String)>,
    pds: Mutex<HashMap<u64, Ptr<ibv_pd>>>,
    mws: Mutex<HashMap<u64, Ptr<ibv_mw>>>,
    /// Registrations by local key (read by every post, without a lock).
    keys: KeyMap,
    /// Registrations by id (the `ibv_mr` address).
    mrs: Mutex<HashMap<u64, Key>>,
    next_id: AtomicU64,
    /// The rings of every queue pair and SRQ, by ring id.
    pub(super) rings: ArcSwap<Rings>,
    rings_lock: Mutex<()>,
    /// The verbs objects behind the interface's CQs and SRQs, by the
    /// address of the interface object (how a queue pair finds them).
    pub(super) cq_ptrs: Mutex<HashMap<usize, Ptr<ibv_cq>>>,
    pub(super) srq_ptrs: Mutex<HashMap<usize, Ptr<ibv_srq>>>,
    /// Never readable: what a CQ offers as its input descriptor (the
    /// hardware needs no help to make progress).
    idle: OwnedFd,
    events: EventLoop,
}

// SAFETY: the raw pointers name rdma-core objects that are thread-safe
// (libibverbs and librdmacm calls may come from any thread); the Rust
// state is behind locks or atomics.
unsafe impl Send for VerbsDevice {}
unsafe impl Sync for VerbsDevice {}

/// Why opening failed: the log line's text.
pub(super) type OpenError = String;

impl VerbsDevice {
    /// Binds an rdma_cm id to `address` (port 0): the device and port it
    /// resolves to are the IA's. `want` names the device it must be.
    pub(super) fn open(
        lib: &'static Lib,
        address: SocketAddr,
        netdev: &str,
        want: Option<&str>,
    ) -> Result<Arc<VerbsDevice>, OpenError> {
        // SAFETY: plain rdma_cm calls; every pointer passed is valid for
        // the call and the results are checked before use.
        unsafe {
            let channel = (lib.rdma_create_event_channel)();
            if channel.is_null() {
                return Err(format!("rdma_create_event_channel: {}", errno()));
            }
            let fail = |what: &str, id: *mut rdma_cm_id| {
                let e = format!("{what}: {}", errno());
                if !id.is_null() {
                    (lib.rdma_destroy_id)(id);
                }
                (lib.rdma_destroy_event_channel)(channel);
                Err(e)
            };
            let mut id = std::ptr::null_mut();
            if (lib.rdma_create_id)(channel, &mut id, std::ptr::null_mut(), RDMA_PS_TCP) != 0 {
                return fail("rdma_create_id", std::ptr::null_mut());
            }
            let mut sa = sockaddr_of(address);
            if (lib.rdma_bind_addr)(id, sa.as_mut_ptr()) != 0 {
                return fail(&format!("rdma_bind_addr({})", address.ip()), id);
            }
            let cm_ctx = (*id).verbs;
            if cm_ctx.is_null() {
                let e = format!("{} is not the address of an RDMA device", address.ip());
                (lib.rdma_destroy_id)(id);
                (lib.rdma_destroy_event_channel)(channel);
                return Err(e);
            }
            // rdma_cm's contexts are opened once per process image, by the
            // first process that used rdma_cm: a child forked after its
            // parent opened an IA inherits them, and the kernel refuses
            // their legacy commands to any other process (EACCES: rxe's
            // and siw's Send doorbell is one, so every Send of the child
            // was flushed). Every IA opens a context of its own process;
            // the connections' queue pairs are ours anyway (rdma_cm only
            // learns their numbers).
            let ctx = (lib.ibv_open_device)((*cm_ctx).device);
            if ctx.is_null() {
                return fail("ibv_open_device", id);
            }
            let fail = |what: &str, id: *mut rdma_cm_id| {
                let e = fail(what, id);
                (lib.ibv_close_device)(ctx);
                e
            };
            let name = std::ffi::CStr::from_ptr((lib.ibv_get_device_name)((*ctx).device))
                .to_string_lossy()
                .into_owned();
            let port = (*id).port_num;
            if let Some(w) = want {
                if w != name {
                    (lib.rdma_destroy_id)(id);
                    (lib.rdma_destroy_event_channel)(channel);
                    (lib.ibv_close_device)(ctx);
                    return Err(format!(
                        "{} belongs to RDMA device {name}, not {w}",
                        address.ip()
                    ));
                }
            }
            let mut attr: ibv_device_attr = std::mem::zeroed();
            if (lib.ibv_query_device)(ctx, &mut attr) != 0 {
                return fail("ibv_query_device", id);
            }
            let mut pattr: ibv_port_attr = std::mem::zeroed();
            if (lib.ibv_query_port)(ctx, port, &mut pattr) != 0 {
                return fail("ibv_query_port", id);
            }
            let iwarp = (*(*ctx).device).transport_type == IBV_TRANSPORT_IWARP;
            let has_mw = attr.max_mw > 0
                && attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW != 0
                && (*ctx).ops.alloc_mw.is_some()
                && (*ctx).ops.bind_mw.is_some();
            let has_srq = attr.max_srq > 0 && (*ctx).ops.post_srq_recv.is_some();
            let caps = capabilities(&attr, &pattr, iwarp, has_mw, has_srq);
            let guard = if attr.vendor_id == SIW_VENDOR_ID {
                guard_siw_key(lib, ctx).map(Ptr)
            } else {
                None
            };
            let cq_resizable = probe_cq_resize(lib, ctx);
            let srq_resizable = has_srq && probe_srq_resize(lib, ctx);
            let fw = std::ffi::CStr::from_ptr(attr.fw_ver.as_ptr())
                .to_string_lossy()
                .into_owned();
            let link = match (iwarp, pattr.link_layer as u32) {
                (true, _) => "iWARP",
                (false, IBV_LINK_LAYER_ETHERNET) => "RoCE",
                _ => "InfiniBand",
            };
            let attributes = vec![
                ("netdev", netdev.to_owned()),
                ("device", name.clone()),
                ("port", port.to_string()),
                ("link", link.to_owned()),
                ("fw_ver", fw),
                (
                    "node_guid",
                    format!("{:016x}", u64::from_be(attr.node_guid)),
                ),
                (
                    "active_mtu",
                    (128u32 << pattr.active_mtu.min(5)).to_string(),
                ),
                // InfiniBand's CM carries no private data length: the
                // receiver sees the whole REQ/REP field, its tail zero
                // (MPA on iWARP carries the length).
                ("private_data_exact", iwarp.to_string()),
            ];
            for fd in [(*channel).fd, (*ctx).async_fd] {
                super::set_nonblocking(fd);
            }
            let idle = match eventfd() {
                Ok(fd) => fd,
                Err(e) => {
                    if let Some(g) = guard {
                        (lib.ibv_destroy_cq)(g.0);
                    }
                    return fail(&format!("eventfd ({e})"), id);
                }
            };
            let dev = Arc::new_cyclic(|me: &Weak<VerbsDevice>| VerbsDevice {
                lib,
                ctx: Ptr(ctx),
                guard,
                anchor: Ptr(id),
                channel: Ptr(channel),
                port,
                iwarp,
                cq_resizable,
                srq_resizable,
                loses_sq_flushes: attr.vendor_id == SIW_VENDOR_ID,
                orphans: AtomicU32::new(0),
                address,
                caps,
                attributes,
                pds: Mutex::default(),
                mws: Mutex::default(),
                keys: KeyMap::default(),
                mrs: Mutex::default(),
                next_id: AtomicU64::new(1),
                rings: ArcSwap::default(),
                rings_lock: Mutex::new(()),
                cq_ptrs: Mutex::default(),
                srq_ptrs: Mutex::default(),
                idle,
                events: EventLoop::new(me.clone()),
            });
            dev.events
                .start((*channel).fd, (*ctx).async_fd)
                .map_err(|e| format!("event thread: {e}"))?;
            Ok(dev)
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn pd(&self, pd: PdId) -> Option<*mut ibv_pd> {
        lock_anyway(&self.pds).get(&pd.0).map(|p| p.0)
    }

    pub(super) fn key(&self, lkey: u32) -> Option<Key> {
        self.keys.get(lkey).map(|e| Key {
            mr: Ptr(e.mr as *mut ibv_mr),
            addr: e.addr,
            len: e.len,
            access: e.access,
            pd: e.pd,
        })
    }

    pub(super) fn idle_fd(&self) -> BorrowedFd<'_> {
        self.idle.as_fd()
    }

    pub(super) fn add_ring(&self, ring: Arc<super::ring::Ring>) {
        let _g = lock_anyway(&self.rings_lock);
        let mut m = (**self.rings.load()).clone();
        m.insert(ring.id, ring);
        self.rings.store(Arc::new(m));
    }

    pub(super) fn remove_ring(&self, id: u32) {
        let _g = lock_anyway(&self.rings_lock);
        let mut m = (**self.rings.load()).clone();
        if let Some(r) = m.remove(&id) {
            // (Nobody polls for its requests any more.)
            if r.unorphan() {
                self.orphans.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.rings.store(Arc::new(m));
    }

    fn reg(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        let p = self.pd(pd).ok_or(DeviceError::NotFound)?;
        let mut flags = 0;
        if access.contains(Access::LOCAL_WRITE) || access.contains(Access::REMOTE_WRITE) {
            flags |= IBV_ACCESS_LOCAL_WRITE;
        }
        if access.contains(Access::REMOTE_WRITE) {
            flags |= IBV_ACCESS_REMOTE_WRITE;
        }
        if access.contains(Access::REMOTE_READ) {
            flags |= IBV_ACCESS_REMOTE_READ;
        }
        if self.caps.max_mw > 0 {
            flags |= IBV_ACCESS_MW_BIND;
        }
        // SAFETY: registering tells the device to pin and map the range;
        // it never makes it a Rust reference. The result is checked.
        let mr = unsafe { (self.lib.ibv_reg_mr)(p, addr as *mut _, len as usize, flags as i32) };
        if mr.is_null() {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EFAULT) | Some(libc::EPERM) | Some(libc::EACCES) => {
                    let need = Need {
                        write: flags & (IBV_ACCESS_LOCAL_WRITE) != 0,
                        shared: false,
                    };
                    DeviceError::Memory(
                        memcheck::check(addr, len, need)
                            .err()
                            .unwrap_or(MemoryFault::NotReadable),
                    )
                }
                Some(libc::EINVAL) => DeviceError::Invalid,
                _ => DeviceError::Resources,
            });
        }
        // SAFETY: `mr` is the registration just returned.
        let (lkey, rkey) = unsafe { ((*mr).lkey, (*mr).rkey) };
        let key = Key {
            mr: Ptr(mr),
            addr,
            len,
            access,
            pd,
        };
        let id = mr as u64;
        {
            let mut mrs = lock_anyway(&self.mrs);
            mrs.insert(id, key);
            self.keys.insert(lkey, entry_of(&key));
        }
        Ok(MemoryRegion {
            lkey,
            rkey: if access.is_remote() { rkey } else { 0 },
            addr,
            len,
            id,
        })
    }

    /// The checks of one segment of a post before the device sees it:
    /// key, range, the DAT rights asked for, protection domain.
    #[inline(always)]
    pub(super) fn check_key(
        &self,
        lkey: u32,
        addr: u64,
        len: u64,
        need: Access,
        pd: Option<PdId>,
    ) -> Result<(), KeyFault> {
        let k = self.keys.get(lkey).ok_or(KeyFault::Key)?;
        let end = addr.checked_add(len).ok_or(KeyFault::Bounds)?;
        if addr < k.addr || end > k.addr + k.len {
            return Err(KeyFault::Bounds);
        }
        // The rights the consumer asked for, not what the device implies
        // (verbs lets any registration be read locally): DAT's LMR privileges.
        if !k.access.contains(need) {
            return Err(KeyFault::Rights);
        }
        if pd.is_some_and(|p| p != k.pd) {
            return Err(KeyFault::Domain);
        }
        Ok(())
    }

    pub(super) fn mw(&self, w: WindowId) -> Option<*mut ibv_mw> {
        lock_anyway(&self.mws).get(&w.0).map(|p| p.0)
    }
}

impl Drop for VerbsDevice {
    fn drop(&mut self) {
        self.events.stop();
        // SAFETY: what is left belongs to this device alone now; each
        // object is destroyed once.
        unsafe {
            for (_, k) in lock_anyway(&self.mrs).drain() {
                (self.lib.ibv_dereg_mr)(k.mr.0);
            }
            for (_, w) in lock_anyway(&self.mws).drain() {
                if let Some(f) = (*self.ctx.0).ops.dealloc_mw {
                    f(w.0);
                }
            }
            for (_, p) in lock_anyway(&self.pds).drain() {
                (self.lib.ibv_dealloc_pd)(p.0);
            }
            (self.lib.rdma_destroy_id)(self.anchor.0);
            (self.lib.rdma_destroy_event_channel)(self.channel.0);
            if let Some(g) = self.guard {
                (self.lib.ibv_destroy_cq)(g.0);
            }
            (self.lib.ibv_close_device)(self.ctx.0);
        }
    }
}

/// Whether the device grows a CQ (`ibv_resize_cq`): tried once on a CQ of
/// one entry made for the purpose.
///
/// # Safety
/// `ctx` is an open device context.
unsafe fn probe_cq_resize(lib: &Lib, ctx: *mut ibv_context) -> bool {
    // SAFETY: the caller's context; the CQ is made and destroyed here.
    unsafe {
        let cq = (lib.ibv_create_cq)(ctx, 1, std::ptr::null_mut(), std::ptr::null_mut(), 0);
        if cq.is_null() {
            return false;
        }
        let ok = (lib.ibv_resize_cq)(cq, 64) == 0;
        (lib.ibv_destroy_cq)(cq);
        ok
    }
}

/// siw's vendor id ("bmt").
const SIW_VENDOR_ID: u32 = 0x0062_6d74;

/// siw's ABI takes the mapping key 0x90000 (`SIW_INVAL_UOBJ_KEY`, page
/// 144 of the context's mapping space) for "no mapping": rdma-core refuses
/// any CQ, queue pair or SRQ whose queue the kernel maps there, and the
/// kernel, which hands out the first free pages, maps the next one there
/// again. So once a process's live queues fill 144 pages (19 queue pairs
/// beside two CQs of 4,096 entries: `E2E_CONN_07`), siw creates nothing
/// more. A CQ of 32,768 entries (1 MiB) made first, kept for the life of
/// the context, holds
/// pages 0-256; nothing else can land on page 144. Once per context (one
/// per IA); the caller destroys it before it closes the context.
///
/// # Safety
/// `ctx` is an open device context.
unsafe fn guard_siw_key(lib: &Lib, ctx: *mut ibv_context) -> Option<*mut ibv_cq> {
    // SAFETY: the caller's context.
    let cq =
        unsafe { (lib.ibv_create_cq)(ctx, 32768, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
    if cq.is_null() {
        tracing::debug!("verbs: siw: the guard CQ could not be made");
        return None;
    }
    Some(cq)
}

/// Whether the device grows an SRQ (`ibv_modify_srq` with
/// `IBV_SRQ_MAX_WR`): tried once on a scratch SRQ when the device opens.
///
/// # Safety
/// `ctx` is an open device context.
unsafe fn probe_srq_resize(lib: &Lib, ctx: *mut ibv_context) -> bool {
    // SAFETY: the caller's context; the PD and SRQ are made and destroyed
    // here; every result is checked before use.
    unsafe {
        let pd = (lib.ibv_alloc_pd)(ctx);
        if pd.is_null() {
            return false;
        }
        let mut a: ibv_srq_init_attr = std::mem::zeroed();
        a.attr.max_wr = 1;
        a.attr.max_sge = 1;
        let srq = (lib.ibv_create_srq)(pd, &mut a);
        let ok = !srq.is_null() && {
            let mut m: ibv_srq_attr = std::mem::zeroed();
            m.max_wr = a.attr.max_wr + 64;
            (lib.ibv_modify_srq)(srq, &mut m, IBV_SRQ_MAX_WR as i32) == 0
        };
        if !srq.is_null() {
            (lib.ibv_destroy_srq)(srq);
        }
        (lib.ibv_dealloc_pd)(pd);
        ok
    }
}

/// Whether registration `k` covers `[addr, addr + len)`, grants `need`
/// and is in `pd`.
/// A registration as the key map keeps it.
fn entry_of(k: &Key) -> super::keymap::Entry {
    super::keymap::Entry {
        mr: k.mr.0 as usize,
        addr: k.addr,
        len: k.len,
        access: k.access,
        pd: k.pd,
    }
}

fn capabilities(
    a: &ibv_device_attr,
    p: &ibv_port_attr,
    iwarp: bool,
    has_mw: bool,
    has_srq: bool,
) -> Capabilities {
    let u = |v: i32| u32::try_from(v).unwrap_or(0);
    let fw = {
        // SAFETY: fw_ver is a NUL-terminated array the device filled.
        let s = unsafe { std::ffi::CStr::from_ptr(a.fw_ver.as_ptr()) }.to_string_lossy();
        let mut it = s.split('.').map(|x| x.trim().parse::<u32>().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    };
    Capabilities {
        vendor: "OpenIB (rdma-core verbs)",
        hw_version: (a.hw_ver, 0),
        fw_version: fw,
        max_qp: u(a.max_qp),
        max_qp_wr: u(a.max_qp_wr),
        max_sge: u(a.max_sge).min(super::MAX_SGE as u32),
        max_sge_rd: u(a.max_sge_rd).max(1).min(super::MAX_SGE as u32),
        max_sge_wr: u(a.max_sge).min(super::MAX_SGE as u32),
        max_cq: u(a.max_cq),
        max_cqe: u(a.max_cqe),
        max_mr: u(a.max_mr),
        max_mr_size: a.max_mr_size,
        max_va: u64::MAX,
        max_pd: u(a.max_pd),
        max_msg_size: u64::from(p.max_msg_sz),
        max_rdma_size: u64::from(p.max_msg_sz),
        max_mw: if has_mw { u(a.max_mw) } else { 0 },
        max_srq: if has_srq { u(a.max_srq) } else { 0 },
        max_srq_wr: if has_srq { u(a.max_srq_wr) } else { 0 },
        max_qp_per_srq: if has_srq { u(a.max_qp) } else { 0 },
        max_ird: u(a.max_qp_rd_atom).min(255),
        max_ord: u(a.max_qp_init_rd_atom).min(255),
        max_ird_total: u(a.max_res_rd_atom).max(u(a.max_qp_rd_atom)),
        max_ord_total: u(a.max_res_rd_atom).max(u(a.max_qp_init_rd_atom)),
        // rdma_cm's private data: an InfiniBand REQ carries 56 bytes after
        // rdma_cm's header. On iWARP the kernel passes at most 256 bytes
        // (RDMA_MAX_PRIVATE_DATA), less what the MPA v2 exchange takes:
        // on siw an accept of 252 bytes reaches the active side as
        // CONNECT_ERROR (EINVAL), 248 works (CRA_04, E2E_CONN_01).
        max_private_data: if iwarp { 248 } else { 56 },
        solicited_events: true,
        unsignalled: true,
        fence: true,
        multipath: false,
        buffer_alignment: 64,
    }
}

impl Device for VerbsDevice {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn attributes(&self) -> Vec<(&'static str, String)> {
        self.attributes.clone()
    }

    fn address(&self) -> SocketAddr {
        self.address
    }

    fn port_of_service(&self, service: u64) -> u16 {
        crate::transport::ports::port_of_service(service)
    }

    fn alloc_pd(&self) -> Result<PdId, DeviceError> {
        // SAFETY: the context is open for the life of the device.
        let p = unsafe { (self.lib.ibv_alloc_pd)(self.ctx.0) };
        if p.is_null() {
            return Err(DeviceError::Resources);
        }
        let id = self.next_id();
        lock_anyway(&self.pds).insert(id, Ptr(p));
        Ok(PdId(id))
    }

    fn dealloc_pd(&self, pd: PdId) -> Result<(), DeviceError> {
        let p = lock_anyway(&self.pds)
            .remove(&pd.0)
            .ok_or(DeviceError::NotFound)?;
        // SAFETY: `p` was allocated here and is removed from the table.
        if unsafe { (self.lib.ibv_dealloc_pd)(p.0) } != 0 {
            lock_anyway(&self.pds).insert(pd.0, p);
            return Err(DeviceError::Busy);
        }
        Ok(())
    }

    fn register(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.reg(pd, addr, len, access)
    }

    /// DAT's shared virtual memory must be memory other processes map
    /// (`MAP_SHARED`), which `ibv_reg_mr` does not check (`LMC_13`).
    fn register_shared(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        if len > 0 {
            let need = crate::transport::soft::memcheck::Need {
                write: access.contains(Access::LOCAL_WRITE)
                    || access.contains(Access::REMOTE_WRITE),
                shared: true,
            };
            crate::transport::soft::memcheck::check(addr, len, need)
                .map_err(DeviceError::Memory)?;
        }
        self.reg(pd, addr, len, access)
    }

    fn deregister(&self, mr: &MemoryRegion) -> Result<(), DeviceError> {
        let key = {
            let mut mrs = lock_anyway(&self.mrs);
            let key = mrs.remove(&mr.id).ok_or(DeviceError::NotFound)?;
            self.keys.remove(mr.lkey);
            key
        };
        // SAFETY: the registration was made here and is out of the tables.
        if unsafe { (self.lib.ibv_dereg_mr)(key.mr.0) } != 0 {
            return Err(DeviceError::Busy);
        }
        Ok(())
    }

    fn check_local(
        &self,
        lkey: u32,
        addr: u64,
        len: u64,
        need: Access,
        pd: Option<PdId>,
    ) -> Result<(), KeyFault> {
        self.check_key(lkey, addr, len, need, pd)
    }

    fn alloc_window(&self, pd: PdId) -> Result<WindowId, DeviceError> {
        if self.caps.max_mw == 0 {
            return Err(DeviceError::Unsupported);
        }
        let p = self.pd(pd).ok_or(DeviceError::NotFound)?;
        // SAFETY: ibv_alloc_mw is an inline call of the device's op, which
        // exists (checked at open).
        let mw = unsafe {
            match (*self.ctx.0).ops.alloc_mw {
                Some(f) => f(p, IBV_MW_TYPE_1),
                None => std::ptr::null_mut(),
            }
        };
        if mw.is_null() {
            return Err(DeviceError::Resources);
        }
        let id = self.next_id();
        lock_anyway(&self.mws).insert(id, Ptr(mw));
        Ok(WindowId(id))
    }

    fn dealloc_window(&self, w: WindowId) -> Result<(), DeviceError> {
        let mw = lock_anyway(&self.mws)
            .remove(&w.0)
            .ok_or(DeviceError::NotFound)?;
        // SAFETY: the window was allocated here and is out of the table.
        unsafe {
            if let Some(f) = (*self.ctx.0).ops.dealloc_mw {
                f(mw.0);
            }
        }
        Ok(())
    }

    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CompletionQueue>, DeviceError> {
        let me = self.events.device().ok_or(DeviceError::State)?;
        Ok(VerbsCq::create(me, depth)?)
    }

    fn create_srq(
        &self,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<Arc<dyn SharedReceiveQueue>, DeviceError> {
        if self.caps.max_srq == 0 {
            return Err(DeviceError::Unsupported);
        }
        let me = self.events.device().ok_or(DeviceError::State)?;
        VerbsSrq::create(me, pd, depth, max_sge)
    }

    fn create_qp(&self, cfg: QpConfig) -> Result<Arc<dyn QueuePair>, DeviceError> {
        let me = self.events.device().ok_or(DeviceError::State)?;
        VerbsQp::create(me, cfg)
    }

    fn listen(&self, port: u16, cm: Arc<dyn CmHandler>) -> Result<Arc<dyn Listener>, DeviceError> {
        let me = self.events.device().ok_or(DeviceError::State)?;
        cm::VerbsListener::create(me, port, cm)
    }

    fn accept(
        &self,
        request: u64,
        qp: &dyn QueuePair,
        private_data: &[u8],
    ) -> Result<(), DeviceError> {
        let me = self.events.device().ok_or(DeviceError::State)?;
        cm::accept(&me, request, qp.num(), private_data)
    }

    fn progress(&self) -> bool {
        false
    }
}
