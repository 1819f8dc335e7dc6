//! The device: protection domains, memory registrations (checked by
//! `memcheck`: mapped, readable, writable when write access is asked for),
//! windows, completion and shared receive queues, queue pairs, listeners,
//! and the connections listeners took until the DAT layer accepts or
//! rejects them.

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{
    listener::IwarpListener,
    options::DeviceOptions,
    socket::write_small,
    srq::IwarpSrq,
    state::{DeviceShared, Inner, IwarpQp, OwnedCmEvent, Phase, Sock},
};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{
    Access, CmHandler, CompletionQueue, Device, DeviceError, KeyFault, Listener, MemoryRegion,
    PdId, QpConfig, QpNum, QueuePair, SharedReceiveQueue, WindowId,
};
use crate::transport::iwarp::conn::{RecvRing, SharedRecv, MAX_SGE};
use crate::transport::iwarp::setup::{AcceptConfig, RTR_TIMEOUT};
use crate::transport::soft::cq::{Cq, Feeder};
use crate::transport::soft::keys::{KeyTable, Region};
use crate::transport::soft::memcheck::{self, Need};
use crate::transport::soft::progress::{self, Source};
use crate::transport::Capabilities;

/// How long a Send that found no posted receive waits for one, unless
/// [`DeviceShared::set_rnr_timeout`] says otherwise.
pub const DEFAULT_RNR_TIMEOUT: Duration = Duration::from_secs(2);

/// An opened software RDMA NIC speaking iWARP over TCP.
pub struct IwarpDevice {
    /// What its queue pairs, shared receive queues and listeners reach it
    /// for (`self.keys`, `self.opts`, … through `Deref`).
    pub(super) shared: Arc<DeviceShared>,
    /// Fork generation at open: in a child the device is the parent's.
    pub(super) gen: u32,
    pub(super) addr: IpAddr,
    pub(super) next_pd: AtomicU64,
    /// Protection domains allocated and not yet deallocated.
    pub(super) pds: Mutex<HashSet<u64>>,
    pub(super) next_qp: AtomicU32,
    pub(super) cqs: Mutex<Vec<Weak<Cq>>>,
    pub(super) listeners: Mutex<Vec<Weak<IwarpListener>>>,
    pub(super) srqs: Mutex<Vec<Weak<IwarpSrq>>>,
}

impl std::ops::Deref for IwarpDevice {
    type Target = DeviceShared;
    fn deref(&self) -> &DeviceShared {
        &self.shared
    }
}

impl IwarpDevice {
    /// Opens a device whose address is `addr`.
    pub fn open(addr: IpAddr, caps: Capabilities) -> Arc<IwarpDevice> {
        Self::open_with(addr, caps, DeviceOptions::default())
    }

    /// Opens a device whose address is `addr`, with `opts`.
    pub fn open_with(addr: IpAddr, caps: Capabilities, opts: DeviceOptions) -> Arc<IwarpDevice> {
        let shared = Arc::new_cyclic(|me| DeviceShared {
            caps,
            opts,
            keys: KeyTable::new(),
            next_req: AtomicU64::new(1),
            qps: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            rnr_timeout: AtomicU64::new(
                u64::try_from(opts.rnr_timeout.as_nanos()).unwrap_or(u64::MAX),
            ),
            windows: Mutex::new(HashMap::new()),
            me: me.clone(),
        });
        Arc::new(IwarpDevice {
            shared,
            gen: progress::fork_generation(),
            addr,
            next_pd: AtomicU64::new(1),
            pds: Mutex::new(HashSet::new()),
            next_qp: AtomicU32::new(1),
            cqs: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            srqs: Mutex::new(Vec::new()),
        })
    }

    /// The options the device was opened with.
    pub fn options(&self) -> &DeviceOptions {
        &self.opts
    }

    /// The device's key table.
    pub fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// `Invalid` unless `pd` was allocated on this device and is still live.
    pub(super) fn check_pd(&self, pd: PdId) -> Result<(), DeviceError> {
        if lock(&self.pds).contains(&pd.0) {
            Ok(())
        } else {
            Err(DeviceError::Invalid)
        }
    }

    pub(super) fn find_cq(&self, cq: &Arc<dyn CompletionQueue>) -> Option<Arc<Cq>> {
        let want = Arc::as_ptr(cq) as *const ();
        lock(&self.cqs)
            .iter()
            .filter_map(Weak::upgrade)
            .find(|c| Arc::as_ptr(c) as *const () == want)
    }

