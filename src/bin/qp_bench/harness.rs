//! What every pattern shares: two devices of this process connected over
//! loopback, the connection-event log, the CQ poller (busy or sleeping, as
//! the run's waiting style says), posting helpers and two-thread runs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

use udapl::transport::api::{
    Access, CmEvent, CmHandler, CompletionQueue, Device, Listener, MemoryRegion, PdId, QpConfig,
    QpNum, QueuePair, RecvWr, SendOp, SendWr, Sge, Wc, WcStatus,
};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

use super::{local_completion, LO, R, WAIT};

/// A connection event as the benchmark cares about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    Request(u64),
    Established,
    Down,
    Failed,
}

/// The connection events a device reported, in order, by queue pair.
#[derive(Default)]
pub(crate) struct ConnEventLog(Mutex<Vec<(Option<QpNum>, ConnEvent)>>);

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
    pub(crate) fn take(
        &self,
        qp: Option<QpNum>,
        f: impl Fn(ConnEvent) -> bool,
    ) -> R<Option<ConnEvent>> {
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
pub(crate) struct DevicePair {
    a: Arc<IwarpDevice>,
    b: Arc<IwarpDevice>,
    pa: PdId,
    pb: PdId,
    pub(crate) ra: Arc<ConnEventLog>,
    pub(crate) rb: Arc<ConnEventLog>,
    listener: Arc<dyn Listener>,
}

impl DevicePair {
    pub(crate) fn open() -> R<DevicePair> {
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
    pub(crate) fn spin<T>(&self, what: &str, mut f: impl FnMut() -> R<Option<T>>) -> R<T> {
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

    pub(crate) fn qp(
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
    pub(crate) fn connect(
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

    pub(crate) fn reg(&self, on_a: bool, buf: &[u8]) -> R<MemoryRegion> {
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

    pub(crate) fn cqs(&self) -> R<(Arc<dyn CompletionQueue>, Arc<dyn CompletionQueue>)> {
        let ca = self.a.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        let cb = self.b.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        Ok((ca, cb))
    }
}

pub(crate) fn sge(mr: &MemoryRegion, off: usize, len: usize) -> Sge {
    Sge {
        addr: mr.addr + off as u64,
        len: len as u64,
        lkey: mr.lkey,
    }
}

pub(crate) fn pattern(n: usize, seed: u8) -> Vec<u8> {
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
pub(crate) static BLOCKING: AtomicBool = AtomicBool::new(false);

pub(crate) fn blocking() -> bool {
    BLOCKING.load(Ordering::Relaxed)
}

/// Polls one CQ (busy, or sleeping on it), handing out completions one at
/// a time.
pub(crate) struct Poller {
    cq: Arc<dyn CompletionQueue>,
    buf: [Wc; 32],
    at: usize,
    n: usize,
}

impl Poller {
    pub(crate) fn new(cq: &Arc<dyn CompletionQueue>) -> Poller {
        Poller {
            cq: cq.clone(),
            buf: [Wc::BLANK; 32],
            at: 0,
            n: 0,
        }
    }

    pub(crate) fn try_next(&mut self) -> R<Option<Wc>> {
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

    pub(crate) fn next(&mut self) -> R<Wc> {
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

pub(crate) fn post_send(qp: &dyn QueuePair, wr_id: u64, op: SendOp, s: Sge) -> R<()> {
    let end = Instant::now() + WAIT;
    loop {
        match qp.post_send(&SendWr {
            wr_id,
            ctx: 0,
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

pub(crate) fn post_recv(qp: &dyn QueuePair, wr_id: u64, s: Sge) -> R<()> {
    qp.post_recv(&RecvWr {
        wr_id,
        ctx: 0,
        sgl: &[s],
    })
    .map_err(|e| format!("post_recv: {e:?}"))
}

pub(crate) const SEND: SendOp = SendOp::Send { solicited: false };

/// Runs `fa` and `fb` on two threads started together; returns `fa`'s value.
pub(crate) fn two<T: Send>(
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
