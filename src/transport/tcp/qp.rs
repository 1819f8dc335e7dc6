//! The queue pair: its state (connection phase, socket, the established
//! connection's engine and buffers) and the `QueuePair` verbs.
//!
//! A queue pair's socket is watched by its completion queues' wait
//! descriptors (token: the QP number) from connect/accept until closed, so
//! a thread sleeping on `wait_fd` wakes on data.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::{
    device::{IwarpDevice, DRAIN_TIMEOUT, MAX_FPDU},
    rx::{PayloadDest, LOOKAHEAD, PEEK_MAX, SCRATCH},
    socket::{set_linger_zero, start_connect},
    srq::IwarpSrq,
    tx::TxBatch,
};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{
    Access, BindWr, CmEvent, DeviceError, PostError, QpConfig, QpNum, QpState, QueuePair, RecvWr,
    SendWr, Wc, WcOp, WcStatus,
};
use crate::transport::iwarp::conn::{Conn, RecvRing, RqEntry, RxPlan, TxPlan};
use crate::transport::iwarp::setup::{
    Initiator, InitiatorConfig, Responder, MAX_PD_IN, REPLY_TIMEOUT,
};
use crate::transport::iwarp::wire::{FpduReader, Segment};
use crate::transport::soft::cq::Cq;
use crate::transport::soft::progress::{self, Reg, Source};

/// A connection event, owned until the handler is called (no lock held).
pub(super) enum OwnedCmEvent {
    Established(Vec<u8>),
    Rejected(Vec<u8>),
    Unreachable,
    Refused,
    TimedOut,
    AcceptFailed,
    Disconnected,
    Broken,
}

pub(super) enum Phase {
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
    Up(Box<EstablishedConn>),
    /// Gracefully closed: reading until the peer's end of stream.
    Draining {
        stream: Sock,
        deadline: Instant,
    },
    Closed,
}

/// A queue pair's socket: while it lives, data arriving on it wakes the
/// threads sleeping on its completion queues' wait descriptors.
pub(super) struct Sock {
    pub(super) stream: TcpStream,
    pub(super) cqs: Vec<Arc<Cq>>,
    pub(super) gen: u32,
    /// The progress thread watches the socket too: for input unless an
    /// application thread drives the queue pair, for output while bytes
    /// wait for socket space. (Set under the queue pair's lock.)
    pub(super) reg: Option<Reg>,
    pub(super) watch: std::cell::Cell<(bool, bool)>,
}