    pub(super) fn find_srq(&self, srq: &Arc<dyn SharedReceiveQueue>) -> Option<Arc<IwarpSrq>> {
        let want = Arc::as_ptr(srq) as *const ();
        lock(&self.srqs)
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| Arc::as_ptr(s) as *const () == want)
    }

    pub(super) fn find_qp(&self, num: QpNum) -> Option<Arc<IwarpQp>> {
        lock(&self.qps).get(&num).and_then(Weak::upgrade)
    }
}

impl IwarpDevice {
    /// A key-table entry for `[addr, addr + len)` in `pd` (checked by the
    /// caller), with a remote key when `access` grants remote rights.
    fn add_registration(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        let (idx, lkey) = self
            .keys
            .register(Region {
                addr,
                len,
                rights: access,
                pz: pd.0,
            })
            .map_err(|_| DeviceError::Resources)?;
        let rkey = if access.is_remote() {
            match self.keys.grant_remote(idx, addr, len, access) {
                Ok(k) => k,
                Err(_) => {
                    self.keys.deregister(idx);
                    return Err(DeviceError::Resources);
                }
            }
        } else {
            0
        };
        Ok(MemoryRegion {
            lkey,
            rkey,
            addr,
            len,
            id: u64::from(idx),
        })
    }
}

/// The memory of a registration is mapped, readable, writable when `access`
/// grants writes, and shared between processes when `shared`.
fn check_memory(addr: u64, len: u64, access: Access, shared: bool) -> Result<(), DeviceError> {
    if len == 0 {
        return Ok(());
    }
    let need = Need {
        write: access.contains(Access::LOCAL_WRITE) || access.contains(Access::REMOTE_WRITE),
        shared,
    };
    memcheck::check(addr, len, need).map_err(DeviceError::Memory)
}

impl Device for IwarpDevice {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn address(&self) -> SocketAddr {
        SocketAddr::new(self.addr, 0)
    }

    fn alloc_pd(&self) -> Result<PdId, DeviceError> {
        let id = self.next_pd.fetch_add(1, Ordering::Relaxed);
        lock(&self.pds).insert(id);
        Ok(PdId(id))
    }

    /// Forgets a protection domain; registrations and queue pairs can no
    /// longer be made in it. (The DAT layer refuses to free a PZ in use.)
    fn dealloc_pd(&self, pd: PdId) -> Result<(), DeviceError> {
        if lock(&self.pds).remove(&pd.0) {
            Ok(())
        } else {
            Err(DeviceError::NotFound)
        }
    }

    fn register(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.check_pd(pd)?;
        check_memory(addr, len, access, false)?;
        self.add_registration(pd, addr, len, access)
    }

    /// Refuses memory that is not shared between processes.
    fn register_shared(
        &self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.check_pd(pd)?;
        check_memory(addr, len, access, true)?;
        self.add_registration(pd, addr, len, access)
    }

    fn register_same(
        &self,
        base: &MemoryRegion,
        pd: PdId,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.check_pd(pd)?;
        self.add_registration(pd, base.addr, base.len, access)
    }

    /// Refused (`Busy`) while a window is bound to the registration.
    fn deregister(&self, mr: &MemoryRegion) -> Result<(), DeviceError> {
        let idx = u32::try_from(mr.id).map_err(|_| DeviceError::Invalid)?;
        let w = lock(&self.windows);
        if w.values().any(|&(_, b)| b == Some(idx)) {
            return Err(DeviceError::Busy);
        }
        self.keys.deregister(idx);
        Ok(())
    }

    /// The key table's check, as the engine applies it to a post.
    fn check_local(
        &self,
        lkey: u32,
        addr: u64,
        len: u64,
        need: Access,
        pd: Option<PdId>,
    ) -> Result<(), KeyFault> {
        self.keys
            .check_local(lkey, addr, len, need, pd.map(|p| p.0))
            .map(|_| ())
    }

    /// As OFED's dapl maps DAT connection qualifiers to TCP ports.
    fn port_of_service(&self, service: u64) -> u16 {
        crate::transport::ports::port_of_service(service)
    }

