//! Queue-pair helpers for the integration tests of the iWARP device (one
//! module for every test file that builds queue pairs).
//!
//! - [`Got`] / [`Rec`]: a connection event, owned, and a connection-event
//!   handler that records every event (with the queue pair it is about).
//! - [`wait_for`] and the waits built on it ([`spin`], [`wait_ev`],
//!   [`wait_wc`], [`wait_ok`], [`settle`], …): every wait drives the devices
//!   it is given itself ([`Device::progress`]; polling a CQ drives its
//!   queue pairs too) instead of leaving that to the background progress
//!   thread, and gives up with a panic naming what it waited for at a
//!   deadline ([`DEADLINE`] unless the caller gives one).
//! - [`Side`] / [`Pair`]: a queue pair on its device (its own send and
//!   receive CQs, or one CQ for both: [`Side::one_cq`]), and two of them
//!   connected (optionally through a [`Tap`]).
//! - [`Mem`] / [`Scatter`]: registered memory the test only touches through
//!   a raw pointer (the device writes into it behind Rust's back), and a
//!   scatter list of elements of different sizes separated by guard bytes;
//!   [`Side::reg`] and [`sge`] for a caller's own buffer; [`pattern`].
//! - [`Tap`]: a TCP relay between the two devices that parses the byte
//!   stream (MPA frames, then FPDUs) in each direction: FPDU sizes and CRC
//!   fields, checked independently with `crc32c`. It can advertise a small
//!   TCP MSS to both devices ([`tcp_mss`] reads a socket's).
#![allow(dead_code)] // shared by test files; each uses part of it
#![allow(unsafe_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use udapl::transport::api::{
    Access, CmEvent, CmHandler, CompletionQueue, Device, Listener, MemoryRegion, PdId, QpConfig,
    QpNum, QueuePair, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus,
};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

pub const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The longest any single wait may take (unless the caller gives a limit).
pub const DEADLINE: Duration = Duration::from_secs(20);
/// Every right a registration can have.
pub const ALL: Access = Access::LOCAL_READ
    .union(Access::LOCAL_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ───────────────────────────── connection events ─────────────────────────────

/// A connection request, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub remote: SocketAddr,
    pub local: SocketAddr,
    pub private_data: Vec<u8>,
}

/// A connection event, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Got {
    Request(Request),
    Established(Vec<u8>),
    Rejected(Vec<u8>),
    Unreachable,
    TimedOut,
    AcceptFailed,
    Disconnected,
    Broken,
}

/// Records every connection event, in arrival order, with the queue pair
/// it is about.
#[derive(Default)]
pub struct Rec(Mutex<Vec<(Option<QpNum>, Got)>>);

impl CmHandler for Rec {
    fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        let g = match ev {
            CmEvent::ConnectRequest {
                request,
                remote,
                local,
                private_data,
                ..
            } => Got::Request(Request {
                id: request,
                remote,
                local,
                private_data: private_data.to_vec(),
            }),
            CmEvent::Established { private_data } => Got::Established(private_data.to_vec()),
            CmEvent::Rejected { private_data } => Got::Rejected(private_data.to_vec()),
            CmEvent::Unreachable | CmEvent::Refused => Got::Unreachable,
            CmEvent::TimedOut => Got::TimedOut,
            CmEvent::AcceptFailed => Got::AcceptFailed,
            CmEvent::Disconnected => Got::Disconnected,
            CmEvent::Broken => Got::Broken,
        };
        lock(&self.0).push((qp, g));
    }
}

impl Rec {
    /// Every event so far (removed).
    pub fn take(&self) -> Vec<Got> {
        std::mem::take(&mut *lock(&self.0))
            .into_iter()
            .map(|(_, g)| g)
            .collect()
    }

    /// Every event so far with its queue pair (removed).
    pub fn take_all(&self) -> Vec<(Option<QpNum>, Got)> {
        std::mem::take(&mut *lock(&self.0))
    }

    /// Every event so far (kept).
    pub fn peek(&self) -> Vec<Got> {
        lock(&self.0).iter().map(|(_, g)| g.clone()).collect()
    }

