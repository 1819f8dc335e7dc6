//! Queue-pair-level benchmark (`make qp-bench`, part of `make bench`): the
//! TCP transport's queue pairs beside raw TCP sockets over loopback, in a
//! busy-polling and a sleeping style: ping-pong latency (also with the
//! passive side in a second process, `procs`, the harness shape of
//! `bench_ep`), RDMA Write / Read bandwidth, 64 B message rate and
//! connection setup rate; `qp_bench lockstep N` counts per round trip.
//! What each pattern does and the results: docs/benchmarks.md.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use udapl::transport::api::{
    Access, CmEvent, CmHandler, CompletionQueue, Device, Listener, MemoryRegion, PdId, QpConfig,
    QpNum, QueuePair, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus,
};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

type R<T> = Result<T, String>;

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Longest any single wait may take.
const WAIT: Duration = Duration::from_secs(10);
/// Outstanding work requests in the windowed patterns.
const WINDOW: usize = 8;

// ---------------------------------------------------------------- helpers

/// A connection event as the benchmark cares about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnEvent {
    Request(u64),
    Established,
    Down,
    Failed,
}

/// The connection events a device reported, in order, by queue pair.
#[derive(Default)]
struct ConnEventLog(Mutex<Vec<(Option<QpNum>, ConnEvent)>>);

impl CmHandler for ConnEventLog {
    fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        let e = match ev {
            CmEvent::ConnectRequest { request, .. } => ConnEvent::Request(request),
            CmEvent::Established { .. } => ConnEvent::Established,
            CmEvent::Disconnected | CmEvent::Broken => ConnEvent::Down,
            _ => ConnEvent::Failed,
        };
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((qp, e));
    }
}

impl ConnEventLog {
    /// Removes and returns the first event for `qp` matching `f`.
    fn take(&self, qp: Option<QpNum>, f: impl Fn(ConnEvent) -> bool) -> R<Option<ConnEvent>> {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = v.iter().position(|&(q, e)| q == qp && f(e)) {
            return Ok(Some(v.remove(i).1));
        }
        if let Some(&(_, e)) = v.iter().find(|&&(q, e)| q == qp && e == ConnEvent::Failed) {
            return Err(format!("connection event {e:?}"));
        }
        Ok(None)
    }
}

/// Two devices of this process, each with its protection domain and event
/// log, and a listener on the second.
struct DevicePair {
    a: Arc<IwarpDevice>,
    b: Arc<IwarpDevice>,
    pa: PdId,
    pb: PdId,
    ra: Arc<ConnEventLog>,
    rb: Arc<ConnEventLog>,
    listener: Arc<dyn Listener>,
}

impl DevicePair {
    fn open() -> R<DevicePair> {
        // QP_BENCH_ACK=local: iWARP's local completion instead of
        // acknowledging Sends and Writes with zero-length reads (what the
        // acknowledgements cost is the difference).
        let opts = DeviceOptions {
            local_completion: local_completion(),
            ..DeviceOptions::default()
        };
        let a = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, opts);
        let b = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, opts);
        let pa = a.alloc_pd().map_err(|e| format!("alloc_pd: {e:?}"))?;
        let pb = b.alloc_pd().map_err(|e| format!("alloc_pd: {e:?}"))?;
        let ra = Arc::new(ConnEventLog::default());
        let rb = Arc::new(ConnEventLog::default());
        let listener = b
            .listen(0, rb.clone())
            .map_err(|e| format!("listen: {e:?}"))?;
        Ok(DevicePair {
            a,
            b,
            pa,
            pb,
            ra,
            rb,
            listener,
        })
    }

    /// Drives both devices until `f` says done (or errs), within [`WAIT`].
    fn spin<T>(&self, what: &str, mut f: impl FnMut() -> R<Option<T>>) -> R<T> {
        let end = Instant::now() + WAIT;
        loop {
            if let Some(t) = f()? {
                return Ok(t);
            }
            self.a.progress();
            self.b.progress();
            if Instant::now() > end {
                return Err(format!("timed out waiting for {what}"));
            }
        }
    }

    fn qp(
        dev: &Arc<IwarpDevice>,
        pd: PdId,
        cq: &Arc<dyn CompletionQueue>,
        rec: &Arc<ConnEventLog>,
    ) -> R<Arc<dyn QueuePair>> {
        dev.create_qp(QpConfig {
            pd,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            srq: None,
            send_depth: 128,
            recv_depth: 128,
            max_send_sge: 2,
            max_recv_sge: 2,
            ird: 16,
            ord: 16,
            cm: rec.clone(),
        })
        .map_err(|e| format!("create_qp: {e:?}"))
    }

    /// Creates a queue pair on each device (on the given CQs) and connects
    /// them; returns (active, passive).
    fn connect(
        &self,
        ca: &Arc<dyn CompletionQueue>,
        cb: &Arc<dyn CompletionQueue>,
        before_accept: impl FnOnce(&dyn QueuePair) -> R<()>,
    ) -> R<(Arc<dyn QueuePair>, Arc<dyn QueuePair>)> {
        let qa = Self::qp(&self.a, self.pa, ca, &self.ra)?;
        let qb = Self::qp(&self.b, self.pb, cb, &self.rb)?;
        before_accept(&*qb)?;
        qa.connect(SocketAddr::new(LO, 0), self.listener.port(), b"", WAIT)
            .map_err(|e| format!("connect: {e:?}"))?;
        let req = self.spin("connection request", || {
            self.rb.take(None, |e| matches!(e, ConnEvent::Request(_)))
        })?;
        let ConnEvent::Request(id) = req else {
            return Err("request".into());
        };
        self.b
            .accept(id, &*qb, b"")
            .map_err(|e| format!("accept: {e:?}"))?;
        self.spin("established (active)", || {
            self.ra
                .take(Some(qa.num()), |e| e == ConnEvent::Established)
        })?;
        self.spin("established (passive)", || {
            self.rb
                .take(Some(qb.num()), |e| e == ConnEvent::Established)
        })?;
        Ok((qa, qb))
    }

    fn reg(&self, on_a: bool, buf: &[u8]) -> R<MemoryRegion> {
        let all = Access::LOCAL_READ
            .union(Access::LOCAL_WRITE)
            .union(Access::REMOTE_READ)
            .union(Access::REMOTE_WRITE);
        let (d, pd) = if on_a {
            (&self.a, self.pa)
        } else {
            (&self.b, self.pb)
        };
        d.register(pd, buf.as_ptr() as u64, buf.len() as u64, all)
            .map_err(|e| format!("register: {e:?}"))
    }

    fn cqs(&self) -> R<(Arc<dyn CompletionQueue>, Arc<dyn CompletionQueue>)> {
        let ca = self.a.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        let cb = self.b.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        Ok((ca, cb))
    }
}

