//! One established iWARP connection's protocol engine, without I/O.
//!
//! The engine owns the queues of one queue pair (send queue, receive queue,
//! outbound-read table, inbound-read table) and the per-queue MSNs, and
//! says what to send, where to place what arrives and what completed. The
//! caller moves the bytes (sockets and `memio` in the transport, plain
//! copies in the tests) and drives it:
//!
//! - **Posting**: [`Conn::post_send`], [`Conn::post_recv`] check the work
//!   request (SGE count, depth, every local segment against the key table,
//!   total length ≤ 2³¹) and copy it into a preallocated slot.
//! - **Transmit**: [`Conn::next_tx`] fills a [`TxPlan`]: the FPDU's head
//!   bytes, application pieces `(addr, len)` to gather, engine-owned inline
//!   bytes (Terminate bodies; already counted in the CRC), then the caller
//!   feeds the pieces to [`TxPlan::payload`] (or [`TxPlan::payload_crc`])
//!   and writes [`TxPlan::trailer`]. When the whole FPDU is written the
//!   caller calls [`Conn::tx_done`]; plans are produced one at a time.
//! - **Receive**: for each segment header the [`wire::FpduReader`] yields,
//!   [`Conn::rx_header`] checks it (keys *before* any byte moves) and says
//!   where the payload goes ([`RxAction`], [`RxPlan`]); after the reader's
//!   `Done` (CRC checked) the caller calls [`Conn::rx_done`], which is where
//!   things complete. [`RxAction::NotReady`]: a Send found no receive; stop
//!   reading, call `rx_header` again with the same segment after a
//!   `post_recv`, or [`Conn::rnr_expired`] when the RNR time is over.
//! - **Errors**: a violation returns [`Fault::Protocol`] with the Terminate
//!   error; the engine has queued that Terminate for `next_tx` (the last
//!   FPDU it produces), completed the offending local request if any, and
//!   flushed everything else. A received Terminate completes the request it
//!   names with the mapped status and flushes the rest.
//!
//! # Decisions
//!
//! - **Completion order**: the send queue completes in posting order. A
//!   request finishes (success or error) into its slot; slots retire from
//!   the oldest, so an early completion waits for the ones before it.
//! - **Completion points**: with ack reads ([`Negotiated::ack_reads`]) a
//!   Send or RDMA Write completes when the response to a later Read Request
//!   (an ack read, or a consumer Read, which acknowledges the same way)
//!   arrives. After the last FPDU of a signalled Send/Write the engine owes
//!   an ack read; it goes out when the send queue has nothing else ready
//!   to transmit (one ack covers a burst) and an ORD credit is free. It
//!   uses one credit beyond the consumer's ORD. Without ack reads a
//!   Send/Write completes at [`Conn::tx_done`] of its last FPDU (handed to
//!   TCP). A Read completes at `rx_done` of its last response segment.
//! - **Read sinks**: any number of local SGEs. The Read Request's sink STag
//!   is a connection-private tag naming the outbound-read entry and its sink
//!   TO is the byte offset within the local scatter list; the response must
//!   echo them in order. The local memory was checked (LOCAL_WRITE) at post.
//! - **Zero-length tagged segments and zero-length Read Requests** are not
//!   checked against the key table (nothing moves).
//! - **Flush order**: send queue first (posting order), then the receive
//!   queue (posting order); each request completes exactly once.
//! - **Interleaving**: Read Response FPDUs alternate with send-queue FPDUs,
//!   but two tagged messages (an RDMA Write and a Read Response) never
//!   interleave their segments (peers such as `siw` track one inbound tagged
//!   message at a time).
//! - **Receive queue**: the engine's own ring ([`Conn::post_recv`]); a
//!   shared receive queue would replace [`RecvRing`] behind the same calls.

use crate::keys::{KeyFault, KeyTable, Rights};
use crate::transport::verbs::{PostError, QpNum, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus};

use super::wire::{
    self, DdpTagged, DdpUntagged, FpduError, FpduTx, Header, RdmapOperation, RdmapProtection,
    ReadRequest, Segment, TermError, Terminate, Ulp, MAX_HDR_LEN, READ_REQUEST_LEN, TAGGED_HDR_LEN,
    UNTAGGED_HDR_LEN,
};

/// Most scatter/gather elements one work request carries.
pub const MAX_SGE: usize = 8;
/// Longest message (bytes) a work request may move.
pub const MAX_MSG: u64 = 1 << 31;
/// Largest Terminate body accepted on receipt (peers may add trailing bytes).
pub const RX_INLINE_MAX: usize = 128;
/// Smallest FPDU size the engine segments to.
const MIN_FPDU: usize = 64;
/// Tags of Read Request sinks: this bit plus the entry's read MSN.
const SINK_TAG_BIT: u32 = 0x8000_0000;

/// Parameters of the established connection (from the MPA exchange).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// CRC32c on every FPDU.
    pub crc: bool,
    /// Largest FPDU to send (e.g. 65535 + framing, or the TCP MSS).
    pub max_fpdu: usize,
    /// Inbound Read Requests the peer may have outstanding at this side.
    pub ird: u32,
    /// Read Requests this side may have outstanding at the peer.
    pub ord: u32,
    /// Complete Sends/Writes through zero-length reads (see module docs).
    pub ack_reads: bool,
}