    /// Removes and returns the oldest event, if any.
    pub fn pop(&self) -> Option<Got> {
        let mut v = lock(&self.0);
        (!v.is_empty()).then(|| v.remove(0).1)
    }

    pub fn len(&self) -> usize {
        lock(&self.0).len()
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

// ───────────────────────────── progress ─────────────────────────────

/// The one wait loop: calls `f` until it gives a value, driving every
/// device of `devs` in between (yielding the CPU when none of them had
/// anything to do); panics naming `what` after `limit`.
pub fn wait_for<T>(
    devs: &[&Arc<IwarpDevice>],
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "deadline ({limit:?}) waiting for {what}"
        );
        let mut any = false;
        for d in devs {
            any |= d.progress();
        }
        if !any {
            std::thread::yield_now();
        }
    }
}

/// Drives `devs` until `done` holds; panics with `what` after [`DEADLINE`].
pub fn spin(devs: &[&Arc<IwarpDevice>], what: &str, done: impl FnMut() -> bool) {
    spin_for(devs, what, DEADLINE, done);
}

/// [`spin`] with its own deadline.
pub fn spin_for(
    devs: &[&Arc<IwarpDevice>],
    what: &str,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) {
    wait_for(devs, what, limit, || done().then_some(()));
}

/// Drives `devs` for `d` (no condition), calling `each` every round.
pub fn drive_for(devs: &[&Arc<IwarpDevice>], d: Duration, mut each: impl FnMut()) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        for dev in devs {
            dev.progress();
        }
        each();
    }
}

/// Drives `devs` until nothing has happened on any of them for `quiet`
/// (or panics after [`DEADLINE`]).
pub fn quiesce(devs: &[&Arc<IwarpDevice>], quiet: Duration) {
    let end = Instant::now() + DEADLINE;
    let mut calm_since = Instant::now();
    loop {
        let mut any = false;
        for d in devs {
            any |= d.progress();
        }
        let now = Instant::now();
        if any {
            calm_since = now;
        } else if now - calm_since >= quiet {
            return;
        }
        assert!(now < end, "deadline waiting for the devices to go quiet");
    }
}

/// Drives `devs` until more than 50 rounds in a row found nothing to do on
/// any of them (a closed connection finishing), within [`DEADLINE`].
pub fn settle(devs: &[&Arc<IwarpDevice>], what: &str) {
    let mut idle = 0;
    spin(devs, what, || {
        let mut any = false;
        for d in devs {
            any |= d.progress();
        }
        idle = if any { 0 } else { idle + 1 };
        idle > 50
    });
}

/// One completion, if the queue has one (polling drives its engines).
pub fn poll_one(cq: &Arc<dyn CompletionQueue>) -> Option<Wc> {
    let mut out = [Wc::BLANK];
    (cq.poll(&mut out) == 1).then_some(out[0])
}

/// The next completion of `cq`, driving `devs` meanwhile.
pub fn wait_wc(devs: &[&Arc<IwarpDevice>], cq: &Arc<dyn CompletionQueue>, what: &str) -> Wc {
    wait_for(devs, what, DEADLINE, || poll_one(cq))
}

/// Waits for the next completion of `cq`, asserts it is a successful `op`
/// of `wr_id`, and returns its byte count.
pub fn wait_ok(
    devs: &[&Arc<IwarpDevice>],
    cq: &Arc<dyn CompletionQueue>,
    wr_id: u64,
    op: WcOp,
    what: &str,
) -> u64 {
    let w = wait_wc(devs, cq, what);
    assert_eq!(
        (w.wr_id, w.status, w.op),
        (wr_id, WcStatus::Success, op),
        "{what}: completion {w:?}"
    );
    w.byte_len
}

/// The next `n` completions of `cq`.
pub fn wait_wcs(
    devs: &[&Arc<IwarpDevice>],
    cq: &Arc<dyn CompletionQueue>,
    n: usize,
    what: &str,
) -> Vec<Wc> {
    let mut v = Vec::with_capacity(n);
    spin(devs, what, || {
        while v.len() < n {
            match poll_one(cq) {
                Some(w) => v.push(w),
                None => break,
            }
        }
        v.len() == n
    });
    v
}

