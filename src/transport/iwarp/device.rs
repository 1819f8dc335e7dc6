//! The iWARP device over real sockets: implements [`verbs::Device`],
//! [`QueuePair`], [`Listener`] and the CQ feeders with `setup` (MPA
//! connection setup) and `conn` (the protocol engine), moving bytes with
//! `memio`.
//!
//! - One lock per queue pair (`Inner`) holds the connection phase and the
//!   engine; posting threads take it to write FPDUs themselves, pollers,
//!   the progress thread and [`Device::progress`] only try-lock it. The
//!   progress thread hands a queue pair it finds locked to the holder
//!   (`kick`), which runs the engine again when it lets go (`QpGuard`).
//! - Setup frames are read with `MSG_PEEK` and consumed exactly up to what
//!   `setup` took, so FPDU bytes behind them stay in the socket.
//! - Sockets, listeners and pending requests are registered with the
//!   background progress thread ([`crate::transport::soft::progress`]), which runs them on
//!   every arrival (a queue pair's input only while no application thread
//!   drives its completion queues, [`Cq::driven`]) and every deadline.
//! - Transmit: FPDUs ready together are planned as a batch; small ones
//!   share a `sendmsg`, a large one goes alone (it starts a TCP segment).
//!   Receive: at an FPDU boundary a peek plus one `recvmsg` takes every
//!   FPDU that arrived (payload straight into application memory,
//!   completions held until it has landed); a payload's `recvmsg` also
//!   takes its trailer and the next FPDU's first bytes.
//! - `register` checks the memory (`memcheck`): mapped, readable, and
//!   writable when local or remote write access is asked for.
//! - A queue pair's socket is watched by its send and receive CQs' wait
//!   descriptors (token: the QP number) from connect/accept until it is
//!   closed (`Sock`), so a thread sleeping on `wait_fd` wakes on data.
//! - RNR: a Send that finds no posted receive holds its connection (the
//!   device stops reading it) for the receiver-not-ready time; a receive
//!   posted in time (on the queue pair or its SRQ) lets it land, otherwise
//!   the engine's Terminate goes out, the connection breaks and the
//!   sender's Send completes receiver-not-ready.
//! - A CQ overrun (a completion that did not fit) is logged
//!   (`tracing::warn!`) and breaks the queue pair at its next step
//!   (`CmEvent::Broken`), as verbs reports it as a fatal error.
//! - Objects made before a `fork()` are the parent's in the child: they
//!   refuse work and their closing leaves shared kernel state alone.

#![allow(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::conn::{
    Conn, ConnConfig, ConnState, Fault, RecvRing, RqEntry, RxAction, RxPlan, SharedRecv, TxPlan,
    TxToken, MAX_SGE,
};
use super::setup::{
    AcceptConfig, Initiator, InitiatorConfig, InitiatorEvent, Responder, ResponderConfig,
    ResponderEvent, MAX_PD_IN, REPLY_TIMEOUT, REQUEST_TIMEOUT, RTR_TIMEOUT,
};
use super::wire::{FpduReader, RxEvent, RxNeed, Segment};
use crate::sync::lock_anyway as lock;
use crate::transport::soft::cq::{Cq, Feeder};
use crate::transport::soft::keys::{KeyTable, Region};
use crate::transport::soft::memcheck::{self, Need};
use crate::transport::soft::memio::{self, IoError, IoPlan, RawSeg};
use crate::transport::soft::progress::{self, Reg, Run, Source};
use crate::transport::verbs::{
    Access, BindWr, CmEvent, CmHandler, CompletionQueue, Device, DeviceError, Listener,
    MemoryRegion, PdId, PostError, QpConfig, QpNum, QpState, QueuePair, RecvWr, SendWr,
    SharedReceiveQueue, Wc, WcOp, WcStatus, WindowId,
};
use crate::transport::Capabilities;

/// Largest FPDU this device sends.
const MAX_FPDU: usize = 65535;
/// How long a graceful close waits for the peer's end of stream.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a Send that found no posted receive waits for one, unless
/// [`IwarpDevice::set_rnr_timeout`] says otherwise.
pub const DEFAULT_RNR_TIMEOUT: Duration = Duration::from_secs(2);

/// How an [`IwarpDevice`] behaves on the wire (dat.conf instance options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Ask for CRC32c on every FPDU (`crc=on`). A peer's request turns it
    /// on regardless.
    pub crc: bool,
    /// Complete Sends and RDMA Writes when handed to TCP (iWARP's local
    /// completion, `ack=local`) instead of acknowledging them with
    /// zero-length reads, for peers that never answer one.
    pub local_completion: bool,
    /// Size FPDUs to the connection's TCP MSS (`fpdu=mss`) instead of the
    /// 16-bit limit.
    pub fpdu_mss: bool,
    /// How long a Send that found no posted receive holds its connection.
    pub rnr_timeout: Duration,
    /// Silence after which TCP keepalive probes start, the time between
    /// probes and how many go unanswered before the connection is broken.
    pub keepalive_idle: Duration,
    pub keepalive_interval: Duration,
    pub keepalive_count: u32,
    /// How long sent data may stay unacknowledged before the connection is
    /// broken (`TCP_USER_TIMEOUT`).
    pub user_timeout: Duration,
}

impl DeviceOptions {
    /// The options as dat.conf instance data spells them, in this order:
    /// `crc`, `ack`, `fpdu`, `rnr_timeout` (ms), `keepalive`
    /// (`idle_s,interval_s,count`), `user_timeout` (ms).
    pub fn conf_values(&self) -> [(&'static str, String); 6] {
        let pick = |b: bool, yes: &str, no: &str| if b { yes } else { no }.to_string();
        [
            ("crc", pick(self.crc, "on", "off")),
            ("ack", pick(self.local_completion, "local", "read")),
            ("fpdu", pick(self.fpdu_mss, "mss", "max")),
            ("rnr_timeout", self.rnr_timeout.as_millis().to_string()),
            (
                "keepalive",
                format!(
                    "{},{},{}",
                    self.keepalive_idle.as_secs(),
                    self.keepalive_interval.as_secs(),
                    self.keepalive_count
                ),
            ),
            ("user_timeout", self.user_timeout.as_millis().to_string()),
        ]
    }
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            crc: false,
            local_completion: false,
            fpdu_mss: false,
            rnr_timeout: DEFAULT_RNR_TIMEOUT,
            keepalive_idle: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(2),
            keepalive_count: 5,
            user_timeout: Duration::from_secs(20),
        }
    }
}

/// An opened software RDMA NIC speaking iWARP over TCP.
pub struct IwarpDevice {
    caps: Capabilities,
    opts: DeviceOptions,
    /// Fork generation at open: in a child the device is the parent's.
    gen: u32,
    addr: IpAddr,
    keys: KeyTable,
    next_pd: AtomicU64,
    /// Protection domains allocated and not yet deallocated.
    pds: Mutex<HashSet<u64>>,
    next_qp: AtomicU32,
    next_req: AtomicU64,
    cqs: Mutex<Vec<Weak<Cq>>>,
    qps: Mutex<HashMap<QpNum, Weak<IwarpQp>>>,
    listeners: Mutex<Vec<Weak<IwarpListener>>>,
    pending: Mutex<HashMap<u64, Pending>>,
    /// The receiver-not-ready time, in nanoseconds.
    rnr_timeout: AtomicU64,
    /// Memory windows: key-table index → protection domain and the index
    /// of the registration the window is bound to.
    windows: Mutex<HashMap<u32, (u64, Option<u32>)>>,
    srqs: Mutex<Vec<Weak<IwarpSrq>>>,
    me: Weak<IwarpDevice>,
}

/// A connection a listener took, until the DAT layer decides.
struct Pending {
    /// Watched by the progress thread (dropped before the stream).
    reg: Option<Reg>,
    stream: TcpStream,
    resp: Responder,
    deadline: Instant,
    reported: bool,
    cm: Arc<dyn CmHandler>,
    port: u16,
}

impl IwarpDevice {
    /// Opens a device whose address is `addr`.
    pub fn open(addr: IpAddr, caps: Capabilities) -> Arc<IwarpDevice> {
        Self::open_with(addr, caps, DeviceOptions::default())
    }

    /// Opens a device whose address is `addr`, with `opts`.
    pub fn open_with(addr: IpAddr, caps: Capabilities, opts: DeviceOptions) -> Arc<IwarpDevice> {
        Arc::new_cyclic(|me| IwarpDevice {
            caps,
            opts,
            gen: progress::fork_generation(),
            addr,
            keys: KeyTable::new(),
            next_pd: AtomicU64::new(1),
            pds: Mutex::new(HashSet::new()),
            next_qp: AtomicU32::new(1),
            next_req: AtomicU64::new(1),
            cqs: Mutex::new(Vec::new()),
            qps: Mutex::new(HashMap::new()),
            listeners: Mutex::new(Vec::new()),
            pending: Mutex::new(HashMap::new()),
            rnr_timeout: AtomicU64::new(
                u64::try_from(opts.rnr_timeout.as_nanos()).unwrap_or(u64::MAX),
            ),
            windows: Mutex::new(HashMap::new()),
            srqs: Mutex::new(Vec::new()),
            me: me.clone(),
        })
    }

    /// How long a Send that finds no posted receive holds its connection
    /// (the device stops reading it) before the connection is terminated
    /// and the sender's Send completes receiver-not-ready. Applies to Sends
    /// that arrive after the call.
    pub fn set_rnr_timeout(&self, t: Duration) {
        let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.rnr_timeout.store(ns, Ordering::Relaxed);
    }

    /// The receiver-not-ready time ([`IwarpDevice::set_rnr_timeout`]).
    pub fn rnr_timeout(&self) -> Duration {
        Duration::from_nanos(self.rnr_timeout.load(Ordering::Relaxed))
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
    fn check_pd(&self, pd: PdId) -> Result<(), DeviceError> {
        if lock(&self.pds).contains(&pd.0) {
            Ok(())
        } else {
            Err(DeviceError::Invalid)
        }
    }

    fn find_cq(&self, cq: &Arc<dyn CompletionQueue>) -> Option<Arc<Cq>> {
        let want = Arc::as_ptr(cq) as *const ();
        lock(&self.cqs)
            .iter()
            .filter_map(Weak::upgrade)
            .find(|c| Arc::as_ptr(c) as *const () == want)
    }

    fn find_srq(&self, srq: &Arc<dyn SharedReceiveQueue>) -> Option<Arc<IwarpSrq>> {
        let want = Arc::as_ptr(srq) as *const ();
        lock(&self.srqs)
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| Arc::as_ptr(s) as *const () == want)
    }

    fn find_qp(&self, num: QpNum) -> Option<Arc<IwarpQp>> {
        lock(&self.qps).get(&num).and_then(Weak::upgrade)
    }

    /// Reads the Requests of pending connections; reports complete ones.
    fn progress_pending(&self) -> bool {
        let mut events = Vec::new();
        let mut any = false;
        {
            let mut p = lock(&self.pending);
            let mut dead = Vec::new();
            let now = Instant::now();
            for (&id, pend) in p.iter_mut() {
                if pend.reported {
                    // The DAT layer decides (an accept of a request whose
                    // initiator gave up fails as AcceptFailed); the entry
                    // goes with that decision or with its listener.
                    continue;
                }
                match peek_feed(&pend.stream, |b| pend.resp.feed(b)) {
                    Fed::Nothing => {
                        if now >= pend.deadline {
                            dead.push(id);
                        }
                    }
                    Fed::Event(ResponderEvent::Request(req)) => {
                        any = true;
                        pend.reported = true;
                        let remote = pend.stream.peer_addr();
                        let local = pend.stream.local_addr();
                        if let (Ok(remote), Ok(local)) = (remote, local) {
                            events.push((
                                pend.cm.clone(),
                                id,
                                remote,
                                local,
                                pend.port,
                                req.private_data,
                            ));
                        } else {
                            dead.push(id);
                        }
                    }
                    Fed::Event(ResponderEvent::Refused { reply, .. }) => {
                        let _ = (&pend.stream).write_all(&reply);
                        dead.push(id);
                    }
                    Fed::Event(ResponderEvent::Established(_)) | Fed::Failed => dead.push(id),
                    Fed::Progress => any = true,
                }
            }
            for id in dead {
                p.remove(&id);
                any = true;
            }
        }
        for (cm, request, remote, local, port, pd) in events {
            cm.event(
                None,
                CmEvent::ConnectRequest {
                    request,
                    remote,
                    local,
                    port,
                    private_data: &pd,
                },
            );
        }
        any
    }
}

/// What feeding a setup with peeked bytes did.
enum Fed<E> {
    Nothing,
    Progress,
    Event(E),
    Failed,
}

/// Peeks at the socket, feeds `feed`, consumes what it took.
fn peek_feed<E, Er>(
    stream: &TcpStream,
    mut feed: impl FnMut(&[u8]) -> Result<super::setup::Progress<E>, Er>,
) -> Fed<E> {
    let mut buf = [0u8; 1024];
    let n = match stream.peek(&mut buf) {
        Ok(0) => return Fed::Failed,
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return Fed::Nothing,
        Err(_) => return Fed::Failed,
    };
    let Ok(p) = feed(&buf[..n]) else {
        return Fed::Failed;
    };
    let mut left = p.consumed;
    while left > 0 {
        match (&*stream).read(&mut buf[..left]) {
            Ok(0) => return Fed::Failed,
            Ok(k) => left -= k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Fed::Failed,
        }
    }
    match p.event {
        Some(e) => Fed::Event(e),
        None if p.consumed > 0 => Fed::Progress,
        None => Fed::Nothing,
    }
}

fn write_small(stream: &TcpStream, mut bytes: &[u8]) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while !bytes.is_empty() {
        match (&*stream).write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if Instant::now() > until {
                    return false;
                }
                std::thread::yield_now();
            }
            Err(_) => return false,
        }
    }
    true
}

/// A non-blocking TCP connect already under way.
fn start_connect(to: SocketAddr) -> std::io::Result<TcpStream> {
    // SAFETY: plain socket calls on a descriptor we own; the sockaddr
    // structures are fully initialised and live across the call.
    unsafe {
        let (family, storage, len) = sockaddr_of(to);
        let fd = libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let r = libc::connect(fd, (&raw const storage).cast(), len);
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(e);
            }
        }
        Ok(stream)
    }
}