    /// A window is a key-table entry in `pd` with no key until bound.
    fn alloc_window(&self, pd: PdId) -> Result<WindowId, DeviceError> {
        self.check_pd(pd)?;
        let idx = self
            .keys
            .reserve_window(pd.0)
            .map_err(|_| DeviceError::Resources)?;
        lock(&self.windows).insert(idx, (pd.0, None));
        Ok(WindowId(u64::from(idx)))
    }

    /// Frees a window: its remote key stops working at once.
    fn dealloc_window(&self, w: WindowId) -> Result<(), DeviceError> {
        let idx = u32::try_from(w.0).map_err(|_| DeviceError::NotFound)?;
        if lock(&self.windows).remove(&idx).is_none() {
            return Err(DeviceError::NotFound);
        }
        self.keys.deregister(idx);
        Ok(())
    }

    fn create_cq(&self, depth: u32) -> Result<Arc<dyn CompletionQueue>, DeviceError> {
        let cq = Cq::new(depth)?;
        let mut cqs = lock(&self.cqs);
        cqs.retain(|w| w.strong_count() > 0);
        cqs.push(Arc::downgrade(&cq));
        Ok(cq)
    }

    fn create_srq(
        &self,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<Arc<dyn SharedReceiveQueue>, DeviceError> {
        self.check_pd(pd)?;
        if depth == 0 || depth > self.caps.max_srq_wr || max_sge == 0 || max_sge as usize > MAX_SGE
        {
            return Err(DeviceError::Invalid);
        }
        let ring = RecvRing::new(depth as usize).map_err(|_| DeviceError::Resources)?;
        let srq = Arc::new(IwarpSrq {
            dev: self.me.clone(),
            pd: pd.0,
            max_sge,
            ring: Mutex::new(ring),
            qps: Mutex::new(Vec::new()),
        });
        let mut srqs = lock(&self.srqs);
        srqs.retain(|w| w.strong_count() > 0);
        srqs.push(Arc::downgrade(&srq));
        Ok(srq)
    }

    fn create_qp(&self, cfg: QpConfig) -> Result<Arc<dyn QueuePair>, DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        if cfg.max_send_sge as usize > MAX_SGE || cfg.max_recv_sge as usize > MAX_SGE {
            return Err(DeviceError::Invalid);
        }
        self.check_pd(cfg.pd)?;
        let srq = match &cfg.srq {
            Some(s) => {
                let s = self.find_srq(s).ok_or(DeviceError::Invalid)?;
                if s.pd != cfg.pd.0 {
                    return Err(DeviceError::Invalid);
                }
                Some(s)
            }
            None => None,
        };
        let send_cq = self.find_cq(&cfg.send_cq).ok_or(DeviceError::Invalid)?;
        let recv_cq = self.find_cq(&cfg.recv_cq).ok_or(DeviceError::Invalid)?;
        let num = self.next_qp.fetch_add(1, Ordering::Relaxed);
        let pre_recv =
            RecvRing::new(cfg.recv_depth as usize).map_err(|_| DeviceError::Resources)?;
        let qp = Arc::new_cyclic(|me| IwarpQp {
            num,
            gen: self.gen,
            me: me.clone(),
            dev: self.me.clone(),
            cfg: cfg.clone(),
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            overrun: AtomicBool::new(false),
            tx_blocked: AtomicBool::new(false),
            rnr_waiting: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            acks_left: AtomicBool::new(false),
            rx_more: AtomicBool::new(false),
            tx_more: AtomicBool::new(false),
            srq: srq.clone().map(|s| s as Arc<dyn SharedRecv>),
            inner: Mutex::new(Inner {
                phase: Phase::Idle,
                pre_recv,
            }),
        });
        let f: Arc<dyn Feeder> = qp.clone();
        send_cq.attach(&f);
        if !Arc::ptr_eq(&send_cq, &recv_cq) {
            recv_cq.attach(&f);
        }
        if let Some(s) = &srq {
            let mut v = lock(&s.qps);
            v.retain(|w| w.strong_count() > 0);
            v.push(Arc::downgrade(&qp));
        }
        lock(&self.qps).insert(num, Arc::downgrade(&qp));
        Ok(qp)
    }