/// Drives `devs` for `d` and asserts `cq` produced nothing meanwhile.
pub fn assert_no_wc(devs: &[&Arc<IwarpDevice>], cq: &Arc<dyn CompletionQueue>, d: Duration) {
    drive_for(devs, d, || {
        if let Some(w) = poll_one(cq) {
            panic!("unexpected completion {w:?}");
        }
    });
}

/// The next event `rec` records, driving `devs` meanwhile.
pub fn wait_ev(devs: &[&Arc<IwarpDevice>], rec: &Rec, what: &str) -> Got {
    wait_for(devs, what, DEADLINE, || rec.pop())
}

/// The next event of a listener's `rec`, driving `devs`; panics unless it
/// is a connection request.
pub fn wait_request(devs: &[&Arc<IwarpDevice>], rec: &Rec, what: &str) -> Request {
    match wait_ev(devs, rec, what) {
        Got::Request(r) => r,
        other => panic!("{what}: the listener got {other:?}, not a request"),
    }
}

/// A completion, spelled out (for exact comparisons).
pub fn wc(wr_id: u64, status: WcStatus, op: WcOp, byte_len: u64, qp: QpNum) -> Wc {
    Wc {
        wr_id,
        ctx: 0,
        implicit: 0,
        status,
        op,
        byte_len,
        qp,
        solicited: false,
    }
}

// ───────────────────────────── queue pairs ─────────────────────────────

/// How a test's queue pair is built.
#[derive(Clone, Copy, Debug)]
pub struct QpOpts {
    pub send_depth: u32,
    pub recv_depth: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub ird: u32,
    pub ord: u32,
    pub cq_depth: u32,
}

impl Default for QpOpts {
    fn default() -> Self {
        QpOpts {
            send_depth: 64,
            recv_depth: 64,
            max_send_sge: 8,
            max_recv_sge: 8,
            ird: 4,
            ord: 4,
            cq_depth: 512,
        }
    }
}

impl QpOpts {
    /// The wire tests' queue pair: `ird`/`ord` inbound/outbound reads, 64
    /// deep, 4 scatter elements each way, a 256-entry CQ.
    pub fn reads(ird: u32, ord: u32) -> QpOpts {
        QpOpts {
            max_send_sge: 4,
            max_recv_sge: 4,
            ird,
            ord,
            cq_depth: 256,
            ..QpOpts::default()
        }
    }
}

/// A queue pair on its device, with its PD, send and receive CQs (possibly
/// one CQ for both: [`Side::one_cq`], [`Side::cq`]) and event record.
pub struct Side {
    pub dev: Arc<IwarpDevice>,
    pub pd: PdId,
    pub scq: Arc<dyn CompletionQueue>,
    pub rcq: Arc<dyn CompletionQueue>,
    pub qp: Arc<dyn QueuePair>,
    pub rec: Arc<Rec>,
}

impl Side {
    /// A queue pair with its own PD and its own send and receive CQs.
    pub fn new(dev: &Arc<IwarpDevice>, o: QpOpts) -> Side {
        let pd = dev.alloc_pd().expect("alloc_pd");
        let scq = dev.create_cq(o.cq_depth).expect("send cq");
        let rcq = dev.create_cq(o.cq_depth).expect("recv cq");
        Side::with_cqs(dev, pd, scq, rcq, o)
    }

    /// A queue pair with its own PD whose sends and receives complete on
    /// one CQ ([`Side::cq`]).
    pub fn one_cq(dev: &Arc<IwarpDevice>, o: QpOpts) -> Side {
        let pd = dev.alloc_pd().expect("alloc_pd");
        let cq = dev.create_cq(o.cq_depth).expect("create_cq");
        Side::with_cqs(dev, pd, cq.clone(), cq, o)
    }

    /// A queue pair in `pd` on the given CQs.
    pub fn with_cqs(
        dev: &Arc<IwarpDevice>,
        pd: PdId,
        scq: Arc<dyn CompletionQueue>,
        rcq: Arc<dyn CompletionQueue>,
        o: QpOpts,
    ) -> Side {
        let rec = Arc::new(Rec::default());
        let qp = dev
            .create_qp(QpConfig {
                pd,
                send_cq: scq.clone(),
                recv_cq: rcq.clone(),
                srq: None,
                send_depth: o.send_depth,
                recv_depth: o.recv_depth,
                max_send_sge: o.max_send_sge,
                max_recv_sge: o.max_recv_sge,
                ird: o.ird,
                ord: o.ord,
                cm: rec.clone(),
            })
            .expect("create_qp");
        Side {
            dev: dev.clone(),
            pd,
            scq,
            rcq,
            qp,
            rec,
        }
    }