/// The queue pair's sizes (what the consumer asked for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnConfig {
    pub send_depth: u32,
    pub recv_depth: u32,
    /// At most [`MAX_SGE`].
    pub max_sge: u32,
    /// The consumer's outbound reads (one more is kept for ack reads).
    pub ord: u32,
    pub ird: u32,
    pub qp: QpNum,
    /// Protection domain (zone) of the queue pair, as in the key table.
    pub pd: u64,
}

/// A byte range of application memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    pub addr: u64,
    pub len: u64,
}

/// State of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Data flows.
    Established,
    /// A Terminate is queued for [`Conn::next_tx`]; everything was flushed.
    Terminating,
    /// Nothing more is sent or accepted; everything was flushed.
    Broken,
}

/// Why receiving failed; the engine is no longer established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The peer violated the protocol: a Terminate with this error is queued.
    Protocol(TermError),
    /// The peer sent a Terminate with this error.
    Terminated(TermError),
    /// The engine was already terminating or broken.
    Closed,
}

/// One FPDU to write: `[head][inline][pieces…][trailer]`.
#[derive(Clone, Debug)]
pub struct TxPlan {
    fpdu: Option<FpduTx>,
    pieces: [Piece; MAX_SGE],
    npieces: usize,
    inline: [u8; wire::TERMINATE_MAX_LEN],
    inline_len: usize,
}

impl Default for TxPlan {
    fn default() -> TxPlan {
        TxPlan {
            fpdu: None,
            pieces: [Piece::default(); MAX_SGE],
            npieces: 0,
            inline: [0; wire::TERMINATE_MAX_LEN],
            inline_len: 0,
        }
    }
}

impl TxPlan {
    /// An empty plan, to be filled by [`Conn::next_tx`].
    pub fn new() -> TxPlan {
        TxPlan::default()
    }

    /// Length field and DDP/RDMAP header.
    pub fn head(&self) -> &[u8] {
        self.fpdu.as_ref().map_or(&[], FpduTx::head)
    }

    /// Engine-owned payload that precedes the pieces (already in the CRC).
    pub fn inline(&self) -> &[u8] {
        &self.inline[..self.inline_len]
    }

    /// Application memory to gather after the inline bytes, in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces[..self.npieces]
    }

    /// Payload bytes of the FPDU (inline and pieces).
    pub fn payload_len(&self) -> u64 {
        self.inline_len as u64 + self.pieces().iter().map(|p| p.len).sum::<u64>()
    }

    /// A piece's bytes, as they are sent (the CRC runs over them when on).
    pub fn payload(&mut self, bytes: &[u8]) -> Result<(), FpduError> {
        match &mut self.fpdu {
            Some(f) => f.payload(bytes),
            None => Err(FpduError::Misuse {
                expected: 0,
                got: bytes.len(),
            }),
        }
    }

    /// A piece of `len` bytes whose CRC32c was computed elsewhere.
    pub fn payload_crc(&mut self, len: usize, crc: u32) -> Result<(), FpduError> {
        match &mut self.fpdu {
            Some(f) => f.payload_crc(len, crc),
            None => Err(FpduError::Misuse {
                expected: 0,
                got: len,
            }),
        }
    }

    /// Pad and CRC, once every piece was fed.
    pub fn trailer(&mut self) -> Result<&[u8], FpduError> {
        match &mut self.fpdu {
            Some(f) => f.trailer(),
            None => Err(FpduError::Misuse {
                expected: 0,
                got: 0,
            }),
        }
    }

    fn clear(&mut self) {
        self.fpdu = None;
        self.npieces = 0;
        self.inline_len = 0;
    }
}

/// What to do with a received segment's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxAction {
    /// Place it into [`RxPlan::pieces`] (nothing when the payload is empty).
    Place,
    /// Read it into [`Conn::rx_inline`] (a Terminate body of this length).
    Inline(usize),
    /// No receive is posted for this Send: stop reading; retry later.
    NotReady,
}

/// Where a segment's payload goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct RxPlan {
    pieces: [Piece; MAX_SGE],
    npieces: usize,
}

impl RxPlan {
    pub fn new() -> RxPlan {
        RxPlan::default()
    }

    /// Destination ranges, in payload order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces[..self.npieces]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Not (fully) transmitted yet.
    Queued,
    /// Transmitted; waiting for an acknowledgement or a response.
    Sent,
    /// Finished; retires when every older request has.
    Done(WcStatus),
}

#[derive(Clone, Copy, Debug)]
struct SqEntry {
    wr_id: u64,
    op: SendOp,
    sges: [Sge; MAX_SGE],
    nsge: usize,
    len: u64,
    signaled: bool,
    fence: bool,
    /// Bytes planned so far.
    off: u64,
    /// Send MSN (queue 0) or Read Request MSN (queue 1), once sent.
    msn: u32,
    state: Slot,
}

const NO_SGE: Sge = Sge {
    addr: 0,
    len: 0,
    lkey: 0,
};