fn sockaddr_of(to: SocketAddr) -> (i32, libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match to {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in.
            unsafe { std::ptr::write((&raw mut st).cast(), sin) };
            (
                libc::AF_INET,
                st,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in6.
            unsafe { std::ptr::write((&raw mut st).cast(), sin6) };
            (
                libc::AF_INET6,
                st,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// Whether a connecting socket finished (`Some(Ok)`), failed, or not yet.
fn connect_done(stream: &TcpStream) -> Option<std::io::Result<()>> {
    let mut fds = [nix::poll::PollFd::new(
        stream.as_fd(),
        nix::poll::PollFlags::POLLOUT,
    )];
    match nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO) {
        Ok(1) => Some(match stream.take_error() {
            Ok(None) => Ok(()),
            Ok(Some(e)) | Err(e) => Err(e),
        }),
        _ => None,
    }
}

/// Keepalive and user timeout from the device options, so that a silent
/// peer breaks the connection.
fn tune_socket(stream: &TcpStream, o: &DeviceOptions) -> std::io::Result<()> {
    let secs = |d: Duration| d.as_secs().clamp(1, i32::MAX as u64) as libc::c_int;
    let ms = |d: Duration| d.as_millis().clamp(1, i32::MAX as u128) as libc::c_uint;
    setsockopt_int(stream, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPIDLE,
        secs(o.keepalive_idle),
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPINTVL,
        secs(o.keepalive_interval),
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPCNT,
        o.keepalive_count.clamp(1, 127) as libc::c_int,
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        ms(o.user_timeout) as libc::c_int,
    )
}

fn setsockopt_int(
    stream: &TcpStream,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: `v` lives across the call and its size is passed; the
    // descriptor is owned by `stream`.
    let r = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The connection's TCP maximum segment size: the FPDU size of `fpdu=mss`.
fn tcp_mss(stream: &TcpStream) -> Option<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes and `len` is its size.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0 && v > 0).then_some(v as usize)
}

fn set_linger_zero(stream: &TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid descriptor and a linger structure of the right size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const l).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
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
        if len > 0 {
            let need = Need {
                write: access.contains(Access::LOCAL_WRITE)
                    || access.contains(Access::REMOTE_WRITE),
                shared: false,
            };
            memcheck::check(addr, len, need).map_err(DeviceError::Memory)?;
        }
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
            srq: srq.clone(),
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
                q.cm_event(Ev::AcceptFailed);
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

// ─────────────────────────────── listener ───────────────────────────────

/// A listening port of an [`IwarpDevice`].
pub struct IwarpListener {
    /// Watched by the progress thread (dropped before the sockets).
    regs: Mutex<Vec<Reg>>,
    dev: Weak<IwarpDevice>,
    /// The device's address, then loopback if that is another address;
    /// emptied by [`Listener::close`].
    socks: Mutex<Vec<TcpListener>>,
    port: u16,
    cm: Arc<dyn CmHandler>,
}

impl IwarpListener {
    fn progress(&self) -> bool {
        let Some(dev) = self.dev.upgrade() else {
            return false;
        };
        let mut any = false;
        let socks = lock(&self.socks);
        for (s, _) in socks
            .iter()
            .flat_map(|l| std::iter::from_fn(|| l.accept().ok()))
        {
            any = true;
            if s.set_nonblocking(true).is_err()
                || s.set_nodelay(true).is_err()
                || tune_socket(&s, &dev.opts).is_err()
            {
                continue;
            }
            let id = dev.next_req.fetch_add(1, Ordering::Relaxed);
            let src: Weak<dyn Source> = dev.me.clone();
            let Ok(reg) = progress::register(s.as_fd(), src) else {
                continue;
            };
            let deadline = Instant::now() + REQUEST_TIMEOUT;
            reg.schedule(deadline);
            lock(&dev.pending).insert(
                id,
                Pending {
                    reg: Some(reg),
                    stream: s,
                    resp: Responder::new(ResponderConfig {
                        crc_requested: dev.opts.crc,
                        max_pd_in: MAX_PD_IN,
                        max_fpdu: MAX_FPDU,
                    }),
                    deadline,
                    reported: false,
                    cm: self.cm.clone(),
                    port: self.port,
                },
            );
        }
        any
    }
}

impl Drop for IwarpListener {
    /// Requests that arrived on this listener and were never answered go
    /// with it (their connections are closed).
    fn drop(&mut self) {
        if let Some(dev) = self.dev.upgrade() {
            let me = Arc::as_ptr(&self.cm) as *const ();
            lock(&dev.pending)
                .retain(|_, p| !(p.port == self.port && Arc::as_ptr(&p.cm) as *const () == me));
        }
    }
}

impl Source for IwarpListener {
    fn run(&self) -> Run {
        self.progress();
        if let Some(dev) = self.dev.upgrade() {
            dev.progress_pending();
        }
        Run::default()
    }
}

impl Source for IwarpDevice {
    /// Pending connections: their Requests and deadlines.
    fn run(&self) -> Run {
        self.progress_pending();
        Run::default()
    }
}

impl Listener for IwarpListener {
    fn port(&self) -> u16 {
        self.port
    }

    fn reject(&self, request: u64, private_data: &[u8]) -> Result<(), DeviceError> {
        let dev = self.dev.upgrade().ok_or(DeviceError::NotFound)?;
        let mut p = lock(&dev.pending);
        let pend = p.get_mut(&request).ok_or(DeviceError::NotFound)?;
        let reply = pend.resp.reject(private_data).map_err(|e| {
            if e.is_invalid_parameter() {
                DeviceError::Invalid
            } else {
                DeviceError::State
            }
        })?;
        if let Some(pend) = p.remove(&request) {
            write_small(&pend.stream, &reply);
            let _ = pend.stream.shutdown(Shutdown::Write);
        }
        Ok(())
    }

    fn close(&self) {
        // Registrations go before the sockets they watch.
        drop(std::mem::take(&mut *lock(&self.regs)));
        drop(std::mem::take(&mut *lock(&self.socks)));
    }
}

// ─────────────────────────────── queue pair ───────────────────────────────

/// A connection event, owned until the handler is called (no lock held).
enum Ev {
    Established(Vec<u8>),
    Rejected(Vec<u8>),
    Unreachable,
    Refused,
    TimedOut,
    AcceptFailed,
    Disconnected,
    Broken,
}

enum Phase {
    Idle,
    /// Active side: TCP connect, then the MPA Reply.
    Connecting {
        stream: Sock,
        init: Box<Initiator>,
        tcp_up: bool,
        deadline: Instant,
    },
    /// Passive side: the Reply went out; waiting for the RTR.
    Accepting {
        stream: Sock,
        resp: Box<Responder>,
        deadline: Instant,
    },
    Up(Box<Up>),
    /// Gracefully closed: reading until the peer's end of stream.
    Draining {
        stream: Sock,
        deadline: Instant,
    },
    Closed,
}

/// A queue pair's socket: while it lives, data arriving on it wakes the
/// threads sleeping on its completion queues' wait descriptors.
struct Sock {
    stream: TcpStream,
    cqs: Vec<Arc<Cq>>,
    gen: u32,
    /// The progress thread watches the socket too: for input unless an
    /// application thread drives the queue pair, for output while bytes
    /// wait for socket space. (Set under the queue pair's lock.)
    reg: Option<Reg>,
    watch: std::cell::Cell<(bool, bool)>,
}

impl Sock {
    /// Watches `stream` on the queue pair's send and receive queues, with
    /// the queue pair's number as the token, and on the progress thread.
    fn new(stream: TcpStream, qp: &IwarpQp) -> Result<Sock, DeviceError> {
        let mut cqs = vec![qp.send_cq.clone()];
        if !Arc::ptr_eq(&qp.send_cq, &qp.recv_cq) {
            cqs.push(qp.recv_cq.clone());
        }
        let mut sock = Sock {
            stream,
            cqs: Vec::with_capacity(cqs.len()),
            reg: None,
            gen: qp.gen,
            watch: std::cell::Cell::new((true, true)),
        };
        for cq in cqs {
            cq.watch(sock.stream.as_fd(), u64::from(qp.num))?;
            // Pushed once watched: dropping `sock` (also on an error here)
            // unwatches exactly these.
            sock.cqs.push(cq);
        }
        let src: Weak<dyn Source> = qp.me.clone();
        tracing::trace!(
            qp = qp.num,
            fd = sock.stream.as_raw_fd(),
            "socket of the queue pair"
        );
        sock.reg =
            Some(progress::register(sock.stream.as_fd(), src).map_err(|_| DeviceError::Resources)?);
        Ok(sock)
    }

    /// What the progress thread watches the socket for (called with the
    /// queue pair's lock held).
    fn watch(&self, input: bool, output: bool) {
        if self.watch.replace((input, output)) != (input, output) {
            if let Some(r) = &self.reg {
                r.watch(input, output);
            }
        }
    }

    /// Has the progress thread run the queue pair at `at` (a deadline).
    fn wake_at(&self, at: Instant) {
        if let Some(r) = &self.reg {
            r.schedule(at);
        }
    }
}

impl std::ops::Deref for Sock {
    type Target = TcpStream;
    fn deref(&self) -> &TcpStream {
        &self.stream
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        self.reg = None;
        if progress::inherited(self.gen) {
            // A forked child: the CQs' epoll instances are the parent's.
            return;
        }
        for cq in &self.cqs {
            cq.unwatch(self.stream.as_fd());
        }
    }
}

/// An FPDU being written.
struct TxCur {
    head: [u8; 128],
    head_len: usize,
    segs: [RawSeg; MAX_SGE],
    nsegs: usize,
    payload: u64,
    trailer: [u8; 8],
    trailer_len: usize,
    /// Bytes of it written.
    sent: u64,
    token: TxToken,
}

impl Default for TxCur {
    fn default() -> TxCur {
        TxCur {
            head: [0; 128],
            head_len: 0,
            segs: [RawSeg::default(); MAX_SGE],
            nsegs: 0,
            payload: 0,
            trailer: [0; 8],
            trailer_len: 0,
            sent: 0,
            token: TxToken::NONE,
        }
    }
}

impl TxCur {
    fn total(&self) -> u64 {
        (self.head_len + self.trailer_len) as u64 + self.payload
    }

    /// Its bytes not yet written.
    fn plan(&self) -> Option<IoPlan<'_>> {
        let mut p = IoPlan::send(
            &self.head[..self.head_len],
            &self.segs[..self.nsegs],
            0,
            self.payload,
            &self.trailer[..self.trailer_len],
        )?;
        p.advance(self.sent as usize);
        Some(p)
    }
}

/// Largest peek at an FPDU boundary: messages up to 8 KiB (and the ack
/// reads and responses travelling with them) arrive whole in one. (With
/// 2 KiB, a 2–8 KiB Send ping-pong took 7.5–7.9 µs instead of 5.9–6.4:
/// two more system calls per message.) After a large payload the next
/// peek is [`PEEK_MIN`], so a stream of large FPDUs copies little twice.
const PEEK_MAX: usize = 8192 + 128;
/// Peek while a large transfer streams: just the next header.
const PEEK_MIN: usize = 128;
/// Bytes of the next FPDU read along with a payload: no FPDU header is
/// shorter (a tagged one is 2 + 14).
const LOOKAHEAD: usize = 16;
/// Receive sink for bytes already taken from a peek.
const SCRATCH: usize = 256;

/// Bytes one step receives before it lets the transmit side and the
/// caller have their turn.
const RX_BUDGET: usize = 256 * 1024;
/// Bytes one step sends before it lets the receive side and the caller
/// have their turn.
const TX_BUDGET: usize = 512 * 1024;

/// Most FPDUs planned ahead and written together.
const TX_BATCH: usize = 8;
/// FPDUs up to this size share `sendmsg` calls (and so TCP segments).
const TX_SMALL: u64 = 4096;
/// Bytes after which no more FPDUs are planned into a batch.
const TX_BATCH_BYTES: u64 = 256 * 1024;

/// FPDUs planned and being written, in order.
#[derive(Default)]
struct TxBatch {
    fpdus: [TxCur; TX_BATCH],
    /// Planned, and written completely.
    n: usize,
    done: usize,
}

impl TxBatch {
    fn busy(&self) -> bool {
        self.done < self.n
    }
}

/// Where the current segment's payload goes.
enum RxCur {
    None,
    Place {
        segs: [RawSeg; MAX_SGE],
        nsegs: usize,
        off: u64,
    },
    Inline {
        len: usize,
        off: usize,
    },
}

struct Up {
    stream: Sock,
    conn: Conn,
    crc: bool,
    txplan: TxPlan,
    tx: Box<TxBatch>,
    reader: FpduReader,
    rxplan: RxPlan,
    rx: RxCur,
    /// A Send that found no receive, to retry after a `post_recv`, and
    /// when its receiver-not-ready time runs out.
    not_ready: Option<(Segment, Instant)>,
    /// A graceful disconnect waits for the send queue to finish until then.
    closing: Option<Instant>,
    /// Bytes peeked from the socket at an FPDU boundary (batched receive).
    peek: [u8; PEEK_MAX],
    /// How much the next peek asks for.
    peek_len: usize,
    /// Where header, trailer and inline bytes already taken from a peek
    /// are received to (and dropped).
    scratch: [u8; SCRATCH],
    /// Completions of a batch, held until its payload has landed.
    rx_wcs: Vec<Wc>,
    /// Receives a payload's pad and CRC and the next FPDU's first bytes.
    tail: [u8; 3 + 4 + LOOKAHEAD],
    /// Responder without RTR: nothing may be sent before the initiator's
    /// first FPDU arrives.
    hold_tx: bool,
    /// The connection's TCP segment size (MSS): FPDUs planned together
    /// that fit in one are written together.
    segment: u64,
    /// Initiator: zero-length RDMA Writes to send while nothing has come
    /// back since the connection came up ([`Nudge`]).
    nudge: Option<Box<Nudge>>,
}

/// The Linux kernel's siw (6.1) as responder does not read what arrives
/// between its MPA Reply and the moment it starts to watch the socket for
/// the connection (its data-ready callback is not in place yet, and
/// nothing looks again): our RTR and first messages, written as soon as
/// the Reply arrives, can sit unread until more bytes come. So while
/// nothing at all has come back, the initiator sends a zero-length RDMA
/// Write (valid at any time, RFC 5040; nothing happens at the peer, and
/// any arrival makes siw read everything) at 10, 20, 40, ... ms, a few
/// times. A peer that answers anything stops it.
struct Nudge {
    at: Instant,
    gap: Duration,
    left: u8,
    /// The FPDU (the RTR's form, with CRC when negotiated).
    bytes: Vec<u8>,
}

const NUDGE_FIRST: Duration = Duration::from_millis(10);
const NUDGES: u8 = 6;

struct Inner {
    phase: Phase,
    /// Receives posted before the connection is up.
    /// (Allocated with the queue pair: posting allocates nothing.)
    pre_recv: RecvRing,
}

/// A queue pair of an [`IwarpDevice`].
pub struct IwarpQp {
    num: QpNum,
    /// The device's fork generation.
    gen: u32,
    me: Weak<IwarpQp>,
    dev: Weak<IwarpDevice>,
    cfg: QpConfig,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    /// A completion was lost to a full CQ: the connection must break.
    overrun: AtomicBool,
    /// Bytes wait for socket space (or a TCP connect for completion): the
    /// progress thread must watch for writability.
    tx_blocked: AtomicBool,
    /// A Send waits for a receive (receiver not ready).
    rnr_waiting: AtomicBool,
    /// The progress thread found something to do while another thread
    /// held the lock: that thread runs the engine when it lets go.
    kick: AtomicBool,
    /// A step left acknowledgements for the spinning application's next
    /// post or step (written under the lock).
    acks_left: AtomicBool,
    /// The last step stopped receiving at its budget: more is waiting.
    rx_more: AtomicBool,
    /// The last transmit stopped at its budget: more is ready to go.
    tx_more: AtomicBool,
    /// The shared receive queue the connection takes receives from.
    srq: Option<Arc<IwarpSrq>>,
    inner: Mutex<Inner>,
}

/// A queue pair's lock held by an application thread (or a test): when it
/// is let go, the engine runs for what the progress thread handed over
/// meanwhile ([`IwarpQp::after_unlock`]).
struct QpGuard<'a> {
    qp: &'a IwarpQp,
    inner: Option<MutexGuard<'a, Inner>>,
    /// Runs `after_unlock` on drop (unset by `into_raw`).
    check: bool,
    /// Only looked ([`IwarpQp::look`]): on drop, a run handed over
    /// meanwhile goes back to the progress thread.
    look: bool,
}

impl<'a> QpGuard<'a> {
    /// The plain lock: the caller lets go and calls `after_unlock` itself.
    fn into_raw(mut self) -> MutexGuard<'a, Inner> {
        self.check = false;
        self.look = false;
        self.inner
            .take()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl std::ops::Deref for QpGuard<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        self.inner
            .as_deref()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl std::ops::DerefMut for QpGuard<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        self.inner
            .as_deref_mut()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl Drop for QpGuard<'_> {
    fn drop(&mut self) {
        drop(self.inner.take());
        if self.check {
            self.qp.after_unlock();
        } else if self.look {
            self.qp.hand_back();
        }
    }
}

/// How the engine ended up after a pump.
enum Outcome {
    Ok,
    /// The peer closed the connection, in order or abruptly.
    PeerClosed,
    /// This side detected a failure.
    Broken,
    /// The engine queued a Terminate (receiver not ready): send it, then
    /// close.
    Terminated,
}