fn sge(mr: &MemoryRegion, off: usize, len: usize) -> Sge {
    Sge {
        addr: mr.addr + off as u64,
        len: len as u64,
        lkey: mr.lkey,
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed ^ (i >> 12) as u8)
        })
        .collect()
}

/// Waiting style of the current run: busy-polling, or sleeping (ours on
/// the CQ's wait descriptor after arming it, raw TCP in blocking reads).
static BLOCKING: AtomicBool = AtomicBool::new(false);

fn blocking() -> bool {
    BLOCKING.load(Ordering::Relaxed)
}

/// Polls one CQ (busy, or sleeping on it), handing out completions one at
/// a time.
struct Poller {
    cq: Arc<dyn CompletionQueue>,
    buf: [Wc; 32],
    at: usize,
    n: usize,
}

impl Poller {
    fn new(cq: &Arc<dyn CompletionQueue>) -> Poller {
        Poller {
            cq: cq.clone(),
            buf: [Wc::BLANK; 32],
            at: 0,
            n: 0,
        }
    }

    fn try_next(&mut self) -> R<Option<Wc>> {
        if self.at == self.n {
            self.n = self.cq.poll(&mut self.buf);
            self.at = 0;
            if self.n == 0 {
                return Ok(None);
            }
        }
        let wc = self.buf[self.at];
        self.at += 1;
        if wc.status != WcStatus::Success {
            return Err(format!("completion failed: {wc:?}"));
        }
        Ok(Some(wc))
    }

    fn next(&mut self) -> R<Wc> {
        let end = Instant::now() + WAIT;
        let mut spins = 0u32;
        loop {
            if let Some(wc) = self.try_next()? {
                return Ok(wc);
            }
            if blocking() {
                // Arm, look once more, then sleep until a completion is
                // signalled or data arrives for the queue pairs (which the
                // next poll turns into completions).
                self.cq.clear_notification();
                self.cq.arm(false);
                if let Some(wc) = self.try_next()? {
                    return Ok(wc);
                }
                self.cq.sleeping(true);
                let mut fds = [nix::poll::PollFd::new(
                    self.cq.wait_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                let r = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1000u16));
                self.cq.sleeping(false);
                if r.is_err() || Instant::now() > end {
                    return Err("timed out waiting for a completion".into());
                }
                continue;
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0 && Instant::now() > end {
                return Err("timed out waiting for a completion".into());
            }
        }
    }
}

fn post_send(qp: &dyn QueuePair, wr_id: u64, op: SendOp, s: Sge) -> R<()> {
    let end = Instant::now() + WAIT;
    loop {
        match qp.post_send(&SendWr {
            wr_id,
            op,
            sgl: &[s],
            signaled: true,
            fence: false,
        }) {
            Ok(()) => return Ok(()),
            Err(udapl::transport::api::PostError::QueueFull) if Instant::now() < end => {}
            Err(e) => return Err(format!("post_send: {e:?}")),
        }
    }
}

fn post_recv(qp: &dyn QueuePair, wr_id: u64, s: Sge) -> R<()> {
    qp.post_recv(&RecvWr { wr_id, sgl: &[s] })
        .map_err(|e| format!("post_recv: {e:?}"))
}

const SEND: SendOp = SendOp::Send { solicited: false };

/// Runs `fa` and `fb` on two threads started together; returns `fa`'s value.
fn two<T: Send>(
    fa: impl FnOnce(&Barrier) -> R<T> + Send,
    fb: impl FnOnce(&Barrier) -> R<()> + Send,
) -> R<T> {
    let bar = Barrier::new(2);
    std::thread::scope(|s| {
        let ha = s.spawn(|| fa(&bar));
        let hb = s.spawn(|| fb(&bar));
        let ra = ha.join().map_err(|_| "thread panicked".to_string())?;
        let rb = hb.join().map_err(|_| "thread panicked".to_string())?;
        rb?;
        ra
    })
}

// ---------------------------------------------------------------- raw TCP

fn tcp_pair() -> R<(TcpStream, TcpStream)> {
    let l = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let c = TcpStream::connect((LO, port)).map_err(|e| format!("connect: {e}"))?;
    let (s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
    for x in [&c, &s] {
        x.set_nodelay(true).map_err(|e| e.to_string())?;
        x.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
        x.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    }
    Ok((c, s))
}

/// Busy-polling `read_exact` on a non-blocking socket.
fn spin_read(mut s: &TcpStream, buf: &mut [u8]) -> R<()> {
    let end = Instant::now() + WAIT;
    let mut got = 0;
    let mut spins = 0u32;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err("tcp: end of stream".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                spins = spins.wrapping_add(1);
                if spins % 1024 == 0 && Instant::now() > end {
                    return Err("tcp: read timed out".into());
                }
            }
            Err(e) => return Err(format!("tcp read: {e}")),
        }
    }
    Ok(())
}

