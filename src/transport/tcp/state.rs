//! The driver's state: what a queue pair is made of (phase, socket, the
//! established connection's engine and buffers) and what the device shares
//! with its queue pairs, shared receive queues and listeners. `tx`, `rx`,
//! `cm` and `drive` operate on these types; `qp`, `srq`, `listener` and
//! `device` are built on them.
//!
//! A queue pair's socket is watched by its completion queues' wait
//! descriptors (token: the QP number) from connect/accept until closed, so
//! a thread sleeping on `wait_fd` wakes on data.

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{
    options::DeviceOptions,
    setup_read::{peek_feed, SetupRead},
};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{CmEvent, CmHandler, DeviceError, QpConfig, QpNum, Wc, WcOp, WcStatus};
use crate::transport::iwarp::conn::{Conn, RecvRing, RxPlan, SharedRecv, TxPlan, TxToken, MAX_SGE};
use crate::transport::iwarp::setup::{Initiator, Responder, ResponderEvent};
use crate::transport::iwarp::wire::{FpduReader, Segment};
use crate::transport::soft::cq::Cq;
use crate::transport::soft::keys::KeyTable;
use crate::transport::soft::memio::RawSeg;
use crate::transport::soft::progress::{self, Reg, Run, Source};
use crate::transport::Capabilities;