impl IwarpQp {
    fn cm_event(&self, ev: Ev) {
        let q = Some(self.num);
        let cm = &self.cfg.cm;
        tracing::debug!(
            qp = self.num,
            event = match &ev {
                Ev::Established(_) => "established",
                Ev::Rejected(_) => "rejected",
                Ev::Unreachable => "unreachable",
                Ev::Refused => "refused",
                Ev::TimedOut => "timed out",
                Ev::AcceptFailed => "accept failed",
                Ev::Disconnected => "disconnected",
                Ev::Broken => "broken",
            },
            "connection event"
        );
        match &ev {
            Ev::Established(pd) => cm.event(q, CmEvent::Established { private_data: pd }),
            Ev::Rejected(pd) => cm.event(q, CmEvent::Rejected { private_data: pd }),
            Ev::Unreachable => cm.event(q, CmEvent::Unreachable),
            Ev::Refused => cm.event(q, CmEvent::Refused),
            Ev::TimedOut => cm.event(q, CmEvent::TimedOut),
            Ev::AcceptFailed => cm.event(q, CmEvent::AcceptFailed),
            Ev::Disconnected => cm.event(q, CmEvent::Disconnected),
            Ev::Broken => cm.event(q, CmEvent::Broken),
        }
    }

    fn sink(&self) -> impl FnMut(Wc) + '_ {
        move |wc: Wc| {
            let cq = if wc.op == WcOp::Recv {
                &self.recv_cq
            } else {
                &self.send_cq
            };
            if !cq.push(wc) {
                self.cq_overrun(&wc);
            }
        }
    }

    /// A completion did not fit its CQ: lost. Like verbs' fatal CQ error,
    /// the queue pair breaks (at its next step).
    fn cq_overrun(&self, wc: &Wc) {
        if !self.overrun.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                qp = self.num,
                wr_id = wc.wr_id,
                op = ?wc.op,
                status = ?wc.status,
                "completion queue overrun: completion lost, queue pair broken"
            );
        }
    }

    fn flush_pre_recv(&self, inner: &mut Inner) {
        let mut sink = self.sink();
        while let Some(e) = inner.pre_recv.pop() {
            sink(Wc {
                wr_id: e.wr_id(),
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.num,
                solicited: false,
            });
        }
    }

    /// Setup finished: build the engine, replay early receives.
    fn go_up(
        &self,
        inner: &mut Inner,
        stream: Sock,
        est: super::setup::Established,
        initiator: bool,
    ) -> Option<Ev> {
        if !est.tx.is_empty() && !write_small(&stream, &est.tx) {
            inner.phase = Phase::Closed;
            self.flush_pre_recv(inner);
            return Some(Ev::Broken);
        }
        let Some(dev) = self.dev.upgrade() else {
            inner.phase = Phase::Closed;
            return None;
        };
        self.overrun.store(false, Ordering::Release);
        let mut negotiated = est.negotiated;
        let mss = tcp_mss(&stream);
        if dev.opts.fpdu_mss {
            if let Some(mss) = mss {
                negotiated.max_fpdu = negotiated.max_fpdu.min(mss);
            }
        }
        // (Ethernet's when the kernel does not say.)
        let segment = mss.unwrap_or(1448) as u64;
        let crc = negotiated.crc;
        let hold_tx = est.hold_tx_until_first_rx;
        let conn = Conn::new(
            ConnConfig {
                send_depth: self.cfg.send_depth,
                recv_depth: self.cfg.recv_depth,
                max_sge: self.cfg.max_send_sge.max(self.cfg.max_recv_sge),
                ord: self.cfg.ord,
                ird: self.cfg.ird,
                qp: self.num,
                pd: self.cfg.pd.0,
            },
            negotiated,
        );
        let Ok(mut conn) = conn else {
            tracing::warn!(qp = self.num, "no memory for the queues: connection broken");
            inner.phase = Phase::Closed;
            self.flush_pre_recv(inner);
            return Some(Ev::Broken);
        };
        if let Some(srq) = &self.srq {
            let shared: Arc<dyn SharedRecv> = srq.clone();
            conn.set_srq(shared);
        }
        if let Some(msn) = est.read_rtr_msn {
            conn.read_rtr_taken(msn);
        }
        let mut sink = self.sink();
        while let Some(e) = inner.pre_recv.pop() {
            // Checked again: the registration may have gone meanwhile.
            if conn.post_recv(&e.as_wr(), &dev.keys).is_err() {
                sink(Wc {
                    wr_id: e.wr_id(),
                    status: WcStatus::LocalProtection,
                    op: WcOp::Recv,
                    byte_len: 0,
                    qp: self.num,
                    solicited: false,
                });
            }
        }
        inner.phase = Phase::Up(Box::new(Up {
            stream,
            conn,
            crc,
            txplan: TxPlan::new(),
            tx: Box::default(),
            reader: FpduReader::new(crc),
            rxplan: RxPlan::new(),
            rx: RxCur::None,
            not_ready: None,
            closing: None,
            peek: [0; PEEK_MAX],
            peek_len: PEEK_MAX,
            scratch: [0; SCRATCH],
            tail: [0; 3 + 4 + LOOKAHEAD],
            rx_wcs: Vec::with_capacity((self.cfg.send_depth + self.cfg.recv_depth) as usize + 16),
            hold_tx,
            segment,
            nudge: initiator
                .then(|| super::setup::rtr_write(crc).ok())
                .flatten()
                .map(|bytes| {
                    Box::new(Nudge {
                        at: Instant::now() + NUDGE_FIRST,
                        gap: NUDGE_FIRST,
                        left: NUDGES,
                        bytes,
                    })
                }),
        }));
        Some(Ev::Established(est.private_data))
    }

    /// Sends a [`Nudge`] (at an FPDU boundary of the stream) and sets the
    /// next one.
    fn nudge(up: &mut Up) {
        let Some(n) = up.nudge.as_mut() else {
            return;
        };
        if !up.tx.busy() && write_small(&up.stream, &n.bytes) {
            tracing::debug!("nothing back from the peer yet: zero-length RDMA Write sent");
            n.left -= 1;
        }
        n.gap *= 2;
        n.at = Instant::now() + n.gap;
        if n.left == 0 {
            up.nudge = None;
        }
    }

    /// Plans the engine's next FPDU into `cur`. False: nothing to send.
    fn plan_fpdu(up: &mut Up, cur: &mut TxCur) -> Result<bool, ()> {
        if !up.conn.next_tx(&mut up.txplan) {
            return Ok(false);
        }
        let h = up.txplan.head();
        let i = up.txplan.inline();
        cur.head[..h.len()].copy_from_slice(h);
        cur.head[h.len()..h.len() + i.len()].copy_from_slice(i);
        cur.head_len = h.len() + i.len();
        cur.payload = 0;
        for (k, p) in up.txplan.pieces().iter().enumerate() {
            cur.segs[k] = RawSeg {
                addr: p.addr,
                len: p.len,
            };
            cur.payload += p.len;
        }
        cur.nsegs = up.txplan.pieces().len();
        if up.crc {
            let plan = &mut up.txplan;
            let mut bad = false;
            memio::digest_segs(&cur.segs[..cur.nsegs], 0, cur.payload, |b| {
                bad |= plan.payload(b).is_err();
            })
            .map_err(|_| ())?;
            if bad {
                return Err(());
            }
        } else if cur.payload > 0 {
            up.txplan
                .payload_crc(cur.payload as usize, 0)
                .map_err(|_| ())?;
        }
        let t = up.txplan.trailer().map_err(|_| ())?;
        cur.trailer[..t.len()].copy_from_slice(t);
        cur.trailer_len = t.len();
        cur.sent = 0;
        cur.token = up.conn.tx_token();
        Ok(true)
    }

    /// Writes FPDUs until the engine has none or the socket is full. The
    /// FPDUs ready at once (a Send, the ack read behind it, the response
    /// to the peer's ack read) leave in one `sendmsg`, so in one segment.
    fn pump_tx(&self, up: &mut Up) -> Result<bool, Outcome> {
        if up.hold_tx {
            return Ok(false);
        }
        // Acknowledgements left by a step go now (or wait for socket space).
        self.acks_left.store(false, Ordering::Relaxed);
        let mut any = false;
        let mut sink = self.sink();
        // A bounded amount per call, like the receive side: a long stream
        // does not keep the caller (or the acknowledgements it should
        // read) waiting; the rest goes at the next step.
        let mut budget = TX_BUDGET;
        self.tx_more.store(false, Ordering::Relaxed);
        loop {
            if up.tx.done == up.tx.n {
                if budget == 0 {
                    self.tx_more.store(true, Ordering::Relaxed);
                    return Ok(any);
                }
                up.tx.done = 0;
                up.tx.n = 0;
                let mut bytes = 0u64;
                while up.tx.n < TX_BATCH && bytes < TX_BATCH_BYTES {
                    let mut cur = std::mem::take(&mut up.tx.fpdus[up.tx.n]);
                    let planned = Self::plan_fpdu(up, &mut cur);
                    let total = cur.total();
                    up.tx.fpdus[up.tx.n] = cur;
                    if !planned.map_err(|()| Outcome::Broken)? {
                        break;
                    }
                    bytes += total;
                    up.tx.n += 1;
                }
                if up.tx.n == 0 {
                    return Ok(any);
                }
            }
            let r = {
                let b = &up.tx;
                // What fits in one TCP segment leaves in one call (a
                // ping-pong's read response, Send and ack read wake the
                // peer once, not three times); beyond that, small FPDUs
                // leave together, and a large one starts a call, and so a
                // TCP segment, of its own (RFC 5044's alignment, which
                // dissectors rely on to find FPDUs spanning segments);
                // small ones behind it join it (a message's last piece and
                // its ack read: 64 KiB ping-pong 21.6 -> 17.4 µs).
                let first = &b.fpdus[b.done];
                let all = (b.done..b.n).map(|i| b.fpdus[i].total()).sum::<u64>() - first.sent;
                let mut end = b.n;
                if all > up.segment {
                    end = b.done + 1;
                    let mut bytes = if first.total() <= TX_SMALL {
                        first.total() - first.sent
                    } else {
                        0
                    };
                    while end < b.n && bytes + b.fpdus[end].total() <= TX_SMALL {
                        bytes += b.fpdus[end].total();
                        end += 1;
                    }
                }
                let plans: [Option<IoPlan<'_>>; TX_BATCH] = std::array::from_fn(|k| {
                    let i = b.done + k;
                    (i < end).then(|| b.fpdus[i].plan()).flatten()
                });
                let mut list = [const { None::<IoPlan<'_>> }; TX_BATCH];
                let mut count = 0;
                for p in plans.into_iter().flatten() {
                    list[count] = Some(p);
                    count += 1;
                }
                if count != end - b.done {
                    return Err(Outcome::Broken);
                }
                memio::send_plans_opt(up.stream.as_fd(), &list[..count], libc::MSG_DONTWAIT)
            };
            match r {
                Ok(n) => {
                    any |= n > 0;
                    budget = budget.saturating_sub(n);
                    let mut left = n as u64;
                    while left > 0 && up.tx.done < up.tx.n {
                        let cur = &mut up.tx.fpdus[up.tx.done];
                        let take = left.min(cur.total() - cur.sent);
                        cur.sent += take;
                        left -= take;
                        if cur.sent == cur.total() {
                            let t = cur.token;
                            up.tx.done += 1;
                            up.conn.tx_written(t, &mut sink);
                        }
                    }
                    if left == 0 && up.tx.done < up.tx.n && up.tx.fpdus[up.tx.done].sent > 0 {
                        // The socket took part of an FPDU: it is full.
                        return Ok(any);
                    }
                }
                Err(IoError::WouldBlock) => return Ok(any),
                Err(IoError::Closed) => return Err(Outcome::PeerClosed),
                Err(_) => return Err(Outcome::Broken),
            }
        }
    }

    /// Reads and places FPDUs until the socket is empty. `thorough`: until
    /// a read says so (the caller answers for an edge the progress thread
    /// took: nothing will say again that data is there); otherwise a short
    /// peek that was taken whole ends it (one system call less for an
    /// application's poll, which looks again anyway).
    fn pump_rx(&self, up: &mut Up, thorough: bool) -> (bool, Outcome) {
        let Some(dev) = self.dev.upgrade() else {
            return (false, Outcome::Broken);
        };
        let keys = &dev.keys;
        let mut sink = self.sink();
        let mut any = false;
        if let Some((seg, until)) = up.not_ready {
            match self.take_segment(up, &seg, keys, &mut sink) {
                Ok(true) => {
                    up.not_ready = None;
                    self.rnr_waiting.store(false, Ordering::Release);
                    any = true;
                }
                Ok(false) if Instant::now() >= until => {
                    up.not_ready = None;
                    self.rnr_waiting.store(false, Ordering::Release);
                    let _ = up.conn.rnr_expired(&mut sink);
                    return (true, Outcome::Terminated);
                }
                Ok(false) => return (false, Outcome::Ok),
                Err(()) => return (true, Outcome::Broken),
            }
        }
        // A bounded amount per step: the responses the receive side queues
        // (acknowledgements above all) go out between slices of a long
        // stream, and a poll returns.
        let mut budget = RX_BUDGET;
        self.rx_more.store(false, Ordering::Relaxed);
        loop {
            if budget == 0 {
                self.rx_more.store(true, Ordering::Relaxed);
                return (true, Outcome::Ok);
            }
            if up.reader.at_boundary() && up.rx_wcs.is_empty() {
                match self.rx_batch(up, keys, &dev) {
                    Batch::More => {
                        any = true;
                        budget = budget.saturating_sub(PEEK_MAX);
                        continue;
                    }
                    Batch::Empty => return (any, Outcome::Ok),
                    Batch::Drained if thorough => {
                        any = true;
                        continue;
                    }
                    Batch::Drained => return (true, Outcome::Ok),
                    Batch::End(o) => return (true, o),
                }
            }
            match up.reader.need() {
                RxNeed::Header(_) | RxNeed::Trailer(_) => {
                    let r = (&*up.stream).read(up.reader.spare());
                    let n = match r {
                        // The peer closed, even inside an FPDU (its
                        // process ended mid-write): rulings, teardown events.
                        Ok(0) => return (true, Outcome::PeerClosed),
                        Ok(n) => n,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => return (any, Outcome::Ok),
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => return (true, outcome_of_errno(e.raw_os_error())),
                    };
                    any = true;
                    up.hold_tx = false;
                    up.nudge = None;
                    let r = up.reader.commit(n);
                    if let Some(o) = self.on_commit(up, r, keys, &dev, &mut sink) {
                        return (true, o);
                    }
                }
                RxNeed::Payload(left) => {
                    // Bytes received past the payload (into `up.tail`).
                    let mut extra = 0usize;
                    let r = match &mut up.rx {
                        RxCur::Place { segs, nsegs, off } => {
                            // The payload, its pad and CRC, and the first
                            // bytes of the next FPDU, in one call.
                            let tl = up.reader.trailer_len();
                            let plan = IoPlan::recv(
                                &mut [],
                                &segs[..*nsegs],
                                *off,
                                left as u64,
                                &mut up.tail[..tl + LOOKAHEAD],
                            );
                            let Some(plan) = plan else {
                                return (true, Outcome::Broken);
                            };
                            match memio::recv_plan(up.stream.as_fd(), &plan, libc::MSG_DONTWAIT) {
                                Ok(got) => {
                                    let n = got.min(left);
                                    extra = got - n;
                                    let start = *off;
                                    *off += n as u64;
                                    if up.crc {
                                        let reader = &mut up.reader;
                                        let mut bad = false;
                                        if memio::digest_segs(
                                            &segs[..*nsegs],
                                            start,
                                            n as u64,
                                            |b| bad |= reader.placed(b).is_err(),
                                        )
                                        .is_err()
                                            || bad
                                        {
                                            return (true, Outcome::Broken);
                                        }
                                        Ok(n)
                                    } else {
                                        up.reader
                                            .placed_crc(n, 0)
                                            .map(|_| n)
                                            .map_err(|_| IoError::Other(libc::EPROTO))
                                    }
                                }
                                Err(e) => Err(e),
                            }
                        }
                        RxCur::Inline { len, off } => {
                            let buf = &mut up.conn.rx_inline()[*off..*len];
                            match (&*up.stream).read(buf) {
                                Ok(0) => Err(IoError::Closed),
                                Ok(n) => {
                                    let s = *off;
                                    *off += n;
                                    let bytes = &up.conn.rx_inline()[s..s + n];
                                    up.reader
                                        .placed(bytes)
                                        .map(|_| n)
                                        .map_err(|_| IoError::Other(libc::EPROTO))
                                }
                                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                    Err(IoError::WouldBlock)
                                }
                                Err(_) => Err(IoError::Closed),
                            }
                        }
                        RxCur::None => return (true, Outcome::Broken),
                    };
                    if extra > 0 {
                        // Trailer and next header bytes: through the reader.
                        let mut at = 0;
                        while at < extra {
                            let tail = up.tail;
                            let spare = up.reader.spare();
                            let take = spare.len().min(extra - at);
                            if take == 0 {
                                return (true, Outcome::Broken);
                            }
                            spare[..take].copy_from_slice(&tail[at..at + take]);
                            at += take;
                            let c = up.reader.commit(take);
                            if let Some(o) = self.on_commit(up, c, keys, &dev, &mut sink) {
                                return (true, o);
                            }
                        }
                    }
                    match r {
                        Ok(n) => {
                            any = true;
                            budget = budget.saturating_sub(n.max(1));
                        }
                        Err(IoError::WouldBlock) => return (any, Outcome::Ok),
                        Err(IoError::Closed) => return (true, Outcome::PeerClosed),
                        Err(_) => {
                            up.conn.flush(&mut sink);
                            return (true, Outcome::Broken);
                        }
                    }
                }
            }
        }
    }

    /// At an FPDU boundary: peeks what has arrived, runs the engine over
    /// the whole FPDUs (and the start of a partial one) in it, and takes
    /// exactly those bytes off the socket with one `recvmsg` whose iovecs
    /// put payload straight into the application's buffers and the rest
    /// into a scratch area. Two system calls however many FPDUs arrived
    /// together. Completions are held until the `recvmsg` has placed the
    /// payload they report.
    fn rx_batch(&self, up: &mut Up, keys: &KeyTable, dev: &IwarpDevice) -> Batch {
        let want = up.peek_len.min(PEEK_MAX);
        // SAFETY: `peek` is our own buffer of at least `want` bytes.
        let n = unsafe {
            libc::recv(
                up.stream.as_raw_fd(),
                up.peek.as_mut_ptr().cast(),
                want,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        let n = match n {
            0 => return Batch::End(Outcome::PeerClosed),
            n if n > 0 => n as usize,
            _ => {
                return match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Batch::Empty,
                    errno => Batch::End(outcome_of_errno(errno)),
                }
            }
        };
        up.hold_tx = false;
        up.nudge = None;
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; memio::IOV_CHUNK];
        let mut niov = 0usize;
        // Whether the last iovec is a scratch one (to extend).
        let mut last_scratch = false;
        let scratch = up.scratch.as_mut_ptr();
        let discard = |iov: &mut [libc::iovec], niov: &mut usize, last: &mut bool, len: usize| {
            if len == 0 {
                return;
            }
            if *last && iov[*niov - 1].iov_len + len <= SCRATCH {
                iov[*niov - 1].iov_len += len;
            } else {
                iov[*niov] = libc::iovec {
                    iov_base: scratch.cast(),
                    iov_len: len,
                };
                *niov += 1;
                *last = true;
            }
        };
        let mut pos = 0usize;
        let mut end: Option<Outcome> = None;
        // Taken out while the engine runs (and put back, capacity kept).
        let mut wcs = std::mem::take(&mut up.rx_wcs);
        let mut hold = |wc: Wc| wcs.push(wc);
        while pos < n && end.is_none() && niov + MAX_SGE + 2 < memio::IOV_CHUNK {
            match up.reader.need() {
                RxNeed::Header(_) | RxNeed::Trailer(_) => {
                    let spare = up.reader.spare();
                    let take = spare.len().min(n - pos);
                    spare[..take].copy_from_slice(&up.peek[pos..pos + take]);
                    discard(&mut iov, &mut niov, &mut last_scratch, take);
                    pos += take;
                    match up.reader.commit(take) {
                        Ok(None) => {}
                        Ok(Some(RxEvent::Segment(seg))) => {
                            match Self::take_segment_in(up, &seg, keys, &mut hold) {
                                Ok(true) => {}
                                Ok(false) => {
                                    let until = Instant::now() + dev.rnr_timeout();
                                    up.stream.wake_at(until);
                                    up.not_ready = Some((seg, until));
                                    self.rnr_waiting.store(true, Ordering::Release);
                                    end = Some(Outcome::Ok);
                                }
                                Err(()) => end = Some(Outcome::Broken),
                            }
                        }
                        Ok(Some(RxEvent::Done)) => {
                            up.rx = RxCur::None;
                            if let Err(f) = up.conn.rx_done(&mut hold) {
                                end = Some(fault_outcome(f));
                            }
                        }
                        Err(e) => {
                            match e.term() {
                                Some(t) => _ = up.conn.refuse(t, up.reader.segment(), &mut hold),
                                None => up.conn.flush(&mut hold),
                            }
                            end = Some(Outcome::Broken);
                        }
                    }
                }
                RxNeed::Payload(left) => {
                    let mut take = left.min(n - pos);
                    let placed = match &mut up.rx {
                        RxCur::Place { segs, nsegs, off } => {
                            let Some(plan) =
                                IoPlan::recv(&mut [], &segs[..*nsegs], *off, take as u64, &mut [])
                            else {
                                end = Some(Outcome::Broken);
                                break;
                            };
                            let (c, b) = plan.fill(&mut iov[niov..]);
                            niov += c;
                            last_scratch = false;
                            take = b;
                            *off += b as u64;
                            if up.crc {
                                up.reader.placed(&up.peek[pos..pos + take])
                            } else {
                                up.reader.placed_crc(take, 0)
                            }
                        }
                        RxCur::Inline { len, off } => {
                            take = take.min(*len - *off);
                            let o = *off;
                            up.conn.rx_inline()[o..o + take]
                                .copy_from_slice(&up.peek[pos..pos + take]);
                            *off += take;
                            discard(&mut iov, &mut niov, &mut last_scratch, take);
                            up.reader.placed(&up.peek[pos..pos + take])
                        }
                        RxCur::None => {
                            end = Some(Outcome::Broken);
                            break;
                        }
                    };
                    pos += take;
                    if placed.is_err() {
                        up.conn.flush(&mut hold);
                        end = Some(Outcome::Broken);
                    }
                    if take == 0 {
                        break;
                    }
                }
            }
        }
        // Take exactly the bytes the engine consumed.
        if pos > 0 {
            let mut msg: libc::msghdr = unsafe_zeroed_msghdr();
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = niov as _;
            // SAFETY: the iovecs name our scratch buffer (written and
            // ignored) and application memory the engine checked against
            // the key table; the kernel writes through them and reports an
            // unwritable one as EFAULT. The bytes are there (peeked).
            let got = unsafe { libc::recvmsg(up.stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if got < 0 || got as usize != pos {
                let mut sink = self.sink();
                for wc in wcs.drain(..) {
                    sink(wc);
                }
                up.rx_wcs = wcs;
                up.conn.flush(&mut sink);
                return Batch::End(Outcome::Broken);
            }
        }
        // The next peek: small while a large payload streams in.
        up.peek_len = match up.reader.need() {
            RxNeed::Payload(left) if left > PEEK_MAX => PEEK_MIN,
            _ => PEEK_MAX,
        };
        let mut sink = self.sink();
        for wc in wcs.drain(..) {
            sink(wc);
        }
        up.rx_wcs = wcs;
        match end {
            Some(o @ Outcome::Ok) if up.not_ready.is_some() => Batch::End(o),
            Some(o) => Batch::End(o),
            // The peek got less than it asked for and all of it was taken:
            // the socket was empty a moment ago, and another peek now would
            // almost always say so at the cost of a system call on the
            // latency path (bytes arriving since are the next poll's, or
            // wake the progress thread; a step that answers for such an
            // edge reads on: see `pump_rx`).
            None if n < want && pos == n => Batch::Drained,
            None => Batch::More,
        }
    }

    /// Acts on what the reader made of committed header or trailer bytes;
    /// `Some`: the receive pump stops with that outcome.
    fn on_commit(
        &self,
        up: &mut Up,
        r: Result<Option<RxEvent>, super::wire::FpduError>,
        keys: &KeyTable,
        dev: &IwarpDevice,
        sink: &mut impl FnMut(Wc),
    ) -> Option<Outcome> {
        match r {
            Ok(None) => None,
            Ok(Some(RxEvent::Segment(seg))) => match self.take_segment(up, &seg, keys, sink) {
                Ok(true) => None,
                Ok(false) => {
                    let until = Instant::now() + dev.rnr_timeout();
                    up.stream.wake_at(until);
                    up.not_ready = Some((seg, until));
                    self.rnr_waiting.store(true, Ordering::Release);
                    Some(Outcome::Ok)
                }
                Err(()) => Some(Outcome::Broken),
            },
            Ok(Some(RxEvent::Done)) => {
                up.rx = RxCur::None;
                up.conn.rx_done(sink).err().map(fault_outcome)
            }
            Err(e) => {
                match e.term() {
                    Some(t) => _ = up.conn.refuse(t, up.reader.segment(), sink),
                    None => up.conn.flush(sink),
                }
                Some(Outcome::Broken)
            }
        }
    }

    /// Hands a segment header to the engine. False: no receive (retry).
    fn take_segment(
        &self,
        up: &mut Up,
        seg: &Segment,
        keys: &KeyTable,
        sink: &mut impl FnMut(Wc),
    ) -> Result<bool, ()> {
        Self::take_segment_in(up, seg, keys, sink)
    }

    fn take_segment_in(
        up: &mut Up,
        seg: &Segment,
        keys: &KeyTable,
        sink: &mut impl FnMut(Wc),
    ) -> Result<bool, ()> {
        match up.conn.rx_header(seg, keys, &mut up.rxplan, sink) {
            Ok(RxAction::Place) => {
                let mut segs = [RawSeg::default(); MAX_SGE];
                let ps = up.rxplan.pieces();
                for (k, p) in ps.iter().enumerate() {
                    segs[k] = RawSeg {
                        addr: p.addr,
                        len: p.len,
                    };
                }
                up.rx = RxCur::Place {
                    segs,
                    nsegs: ps.len(),
                    off: 0,
                };
                Ok(true)
            }
            Ok(RxAction::Inline(len)) => {
                up.rx = RxCur::Inline { len, off: 0 };
                Ok(true)
            }
            Ok(RxAction::NotReady) => Ok(false),
            Err(_) => Err(()),
        }
    }

    /// Runs the connection once: writes what is queued, reads and places
    /// what arrived, and writes what that produced (responses and
    /// acknowledgements go at once, as a NIC's would); returns whether
    /// anything happened and the event to report. `thorough`: see
    /// [`IwarpQp::pump_rx`].
    fn step(&self, inner: &mut Inner, thorough: bool, defer_acks: bool) -> (bool, Option<Ev>) {
        // Read only where a deadline matters (not on every poll).
        let now = Instant::now;
        match std::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Idle => {
                inner.phase = Phase::Idle;
                (false, None)
            }
            Phase::Closed => (false, None),
            Phase::Connecting {
                stream,
                mut init,
                mut tcp_up,
                deadline,
            } => {
                if !tcp_up {
                    match connect_done(&stream) {
                        None => {}
                        Some(Ok(())) => {
                            let _ = stream.set_nodelay(true);
                            if let Some(dev) = self.dev.upgrade() {
                                let _ = tune_socket(&stream, &dev.opts);
                            }
                            if !write_small(&stream, init.request()) {
                                self.flush_pre_recv(inner);
                                return (true, Some(Ev::Broken));
                            }
                            tcp_up = true;
                        }
                        Some(Err(e)) => {
                            self.flush_pre_recv(inner);
                            let ev = match e.raw_os_error() {
                                Some(libc::ETIMEDOUT) => Ev::TimedOut,
                                Some(libc::ECONNREFUSED) => Ev::Refused,
                                _ => Ev::Unreachable,
                            };
                            return (true, Some(ev));
                        }
                    }
                }
                if tcp_up {
                    match peek_feed(&stream, |b| init.feed(b)) {
                        Fed::Event(InitiatorEvent::Established(est)) => {
                            let ev = self.go_up(inner, stream, est, true);
                            return (true, ev);
                        }
                        Fed::Event(InitiatorEvent::Rejected { private_data }) => {
                            self.flush_pre_recv(inner);
                            return (true, Some(Ev::Rejected(private_data)));
                        }
                        Fed::Failed => {
                            self.flush_pre_recv(inner);
                            return (true, Some(Ev::Broken));
                        }
                        Fed::Nothing | Fed::Progress => {}
                    }
                }
                if now() >= deadline {
                    self.flush_pre_recv(inner);
                    return (true, Some(Ev::TimedOut));
                }
                inner.phase = Phase::Connecting {
                    stream,
                    init,
                    tcp_up,
                    deadline,
                };
                (false, None)
            }
            Phase::Accepting {
                stream,
                mut resp,
                deadline,
            } => match peek_feed(&stream, |b| resp.feed(b)) {
                Fed::Event(ResponderEvent::Established(est)) => {
                    let ev = self.go_up(inner, stream, est, false);
                    (true, ev)
                }
                Fed::Event(_) | Fed::Failed => {
                    self.flush_pre_recv(inner);
                    (true, Some(Ev::AcceptFailed))
                }
                Fed::Nothing | Fed::Progress if now() >= deadline => {
                    self.flush_pre_recv(inner);
                    (true, Some(Ev::AcceptFailed))
                }
                Fed::Nothing | Fed::Progress => {
                    inner.phase = Phase::Accepting {
                        stream,
                        resp,
                        deadline,
                    };
                    (false, None)
                }
            },
            Phase::Draining { stream, deadline } => {
                let mut buf = [0u8; 4096];
                loop {
                    match (&*stream).read(&mut buf) {
                        Ok(0) => return (true, None),
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock && now() < deadline => {
                            inner.phase = Phase::Draining { stream, deadline };
                            return (false, None);
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => return (true, None),
                    }
                }
            }
            Phase::Up(mut up) => {
                let mut any = false;
                let mut out = Outcome::Ok;
                if up.nudge.as_ref().is_some_and(|n| now() >= n.at) {
                    Self::nudge(&mut up);
                }
                match self.pump_tx(&mut up) {
                    Ok(a) => any |= a,
                    Err(o) => out = o,
                }
                if matches!(out, Outcome::Ok) {
                    let (a, o) = self.pump_rx(&mut up, thorough);
                    any |= a;
                    out = o;
                    // Responses, acknowledgements and Terminates the
                    // receive side queued. An application spinning on the
                    // queues, whose step just placed a message, will most
                    // likely answer it: its post carries the
                    // acknowledgements (a ping-pong wakes the peer once per
                    // message, not twice); its next step sends them if not.
                    // (Whether the queue is still spun on is read now: the
                    // check that ends driving sends what was left before.)
                    let wait = defer_acks
                        && a
                        && matches!(out, Outcome::Ok)
                        && up.closing.is_none()
                        && up.conn.only_acks_due()
                        && self.spun();
                    self.acks_left.store(wait, Ordering::Relaxed);

                    if !wait {
                        match self.pump_tx(&mut up) {
                            Ok(a) => any |= a,
                            Err(o) => match out {
                                Outcome::Ok => out = o,
                                Outcome::Terminated => out = Outcome::Broken,
                                _ => {}
                            },
                        }
                    }
                }
                if matches!(out, Outcome::Ok)
                    && (up.conn.state() == ConnState::Broken
                        || self.overrun.load(Ordering::Acquire))
                {
                    out = Outcome::Broken;
                }
                let mut sink = self.sink();
                match out {
                    Outcome::Ok if up.closing.is_some() => {
                        let done = up.conn.send_outstanding() == 0;
                        if done || up.closing.is_some_and(|t| now() >= t) {
                            up.conn.flush(&mut sink);
                            let _ = up.stream.shutdown(Shutdown::Write);
                            up.stream.wake_at(now() + DRAIN_TIMEOUT);
                            inner.phase = Phase::Draining {
                                stream: up.stream,
                                deadline: now() + DRAIN_TIMEOUT,
                            };
                            (true, Some(Ev::Disconnected))
                        } else {
                            up.conn.request_ack();
                            inner.phase = Phase::Up(up);
                            (any, None)
                        }
                    }
                    Outcome::Ok => {
                        inner.phase = Phase::Up(up);
                        (any, None)
                    }
                    Outcome::PeerClosed => {
                        up.conn.flush(&mut sink);
                        (true, Some(Ev::Disconnected))
                    }
                    Outcome::Broken => {
                        up.conn.flush(&mut sink);
                        set_linger_zero(&up.stream);
                        (true, Some(Ev::Broken))
                    }
                    Outcome::Terminated => {
                        up.conn.flush(&mut sink);
                        if !up.tx.busy() {
                            // The Terminate is out: close gracefully so the
                            // peer reads it before the end of stream.
                            let _ = up.stream.shutdown(Shutdown::Write);
                            up.stream.wake_at(now() + DRAIN_TIMEOUT);
                            inner.phase = Phase::Draining {
                                stream: up.stream,
                                deadline: now() + DRAIN_TIMEOUT,
                            };
                        } else {
                            set_linger_zero(&up.stream);
                        }
                        (true, Some(Ev::Broken))
                    }
                }
            }
        }
    }

    /// Steps the engine with the lock held, lets go, reports the event;
    /// then runs what the progress thread handed over meanwhile.
    /// `thorough`: see [`IwarpQp::pump_rx`].
    fn run(&self, g: QpGuard<'_>, thorough: bool) -> bool {
        let any = self.run_step(g.into_raw(), thorough, false);
        self.after_unlock();
        any
    }

    /// [`IwarpQp::run`] without taking over what was handed over.
    /// `defer_acks`: an application thread spinning on the queues steps.
    fn run_step(&self, inner: MutexGuard<'_, Inner>, thorough: bool, defer_acks: bool) -> bool {
        let mut inner = inner;
        let (any, ev) = self.step(&mut inner, thorough, defer_acks);
        self.note_tx(&inner);
        self.watch(&inner);
        // A deadline of the phase (connect, accept, drain, close, receiver
        // not ready) stays scheduled: a timer that fired is gone, and a
        // registration keeps only its earliest time.
        if let Some((sock, at)) = phase_deadline(&inner) {
            sock.wake_at(at);
        }
        // Stopped at a budget (the rest is already there), or the phase
        // changed (setup took its bytes; what followed them is unread):
        // no new edge will say so, so the progress thread runs it again
        // (a budget left to a driving application thread is its own: it
        // polls again, and the progress thread gets it when it stops).
        let more = self.rx_more.load(Ordering::Relaxed) || self.tx_more.load(Ordering::Relaxed);
        if (more && !self.driven()) || ev.is_some() {
            if let Some(sock) = sock_of(&inner) {
                sock.wake_at(Instant::now());
            }
        }
        drop(inner);
        if let Some(ev) = ev {
            self.cm_event(ev);
        }
        self.run_hooks();
        any
    }

    /// Has the progress thread watch the socket for what only it would
    /// notice: nothing while an application thread drives the queue pair
    /// (it takes the input and pushes the output itself), else input, and
    /// output while bytes wait for socket space. (Acknowledgements left for
    /// a spinner's next post go with it, with its next step, or with the
    /// completion queue's check, `Feeder::flush`.)
    fn watch(&self, inner: &Inner) {
        if let Some(sock) = sock_of(inner) {
            let driven = self.driven();
            sock.watch(!driven, !driven && self.tx_blocked.load(Ordering::Relaxed));
        }
    }

    /// Whether an application thread spins on one of its completion
    /// queues (and none sleeps there): it steps again in a moment.
    fn spun(&self) -> bool {
        self.send_cq.spun() || self.recv_cq.spun()
    }

    /// Whether an application thread drives the queue pair (spins on or
    /// sleeps on one of its completion queues: [`Cq::driven`]).
    fn driven(&self) -> bool {
        self.send_cq.driven() || self.recv_cq.driven()
    }

    /// The queue pair's lock, for any thread but the progress thread:
    /// what the progress thread hands over while it is held runs when it
    /// is let go.
    fn hold(&self) -> QpGuard<'_> {
        QpGuard {
            qp: self,
            inner: Some(lock(&self.inner)),
            check: true,
            look: false,
        }
    }

    /// The lock for a caller that only looks (state, address, counts):
    /// such calls come from under the DAT layer's locks, even from within
    /// a connection event (the EP reads its local address as it takes
    /// ESTABLISHED). Running the engine when it lets go, as [`Self::hold`]
    /// does, could deliver the next event (the peer's close) into a lock
    /// its caller holds: so what the progress thread handed over meanwhile
    /// goes back to it ([`Self::hand_back`]).
    fn look(&self) -> QpGuard<'_> {
        QpGuard {
            qp: self,
            inner: Some(lock(&self.inner)),
            check: false,
            look: true,
        }
    }

    /// [`IwarpQp::hold`] if nobody holds the lock (a poisoned lock is
    /// taken anyway: teardown must go on).
    fn try_hold(&self) -> Option<QpGuard<'_>> {
        let g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(QpGuard {
            qp: self,
            inner: Some(g),
            check: true,
            look: false,
        })
    }

    /// Runs the notification hooks of the queue pair's completion queues
    /// that its completions fired (with no lock held).
    fn run_hooks(&self) {
        self.send_cq.run_hook();
        if !Arc::ptr_eq(&self.send_cq, &self.recv_cq) {
            self.recv_cq.run_hook();
        }
    }

    /// After the lock was let go: runs the hooks the completions made
    /// under it fired, then what the progress thread handed over while it
    /// was held. Two loads, a fence and a load when there was nothing.
    fn after_unlock(&self) {
        self.run_hooks();
        // Pairs with the fence in `Source::run`: either the progress
        // thread sees the lock free, or this thread sees its kick.
        fence(Ordering::SeqCst);
        if self.kick.load(Ordering::Relaxed) {
            self.run_kicked();
        }
    }

    /// After a look let go of the lock: a run the progress thread handed
    /// over meanwhile is scheduled on the progress thread at once (if the
    /// lock is taken again already, its holder sees the kick).
    fn hand_back(&self) {
        // Pairs with the fence in `Source::run`, as in `after_unlock`.
        fence(Ordering::SeqCst);
        if !self.kick.load(Ordering::Relaxed) {
            return;
        }
        let g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let waker = sock_of(&g).and_then(|s| s.reg.as_ref()).map(Reg::waker);
        // Let go first: a run that found the lock still held would be
        // handed back here, with nobody left to see it.
        drop(g);
        if let Some(w) = waker {
            w.schedule(Instant::now());
        }
    }

    /// Runs the engine for as long as runs are handed over and the lock is
    /// free. False if a kick was left to another holder.
    fn run_kicked(&self) -> bool {
        while self.kick.load(Ordering::Relaxed) {
            let g = match self.inner.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                // The holder sees the kick when it lets go.
                Err(std::sync::TryLockError::WouldBlock) => return false,
            };
            // Taken with the lock held: what arrived before it was set is
            // in the socket for this step to read.
            if self.kick.swap(false, Ordering::SeqCst) {
                self.run_step(g, true, false);
            } else {
                drop(g);
            }
            fence(Ordering::SeqCst);
        }
        true
    }
}