/// Busy-polling `write_all` on a non-blocking socket.
fn spin_write(mut s: &TcpStream, buf: &[u8]) -> R<()> {
    let end = Instant::now() + WAIT;
    let mut put = 0;
    let mut spins = 0u32;
    while put < buf.len() {
        match s.write(&buf[put..]) {
            Ok(n) => put += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                spins = spins.wrapping_add(1);
                if spins % 1024 == 0 && Instant::now() > end {
                    return Err("tcp: write timed out".into());
                }
            }
            Err(e) => return Err(format!("tcp write: {e}")),
        }
    }
    Ok(())
}

/// Ping-pong over TCP: seconds per round trip.
fn tcp_pingpong(len: usize, warm: usize, iters: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 1);
    two(
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            let mut t0 = Instant::now();
            for i in 0..warm + iters {
                if i == warm {
                    t0 = Instant::now();
                }
                spin_write(&c, &src)?;
                spin_read(&c, &mut rb)?;
                if i == 0 && rb != src {
                    return Err("tcp ping-pong: data mismatch".into());
                }
            }
            Ok(t0.elapsed().as_secs_f64() / iters as f64)
        },
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            for _ in 0..warm + iters {
                spin_read(&s, &mut rb)?;
                spin_write(&s, &rb)?;
            }
            Ok(())
        },
    )
}

/// Streams `count` × `len` bytes one way; bytes per second at the receiver.
fn tcp_stream(len: usize, count: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 2);
    let chunk = len.min(1 << 20);
    two(
        |bar| {
            // The receiver fills a buffer as large as the message, as the
            // RDMA target does (reads of at most 1 MiB at a time).
            let mut rb = vec![0u8; len];
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                let mut at = 0;
                while at < len {
                    let n = (len - at).min(chunk);
                    spin_read(&s, &mut rb[at..at + n])?;
                    at += n;
                }
                if i == 0 && rb != src {
                    return Err("tcp stream: data mismatch".into());
                }
            }
            Ok((len * count) as f64 / t0.elapsed().as_secs_f64())
        },
        |bar| {
            bar.wait();
            for _ in 0..count {
                spin_write(&c, &src)?;
            }
            Ok(())
        },
    )
}

/// `count` messages of `len` bytes, one `write` each; messages per second.
fn tcp_msg_rate(len: usize, count: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 3);
    two(
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                spin_read(&s, &mut rb)?;
                if i == 0 && rb != src {
                    return Err("tcp messages: data mismatch".into());
                }
            }
            Ok(count as f64 / t0.elapsed().as_secs_f64())
        },
        |bar| {
            bar.wait();
            for _ in 0..count {
                spin_write(&c, &src)?;
            }
            Ok(())
        },
    )
}

/// connect + one round trip + close, per second.
fn tcp_conn_rate(count: usize) -> R<f64> {
    let l = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let t0 = Instant::now();
    for _ in 0..count {
        let mut c = TcpStream::connect((LO, port)).map_err(|e| format!("connect: {e}"))?;
        let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
        c.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut b = [0u8; 8];
        c.write_all(b"ping1234").map_err(|e| e.to_string())?;
        s.read_exact(&mut b).map_err(|e| e.to_string())?;
        s.write_all(&b).map_err(|e| e.to_string())?;
        c.read_exact(&mut b).map_err(|e| e.to_string())?;
        if &b != b"ping1234" {
            return Err("tcp connections: data mismatch".into());
        }
    }
    Ok(count as f64 / t0.elapsed().as_secs_f64())
}

// ---------------------------------------------------------------- ours