impl SqEntry {
    const EMPTY: SqEntry = SqEntry {
        wr_id: 0,
        op: SendOp::Send { solicited: false },
        sges: [NO_SGE; MAX_SGE],
        nsge: 0,
        len: 0,
        signaled: false,
        fence: false,
        off: 0,
        msn: 0,
        state: Slot::Queued,
    };

    fn wc_op(&self) -> WcOp {
        match self.op {
            SendOp::Send { .. } => WcOp::Send,
            SendOp::RdmaWrite { .. } => WcOp::RdmaWrite,
            SendOp::RdmaRead { .. } => WcOp::RdmaRead,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct RqEntry {
    wr_id: u64,
    sges: [Sge; MAX_SGE],
    nsge: usize,
    len: u64,
}

/// The queue pair's own receive queue: a ring of posted receives, the
/// oldest being filled. (A shared receive queue would stand in here.)
#[derive(Debug)]
pub struct RecvRing {
    slots: Box<[RqEntry]>,
    head: u64,
    tail: u64,
}

impl RecvRing {
    fn new(depth: usize) -> RecvRing {
        RecvRing {
            slots: vec![
                RqEntry {
                    wr_id: 0,
                    sges: [NO_SGE; MAX_SGE],
                    nsge: 0,
                    len: 0,
                };
                depth.max(1)
            ]
            .into_boxed_slice(),
            head: 0,
            tail: 0,
        }
    }

    fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }

    fn front(&self) -> Option<&RqEntry> {
        (self.head < self.tail).then(|| &self.slots[(self.head % self.slots.len() as u64) as usize])
    }

    fn push(&mut self, e: RqEntry) -> bool {
        if self.len() == self.slots.len() {
            return false;
        }
        let n = self.slots.len() as u64;
        self.slots[(self.tail % n) as usize] = e;
        self.tail += 1;
        true
    }

    fn pop(&mut self) -> Option<RqEntry> {
        let e = *self.front()?;
        self.head += 1;
        Some(e)
    }
}

/// An outbound Read Request awaiting its response.
#[derive(Clone, Copy, Debug, Default)]
struct OrdEntry {
    /// The consumer's read (send-queue sequence), `None` for an ack read.
    seq: Option<u64>,
    /// Every Send/Write with a lower sequence is acknowledged by the response.
    covers: u64,
    size: u64,
    got: u64,
    stag: u32,
}

/// An inbound Read Request to answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct IrdEntry {
    sink_stag: u32,
    sink_to: u64,
    source_to: u64,
    size: u64,
    sent: u64,
}

/// A small fixed ring.
#[derive(Debug)]
struct Ring<T> {
    slots: Box<[T]>,
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Ring<T> {
    fn new(cap: usize) -> Ring<T> {
        Ring {
            slots: vec![T::default(); cap.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }
    fn cap(&self) -> usize {
        self.slots.len()
    }
    fn push(&mut self, v: T) -> bool {
        if self.len == self.cap() {
            return false;
        }
        let i = (self.head + self.len) % self.cap();
        self.slots[i] = v;
        self.len += 1;
        true
    }
    fn front_mut(&mut self) -> Option<&mut T> {
        (self.len > 0).then(|| &mut self.slots[self.head])
    }
    fn pop(&mut self) -> Option<T> {
        let v = *self.front_mut()?;
        self.head = (self.head + 1) % self.cap();
        self.len -= 1;
        Some(v)
    }
    fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(move |i| &self.slots[(self.head + i) % self.cap()])
    }
    fn clear(&mut self) {
        self.len = 0;
    }
}

/// What the last plan was, for [`Conn::tx_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastTx {
    None,
    /// The last FPDU of send-queue entry `seq`, completing locally.
    Complete(u64),
    Other,
}

/// What the segment under reception does when it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxCur {
    None,
    Send {
        len: u64,
        last: bool,
        solicited: bool,
    },
    Write,
    ReadRequest(IrdEntry),
    ReadResponse {
        len: u64,
        last: bool,
    },
    Terminate(usize),
}

/// One connection's protocol engine.
#[derive(Debug)]
pub struct Conn {
    cfg: ConnConfig,
    neg: Negotiated,
    state: ConnState,
    sq: Box<[SqEntry]>,
    /// Oldest unretired, next to transmit, next free (sequences).
    sq_head: u64,
    sq_tx: u64,
    sq_tail: u64,
    rq: RecvRing,
    /// Bytes placed into the receive at the front of `rq`.
    rq_off: u64,
    ord: Ring<OrdEntry>,
    /// Consumer reads in `ord`.
    ord_consumer: usize,
    ord_limit: usize,
    consumer_ord: usize,
    ird: Ring<IrdEntry>,
    /// Inbound reads accepted at once (the negotiated IRD).
    ird_limit: usize,
    /// Next MSN to send on queues 0, 1, 2.
    tx_msn: [u32; 3],
    /// Next MSN expected on queues 0, 1, 2.
    rx_msn: [u32; 3],
    ack_pending: bool,
    /// Whose turn when both a response and the send queue are ready.
    resp_turn: bool,
    last_tx: LastTx,
    rx_cur: RxCur,
    rx_seg: Option<Segment>,
    rx_inline: [u8; RX_INLINE_MAX],
    term: [u8; wire::TERMINATE_MAX_LEN],
    term_len: usize,
    term_sent: bool,
}

fn piece_iter(sges: &[Sge], off: u64, len: u64, out: &mut [Piece; MAX_SGE]) -> usize {
    let (mut skip, mut left, mut n) = (off, len, 0);
    for s in sges {
        if left == 0 {
            break;
        }
        if skip >= s.len {
            skip -= s.len;
            continue;
        }
        let take = (s.len - skip).min(left);
        out[n] = Piece {
            addr: s.addr + skip,
            len: take,
        };
        n += 1;
        left -= take;
        skip = 0;
    }
    n
}

fn protection(f: KeyFault) -> TermError {
    TermError::RdmapProtection(match f {
        KeyFault::Key => RdmapProtection::InvalidStag,
        KeyFault::Bounds => RdmapProtection::BaseOrBounds,
        KeyFault::Rights => RdmapProtection::AccessRights,
        KeyFault::Domain => RdmapProtection::StagNotAssociated,
    })
}

/// The status a requester's work request gets for a Terminate's error.
pub fn status_of(e: TermError) -> WcStatus {
    match e {
        TermError::RdmapProtection(_) | TermError::DdpTagged(_) => WcStatus::RemoteAccess,
        TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer) => WcStatus::ReceiverNotReady,
        _ => WcStatus::RemoteOperation,
    }
}