impl IwarpQp {
    /// Records whether output waits for socket space (read by the
    /// progress thread without the lock).
    fn note_tx(&self, inner: &Inner) {
        let (blocked, sock) = match &inner.phase {
            Phase::Up(up) => (
                up.tx.busy() || self.tx_more.load(Ordering::Relaxed),
                Some(&up.stream),
            ),
            Phase::Connecting { tcp_up, stream, .. } => (!tcp_up, Some(stream)),
            _ => (false, None),
        };
        if blocked || self.rx_more.load(Ordering::Relaxed) {
            // A poll would move data: a consumer holding completions
            // still polls (CompletionQueue::busy).
            self.send_cq.mark_busy();
            self.recv_cq.mark_busy();
        }
        if self.tx_blocked.load(Ordering::Relaxed) != blocked {
            self.tx_blocked.store(blocked, Ordering::Relaxed);
            if let Some(sock) = sock {
                // A thread sleeping on the completion queues wakes when the
                // socket takes more and pushes its own bytes; the progress
                // thread does it if nobody sleeps there.
                for cq in &sock.cqs {
                    cq.watch_output(sock.stream.as_fd(), u64::from(self.num), blocked);
                }
            }
        }
        self.watch(inner);
    }
}

/// How a batched receive ended.
enum Batch {
    /// FPDUs were taken; look again.
    More,
    /// Nothing has arrived.
    Empty,
    /// FPDUs were taken, and nothing else had arrived.
    Drained,
    End(Outcome),
}