/// Ping-pong over queue pairs: seconds per round trip.
fn qp_pingpong(d: &DevicePair, len: usize, warm: usize, iters: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 4);
    let (ra, rb) = (vec![0u8; len], vec![0u8; len]);
    let (ms, mra, mrb) = (d.reg(true, &src)?, d.reg(true, &ra)?, d.reg(false, &rb)?);
    let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mrb, 0, len)))?;
    let total = warm + iters;
    let per = two(
        |bar| {
            let mut p = Poller::new(&ca);
            bar.wait();
            let mut t0 = Instant::now();
            let mut unacked = 0usize;
            for i in 0..total {
                if i == warm {
                    t0 = Instant::now();
                }
                post_recv(&*qa, 1, sge(&mra, 0, len))?;
                post_send(&*qa, 2, SEND, sge(&ms, 0, len))?;
                unacked += 1;
                loop {
                    let wc = p.next()?;
                    if wc.op == WcOp::Recv {
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && ra != src {
                    return Err("qp ping-pong: data mismatch (active side)".into());
                }
                if unacked > 64 {
                    return Err("qp ping-pong: sends do not complete".into());
                }
            }
            Ok(t0.elapsed().as_secs_f64() / iters as f64)
        },
        |bar| {
            let mut p = Poller::new(&cb);
            bar.wait();
            let mut unacked = 0usize;
            for i in 0..total {
                loop {
                    let wc = p.next()?;
                    if wc.op == WcOp::Recv {
                        if wc.byte_len != len as u64 {
                            return Err("qp ping-pong: wrong length".into());
                        }
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && rb != src {
                    return Err("qp ping-pong: data mismatch (passive side)".into());
                }
                if i + 1 < total {
                    post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                }
                post_send(&*qb, 2, SEND, sge(&mrb, 0, len))?;
                unacked += 1;
                if unacked > 64 {
                    return Err("qp ping-pong: replies do not complete".into());
                }
            }
            Ok(())
        },
    )?;
    let _ = qa.disconnect(false);
    Ok(per)
}

/// Send/recv ping-pong with both queue pairs driven by the calling thread
/// in lock step (the same pattern as `bench_ep --lockstep`): a posts a
/// receive and a Send; b polls until the receive completes, posts a
/// receive and the echo; a polls until its receive completes. Loopback
/// TCP delivers inside the sender's system call, so the work per round
/// trip does not depend on timing: run under callgrind or `perf stat`
/// with two values of `n` and divide the difference.
fn qp_lockstep(d: &DevicePair, len: usize, n: usize, idle: bool) -> R<()> {
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 4);
    let (ra, rb) = (vec![0u8; len], vec![0u8; len]);
    let (ms, mra, mrb) = (d.reg(true, &src)?, d.reg(true, &ra)?, d.reg(false, &rb)?);
    let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mrb, 0, len)))?;
    let a = LockstepSide(&*qa, &ca, &ms, &mra);
    let b = LockstepSide(&*qb, &cb, &mrb, &mrb);
    // Warm-up: the progress thread still looks after freshly connected
    // queue pairs until it sees them polled.
    lockstep_warmup(&a, &b, len, LOCKSTEP_WARMUP)?;
    let t0 = Instant::now();
    let polls = lockstep_loop(&a, &b, len, n)?;
    let t = t0.elapsed().as_secs_f64();
    if ra != src || rb != src {
        return Err("lockstep: data mismatch".into());
    }
    println!(
        "lockstep QP: {n} round trips of {len} B, {:.2} poller steps per round trip, \
         {:.3} us per round trip (both sides, one thread)",
        polls as f64 / n as f64,
        t * 1e6 / n as f64
    );
    if idle {
        // The last echoes' acknowledgements, then polls of an idle CQ.
        let mut p = Poller::new(&ca);
        let end = Instant::now() + Duration::from_millis(100);
        while Instant::now() < end {
            let _ = p.try_next()?;
            cb.poll(&mut [Wc::BLANK; 4]);
        }
        let t0 = Instant::now();
        lockstep_empty(&ca, n)?;
        println!(
            "lockstep QP: {:.3} us per poll of an empty CQ",
            t0.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    let _ = qa.disconnect(false);
    Ok(())
}

/// Polls of an idle CQ (the spin of a busy poller; callgrind:
/// `--toggle-collect=qp_bench::lockstep_empty`).
#[inline(never)]
fn lockstep_empty(cq: &Arc<dyn CompletionQueue>, n: usize) -> R<()> {
    let mut buf = [Wc::BLANK; 32];
    for _ in 0..n {
        if cq.poll(&mut buf) != 0 {
            return Err("lockstep: a completion on an idle CQ".into());
        }
    }
    Ok(())
}

/// A queue pair, its CQ, and the regions it sends from and receives into.
struct LockstepSide<'a>(
    &'a dyn QueuePair,
    &'a Arc<dyn CompletionQueue>,
    &'a MemoryRegion,
    &'a MemoryRegion,
);

/// Round trips run before the measured ones.
const LOCKSTEP_WARMUP: usize = 200;

/// The warm-up round trips (not measured).
#[inline(never)]
fn lockstep_warmup(a: &LockstepSide<'_>, b: &LockstepSide<'_>, len: usize, n: usize) -> R<u64> {
    lockstep_rounds(a, b, len, n, false)
}

/// The measured loop (callgrind: `--toggle-collect=qp_bench::lockstep_loop`,
/// the exact name: a pattern would also match its closures and toggle
/// collection off inside them); returns the poller steps taken.
#[inline(never)]
fn lockstep_loop(a: &LockstepSide<'_>, b: &LockstepSide<'_>, len: usize, n: usize) -> R<u64> {
    lockstep_rounds(a, b, len, n, true)
}

/// `n` lockstep round trips; `last`: the final one leaves b without a
/// posted receive.
#[inline(always)]
fn lockstep_rounds(
    a: &LockstepSide<'_>,
    b: &LockstepSide<'_>,
    len: usize,
    n: usize,
    last: bool,
) -> R<u64> {
    let (mut pa, mut pb) = (Poller::new(a.1), Poller::new(b.1));
    let mut polls = 0u64;
    let mut recv = |p: &mut Poller| -> R<()> {
        loop {
            polls += 1;
            if let Some(wc) = p.try_next()? {
                if wc.op == WcOp::Recv {
                    return if wc.byte_len == len as u64 {
                        Ok(())
                    } else {
                        Err("lockstep: wrong length".into())
                    };
                }
            }
            if polls > 1_000_000_000 {
                return Err("lockstep: stuck".into());
            }
        }
    };
    for i in 0..n {
        post_recv(a.0, 1, sge(a.3, 0, len))?;
        post_send(a.0, 2, SEND, sge(a.2, 0, len))?;
        recv(&mut pb)?;
        if i + 1 < n || !last {
            post_recv(b.0, 1, sge(b.3, 0, len))?;
        }
        post_send(b.0, 2, SEND, sge(b.2, 0, len))?;
        recv(&mut pa)?;
    }
    Ok(polls)
}

