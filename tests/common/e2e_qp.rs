//! Queue-pair plumbing for integration tests of the iWARP device: a
//! recording connection-event handler, one side of a connection (device,
//! PD, CQ, QP), and waits that drive progress with a deadline.
//!
//! There is no background progress thread: every wait here calls
//! [`Device::progress`] on the devices it is given and polls, and fails the
//! test (panics, naming what it waited for) after [`DEADLINE`].
#![allow(dead_code)] // a shared harness: each test uses part of it

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use udapl::transport::iwarp::device::IwarpDevice;
use udapl::transport::verbs::{
    Access, CmEvent, CmHandler, CompletionQueue, Device, MemoryRegion, PdId, QpConfig, QpNum,
    QueuePair, Sge, Wc, WcOp, WcStatus,
};

/// Longest any single wait may take.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A connection event, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Request {
        id: u64,
        remote: SocketAddr,
        local: SocketAddr,
        private_data: Vec<u8>,
    },
    Established(Vec<u8>),
    Rejected(Vec<u8>),
    Unreachable,
    TimedOut,
    AcceptFailed,
    Disconnected,
    Broken,
}

/// Records connection events in arrival order.
#[derive(Default)]
pub struct Rec(Mutex<Vec<Got>>);

impl CmHandler for Rec {
    fn event(&self, _qp: Option<QpNum>, ev: CmEvent<'_>) {
        let g = match ev {
            CmEvent::ConnectRequest {
                request,
                remote,
                local,
                private_data,
                ..
            } => Got::Request {
                id: request,
                remote,
                local,
                private_data: private_data.to_vec(),
            },
            CmEvent::Established { private_data } => Got::Established(private_data.to_vec()),
            CmEvent::Rejected { private_data } => Got::Rejected(private_data.to_vec()),
            CmEvent::Unreachable => Got::Unreachable,
            CmEvent::TimedOut => Got::TimedOut,
            CmEvent::AcceptFailed => Got::AcceptFailed,
            CmEvent::Disconnected => Got::Disconnected,
            CmEvent::Broken => Got::Broken,
        };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(g);
    }
}

impl Rec {
    /// Removes and returns the oldest event, if any.
    pub fn pop(&self) -> Option<Got> {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (!v.is_empty()).then(|| v.remove(0))
    }

    /// Removes and returns every event.
    pub fn take(&self) -> Vec<Got> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// One end of a connection: its own PD, one CQ for both queues, one QP.
pub struct Side {
    pub dev: Arc<IwarpDevice>,
    pub pd: PdId,
    pub cq: Arc<dyn CompletionQueue>,
    pub qp: Arc<dyn QueuePair>,
    pub rec: Arc<Rec>,
}

impl Side {
    /// A queue pair on `dev` with `ird`/`ord` inbound/outbound reads.
    pub fn new(dev: &Arc<IwarpDevice>, ird: u32, ord: u32) -> Side {
        let pd = dev.alloc_pd().expect("alloc_pd");
        let cq = dev.create_cq(256).expect("create_cq");
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
                ird,
                ord,
                cm: rec.clone(),
            })
            .expect("create_qp");
        Side {
            dev: dev.clone(),
            pd,
            cq,
            qp,
            rec,
        }
    }

    /// Registers `buf` with local and remote read and write access.
    pub fn reg(&self, buf: &[u8]) -> MemoryRegion {
        let all = Access::LOCAL_READ
            .union(Access::LOCAL_WRITE)
            .union(Access::REMOTE_READ)
            .union(Access::REMOTE_WRITE);
        self.dev
            .register(self.pd, buf.as_ptr() as u64, buf.len() as u64, all)
            .expect("register")
    }
}

/// The first `len` bytes of `mr` as a one-element scatter list entry.
pub fn sge(mr: &MemoryRegion, len: usize) -> Sge {
    Sge {
        addr: mr.addr,
        len: len as u64,
        lkey: mr.lkey,
    }
}

/// Deterministic test bytes.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// Drives the progress of some devices while waiting.
pub struct Driver<'a> {
    pub devs: Vec<&'a Arc<IwarpDevice>>,
}

impl<'a> Driver<'a> {
    pub fn new(devs: &[&'a Arc<IwarpDevice>]) -> Driver<'a> {
        Driver {
            devs: devs.to_vec(),
        }
    }

    /// Calls `done` until it says yes, driving every device in between;
    /// panics naming `what` after [`DEADLINE`].
    pub fn spin(&self, what: &str, mut done: impl FnMut() -> bool) {
        let end = Instant::now() + DEADLINE;
        while !done() {
            assert!(
                Instant::now() < end,
                "deadline ({DEADLINE:?}) waiting for {what}"
            );
            let mut any = false;
            for d in &self.devs {
                any |= d.progress();
            }
            if !any {
                std::thread::yield_now();
            }
        }
    }

    /// The next connection event of `rec`.
    pub fn event(&self, what: &str, rec: &Rec) -> Got {
        let mut got = None;
        self.spin(what, || {
            got = rec.pop();
            got.is_some()
        });
        got.expect("event")
    }

    /// The next completion of `cq`.
    pub fn wc(&self, what: &str, cq: &Arc<dyn CompletionQueue>) -> Wc {
        let mut out = [empty_wc()];
        self.spin(what, || cq.poll(&mut out) == 1);
        out[0]
    }

    /// Waits for a successful completion of `wr_id` (the next one on `cq`)
    /// and returns its byte count.
    pub fn ok(&self, what: &str, cq: &Arc<dyn CompletionQueue>, wr_id: u64, op: WcOp) -> u64 {
        let w = self.wc(what, cq);
        assert_eq!(
            (w.wr_id, w.status, w.op),
            (wr_id, WcStatus::Success, op),
            "{what}: completion {w:?}"
        );
        w.byte_len
    }
}

/// A completion slot to poll into.
pub fn empty_wc() -> Wc {
    Wc {
        wr_id: 0,
        status: WcStatus::Fatal,
        op: WcOp::Send,
        byte_len: 0,
        qp: 0,
        solicited: false,
    }
}

/// Polls `cq` once (driving its queue pairs); the completion, if any.
pub fn try_wc(cq: &Arc<dyn CompletionQueue>) -> Option<Wc> {
    let mut out = [empty_wc()];
    (cq.poll(&mut out) == 1).then_some(out[0])
}