fn unsafe_zeroed_msghdr() -> libc::msghdr {
    // SAFETY: an all-zero msghdr (no address, no iovecs, no control data)
    // is valid.
    unsafe { std::mem::zeroed() }
}

fn fault_outcome(_f: Fault) -> Outcome {
    Outcome::Broken
}

/// How a socket error ends the connection (rulings, teardown events): the
/// peer closing it, in order or abruptly (a reset: its abrupt disconnect,
/// its EP freed, its process gone), is a disconnect; anything this side
/// detects (keepalive or user timeout, other errors) breaks it.
fn outcome_of_errno(errno: Option<i32>) -> Outcome {
    match errno {
        Some(libc::ECONNRESET | libc::EPIPE) => Outcome::PeerClosed,
        _ => Outcome::Broken,
    }
}

impl Feeder for IwarpQp {
    /// An application polls: runs the engine unless another thread is in
    /// (then that thread's step, or the one it was handed, covers it).
    fn progress(&self) -> bool {
        if progress::inherited(self.gen) {
            return false;
        }
        let Some(g) = self.try_hold() else {
            return false;
        };
        // Acknowledgements may wait for a spinner's next post or step; a
        // thread that sleeps posts nothing before it sleeps again.
        let any = self.run_step(g.into_raw(), false, true);
        self.after_unlock();
        any
    }

    /// Acknowledgements a spinner left for its next post and still unsent
    /// go now (the completion queue's check, on the progress thread).
    fn flush(&self) {
        if self.acks_left.load(Ordering::Relaxed) && !progress::inherited(self.gen) {
            self.kick.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            self.run_kicked();
        }
    }

    /// A queue started or stopped being driven by an application thread:
    /// the progress thread watches the socket only while none is.
    fn driven_changed(&self) {
        if progress::inherited(self.gen) {
            return;
        }
        let g = self.hold();
        self.watch(&g);
    }
}

/// The socket of the queue pair's phase, if it has one.
fn sock_of(inner: &Inner) -> Option<&Sock> {
    match &inner.phase {
        Phase::Connecting { stream, .. }
        | Phase::Accepting { stream, .. }
        | Phase::Draining { stream, .. } => Some(stream),
        Phase::Up(up) => Some(&up.stream),
        Phase::Idle | Phase::Closed => None,
    }
}

/// The next time the queue pair's phase must be stepped whatever happens
/// on its socket, and the socket whose registration runs it then.
fn phase_deadline(inner: &Inner) -> Option<(&Sock, Instant)> {
    match &inner.phase {
        Phase::Connecting {
            deadline, stream, ..
        }
        | Phase::Accepting {
            deadline, stream, ..
        }
        | Phase::Draining { deadline, stream } => Some((stream, *deadline)),
        Phase::Up(up) => [
            up.closing,
            up.not_ready.as_ref().map(|n| n.1),
            up.nudge.as_ref().map(|n| n.at),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|d| (&up.stream, d)),
        Phase::Idle | Phase::Closed => None,
    }
}

impl Source for IwarpQp {
    /// Something arrived (or socket space, or a deadline came): run the
    /// engine now, or hand the run to the thread that holds the queue
    /// pair, which runs it when it lets go.
    fn run(&self) -> Run {
        if progress::inherited(self.gen) {
            return Run::default();
        }
        self.kick.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.run_kicked() {
            progress::note_handed();
            tracing::trace!(qp = self.num, "progress: handed to the holder");
        }
        // (What must run again, at once or at a deadline, the step that
        // saw it scheduled.)
        Run::default()
    }
}

impl QueuePair for IwarpQp {
    fn num(&self) -> QpNum {
        self.num
    }

    fn state(&self) -> QpState {
        match self.look().phase {
            Phase::Idle => QpState::Idle,
            Phase::Connecting { .. } | Phase::Accepting { .. } => QpState::Connecting,
            Phase::Up(ref up) if up.closing.is_some() => QpState::Disconnecting,
            Phase::Up(_) => QpState::Connected,
            Phase::Draining { .. } | Phase::Closed => QpState::Closed,
        }
    }