impl Conn {
    /// An established connection; every queue is allocated here.
    pub fn new(cfg: ConnConfig, neg: Negotiated) -> Conn {
        let mut cfg = cfg;
        cfg.max_sge = cfg.max_sge.min(MAX_SGE as u32);
        let mut neg = neg;
        neg.max_fpdu = neg.max_fpdu.max(MIN_FPDU);
        if neg.ack_reads && neg.ord == 0 {
            neg.ack_reads = false;
        }
        let reserve = usize::from(neg.ack_reads);
        let ord_limit = (neg.ord as usize).min(cfg.ord as usize + reserve);
        let consumer_ord = (cfg.ord as usize).min(ord_limit - reserve.min(ord_limit));
        Conn {
            sq: vec![SqEntry::EMPTY; (cfg.send_depth as usize).max(1)].into_boxed_slice(),
            sq_head: 0,
            sq_tx: 0,
            sq_tail: 0,
            rq: RecvRing::new(cfg.recv_depth as usize),
            rq_off: 0,
            ord: Ring::new(ord_limit),
            ord_consumer: 0,
            ord_limit,
            consumer_ord,
            ird: Ring::new(cfg.ird as usize + 1),
            ird_limit: (neg.ird as usize).min(cfg.ird as usize + 1),
            tx_msn: [1; 3],
            rx_msn: [1; 3],
            ack_pending: false,
            resp_turn: false,
            last_tx: LastTx::None,
            rx_cur: RxCur::None,
            rx_seg: None,
            rx_inline: [0; RX_INLINE_MAX],
            term: [0; wire::TERMINATE_MAX_LEN],
            term_len: 0,
            term_sent: false,
            state: ConnState::Established,
            cfg,
            neg,
        }
    }

    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Whether Sends/Writes complete through ack reads on this connection.
    pub fn ack_reads(&self) -> bool {
        self.neg.ack_reads
    }

    /// Receives posted and not yet consumed.
    pub fn recv_outstanding(&self) -> usize {
        self.rq.len()
    }

    /// Send-queue requests not yet retired.
    pub fn send_outstanding(&self) -> usize {
        (self.sq_tail - self.sq_head) as usize
    }

    fn slot(&self, seq: u64) -> usize {
        (seq % self.sq.len() as u64) as usize
    }

    fn check_sgl(
        &self,
        sgl: &[Sge],
        need: Rights,
        keys: &KeyTable,
    ) -> Result<([Sge; MAX_SGE], u64), PostError> {
        if sgl.len() > self.cfg.max_sge as usize {
            return Err(PostError::TooManySge);
        }
        let mut sges = [NO_SGE; MAX_SGE];
        let mut total = 0u64;
        for (i, s) in sgl.iter().enumerate() {
            if s.len > 0 {
                keys.check_local(s.lkey, s.addr, s.len, need, Some(self.cfg.pd))
                    .map_err(PostError::Protection)?;
            }
            total = total.saturating_add(s.len);
            sges[i] = *s;
        }
        if total > MAX_MSG {
            return Err(PostError::Length);
        }
        Ok((sges, total))
    }