/// Largest FPDU this device sends.
pub(super) const MAX_FPDU: usize = 65535;
/// How long a graceful close waits for the peer's end of stream.
pub(super) const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Largest peek at an FPDU boundary: messages up to 8 KiB (and the ack
/// reads and responses travelling with them) arrive whole in one. After a
/// large payload the next peek is [`PEEK_MIN`], so a stream of large FPDUs
/// copies little twice.
pub(super) const PEEK_MAX: usize = 8192 + 128;
/// Peek while a large transfer streams: just the next header.
pub(super) const PEEK_MIN: usize = 128;
/// Bytes of the next FPDU read along with a payload: no FPDU header is
/// shorter (a tagged one is 2 + 14).
pub(super) const LOOKAHEAD: usize = 16;
/// Receive sink for bytes already taken from a peek.
pub(super) const SCRATCH: usize = 256;

/// Most FPDUs planned ahead and written together.
pub(super) const TX_BATCH: usize = 8;
/// What an [`IwarpDevice`](super::IwarpDevice) shares with its queue pairs,
/// shared receive queues and listeners (they hold a `Weak` of it).
pub struct DeviceShared {
    pub(super) caps: Capabilities,
    pub(super) opts: DeviceOptions,
    pub(super) keys: KeyTable,
    pub(super) next_req: AtomicU64,
    pub(super) qps: Mutex<HashMap<QpNum, Weak<IwarpQp>>>,
    pub(super) pending: Mutex<HashMap<u64, Pending>>,
    /// The receiver-not-ready time, in nanoseconds.
    pub(super) rnr_timeout: AtomicU64,
    /// Memory windows: key-table index → protection domain and the index
    /// of the registration the window is bound to.
    pub(super) windows: Mutex<HashMap<u32, (u64, Option<u32>)>>,
    pub(super) me: Weak<DeviceShared>,
}

/// A connection a listener took, until the DAT layer decides.
pub(super) struct Pending {
    /// Watched by the progress thread (dropped before the stream).
    pub(super) reg: Option<Reg>,
    pub(super) stream: TcpStream,
    pub(super) resp: Responder,
    pub(super) deadline: Instant,
    pub(super) reported: bool,
    pub(super) cm: Arc<dyn CmHandler>,
    pub(super) port: u16,
}

impl DeviceShared {
    /// How long a Send that finds no posted receive holds its connection
    /// (the device stops reading it) before the connection is terminated
    /// and the sender's Send completes receiver-not-ready. Applies to Sends
    /// that arrive after the call.
    pub fn set_rnr_timeout(&self, t: Duration) {
        let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.rnr_timeout.store(ns, Ordering::Relaxed);
    }

    /// The receiver-not-ready time ([`DeviceShared::set_rnr_timeout`]).
    pub fn rnr_timeout(&self) -> Duration {
        Duration::from_nanos(self.rnr_timeout.load(Ordering::Relaxed))
    }

    /// Reads the Requests of pending connections; reports complete ones.
    pub(super) fn progress_pending(&self) -> bool {
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
                    SetupRead::Nothing => {
                        if now >= pend.deadline {
                            dead.push(id);
                        }
                    }
                    SetupRead::Event(ResponderEvent::Request(req)) => {
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
                    SetupRead::Event(ResponderEvent::Refused { reply, .. }) => {
                        let _ = (&pend.stream).write_all(&reply);
                        dead.push(id);
                    }
                    SetupRead::Event(ResponderEvent::Established(_)) | SetupRead::Failed => {
                        dead.push(id)
                    }
                    SetupRead::Progress => any = true,
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

impl Source for DeviceShared {
    /// Pending connections: their Requests and deadlines.
    fn run(&self) -> Run {
        self.progress_pending();
        Run::default()
    }
}
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

/// A queue pair of an [`IwarpDevice`](super::IwarpDevice).
pub struct IwarpQp {
    pub(super) num: QpNum,
    /// The device's fork generation.
    pub(super) gen: u32,
    pub(super) me: Weak<IwarpQp>,
    pub(super) dev: Weak<DeviceShared>,
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
    pub(super) srq: Option<Arc<dyn SharedRecv>>,
    pub(super) inner: Mutex<Inner>,
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
                ctx: e.ctx(),
                implicit: 0,
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.num,
                solicited: false,
            });
        }
    }

    /// Has the progress thread watch the socket for what only it would
    /// notice: nothing while an application thread drives the queue pair
    /// (it takes the input and pushes the output itself), else input, and
    /// output while bytes wait for socket space. (Acknowledgements left for
    /// a spinner's next post go with it, with its next step, or with the
    /// completion queue's check, `Feeder::flush`.)
    pub(super) fn watch(&self, inner: &Inner) {
        if let Some(sock) = sock_of(inner) {
            let driven = self.driven();
            sock.watch(!driven, !driven && self.tx_blocked.load(Ordering::Relaxed));
        }
    }

    /// Whether an application thread spins on one of its completion
    /// queues (and none sleeps there): it steps again in a moment.
    pub(super) fn spun(&self) -> bool {
        self.send_cq.spun() || self.recv_cq.spun()
    }

    /// Whether an application thread drives the queue pair (spins on or
    /// sleeps on one of its completion queues: [`Cq::driven`]).
    pub(super) fn driven(&self) -> bool {
        self.send_cq.driven() || self.recv_cq.driven()
    }
}

/// Where the current segment's payload goes.
pub(super) enum PayloadDest {
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

/// An FPDU being written.
pub(super) struct TxCur {
    pub(super) head: [u8; 128],
    pub(super) head_len: usize,
    pub(super) segs: [RawSeg; MAX_SGE],
    pub(super) nsegs: usize,
    pub(super) payload: u64,
    pub(super) trailer: [u8; 8],
    pub(super) trailer_len: usize,
    /// Bytes of it written.
    pub(super) sent: u64,
    pub(super) token: TxToken,
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

/// FPDUs planned and being written, in order.
#[derive(Default)]
pub(super) struct TxBatch {
    pub(super) fpdus: [TxCur; TX_BATCH],
    /// Planned, and written completely.
    pub(super) n: usize,
    pub(super) done: usize,
}

/// The socket of the queue pair's phase, if it has one.
pub(super) fn sock_of(inner: &Inner) -> Option<&Sock> {
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
pub(super) fn phase_deadline(inner: &Inner) -> Option<(&Sock, Instant)> {
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