    fn post_send(&self, wr: &SendWr<'_>) -> Result<(), PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let mut inner = self.hold();
        let Phase::Up(up) = &mut inner.phase else {
            return Err(PostError::State);
        };
        if up.closing.is_some() {
            return Err(PostError::State);
        }
        // The engine checks against the larger of the two queues' limits.
        if wr.sgl.len() > self.cfg.max_send_sge as usize {
            return Err(PostError::TooManySge);
        }
        up.conn.post_send(wr, &dev.keys)?;
        // Write what the socket takes now; the rest goes out on progress.
        let _ = self.pump_tx(up);
        self.note_tx(&inner);
        Ok(())
    }

    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        if self.srq.is_some() {
            return Err(PostError::Unsupported);
        }
        let mut inner = self.hold();
        match &mut inner.phase {
            Phase::Up(_) if wr.sgl.len() > self.cfg.max_recv_sge as usize => {
                Err(PostError::TooManySge)
            }
            Phase::Up(up) => {
                up.conn.post_recv(wr, &dev.keys)?;
                if up.not_ready.is_some() {
                    // A Send waits for this receive: place it now, and
                    // what arrived behind it (unread while it waited).
                    self.run(inner, true);
                }
                Ok(())
            }
            Phase::Idle | Phase::Connecting { .. } | Phase::Accepting { .. } => {
                let e =
                    RqEntry::check(wr, self.cfg.max_recv_sge as usize, self.cfg.pd.0, &dev.keys)?;
                if inner.pre_recv.len() >= self.cfg.recv_depth as usize || !inner.pre_recv.push(e) {
                    return Err(PostError::QueueFull);
                }
                Ok(())
            }
            Phase::Draining { .. } | Phase::Closed => Err(PostError::State),
        }
    }

    /// Binds (or, with a zero length, unbinds) a window at once and queues
    /// its completion in send-queue order. The registration must be in
    /// the queue pair's protection domain, cover the range, and allow
    /// local write when remote write is granted.
    fn post_bind(&self, wr: &BindWr) -> Result<u32, PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let idx = u32::try_from(wr.window.0).map_err(|_| PostError::Unsupported)?;
        let mut inner = self.hold();
        let Phase::Up(up) = &mut inner.phase else {
            return Err(PostError::State);
        };
        let mut windows = lock(&dev.windows);
        let Some(w) = windows.get_mut(&idx).filter(|w| w.0 == self.cfg.pd.0) else {
            return Err(PostError::Protection(
                crate::transport::soft::keys::KeyFault::Domain,
            ));
        };
        let rkey = if wr.len == 0 {
            dev.keys.revoke_remote(idx);
            w.1 = None;
            0
        } else {
            let mut need = Access::LOCAL_READ;
            if wr.access.contains(Access::REMOTE_WRITE) {
                need = need.union(Access::LOCAL_WRITE);
            }
            dev.keys
                .check_local(wr.lkey, wr.addr, wr.len, need, Some(self.cfg.pd.0))
                .map_err(PostError::Protection)?;
            let remote = wr
                .access
                .intersection(Access::REMOTE_READ.union(Access::REMOTE_WRITE));
            let k = dev
                .keys
                .grant_remote(idx, wr.addr, wr.len, remote)
                .map_err(|_| PostError::Unsupported)?;
            w.1 = Some(wr.lkey & crate::transport::soft::keys::INDEX_MASK);
            k
        };
        drop(windows);
        let mut sink = self.sink();
        up.conn
            .post_bind(wr.wr_id, wr.signaled, WcStatus::Success, &mut sink)?;
        Ok(rkey)
    }

    fn connect(
        &self,
        remote: SocketAddr,
        port: u16,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<(), DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let mut inner = self.hold();
        if !matches!(inner.phase, Phase::Idle) {
            return Err(DeviceError::State);
        }
        let opts = self.dev.upgrade().map(|d| d.opts).unwrap_or_default();
        let init = Initiator::new(InitiatorConfig {
            private_data: private_data.to_vec(),
            crc_requested: opts.crc,
            ird: self.cfg.ird,
            ord: self.cfg.ord,
            ack_reads_wanted: !opts.local_completion,
            max_pd_in: MAX_PD_IN,
            max_fpdu: MAX_FPDU,
        })
        .map_err(|_| DeviceError::Invalid)?;
        let to = SocketAddr::new(remote.ip(), port);
        let timeout = if timeout.is_zero() {
            REPLY_TIMEOUT
        } else {
            timeout
        };
        match start_connect(to) {
            Ok(stream) => {
                self.tx_blocked.store(true, Ordering::Relaxed);
                let stream = Sock::new(stream, self)?;
                let deadline = Instant::now() + timeout;
                stream.wake_at(deadline);
                inner.phase = Phase::Connecting {
                    stream,
                    init: Box::new(init),
                    tcp_up: false,
                    deadline,
                };
                Ok(())
            }
            Err(e) => {
                drop(inner);
                // Refused at once (ECONNREFUSED), no route, bad address: all
                // unreachable; a refusal after EINPROGRESS comes via progress.
                let ev = match e.raw_os_error() {
                    Some(libc::ETIMEDOUT) => Ev::TimedOut,
                    Some(libc::ECONNREFUSED) => Ev::Refused,
                    _ => Ev::Unreachable,
                };
                self.cm_event(ev);
                Ok(())
            }
        }
    }

    fn disconnect(&self, graceful: bool) -> Result<(), DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let mut inner = self.hold();
        let ev = match std::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Up(mut up) if graceful => {
                // Queued work finishes first (bounded by DRAIN_TIMEOUT);
                // the step that sees the send queue empty closes.
                if up.closing.is_none() {
                    let deadline = Instant::now() + DRAIN_TIMEOUT;
                    up.closing = Some(deadline);
                    up.conn.request_ack();
                    up.stream.wake_at(deadline);
                }
                inner.phase = Phase::Up(up);
                let (_, ev) = self.step(&mut inner, true, false);
                self.note_tx(&inner);
                ev
            }
            Phase::Up(mut up) => {
                // Acknowledgements left for the next step are owed for
                // what already arrived (a NIC would have sent them on
                // receipt): they go before the reset.
                if up.conn.only_acks_due() {
                    let _ = self.pump_tx(&mut up);
                }
                let mut sink = self.sink();
                up.conn.flush(&mut sink);
                set_linger_zero(&up.stream);
                Some(Ev::Disconnected)
            }
            Phase::Connecting { .. } | Phase::Accepting { .. } => {
                self.flush_pre_recv(&mut inner);
                Some(Ev::Disconnected)
            }
            Phase::Idle => {
                inner.phase = Phase::Idle;
                return Err(DeviceError::State);
            }
            p @ (Phase::Draining { .. } | Phase::Closed) => {
                inner.phase = p;
                None
            }
        };
        drop(inner);
        if let Some(ev) = ev {
            self.cm_event(ev);
        }
        Ok(())
    }

    fn reset(&self) -> Result<(), DeviceError> {
        let mut inner = self.hold();
        match inner.phase {
            Phase::Closed | Phase::Draining { .. } | Phase::Idle => {
                self.flush_pre_recv(&mut inner);
                inner.phase = Phase::Idle;
                Ok(())
            }
            _ => Err(DeviceError::State),
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        match &self.look().phase {
            Phase::Up(up) => up.stream.stream.local_addr().ok(),
            Phase::Connecting { stream, .. } => stream.stream.local_addr().ok(),
            _ => None,
        }
    }

    fn recv_outstanding(&self) -> (u32, u32) {
        let inner = self.look();
        let n = match &inner.phase {
            Phase::Up(up) => up.conn.recv_outstanding(),
            _ => inner.pre_recv.len(),
        };
        (n as u32, self.cfg.recv_depth)
    }
}

// ─────────────────────────── shared receive queue ───────────────────────────

/// A shared receive queue of an [`IwarpDevice`]: one ring of receives that
/// the connections of its queue pairs take from, oldest first.
pub struct IwarpSrq {
    dev: Weak<IwarpDevice>,
    pd: u64,
    max_sge: u32,
    ring: Mutex<RecvRing>,
    /// Queue pairs using it (to retry a Send that found it empty).
    qps: Mutex<Vec<Weak<IwarpQp>>>,
}

impl std::fmt::Debug for IwarpSrq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IwarpSrq").field("pd", &self.pd).finish()
    }
}

impl SharedRecv for IwarpSrq {
    fn take(&self) -> Option<RqEntry> {
        lock(&self.ring).pop()
    }
}

impl SharedReceiveQueue for IwarpSrq {
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let e = RqEntry::check(wr, self.max_sge as usize, self.pd, &dev.keys)?;
        if !lock(&self.ring).push(e) {
            return Err(PostError::QueueFull);
        }
        // A Send that found the queue empty is waiting: let it land now
        // (rare: the common post neither collects nor allocates).
        let any_waiting = lock(&self.qps)
            .iter()
            .filter_map(Weak::upgrade)
            .any(|q| q.rnr_waiting.load(Ordering::Acquire));
        if !any_waiting {
            return Ok(());
        }
        let waiting: Vec<Arc<IwarpQp>> = lock(&self.qps)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|q| q.rnr_waiting.load(Ordering::Acquire))
            .collect();
        for q in waiting {
            q.run(q.hold(), true);
        }
        Ok(())
    }

    fn outstanding(&self) -> u32 {
        lock(&self.ring).len() as u32
    }

    fn depth(&self) -> u32 {
        lock(&self.ring).capacity() as u32
    }

    fn resize(&self, depth: u32) -> Result<(), DeviceError> {
        let dev = self.dev.upgrade().ok_or(DeviceError::NotFound)?;
        if depth == 0 || depth > dev.caps.max_srq_wr {
            return Err(DeviceError::Invalid);
        }
        if lock(&self.ring).resize(depth as usize) {
            Ok(())
        } else {
            Err(DeviceError::Invalid)
        }
    }
}

impl Drop for IwarpQp {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.upgrade() {
            lock(&dev.qps).remove(&self.num);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::verbs::{SendOp, Sge};
    use crate::transport::SOFTWARE_CAPABILITIES;
    use std::net::Ipv4Addr;

    const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const DEADLINE: Duration = Duration::from_secs(20);

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Got {
        Request(u64, Vec<u8>),
        Established(Vec<u8>),
        Rejected(Vec<u8>),
        Unreachable,
        TimedOut,
        AcceptFailed,
        Disconnected,
        Broken,
    }

    #[derive(Default)]
    struct Rec(Mutex<Vec<Got>>);
    impl CmHandler for Rec {
        fn event(&self, _qp: Option<QpNum>, ev: CmEvent<'_>) {
            let g = match ev {
                CmEvent::ConnectRequest {
                    request,
                    private_data,
                    ..
                } => Got::Request(request, private_data.to_vec()),
                CmEvent::Established { private_data } => Got::Established(private_data.to_vec()),
                CmEvent::Rejected { private_data } => Got::Rejected(private_data.to_vec()),
                CmEvent::Unreachable | CmEvent::Refused => Got::Unreachable,
                CmEvent::TimedOut => Got::TimedOut,
                CmEvent::AcceptFailed => Got::AcceptFailed,
                CmEvent::Disconnected => Got::Disconnected,
                CmEvent::Broken => Got::Broken,
            };
            lock(&self.0).push(g);
        }
    }
    impl Rec {
        fn take(&self) -> Vec<Got> {
            std::mem::take(&mut *lock(&self.0))
        }
    }

    struct Side {
        dev: Arc<IwarpDevice>,
        pd: PdId,
        cq: Arc<dyn CompletionQueue>,
        qp: Arc<dyn QueuePair>,
        rec: Arc<Rec>,
    }

    fn side(dev: &Arc<IwarpDevice>) -> Side {
        side_cq(dev, 256)
    }

    fn side_cq(dev: &Arc<IwarpDevice>, cq_depth: u32) -> Side {
        let pd = dev.alloc_pd().expect("pd");
        let cq = dev.create_cq(cq_depth).expect("cq");
        let rec = Arc::new(Rec::default());
        let qp = dev
            .create_qp(QpConfig {
                pd,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                srq: None,
                send_depth: 64,
                recv_depth: 64,
                max_send_sge: 4,
                max_recv_sge: 4,
                ird: 4,
                ord: 4,
                cm: rec.clone(),
            })
            .expect("qp");
        Side {
            dev: dev.clone(),
            pd,
            cq,
            qp,
            rec,
        }
    }

    fn spin(devs: &[&Arc<IwarpDevice>], mut done: impl FnMut() -> bool) {
        let end = Instant::now() + DEADLINE;
        while !done() {
            assert!(Instant::now() < end, "deadline");
            for d in devs {
                d.progress();
            }
        }
    }

    fn wait_ev(devs: &[&Arc<IwarpDevice>], rec: &Rec) -> Got {
        let mut got = None;
        spin(devs, || {
            got = lock(&rec.0).first().cloned();
            got.is_some()
        });
        lock(&rec.0).remove(0);
        got.expect("event")
    }

    /// Connected pair: (active, passive), each on its own device.
    fn connected(n: usize) -> Vec<(Side, Side)> {
        connected_cq(n, 256)
    }

    /// Like [`connected`], the passive sides' CQs `cq_depth` deep.
    fn connected_cq(n: usize, cq_depth: u32) -> Vec<(Side, Side)> {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let mut out = Vec::new();
        for _ in 0..n {
            let a = side(&da);
            let b = side_cq(&db, cq_depth);
            a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"hi", DEADLINE)
                .expect("connect");
            let Got::Request(id, pd) = wait_ev(&[&da, &db], &lrec) else {
                panic!("request")
            };
            assert_eq!(pd, b"hi");
            db.accept(id, &*b.qp, b"yo").expect("accept");
            assert_eq!(
                wait_ev(&[&da, &db], &a.rec),
                Got::Established(b"yo".to_vec())
            );
            assert!(matches!(wait_ev(&[&da, &db], &b.rec), Got::Established(_)));
            out.push((a, b));
        }
        out
    }

    fn reg(s: &Side, buf: &[u8]) -> MemoryRegion {
        let all = Access::LOCAL_READ
            .union(Access::LOCAL_WRITE)
            .union(Access::REMOTE_READ)
            .union(Access::REMOTE_WRITE);
        s.dev
            .register(s.pd, buf.as_ptr() as u64, buf.len() as u64, all)
            .expect("register")
    }

    fn sge(mr: &MemoryRegion, len: usize) -> Sge {
        Sge {
            addr: mr.addr,
            len: len as u64,
            lkey: mr.lkey,
        }
    }

    fn wait_wc(devs: &[&Arc<IwarpDevice>], cq: &Arc<dyn CompletionQueue>) -> Wc {
        let mut out = [Wc::BLANK];
        spin(devs, || cq.poll(&mut out) == 1);
        out[0]
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
            .collect()
    }