    pub fn num(&self) -> QpNum {
        self.qp.num()
    }

    /// The one CQ of a side whose sends and receives complete on the same
    /// queue ([`Side::one_cq`]).
    pub fn cq(&self) -> &Arc<dyn CompletionQueue> {
        assert!(
            std::ptr::addr_eq(Arc::as_ptr(&self.scq), Arc::as_ptr(&self.rcq)),
            "this side has separate send and receive CQs"
        );
        &self.scq
    }

    /// Posts a signalled, unfenced send work request.
    pub fn post_send(&self, wr_id: u64, op: SendOp, sgl: &[Sge]) {
        self.qp
            .post_send(&SendWr {
                wr_id,
                ctx: 0,
                op,
                sgl,
                signaled: true,
                fence: false,
            })
            .unwrap_or_else(|e| panic!("post_send {wr_id}: {e:?}"));
    }

    pub fn post_recv(&self, wr_id: u64, sgl: &[Sge]) {
        self.qp
            .post_recv(&RecvWr { wr_id, ctx: 0, sgl })
            .unwrap_or_else(|e| panic!("post_recv {wr_id}: {e:?}"));
    }

    /// Registers the caller's `buf` in this side's PD with every right.
    /// (The device writes into it behind Rust's back: see [`Mem`] for
    /// memory the test only touches through copies.)
    pub fn reg(&self, buf: &[u8]) -> MemoryRegion {
        self.dev
            .register(self.pd, buf.as_ptr() as u64, buf.len() as u64, ALL)
            .expect("register")
    }
}

/// Two connected queue pairs: `a` connected actively to `b`'s listener.
pub struct Pair {
    pub a: Side,
    pub b: Side,
    pub listener: Arc<dyn Listener>,
    pub lrec: Arc<Rec>,
}

/// Private data of the test connections' Request and Reply.
pub const REQ_PD: &[u8] = b"request from a";
pub const REP_PD: &[u8] = b"reply from b";

impl Pair {
    /// Two default devices, default queue pairs.
    pub fn new() -> Pair {
        Pair::with(
            DeviceOptions::default(),
            DeviceOptions::default(),
            QpOpts::default(),
            QpOpts::default(),
        )
    }

    /// Devices opened with `da`/`db`, queue pairs built with `qa`/`qb`.
    pub fn with(da: DeviceOptions, db: DeviceOptions, qa: QpOpts, qb: QpOpts) -> Pair {
        Pair::build(da, db, qa, qb, |port| (port, None)).0
    }

    /// Like [`Pair::with`], `a` reaching `b` through a [`Tap`] that
    /// advertises `mss` (if any) to both devices.
    pub fn tapped(
        da: DeviceOptions,
        db: DeviceOptions,
        qa: QpOpts,
        qb: QpOpts,
        mss: Option<u32>,
    ) -> (Pair, Tap) {
        let (p, tap) = Pair::build(da, db, qa, qb, |port| {
            let tap = Tap::start(port, mss);
            (tap.port(), Some(tap))
        });
        (p, tap.expect("tap"))
    }