    /// Queues a Send, RDMA Write or RDMA Read (the scatter list is copied).
    pub fn post_send(&mut self, wr: &SendWr<'_>, keys: &KeyTable) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.send_outstanding() == self.sq.len() {
            return Err(PostError::QueueFull);
        }
        let need = match wr.op {
            SendOp::RdmaRead { .. } => Rights::LOCAL_WRITE,
            _ => Rights::LOCAL_READ,
        };
        let (sges, len) = self.check_sgl(wr.sgl, need, keys)?;
        if matches!(wr.op, SendOp::RdmaRead { .. }) && self.consumer_ord == 0 {
            return Err(PostError::Unsupported);
        }
        let i = self.slot(self.sq_tail);
        self.sq[i] = SqEntry {
            wr_id: wr.wr_id,
            op: wr.op,
            sges,
            nsge: wr.sgl.len(),
            len,
            signaled: wr.signaled,
            fence: wr.fence,
            off: 0,
            msn: 0,
            state: Slot::Queued,
        };
        self.sq_tail += 1;
        Ok(())
    }

    /// Queues a receive (the scatter list is copied).
    pub fn post_recv(&mut self, wr: &RecvWr<'_>, keys: &KeyTable) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.rq.len() == self.rq.slots.len() {
            return Err(PostError::QueueFull);
        }
        let (sges, len) = self.check_sgl(wr.sgl, Rights::LOCAL_WRITE, keys)?;
        self.rq.push(RqEntry {
            wr_id: wr.wr_id,
            sges,
            nsge: wr.sgl.len(),
            len,
        });
        Ok(())
    }

    // ───────────────────────────── transmit ─────────────────────────────

    /// Whether the send queue's next request may start or continue now.
    fn sq_ready(&self) -> bool {
        if self.sq_tx == self.sq_tail {
            return false;
        }
        let e = &self.sq[self.slot(self.sq_tx)];
        if e.off > 0 {
            return true;
        }
        if e.fence && self.ord_consumer > 0 {
            return false;
        }
        if matches!(e.op, SendOp::RdmaRead { .. })
            && (self.ord_consumer >= self.consumer_ord || self.ord.len >= self.ord_limit)
        {
            return false;
        }
        true
    }

    /// The next FPDU to send, if any. Call [`Conn::tx_done`] once it has
    /// been written completely, before asking for the next one.
    pub fn next_tx(&mut self, plan: &mut TxPlan) -> bool {
        plan.clear();
        self.last_tx = LastTx::None;
        match self.state {
            ConnState::Broken => return false,
            ConnState::Terminating => {
                if self.term_sent {
                    return false;
                }
                self.term_sent = true;
                let h = Header::new(
                    Ulp::Terminate {
                        msn: self.tx_msn[2],
                        mo: 0,
                    },
                    true,
                );
                self.tx_msn[2] += 1;
                plan.inline[..self.term_len].copy_from_slice(&self.term[..self.term_len]);
                plan.inline_len = self.term_len;
                return self.start(plan, &h, LastTx::Other);
            }
            ConnState::Established => {}
        }
        let sq_ready = self.sq_ready();
        let resp_ready = self.ird.len > 0;
        let sq_cur = (self.sq_tx < self.sq_tail).then(|| self.sq[self.slot(self.sq_tx)]);
        let sq_write_mid =
            sq_cur.is_some_and(|e| matches!(e.op, SendOp::RdmaWrite { .. }) && e.off > 0);
        let sq_is_write = sq_cur.is_some_and(|e| matches!(e.op, SendOp::RdmaWrite { .. }));
        let resp_mid = self.ird.iter().next().is_some_and(|r| r.sent > 0);
        let use_resp = if !resp_ready {
            false
        } else if !sq_ready {
            true
        } else if sq_write_mid {
            false
        } else if resp_mid && sq_is_write {
            true
        } else {
            self.resp_turn
        };
        if use_resp {
            self.resp_turn = false;
            return self.tx_response(plan);
        }
        self.resp_turn = true;
        if sq_ready {
            return self.tx_sq(plan);
        }
        if self.ack_pending && self.ord.len < self.ord_limit {
            return self.tx_ack(plan);
        }
        false
    }

    fn start(&mut self, plan: &mut TxPlan, h: &Header, last: LastTx) -> bool {
        let len = plan.payload_len() as usize;
        match FpduTx::new(h, len, self.neg.crc) {
            Ok(mut f) => {
                let inline = &plan.inline[..plan.inline_len];
                if f.payload(inline).is_err() {
                    return false;
                }
                plan.fpdu = Some(f);
                self.last_tx = last;
                true
            }
            Err(_) => false,
        }
    }

    fn tx_response(&mut self, plan: &mut TxPlan) -> bool {
        let max = wire::max_payload(TAGGED_HDR_LEN, self.neg.max_fpdu) as u64;
        let Some(r) = self.ird.front_mut() else {
            return false;
        };
        let n = (r.size - r.sent).min(max);
        let h = Header::new(
            Ulp::ReadResponse {
                stag: r.sink_stag,
                to: r.sink_to.wrapping_add(r.sent),
            },
            r.sent + n == r.size,
        );
        if n > 0 {
            plan.pieces[0] = Piece {
                addr: r.source_to + r.sent,
                len: n,
            };
            plan.npieces = 1;
        }
        r.sent += n;
        if r.sent == r.size {
            self.ird.pop();
        }
        self.start(plan, &h, LastTx::Other)
    }

    fn tx_ack(&mut self, plan: &mut TxPlan) -> bool {
        self.ack_pending = false;
        let msn = self.tx_msn[1];
        self.tx_msn[1] += 1;
        let stag = SINK_TAG_BIT | msn;
        self.ord.push(OrdEntry {
            seq: None,
            covers: self.sq_tx,
            size: 0,
            got: 0,
            stag,
        });
        let h = Header::new(
            Ulp::ReadRequest {
                msn,
                mo: 0,
                req: ReadRequest {
                    sink_stag: stag,
                    sink_to: 0,
                    size: 0,
                    source_stag: 0,
                    source_to: 0,
                },
            },
            true,
        );
        self.start(plan, &h, LastTx::Other)
    }

    fn tx_sq(&mut self, plan: &mut TxPlan) -> bool {
        let seq = self.sq_tx;
        let i = self.slot(seq);
        let e = self.sq[i];
        match e.op {
            SendOp::RdmaRead { remote_addr, rkey } => {
                let msn = self.tx_msn[1];
                self.tx_msn[1] += 1;
                let stag = SINK_TAG_BIT | msn;
                self.ord.push(OrdEntry {
                    seq: Some(seq),
                    covers: seq,
                    size: e.len,
                    got: 0,
                    stag,
                });
                self.ord_consumer += 1;
                // The response acknowledges everything before the read.
                self.ack_pending = false;
                let s = &mut self.sq[i];
                s.msn = msn;
                s.state = Slot::Sent;
                self.sq_tx += 1;
                let h = Header::new(
                    Ulp::ReadRequest {
                        msn,
                        mo: 0,
                        req: ReadRequest {
                            sink_stag: stag,
                            sink_to: 0,
                            size: e.len as u32,
                            source_stag: rkey,
                            source_to: remote_addr,
                        },
                    },
                    true,
                );
                self.start(plan, &h, LastTx::Other)
            }
            SendOp::Send { .. } | SendOp::RdmaWrite { .. } => {
                let (hl, msn) = match e.op {
                    SendOp::Send { .. } if e.off == 0 => {
                        let m = self.tx_msn[0];
                        self.tx_msn[0] += 1;
                        (UNTAGGED_HDR_LEN, m)
                    }
                    SendOp::Send { .. } => (UNTAGGED_HDR_LEN, e.msn),
                    _ => (TAGGED_HDR_LEN, 0),
                };
                let max = wire::max_payload(hl, self.neg.max_fpdu) as u64;
                let n = (e.len - e.off).min(max);
                let last = e.off + n == e.len;
                let ulp = match e.op {
                    SendOp::Send { solicited } => Ulp::Send {
                        msn,
                        mo: e.off as u32,
                        solicited,
                        invalidate: None,
                    },
                    SendOp::RdmaWrite { remote_addr, rkey } => Ulp::RdmaWrite {
                        stag: rkey,
                        to: remote_addr.wrapping_add(e.off),
                    },
                    SendOp::RdmaRead { .. } => unreachable!("handled above"),
                };
                plan.npieces = piece_iter(&e.sges[..e.nsge], e.off, n, &mut plan.pieces);
                let s = &mut self.sq[i];
                s.msn = msn;
                s.off += n;
                let mut done = LastTx::Other;
                if last {
                    s.state = Slot::Sent;
                    self.sq_tx += 1;
                    if self.neg.ack_reads {
                        if e.signaled {
                            self.ack_pending = true;
                        }
                    } else {
                        done = LastTx::Complete(seq);
                    }
                }
                self.start(plan, &Header::new(ulp, last), done)
            }
        }
    }

    /// The last plan from [`Conn::next_tx`] has been written completely.
    pub fn tx_done(&mut self, sink: &mut impl FnMut(Wc)) {
        match std::mem::replace(&mut self.last_tx, LastTx::None) {
            LastTx::Complete(seq) => {
                let i = self.slot(seq);
                if self.sq[i].state == Slot::Sent {
                    self.sq[i].state = Slot::Done(WcStatus::Success);
                }
                self.retire(sink);
            }
            LastTx::Other | LastTx::None => {}
        }
        if self.state == ConnState::Terminating && self.term_sent {
            self.state = ConnState::Broken;
        }
    }

    /// Emits the completions of finished send-queue requests, oldest first.
    fn retire(&mut self, sink: &mut impl FnMut(Wc)) {
        while self.sq_head < self.sq_tail {
            let e = self.sq[self.slot(self.sq_head)];
            let Slot::Done(status) = e.state else {
                break;
            };
            self.sq_head += 1;
            if e.signaled || status != WcStatus::Success {
                sink(Wc {
                    wr_id: e.wr_id,
                    status,
                    op: e.wc_op(),
                    byte_len: if status == WcStatus::Success {
                        e.len
                    } else {
                        0
                    },
                    qp: self.cfg.qp,
                    solicited: false,
                });
            }
        }
    }

    // ───────────────────────────── receive ─────────────────────────────

    /// Payload buffer for [`RxAction::Inline`].
    pub fn rx_inline(&mut self) -> &mut [u8] {
        &mut self.rx_inline
    }

    /// A segment header arrived (from the FPDU reader). Checks it and says
    /// where its payload goes. On [`RxAction::NotReady`] nothing changed:
    /// call again with the same segment later.
    pub fn rx_header(
        &mut self,
        seg: &Segment,
        keys: &KeyTable,
        plan: &mut RxPlan,
        sink: &mut impl FnMut(Wc),
    ) -> Result<RxAction, Fault> {
        plan.npieces = 0;
        self.rx_cur = RxCur::None;
        if self.state != ConnState::Established {
            return Err(Fault::Closed);
        }
        self.rx_seg = Some(*seg);
        let len = seg.payload_len as u64;
        let h = seg.header;
        match h.ulp {
            Ulp::Send {
                msn, mo, solicited, ..
            } => {
                if msn != self.rx_msn[0] {
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
                }
                let Some(r) = self.rq.front().copied() else {
                    return Ok(RxAction::NotReady);
                };
                if u64::from(mo) != self.rq_off {
                    return Err(self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMo), sink));
                }
                if u64::from(mo) + len > r.len {
                    // The receive completes in error before the flush.
                    self.rq.pop();
                    sink(Wc {
                        wr_id: r.wr_id,
                        status: WcStatus::LocalLength,
                        op: WcOp::Recv,
                        byte_len: self.rq_off,
                        qp: self.cfg.qp,
                        solicited: false,
                    });
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::MessageTooLong), sink)
                    );
                }
                plan.npieces = piece_iter(&r.sges[..r.nsge], u64::from(mo), len, &mut plan.pieces);
                self.rx_cur = RxCur::Send {
                    len,
                    last: h.last,
                    solicited,
                };
                Ok(RxAction::Place)
            }
            Ulp::RdmaWrite { stag, to } => {
                if len > 0 {
                    if let Err(f) =
                        keys.check_remote(stag, to, len, Rights::REMOTE_WRITE, Some(self.cfg.pd))
                    {
                        return Err(self.fail(protection(f), sink));
                    }
                    plan.pieces[0] = Piece { addr: to, len };
                    plan.npieces = 1;
                }
                self.rx_cur = RxCur::Write;
                Ok(RxAction::Place)
            }
            Ulp::ReadRequest { msn, mo, req } => {
                if msn != self.rx_msn[1] {
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
                }
                if mo != 0 || !h.last || len != 0 {
                    return Err(self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMo), sink));
                }
                if self.ird.len >= self.ird_limit {
                    return Err(self.fail(
                        TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
                        sink,
                    ));
                }
                let size = u64::from(req.size);
                if size > 0 {
                    if let Err(f) = keys.check_remote(
                        req.source_stag,
                        req.source_to,
                        size,
                        Rights::REMOTE_READ,
                        Some(self.cfg.pd),
                    ) {
                        return Err(self.fail(protection(f), sink));
                    }
                }
                self.rx_cur = RxCur::ReadRequest(IrdEntry {
                    sink_stag: req.sink_stag,
                    sink_to: req.sink_to,
                    source_to: req.source_to,
                    size,
                    sent: 0,
                });
                Ok(RxAction::Place)
            }
            Ulp::ReadResponse { stag, to } => {
                let Some(o) = self.ord.front_mut().copied() else {
                    return Err(self.fail(
                        TermError::RdmapOperation(RdmapOperation::UnexpectedOpcode),
                        sink,
                    ));
                };
                if stag != o.stag {
                    return Err(self.fail(TermError::DdpTagged(DdpTagged::InvalidStag), sink));
                }
                if to != o.got || o.got + len > o.size || (h.last && o.got + len != o.size) {
                    return Err(self.fail(TermError::DdpTagged(DdpTagged::BaseOrBounds), sink));
                }
                if let Some(seq) = o.seq {
                    let e = &self.sq[self.slot(seq)];
                    plan.npieces = piece_iter(&e.sges[..e.nsge], to, len, &mut plan.pieces);
                }
                self.rx_cur = RxCur::ReadResponse { len, last: h.last };
                Ok(RxAction::Place)
            }
            Ulp::Terminate { .. } => {
                if seg.payload_len > RX_INLINE_MAX {
                    self.state = ConnState::Broken;
                    self.flush(sink);
                    return Err(Fault::Terminated(TermError::RdmapOperation(
                        RdmapOperation::Unspecified,
                    )));
                }
                self.rx_cur = RxCur::Terminate(seg.payload_len);
                Ok(RxAction::Inline(seg.payload_len))
            }
        }
    }

    /// The segment's payload is placed and its FPDU checked (the reader's
    /// `Done`): its effects and completions happen now.
    pub fn rx_done(&mut self, sink: &mut impl FnMut(Wc)) -> Result<(), Fault> {
        if self.state != ConnState::Established {
            return Err(Fault::Closed);
        }
        match std::mem::replace(&mut self.rx_cur, RxCur::None) {
            RxCur::None | RxCur::Write => {}
            RxCur::Send {
                len,
                last,
                solicited,
            } => {
                self.rq_off += len;
                if last {
                    self.rx_msn[0] = self.rx_msn[0].wrapping_add(1);
                    if let Some(r) = self.rq.pop() {
                        sink(Wc {
                            wr_id: r.wr_id,
                            status: WcStatus::Success,
                            op: WcOp::Recv,
                            byte_len: self.rq_off,
                            qp: self.cfg.qp,
                            solicited,
                        });
                    }
                    self.rq_off = 0;
                }
            }
            RxCur::ReadRequest(e) => {
                self.rx_msn[1] = self.rx_msn[1].wrapping_add(1);
                self.ird.push(e);
            }
            RxCur::ReadResponse { len, last } => {
                let Some(o) = self.ord.front_mut() else {
                    return Err(Fault::Closed);
                };
                o.got += len;
                if last {
                    let o = self.ord.pop().unwrap_or_default();
                    if let Some(seq) = o.seq {
                        self.ord_consumer -= 1;
                        let i = self.slot(seq);
                        self.sq[i].state = Slot::Done(WcStatus::Success);
                    }
                    self.acknowledge(o.covers);
                    self.retire(sink);
                }
            }
            RxCur::Terminate(n) => return Err(self.terminated(n, sink)),
        }
        Ok(())
    }

    /// Sends and Writes before `covers` were processed by the peer.
    fn acknowledge(&mut self, covers: u64) {
        for seq in self.sq_head..covers.min(self.sq_tx) {
            let i = self.slot(seq);
            let e = &mut self.sq[i];
            if e.state == Slot::Sent && !matches!(e.op, SendOp::RdmaRead { .. }) {
                e.state = Slot::Done(WcStatus::Success);
            }
        }
    }

    /// A Terminate arrived: complete the request it names, flush the rest.
    fn terminated(&mut self, n: usize, sink: &mut impl FnMut(Wc)) -> Fault {
        self.state = ConnState::Broken;
        let body = &self.rx_inline[..n];
        let (error, off) = match Terminate::decode(body) {
            Ok((t, _)) => (t.error, t.offending().and_then(Result::ok)),
            Err(_) => (TermError::RdmapOperation(RdmapOperation::Unspecified), None),
        };
        let target = off.and_then(|h| {
            (self.sq_head..self.sq_tx).find(|&seq| {
                let e = &self.sq[self.slot(seq)];
                if matches!(e.state, Slot::Done(_)) {
                    return false;
                }
                match (h.ulp, e.op) {
                    (Ulp::Send { msn, .. }, SendOp::Send { .. }) => e.msn == msn,
                    (Ulp::ReadRequest { msn, .. }, SendOp::RdmaRead { .. }) => e.msn == msn,
                    (Ulp::RdmaWrite { stag, to }, SendOp::RdmaWrite { remote_addr, rkey }) => {
                        stag == rkey && to >= remote_addr && to <= remote_addr + e.len
                    }
                    _ => false,
                }
            })
        });
        if let Some(seq) = target {
            let i = self.slot(seq);
            self.sq[i].state = Slot::Done(status_of(error));
        }
        self.flush(sink);
        Fault::Terminated(error)
    }

    /// The peer broke the protocol: queue a Terminate naming the segment
    /// under reception, flush, and report the error.
    fn fail(&mut self, error: TermError, sink: &mut impl FnMut(Wc)) -> Fault {
        let mut hdr = [0u8; MAX_HDR_LEN];
        let t = match self.rx_seg {
            Some(seg) => {
                let n = seg.header.encode(&mut hdr);
                let ddp = if n == TAGGED_HDR_LEN {
                    &hdr[..TAGGED_HDR_LEN]
                } else {
                    &hdr[..UNTAGGED_HDR_LEN]
                };
                let rdmap = (n > UNTAGGED_HDR_LEN)
                    .then(|| &hdr[UNTAGGED_HDR_LEN..UNTAGGED_HDR_LEN + READ_REQUEST_LEN]);
                Terminate::with_segment(error, seg.ulpdu_len, ddp, rdmap)
            }
            None => Terminate::new(error),
        };
        self.term_len = t
            .encode(&mut self.term)
            .unwrap_or_else(|_| Terminate::new(error).encode(&mut self.term).unwrap_or(0));
        self.term_sent = false;
        self.flush(sink);
        self.state = ConnState::Terminating;
        Fault::Protocol(error)
    }

    /// The receiver-not-ready time ran out for the Send last refused with
    /// [`RxAction::NotReady`]: queue the Terminate (DDP untagged buffer
    /// error, no buffer) and flush.
    pub fn rnr_expired(&mut self, sink: &mut impl FnMut(Wc)) -> Fault {
        if self.state != ConnState::Established {
            return Fault::Closed;
        }
        self.fail(
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
            sink,
        )
    }

    /// Completes every outstanding request with [`WcStatus::Flushed`]: the
    /// send queue in posting order, then the receive queue. Idempotent;
    /// the engine is broken afterwards.
    pub fn flush(&mut self, sink: &mut impl FnMut(Wc)) {
        if self.state == ConnState::Established {
            self.state = ConnState::Broken;
        }
        for seq in self.sq_head..self.sq_tail {
            let i = self.slot(seq);
            if !matches!(self.sq[i].state, Slot::Done(_)) {
                self.sq[i].state = Slot::Done(WcStatus::Flushed);
            }
        }
        self.sq_tx = self.sq_tail;
        self.retire(sink);
        while let Some(r) = self.rq.pop() {
            sink(Wc {
                wr_id: r.wr_id,
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.cfg.qp,
                solicited: false,
            });
        }
        self.rq_off = 0;
        self.ord.clear();
        self.ord_consumer = 0;
        self.ird.clear();
        self.ack_pending = false;
        self.rx_cur = RxCur::None;
    }
}