/// Windowed RDMA Writes (or Reads) of `len` bytes, `count` of them; bytes
/// per second at the initiator. The first one is verified before timing.
fn qp_rdma(d: &DevicePair, read: bool, len: usize, count: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let (local, remote) = if read {
        (vec![0u8; len], pattern(len, 5))
    } else {
        (pattern(len, 6), vec![0u8; len])
    };
    let (ml, mr) = (d.reg(true, &local)?, d.reg(false, &remote)?);
    let (qa, _qb) = d.connect(&ca, &cb, |_| Ok(()))?;
    let op = if read {
        SendOp::RdmaRead {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        }
    } else {
        SendOp::RdmaWrite {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        }
    };
    // One verified transfer, both sides driven from this thread.
    post_send(&*qa, 0, op, sge(&ml, 0, len))?;
    let (mut pa, mut pb) = (Poller::new(&ca), Poller::new(&cb));
    let wc = d.spin("first transfer", || {
        pb.try_next()?;
        pa.try_next()
    })?;
    if wc.byte_len != len as u64 && read {
        return Err(format!("rdma read: {} bytes, want {len}", wc.byte_len));
    }
    if local_completion() && !read {
        // A locally completed Write may still be on its way.
        // (black_box: the buffer changes behind the compiler's back.)
        d.spin("written data", || {
            Ok((local == *std::hint::black_box(&remote)).then_some(()))
        })?;
    }
    if local != remote {
        return Err("rdma: data mismatch".into());
    }
    let stop = AtomicBool::new(false);
    let s0 = udapl::transport::soft::progress::stats();
    let _show = ProgressStatsReport(s0);
    two(
        |bar| {
            bar.wait();
            let r = (|| {
                let t0 = Instant::now();
                let (mut posted, mut done) = (0, 0);
                while done < count {
                    while posted < count && posted - done < WINDOW {
                        post_send(&*qa, posted as u64, op, sge(&ml, 0, len))?;
                        posted += 1;
                    }
                    pa.next()?;
                    done += 1;
                }
                Ok((len * count) as f64 / t0.elapsed().as_secs_f64())
            })();
            stop.store(true, Ordering::Release);
            r
        },
        |bar| {
            bar.wait();
            let end = Instant::now() + WAIT * 3;
            while !stop.load(Ordering::Acquire) {
                // A blocking target sleeps: the transport serves it.
                if blocking() {
                    std::thread::sleep(Duration::from_millis(1));
                } else {
                    pb.try_next()?;
                }
                if Instant::now() > end {
                    return Err("rdma target: timed out".into());
                }
            }
            Ok(())
        },
    )
}

/// Prints the progress engine's counters since the given snapshot when
/// dropped, if `QP_BENCH_STATS` is set.
struct ProgressStatsReport((u64, u64));
impl Drop for ProgressStatsReport {
    fn drop(&mut self) {
        if std::env::var_os("QP_BENCH_STATS").is_some() {
            let (r, l) = udapl::transport::soft::progress::stats();
            println!(
                "  timed part: {} runs, {} handed to a holder",
                r - self.0 .0,
                l - self.0 .1
            );
        }
    }
}

/// Sets its flag when dropped (on success and on error alike).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Windowed 64 B Sends; messages per second at the receiver.
fn qp_msg_rate(d: &DevicePair, len: usize, count: usize) -> R<f64> {
    const SLOTS: usize = 64;
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 7);
    let rbuf = vec![0u8; len * SLOTS];
    let (ms, mrb) = (d.reg(true, &src)?, d.reg(false, &rbuf)?);
    let stop = AtomicBool::new(false);
    let (qa, qb) = d.connect(&ca, &cb, |qb| {
        (0..SLOTS).try_for_each(|i| post_recv(qb, i as u64, sge(&mrb, i * len, len)))
    })?;
    two(
        |bar| {
            let mut p = Poller::new(&cb);
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                let wc = p
                    .next()
                    .map_err(|e| format!("receiver, after {i} of {count}: {e}"))?;
                let slot = wc.wr_id as usize;
                if i == 0 && rbuf[slot * len..(slot + 1) * len] != src[..] {
                    return Err("qp messages: data mismatch".into());
                }
                if i + SLOTS < count {
                    post_recv(&*qb, wc.wr_id, sge(&mrb, slot * len, len))?;
                }
            }
            let rate = count as f64 / t0.elapsed().as_secs_f64();
            // The sender's last Sends complete when this side answers their
            // ack reads: keep driving the engine until the sender is done.
            let end = Instant::now() + WAIT;
            while !stop.load(Ordering::Acquire) {
                p.try_next()?;
                if Instant::now() > end {
                    return Err("receiver: sender did not finish".into());
                }
            }
            Ok(rate)
        },
        |bar| {
            let mut p = Poller::new(&ca);
            bar.wait();
            let _done = SetOnDrop(&stop);
            let (mut posted, mut done) = (0, 0);
            while done < count {
                while posted < count && posted - done < WINDOW {
                    post_send(&*qa, posted as u64, SEND, sge(&ms, 0, len))?;
                    posted += 1;
                }
                p.next()
                    .map_err(|e| format!("sender, {done} of {count} completed: {e}"))?;
                done += 1;
            }
            Ok(())
        },
    )
}

/// (connect + MPA exchange + one round trip + close) per second, both
/// sides driven from this thread.
fn qp_conn_rate(d: &DevicePair, count: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let (ba, bb) = (vec![0u8; 8], vec![0u8; 8]);
    let (ma, mb) = (d.reg(true, &ba)?, d.reg(false, &bb)?);
    let src = *b"ping1234";
    let msrc = d.reg(true, &src)?;
    let (mut pa, mut pb) = (Poller::new(&ca), Poller::new(&cb));
    let t0 = Instant::now();
    for i in 0..count {
        let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mb, 0, 8)))?;
        post_recv(&*qa, 1, sge(&ma, 0, 8))?;
        post_send(&*qa, 2, SEND, sge(&msrc, 0, 8))?;
        d.spin("request", || {
            Ok(pb.try_next()?.filter(|w| w.op == WcOp::Recv))
        })?;
        post_send(&*qb, 2, SEND, sge(&mb, 0, 8))?;
        d.spin("reply", || {
            Ok(pa.try_next()?.filter(|w| w.op == WcOp::Recv))
        })?;
        if i == 0 && (ba != src || bb != src) {
            return Err("qp connections: data mismatch".into());
        }
        qa.disconnect(true)
            .map_err(|e| format!("disconnect: {e:?}"))?;
        d.spin("peer disconnected", || {
            d.rb.take(Some(qb.num()), |e| e == ConnEvent::Down)
        })?;
        d.ra.take(Some(qa.num()), |_| true)?;
        // Flushed or late send completions of this connection: not counted.
        while ca.poll(&mut [Wc::BLANK; 8]) > 0 {}
        while cb.poll(&mut [Wc::BLANK; 8]) > 0 {}
        pa = Poller::new(&ca);
        pb = Poller::new(&cb);
    }
    Ok(count as f64 / t0.elapsed().as_secs_f64())
}

