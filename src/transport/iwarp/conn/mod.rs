//! One established iWARP connection's protocol engine, without I/O: it owns
//! a queue pair's queues (send, receive, outbound and inbound reads) and
//! MSNs, and says what to send ([`Conn::next_tx`]), where to place what
//! arrives ([`Conn::rx_header`]) and what completed; the caller moves the
//! bytes (sockets and `memio` in the transport, plain copies in the tests).
//!
//! Invariants: every local segment and every inbound tagged access is
//! checked against the key table before a byte moves; each work request
//! completes exactly once; after a protocol fault the last FPDU produced is
//! the Terminate. How to drive it, and its decisions: docs/wire.md.

use std::collections::TryReserveError;

use crate::ring::{Fifo, SeqRing};
use crate::transport::api::{Access, KeyFault};
use crate::transport::api::{PostError, QpNum, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus};
use crate::transport::soft::keys::KeyTable;

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
enum ReceivingSegment {
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
    /// Unsignalled requests retired successfully since the send queue's
    /// last completion ([`Wc::implicit`] of the next one).
    sq_implicit: u32,
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
    rx_cur: ReceivingSegment,
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

mod flush;
mod post;
mod queues;
mod rx;
#[cfg(test)]
mod tests;
mod tx;

use queues::*;
pub use queues::{RecvRing, RqEntry, SharedRecv, RQ_ENTRY_BYTES, SQ_ENTRY_BYTES};