    /// Listens on the device's address and, when that is not a loopback
    /// address, on loopback too (same port), so that local peers can use
    /// either.
    fn listen(&self, port: u16, cm: Arc<dyn CmHandler>) -> Result<Arc<dyn Listener>, DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let bind = |a: IpAddr, p: u16| {
            let l = TcpListener::bind(SocketAddr::new(a, p)).map_err(|e| {
                if e.kind() == ErrorKind::AddrInUse {
                    DeviceError::PortInUse
                } else {
                    DeviceError::Resources
                }
            })?;
            l.set_nonblocking(true)
                .map_err(|_| DeviceError::Resources)?;
            let p = l.local_addr().map_err(|_| DeviceError::Resources)?.port();
            Ok::<_, DeviceError>((l, p))
        };
        let loopback = match self.addr {
            IpAddr::V4(a) if !a.is_loopback() && !a.is_unspecified() => {
                Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
            }
            IpAddr::V6(a) if !a.is_loopback() && !a.is_unspecified() => {
                Some(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST))
            }
            _ => None,
        };
        let mut tries = 0;
        let (socks, port) = loop {
            let (main, chosen) = bind(self.addr, port)?;
            let Some(lo) = loopback else {
                break (vec![main], chosen);
            };
            match bind(lo, chosen) {
                Ok((second, _)) => break (vec![main, second], chosen),
                // Any port was asked for and loopback has this one taken:
                // try another.
                Err(DeviceError::PortInUse) if port == 0 && tries < 16 => tries += 1,
                Err(e) => return Err(e),
            }
        };
        let l = Arc::new(IwarpListener {
            regs: Mutex::new(Vec::new()),
            dev: self.me.clone(),
            socks: Mutex::new(socks),
            port,
            cm,
        });
        for s in lock(&l.socks).iter() {
            let src: Weak<dyn Source> = Arc::downgrade(&l) as Weak<IwarpListener>;
            let reg = progress::register(s.as_fd(), src).map_err(|_| DeviceError::Resources)?;
            lock(&l.regs).push(reg);
        }
        let mut ls = lock(&self.listeners);
        ls.retain(|w| w.strong_count() > 0);
        ls.push(Arc::downgrade(&l));
        Ok(l)
    }

    fn accept(
        &self,
        request: u64,
        qp: &dyn QueuePair,
        private_data: &[u8],
    ) -> Result<(), DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let q = self.find_qp(qp.num()).ok_or(DeviceError::NotFound)?;
        let mut pend = {
            let mut p = lock(&self.pending);
            match p.get(&request) {
                Some(x) if x.reported => {}
                _ => return Err(DeviceError::NotFound),
            }
            p.remove(&request).ok_or(DeviceError::NotFound)?
        };
        let mut inner = q.hold();
        if !matches!(inner.phase, Phase::Idle) {
            drop(inner);
            lock(&self.pending).insert(request, pend);
            return Err(DeviceError::State);
        }
        let acc = match pend.resp.accept(AcceptConfig {
            private_data: private_data.to_vec(),
            ird: q.cfg.ird,
            ord: q.cfg.ord,
            ack_reads_wanted: !self.opts.local_completion,
        }) {
            Ok(a) => a,
            Err(e) if e.is_invalid_parameter() => {
                drop(inner);
                lock(&self.pending).insert(request, pend);
                return Err(DeviceError::Invalid);
            }
            Err(_) => return Err(DeviceError::State),
        };
        pend.reg = None;
        let stream = match Sock::new(pend.stream, &q) {
            Ok(s) if write_small(&s, &acc.reply) => s,
            _ => {
                drop(inner);
                q.cm_event(OwnedCmEvent::AcceptFailed);
                return Ok(());
            }
        };
        let ev = match acc.established {
            Some(est) => q.go_up(&mut inner, stream, est, false),
            None => {
                let deadline = Instant::now() + RTR_TIMEOUT;
                stream.wake_at(deadline);
                inner.phase = Phase::Accepting {
                    stream,
                    resp: Box::new(pend.resp),
                    deadline,
                };
                None
            }
        };
        drop(inner);
        if let Some(ev) = ev {
            q.cm_event(ev);
        }
        Ok(())
    }

    fn progress(&self) -> bool {
        if progress::inherited(self.gen) {
            return false;
        }
        let mut any = false;
        let ls: Vec<_> = lock(&self.listeners)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for l in ls {
            any |= l.progress();
        }
        any |= self.progress_pending();
        let qps: Vec<_> = lock(&self.qps).values().filter_map(Weak::upgrade).collect();
        for q in qps {
            any |= Feeder::progress(&*q);
        }
        any
    }
}