    /// The passive side's application makes no progress call at all: the
    /// progress thread takes the connection request, finishes the MPA
    /// exchange, and serves RDMA Writes and Reads aimed at it.
    #[test]
    fn progress_thread_serves_an_idle_target() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let a = side(&da);
        let b = side(&db);
        a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"idle", DEADLINE)
            .expect("connect");
        let Got::Request(id, _) = wait_ev(&[&da], &lrec) else {
            panic!("request")
        };
        db.accept(id, &*b.qp, b"").expect("accept");
        assert!(matches!(wait_ev(&[&da], &a.rec), Got::Established(_)));

        let target = pattern(300_000, 1);
        let tmr = reg(&b, &target);
        let src = pattern(200_000, 9);
        let smr = reg(&a, &src);
        let dst = vec![0u8; 300_000];
        let dmr = reg(&a, &dst);
        a.qp.post_send(&SendWr {
            wr_id: 1,
            op: SendOp::RdmaWrite {
                remote_addr: tmr.addr + 50_000,
                rkey: tmr.rkey,
            },
            sgl: &[sge(&smr, src.len())],
            signaled: true,
            fence: false,
        })
        .expect("write");
        a.qp.post_send(&SendWr {
            wr_id: 2,
            op: SendOp::RdmaRead {
                remote_addr: tmr.addr,
                rkey: tmr.rkey,
            },
            sgl: &[sge(&dmr, dst.len())],
            signaled: true,
            fence: false,
        })
        .expect("read");
        for id in [1, 2] {
            let wc = wait_wc(&[], &a.cq);
            assert_eq!((wc.wr_id, wc.status), (id, WcStatus::Success));
        }
        let mut want = pattern(300_000, 1);
        want[50_000..250_000].copy_from_slice(&src);
        assert!(dst == want, "read back what the write placed");
        assert!(b
            .rec
            .take()
            .iter()
            .all(|g| matches!(g, Got::Established(_))));
    }

    /// Connects `a` (on `da`) to `b` (on `db`) through a fresh listener.
    fn join(da: &Arc<IwarpDevice>, db: &Arc<IwarpDevice>, a: &Side, b: &Side) {
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"", DEADLINE)
            .expect("connect");
        let Got::Request(id, _) = wait_ev(&[da, db], &lrec) else {
            panic!("request")
        };
        db.accept(id, &*b.qp, b"").expect("accept");
        assert!(matches!(wait_ev(&[da, db], &a.rec), Got::Established(_)));
        assert!(matches!(wait_ev(&[da, db], &b.rec), Got::Established(_)));
    }

    /// A side whose queue pair takes receives from `srq`.
    fn side_srq(dev: &Arc<IwarpDevice>, pd: PdId, srq: &Arc<dyn SharedReceiveQueue>) -> Side {
        let cq = dev.create_cq(64).expect("cq");
        let rec = Arc::new(Rec::default());
        let qp = dev
            .create_qp(QpConfig {
                pd,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                srq: Some(srq.clone()),
                send_depth: 16,
                recv_depth: 0,
                max_send_sge: 2,
                max_recv_sge: 2,
                ird: 2,
                ord: 2,
                cm: rec.clone(),
            })
            .expect("qp");
        Side {
            dev: dev.clone(),
            pd,
            cq,
            qp,
            rec,
        }
    }

    #[test]
    fn shared_receive_queue_feeds_two_queue_pairs_in_posting_order() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let pd = db.alloc_pd().expect("pd");
        let srq = db.create_srq(pd, 4, 2).expect("srq");
        assert_eq!(srq.depth(), 4);
        let (a1, a2) = (side(&da), side(&da));
        let (b1, b2) = (side_srq(&db, pd, &srq), side_srq(&db, pd, &srq));
        assert_eq!(
            b1.qp.post_recv(&RecvWr { wr_id: 1, sgl: &[] }),
            Err(PostError::Unsupported),
            "receives go to the shared queue"
        );
        join(&da, &db, &a1, &b1);
        join(&da, &db, &a2, &b2);
        let bufs: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 1000]).collect();
        let mrs: Vec<MemoryRegion> = bufs.iter().map(|b| reg(&b1, b)).collect();
        for (i, mr) in mrs.iter().enumerate() {
            srq.post_recv(&RecvWr {
                wr_id: 100 + i as u64,
                sgl: &[sge(mr, 1000)],
            })
            .expect("post");
        }
        assert_eq!(srq.outstanding(), 3);
        let m1 = pattern(700, 1);
        let m2 = pattern(300, 2);
        let (r1, r2) = (reg(&a1, &m1), reg(&a2, &m2));
        // (The SRQ side grants IRD 2 + 1, so a1, with ORD 4, completes
        // locally: wait for the placement itself before the second Send.)
        send(&a1, 1, &r1, m1.len());
        assert_eq!(wait_wc(&[&da, &db], &a1.cq).status, WcStatus::Success);
        let w1 = wait_wc(&[&da, &db], &b1.cq);
        send(&a2, 2, &r2, m2.len());
        assert_eq!(wait_wc(&[&da, &db], &a2.cq).status, WcStatus::Success);
        let w2 = wait_wc(&[&da, &db], &b2.cq);
        assert_eq!((w1.wr_id, w1.byte_len, w1.qp), (100, 700, b1.qp.num()));
        assert_eq!((w2.wr_id, w2.byte_len, w2.qp), (101, 300, b2.qp.num()));
        assert_eq!(&bufs[0][..700], &m1[..]);
        assert_eq!(&bufs[1][..300], &m2[..]);
        assert_eq!(srq.outstanding(), 1);
        srq.resize(8).expect("resize");
        assert_eq!((srq.depth(), srq.outstanding()), (8, 1));
        assert_eq!(srq.resize(0), Err(DeviceError::Invalid));
    }

    #[test]
    fn shared_receive_queue_empty_holds_the_send_until_a_receive_is_posted() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let pd = db.alloc_pd().expect("pd");
        let srq = db.create_srq(pd, 4, 1).expect("srq");
        let a = side(&da);
        let b = side_srq(&db, pd, &srq);
        join(&da, &db, &a, &b);
        let m = pattern(5000, 3);
        let mr = reg(&a, &m);
        send(&a, 1, &mr, m.len());
        // Let the Send arrive and find the queue empty.
        let end = Instant::now() + Duration::from_millis(100);
        while Instant::now() < end {
            da.progress();
            db.progress();
        }
        let dst = vec![0u8; 5000];
        let dmr = reg(&b, &dst);
        srq.post_recv(&RecvWr {
            wr_id: 9,
            sgl: &[sge(&dmr, 5000)],
        })
        .expect("post");
        let w = wait_wc(&[&da, &db], &b.cq);
        assert_eq!(
            (w.wr_id, w.status, w.byte_len),
            (9, WcStatus::Success, 5000)
        );
        assert_eq!(wait_wc(&[&da, &db], &a.cq).status, WcStatus::Success);
        assert!(dst == m);
    }

    #[test]
    fn window_bind_grants_remote_access_and_unbind_revokes_it() {
        let v = connected(1);
        let (a, b) = &v[0];
        let target = vec![0u8; 8192];
        let local = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
        let tmr = b
            .dev
            .register(b.pd, target.as_ptr() as u64, 8192, local)
            .expect("register");
        assert_eq!(tmr.rkey, 0, "no remote access of its own");
        let w = b.dev.alloc_window(b.pd).expect("window");
        let rkey =
            b.qp.post_bind(&BindWr {
                wr_id: 7,
                window: w,
                lkey: tmr.lkey,
                addr: tmr.addr + 4096,
                len: 1024,
                access: Access::REMOTE_WRITE,
                signaled: true,
                fence: false,
            })
            .expect("bind");
        assert_ne!(rkey, 0);
        let bw = wait_wc(&[&a.dev, &b.dev], &b.cq);
        assert_eq!(
            (bw.wr_id, bw.op, bw.status),
            (7, WcOp::Bind, WcStatus::Success)
        );
        assert_eq!(
            b.dev.deregister(&tmr),
            Err(DeviceError::Busy),
            "a bound registration stays"
        );
        let src = pattern(1024, 4);
        let smr = reg(a, &src);
        let write = |wr_id, rkey, off: u64, len| {
            a.qp.post_send(&SendWr {
                wr_id,
                op: SendOp::RdmaWrite {
                    remote_addr: tmr.addr + off,
                    rkey,
                },
                sgl: &[sge(&smr, len)],
                signaled: true,
                fence: false,
            })
            .expect("write")
        };
        write(1, rkey, 4096, 1024);
        assert_eq!(wait_wc(&[&a.dev, &b.dev], &a.cq).status, WcStatus::Success);
        assert!(target[4096..5120] == src[..]);
        assert!(target[..4096]
            .iter()
            .chain(&target[5120..])
            .all(|&x| x == 0));
        // Unbind: the key stops working.
        let zero =
            b.qp.post_bind(&BindWr {
                wr_id: 8,
                window: w,
                lkey: tmr.lkey,
                addr: 0,
                len: 0,
                access: Access::NONE,
                signaled: false,
                fence: false,
            })
            .expect("unbind");
        assert_eq!(zero, 0);
        b.dev.deregister(&tmr).expect("free once unbound");
        write(2, rkey, 4096, 16);
        assert_eq!(
            wait_wc(&[&a.dev, &b.dev], &a.cq).status,
            WcStatus::RemoteAccess
        );
        b.dev.dealloc_window(w).expect("free window");
        assert_eq!(b.dev.dealloc_window(w), Err(DeviceError::NotFound));
    }

    /// A receiver that polls until its receive completes and then stops:
    /// the Send is acknowledged all the same (the step that placed it sent
    /// the acknowledgement; nothing waits for a next poll).
    #[test]
    fn an_acknowledgement_left_by_a_poller_that_stops_still_goes_out() {
        let v = connected(1);
        let (a, b) = &v[0];
        let dst = vec![0u8; 64];
        let md = reg(b, &dst);
        b.qp.post_recv(&RecvWr {
            wr_id: 5,
            sgl: &[sge(&md, 64)],
        })
        .expect("recv");
        let src = pattern(64, 2);
        let ms = reg(a, &src);
        send(a, 6, &ms, 64);
        // The receiver polls until its receive completes, then stops.
        let w = wait_wc(&[], &b.cq);
        assert_eq!((w.wr_id, w.status), (5, WcStatus::Success));
        let t = Instant::now();
        let w = wait_wc(&[], &a.cq);
        assert_eq!((w.wr_id, w.status), (6, WcStatus::Success));
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
    }

    /// A request the DAT layer never answered fails to accept once the
    /// initiator gave up, and goes with its listener.
    #[test]
    fn an_unanswered_request_goes_with_its_listener() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let a = side(&da);
        let b = side(&db);
        a.qp.connect(
            SocketAddr::new(LO, 0),
            l.port(),
            b"",
            Duration::from_millis(200),
        )
        .expect("connect");
        let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
            panic!("request")
        };
        assert_eq!(wait_ev(&[&da, &db], &a.rec), Got::TimedOut);
        drop(a);
        assert_eq!(lock(&db.pending).len(), 1);
        drop(l);
        assert!(lock(&db.pending).is_empty());
        assert_eq!(db.accept(id, &*b.qp, b""), Err(DeviceError::NotFound));
    }

    /// Devices on IPv6 loopback connect and move data like IPv4 ones.
    #[test]
    fn ipv6_connection_moves_data() {
        let lo6 = IpAddr::V6(std::net::Ipv6Addr::LOCALHOST);
        if std::net::TcpListener::bind((lo6, 0)).is_err() {
            eprintln!("skipped: no IPv6 loopback here");
            return;
        }
        let da = IwarpDevice::open(lo6, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(lo6, SOFTWARE_CAPABILITIES);
        assert_eq!(da.address().ip(), lo6);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let a = side(&da);
        let b = side(&db);
        a.qp.connect(SocketAddr::new(lo6, 0), l.port(), b"six", DEADLINE)
            .expect("connect");
        let Got::Request(id, pd) = wait_ev(&[&da, &db], &lrec) else {
            panic!("request")
        };
        assert_eq!(pd, b"six");
        db.accept(id, &*b.qp, b"").expect("accept");
        assert!(matches!(wait_ev(&[&da, &db], &a.rec), Got::Established(_)));
        let dst = vec![0u8; 3000];
        let md = reg(&b, &dst);
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            sgl: &[sge(&md, 3000)],
        })
        .expect("recv");
        let src = pattern(3000, 6);
        let ms = reg(&a, &src);
        send(&a, 2, &ms, 3000);
        let w = wait_wc(&[&da, &db], &b.cq);
        assert_eq!(
            (w.wr_id, w.status, w.byte_len),
            (1, WcStatus::Success, 3000)
        );
        assert!(dst == src);
    }

    /// Posting Sends, RDMA Writes and receives and polling their
    /// completions (which runs the engines, sockets and all) allocate
    /// nothing once the connection is up.
    #[test]
    fn the_data_path_allocates_nothing() {
        use crate::object::tests::counting;
        let v = connected(1);
        let (a, b) = &v[0];
        let src = pattern(3000, 1);
        let dst = vec![0u8; 3000];
        let target = vec![0u8; 70_000];
        let big = pattern(70_000, 2);
        let (ms, md, mt, mb) = (reg(a, &src), reg(b, &dst), reg(b, &target), reg(a, &big));
        let round = |i: u64| {
            b.qp.post_recv(&RecvWr {
                wr_id: i,
                sgl: &[sge(&md, 3000)],
            })
            .expect("recv");
            send(a, i, &ms, 3000);
            a.qp.post_send(&SendWr {
                wr_id: i + 1000,
                op: SendOp::RdmaWrite {
                    remote_addr: mt.addr,
                    rkey: mt.rkey,
                },
                sgl: &[sge(&mb, 70_000)],
                signaled: true,
                fence: false,
            })
            .expect("write");
            // Only this thread polls (no other progress call).
            let mut got = 0;
            let end = Instant::now() + DEADLINE;
            let mut out = [Wc {
                wr_id: 0,
                status: WcStatus::Fatal,
                op: WcOp::Send,
                byte_len: 0,
                qp: 0,
                solicited: false,
            }; 4];
            while got < 3 {
                assert!(Instant::now() < end, "deadline");
                for cq in [&a.cq, &b.cq] {
                    let n = cq.poll(&mut out);
                    for w in &out[..n] {
                        assert_eq!(w.status, WcStatus::Success, "{w:?}");
                    }
                    got += n;
                }
            }
        };
        // Warm up per-thread state and the sockets' buffers.
        for i in 0..3 {
            round(i);
        }
        let before = counting::count();
        for i in 3..40 {
            round(i);
        }
        assert_eq!(
            counting::count() - before,
            0,
            "allocations on the data path"
        );
        assert!(dst == src && target == big);
    }

    #[test]
    fn connect_accept_with_private_data_both_ways() {
        let v = connected(1);
        assert_eq!(v[0].0.qp.state(), QpState::Connected);
        assert_eq!(v[0].1.qp.state(), QpState::Connected);
    }

    #[test]
    fn reject_carries_private_data() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let a = side(&da);
        a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"x", DEADLINE)
            .expect("connect");
        let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
            panic!("request")
        };
        l.reject(id, b"no thanks").expect("reject");
        assert_eq!(
            wait_ev(&[&da, &db], &a.rec),
            Got::Rejected(b"no thanks".to_vec())
        );
    }

    #[test]
    fn closed_port_is_unreachable_and_busy_port_is_in_use() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let l = da.listen(0, Arc::new(Rec::default())).expect("listen");
        assert_eq!(
            da.listen(l.port(), Arc::new(Rec::default())).err(),
            Some(DeviceError::PortInUse)
        );
        let port = l.port();
        drop(l);
        let a = side(&da);
        a.qp.connect(SocketAddr::new(LO, 0), port, b"", DEADLINE)
            .expect("connect");
        assert_eq!(wait_ev(&[&da], &a.rec), Got::Unreachable);
    }

    #[test]
    fn closed_listener_frees_its_port_while_still_held() {
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let l = da.listen(0, Arc::new(Rec::default())).expect("listen");
        let held = l.clone();
        let port = l.port();
        l.close();
        drop(l);
        let again = da
            .listen(port, Arc::new(Rec::default()))
            .expect("port free after close");
        assert_eq!(again.port(), port);
        drop(held);
        // The old listener's last drop leaves the new one alone.
        assert_eq!(
            da.listen(port, Arc::new(Rec::default())).err(),
            Some(DeviceError::PortInUse)
        );
    }

    fn send_recv(len: usize) {
        let v = connected(1);
        let (a, b) = &v[0];
        let src = pattern(len, 3);
        let dst = vec![0u8; len + 16];
        let (ms, md) = (reg(a, &src), reg(b, &dst));
        b.qp.post_recv(&RecvWr {
            wr_id: 9,
            sgl: &[sge(&md, dst.len())],
        })
        .expect("recv");
        a.qp.post_send(&SendWr {
            wr_id: 5,
            op: SendOp::Send { solicited: false },
            sgl: &[sge(&ms, len)],
            signaled: true,
            fence: false,
        })
        .expect("send");
        let devs = [&a.dev, &b.dev];
        let r = wait_wc(&devs, &b.cq);
        assert_eq!(
            (r.wr_id, r.status, r.op),
            (9, WcStatus::Success, WcOp::Recv)
        );
        assert_eq!(r.byte_len, len as u64);
        let s = wait_wc(&devs, &a.cq);
        assert_eq!((s.wr_id, s.status), (5, WcStatus::Success));
        assert_eq!(&dst[..len], &src[..]);
    }

    #[test]
    fn send_recv_0_bytes() {
        send_recv(0);
    }

    #[test]
    fn send_recv_1_byte() {
        send_recv(1);
    }

    #[test]
    fn send_recv_1_mib() {
        send_recv(1 << 20);
    }

    #[test]
    fn rdma_write_and_read_1_mib() {
        let v = connected(1);
        let (a, b) = &v[0];
        let len = 1 << 20;
        let src = pattern(len, 11);
        let remote = vec![0u8; len];
        let back = vec![0u8; len];
        let (ms, mr, mb) = (reg(a, &src), reg(b, &remote), reg(a, &back));
        let devs = [&a.dev, &b.dev];
        a.qp.post_send(&SendWr {
            wr_id: 1,
            op: SendOp::RdmaWrite {
                remote_addr: mr.addr,
                rkey: mr.rkey,
            },
            sgl: &[sge(&ms, len)],
            signaled: true,
            fence: false,
        })
        .expect("write");
        let w = wait_wc(&devs, &a.cq);
        assert_eq!((w.wr_id, w.status), (1, WcStatus::Success));
        assert!(remote == src, "written bytes");
        a.qp.post_send(&SendWr {
            wr_id: 2,
            op: SendOp::RdmaRead {
                remote_addr: mr.addr,
                rkey: mr.rkey,
            },
            sgl: &[sge(&mb, len)],
            signaled: true,
            fence: false,
        })
        .expect("read");
        let r = wait_wc(&devs, &a.cq);
        assert_eq!(
            (r.wr_id, r.status, r.byte_len),
            (2, WcStatus::Success, len as u64)
        );
        assert!(back == src, "read bytes");
    }

    #[test]
    fn sixteen_queue_pairs_at_once() {
        let v = connected(16);
        let bufs: Vec<(Vec<u8>, Vec<u8>)> = (0..16)
            .map(|i| (pattern(4096, i as u8), vec![0u8; 4096]))
            .collect();
        for ((a, b), (s, d)) in v.iter().zip(&bufs) {
            let (ms, md) = (reg(a, s), reg(b, d));
            b.qp.post_recv(&RecvWr {
                wr_id: 1,
                sgl: &[sge(&md, d.len())],
            })
            .expect("recv");
            a.qp.post_send(&SendWr {
                wr_id: 2,
                op: SendOp::Send { solicited: false },
                sgl: &[sge(&ms, s.len())],
                signaled: true,
                fence: false,
            })
            .expect("send");
        }
        for ((a, b), (s, d)) in v.iter().zip(&bufs) {
            let devs = [&a.dev, &b.dev];
            assert_eq!(wait_wc(&devs, &b.cq).status, WcStatus::Success);
            assert_eq!(wait_wc(&devs, &a.cq).status, WcStatus::Success);
            assert!(s == d);
        }
    }

    #[test]
    fn disconnect_flushes_outstanding_receives() {
        let v = connected(1);
        let (a, b) = &v[0];
        let dst = vec![0u8; 64];
        let md = reg(b, &dst);
        for id in 0..3 {
            b.qp.post_recv(&RecvWr {
                wr_id: id,
                sgl: &[sge(&md, 64)],
            })
            .expect("recv");
        }
        a.qp.disconnect(true).expect("disconnect");
        assert_eq!(a.rec.take(), vec![Got::Disconnected]);
        let devs = [&a.dev, &b.dev];
        assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
        for id in 0..3 {
            let w = wait_wc(&devs, &b.cq);
            assert_eq!((w.wr_id, w.status), (id, WcStatus::Flushed));
        }
        assert_eq!(b.qp.state(), QpState::Closed);
    }

    #[test]
    fn abrupt_disconnect_sends_the_acknowledgements_it_owes() {
        let v = connected(1);
        let (a, b) = &v[0];
        let src = pattern(64, 7);
        let dst = vec![0u8; 64];
        let (ms, md) = (reg(a, &src), reg(b, &dst));
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            sgl: &[sge(&md, 64)],
        })
        .expect("recv");
        a.qp.post_send(&SendWr {
            wr_id: 2,
            op: SendOp::Send { solicited: false },
            sgl: &[sge(&ms, 64)],
            signaled: true,
            fence: false,
        })
        .expect("send");
        // B polls (its acknowledgement may wait for its next step), sees
        // the receive, and resets the connection at once.
        let mut out = [Wc::BLANK; 1];
        let end = Instant::now() + DEADLINE;
        while b.cq.poll(&mut out) == 0 {
            assert!(Instant::now() < end, "deadline");
        }
        assert_eq!((out[0].wr_id, out[0].status), (1, WcStatus::Success));
        b.qp.disconnect(false).expect("disconnect");
        let w = wait_wc(&[&a.dev], &a.cq);
        assert_eq!(
            (w.wr_id, w.status),
            (2, WcStatus::Success),
            "the Send arrived: A's completion must say so"
        );
    }

    #[test]
    fn graceful_disconnect_lets_queued_work_finish() {
        let v = connected(1);
        let (a, b) = &v[0];
        let target = vec![0u8; 4 << 20];
        let tmr = reg(b, &target);
        let src = pattern(4 << 20, 6);
        let smr = reg(a, &src);
        // Unsignalled: only the close waits for its acknowledgement.
        a.qp.post_send(&SendWr {
            wr_id: 1,
            op: SendOp::RdmaWrite {
                remote_addr: tmr.addr,
                rkey: tmr.rkey,
            },
            sgl: &[sge(&smr, src.len())],
            signaled: false,
            fence: false,
        })
        .expect("write");
        a.qp.disconnect(true).expect("disconnect");
        assert_eq!(
            a.qp.post_send(&SendWr {
                wr_id: 2,
                op: SendOp::Send { solicited: false },
                sgl: &[],
                signaled: true,
                fence: false,
            }),
            Err(PostError::State),
            "nothing new once closing"
        );
        let devs = [&a.dev, &b.dev];
        assert_eq!(wait_ev(&devs, &a.rec), Got::Disconnected);
        assert!(
            target == src,
            "the queued write was placed before the close"
        );
        assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
        let mut out = [Wc {
            wr_id: 0,
            status: WcStatus::Fatal,
            op: WcOp::Send,
            byte_len: 0,
            qp: 0,
            solicited: false,
        }];
        assert_eq!(a.cq.poll(&mut out), 0, "the unsignalled write succeeded");
    }

    #[test]
    fn abrupt_disconnect_disconnects_the_peer_and_flushes() {
        let v = connected(1);
        let (a, b) = &v[0];
        let dst = vec![0u8; 64];
        let md = reg(b, &dst);
        b.qp.post_recv(&RecvWr {
            wr_id: 7,
            sgl: &[sge(&md, 64)],
        })
        .expect("recv");
        a.qp.disconnect(false).expect("disconnect");
        assert_eq!(a.rec.take(), vec![Got::Disconnected]);
        let devs = [&a.dev, &b.dev];
        // A reset from the peer is its disconnect (rulings: teardown events).
        assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
        let w = wait_wc(&devs, &b.cq);
        assert_eq!((w.wr_id, w.status), (7, WcStatus::Flushed));
        assert_eq!(
            a.qp.post_send(&SendWr {
                wr_id: 1,
                op: SendOp::Send { solicited: false },
                sgl: &[],
                signaled: true,
                fence: false,
            }),
            Err(PostError::State)
        );
    }

    #[test]
    fn a_deallocated_pd_takes_no_registration() {
        let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let pd = dev.alloc_pd().expect("pd");
        let buf = [0u8; 64];
        let addr = buf.as_ptr() as u64;
        let mr = dev
            .register(pd, addr, 64, Access::LOCAL_READ)
            .expect("register");
        dev.deregister(&mr).expect("deregister");
        dev.dealloc_pd(pd).expect("dealloc");
        assert_eq!(dev.dealloc_pd(pd), Err(DeviceError::NotFound));
        assert_eq!(
            dev.register(pd, addr, 64, Access::LOCAL_READ).err(),
            Some(DeviceError::Invalid)
        );
        assert_eq!(
            dev.register(PdId(9999), addr, 64, Access::LOCAL_READ).err(),
            Some(DeviceError::Invalid),
            "a PD this device never gave out"
        );
    }

    #[test]
    fn register_checks_the_memory() {
        use crate::transport::soft::memcheck::Fault;
        let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let pd = dev.alloc_pd().expect("pd");
        let rw = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page");
        // SAFETY: a fresh anonymous mapping of two pages, owned by the test.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let a = base as u64;
        // SAFETY: the second page is ours; the first is made read-only.
        unsafe {
            assert_eq!(libc::munmap(base.cast::<u8>().add(page).cast(), page), 0);
            assert_eq!(libc::mprotect(base, page, libc::PROT_READ), 0);
        }
        assert_eq!(
            dev.register(pd, a + page as u64, page as u64, Access::LOCAL_READ)
                .err(),
            Some(DeviceError::Memory(Fault::Unmapped))
        );
        assert_eq!(
            dev.register(pd, a, page as u64, rw).err(),
            Some(DeviceError::Memory(Fault::NotWritable))
        );
        let remote_write = Access::LOCAL_READ.union(Access::REMOTE_WRITE);
        assert_eq!(
            dev.register(pd, a, page as u64, remote_write).err(),
            Some(DeviceError::Memory(Fault::NotWritable))
        );
        let ro = dev
            .register(pd, a, page as u64, Access::LOCAL_READ)
            .expect("read-only memory, read access");
        dev.deregister(&ro).expect("deregister");
        let heap = vec![0u8; 10_000];
        let mr = dev
            .register(pd, heap.as_ptr() as u64, heap.len() as u64, rw)
            .expect("heap buffer");
        dev.deregister(&mr).expect("deregister");
        // SAFETY: unmaps the page this test mapped.
        unsafe { libc::munmap(base, page) };
    }

    #[test]
    fn cq_wait_fd_wakes_when_the_peer_sends() {
        use nix::poll::{PollFd, PollFlags, PollTimeout};
        let v = connected(1);
        let (a, b) = &v[0];
        let src = pattern(100, 5);
        let dst = vec![0u8; 100];
        let (ms, md) = (reg(a, &src), reg(b, &dst));
        b.qp.post_recv(&RecvWr {
            wr_id: 3,
            sgl: &[sge(&md, dst.len())],
        })
        .expect("recv");
        let readable = |cq: &Arc<dyn CompletionQueue>, ms: u16| {
            let mut fds = [PollFd::new(cq.wait_fd(), PollFlags::POLLIN)];
            nix::poll::poll(&mut fds, PollTimeout::from(ms)).expect("poll") == 1
        };
        assert!(!readable(&b.cq, 0), "nothing arrived yet");
        let cq = b.cq.clone();
        // A sleeper arms the queue: it wakes for the data (which it would
        // place itself) or, if the progress thread placed it first, for
        // the completion.
        cq.clear_notification();
        cq.arm(false);
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            let woke = readable(&cq, DEADLINE.as_millis() as u16);
            (woke, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        a.qp.post_send(&SendWr {
            wr_id: 4,
            op: SendOp::Send { solicited: false },
            sgl: &[sge(&ms, src.len())],
            signaled: true,
            fence: false,
        })
        .expect("send");
        let (woke, after) = waiter.join().expect("waiter");
        assert!(woke && after < DEADLINE, "woke after {after:?}");
        let mut out = [Wc {
            wr_id: 0,
            status: WcStatus::Fatal,
            op: WcOp::Send,
            byte_len: 0,
            qp: 0,
            solicited: false,
        }];
        let end = Instant::now() + DEADLINE;
        while b.cq.poll(&mut out) == 0 {
            assert!(Instant::now() < end, "deadline");
        }
        assert_eq!(
            (out[0].wr_id, out[0].status, out[0].op, out[0].byte_len),
            (3, WcStatus::Success, WcOp::Recv, 100)
        );
        assert_eq!(dst, src);
    }

    fn try_wc(cq: &Arc<dyn CompletionQueue>) -> Option<Wc> {
        let mut out = [Wc {
            wr_id: 0,
            status: WcStatus::Fatal,
            op: WcOp::Send,
            byte_len: 0,
            qp: 0,
            solicited: false,
        }];
        (cq.poll(&mut out) == 1).then_some(out[0])
    }

    fn send(s: &Side, wr_id: u64, mr: &MemoryRegion, len: usize) {
        s.qp.post_send(&SendWr {
            wr_id,
            op: SendOp::Send { solicited: false },
            sgl: &[sge(mr, len)],
            signaled: true,
            fence: false,
        })
        .expect("send");
    }

    #[test]
    fn rnr_send_waits_for_a_receive_posted_in_time() {
        let v = connected(1);
        let (a, b) = &v[0];
        assert_eq!(b.dev.rnr_timeout(), DEFAULT_RNR_TIMEOUT);
        let src = pattern(3000, 9);
        let dst = vec![0u8; 3000];
        let (ms, md) = (reg(a, &src), reg(b, &dst));
        send(a, 1, &ms, src.len());
        // The Send is held (no receive): nothing completes meanwhile.
        let hold = Instant::now() + Duration::from_millis(150);
        while Instant::now() < hold {
            a.dev.progress();
            b.dev.progress();
            assert!(try_wc(&a.cq).is_none() && try_wc(&b.cq).is_none());
        }
        assert_eq!(b.qp.state(), QpState::Connected);
        b.qp.post_recv(&RecvWr {
            wr_id: 2,
            sgl: &[sge(&md, dst.len())],
        })
        .expect("recv");
        let devs = [&a.dev, &b.dev];
        let r = wait_wc(&devs, &b.cq);
        assert_eq!(
            (r.wr_id, r.status, r.byte_len),
            (2, WcStatus::Success, 3000)
        );
        let s = wait_wc(&devs, &a.cq);
        assert_eq!((s.wr_id, s.status), (1, WcStatus::Success));
        assert_eq!(dst, src);
        assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
    }

    #[test]
    fn rnr_timeout_terminates_and_the_send_completes_receiver_not_ready() {
        let v = connected(1);
        let (a, b) = &v[0];
        let rnr = Duration::from_millis(100);
        b.dev.set_rnr_timeout(rnr);
        assert_eq!(b.dev.rnr_timeout(), rnr);
        let src = pattern(64, 1);
        let ms = reg(a, &src);
        let dst = vec![0u8; 64];
        let ma = reg(a, &dst);
        a.qp.post_recv(&RecvWr {
            wr_id: 30,
            sgl: &[sge(&ma, 64)],
        })
        .expect("recv");
        let t = Instant::now();
        send(a, 1, &ms, 64);
        send(a, 2, &ms, 64);
        send(a, 3, &ms, 64);
        let devs = [&a.dev, &b.dev];
        assert_eq!(wait_ev(&devs, &b.rec), Got::Broken);
        assert!(t.elapsed() >= rnr, "held for the RNR time");
        assert_eq!(wait_ev(&devs, &a.rec), Got::Broken);
        let got: Vec<(u64, WcStatus)> = (0..4)
            .map(|_| {
                let w = wait_wc(&devs, &a.cq);
                (w.wr_id, w.status)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, WcStatus::ReceiverNotReady),
                (2, WcStatus::Flushed),
                (3, WcStatus::Flushed),
                (30, WcStatus::Flushed),
            ]
        );
        assert_eq!(a.qp.state(), QpState::Closed);
        assert_eq!(b.qp.state(), QpState::Closed);
        assert!(
            try_wc(&b.cq).is_none(),
            "nothing was posted on the receiver"
        );
        assert_eq!(
            b.qp.post_recv(&RecvWr { wr_id: 4, sgl: &[] }),
            Err(PostError::State)
        );
        assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
    }

    #[test]
    fn cq_overrun_breaks_the_queue_pair() {
        let v = connected_cq(1, 1);
        let (a, b) = &v[0];
        assert_eq!(b.cq.depth(), 1);
        let src = pattern(32, 2);
        let dst = vec![0u8; 64];
        let (ms, md) = (reg(a, &src), reg(b, &dst));
        for id in [1, 2] {
            b.qp.post_recv(&RecvWr {
                wr_id: id,
                sgl: &[sge(&md, 32)],
            })
            .expect("recv");
        }
        send(a, 11, &ms, 32);
        send(a, 12, &ms, 32);
        // Nobody takes the first completion before the second arrives.
        let devs = [&a.dev, &b.dev];
        assert_eq!(wait_ev(&devs, &b.rec), Got::Broken);
        assert_eq!(b.qp.state(), QpState::Closed);
        // b reset the connection: its peer sees it disconnect.
        assert_eq!(wait_ev(&devs, &a.rec), Got::Disconnected);
        let w = try_wc(&b.cq).expect("the completion that fit");
        assert_eq!((w.wr_id, w.status), (1, WcStatus::Success));
        assert!(try_wc(&b.cq).is_none(), "the second was lost");
        for id in [11, 12] {
            assert_eq!(wait_wc(&devs, &a.cq).wr_id, id);
        }
        assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
    }

    /// A look at a queue pair (its state, address, outstanding receives)
    /// never runs the engine for what the progress thread handed over
    /// while the lock was held: the EP asks for its local address while it
    /// holds its own lock inside ESTABLISHED, and the peer's close run
    /// there re-entered the EP and deadlocked (ctests/consumer/fork_servers,
    /// 1 run in 8). The run goes back to the progress thread instead.
    #[test]
    fn a_look_hands_a_run_back_to_the_progress_thread() {
        struct Locked {
            m: Mutex<()>,
            owner: std::thread::ThreadId,
            reentered: AtomicBool,
            rec: Rec,
        }
        impl CmHandler for Locked {
            fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
                if std::thread::current().id() == self.owner
                    && matches!(self.m.try_lock(), Err(std::sync::TryLockError::WouldBlock))
                {
                    self.reentered.store(true, Ordering::SeqCst);
                }
                self.rec.event(qp, ev);
            }
        }
        let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let cm = Arc::new(Locked {
            m: Mutex::new(()),
            owner: std::thread::current().id(),
            reentered: AtomicBool::new(false),
            rec: Rec::default(),
        });
        let pd = da.alloc_pd().expect("pd");
        let cq = da.create_cq(16).expect("cq");
        let qp = da
            .create_qp(QpConfig {
                pd,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                srq: None,
                send_depth: 4,
                recv_depth: 4,
                max_send_sge: 1,
                max_recv_sge: 1,
                ird: 1,
                ord: 1,
                cm: cm.clone(),
            })
            .expect("qp");
        let b = side(&db);
        qp.connect(SocketAddr::new(LO, 0), l.port(), b"", DEADLINE)
            .expect("connect");
        let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
            panic!("request")
        };
        db.accept(id, &*b.qp, b"").expect("accept");
        assert_eq!(wait_ev(&[&da, &db], &cm.rec), Got::Established(vec![]));
        assert!(matches!(wait_ev(&[&da, &db], &b.rec), Got::Established(_)));

        // An application thread holds the queue pair when the peer goes:
        // the progress thread hands the run over to it.
        let iq = da.find_qp(qp.num()).expect("the queue pair");
        let held = lock(&iq.inner);
        b.qp.disconnect(false).expect("disconnect");
        let end = Instant::now() + DEADLINE;
        while !iq.kick.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < end,
                "the progress thread never handed the run over"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held); // (the raw lock: nothing runs)

        {
            let _caller = lock(&cm.m);
            let _ = qp.local_addr();
            let _ = qp.state();
            let _ = qp.recv_outstanding();
        }
        assert!(
            !cm.reentered.load(Ordering::SeqCst),
            "a look delivered a connection event into its caller's lock"
        );
        // The progress thread delivers it, with no call here.
        let end = Instant::now() + DEADLINE;
        while !lock(&cm.rec.0).contains(&Got::Disconnected) {
            assert!(Instant::now() < end, "the handed-back run never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