// ---------------------------------------------------------------- two processes

/// Ping-pong with the passive side in a second process (this program run
/// as `qp_bench __child busy|block`), as `bench_ep` runs the DAT layer:
/// the same harness shape at the two levels. One connection of each kind
/// (queue pair, raw TCP) for the whole run; the child is driven through
/// its stdin/stdout, one command a line.
struct Child {
    proc: std::process::Child,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

impl Child {
    fn say(&mut self, line: &str) -> R<()> {
        writeln!(self.to, "{line}").map_err(|e| format!("child: write: {e}"))?;
        self.to.flush().map_err(|e| format!("child: write: {e}"))
    }

    fn hear(&mut self) -> R<String> {
        use std::io::BufRead;
        let mut l = String::new();
        match self.from.read_line(&mut l) {
            Ok(0) => Err("child: gone".into()),
            Ok(_) => Ok(l.trim_end().to_string()),
            Err(e) => Err(format!("child: read: {e}")),
        }
    }

    fn expect(&mut self, want: &str) -> R<()> {
        let got = self.hear()?;
        if got == want {
            Ok(())
        } else {
            Err(format!("child said {got:?}, expected {want:?}"))
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

/// One device of this process: its protection domain, CQ, recorder.
struct SingleDevice {
    dev: Arc<IwarpDevice>,
    pd: PdId,
    cq: Arc<dyn CompletionQueue>,
    rec: Arc<ConnEventLog>,
}

impl SingleDevice {
    fn open() -> R<SingleDevice> {
        let opts = DeviceOptions {
            local_completion: local_completion(),
            ..DeviceOptions::default()
        };
        let dev = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, opts);
        let pd = dev.alloc_pd().map_err(|e| format!("alloc_pd: {e:?}"))?;
        let cq = dev.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        Ok(SingleDevice {
            dev,
            pd,
            cq,
            rec: Arc::new(ConnEventLog::default()),
        })
    }

    fn spin<T>(&self, what: &str, mut f: impl FnMut() -> R<Option<T>>) -> R<T> {
        let end = Instant::now() + WAIT;
        loop {
            if let Some(t) = f()? {
                return Ok(t);
            }
            self.dev.progress();
            if Instant::now() > end {
                return Err(format!("timed out waiting for {what}"));
            }
        }
    }

    fn reg(&self, buf: &[u8]) -> R<MemoryRegion> {
        let all = Access::LOCAL_READ
            .union(Access::LOCAL_WRITE)
            .union(Access::REMOTE_READ)
            .union(Access::REMOTE_WRITE);
        self.dev
            .register(self.pd, buf.as_ptr() as u64, buf.len() as u64, all)
            .map_err(|e| format!("register: {e:?}"))
    }

    fn qp(&self) -> R<Arc<dyn QueuePair>> {
        DevicePair::qp(&self.dev, self.pd, &self.cq, &self.rec)
    }
}

/// Largest ping-pong message of the two-process mode.
const PROCS_MAX: usize = 65536;

/// The child: the passive side of both connections, echoing.
fn procs_child() -> R<()> {
    use std::io::BufRead;
    let me = SingleDevice::open()?;
    let listener = me
        .dev
        .listen(0, me.rec.clone())
        .map_err(|e| format!("listen: {e:?}"))?;
    let tl = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let tport = tl.local_addr().map_err(|e| e.to_string())?.port();
    let mut out = std::io::stdout();
    writeln!(out, "{} {tport}", listener.port()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    let rb = vec![0u8; PROCS_MAX];
    let mrb = me.reg(&rb)?;
    let qb = me.qp()?;
    let req = me.spin("connection request", || {
        me.rec.take(None, |e| matches!(e, ConnEvent::Request(_)))
    })?;
    let ConnEvent::Request(id) = req else {
        return Err("request".into());
    };
    me.dev
        .accept(id, &*qb, b"")
        .map_err(|e| format!("accept: {e:?}"))?;
    me.spin("established (passive)", || {
        me.rec.take(Some(qb.num()), |e| e == ConnEvent::Established)
    })?;
    let (ts, _) = tl.accept().map_err(|e| format!("accept: {e}"))?;
    ts.set_nodelay(true).map_err(|e| e.to_string())?;
    ts.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let mut p = Poller::new(&me.cq);
    let mut unacked = 0usize;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> R<usize> {
            w.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| format!("bad command {line:?}"))
        };
        match w.first().copied() {
            Some("qp") => {
                let (len, total) = (num(1)?, num(2)?);
                post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                writeln!(out, "R").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
                for i in 0..total {
                    loop {
                        let wc = p.next()?;
                        if wc.op == WcOp::Recv {
                            if wc.byte_len != len as u64 {
                                return Err("child: wrong length".into());
                            }
                            break;
                        }
                        unacked -= 1;
                    }
                    if i + 1 < total {
                        post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                    }
                    post_send(&*qb, 2, SEND, sge(&mrb, 0, len))?;
                    unacked += 1;
                }
                writeln!(out, "D").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
            }
            Some("tcp") => {
                let (len, total) = (num(1)?, num(2)?);
                let mut b = vec![0u8; len];
                ts.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
                writeln!(out, "R").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
                for _ in 0..total {
                    spin_read(&ts, &mut b)?;
                    spin_write(&ts, &b)?;
                }
                writeln!(out, "D").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
            }
            Some("quit") => break,
            _ => return Err(format!("child: unknown command {line:?}")),
        }
    }
    // The last echoes' acknowledgements: whatever arrives before the parent
    // disconnects (not checked).
    let end = Instant::now() + Duration::from_millis(200);
    while unacked > 0 && Instant::now() < end {
        if p.try_next().ok().flatten().is_some() {
            unacked -= 1;
        }
    }
    Ok(())
}

/// The parent: the active side; seconds per round trip for each size, queue
/// pairs then raw TCP, median of three runs each.
fn procs_run() -> R<Vec<Row>> {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut proc = Command::new(exe)
        .arg("__child")
        .arg(style())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let (Some(to), Some(from)) = (proc.stdin.take(), proc.stdout.take()) else {
        return Err("child pipes".into());
    };
    let mut c = Child {
        proc,
        to,
        from: std::io::BufReader::new(from),
    };
    let ports = c.hear()?;
    let mut it = ports.split_whitespace().map(|x| x.parse::<u16>());
    let (Some(Ok(qport)), Some(Ok(tport))) = (it.next(), it.next()) else {
        return Err(format!("child said {ports:?}"));
    };
    let me = SingleDevice::open()?;
    let src = pattern(PROCS_MAX, 4);
    let ra = vec![0u8; PROCS_MAX];
    let (ms, mra) = (me.reg(&src)?, me.reg(&ra)?);
    let qa = me.qp()?;
    qa.connect(SocketAddr::new(LO, 0), qport, b"", WAIT)
        .map_err(|e| format!("connect: {e:?}"))?;
    me.spin("established (active)", || {
        me.rec.take(Some(qa.num()), |e| e == ConnEvent::Established)
    })?;
    let tc = TcpStream::connect((LO, tport)).map_err(|e| format!("connect: {e}"))?;
    tc.set_nodelay(true).map_err(|e| e.to_string())?;
    tc.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let mut p = Poller::new(&me.cq);
    let mut unacked = 0usize;
    let mut rows = Vec::new();
    for &(len, warm, iters) in &[
        (8usize, 1000usize, 20_000usize),
        (64, 1000, 20_000),
        (1024, 1000, 10_000),
        (65536, 100, 1000),
    ] {
        let total = warm + iters;
        let mut qp_run = |c: &mut Child| -> R<f64> {
            c.say(&format!("qp {len} {total}"))?;
            c.expect("R")?;
            let mut t0 = Instant::now();
            for i in 0..total {
                if i == warm {
                    t0 = Instant::now();
                }
                post_recv(&*qa, 1, sge(&mra, 0, len))?;
                post_send(&*qa, 2, SEND, sge(&ms, 0, len))?;
                unacked += 1;
                loop {
                    let wc = p.next()?;
                    if wc.op == WcOp::Recv {
                        if wc.byte_len != len as u64 {
                            return Err("wrong length".into());
                        }
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && ra[..len] != src[..len] {
                    return Err("qp ping-pong (2 processes): data mismatch".into());
                }
                if unacked > 64 {
                    return Err("sends do not complete".into());
                }
            }
            let per = t0.elapsed().as_secs_f64() / iters as f64;
            c.expect("D")?;
            Ok(per)
        };
        let ours = median(|| qp_run(&mut c))? * 0.5e6;
        let tcp_run = |c: &mut Child| -> R<f64> {
            let mut b = vec![0u8; len];
            tc.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
            c.say(&format!("tcp {len} {total}"))?;
            c.expect("R")?;
            let mut t0 = Instant::now();
            for i in 0..total {
                if i == warm {
                    t0 = Instant::now();
                }
                spin_write(&tc, &src[..len])?;
                spin_read(&tc, &mut b)?;
            }
            let per = t0.elapsed().as_secs_f64() / iters as f64;
            if b[..] != src[..len] {
                return Err("tcp ping-pong (2 processes): data mismatch".into());
            }
            c.expect("D")?;
            Ok(per)
        };
        let tcp = median(|| tcp_run(&mut c))? * 0.5e6;
        rows.push(Row {
            wait: style(),
            pattern: "ping-pong 2 procs (RTT/2)",
            size: len,
            unit: "us",
            ours,
            tcp,
            target: if len <= 1024 { "<= 1.05x" } else { "" },
        });
    }
    c.say("quit")?;
    let _ = qa.disconnect(false);
    let status = c.proc.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("child exited with {status}"));
    }
    Ok(rows)
}

// ---------------------------------------------------------------- main

struct Row {
    pattern: &'static str,
    /// Waiting style: "busy" or "block".
    wait: &'static str,
    size: usize,
    unit: &'static str,
    ours: f64,
    tcp: f64,
    /// The target for ours / raw TCP (informative).
    target: &'static str,
}

fn size_str(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// Patterns to run: those whose group (`latency`, `procs`, `write`,
/// `read`, `rate`, `conn`) is named on the command line, or all.
/// `qp_bench lockstep [N [BYTES [idle]]]` instead runs [`qp_lockstep`] alone.
fn wanted(group: &str) -> bool {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "busy" && a != "block")
        .collect();
    args.is_empty() || args.iter().any(|a| a == group)
}

fn wanted_style(s: &str) -> bool {
    std::env::args().skip(1).any(|a| a == s)
}

/// QP_BENCH_ACK=local: iWARP's local completion.
fn local_completion() -> bool {
    std::env::var("QP_BENCH_ACK").is_ok_and(|v| v == "local")
}

fn style() -> &'static str {
    if blocking() {
        "block"
    } else {
        "busy"
    }
}

/// Runs a measurement three times; the median.
fn median(mut f: impl FnMut() -> R<f64>) -> R<f64> {
    let mut v = [f()?, f()?, f()?];
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v[1])
}

