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
//! - **Remote access errors** name the layer that validates (RFC 5040
//!   §7): an RDMA Write's sink is a DDP tagged buffer (invalid STag, base
//!   or bounds, STag not associated, TO wrap: RFC 5041's codes), a Read
//!   Request's source is RDMAP's (remote protection errors). DDP has no
//!   code for missing rights, so a Write without remote write access gets
//!   RDMAP's access rights violation. An offset plus length past 2⁶⁴ is a
//!   TO wrap, not a bounds violation.
//! - **Flush order**: send queue first (posting order), then the receive
//!   queue (posting order); each request completes exactly once.
//! - **Interleaving**: Read Response FPDUs alternate with send-queue FPDUs,
//!   but two tagged messages (an RDMA Write and a Read Response) never
//!   interleave their segments (peers such as `siw` track one inbound tagged
//!   message at a time).
//! - **Receive queue**: the engine's own ring ([`Conn::post_recv`]), or a
//!   shared receive queue ([`SharedRecv`], [`Conn::set_srq`]): a Send's
//!   first segment takes the oldest receive out of it, and that receive
//!   belongs to this connection until the Send's last segment (or a flush)
//!   completes it.
//! - **Memory-window binds** ([`Conn::post_bind`]) take effect in the key
//!   table when posted (the caller checks and applies them); their slot in
//!   the send queue only keeps the completion in posting order.

use std::collections::TryReserveError;

use crate::ring::{Fifo, SeqRing};
use crate::transport::soft::keys::{KeyFault, KeyTable, Rights};
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
    /// A memory-window bind: nothing to transmit.
    bind: bool,
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
        bind: false,
    };

    fn wc_op(&self) -> WcOp {
        if self.bind {
            return WcOp::Bind;
        }
        match self.op {
            SendOp::Send { .. } => WcOp::Send,
            SendOp::RdmaWrite { .. } => WcOp::RdmaWrite,
            SendOp::RdmaRead { .. } => WcOp::RdmaRead,
        }
    }
}

/// Bytes of a send-queue entry.
pub const SQ_ENTRY_BYTES: usize = std::mem::size_of::<SqEntry>();
/// Bytes of a receive-queue entry.
pub const RQ_ENTRY_BYTES: usize = std::mem::size_of::<RqEntry>();

/// A posted receive (checked, copied out of the consumer's list).
#[derive(Clone, Copy, Debug)]
pub struct RqEntry {
    wr_id: u64,
    sges: [Sge; MAX_SGE],
    nsge: usize,
    len: u64,
}

impl RqEntry {
    /// Checks a receive's scatter list against `keys` (local write, zone
    /// `pz`) and copies it.
    pub fn check(
        wr: &RecvWr<'_>,
        max_sge: usize,
        pz: u64,
        keys: &KeyTable,
    ) -> Result<RqEntry, PostError> {
        if wr.sgl.len() > max_sge.min(MAX_SGE) {
            return Err(PostError::TooManySge);
        }
        let mut sges = [NO_SGE; MAX_SGE];
        let mut len = 0u64;
        for (k, s) in wr.sgl.iter().enumerate() {
            if s.len > 0 {
                keys.check_local(s.lkey, s.addr, s.len, Rights::LOCAL_WRITE, Some(pz))
                    .map_err(PostError::Protection)?;
            }
            sges[k] = *s;
            len = len.checked_add(s.len).ok_or(PostError::Length)?;
        }
        if len > MAX_MSG {
            return Err(PostError::Length);
        }
        Ok(RqEntry {
            wr_id: wr.wr_id,
            sges,
            nsge: wr.sgl.len(),
            len,
        })
    }

    /// The consumer's id of the receive.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// The receive as a work request again (its copied scatter list).
    pub fn as_wr(&self) -> RecvWr<'_> {
        RecvWr {
            wr_id: self.wr_id,
            sgl: &self.sges[..self.nsge],
        }
    }
}

/// Where a connection on a shared receive queue takes its receives.
pub trait SharedRecv: Send + Sync + std::fmt::Debug {
    /// Removes and returns the oldest posted receive.
    fn take(&self) -> Option<RqEntry>;
}

/// A ring of posted receives, the oldest being filled: a queue pair's own
/// receive queue, and the inside of a shared one (memory follows use:
/// [`Fifo`]).
#[derive(Debug)]
pub struct RecvRing {
    q: Fifo<RqEntry>,
}

const NO_RECV: RqEntry = RqEntry {
    wr_id: 0,
    sges: [NO_SGE; MAX_SGE],
    nsge: 0,
    len: 0,
};

impl RecvRing {
    /// A ring for `depth` receives (at least one).
    pub fn new(depth: usize) -> Result<RecvRing, TryReserveError> {
        Ok(RecvRing {
            q: Fifo::new(depth.max(1), NO_RECV)?,
        })
    }

    /// Receives queued.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// How many it holds.
    pub fn capacity(&self) -> usize {
        self.q.depth()
    }

    /// Changes how many it holds (`false` if the receives queued would
    /// not fit, or there is no memory).
    pub fn resize(&mut self, depth: usize) -> bool {
        self.q.resize(depth.max(1)).is_ok()
    }

    fn front(&self) -> Option<&RqEntry> {
        self.q.front()
    }

    /// Queues a receive; false when full.
    pub fn push(&mut self, e: RqEntry) -> bool {
        self.q.push_back(e)
    }