    fn build(
        da: DeviceOptions,
        db: DeviceOptions,
        qa: QpOpts,
        qb: QpOpts,
        route: impl FnOnce(u16) -> (u16, Option<Tap>),
    ) -> (Pair, Option<Tap>) {
        let deva = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, da);
        let devb = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, db);
        let a = Side::new(&deva, qa);
        let b = Side::new(&devb, qb);
        let lrec = Arc::new(Rec::default());
        let listener = devb.listen(0, lrec.clone()).expect("listen");
        let (port, tap) = route(listener.port());
        a.qp.connect(SocketAddr::new(LO, 0), port, REQ_PD, DEADLINE)
            .expect("connect");
        let devs = [&deva, &devb];
        let r = wait_request(&devs, &lrec, "connect request");
        assert_eq!(r.private_data, REQ_PD);
        devb.accept(r.id, &*b.qp, REP_PD).expect("accept");
        assert_eq!(
            wait_ev(&devs, &a.rec, "established (active)"),
            Got::Established(REP_PD.to_vec())
        );
        assert_eq!(
            wait_ev(&devs, &b.rec, "established (passive)"),
            Got::Established(REQ_PD.to_vec())
        );
        (
            Pair {
                a,
                b,
                listener,
                lrec,
            },
            tap,
        )
    }

    pub fn devs(&self) -> [&Arc<IwarpDevice>; 2] {
        [&self.a.dev, &self.b.dev]
    }

    pub fn spin(&self, what: &str, done: impl FnMut() -> bool) {
        spin(&self.devs(), what, done)
    }

    pub fn wait_wc(&self, cq: &Arc<dyn CompletionQueue>, what: &str) -> Wc {
        wait_wc(&self.devs(), cq, what)
    }

    pub fn wait_wcs(&self, cq: &Arc<dyn CompletionQueue>, n: usize, what: &str) -> Vec<Wc> {
        wait_wcs(&self.devs(), cq, n, what)
    }

    pub fn wait_ev(&self, rec: &Rec, what: &str) -> Got {
        wait_ev(&self.devs(), rec, what)
    }
}

impl Default for Pair {
    fn default() -> Self {
        Pair::new()
    }
}

// ───────────────────────────── memory ─────────────────────────────

/// Bytes `(i·13 + seed) ^ (i >> 8)` (mod 256): deterministic test data
/// whose shifts are detectable (by any distance that is not a multiple of
/// 64 Ki).
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) ^ ((i >> 8) as u8))
        .collect()
}

/// The first `len` bytes of `mr` as a scatter element.
pub fn sge(mr: &MemoryRegion, len: usize) -> Sge {
    Sge {
        addr: mr.addr,
        len: len as u64,
        lkey: mr.lkey,
    }
}

/// Registered memory (every right). The test reads and writes it only by
/// copying through the raw pointer: the device places data into it from
/// inside `progress`, so no Rust reference to it is held across calls.
pub struct Mem {
    ptr: *mut u8,
    len: usize,
    pub mr: MemoryRegion,
}

// SAFETY: the allocation is owned by `Mem`; access goes through copies.
unsafe impl Send for Mem {}

impl Mem {
    /// `len` bytes of `fill`, registered on `side`'s device and PD.
    pub fn new(side: &Side, len: usize, fill: u8) -> Mem {
        Mem::on(&side.dev, side.pd, len, fill, ALL)
    }