fn run() -> R<Vec<Row>> {
    let d = DevicePair::open()?;
    let mut rows = Vec::new();
    let lat: &[(usize, usize, usize)] = if wanted("latency") {
        &[
            (8, 1000, 20_000),
            (64, 1000, 20_000),
            (1024, 1000, 10_000),
            (65536, 100, 1000),
        ]
    } else {
        &[]
    };
    for &(len, warm, iters) in lat {
        let ours = median(|| {
            qp_pingpong(&d, len, warm, iters).map_err(|e| format!("ping-pong {len} B: {e}"))
        })? * 0.5e6;
        let tcp = median(|| tcp_pingpong(len, warm, iters))? * 0.5e6;
        rows.push(Row {
            wait: style(),
            pattern: "ping-pong latency (RTT/2)",
            size: len,
            unit: "us",
            ours,
            tcp,
            target: if len <= 1024 { "<= 1.05x" } else { "" },
        });
    }
    if wanted("procs") {
        rows.extend(procs_run().map_err(|e| format!("two processes: {e}"))?);
    }
    let mut streams = Vec::new();
    let writes: &[(usize, usize)] = if wanted("write") {
        &[(65536, 2048), (1 << 20, 192), (8 << 20, 24)]
    } else {
        &[]
    };
    for &(len, count) in writes {
        let ours =
            median(|| qp_rdma(&d, false, len, count).map_err(|e| format!("write {len} B: {e}")))?
                / 1e9;
        let tcp = median(|| tcp_stream(len, count))? / 1e9;
        streams.push((len, count, tcp));
        rows.push(Row {
            wait: style(),
            pattern: "RDMA Write bandwidth",
            size: len,
            unit: "GB/s",
            ours,
            tcp,
            target: if len >= 1 << 20 { ">= 0.95x" } else { "" },
        });
    }
    let reads: &[(usize, usize)] = if wanted("read") {
        &[(1 << 20, 192), (8 << 20, 24)]
    } else {
        &[]
    };
    for &(len, count) in reads {
        let ours =
            median(|| qp_rdma(&d, true, len, count).map_err(|e| format!("read {len} B: {e}")))?
                / 1e9;
        let tcp = median(|| tcp_stream(len, count))? / 1e9;
        rows.push(Row {
            wait: style(),
            pattern: "RDMA Read bandwidth",
            size: len,
            unit: "GB/s",
            ours,
            tcp,
            target: ">= 0.95x",
        });
    }
    if wanted("rate") {
        let ours =
            median(|| qp_msg_rate(&d, 64, 100_000).map_err(|e| format!("messages: {e}")))? / 1e6;
        let tcp = median(|| tcp_msg_rate(64, 100_000))? / 1e6;
        rows.push(Row {
            wait: style(),
            pattern: "message rate (window 8)",
            size: 64,
            unit: "Mmsg/s",
            ours,
            tcp,
            target: "",
        });
    }
    if wanted("conn") {
        let ours = median(|| qp_conn_rate(&d, 200).map_err(|e| format!("connections: {e}")))?;
        let tcp = median(|| tcp_conn_rate(200))?;
        rows.push(Row {
            wait: style(),
            pattern: "connection setup+RT+close",
            size: 8,
            unit: "conn/s",
            ours,
            tcp,
            target: "",
        });
    }
    Ok(rows)
}