    /// Removes the oldest receive.
    pub fn pop(&mut self) -> Option<RqEntry> {
        self.q.pop_front()
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
    /// The Terminate: once written the connection is over.
    Terminate,
    Other,
}

/// Names an FPDU [`Conn::next_tx`] planned, for [`Conn::tx_written`] once
/// its bytes are written: several plans may be in flight at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxToken(LastTx);

impl TxToken {
    /// A token that completes nothing.
    pub const NONE: TxToken = TxToken(LastTx::None);
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
    /// Indexed by sequence (memory follows use: [`SeqRing`]).
    sq: SeqRing<SqEntry>,
    /// Oldest unretired, next to transmit, next free (sequences).
    sq_head: u64,
    sq_tx: u64,
    sq_tail: u64,
    rq: RecvRing,
    /// The shared receive queue, if the queue pair uses one.
    srq: Option<std::sync::Arc<dyn SharedRecv>>,
    /// The shared queue's receive a Send is being placed into.
    srq_cur: Option<RqEntry>,
    /// Bytes placed into the receive at the front of `rq` (or `srq_cur`).
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
    /// Where bytes a peer wrongly sends in the response to an ack read go
    /// (made the first time a peer does: siw answers a zero-length Read
    /// Request it had to queue with a previous message's bytes).
    bucket: Option<Box<[u8]>>,
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

/// The Terminate error for a Read Request's data source the key table
/// refused (RFC 5040: RDMAP validates the source, remote protection errors).
fn protection(f: KeyFault, to: u64, len: u64) -> TermError {
    TermError::RdmapProtection(match f {
        KeyFault::Key => RdmapProtection::InvalidStag,
        KeyFault::Bounds if to.checked_add(len).is_none() => RdmapProtection::ToWrap,
        KeyFault::Bounds => RdmapProtection::BaseOrBounds,
        KeyFault::Rights => RdmapProtection::AccessRights,
        KeyFault::Domain => RdmapProtection::StagNotAssociated,
    })
}

/// The Terminate error for an RDMA Write's sink the key table refused
/// (RFC 5040: DDP validates tagged segments, RFC 5041 tagged buffer
/// errors). DDP has no code for missing rights: that one stays RDMAP's
/// access rights violation.
fn tagged_protection(f: KeyFault, to: u64, len: u64) -> TermError {
    TermError::DdpTagged(match f {
        KeyFault::Key => DdpTagged::InvalidStag,
        KeyFault::Bounds if to.checked_add(len).is_none() => DdpTagged::ToWrap,
        KeyFault::Bounds => DdpTagged::BaseOrBounds,
        KeyFault::Domain => DdpTagged::StagNotAssociated,
        KeyFault::Rights => return protection(f, to, len),
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
    /// An established connection; every queue is allocated here (its full
    /// depth reserved, its memory written as it fills: [`SeqRing`]).
    pub fn new(cfg: ConnConfig, neg: Negotiated) -> Result<Conn, TryReserveError> {
        let mut cfg = cfg;
        cfg.max_sge = cfg.max_sge.min(MAX_SGE as u32);
        let mut neg = neg;
        neg.max_fpdu = neg.max_fpdu.max(MIN_FPDU);
        // Ack reads need a credit beyond the consumer's reads; without one,
        // fall back to local completion.
        if neg.ack_reads && (neg.ord as u64) < u64::from(cfg.ord) + 1 {
            neg.ack_reads = false;
        }
        let reserve = usize::from(neg.ack_reads);
        let ord_limit = (neg.ord as usize).min(cfg.ord as usize + reserve);
        let consumer_ord = (cfg.ord as usize).min(ord_limit - reserve.min(ord_limit));
        let sq = SeqRing::new(cfg.send_depth as usize, SqEntry::EMPTY)?;
        Ok(Conn {
            sq,
            sq_head: 0,
            sq_tx: 0,
            sq_tail: 0,
            rq: RecvRing::new(cfg.recv_depth as usize)?,
            srq: None,
            srq_cur: None,
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
            bucket: None,
            term: [0; wire::TERMINATE_MAX_LEN],
            term_len: 0,
            term_sent: false,
            state: ConnState::Established,
            cfg,
            neg,
        })
    }

    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Setup consumed the peer's Read RTR, an inbound Read Request with
    /// `msn` ([`super::setup::Established::read_rtr_msn`]), and answered it:
    /// the peer's next Read Request carries `msn + 1`.
    pub fn read_rtr_taken(&mut self, msn: u32) {
        self.rx_msn[1] = msn.wrapping_add(1);
    }

    /// Whether Sends/Writes complete through ack reads on this connection.
    pub fn ack_reads(&self) -> bool {
        self.neg.ack_reads
    }

    /// Receives posted and not yet consumed.
    pub fn recv_outstanding(&self) -> usize {
        self.rq.len()
    }

    /// Takes receives from `srq` instead of the connection's own queue
    /// (call before any traffic).
    pub fn set_srq(&mut self, srq: std::sync::Arc<dyn SharedRecv>) {
        self.srq = Some(srq);
    }

    /// The receive the next Send segment goes into (taking one from the
    /// shared queue when a new message starts).
    fn recv_front(&mut self) -> Option<RqEntry> {
        match &self.srq {
            Some(srq) => {
                if self.srq_cur.is_none() {
                    self.srq_cur = srq.take();
                }
                self.srq_cur
            }
            None => self.rq.front().copied(),
        }
    }

    /// Removes the receive being filled.
    fn recv_pop(&mut self) -> Option<RqEntry> {
        if self.srq.is_some() {
            self.srq_cur.take()
        } else {
            self.rq.pop()
        }
    }

    /// Send-queue requests not yet retired.
    pub fn send_outstanding(&self) -> usize {
        (self.sq_tail - self.sq_head) as usize
    }

    /// True when all the connection has to send are responses to
    /// zero-length Read Requests (acknowledgements): they may wait a little
    /// for outbound data to travel with.
    pub fn only_acks_due(&self) -> bool {
        self.state == ConnState::Established
            && self.ird.len > 0
            && self.ird.iter().all(|r| r.size == 0)
            && !self.sq_ready()
            && !self.ack_pending
    }

    /// The most work requests the send queue holds.
    fn send_depth(&self) -> usize {
        (self.cfg.send_depth as usize).max(1)
    }

    /// Asks for an acknowledgement of everything transmitted so far, even
    /// if unsignalled (a graceful close waits for the send queue to retire).
    pub fn request_ack(&mut self) {
        if self.neg.ack_reads && self.sq_head < self.sq_tx {
            self.ack_pending = true;
        }
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
        if self.send_outstanding() >= self.send_depth() {
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
        let i = self.sq_tail;
        self.sq.make_room(self.sq_head, i);
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
            bind: false,
        };
        self.sq_tail += 1;
        Ok(())
    }

    /// Queues the completion of a memory-window bind the caller has
    /// applied (`status`: how it went), in send-queue order.
    pub fn post_bind(
        &mut self,
        wr_id: u64,
        signaled: bool,
        status: WcStatus,
        sink: &mut impl FnMut(Wc),
    ) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.send_outstanding() >= self.send_depth() {
            return Err(PostError::QueueFull);
        }
        let i = self.sq_tail;
        self.sq.make_room(self.sq_head, i);
        self.sq[i] = SqEntry {
            wr_id,
            signaled,
            state: Slot::Done(status),
            bind: true,
            ..SqEntry::EMPTY
        };
        self.sq_tail += 1;
        self.skip_binds();
        self.retire(sink);
        Ok(())
    }

    /// Moves the transmit point past binds (nothing to send for them).
    fn skip_binds(&mut self) {
        while self.sq_tx < self.sq_tail && self.sq[self.sq_tx].bind {
            self.sq_tx += 1;
        }
    }

    /// Queues a receive (the scatter list is copied).
    pub fn post_recv(&mut self, wr: &RecvWr<'_>, keys: &KeyTable) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.rq.len() == self.rq.capacity() {
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
        let e = &self.sq[self.sq_tx];
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
                return self.start(plan, &h, LastTx::Terminate);
            }
            ConnState::Established => {}
        }
        let sq_ready = self.sq_ready();
        let resp_ready = self.ird.len > 0;
        let sq_cur = (self.sq_tx < self.sq_tail).then(|| self.sq[self.sq_tx]);
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
        let i = seq;
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
                self.skip_binds();
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
                    self.skip_binds();
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
        let t = self.tx_token();
        self.tx_written(t, sink);
    }