    /// `len` bytes of `fill`, registered with `access`.
    pub fn on(dev: &Arc<IwarpDevice>, pd: PdId, len: usize, fill: u8, access: Access) -> Mem {
        let b: Box<[u8]> = vec![fill; len.max(1)].into_boxed_slice();
        let ptr = Box::into_raw(b).cast::<u8>();
        let mr = dev
            .register(pd, ptr as u64, len as u64, access)
            .expect("register");
        Mem { ptr, len, mr }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn addr(&self, off: usize) -> u64 {
        self.ptr as u64 + off as u64
    }

    /// A scatter element `[off, off + len)` of this memory.
    pub fn sge(&self, off: usize, len: usize) -> Sge {
        Sge {
            addr: self.addr(off),
            len: len as u64,
            lkey: self.mr.lkey,
        }
    }

    /// A copy of `[off, off + len)`.
    pub fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len);
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live allocation; `v` is distinct.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), v.as_mut_ptr(), len) };
        v
    }

    pub fn read_all(&self) -> Vec<u8> {
        self.read(0, self.len)
    }

    /// Copies `data` to `off`.
    pub fn write(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len);
        // SAFETY: in bounds of the live allocation; `data` is distinct.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) };
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` of a slice of this length.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr,
                self.len.max(1),
            )))
        };
    }
}

/// The byte guard gaps hold.
pub const GUARD: u8 = 0xEE;

/// A scatter list over one registered buffer: element `i` is `lens[i]`
/// bytes; elements start at odd offsets and are separated by gaps of
/// [`GUARD`] bytes that must never change.
pub struct Scatter {
    pub mem: Mem,
    pub sges: Vec<Sge>,
    ranges: Vec<(usize, usize)>,
}

impl Scatter {
    /// Elements of `lens` bytes, each initially `fill`.
    pub fn new(side: &Side, lens: &[usize], fill: u8) -> Scatter {
        let mut ranges = Vec::with_capacity(lens.len());
        let mut off = 3;
        for (i, &l) in lens.iter().enumerate() {
            ranges.push((off, l));
            off += l + 5 + 2 * i;
        }
        let mem = Mem::new(side, off, GUARD);
        for &(o, l) in &ranges {
            mem.write(o, &vec![fill; l]);
        }
        let sges = ranges.iter().map(|&(o, l)| mem.sge(o, l)).collect();
        Scatter { mem, sges, ranges }
    }

    pub fn total(&self) -> usize {
        self.ranges.iter().map(|r| r.1).sum()
    }

    /// Writes `data` across the elements in order.
    pub fn fill(&self, data: &[u8]) {
        assert_eq!(data.len(), self.total());
        let mut at = 0;
        for &(o, l) in &self.ranges {
            self.mem.write(o, &data[at..at + l]);
            at += l;
        }
    }

    /// The elements' contents, concatenated.
    pub fn gather(&self) -> Vec<u8> {
        let all = self.mem.read_all();
        let mut v = Vec::with_capacity(self.total());
        for &(o, l) in &self.ranges {
            v.extend_from_slice(&all[o..o + l]);
        }
        v
    }

    /// Whether every byte outside the elements is still [`GUARD`].
    pub fn guards_intact(&self) -> bool {
        let all = self.mem.read_all();
        let mut inside = vec![false; all.len()];
        for &(o, l) in &self.ranges {
            inside[o..o + l].iter_mut().for_each(|b| *b = true);
        }
        all.iter().zip(&inside).all(|(&b, &ins)| ins || b == GUARD)
    }
}

// ───────────────────────────── tap ─────────────────────────────

/// What a [`Tap`] saw in one direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    /// Flags byte and revision of the MPA frame (Request or Reply).
    pub mpa_flags: Option<u8>,
    pub mpa_revision: Option<u8>,
    /// FPDUs seen, and the largest (whole FPDU: length field, ULPDU, pad,
    /// CRC).
    pub fpdus: u64,
    pub max_fpdu: usize,
    /// FPDUs whose CRC field was zero, matched the CRC32c of the FPDU, or
    /// was neither.
    pub crc_zero: u64,
    pub crc_good: u64,
    pub crc_bad: u64,
    pub bytes: u64,
}

/// MPA frame flags.
pub const MPA_CRC: u8 = 0x40;

/// Parses one direction of a connection: one MPA frame, then FPDUs.
struct StreamParser {
    buf: Vec<u8>,
    at: usize,
    mpa_done: bool,
    stats: Arc<Mutex<DirStats>>,
}

impl StreamParser {
    fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        let mut st = lock(&self.stats);
        st.bytes += data.len() as u64;
        loop {
            let b = &self.buf[self.at..];
            if !self.mpa_done {
                if b.len() < 20 {
                    break;
                }
                let pdl = usize::from(u16::from_be_bytes([b[18], b[19]]));
                if b.len() < 20 + pdl {
                    break;
                }
                st.mpa_flags = Some(b[16]);
                st.mpa_revision = Some(b[17]);
                self.at += 20 + pdl;
                self.mpa_done = true;
                continue;
            }
            if b.len() < 2 {
                break;
            }
            let ulpdu = usize::from(u16::from_be_bytes([b[0], b[1]]));
            let body = (2 + ulpdu + 3) & !3;
            let total = body + 4;
            if b.len() < total {
                break;
            }
            let field = u32::from_le_bytes([b[body], b[body + 1], b[body + 2], b[body + 3]]);
            if field == 0 {
                st.crc_zero += 1;
            } else if field == crc32c::crc32c(&b[..body]) {
                st.crc_good += 1;
            } else {
                st.crc_bad += 1;
            }
            st.fpdus += 1;
            st.max_fpdu = st.max_fpdu.max(total);
            self.at += total;
        }
        if self.at > (1 << 16) {
            self.buf.drain(..self.at);
            self.at = 0;
        }
    }
}

/// A TCP relay on loopback between an initiator and a listening port,
/// parsing both directions. Threads end when the connection closes.
pub struct Tap {
    port: u16,
    /// Initiator → responder, and responder → initiator.
    pub fwd: Arc<Mutex<DirStats>>,
    pub back: Arc<Mutex<DirStats>>,
}

impl Tap {
    /// Listens on a free loopback port; the first connection is relayed to
    /// `target`. With `mss`, both TCP connections are set up with that MSS
    /// (`TCP_MAXSEG` before listen/connect: announced in the SYN and
    /// SYN-ACK, so both devices' sockets get it).
    pub fn start(target: u16, mss: Option<u32>) -> Tap {
        let l = listen_with_mss(mss);
        let port = l.local_addr().expect("tap address").port();
        let fwd = Arc::new(Mutex::new(DirStats::default()));
        let back = Arc::new(Mutex::new(DirStats::default()));
        let (f, b) = (fwd.clone(), back.clone());
        std::thread::spawn(move || {
            l.set_nonblocking(true).expect("nonblocking");
            let end = Instant::now() + DEADLINE;
            let down = loop {
                match l.accept() {
                    Ok((s, _)) => break s,
                    Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < end => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(_) => return,
                }
            };
            down.set_nonblocking(false).expect("blocking");
            let up = connect_with_mss(target, mss);
            let _ = down.set_nodelay(true);
            let _ = up.set_nodelay(true);
            let (d2, u2) = (
                down.try_clone().expect("clone"),
                up.try_clone().expect("clone"),
            );
            std::thread::spawn(move || relay(d2, u2, f));
            relay(up, down, b);
        });
        Tap { port, fwd, back }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn fwd(&self) -> DirStats {
        lock(&self.fwd).clone()
    }

    pub fn back(&self) -> DirStats {
        lock(&self.back).clone()
    }
}

/// Copies `from` → `to`, parsing, until either side closes.
fn relay(mut from: TcpStream, mut to: TcpStream, stats: Arc<Mutex<DirStats>>) {
    let _ = from.set_read_timeout(Some(Duration::from_secs(60)));
    let mut p = StreamParser {
        buf: Vec::new(),
        at: 0,
        mpa_done: false,
        stats,
    };
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                p.feed(&buf[..n]);
                if to.write_all(&buf[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Both);
                    return;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

fn sockaddr_lo(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    }
}

/// A TCP socket with `TCP_MAXSEG` set (before any connection).
fn socket_with_mss(mss: u32) -> i32 {
    // SAFETY: plain socket calls on a descriptor this function owns; the
    // option value lives across the call and its size is passed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let v = mss as libc::c_int;
        let r = libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "TCP_MAXSEG: {}", std::io::Error::last_os_error());
        fd
    }
}

/// A listener on a free loopback port, announcing `mss` if given.
pub fn listen_with_mss(mss: Option<u32>) -> TcpListener {
    let Some(mss) = mss else {
        return TcpListener::bind((LO, 0)).expect("bind");
    };
    let fd = socket_with_mss(mss);
    let sa = sockaddr_lo(0);
    // SAFETY: `fd` is ours; the address is initialised and sized.
    unsafe {
        let r = libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "bind: {}", std::io::Error::last_os_error());
        assert_eq!(libc::listen(fd, 16), 0, "listen");
        TcpListener::from_raw_fd(fd)
    }
}

/// A blocking connection to loopback `port`, announcing `mss` if given.
pub fn connect_with_mss(port: u16, mss: Option<u32>) -> TcpStream {
    let Some(mss) = mss else {
        return TcpStream::connect((LO, port)).expect("connect");
    };
    let fd = socket_with_mss(mss);
    let sa = sockaddr_lo(port);
    // SAFETY: `fd` is ours; the address is initialised and sized.
    unsafe {
        let r = libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// The TCP MSS of a connected socket.
pub fn tcp_mss(s: &TcpStream) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes and `len` is its size.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0);
    v as usize
}