impl Sock {
    /// Watches `stream` on the queue pair's send and receive queues, with
    /// the queue pair's number as the token, and on the progress thread.
    pub(super) fn new(stream: TcpStream, qp: &IwarpQp) -> Result<Sock, DeviceError> {
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
    pub(super) fn watch(&self, input: bool, output: bool) {
        if self.watch.replace((input, output)) != (input, output) {
            if let Some(r) = &self.reg {
                r.watch(input, output);
            }
        }
    }

    /// Has the progress thread run the queue pair at `at` (a deadline).
    pub(super) fn wake_at(&self, at: Instant) {
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

pub(super) struct EstablishedConn {
    pub(super) stream: Sock,
    pub(super) conn: Conn,
    pub(super) crc: bool,
    pub(super) txplan: TxPlan,
    pub(super) tx: Box<TxBatch>,
    pub(super) reader: FpduReader,
    pub(super) rxplan: RxPlan,
    pub(super) rx: PayloadDest,
    /// A Send that found no receive, to retry after a `post_recv`, and
    /// when its receiver-not-ready time runs out.
    pub(super) not_ready: Option<(Segment, Instant)>,
    /// A graceful disconnect waits for the send queue to finish until then.
    pub(super) closing: Option<Instant>,
    /// Bytes peeked from the socket at an FPDU boundary (batched receive).
    pub(super) peek: [u8; PEEK_MAX],
    /// How much the next peek asks for.
    pub(super) peek_len: usize,
    /// Where header, trailer and inline bytes already taken from a peek
    /// are received to (and dropped).
    pub(super) scratch: [u8; SCRATCH],
    /// Completions of a batch, held until its payload has landed.
    pub(super) rx_wcs: Vec<Wc>,
    /// Receives a payload's pad and CRC and the next FPDU's first bytes.
    pub(super) tail: [u8; 3 + 4 + LOOKAHEAD],
    /// Responder without RTR: nothing may be sent before the initiator's
    /// first FPDU arrives.
    pub(super) hold_tx: bool,
    /// The connection's TCP segment size (MSS): FPDUs planned together
    /// that fit in one are written together.
    pub(super) segment: u64,
    /// Initiator: zero-length RDMA Writes to send while nothing has come
    /// back since the connection came up ([`Nudge`]).
    pub(super) nudge: Option<Box<Nudge>>,
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
pub(super) struct Nudge {
    pub(super) at: Instant,
    pub(super) gap: Duration,
    pub(super) left: u8,
    /// The FPDU (the RTR's form, with CRC when negotiated).
    pub(super) bytes: Vec<u8>,
}

pub(super) const NUDGE_FIRST: Duration = Duration::from_millis(10);
pub(super) const NUDGES: u8 = 6;

pub(super) struct Inner {
    pub(super) phase: Phase,
    /// Receives posted before the connection is up.
    /// (Allocated with the queue pair: posting allocates nothing.)
    pub(super) pre_recv: RecvRing,
}

/// A queue pair of an [`IwarpDevice`].
pub struct IwarpQp {
    pub(super) num: QpNum,
    /// The device's fork generation.
    pub(super) gen: u32,
    pub(super) me: Weak<IwarpQp>,
    pub(super) dev: Weak<IwarpDevice>,
    pub(super) cfg: QpConfig,
    pub(super) send_cq: Arc<Cq>,
    pub(super) recv_cq: Arc<Cq>,
    /// A completion was lost to a full CQ: the connection must break.
    pub(super) overrun: AtomicBool,
    /// Bytes wait for socket space (or a TCP connect for completion): the
    /// progress thread must watch for writability.
    pub(super) tx_blocked: AtomicBool,
    /// A Send waits for a receive (receiver not ready).
    pub(super) rnr_waiting: AtomicBool,
    /// The progress thread found something to do while another thread
    /// held the lock: that thread runs the engine when it lets go.
    pub(super) kick: AtomicBool,
    /// A step left acknowledgements for the spinning application's next
    /// post or step (written under the lock).
    pub(super) acks_left: AtomicBool,
    /// The last step stopped receiving at its budget: more is waiting.
    pub(super) rx_more: AtomicBool,
    /// The last transmit stopped at its budget: more is ready to go.
    pub(super) tx_more: AtomicBool,
    /// The shared receive queue the connection takes receives from.
    pub(super) srq: Option<Arc<IwarpSrq>>,
    pub(super) inner: Mutex<Inner>,
}

/// A queue pair's lock held by an application thread (or a test): when it
/// is let go, the engine runs for what the progress thread handed over
/// meanwhile ([`IwarpQp::after_unlock`]).
pub(super) struct QpGuard<'a> {
    pub(super) qp: &'a IwarpQp,
    pub(super) inner: Option<MutexGuard<'a, Inner>>,
    /// Runs `after_unlock` on drop (unset by `into_raw`).
    pub(super) check: bool,
    /// Only looked ([`IwarpQp::look`]): on drop, a run handed over
    /// meanwhile goes back to the progress thread.
    pub(super) look: bool,
}

impl<'a> QpGuard<'a> {
    /// The plain lock: the caller lets go and calls `after_unlock` itself.
    pub(super) fn into_raw(mut self) -> MutexGuard<'a, Inner> {
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
pub(super) enum PumpStatus {
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
    pub(super) fn cm_event(&self, ev: OwnedCmEvent) {
        let q = Some(self.num);
        let cm = &self.cfg.cm;
        tracing::debug!(
            qp = self.num,
            event = match &ev {
                OwnedCmEvent::Established(_) => "established",
                OwnedCmEvent::Rejected(_) => "rejected",
                OwnedCmEvent::Unreachable => "unreachable",
                OwnedCmEvent::Refused => "refused",
                OwnedCmEvent::TimedOut => "timed out",
                OwnedCmEvent::AcceptFailed => "accept failed",
                OwnedCmEvent::Disconnected => "disconnected",
                OwnedCmEvent::Broken => "broken",
            },
            "connection event"
        );
        match &ev {
            OwnedCmEvent::Established(pd) => cm.event(q, CmEvent::Established { private_data: pd }),
            OwnedCmEvent::Rejected(pd) => cm.event(q, CmEvent::Rejected { private_data: pd }),
            OwnedCmEvent::Unreachable => cm.event(q, CmEvent::Unreachable),
            OwnedCmEvent::Refused => cm.event(q, CmEvent::Refused),
            OwnedCmEvent::TimedOut => cm.event(q, CmEvent::TimedOut),
            OwnedCmEvent::AcceptFailed => cm.event(q, CmEvent::AcceptFailed),
            OwnedCmEvent::Disconnected => cm.event(q, CmEvent::Disconnected),
            OwnedCmEvent::Broken => cm.event(q, CmEvent::Broken),
        }
    }

    pub(super) fn sink(&self) -> impl FnMut(Wc) + '_ {
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
    pub(super) fn cq_overrun(&self, wc: &Wc) {
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

    pub(super) fn flush_pre_recv(&self, inner: &mut Inner) {
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
                crate::transport::api::KeyFault::Domain,
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
                    Some(libc::ETIMEDOUT) => OwnedCmEvent::TimedOut,
                    Some(libc::ECONNREFUSED) => OwnedCmEvent::Refused,
                    _ => OwnedCmEvent::Unreachable,
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
                Some(OwnedCmEvent::Disconnected)
            }
            Phase::Connecting { .. } | Phase::Accepting { .. } => {
                self.flush_pre_recv(&mut inner);
                Some(OwnedCmEvent::Disconnected)
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

impl Drop for IwarpQp {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.upgrade() {
            lock(&dev.qps).remove(&self.num);
        }
    }
}