    /// Takes the token of the last plan from [`Conn::next_tx`], so that
    /// another can be planned before this one is written.
    pub fn tx_token(&mut self) -> TxToken {
        TxToken(std::mem::replace(&mut self.last_tx, LastTx::None))
    }

    /// The plan `t` names has been written completely (plans are written
    /// in the order they were planned).
    pub fn tx_written(&mut self, t: TxToken, sink: &mut impl FnMut(Wc)) {
        match t.0 {
            LastTx::Complete(seq) => {
                let i = seq;
                if self.sq[i].state == Slot::Sent {
                    self.sq[i].state = Slot::Done(WcStatus::Success);
                }
                self.retire(sink);
            }
            LastTx::Terminate => {
                if self.state == ConnState::Terminating {
                    self.state = ConnState::Broken;
                }
            }
            LastTx::Other | LastTx::None => {}
        }
    }

    /// Emits the completions of finished send-queue requests, oldest first.
    fn retire(&mut self, sink: &mut impl FnMut(Wc)) {
        while self.sq_head < self.sq_tail {
            let e = self.sq[self.sq_head];
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
                let Some(r) = self.recv_front() else {
                    return Ok(RxAction::NotReady);
                };
                if u64::from(mo) != self.rq_off {
                    return Err(self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMo), sink));
                }
                if u64::from(mo) + len > r.len {
                    // The receive completes in error before the flush.
                    self.recv_pop();
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
                        return Err(self.fail(tagged_protection(f, to, len), sink));
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
                    // Queue 1 has IRD buffers: an MSN beyond them is out of range.
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
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
                        return Err(self.fail(protection(f, req.source_to, size), sink));
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
                if o.seq.is_none() {
                    // An ack read's response only says "everything before
                    // it was processed": bytes in it (a peer's bug) are
                    // dropped, not a reason to break the connection.
                    if len > 0 {
                        self.drop_into_bucket(len, plan);
                    }
                    self.rx_cur = RxCur::ReadResponse { len, last: h.last };
                    return Ok(RxAction::Place);
                }
                if to != o.got || o.got + len > o.size || (h.last && o.got + len != o.size) {
                    return Err(self.fail(TermError::DdpTagged(DdpTagged::BaseOrBounds), sink));
                }
                if let Some(seq) = o.seq {
                    let e = &self.sq[seq];
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

    /// Plans `len` bytes (at most an FPDU's) into the bucket.
    fn drop_into_bucket(&mut self, len: u64, plan: &mut RxPlan) {
        const PIECE: usize = 8192;
        if self.bucket.is_none() {
            tracing::debug!(
                qp = self.cfg.qp,
                len,
                "the peer answered a zero-length Read Request with data: dropped"
            );
        }
        // A piece of its own for each part of the FPDU: with CRC on, the
        // digest is taken from the placed bytes, so none may overwrite
        // another (an FPDU carries at most 64 KiB).
        let b = self
            .bucket
            .get_or_insert_with(|| vec![0u8; PIECE * MAX_SGE].into_boxed_slice());
        let base = b.as_mut_ptr() as u64;
        let mut left = len;
        plan.npieces = 0;
        while left > 0 && plan.npieces < MAX_SGE {
            let take = left.min(PIECE as u64);
            plan.pieces[plan.npieces] = Piece {
                addr: base + (plan.npieces * PIECE) as u64,
                len: take,
            };
            plan.npieces += 1;
            left -= take;
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
                    if let Some(r) = self.recv_pop() {
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
                        let i = seq;
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
            let i = seq;
            let e = &mut self.sq[i];
            if e.state == Slot::Sent && !matches!(e.op, SendOp::RdmaRead { .. }) {
                e.state = Slot::Done(WcStatus::Success);
            }
        }
    }

    /// A Terminate arrived: the Sends and Writes before the request it names
    /// succeeded, that request completes with the error, the rest is flushed.
    fn terminated(&mut self, n: usize, sink: &mut impl FnMut(Wc)) -> Fault {
        self.state = ConnState::Broken;
        let body = &self.rx_inline[..n];
        let (error, off) = match Terminate::decode(body) {
            Ok((t, _)) => (t.error, t.offending().and_then(Result::ok)),
            Err(_) => (TermError::RdmapOperation(RdmapOperation::Unspecified), None),
        };
        let target = off.and_then(|h| {
            (self.sq_head..self.sq_tx).find(|&seq| {
                let e = &self.sq[seq];
                if matches!(e.state, Slot::Done(_)) {
                    return false;
                }
                match (h.ulp, e.op) {
                    (Ulp::Send { msn, .. }, SendOp::Send { .. }) => e.msn == msn,
                    (Ulp::ReadRequest { msn, .. }, SendOp::RdmaRead { .. }) => e.msn == msn,
                    (Ulp::RdmaWrite { stag, to }, SendOp::RdmaWrite { remote_addr, rkey }) => {
                        // Offsets are sent as `remote_addr + off` modulo 2⁶⁴.
                        stag == rkey && to.wrapping_sub(remote_addr) <= e.len
                    }
                    _ => false,
                }
            })
        });
        if let Some(seq) = target {
            // The peer processed the stream in order up to the request it
            // names: the Sends and Writes before it were placed.
            self.acknowledge(seq);
            let i = seq;
            self.sq[i].state = Slot::Done(status_of(error));
        }
        tracing::debug!(qp = self.cfg.qp, ?error, "Terminate received");
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
        tracing::debug!(
            qp = self.cfg.qp,
            ?error,
            "Terminate sent (the peer broke a rule)"
        );
        self.flush(sink);
        self.state = ConnState::Terminating;
        Fault::Protocol(error)
    }

    /// The FPDU reader refused what arrived (framing, header fields, CRC:
    /// [`wire::FpduError::term`]): queue the Terminate with `error`, naming
    /// `seg` when its header had been read, and flush.
    pub fn refuse(
        &mut self,
        error: TermError,
        seg: Option<Segment>,
        sink: &mut impl FnMut(Wc),
    ) -> Fault {
        if self.state != ConnState::Established {
            return Fault::Closed;
        }
        self.rx_seg = seg;
        self.fail(error, sink)
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
            let i = seq;
            if !matches!(self.sq[i].state, Slot::Done(_)) {
                self.sq[i].state = Slot::Done(WcStatus::Flushed);
            }
        }
        self.sq_tx = self.sq_tail;
        self.retire(sink);
        // A shared queue's receive taken by this connection is flushed with
        // it; the ones still in the shared queue stay there.
        if let Some(r) = self.srq_cur.take() {
            sink(Wc {
                wr_id: r.wr_id,
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.cfg.qp,
                solicited: false,
            });
        }
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

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use crate::transport::iwarp::wire::{FpduReader, RxEvent};
    use crate::transport::soft::keys::Region;

    const PD: u64 = 7;
    const ALL: Rights = Rights::LOCAL_READ
        .union(Rights::LOCAL_WRITE)
        .union(Rights::REMOTE_READ)
        .union(Rights::REMOTE_WRITE);

    /// Registered test memory; the Vec never grows, so its address is stable.
    struct Mem {
        v: Vec<u8>,
        lkey: u32,
        rkey: u32,
    }

    impl Mem {
        fn addr(&self) -> u64 {
            self.v.as_ptr() as u64
        }
        fn sge(&self, off: usize, len: usize) -> Sge {
            Sge {
                addr: self.addr() + off as u64,
                len: len as u64,
                lkey: self.lkey,
            }
        }
    }

    struct Side {
        conn: Conn,
        keys: KeyTable,
        wcs: Vec<Wc>,
        reader: FpduReader,
        inbox: Vec<u8>,
        pos: usize,
        pending: Option<Segment>,
        faults: Vec<Fault>,
        /// Copied at every receive completion: (addr, len) to snapshot.
        watch: Option<(u64, usize)>,
        snapshots: Vec<Vec<u8>>,
    }

    impl Side {
        fn new(cfg: ConnConfig, neg: Negotiated) -> Side {
            Side {
                conn: Conn::new(cfg, neg).expect("queues"),
                keys: KeyTable::new(),
                wcs: Vec::new(),
                reader: FpduReader::new(neg.crc),
                inbox: Vec::new(),
                pos: 0,
                pending: None,
                faults: Vec::new(),
                watch: None,
                snapshots: Vec::new(),
            }
        }

        fn mem(&self, len: usize, rights: Rights, pz: u64) -> Mem {
            let v: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let addr = v.as_ptr() as u64;
            let (idx, lkey) = self
                .keys
                .register(Region {
                    addr,
                    len: len as u64,
                    rights,
                    pz,
                })
                .expect("register");
            let rkey = if rights.is_remote() {
                self.keys
                    .grant_remote(idx, addr, len as u64, rights)
                    .expect("grant")
            } else {
                0
            };
            Mem { v, lkey, rkey }
        }

        fn send(&mut self, wr_id: u64, op: SendOp, sgl: &[Sge], signaled: bool, fence: bool) {
            let wr = SendWr {
                wr_id,
                op,
                sgl,
                signaled,
                fence,
            };
            self.conn.post_send(&wr, &self.keys).expect("post_send");
        }

        fn recv(&mut self, wr_id: u64, sgl: &[Sge]) {
            self.conn
                .post_recv(&RecvWr { wr_id, sgl }, &self.keys)
                .expect("post_recv");
        }

        /// Writes every FPDU the engine has into `out`; returns how many.
        fn transmit(&mut self, out: &mut Vec<u8>) -> usize {
            let mut plan = TxPlan::new();
            let mut n = 0;
            while self.conn.next_tx(&mut plan) {
                out.extend_from_slice(plan.head());
                out.extend_from_slice(plan.inline());
                for p in plan.pieces().to_vec() {
                    // SAFETY: pieces lie in the test's live registered Vecs.
                    let b =
                        unsafe { std::slice::from_raw_parts(p.addr as *const u8, p.len as usize) };
                    out.extend_from_slice(b);
                    plan.payload(b).expect("payload");
                }
                out.extend_from_slice(plan.trailer().expect("trailer"));
                let wcs = &mut self.wcs;
                self.conn.tx_done(&mut |wc| wcs.push(wc));
                n += 1;
            }
            n
        }

        /// Processes the inbox; returns whether anything was consumed.
        fn receive(&mut self) -> bool {
            let start = (self.pos, self.pending.is_some());
            let mut progressed = false;
            loop {
                if !self.faults.is_empty() {
                    return progressed;
                }
                let seg = match self.pending.take() {
                    Some(s) => s,
                    None => {
                        if self.pos == self.inbox.len() {
                            return progressed || self.pos != start.0;
                        }
                        let fed = self.reader.feed(&self.inbox[self.pos..]).expect("framing");
                        self.pos += fed.consumed;
                        match fed.event {
                            Some(RxEvent::Segment(s)) => s,
                            Some(RxEvent::Done) => {
                                let wcs = &mut self.wcs;
                                let before = wcs.len();
                                let r = self.conn.rx_done(&mut |wc| wcs.push(wc));
                                if let Some((a, l)) = self.watch {
                                    if self.wcs[before..].iter().any(|w| w.op == WcOp::Recv) {
                                        // SAFETY: a live test buffer.
                                        let b = unsafe {
                                            std::slice::from_raw_parts(a as *const u8, l)
                                        };
                                        self.snapshots.push(b.to_vec());
                                    }
                                }
                                if let Err(f) = r {
                                    self.faults.push(f);
                                }
                                continue;
                            }
                            None => continue,
                        }
                    }
                };
                let mut plan = RxPlan::new();
                let wcs = &mut self.wcs;
                match self
                    .conn
                    .rx_header(&seg, &self.keys, &mut plan, &mut |wc| wcs.push(wc))
                {
                    Ok(RxAction::NotReady) => {
                        self.pending = Some(seg);
                        return progressed || self.pos != start.0;
                    }
                    Ok(RxAction::Place) => {
                        let mut total = 0;
                        for p in plan.pieces() {
                            let src = &self.inbox[self.pos..self.pos + p.len as usize];
                            // SAFETY: the engine checked the range against live test buffers.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    src.as_ptr(),
                                    p.addr as *mut u8,
                                    src.len(),
                                )
                            };
                            self.reader.placed(src).expect("placed");
                            self.pos += src.len();
                            total += src.len();
                        }
                        assert_eq!(total, seg.payload_len, "placement covers the payload");
                    }
                    Ok(RxAction::Inline(n)) => {
                        let src = &self.inbox[self.pos..self.pos + n];
                        self.conn.rx_inline()[..n].copy_from_slice(src);
                        self.reader.placed(src).expect("placed");
                        self.pos += n;
                    }
                    Err(f) => self.faults.push(f),
                }
                progressed = true;
            }
        }

        fn take(&mut self) -> Vec<Wc> {
            std::mem::take(&mut self.wcs)
        }
    }

    fn cfg(qp: QpNum) -> ConnConfig {
        ConnConfig {
            send_depth: 16,
            recv_depth: 16,
            max_sge: 4,
            ord: 2,
            ird: 2,
            qp,
            pd: PD,
        }
    }

    fn neg(crc: bool, ack_reads: bool) -> Negotiated {
        Negotiated {
            crc,
            max_fpdu: 65535,
            ird: 3,
            ord: 3,
            ack_reads,
        }
    }

    fn pair(crc: bool, ack: bool) -> (Side, Side) {
        (
            Side::new(cfg(1), neg(crc, ack)),
            Side::new(cfg(2), neg(crc, ack)),
        )
    }

    /// Moves bytes both ways until nothing moves.
    fn pump(a: &mut Side, b: &mut Side) {
        for _ in 0..1000 {
            let mut moved = a.transmit(&mut b.inbox) + b.transmit(&mut a.inbox);
            moved += usize::from(b.receive()) + usize::from(a.receive());
            if moved == 0 {
                return;
            }
        }
        panic!("pump does not settle");
    }

    fn ok(wr_id: u64, op: WcOp, len: u64, qp: QpNum) -> Wc {
        Wc {
            wr_id,
            status: WcStatus::Success,
            op,
            byte_len: len,
            qp,
            solicited: false,
        }
    }

    const SEND: SendOp = SendOp::Send { solicited: false };

    #[test]
    fn send_recv_0_1_and_100k_bytes_with_and_without_crc() {
        for crc in [false, true] {
            for ack in [false, true] {
                let (mut a, mut b) = pair(crc, ack);
                let src = a.mem(100 * 1024, ALL, PD);
                let mut dst = b.mem(100 * 1024, ALL, PD);
                dst.v.fill(0);
                for (i, len) in [0usize, 1, 100 * 1024].into_iter().enumerate() {
                    b.recv(10 + i as u64, &[dst.sge(0, 100 * 1024)]);
                    a.send(i as u64, SEND, &[src.sge(0, len)], true, false);
                    pump(&mut a, &mut b);
                    assert_eq!(
                        a.take(),
                        [ok(i as u64, WcOp::Send, len as u64, 1)],
                        "crc {crc} ack {ack}"
                    );
                    assert_eq!(b.take(), [ok(10 + i as u64, WcOp::Recv, len as u64, 2)]);
                    assert_eq!(dst.v[..len], src.v[..len]);
                }
                assert!(a.faults.is_empty() && b.faults.is_empty());
            }
        }
    }

    #[test]
    fn send_recv_multi_sge_on_both_sides_over_small_fpdus() {
        let mut n = neg(true, true);
        n.max_fpdu = 128;
        let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
        let src = a.mem(1000, ALL, PD);
        let mut dst = b.mem(1000, ALL, PD);
        dst.v.fill(0);
        a.send(
            1,
            SEND,
            &[src.sge(0, 100), src.sge(500, 300), src.sge(100, 1)],
            true,
            false,
        );
        b.recv(2, &[dst.sge(0, 50), dst.sge(600, 7), dst.sge(100, 400)]);
        pump(&mut a, &mut b);
        assert_eq!(b.take(), [ok(2, WcOp::Recv, 401, 2)]);
        assert_eq!(a.take(), [ok(1, WcOp::Send, 401, 1)]);
        let mut want = src.v[0..100].to_vec();
        want.extend_from_slice(&src.v[500..800]);
        want.push(src.v[100]);
        let mut got = dst.v[0..50].to_vec();
        got.extend_from_slice(&dst.v[600..607]);
        got.extend_from_slice(&dst.v[100..444]);
        assert_eq!(got, want);
        assert!(
            dst.v[444..500].iter().all(|&x| x == 0),
            "nothing beyond the message"
        );
    }

    #[test]
    fn rdma_write_spans_several_fpdus() {
        let mut n = neg(false, true);
        n.max_fpdu = 1500;
        let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
        let src = a.mem(20000, ALL, PD);
        let mut dst = b.mem(30000, ALL, PD);
        dst.v.fill(0);
        let op = SendOp::RdmaWrite {
            remote_addr: dst.addr() + 5000,
            rkey: dst.rkey,
        };
        a.send(
            9,
            op,
            &[src.sge(0, 12000), src.sge(15000, 5000)],
            true,
            false,
        );
        let mut wire = Vec::new();
        let fpdus = a.transmit(&mut wire);
        assert!(fpdus > 12, "{fpdus} FPDUs, one ack read");
        b.inbox = wire;
        pump(&mut a, &mut b);
        assert_eq!(a.take(), [ok(9, WcOp::RdmaWrite, 17000, 1)]);
        assert!(
            b.take().is_empty(),
            "a write completes nothing at the target"
        );
        assert_eq!(dst.v[5000..17000], src.v[..12000]);
        assert_eq!(dst.v[17000..22000], src.v[15000..20000]);
        assert!(dst.v[..5000].iter().chain(&dst.v[22000..]).all(|&x| x == 0));
    }

    #[test]
    fn rdma_read_into_multi_sge_sink_over_several_fpdus() {
        for ack in [false, true] {
            let mut n = neg(true, ack);
            n.max_fpdu = 1000;
            let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
            let mut sink = a.mem(10000, ALL, PD);
            sink.v.fill(0);
            let src = b.mem(10000, ALL, PD);
            let op = SendOp::RdmaRead {
                remote_addr: src.addr() + 100,
                rkey: src.rkey,
            };
            a.send(
                4,
                op,
                &[sink.sge(5000, 3000), sink.sge(0, 2000)],
                true,
                false,
            );
            pump(&mut a, &mut b);
            assert_eq!(a.take(), [ok(4, WcOp::RdmaRead, 5000, 1)]);
            assert_eq!(sink.v[5000..8000], src.v[100..3100]);
            assert_eq!(sink.v[0..2000], src.v[3100..5100]);
            assert!(sink.v[2000..5000].iter().all(|&x| x == 0));
        }
    }

    /// Counts the Read Requests in a byte stream.
    fn read_requests(stream: &[u8], crc: bool) -> usize {
        let mut r = FpduReader::new(crc);
        let (mut at, mut n) = (0, 0);
        while at < stream.len() {
            let fed = r.feed(&stream[at..]).expect("framing");
            at += fed.consumed;
            if let Some(RxEvent::Segment(s)) = fed.event {
                n += usize::from(matches!(s.header.ulp, Ulp::ReadRequest { .. }));
            }
        }
        n
    }

    #[test]
    fn rdma_reads_wait_for_an_ord_credit() {
        let mut c = cfg(1);
        c.ord = 1;
        let (mut a, mut b) = (
            Side::new(c, neg(false, false)),
            Side::new(cfg(2), neg(false, false)),
        );
        let sink = a.mem(64, ALL, PD);
        let src = b.mem(64, ALL, PD);
        let op = SendOp::RdmaRead {
            remote_addr: src.addr(),
            rkey: src.rkey,
        };
        a.send(1, op, &[sink.sge(0, 8)], true, false);
        a.send(2, op, &[sink.sge(8, 8)], true, false);
        let mut wire = Vec::new();
        a.transmit(&mut wire);
        assert_eq!(read_requests(&wire, false), 1, "ORD 1: one read in flight");
        b.inbox = wire;
        pump(&mut a, &mut b);
        assert_eq!(
            a.take(),
            [ok(1, WcOp::RdmaRead, 8, 1), ok(2, WcOp::RdmaRead, 8, 1)]
        );
        assert_eq!(sink.v[0..8], src.v[0..8]);
        assert_eq!(sink.v[8..16], src.v[0..8]);
    }

    #[test]
    fn reads_beyond_the_peers_ird_terminate() {
        let mut na = neg(false, false);
        na.ord = 3;
        let mut nb = neg(false, false);
        nb.ird = 1;
        let (mut a, mut b) = (Side::new(cfg(1), na), Side::new(cfg(2), nb));
        let sink = a.mem(64, ALL, PD);
        let src = b.mem(64, ALL, PD);
        let op = SendOp::RdmaRead {
            remote_addr: src.addr(),
            rkey: src.rkey,
        };
        a.send(1, op, &[sink.sge(0, 8)], true, false);
        a.send(2, op, &[sink.sge(8, 8)], true, false);
        a.transmit(&mut b.inbox);
        pump(&mut a, &mut b);
        let e = TermError::DdpUntagged(DdpUntagged::InvalidMsnRange);
        assert_eq!(b.faults, [Fault::Protocol(e)]);
        let w: Vec<_> = a.take().iter().map(|w| (w.wr_id, w.status)).collect();
        assert_eq!(w, [(1, WcStatus::Flushed), (2, WcStatus::RemoteOperation)]);
    }

    #[test]
    fn ack_reads_fall_back_without_a_spare_ord_credit() {
        let mut n = neg(false, true);
        n.ord = cfg(1).ord;
        let c = Conn::new(cfg(1), n).expect("queues");
        assert!(!c.ack_reads());
        assert!(Conn::new(cfg(1), neg(false, true))
            .expect("queues")
            .ack_reads());
    }

    #[test]
    fn unsignalled_sends_complete_nothing_on_success() {
        for ack in [false, true] {
            let (mut a, mut b) = pair(false, ack);
            let src = a.mem(64, ALL, PD);
            let dst = b.mem(64, ALL, PD);
            b.recv(1, &[dst.sge(0, 64)]);
            b.recv(2, &[dst.sge(0, 64)]);
            a.send(1, SEND, &[src.sge(0, 4)], false, false);
            pump(&mut a, &mut b);
            assert!(a.take().is_empty());
            a.send(2, SEND, &[src.sge(0, 5)], true, false);
            pump(&mut a, &mut b);
            assert_eq!(a.take(), [ok(2, WcOp::Send, 5, 1)]);
            assert_eq!(b.take().len(), 2);
            assert_eq!(
                a.conn.send_outstanding(),
                0,
                "the unsignalled slot retired too"
            );
        }
    }

    #[test]
    fn solicited_flag_reaches_the_receive_completion() {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        b.recv(1, &[dst.sge(0, 64)]);
        b.recv(2, &[dst.sge(0, 64)]);
        a.send(
            1,
            SendOp::Send { solicited: true },
            &[src.sge(0, 3)],
            true,
            false,
        );
        a.send(2, SEND, &[src.sge(0, 3)], true, false);
        pump(&mut a, &mut b);
        let w = b.take();
        assert!(w[0].solicited && !w[1].solicited, "{w:?}");
    }

    #[test]
    fn a_send_after_a_write_finds_the_written_bytes_in_place() {
        let mut n = neg(false, true);
        n.max_fpdu = 512;
        let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
        let src = a.mem(8000, ALL, PD);
        let mut dst = b.mem(8000, ALL, PD);
        dst.v.fill(0);
        let rx = b.mem(16, ALL, PD);
        b.watch = Some((dst.addr(), 8000));
        b.recv(1, &[rx.sge(0, 16)]);
        let op = SendOp::RdmaWrite {
            remote_addr: dst.addr(),
            rkey: dst.rkey,
        };
        a.send(1, op, &[src.sge(0, 8000)], false, false);
        a.send(2, SEND, &[src.sge(0, 1)], true, false);
        pump(&mut a, &mut b);
        assert_eq!(b.snapshots.len(), 1);
        assert_eq!(
            b.snapshots[0], src.v,
            "the write was placed before the send completed"
        );
        assert_eq!(a.take(), [ok(2, WcOp::Send, 1, 1)]);
    }

    #[test]
    fn fence_holds_a_request_until_earlier_reads_completed() {
        let (mut a, mut b) = pair(false, false);
        let sink = a.mem(64, ALL, PD);
        let src = b.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        b.recv(1, &[dst.sge(0, 64)]);
        let op = SendOp::RdmaRead {
            remote_addr: src.addr(),
            rkey: src.rkey,
        };
        a.send(1, op, &[sink.sge(0, 8)], true, false);
        a.send(2, SEND, &[sink.sge(0, 8)], true, true);
        let mut wire = Vec::new();
        assert_eq!(a.transmit(&mut wire), 1, "only the Read Request");
        b.inbox = wire;
        pump(&mut a, &mut b);
        assert_eq!(
            a.take(),
            [ok(1, WcOp::RdmaRead, 8, 1), ok(2, WcOp::Send, 8, 1)]
        );
        let r = b.take();
        assert_eq!(r, [ok(1, WcOp::Recv, 8, 2)]);
        assert_eq!(dst.v[..8], src.v[..8], "the send carried the read's data");
    }

    #[test]
    fn ack_reads_complete_sends_after_the_peer_processed_them() {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        b.recv(1, &[dst.sge(0, 64)]);
        a.send(1, SEND, &[src.sge(0, 10)], true, false);
        a.send(2, SEND, &[src.sge(0, 10)], true, false);
        let mut wire = Vec::new();
        assert_eq!(
            a.transmit(&mut wire),
            3,
            "two sends, one ack read behind both"
        );
        assert_eq!(read_requests(&wire, false), 1);
        assert!(a.take().is_empty(), "handed off is not done");
        b.inbox = wire;
        b.receive();
        assert_eq!(b.take().len(), 1);
        assert!(b.pending.is_some(), "second send waits for a receive");
        b.transmit(&mut a.inbox);
        a.receive();
        assert!(a.take().is_empty(), "no response while the peer is stuck");
        b.recv(2, &[dst.sge(0, 64)]);
        pump(&mut a, &mut b);
        assert_eq!(
            a.take(),
            [ok(1, WcOp::Send, 10, 1), ok(2, WcOp::Send, 10, 1)]
        );
    }

    #[test]
    fn without_ack_reads_sends_complete_when_handed_off() {
        let (mut a, _b) = pair(false, false);
        let src = a.mem(64, ALL, PD);
        a.send(1, SEND, &[src.sge(0, 10)], true, false);
        let mut wire = Vec::new();
        assert_eq!(a.transmit(&mut wire), 1);
        assert_eq!(read_requests(&wire, false), 0);
        assert_eq!(a.take(), [ok(1, WcOp::Send, 10, 1)]);
    }

    #[test]
    fn rnr_send_waits_then_lands_after_post_recv() {
        let (mut a, mut b) = pair(true, true);
        let src = a.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        a.send(1, SEND, &[src.sge(0, 33)], true, false);
        pump(&mut a, &mut b);
        assert!(b.pending.is_some() && a.take().is_empty());
        b.recv(7, &[dst.sge(0, 64)]);
        pump(&mut a, &mut b);
        assert_eq!(b.take(), [ok(7, WcOp::Recv, 33, 2)]);
        assert_eq!(a.take(), [ok(1, WcOp::Send, 33, 1)]);
        assert_eq!(dst.v[..33], src.v[..33]);
    }

    #[test]
    fn rnr_expiry_terminates_and_the_send_completes_receiver_not_ready() {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(64, ALL, PD);
        a.send(1, SEND, &[src.sge(0, 8)], true, false);
        a.send(2, SEND, &[src.sge(0, 8)], false, false);
        pump(&mut a, &mut b);
        let mut wcs = Vec::new();
        let f = b.conn.rnr_expired(&mut |wc| wcs.push(wc));
        assert_eq!(
            f,
            Fault::Protocol(TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer))
        );
        assert_eq!(b.conn.state(), ConnState::Terminating);
        b.pending = None;
        pump(&mut a, &mut b);
        assert_eq!(b.conn.state(), ConnState::Broken);
        let w = a.take();
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::ReceiverNotReady));
        assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed));
        assert!(matches!(a.faults[..], [Fault::Terminated(_)]));
        assert_eq!(a.conn.state(), ConnState::Broken);
    }

    /// Name, write target (address, rkey), rights and zone of the target
    /// memory, the Terminate error expected.
    type Case = (&'static str, fn(&Mem) -> (u64, u32), Rights, u64, TermError);

    #[test]
    fn remote_access_violations_terminate_and_place_nothing() {
        let cases: [Case; 5] = [
            (
                "bad stag",
                |m| (m.addr(), m.rkey ^ 0x4_0000),
                ALL,
                PD,
                TermError::DdpTagged(DdpTagged::InvalidStag),
            ),
            (
                "bounds",
                |m| (m.addr() + 60, m.rkey),
                ALL,
                PD,
                TermError::DdpTagged(DdpTagged::BaseOrBounds),
            ),
            (
                "wrap",
                |m| (u64::MAX - 7, m.rkey),
                ALL,
                PD,
                TermError::DdpTagged(DdpTagged::ToWrap),
            ),
            (
                "rights",
                |m| (m.addr(), m.rkey),
                Rights::LOCAL_WRITE.union(Rights::REMOTE_READ),
                PD,
                TermError::RdmapProtection(RdmapProtection::AccessRights),
            ),
            (
                "domain",
                |m| (m.addr(), m.rkey),
                ALL,
                8,
                TermError::DdpTagged(DdpTagged::StagNotAssociated),
            ),
        ];
        for (name, target, rights, pz, e) in cases {
            let (mut a, mut b) = pair(false, true);
            let src = a.mem(64, ALL, PD);
            let mut dst = b.mem(64, rights, pz);
            dst.v.fill(0);
            let (remote_addr, rkey) = target(&dst);
            a.send(
                1,
                SendOp::RdmaWrite { remote_addr, rkey },
                &[src.sge(0, 16)],
                true,
                false,
            );
            a.send(2, SEND, &[src.sge(0, 1)], true, false);
            pump(&mut a, &mut b);
            assert_eq!(b.faults, [Fault::Protocol(e)], "{name}");
            assert_eq!(a.faults, [Fault::Terminated(e)], "{name}");
            assert!(dst.v.iter().all(|&x| x == 0), "{name}: nothing placed");
            let w = a.take();
            assert_eq!(
                (w[0].wr_id, w[0].status),
                (1, WcStatus::RemoteAccess),
                "{name}"
            );
            assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed), "{name}");
        }
    }

    #[test]
    fn terminate_of_a_write_whose_remote_range_wraps_completes_it() {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        let op = SendOp::RdmaWrite {
            remote_addr: u64::MAX - 7,
            rkey: dst.rkey,
        };
        a.send(1, op, &[src.sge(0, 16)], true, false);
        pump(&mut a, &mut b);
        let w = a.take();
        assert_eq!(
            (w[0].wr_id, w[0].status, w.len()),
            (1, WcStatus::RemoteAccess, 1)
        );
    }

    #[test]
    fn refused_framing_terminates_naming_the_segment() {
        let (mut a, mut b) = pair(true, true);
        let src = a.mem(8, ALL, PD);
        let dst = b.mem(8, ALL, PD);
        b.recv(7, &[dst.sge(0, 8)]);
        a.send(1, SEND, &[src.sge(0, 5)], true, false);
        let mut wire_bytes = Vec::new();
        a.transmit(&mut wire_bytes);
        // The FPDU reader found a bad CRC on the Send, whose header it had
        // read; the bytes never reach the engine's receive path.
        let seg = Segment {
            header: Header::new(
                Ulp::Send {
                    msn: 1,
                    mo: 0,
                    solicited: false,
                    invalidate: None,
                },
                true,
            ),
            ulpdu_len: (UNTAGGED_HDR_LEN + 5) as u16,
            payload_len: 5,
        };
        let e = TermError::Mpa(wire::MpaCode::Crc);
        let wcs = &mut b.wcs;
        assert_eq!(
            b.conn.refuse(e, Some(seg), &mut |wc| wcs.push(wc)),
            Fault::Protocol(e)
        );
        assert_eq!(b.conn.state(), ConnState::Terminating);
        let w = b.take();
        assert_eq!((w[0].wr_id, w[0].status), (7, WcStatus::Flushed));
        let wcs = &mut b.wcs;
        assert_eq!(
            b.conn.refuse(e, None, &mut |wc| wcs.push(wc)),
            Fault::Closed
        );
        pump(&mut a, &mut b);
        assert_eq!(b.conn.state(), ConnState::Broken);
        assert_eq!(a.faults, [Fault::Terminated(e)]);
        let w = a.take();
        assert_eq!(
            (w[0].wr_id, w[0].status, w.len()),
            (1, WcStatus::RemoteOperation, 1),
            "the Terminate named the Send"
        );
    }

    #[test]
    fn read_rtr_taken_moves_the_inbound_read_msn() {
        for (msn, ok) in [(2, true), (1, false)] {
            let (_, mut b) = pair(false, true);
            let src = b.mem(16, ALL, PD);
            b.conn.read_rtr_taken(1);
            let req = ReadRequest {
                sink_stag: 9,
                sink_to: 0,
                size: 16,
                source_stag: src.rkey,
                source_to: src.addr(),
            };
            let h = Header::new(Ulp::ReadRequest { msn, mo: 0, req }, true);
            let mut f = [0u8; 64];
            let n = wire::encode_fpdu(&h, &[], false, &mut f).expect("fpdu");
            b.inbox.extend_from_slice(&f[..n]);
            b.receive();
            let mut out = Vec::new();
            assert_eq!(b.transmit(&mut out), 1, "MSN {msn}");
            if ok {
                assert!(b.faults.is_empty(), "MSN {msn}: answered");
            } else {
                let e = TermError::DdpUntagged(DdpUntagged::InvalidMsnRange);
                assert_eq!(b.faults, [Fault::Protocol(e)], "MSN {msn}: the RTR's");
            }
        }
    }

    #[test]
    fn read_of_a_bad_source_completes_remote_access() {
        let (mut a, mut b) = pair(true, true);
        let sink = a.mem(64, ALL, PD);
        let src = b.mem(64, Rights::LOCAL_READ.union(Rights::REMOTE_WRITE), PD);
        let op = SendOp::RdmaRead {
            remote_addr: src.addr(),
            rkey: src.rkey,
        };
        a.send(3, op, &[sink.sge(0, 8)], true, false);
        pump(&mut a, &mut b);
        let e = TermError::RdmapProtection(RdmapProtection::AccessRights);
        assert_eq!(b.faults, [Fault::Protocol(e)]);
        let w = a.take();
        assert_eq!(
            (w[0].wr_id, w[0].status, w.len()),
            (3, WcStatus::RemoteAccess, 1)
        );
    }

    #[test]
    fn receive_too_small_completes_local_length() {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(200, ALL, PD);
        let dst = b.mem(200, ALL, PD);
        b.recv(1, &[dst.sge(0, 10)]);
        b.recv(2, &[dst.sge(10, 10)]);
        a.send(1, SEND, &[src.sge(0, 100)], true, false);
        pump(&mut a, &mut b);
        let w = b.take();
        assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::LocalLength));
        assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed));
        let e = TermError::DdpUntagged(DdpUntagged::MessageTooLong);
        assert_eq!(b.faults, [Fault::Protocol(e)]);
        let w = a.take();
        assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::RemoteOperation));
    }

    #[test]
    fn flush_completes_every_request_once_in_order() {
        let (mut a, _b) = pair(false, true);
        let m = a.mem(64, ALL, PD);
        a.send(1, SEND, &[m.sge(0, 8)], false, false);
        a.send(2, SEND, &[m.sge(0, 8)], true, false);
        a.recv(3, &[m.sge(0, 8)]);
        a.recv(4, &[m.sge(0, 8)]);
        let mut plan = TxPlan::new();
        assert!(a.conn.next_tx(&mut plan), "one send in flight");
        let mut w = Vec::new();
        a.conn.flush(&mut |wc| w.push(wc));
        a.conn.flush(&mut |wc| w.push(wc));
        let ids: Vec<_> = w.iter().map(|w| (w.wr_id, w.op, w.status)).collect();
        assert_eq!(
            ids,
            [
                (1, WcOp::Send, WcStatus::Flushed),
                (2, WcOp::Send, WcStatus::Flushed),
                (3, WcOp::Recv, WcStatus::Flushed),
                (4, WcOp::Recv, WcStatus::Flushed),
            ]
        );
        assert_eq!(a.conn.state(), ConnState::Broken);
        assert!(!a.conn.next_tx(&mut plan));
        let wr = SendWr {
            wr_id: 5,
            op: SEND,
            sgl: &[],
            signaled: true,
            fence: false,
        };
        assert_eq!(a.conn.post_send(&wr, &a.keys), Err(PostError::State));
    }

    #[test]
    fn posts_are_checked() {
        let (mut a, _b) = pair(false, true);
        let m = a.mem(64, ALL, PD);
        let ro = a.mem(64, Rights::LOCAL_READ, PD);
        let other = a.mem(64, ALL, 9);
        let post = |a: &mut Side, op, sgl: &[Sge]| {
            let wr = SendWr {
                wr_id: 0,
                op,
                sgl,
                signaled: true,
                fence: false,
            };
            a.conn.post_send(&wr, &a.keys)
        };
        let five = [m.sge(0, 1); 5];
        assert_eq!(post(&mut a, SEND, &five), Err(PostError::TooManySge));
        assert_eq!(
            post(&mut a, SEND, &[m.sge(60, 8)]),
            Err(PostError::Protection(KeyFault::Bounds))
        );
        assert_eq!(
            post(&mut a, SEND, &[other.sge(0, 8)]),
            Err(PostError::Protection(KeyFault::Domain))
        );
        let read = SendOp::RdmaRead {
            remote_addr: 0,
            rkey: 1,
        };
        assert_eq!(
            post(&mut a, read, &[ro.sge(0, 8)]),
            Err(PostError::Protection(KeyFault::Rights)),
            "a read sink needs LOCAL_WRITE"
        );
        let big = [
            Sge {
                addr: m.addr(),
                len: 0,
                lkey: m.lkey,
            },
            Sge {
                addr: 0,
                len: MAX_MSG + 1,
                lkey: 0,
            },
        ];
        assert!(post(&mut a, SEND, &big).is_err());
        for _ in 0..16 {
            post(&mut a, SEND, &[m.sge(0, 1)]).expect("post");
        }
        assert_eq!(
            post(&mut a, SEND, &[m.sge(0, 1)]),
            Err(PostError::QueueFull)
        );
        assert_eq!(
            a.conn.post_recv(
                &RecvWr {
                    wr_id: 1,
                    sgl: &[ro.sge(0, 8)]
                },
                &a.keys
            ),
            Err(PostError::Protection(KeyFault::Rights))
        );
    }
}