/// `qp_bench lockstep [N [BYTES [idle]]]`: [`qp_lockstep`] alone (`idle`:
/// then N polls of the idle CQ, timed).
fn lockstep_main(args: &[String]) -> ExitCode {
    let n = args.first().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let len = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let idle = args.get(2).is_some_and(|a| a == "idle");
    match DevicePair::open().and_then(|d| qp_lockstep(&d, len, n, idle)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qp_bench: error (lockstep): {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "lockstep") {
        return lockstep_main(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "__child") {
        BLOCKING.store(args.get(1).is_some_and(|a| a == "block"), Ordering::Relaxed);
        return match procs_child() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("qp_bench: error (child): {e}");
                ExitCode::FAILURE
            }
        };
    }
    let t0 = Instant::now();
    let mut rows = Vec::new();
    // `busy` / `block` on the command line pick one waiting style.
    let styles: Vec<bool> = match (wanted_style("busy"), wanted_style("block")) {
        (true, false) => vec![false],
        (false, true) => vec![true],
        _ => vec![false, true],
    };
    for b in styles {
        BLOCKING.store(b, Ordering::Relaxed);
        match run() {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("qp_bench: error ({}): {e}", style());
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{:<27} {:>5} {:>7} {:>7} {:>11} {:>11} {:>7}  target (informative)",
        "pattern", "wait", "size", "unit", "ours", "raw TCP", "ratio"
    );
    for r in &rows {
        println!(
            "{:<27} {:>5} {:>7} {:>7} {:>11.3} {:>11.3} {:>6.2}x  {}",
            r.pattern,
            r.wait,
            size_str(r.size),
            r.unit,
            r.ours,
            r.tcp,
            r.ours / r.tcp,
            r.target
        );
    }
    if std::env::var_os("QP_BENCH_STATS").is_some() {
        let (runs, looks) = udapl::transport::soft::progress::stats();
        println!("progress thread: {runs} runs, {looks} handed to a holder");
    }
    println!(
        "ratio = ours / raw TCP (latency: lower is better; the rest: higher is better). \
         Loopback, one thread per side; busy: both poll, block: both sleep (ours on \
         the armed CQ's wait descriptor, raw TCP in blocking reads; an RDMA target \
         sleeps and the transport serves it). Median of 3 runs. Total {:.1} s.",
        t0.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
