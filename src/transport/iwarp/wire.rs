//! The iWARP wire format as pure functions and small state machines: what
//! the bytes on the TCP connection are, and nothing about sockets.
//!
//! # Layers on the wire
//!
//! ```text
//!  TCP byte stream
//!  ├─ MPA Request frame  ─┐ connection setup, once per direction
//!  ├─ MPA Reply frame    ─┘ (RFC 5044 connection setup, RFC 6581 revision 2)
//!  └─ FPDU, FPDU, …        full operation (RFC 5044 FPDU format, no markers)
//!       [ULPDU length: 2][ULPDU][pad 0–3][CRC32c: 4]
//!                         └─ DDP segment (RFC 5041): tagged or untagged header,
//!                            whose reserved-for-ULP bits carry RDMAP (RFC 5040)
//! ```
//!
//! Every multi-byte field is big-endian, except the CRC (see below).
//!
//! # MPA setup frames
//!
//! [`MpaFrame`] is one Request or Reply: a 16-byte key, a flags byte
//! (M markers `0x80`, C CRC `0x40`, R reject `0x20`, H enhanced setup `0x10`,
//! four reserved bits), the revision byte, a 16-bit private data length and
//! the private data. With H (revision 2 only) the private data starts with
//! the 4-byte IRD/ORD word ([`IrdOrd`]); [`MpaFrame::private_data`] is what
//! follows it. [`MpaFrame::encode`] writes one contiguous frame for a single
//! `write()`. [`MpaParser`] takes the byte stream in pieces of any size,
//! never consumes a byte past the frame, and tells how many bytes it still
//! needs.
//!
//! Decisions:
//! - The key is checked byte by byte as it arrives: input that departs from
//!   both keys (an HTTP request, random bytes) fails at its first wrong
//!   byte; the other side's key (a Reply where a Request was due) is reported
//!   as [`MpaError::UnexpectedKey`].
//! - Revisions 0 (pre-RFC stacks) and 1 are accepted and mean revision 1
//!   ([`MpaFrame::effective_revision`]); 2 is accepted; 3 and above are
//!   refused as soon as the 20-byte header is in.
//! - Private data longer than the receiver's limit (a parameter, at most and
//!   by default 512, the RFC's ceiling) is refused from the header, before
//!   any of it is read. The profile sends at most [`PROFILE_PD_SEND_MAX`]
//!   bytes including the IRD/ORD word, which [`MpaFrame::encode`] enforces.
//! - H with a revision below 2, or H with less than 4 bytes of private data,
//!   is malformed and refused.
//! - M (the peer wants markers) is refused by default with its own error,
//!   [`MpaError::Markers`], which carries the revision so that the CM can
//!   send a clean reject in the peer's revision. Markers are not implemented.
//! - Reserved flag bits are tolerated (the RFCs say to ignore them; `siw`
//!   uses one for an experiment) and kept in [`MpaFrame::reserved_flags`] so
//!   that the CM can log them and a decoded frame re-encodes byte for byte.
//!   R in a Request is kept as decoded, likewise.
//!
//! # FPDU framing and the CRC
//!
//! An FPDU is `[ULPDU length][ULPDU][pad][CRC]`: the pad (zero to three
//! zero bytes) makes `2 + length + pad` a multiple of 4 ([`fpdu_pad`],
//! [`fpdu_overhead`]). The CRC is CRC32c (Castagnoli, as iSCSI) over the
//! length field, the ULPDU and the pad; its four bytes on the wire are the
//! little-endian bytes of the usual CRC32c value (the value whose check
//! value for `"123456789"` is `0xE3069283`; 32 zero bytes give `0x8A9136AA`,
//! sent as `aa 36 91 8a`, as in iSCSI's test vectors). Linux `siw` stores
//! its final CRC with a little-endian store of the same value. Without CRC
//! the field is still sent, as zeros, and ignored on receipt. The pad is
//! ignored on receipt except by the CRC.
//!
//! Sending: [`FpduTx`] builds the bytes before the payload (length field and
//! DDP/RDMAP header) and after it (pad and CRC), so that the transport can
//! `writev` `[head][payload pieces…][trailer]` without copying the payload;
//! the CRC runs incrementally over the pieces ([`Crc`]).
//!
//! Receiving: [`FpduReader`] is told what arrived and says what it needs
//! next ([`RxNeed`]): header bytes (it keeps those, at most 48), then a
//! payload length that the transport places straight into application
//! memory (the reader never sees or copies it), then pad and CRC. With CRC
//! on, the transport hands the reader the payload bytes it has just placed
//! ([`FpduReader::placed`]), or their CRC computed elsewhere
//! ([`FpduReader::placed_crc`], with [`crc32c_of`]); the real transport reads
//! the just-placed destination memory for this, without another copy.
//! Placement therefore happens before the CRC is checked (DDP allows
//! placing before delivering): nothing may complete, and no Read Response
//! may be started, before [`RxEvent::Done`]. The reader checks only framing
//! and headers; whether a Read Request carries payload (it must not), MSNs
//! and offsets are the receiver's to judge.
//!
//! # DDP and RDMAP headers
//!
//! [`Header`] is the ULPDU header: the DDP control byte (T `0x80`, L `0x40`,
//! four reserved bits, DDP version 1 in the low two bits), the RDMAP control
//! byte (version 1 in the top two bits, two reserved bits, opcode in the low
//! four), then either the tagged fields (Sink STag, Tagged Offset: 14 bytes
//! in all) or the untagged ones (Invalidate STag or reserved, queue number,
//! message sequence number, message offset: 18 bytes). A Read Request adds
//! its 28-byte RDMAP header ([`ReadRequest`]), so its header is 46 bytes;
//! a Terminate's body is carried as the segment's payload ([`Terminate`]).
//!
//! [`Header::decode`] checks, in this order, and names each failure with
//! the Terminate error the peer is owed ([`DdpError::term`]):
//! 1. DDP version ≠ 1 → DDP tagged or untagged buffer error "invalid DDP
//!    version" (by the T bit), as `siw` and `irdma` do;
//! 2. RDMAP version ≠ 1 → RDMAP remote operation error "invalid RDMAP
//!    version";
//! 3. opcode 8–15 (RFC 7306's extensions, not spoken here) → RDMAP remote
//!    operation error "unexpected opcode";
//! 4. T bit not the one the opcode uses → also "unexpected opcode" (the
//!    registry has no closer code; decision);
//! 5. queue number ≠ 0 (Sends), 1 (Read Request), 2 (Terminate) → DDP
//!    untagged buffer error "invalid QN".
//!
//! MSN and MO are checked by the receiver, which knows what it expects
//! ([`TermError`] has their codes). Reserved bits are ignored, as the RFCs
//! require, but kept in [`Reserved`] for logging and exact re-encoding.
//!
//! # Terminate
//!
//! A Terminate (opcode 7, untagged queue 2) carries a 32-bit control word —
//! layer (4 bits), error type (4), error code (8), then M (DDP segment
//! length valid), D (DDP header included), R (RDMAP header included) and 13
//! reserved bits — optionally followed by the offending segment's 16-bit
//! length, its DDP header (14 or 18 bytes, by its own T bit) and, for a Read
//! Request, its 28-byte RDMAP header. [`TermError`] holds every
//! layer/type/code triple of the IANA RDDP registry (RFC 6580), with a
//! catch-all for values outside it.
//!
//! Decisions and peer quirks:
//! - The 2-byte length field is present when M or D is set (`irdma` sends it
//!   with M alone; `siw` sets M and D together; Wireshark reads it with D).
//! - `siw` fills the segment length with the segment's payload length,
//!   `irdma` with the whole ULPDU length; it is carried as a raw number.
//!   This codec sends the ULPDU length.
//! - `siw` declares its control word with C bit-fields over a big-endian
//!   word; on a little-endian host that puts the layer in the low nibble of
//!   the first byte, the error type in the high one, and M/D/R in the three
//!   low bits of the third byte — where an RFC reader sees reserved bits and
//!   no headers, though the headers follow. [`Terminate::decode`] recognises
//!   that layout ([`TermLayout::SiwLittleEndian`]): RFC flag bits set → RFC;
//!   else `siw` flag bits set → `siw`; else the reading that names a
//!   registered error, preferring the RFC one. A control word that announces
//!   no headers but is followed by what parses as a segment length and a
//!   DDP header yields those headers, marked [`Terminate::inferred`]. Any
//!   further trailing bytes are tolerated and left unconsumed.
//!
//! Nothing here allocates: headers go into fixed arrays, frames into caller
//! buffers, and the parsers keep what they need inline.

use std::fmt;

// ─────────────────────────────── CRC32c ───────────────────────────────

/// Bytes of the CRC field at the end of every FPDU.
pub const CRC_LEN: usize = 4;

/// A running CRC32c (Castagnoli) over bytes fed in pieces; the value after
/// the pieces `a`, `b` equals the CRC32c of `a ‖ b`. Hardware-accelerated
/// where the CPU has CRC32c instructions (SSE 4.2, ARMv8 CRC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crc(u32);

impl Crc {
    /// The CRC of no bytes.
    pub const fn new() -> Crc {
        Crc(0)
    }

    /// Continue over `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = ::crc32c::crc32c_append(self.0, bytes);
    }

    /// Continue over a piece of `piece_len` bytes whose own CRC32c
    /// ([`crc32c_of`]) is `piece_crc`, without its bytes.
    pub fn append_crc(&mut self, piece_crc: u32, piece_len: usize) {
        if piece_len > 0 {
            self.0 = ::crc32c::crc32c_combine(self.0, piece_crc, piece_len);
        }
    }

    /// The CRC32c value so far.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The four bytes that go on the wire: little-endian, as in iSCSI.
    pub const fn wire_bytes(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
}

/// CRC32c of one byte slice, e.g. payload just placed in memory.
pub fn crc32c_of(bytes: &[u8]) -> u32 {
    ::crc32c::crc32c(bytes)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

// ─────────────────────────── MPA setup frames ───────────────────────────

/// Key of an MPA Request frame.
pub const MPA_KEY_REQUEST: [u8; 16] = *b"MPA ID Req Frame";
/// Key of an MPA Reply frame.
pub const MPA_KEY_REPLY: [u8; 16] = *b"MPA ID Rep Frame";
/// Key, flags, revision and private data length.
pub const MPA_HEADER_LEN: usize = 20;
/// The RFC's ceiling on private data length, IRD/ORD word included.
pub const MPA_PD_MAX: usize = 512;
/// What this library sends at most, IRD/ORD word included (`siw` and
/// rdma_cm accept 256).
pub const PROFILE_PD_SEND_MAX: usize = 256;
/// Size of the IRD/ORD word that opens the private data under H.
pub const IRD_ORD_LEN: usize = 4;
/// Largest IRD or ORD value (14 bits).
pub const IRD_ORD_MAX: u16 = 0x3FFF;

const MPA_FLAG_MARKERS: u8 = 0x80;
const MPA_FLAG_CRC: u8 = 0x40;
const MPA_FLAG_REJECT: u8 = 0x20;
const MPA_FLAG_ENHANCED: u8 = 0x10;
const MPA_FLAGS_RESERVED: u8 = 0x0F;
const MPA_REV_MAX: u8 = 2;

const IRD_PEER_TO_PEER: u16 = 0x8000;
const IRD_RTR_ZERO_SEND: u16 = 0x4000;
const ORD_RTR_WRITE: u16 = 0x8000;
const ORD_RTR_READ: u16 = 0x4000;

/// Which setup frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpaKind {
    /// Initiator to responder.
    Request,
    /// Responder to initiator.
    Reply,
}

impl MpaKind {
    /// The frame's 16-byte key.
    pub const fn key(self) -> &'static [u8; 16] {
        match self {
            MpaKind::Request => &MPA_KEY_REQUEST,
            MpaKind::Reply => &MPA_KEY_REPLY,
        }
    }

    const fn other(self) -> MpaKind {
        match self {
            MpaKind::Request => MpaKind::Reply,
            MpaKind::Reply => MpaKind::Request,
        }
    }
}

/// The "ready to receive" messages a side offers (Request) or picks (Reply)
/// for peer-to-peer setup (RFC 6581).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtrFlags {
    /// A zero-length Send.
    pub zero_length_send: bool,
    /// A zero-length RDMA Write.
    pub rdma_write: bool,
    /// A zero-length RDMA Read (the responder answers it).
    pub rdma_read: bool,
}

/// The IRD/ORD word of enhanced setup (RFC 6581).
///
/// Wire: bytes 0–1 = `0x8000` peer-to-peer | `0x4000` zero-length-Send RTR |
/// IRD (14 bits); bytes 2–3 = `0x8000` RDMA Write RTR | `0x4000` RDMA Read
/// RTR | ORD (14 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrdOrd {
    /// Inbound RDMA Reads this side accepts at once (≤ [`IRD_ORD_MAX`]).
    pub ird: u16,
    /// Outbound RDMA Reads this side will have in flight (≤ [`IRD_ORD_MAX`]).
    pub ord: u16,
    /// Peer-to-peer mode: the initiator sends an RTR message after the Reply.
    pub peer_to_peer: bool,
    /// The RTR messages offered or chosen.
    pub rtr: RtrFlags,
}

impl IrdOrd {
    /// The 4 wire bytes; `None` if IRD or ORD does not fit in 14 bits.
    pub fn encode(&self) -> Option<[u8; 4]> {
        if self.ird > IRD_ORD_MAX || self.ord > IRD_ORD_MAX {
            return None;
        }
        let mut w0 = self.ird;
        if self.peer_to_peer {
            w0 |= IRD_PEER_TO_PEER;
        }
        if self.rtr.zero_length_send {
            w0 |= IRD_RTR_ZERO_SEND;
        }
        let mut w1 = self.ord;
        if self.rtr.rdma_write {
            w1 |= ORD_RTR_WRITE;
        }
        if self.rtr.rdma_read {
            w1 |= ORD_RTR_READ;
        }
        let [a, b] = w0.to_be_bytes();
        let [c, d] = w1.to_be_bytes();
        Some([a, b, c, d])
    }

    /// Read the 4 wire bytes (every bit pattern is meaningful).
    pub fn decode(b: [u8; 4]) -> IrdOrd {
        let w0 = u16::from_be_bytes([b[0], b[1]]);
        let w1 = u16::from_be_bytes([b[2], b[3]]);
        IrdOrd {
            ird: w0 & IRD_ORD_MAX,
            ord: w1 & IRD_ORD_MAX,
            peer_to_peer: w0 & IRD_PEER_TO_PEER != 0,
            rtr: RtrFlags {
                zero_length_send: w0 & IRD_RTR_ZERO_SEND != 0,
                rdma_write: w1 & ORD_RTR_WRITE != 0,
                rdma_read: w1 & ORD_RTR_READ != 0,
            },
        }
    }
}

/// One MPA Request or Reply frame. The H flag is set exactly when
/// [`ird_ord`](Self::ird_ord) is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpaFrame<'a> {
    pub kind: MpaKind,
    /// M: the sender wants to receive FPDUs with markers.
    pub markers: bool,
    /// C: the sender wants CRCs (used if either side sets it).
    pub crc: bool,
    /// R: the responder refuses the connection (Reply).
    pub reject: bool,
    /// Revision as on the wire: 0 and 1 mean revision 1, 2 is RFC 6581.
    pub revision: u8,
    /// The IRD/ORD word (revision 2 with H).
    pub ird_ord: Option<IrdOrd>,
    /// The consumer's private data (after the IRD/ORD word, if any).
    pub private_data: &'a [u8],
    /// The four reserved flag bits (low nibble of the flags byte) as
    /// received; zero in frames this library builds.
    pub reserved_flags: u8,
}

impl<'a> MpaFrame<'a> {
    /// A frame with no flags and no private data.
    pub const fn new(kind: MpaKind, revision: u8) -> MpaFrame<'static> {
        MpaFrame {
            kind,
            markers: false,
            crc: false,
            reject: false,
            revision,
            ird_ord: None,
            private_data: &[],
            reserved_flags: 0,
        }
    }

    /// H: enhanced setup, the private data opens with the IRD/ORD word.
    pub const fn enhanced(&self) -> bool {
        self.ird_ord.is_some()
    }

    /// The revision the frame speaks: 0 (pre-RFC) counts as 1.
    pub const fn effective_revision(&self) -> u8 {
        if self.revision == 0 {
            1
        } else {
            self.revision
        }
    }

    /// The private data length field: IRD/ORD word plus private data.
    pub fn pd_len(&self) -> usize {
        self.private_data.len() + if self.enhanced() { IRD_ORD_LEN } else { 0 }
    }

    /// Bytes [`encode`](Self::encode) writes.
    pub fn encoded_len(&self) -> usize {
        MPA_HEADER_LEN + self.pd_len()
    }

    /// Write the frame into `out` with this library's limit on private data
    /// ([`PROFILE_PD_SEND_MAX`]); returns the frame's length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, MpaEncodeError> {
        self.encode_with_limit(out, PROFILE_PD_SEND_MAX)
    }

    /// [`encode`](Self::encode) with another limit (capped at the RFC's 512).
    pub fn encode_with_limit(&self, out: &mut [u8], limit: usize) -> Result<usize, MpaEncodeError> {
        let limit = limit.min(MPA_PD_MAX);
        if self.revision > MPA_REV_MAX {
            return Err(MpaEncodeError::Revision(self.revision));
        }
        if self.reserved_flags & !MPA_FLAGS_RESERVED != 0 {
            return Err(MpaEncodeError::ReservedFlags(self.reserved_flags));
        }
        if self.enhanced() && self.revision < 2 {
            return Err(MpaEncodeError::EnhancedNeedsRevision2 {
                revision: self.revision,
            });
        }
        let pd_len = self.pd_len();
        if pd_len > limit {
            return Err(MpaEncodeError::PrivateDataTooLong {
                len: pd_len,
                max: limit,
            });
        }
        let total = MPA_HEADER_LEN + pd_len;
        if out.len() < total {
            return Err(MpaEncodeError::BufferTooSmall { need: total });
        }
        out[..16].copy_from_slice(self.kind.key());
        let mut flags = self.reserved_flags;
        if self.markers {
            flags |= MPA_FLAG_MARKERS;
        }
        if self.crc {
            flags |= MPA_FLAG_CRC;
        }
        if self.reject {
            flags |= MPA_FLAG_REJECT;
        }
        let mut at = MPA_HEADER_LEN;
        if let Some(io) = self.ird_ord {
            flags |= MPA_FLAG_ENHANCED;
            let word = io.encode().ok_or(MpaEncodeError::IrdOrdOutOfRange)?;
            out[at..at + IRD_ORD_LEN].copy_from_slice(&word);
            at += IRD_ORD_LEN;
        }
        out[16] = flags;
        out[17] = self.revision;
        out[18..20].copy_from_slice(&(pd_len as u16).to_be_bytes());
        out[at..total].copy_from_slice(self.private_data);
        Ok(total)
    }
}

/// Why a frame could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpaEncodeError {
    /// `out` is shorter than the frame.
    BufferTooSmall { need: usize },
    /// IRD/ORD word plus private data exceed the limit.
    PrivateDataTooLong { len: usize, max: usize },
    /// IRD or ORD above [`IRD_ORD_MAX`].
    IrdOrdOutOfRange,
    /// H needs revision 2.
    EnhancedNeedsRevision2 { revision: u8 },
    /// Revision above 2.
    Revision(u8),
    /// Reserved flag bits outside the low nibble.
    ReservedFlags(u8),
}

impl fmt::Display for MpaEncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MpaEncodeError::BufferTooSmall { need } => write!(f, "MPA frame needs {need} bytes"),
            MpaEncodeError::PrivateDataTooLong { len, max } => {
                write!(f, "MPA private data of {len} bytes exceeds {max}")
            }
            MpaEncodeError::IrdOrdOutOfRange => write!(f, "IRD or ORD above {IRD_ORD_MAX}"),
            MpaEncodeError::EnhancedNeedsRevision2 { revision } => {
                write!(f, "enhanced MPA setup needs revision 2, not {revision}")
            }
            MpaEncodeError::Revision(r) => write!(f, "MPA revision {r} is not spoken"),
            MpaEncodeError::ReservedFlags(b) => {
                write!(f, "MPA reserved flags {b:#04x} out of range")
            }
        }
    }
}

impl std::error::Error for MpaEncodeError {}

/// Why received bytes are not an acceptable setup frame. Each is final: the
/// connection is to be closed (after a reject Reply, for [`Markers`]).
///
/// [`Markers`]: MpaError::Markers
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpaError {
    /// The first 16 bytes are not an MPA key: not an MPA peer.
    BadKey,
    /// The key of the other frame kind (e.g. a Reply where a Request was due).
    UnexpectedKey(MpaKind),
    /// Revision 3 or above.
    UnsupportedRevision(u8),
    /// Private data length above the receiver's limit.
    PrivateDataTooLong { len: u16, max: u16 },
    /// H set with revision 0 or 1.
    EnhancedNeedsRevision2 { revision: u8 },
    /// H set with less private data than the IRD/ORD word.
    EnhancedTooShort { len: u16 },
    /// M set: the peer wants markers, which this library does not send.
    Markers { revision: u8 },
}

impl fmt::Display for MpaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MpaError::BadKey => write!(f, "not an MPA frame (bad key)"),
            MpaError::UnexpectedKey(k) => write!(f, "unexpected MPA {k:?} frame"),
            MpaError::UnsupportedRevision(r) => write!(f, "MPA revision {r} is not supported"),
            MpaError::PrivateDataTooLong { len, max } => {
                write!(f, "MPA private data length {len} exceeds {max}")
            }
            MpaError::EnhancedNeedsRevision2 { revision } => {
                write!(f, "MPA enhanced flag with revision {revision}")
            }
            MpaError::EnhancedTooShort { len } => {
                write!(f, "MPA enhanced flag with {len} bytes of private data")
            }
            MpaError::Markers { .. } => write!(f, "peer requests MPA markers (not supported)"),
        }
    }
}

impl std::error::Error for MpaError {}

/// What an [`MpaParser`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpaConfig {
    /// The frame kind due: Request on the responder, Reply on the initiator.
    pub expect: MpaKind,
    /// Longest private data length field accepted (capped at 512).
    pub max_private_data: u16,
    /// Deliver frames with M set instead of failing with [`MpaError::Markers`].
    pub accept_markers: bool,
}

impl MpaConfig {
    /// Expect `kind`, up to 512 bytes of private data, no markers.
    pub const fn new(expect: MpaKind) -> MpaConfig {
        MpaConfig {
            expect,
            max_private_data: MPA_PD_MAX as u16,
            accept_markers: false,
        }
    }
}

/// What a call to [`MpaParser::feed`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpaFed<'a> {
    /// Bytes of the input taken; the rest belongs to whatever follows.
    pub consumed: usize,
    pub status: MpaStatus<'a>,
}

/// Progress of an [`MpaParser`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpaStatus<'a> {
    /// At least this many more bytes are needed (exact once the private data
    /// length is known).
    NeedMore(usize),
    /// The frame is complete.
    Frame(MpaFrame<'a>),
}

/// Incremental reader of one MPA setup frame. Keeps the frame inline (at
/// most 532 bytes); no allocation.
#[derive(Clone, Debug)]
pub struct MpaParser {
    cfg: MpaConfig,
    buf: [u8; MPA_HEADER_LEN + MPA_PD_MAX],
    have: usize,
    /// Frame length once the header is in, else 0.
    total: usize,
    /// Some byte of the key so far differs from the expected key.
    off_key: bool,
    failed: Option<MpaError>,
}

impl MpaParser {
    pub fn new(cfg: MpaConfig) -> MpaParser {
        let mut cfg = cfg;
        cfg.max_private_data = cfg.max_private_data.min(MPA_PD_MAX as u16);
        MpaParser {
            cfg,
            buf: [0; MPA_HEADER_LEN + MPA_PD_MAX],
            have: 0,
            total: 0,
            off_key: false,
            failed: None,
        }
    }

    /// Take bytes from the stream. Never consumes past the frame's end. An
    /// error is final and returned again by later calls; after a frame,
    /// later calls return it again and consume nothing.
    pub fn feed(&mut self, input: &[u8]) -> Result<MpaFed<'_>, MpaError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut consumed = 0;
        while self.total == 0 {
            let Some(&b) = input.get(consumed) else {
                return Ok(MpaFed {
                    consumed,
                    status: MpaStatus::NeedMore(MPA_HEADER_LEN - self.have),
                });
            };
            consumed += 1;
            if let Err(e) = self.header_byte(b) {
                self.failed = Some(e);
                return Err(e);
            }
        }
        let take = (self.total - self.have).min(input.len() - consumed);
        self.buf[self.have..self.have + take].copy_from_slice(&input[consumed..consumed + take]);
        self.have += take;
        consumed += take;
        if self.have < self.total {
            return Ok(MpaFed {
                consumed,
                status: MpaStatus::NeedMore(self.total - self.have),
            });
        }
        Ok(MpaFed {
            consumed,
            status: MpaStatus::Frame(self.frame()),
        })
    }

    fn header_byte(&mut self, b: u8) -> Result<(), MpaError> {
        let i = self.have;
        self.buf[i] = b;
        self.have += 1;
        if i < 16 {
            if b != self.cfg.expect.key()[i] {
                self.off_key = true;
            }
            if self.off_key {
                let other = self.cfg.expect.other();
                if self.buf[..=i] != other.key()[..=i] {
                    return Err(MpaError::BadKey);
                }
                if i == 15 {
                    return Err(MpaError::UnexpectedKey(other));
                }
            }
            return Ok(());
        }
        if self.have < MPA_HEADER_LEN {
            return Ok(());
        }
        let flags = self.buf[16];
        let revision = self.buf[17];
        let pd_len = be16(&self.buf, 18);
        if revision > MPA_REV_MAX {
            return Err(MpaError::UnsupportedRevision(revision));
        }
        if pd_len > self.cfg.max_private_data {
            return Err(MpaError::PrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            });
        }
        if flags & MPA_FLAG_ENHANCED != 0 {
            if revision < 2 {
                return Err(MpaError::EnhancedNeedsRevision2 { revision });
            }
            if (pd_len as usize) < IRD_ORD_LEN {
                return Err(MpaError::EnhancedTooShort { len: pd_len });
            }
        }
        if flags & MPA_FLAG_MARKERS != 0 && !self.cfg.accept_markers {
            return Err(MpaError::Markers { revision });
        }
        self.total = MPA_HEADER_LEN + pd_len as usize;
        Ok(())
    }

    fn frame(&self) -> MpaFrame<'_> {
        let flags = self.buf[16];
        let mut pd = &self.buf[MPA_HEADER_LEN..self.total];
        let ird_ord = if flags & MPA_FLAG_ENHANCED != 0 {
            let io = IrdOrd::decode([pd[0], pd[1], pd[2], pd[3]]);
            pd = &pd[IRD_ORD_LEN..];
            Some(io)
        } else {
            None
        };
        MpaFrame {
            kind: self.cfg.expect,
            markers: flags & MPA_FLAG_MARKERS != 0,
            crc: flags & MPA_FLAG_CRC != 0,
            reject: flags & MPA_FLAG_REJECT != 0,
            revision: self.buf[17],
            ird_ord,
            private_data: pd,
            reserved_flags: flags & MPA_FLAGS_RESERVED,
        }
    }
}

// ─────────────────────────── DDP / RDMAP headers ───────────────────────────

/// DDP version spoken (RFC 5041).
pub const DDP_VERSION: u8 = 1;
/// RDMAP version spoken (RFC 5040).
pub const RDMAP_VERSION: u8 = 1;
/// Header of a tagged segment: 2 control bytes, Sink STag, Tagged Offset.
pub const TAGGED_HDR_LEN: usize = 14;
/// Header of an untagged segment: 2 control bytes, Invalidate STag or
/// reserved, QN, MSN, MO.
pub const UNTAGGED_HDR_LEN: usize = 18;
/// The Read Request's own RDMAP header.
pub const READ_REQUEST_LEN: usize = 28;
/// Untagged header plus the Read Request's 28 bytes.
pub const READ_REQUEST_HDR_LEN: usize = UNTAGGED_HDR_LEN + READ_REQUEST_LEN;
/// Longest header [`Header::encode`] writes.
pub const MAX_HDR_LEN: usize = READ_REQUEST_HDR_LEN;
/// Untagged queue of Sends.
pub const QN_SEND: u32 = 0;
/// Untagged queue of RDMA Read Requests.
pub const QN_READ_REQUEST: u32 = 1;
/// Untagged queue of Terminates.
pub const QN_TERMINATE: u32 = 2;

const DDP_TAGGED: u8 = 0x80;
const DDP_LAST: u8 = 0x40;
const DDP_RESERVED: u8 = 0x3C;
const DDP_VERSION_MASK: u8 = 0x03;
const RDMAP_VERSION_SHIFT: u8 = 6;
const RDMAP_RESERVED: u8 = 0x30;
const RDMAP_OPCODE_MASK: u8 = 0x0F;

/// RDMAP opcodes (RFC 5040).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    RdmaWrite = 0,
    ReadRequest = 1,
    ReadResponse = 2,
    Send = 3,
    SendInvalidate = 4,
    SendSolicited = 5,
    SendSolicitedInvalidate = 6,
    Terminate = 7,
}

impl Opcode {
    /// The opcode of a 4-bit value, `None` for 8–15.
    pub const fn from_u8(v: u8) -> Option<Opcode> {
        Some(match v {
            0 => Opcode::RdmaWrite,
            1 => Opcode::ReadRequest,
            2 => Opcode::ReadResponse,
            3 => Opcode::Send,
            4 => Opcode::SendInvalidate,
            5 => Opcode::SendSolicited,
            6 => Opcode::SendSolicitedInvalidate,
            7 => Opcode::Terminate,
            _ => return None,
        })
    }

    /// Placed by STag and offset (tagged) rather than into a queue.
    pub const fn tagged(self) -> bool {
        matches!(self, Opcode::RdmaWrite | Opcode::ReadResponse)
    }

    /// The untagged queue the opcode uses.
    pub const fn queue(self) -> Option<u32> {
        match self {
            Opcode::RdmaWrite | Opcode::ReadResponse => None,
            Opcode::ReadRequest => Some(QN_READ_REQUEST),
            Opcode::Terminate => Some(QN_TERMINATE),
            _ => Some(QN_SEND),
        }
    }

    /// Bytes of DDP + RDMAP header in a segment of this opcode.
    pub const fn header_len(self) -> usize {
        match self {
            Opcode::RdmaWrite | Opcode::ReadResponse => TAGGED_HDR_LEN,
            Opcode::ReadRequest => READ_REQUEST_HDR_LEN,
            _ => UNTAGGED_HDR_LEN,
        }
    }
}

/// The RDMA Read Request's RDMAP header (RFC 5040): where the data goes
/// (the requester's sink buffer, written by the Read Response) and where
/// it comes from (the responder's source buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadRequest {
    pub sink_stag: u32,
    pub sink_to: u64,
    /// Bytes to read.
    pub size: u32,
    pub source_stag: u32,
    pub source_to: u64,
}

impl ReadRequest {
    pub fn encode(&self, out: &mut [u8; READ_REQUEST_LEN]) {
        out[0..4].copy_from_slice(&self.sink_stag.to_be_bytes());
        out[4..12].copy_from_slice(&self.sink_to.to_be_bytes());
        out[12..16].copy_from_slice(&self.size.to_be_bytes());
        out[16..20].copy_from_slice(&self.source_stag.to_be_bytes());
        out[20..28].copy_from_slice(&self.source_to.to_be_bytes());
    }

    /// Read the first 28 bytes of `b`; `None` if shorter.
    pub fn decode(b: &[u8]) -> Option<ReadRequest> {
        if b.len() < READ_REQUEST_LEN {
            return None;
        }
        Some(ReadRequest {
            sink_stag: be32(b, 0),
            sink_to: be64(b, 4),
            size: be32(b, 12),
            source_stag: be32(b, 16),
            source_to: be64(b, 20),
        })
    }
}

/// An RDMAP message segment as its header describes it. The queue number of
/// the untagged kinds is implied: 0 Sends, 1 Read Request, 2 Terminate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ulp {
    /// Tagged: place the payload at `to` in the buffer named `stag`.
    RdmaWrite { stag: u32, to: u64 },
    /// Untagged queue 1, carrying the 28-byte request; no payload.
    ReadRequest { msn: u32, mo: u32, req: ReadRequest },
    /// Tagged: the data of a Read, into the requester's sink buffer.
    ReadResponse { stag: u32, to: u64 },
    /// Untagged queue 0: opcodes 3–6 by `solicited` and `invalidate`.
    Send {
        msn: u32,
        mo: u32,
        solicited: bool,
        invalidate: Option<u32>,
    },
    /// Untagged queue 2; the payload is the Terminate body ([`Terminate`]).
    Terminate { msn: u32, mo: u32 },
}

impl Ulp {
    pub const fn opcode(&self) -> Opcode {
        match *self {
            Ulp::RdmaWrite { .. } => Opcode::RdmaWrite,
            Ulp::ReadRequest { .. } => Opcode::ReadRequest,
            Ulp::ReadResponse { .. } => Opcode::ReadResponse,
            Ulp::Send {
                solicited: false,
                invalidate: None,
                ..
            } => Opcode::Send,
            Ulp::Send {
                solicited: false,
                invalidate: Some(_),
                ..
            } => Opcode::SendInvalidate,
            Ulp::Send {
                solicited: true,
                invalidate: None,
                ..
            } => Opcode::SendSolicited,
            Ulp::Send {
                solicited: true,
                invalidate: Some(_),
                ..
            } => Opcode::SendSolicitedInvalidate,
            Ulp::Terminate { .. } => Opcode::Terminate,
        }
    }

    /// Bytes of header this segment has.
    pub const fn header_len(&self) -> usize {
        self.opcode().header_len()
    }

    /// Write the header with L = `last` and zero reserved fields; returns
    /// its length.
    pub fn encode(&self, last: bool, out: &mut [u8; MAX_HDR_LEN]) -> usize {
        Header::new(*self, last).encode(out)
    }

    /// [`Header::decode`].
    pub fn decode(buf: &[u8]) -> Result<(Header, usize), DdpError> {
        Header::decode(buf)
    }
}

/// Reserved header fields as received: the RFCs have the sender zero them
/// and the receiver ignore them. Kept only for logging and exact
/// re-encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// Bits `0x3C` of the DDP control byte.
    pub ddp: u8,
    /// Bits `0x30` of the RDMAP control byte.
    pub rdmap: u8,
    /// The untagged header's first word where it is not an Invalidate STag.
    pub word: u32,
}

/// A complete DDP/RDMAP segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub ulp: Ulp,
    /// L: the last segment of its message.
    pub last: bool,
    pub reserved: Reserved,
}

impl Header {
    /// A header with zero reserved fields.
    pub const fn new(ulp: Ulp, last: bool) -> Header {
        Header {
            ulp,
            last,
            reserved: Reserved {
                ddp: 0,
                rdmap: 0,
                word: 0,
            },
        }
    }

    /// Bytes of header.
    pub const fn header_len(&self) -> usize {
        self.ulp.header_len()
    }

    /// Write the header; returns its length.
    pub fn encode(&self, out: &mut [u8; MAX_HDR_LEN]) -> usize {
        let op = self.ulp.opcode();
        let mut c0 = DDP_VERSION | (self.reserved.ddp & DDP_RESERVED);
        if op.tagged() {
            c0 |= DDP_TAGGED;
        }
        if self.last {
            c0 |= DDP_LAST;
        }
        out[0] = c0;
        out[1] = (RDMAP_VERSION << RDMAP_VERSION_SHIFT)
            | (self.reserved.rdmap & RDMAP_RESERVED)
            | op as u8;
        let untagged = |out: &mut [u8; MAX_HDR_LEN], word: u32, msn: u32, mo: u32| {
            out[2..6].copy_from_slice(&word.to_be_bytes());
            out[6..10].copy_from_slice(&op.queue().unwrap_or(0).to_be_bytes());
            out[10..14].copy_from_slice(&msn.to_be_bytes());
            out[14..18].copy_from_slice(&mo.to_be_bytes());
        };
        match self.ulp {
            Ulp::RdmaWrite { stag, to } | Ulp::ReadResponse { stag, to } => {
                out[2..6].copy_from_slice(&stag.to_be_bytes());
                out[6..14].copy_from_slice(&to.to_be_bytes());
            }
            Ulp::ReadRequest { msn, mo, req } => {
                untagged(out, self.reserved.word, msn, mo);
                let mut r = [0u8; READ_REQUEST_LEN];
                req.encode(&mut r);
                out[UNTAGGED_HDR_LEN..READ_REQUEST_HDR_LEN].copy_from_slice(&r);
            }
            Ulp::Send {
                msn,
                mo,
                invalidate,
                ..
            } => {
                untagged(out, invalidate.unwrap_or(self.reserved.word), msn, mo);
            }
            Ulp::Terminate { msn, mo } => untagged(out, self.reserved.word, msn, mo),
        }
        op.header_len()
    }

    /// Read a header from the start of `buf` (the ULPDU); returns it and its
    /// length. Checks versions, opcode, T bit and queue number (see the
    /// module docs for the order and the Terminate each failure earns).
    pub fn decode(buf: &[u8]) -> Result<(Header, usize), DdpError> {
        if buf.len() < 2 {
            return Err(DdpError::Truncated { need: 2 });
        }
        let (c0, c1) = (buf[0], buf[1]);
        let tagged = c0 & DDP_TAGGED != 0;
        let dv = c0 & DDP_VERSION_MASK;
        if dv != DDP_VERSION {
            return Err(DdpError::DdpVersion {
                tagged,
                version: dv,
            });
        }
        let rv = c1 >> RDMAP_VERSION_SHIFT;
        if rv != RDMAP_VERSION {
            return Err(DdpError::RdmapVersion(rv));
        }
        let Some(op) = Opcode::from_u8(c1 & RDMAP_OPCODE_MASK) else {
            return Err(DdpError::Opcode(c1 & RDMAP_OPCODE_MASK));
        };
        if op.tagged() != tagged {
            return Err(DdpError::TaggedMismatch { opcode: op, tagged });
        }
        let len = op.header_len();
        if buf.len() < len {
            return Err(DdpError::Truncated { need: len });
        }
        let mut reserved = Reserved {
            ddp: c0 & DDP_RESERVED,
            rdmap: c1 & RDMAP_RESERVED,
            word: 0,
        };
        let ulp = if tagged {
            let (stag, to) = (be32(buf, 2), be64(buf, 6));
            if op == Opcode::RdmaWrite {
                Ulp::RdmaWrite { stag, to }
            } else {
                Ulp::ReadResponse { stag, to }
            }
        } else {
            let (word, qn, msn, mo) = (be32(buf, 2), be32(buf, 6), be32(buf, 10), be32(buf, 14));
            if Some(qn) != op.queue() {
                return Err(DdpError::InvalidQn { opcode: op, qn });
            }
            match op {
                Opcode::ReadRequest => {
                    reserved.word = word;
                    let req = ReadRequest::decode(&buf[UNTAGGED_HDR_LEN..]).unwrap_or_default();
                    Ulp::ReadRequest { msn, mo, req }
                }
                Opcode::Terminate => {
                    reserved.word = word;
                    Ulp::Terminate { msn, mo }
                }
                _ => {
                    let solicited =
                        matches!(op, Opcode::SendSolicited | Opcode::SendSolicitedInvalidate);
                    let invalidate =
                        if matches!(op, Opcode::SendInvalidate | Opcode::SendSolicitedInvalidate) {
                            Some(word)
                        } else {
                            reserved.word = word;
                            None
                        };
                    Ulp::Send {
                        msn,
                        mo,
                        solicited,
                        invalidate,
                    }
                }
            }
        };
        Ok((
            Header {
                ulp,
                last: c0 & DDP_LAST != 0,
                reserved,
            },
            len,
        ))
    }
}

/// Why a segment header is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DdpError {
    /// Fewer bytes than the header needs (not a protocol error by itself).
    Truncated { need: usize },
    /// DDP version other than 1.
    DdpVersion { tagged: bool, version: u8 },
    /// RDMAP version other than 1.
    RdmapVersion(u8),
    /// Opcode 8–15.
    Opcode(u8),
    /// T bit differs from the one the opcode uses.
    TaggedMismatch { opcode: Opcode, tagged: bool },
    /// Queue number other than the opcode's.
    InvalidQn { opcode: Opcode, qn: u32 },
}

impl DdpError {
    /// The Terminate error to send the peer; `None` for [`Truncated`].
    ///
    /// [`Truncated`]: DdpError::Truncated
    pub const fn term(&self) -> Option<TermError> {
        Some(match *self {
            DdpError::Truncated { .. } => return None,
            DdpError::DdpVersion { tagged: true, .. } => {
                TermError::DdpTagged(DdpTagged::InvalidVersion)
            }
            DdpError::DdpVersion { tagged: false, .. } => {
                TermError::DdpUntagged(DdpUntagged::InvalidVersion)
            }
            DdpError::RdmapVersion(_) => TermError::RdmapOperation(RdmapOperation::InvalidVersion),
            DdpError::Opcode(_) | DdpError::TaggedMismatch { .. } => {
                TermError::RdmapOperation(RdmapOperation::UnexpectedOpcode)
            }
            DdpError::InvalidQn { .. } => TermError::DdpUntagged(DdpUntagged::InvalidQn),
        })
    }
}

impl fmt::Display for DdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DdpError::Truncated { need } => write!(f, "DDP header needs {need} bytes"),
            DdpError::DdpVersion { version, .. } => write!(f, "invalid DDP version {version}"),
            DdpError::RdmapVersion(v) => write!(f, "invalid RDMAP version {v}"),
            DdpError::Opcode(o) => write!(f, "unexpected RDMAP opcode {o}"),
            DdpError::TaggedMismatch { opcode, tagged } => {
                write!(f, "RDMAP {opcode:?} with DDP tagged flag {}", tagged as u8)
            }
            DdpError::InvalidQn { opcode, qn } => write!(f, "RDMAP {opcode:?} on DDP queue {qn}"),
        }
    }
}

impl std::error::Error for DdpError {}

// ─────────────────────────────── FPDUs ───────────────────────────────

/// Bytes of the ULPDU length field that opens an FPDU.
pub const MPA_LEN_FIELD: usize = 2;
/// Longest ULPDU (16-bit length field).
pub const MAX_ULPDU_LEN: usize = u16::MAX as usize;

/// Zero bytes after a ULPDU of `ulpdu_len` so that `2 + len + pad` is a
/// multiple of 4.
pub const fn fpdu_pad(ulpdu_len: usize) -> usize {
    (MPA_LEN_FIELD + ulpdu_len).wrapping_neg() & 3
}

/// Bytes an FPDU adds around a ULPDU of `ulpdu_len`: length field, pad, CRC.
pub const fn fpdu_overhead(ulpdu_len: usize) -> usize {
    MPA_LEN_FIELD + fpdu_pad(ulpdu_len) + CRC_LEN
}

/// Largest payload a segment with a `header_len`-byte header can carry in
/// an FPDU of at most `max_fpdu` bytes (e.g. the TCP MSS), within the 16-bit
/// ULPDU length. 0 if even an empty segment does not fit.
pub const fn max_payload(header_len: usize, max_fpdu: usize) -> usize {
    // fpdu = round_up4(2 + ulpdu) + 4 ≤ max_fpdu  ⇔  2 + ulpdu ≤ floor4(max_fpdu - 4)
    let room = max_fpdu.saturating_sub(CRC_LEN) & !3;
    let by_fpdu = room.saturating_sub(MPA_LEN_FIELD + header_len);
    let by_len = MAX_ULPDU_LEN.saturating_sub(header_len);
    if by_fpdu < by_len {
        by_fpdu
    } else {
        by_len
    }
}

/// Why an FPDU could not be built or was refused on receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FpduError {
    /// The segment header is refused.
    Ddp(DdpError),
    /// ULPDU length shorter than the header its control bytes announce.
    UlpduTooShort { ulpdu_len: u16, header_len: usize },
    /// ULPDU longer than allowed (16 bits on send, the reader's limit on receipt).
    UlpduTooLong { ulpdu_len: usize, max: usize },
    /// The CRC field does not match the bytes.
    Crc { computed: u32, received: u32 },
    /// Local misuse: more bytes reported than were asked for, payload where
    /// none is due, or an FPDU closed before all its payload was sent.
    Misuse { expected: usize, got: usize },
    /// Local misuse: output buffer too small.
    BufferTooSmall { need: usize },
}

impl FpduError {
    /// The Terminate error to send the peer; `None` for local misuse.
    ///
    /// A length field that cannot be right (shorter than the header, longer
    /// than the limit) means the framing is lost: reported as the MPA error
    /// whose registry name is "marker and ULPDU length field mismatch"
    /// (`siw` names the same code "FPDU start"), the closest entry.
    pub const fn term(&self) -> Option<TermError> {
        match *self {
            FpduError::Ddp(e) => e.term(),
            FpduError::UlpduTooShort { .. } | FpduError::UlpduTooLong { .. } => {
                Some(TermError::Mpa(MpaCode::MarkerMismatch))
            }
            FpduError::Crc { .. } => Some(TermError::Mpa(MpaCode::Crc)),
            FpduError::Misuse { .. } | FpduError::BufferTooSmall { .. } => None,
        }
    }
}

impl fmt::Display for FpduError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FpduError::Ddp(e) => e.fmt(f),
            FpduError::UlpduTooShort {
                ulpdu_len,
                header_len,
            } => {
                write!(
                    f,
                    "ULPDU length {ulpdu_len} below its {header_len}-byte header"
                )
            }
            FpduError::UlpduTooLong { ulpdu_len, max } => {
                write!(f, "ULPDU length {ulpdu_len} above {max}")
            }
            FpduError::Crc { computed, received } => {
                write!(
                    f,
                    "MPA CRC mismatch: computed {computed:#010x}, received {received:#010x}"
                )
            }
            FpduError::Misuse { expected, got } => {
                write!(f, "FPDU misuse: {got} bytes where {expected} were due")
            }
            FpduError::BufferTooSmall { need } => write!(f, "FPDU needs {need} bytes"),
        }
    }
}

impl std::error::Error for FpduError {}

impl From<DdpError> for FpduError {
    fn from(e: DdpError) -> FpduError {
        FpduError::Ddp(e)
    }
}

/// The bytes around one outgoing FPDU's payload, for a copy-free `writev`:
/// `[head()][payload pieces…][trailer()]`.
#[derive(Clone, Debug)]
pub struct FpduTx {
    head: [u8; MPA_LEN_FIELD + MAX_HDR_LEN],
    head_len: usize,
    trailer: [u8; 3 + CRC_LEN],
    pad: usize,
    crc: Option<Crc>,
    payload_left: usize,
}

impl FpduTx {
    /// Start an FPDU for `header` and `payload_len` bytes of payload; with
    /// `crc`, the CRC runs over what is sent.
    pub fn new(header: &Header, payload_len: usize, crc: bool) -> Result<FpduTx, FpduError> {
        let mut hdr = [0u8; MAX_HDR_LEN];
        let hl = header.encode(&mut hdr);
        let ulpdu_len = hl + payload_len;
        if ulpdu_len > MAX_ULPDU_LEN {
            return Err(FpduError::UlpduTooLong {
                ulpdu_len,
                max: MAX_ULPDU_LEN,
            });
        }
        let mut head = [0u8; MPA_LEN_FIELD + MAX_HDR_LEN];
        head[..2].copy_from_slice(&(ulpdu_len as u16).to_be_bytes());
        head[2..2 + hl].copy_from_slice(&hdr[..hl]);
        let head_len = MPA_LEN_FIELD + hl;
        let crc = crc.then(|| {
            let mut c = Crc::new();
            c.update(&head[..head_len]);
            c
        });
        Ok(FpduTx {
            head,
            head_len,
            trailer: [0; 3 + CRC_LEN],
            pad: fpdu_pad(ulpdu_len),
            crc,
            payload_left: payload_len,
        })
    }

    /// Length field and header.
    pub fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }

    /// Account for a payload piece about to be sent (CRC over it when on).
    pub fn payload(&mut self, piece: &[u8]) -> Result<(), FpduError> {
        self.take(piece.len())?;
        if let Some(c) = &mut self.crc {
            c.update(piece);
        }
        Ok(())
    }

    /// Account for a payload piece of `len` bytes whose CRC32c was computed
    /// elsewhere (e.g. while copying it).
    pub fn payload_crc(&mut self, len: usize, piece_crc: u32) -> Result<(), FpduError> {
        self.take(len)?;
        if let Some(c) = &mut self.crc {
            c.append_crc(piece_crc, len);
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<(), FpduError> {
        if len > self.payload_left {
            return Err(FpduError::Misuse {
                expected: self.payload_left,
                got: len,
            });
        }
        self.payload_left -= len;
        Ok(())
    }

    /// Pad and CRC, once all payload has been accounted for.
    pub fn trailer(&mut self) -> Result<&[u8], FpduError> {
        if self.payload_left != 0 {
            return Err(FpduError::Misuse {
                expected: self.payload_left,
                got: 0,
            });
        }
        let pad = self.pad;
        self.trailer[..pad].fill(0);
        let crc = match self.crc {
            Some(mut c) => {
                c.update(&self.trailer[..pad]);
                c.wire_bytes()
            }
            None => [0; CRC_LEN],
        };
        self.trailer[pad..pad + CRC_LEN].copy_from_slice(&crc);
        Ok(&self.trailer[..pad + CRC_LEN])
    }
}

/// Write a whole FPDU (header, `payload`, pad, CRC) into `out`; returns its
/// length. For small messages (Terminate, zero-length RTRs) and tests.
pub fn encode_fpdu(
    header: &Header,
    payload: &[u8],
    crc: bool,
    out: &mut [u8],
) -> Result<usize, FpduError> {
    let mut tx = FpduTx::new(header, payload.len(), crc)?;
    let total = tx.head_len + payload.len() + tx.pad + CRC_LEN;
    if out.len() < total {
        return Err(FpduError::BufferTooSmall { need: total });
    }
    let hl = tx.head_len;
    out[..hl].copy_from_slice(tx.head());
    out[hl..hl + payload.len()].copy_from_slice(payload);
    tx.payload(payload)?;
    let t = tx.trailer()?;
    out[hl + payload.len()..total].copy_from_slice(t);
    Ok(total)
}

/// What an [`FpduReader`] needs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxNeed {
    /// Header bytes (length field and DDP/RDMAP header), for [`FpduReader::feed`]
    /// or [`FpduReader::spare`] + [`FpduReader::commit`]. The count may grow
    /// once the first 4 bytes tell the header's size.
    Header(usize),
    /// Payload bytes of the current segment, placed by the caller, then
    /// reported with [`FpduReader::placed`] / [`FpduReader::placed_crc`].
    Payload(usize),
    /// Pad and CRC bytes.
    Trailer(usize),
}

/// The segment whose header was just read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub header: Header,
    /// The FPDU's ULPDU length field.
    pub ulpdu_len: u16,
    /// Payload bytes after the header.
    pub payload_len: usize,
}

/// A step completed by the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxEvent {
    /// A header is in: place `payload_len` bytes (if any) as it says.
    Segment(Segment),
    /// The FPDU is complete and, with CRC on, its CRC matched: the segment's
    /// payload may now be trusted.
    Done,
}

/// What a call to [`FpduReader::feed`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxFed {
    /// Bytes of the input taken.
    pub consumed: usize,
    pub event: Option<RxEvent>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Reading the length field and header into `buf`.
    Head,
    /// Waiting for the caller to place the payload.
    Payload,
    /// Reading pad and CRC into `buf`.
    Trailer,
}

/// Receive-side FPDU state machine. Holds headers (≤ 48 bytes) and the
/// trailer; the payload goes around it.
#[derive(Clone, Debug)]
pub struct FpduReader {
    crc_on: bool,
    max_ulpdu: usize,
    stage: Stage,
    buf: [u8; MPA_LEN_FIELD + MAX_HDR_LEN],
    have: usize,
    want: usize,
    segment: Option<Segment>,
    payload_left: usize,
    crc: Crc,
    failed: Option<FpduError>,
}

impl FpduReader {
    /// A reader for a connection with (`crc`) or without CRCs, accepting
    /// ULPDUs up to 65535 bytes.
    pub fn new(crc: bool) -> FpduReader {
        FpduReader::with_max_ulpdu(crc, MAX_ULPDU_LEN)
    }

    /// A reader refusing ULPDUs longer than `max_ulpdu`.
    pub fn with_max_ulpdu(crc: bool, max_ulpdu: usize) -> FpduReader {
        FpduReader {
            crc_on: crc,
            max_ulpdu: max_ulpdu.min(MAX_ULPDU_LEN),
            stage: Stage::Head,
            buf: [0; MPA_LEN_FIELD + MAX_HDR_LEN],
            have: 0,
            want: MPA_LEN_FIELD + 2,
            segment: None,
            payload_left: 0,
            crc: Crc::new(),
            failed: None,
        }
    }

    /// What to supply next.
    pub fn need(&self) -> RxNeed {
        match self.stage {
            Stage::Head => RxNeed::Header(self.want - self.have),
            Stage::Payload => RxNeed::Payload(self.payload_left),
            Stage::Trailer => RxNeed::Trailer(self.want - self.have),
        }
    }

    /// The segment being received, from its header to its trailer.
    pub fn segment(&self) -> Option<Segment> {
        self.segment
    }

    /// Pad and CRC bytes that follow the current segment's payload.
    pub fn trailer_len(&self) -> usize {
        fpdu_pad(self.segment.map_or(0, |s| s.ulpdu_len as usize)) + CRC_LEN
    }

    /// Between FPDUs: no byte of the next one has arrived. An end of stream
    /// anywhere else cuts an FPDU short.
    pub fn at_boundary(&self) -> bool {
        self.stage == Stage::Head && self.have == 0 && self.failed.is_none()
    }

    /// Room for exactly the header or trailer bytes still needed, to `read`
    /// into; empty while payload is due. Report what was written with
    /// [`commit`](Self::commit).
    pub fn spare(&mut self) -> &mut [u8] {
        match self.stage {
            Stage::Payload => &mut [],
            _ => &mut self.buf[self.have..self.want],
        }
    }

    /// `n` bytes were written into [`spare`](Self::spare).
    pub fn commit(&mut self, n: usize) -> Result<Option<RxEvent>, FpduError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.stage == Stage::Payload || n > self.want - self.have {
            return Err(FpduError::Misuse {
                expected: self.want - self.have,
                got: n,
            });
        }
        self.have += n;
        let r = self.advance();
        if let Err(e) = r {
            self.failed = Some(e);
        }
        r
    }

    /// Take bytes from the stream: header and trailer bytes are kept,
    /// payload bytes are accounted for as if placed (see
    /// [`placed`](Self::placed)). Stops after one event.
    pub fn feed(&mut self, input: &[u8]) -> Result<RxFed, FpduError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.stage == Stage::Payload {
            let n = input.len().min(self.payload_left);
            self.placed(&input[..n])?;
            return Ok(RxFed {
                consumed: n,
                event: None,
            });
        }
        let n = input.len().min(self.want - self.have);
        self.buf[self.have..self.have + n].copy_from_slice(&input[..n]);
        let event = self.commit(n)?;
        Ok(RxFed { consumed: n, event })
    }

    /// The caller placed these payload bytes (in order); the CRC, when on,
    /// runs over them. The transport passes the destination memory it just
    /// wrote, read in place.
    pub fn placed(&mut self, bytes: &[u8]) -> Result<(), FpduError> {
        self.take_payload(bytes.len())?;
        if self.crc_on {
            self.crc.update(bytes);
        }
        self.payload_progress();
        Ok(())
    }

    /// The caller placed `len` payload bytes whose CRC32c is `piece_crc`
    /// (see [`crc32c_of`]).
    pub fn placed_crc(&mut self, len: usize, piece_crc: u32) -> Result<(), FpduError> {
        self.take_payload(len)?;
        if self.crc_on {
            self.crc.append_crc(piece_crc, len);
        }
        self.payload_progress();
        Ok(())
    }

    fn take_payload(&mut self, len: usize) -> Result<(), FpduError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.stage != Stage::Payload || len > self.payload_left {
            let expected = if self.stage == Stage::Payload {
                self.payload_left
            } else {
                0
            };
            return Err(FpduError::Misuse { expected, got: len });
        }
        self.payload_left -= len;
        Ok(())
    }

    fn payload_progress(&mut self) {
        if self.payload_left == 0 {
            self.enter_trailer();
        }
    }

    fn enter_trailer(&mut self) {
        let ulpdu = self.segment.map_or(0, |s| s.ulpdu_len as usize);
        self.stage = Stage::Trailer;
        self.have = 0;
        self.want = fpdu_pad(ulpdu) + CRC_LEN;
    }

    fn advance(&mut self) -> Result<Option<RxEvent>, FpduError> {
        if self.have < self.want {
            return Ok(None);
        }
        match self.stage {
            Stage::Head if self.want == MPA_LEN_FIELD + 2 => {
                // Length field and control bytes: learn the header's size.
                let hl = match Header::decode(&self.buf[MPA_LEN_FIELD..self.have]) {
                    Err(DdpError::Truncated { need }) => need,
                    Err(e) => return Err(e.into()),
                    Ok((_, n)) => n,
                };
                let ulpdu_len = be16(&self.buf, 0);
                if (ulpdu_len as usize) < hl {
                    return Err(FpduError::UlpduTooShort {
                        ulpdu_len,
                        header_len: hl,
                    });
                }
                if ulpdu_len as usize > self.max_ulpdu {
                    return Err(FpduError::UlpduTooLong {
                        ulpdu_len: ulpdu_len as usize,
                        max: self.max_ulpdu,
                    });
                }
                self.want = MPA_LEN_FIELD + hl;
                self.advance()
            }
            Stage::Head => {
                let (header, hl) = Header::decode(&self.buf[MPA_LEN_FIELD..self.have])?;
                let ulpdu_len = be16(&self.buf, 0);
                let seg = Segment {
                    header,
                    ulpdu_len,
                    payload_len: ulpdu_len as usize - hl,
                };
                if self.crc_on {
                    self.crc = Crc::new();
                    self.crc.update(&self.buf[..self.have]);
                }
                self.segment = Some(seg);
                self.payload_left = seg.payload_len;
                if seg.payload_len == 0 {
                    self.enter_trailer();
                } else {
                    self.stage = Stage::Payload;
                }
                Ok(Some(RxEvent::Segment(seg)))
            }
            Stage::Trailer => {
                let pad = self.want - CRC_LEN;
                if self.crc_on {
                    self.crc.update(&self.buf[..pad]);
                    let received = u32::from_le_bytes([
                        self.buf[pad],
                        self.buf[pad + 1],
                        self.buf[pad + 2],
                        self.buf[pad + 3],
                    ]);
                    let computed = self.crc.value();
                    if received != computed {
                        return Err(FpduError::Crc { computed, received });
                    }
                }
                self.stage = Stage::Head;
                self.have = 0;
                self.want = MPA_LEN_FIELD + 2;
                self.segment = None;
                Ok(Some(RxEvent::Done))
            }
            Stage::Payload => Ok(None),
        }
    }
}

// ─────────────────────────────── Terminate ───────────────────────────────

/// The layer a Terminate blames (IANA RDDP registry, first field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TermLayer {
    Rdmap = 0x0,
    Ddp = 0x1,
    /// The lower layer protocol: MPA.
    Llp = 0x2,
}

/// RDMAP error types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RdmapErrorType {
    LocalCatastrophic = 0x0,
    RemoteProtection = 0x1,
    RemoteOperation = 0x2,
}

/// RDMAP remote protection error codes (layer 0, type 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RdmapProtection {
    InvalidStag = 0x00,
    BaseOrBounds = 0x01,
    AccessRights = 0x02,
    StagNotAssociated = 0x03,
    ToWrap = 0x04,
    CannotInvalidate = 0x09,
    Unspecified = 0xFF,
}

/// RDMAP remote operation error codes (layer 0, type 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RdmapOperation {
    InvalidVersion = 0x05,
    UnexpectedOpcode = 0x06,
    CatastrophicStream = 0x07,
    CatastrophicGlobal = 0x08,
    CannotInvalidate = 0x09,
    Unspecified = 0xFF,
}

/// DDP error types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DdpErrorType {
    LocalCatastrophic = 0x0,
    TaggedBuffer = 0x1,
    UntaggedBuffer = 0x2,
}

/// DDP tagged buffer error codes (layer 1, type 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DdpTagged {
    InvalidStag = 0x00,
    BaseOrBounds = 0x01,
    StagNotAssociated = 0x02,
    ToWrap = 0x03,
    InvalidVersion = 0x04,
}

/// DDP untagged buffer error codes (layer 1, type 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DdpUntagged {
    InvalidQn = 0x01,
    /// No receive posted for the message (no RNR retry in iWARP).
    InvalidMsnNoBuffer = 0x02,
    InvalidMsnRange = 0x03,
    InvalidMo = 0x04,
    MessageTooLong = 0x05,
    InvalidVersion = 0x06,
}

/// MPA error codes (layer 2, type 0); 5–7 come with RFC 6581.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MpaCode {
    /// TCP connection closed, terminated or lost.
    ConnectionLost = 0x01,
    Crc = 0x02,
    /// Marker and ULPDU length field mismatch.
    MarkerMismatch = 0x03,
    /// Invalid MPA Request or Reply frame.
    InvalidSetupFrame = 0x04,
    LocalCatastrophic = 0x05,
    InsufficientIrd = 0x06,
    NoMatchingRtr = 0x07,
}

/// MPA's only error type.
pub const MPA_ERROR_TYPE: u8 = 0x0;

/// A Terminate's layer / error type / error code, one variant per entry of
/// the IANA RDDP registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermError {
    /// RDMAP local catastrophic error (the registry takes any code).
    RdmapCatastrophic {
        code: u8,
    },
    RdmapProtection(RdmapProtection),
    RdmapOperation(RdmapOperation),
    /// DDP local catastrophic error (code 0).
    DdpCatastrophic,
    DdpTagged(DdpTagged),
    DdpUntagged(DdpUntagged),
    Mpa(MpaCode),
    /// A triple the registry does not list, kept as received.
    Unregistered {
        layer: u8,
        etype: u8,
        code: u8,
    },
}

impl TermError {
    /// (layer, error type, error code) as on the wire.
    pub const fn raw(self) -> (u8, u8, u8) {
        match self {
            TermError::RdmapCatastrophic { code } => (
                TermLayer::Rdmap as u8,
                RdmapErrorType::LocalCatastrophic as u8,
                code,
            ),
            TermError::RdmapProtection(c) => (
                TermLayer::Rdmap as u8,
                RdmapErrorType::RemoteProtection as u8,
                c as u8,
            ),
            TermError::RdmapOperation(c) => (
                TermLayer::Rdmap as u8,
                RdmapErrorType::RemoteOperation as u8,
                c as u8,
            ),
            TermError::DdpCatastrophic => (
                TermLayer::Ddp as u8,
                DdpErrorType::LocalCatastrophic as u8,
                0,
            ),
            TermError::DdpTagged(c) => (
                TermLayer::Ddp as u8,
                DdpErrorType::TaggedBuffer as u8,
                c as u8,
            ),
            TermError::DdpUntagged(c) => (
                TermLayer::Ddp as u8,
                DdpErrorType::UntaggedBuffer as u8,
                c as u8,
            ),
            TermError::Mpa(c) => (TermLayer::Llp as u8, MPA_ERROR_TYPE, c as u8),
            TermError::Unregistered { layer, etype, code } => (layer, etype, code),
        }
    }

    /// The triple's meaning; layer and type are 4-bit values (higher bits
    /// are ignored).
    pub const fn from_raw(layer: u8, etype: u8, code: u8) -> TermError {
        let (layer, etype) = (layer & 0xF, etype & 0xF);
        let unregistered = TermError::Unregistered { layer, etype, code };
        match (layer, etype) {
            (0, 0) => TermError::RdmapCatastrophic { code },
            (0, 1) => TermError::RdmapProtection(match code {
                0x00 => RdmapProtection::InvalidStag,
                0x01 => RdmapProtection::BaseOrBounds,
                0x02 => RdmapProtection::AccessRights,
                0x03 => RdmapProtection::StagNotAssociated,
                0x04 => RdmapProtection::ToWrap,
                0x09 => RdmapProtection::CannotInvalidate,
                0xFF => RdmapProtection::Unspecified,
                _ => return unregistered,
            }),
            (0, 2) => TermError::RdmapOperation(match code {
                0x05 => RdmapOperation::InvalidVersion,
                0x06 => RdmapOperation::UnexpectedOpcode,
                0x07 => RdmapOperation::CatastrophicStream,
                0x08 => RdmapOperation::CatastrophicGlobal,
                0x09 => RdmapOperation::CannotInvalidate,
                0xFF => RdmapOperation::Unspecified,
                _ => return unregistered,
            }),
            (1, 0) if code == 0 => TermError::DdpCatastrophic,
            (1, 1) => TermError::DdpTagged(match code {
                0x00 => DdpTagged::InvalidStag,
                0x01 => DdpTagged::BaseOrBounds,
                0x02 => DdpTagged::StagNotAssociated,
                0x03 => DdpTagged::ToWrap,
                0x04 => DdpTagged::InvalidVersion,
                _ => return unregistered,
            }),
            (1, 2) => TermError::DdpUntagged(match code {
                0x01 => DdpUntagged::InvalidQn,
                0x02 => DdpUntagged::InvalidMsnNoBuffer,
                0x03 => DdpUntagged::InvalidMsnRange,
                0x04 => DdpUntagged::InvalidMo,
                0x05 => DdpUntagged::MessageTooLong,
                0x06 => DdpUntagged::InvalidVersion,
                _ => return unregistered,
            }),
            (2, 0) => TermError::Mpa(match code {
                0x01 => MpaCode::ConnectionLost,
                0x02 => MpaCode::Crc,
                0x03 => MpaCode::MarkerMismatch,
                0x04 => MpaCode::InvalidSetupFrame,
                0x05 => MpaCode::LocalCatastrophic,
                0x06 => MpaCode::InsufficientIrd,
                0x07 => MpaCode::NoMatchingRtr,
                _ => return unregistered,
            }),
            _ => unregistered,
        }
    }

    /// Whether the registry lists the triple.
    pub const fn registered(self) -> bool {
        !matches!(self, TermError::Unregistered { .. })
    }
}

impl fmt::Display for TermError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (l, t, c) = self.raw();
        let name = match *self {
            TermError::RdmapCatastrophic { .. } => "RDMAP local catastrophic error",
            TermError::RdmapProtection(p) => match p {
                RdmapProtection::InvalidStag => "RDMAP remote protection error: invalid STag",
                RdmapProtection::BaseOrBounds => {
                    "RDMAP remote protection error: base or bounds violation"
                }
                RdmapProtection::AccessRights => {
                    "RDMAP remote protection error: access rights violation"
                }
                RdmapProtection::StagNotAssociated => {
                    "RDMAP remote protection error: STag not associated with RDMAP stream"
                }
                RdmapProtection::ToWrap => "RDMAP remote protection error: tagged offset wrap",
                RdmapProtection::CannotInvalidate => {
                    "RDMAP remote protection error: STag cannot be invalidated"
                }
                RdmapProtection::Unspecified => "RDMAP remote protection error: unspecified",
            },
            TermError::RdmapOperation(o) => match o {
                RdmapOperation::InvalidVersion => {
                    "RDMAP remote operation error: invalid RDMAP version"
                }
                RdmapOperation::UnexpectedOpcode => {
                    "RDMAP remote operation error: unexpected opcode"
                }
                RdmapOperation::CatastrophicStream => {
                    "RDMAP remote operation error: catastrophic, localized to RDMAP stream"
                }
                RdmapOperation::CatastrophicGlobal => {
                    "RDMAP remote operation error: catastrophic, global"
                }
                RdmapOperation::CannotInvalidate => {
                    "RDMAP remote operation error: STag cannot be invalidated"
                }
                RdmapOperation::Unspecified => "RDMAP remote operation error: unspecified",
            },
            TermError::DdpCatastrophic => "DDP local catastrophic error",
            TermError::DdpTagged(t) => match t {
                DdpTagged::InvalidStag => "DDP tagged buffer error: invalid STag",
                DdpTagged::BaseOrBounds => "DDP tagged buffer error: base or bounds violation",
                DdpTagged::StagNotAssociated => {
                    "DDP tagged buffer error: STag not associated with DDP stream"
                }
                DdpTagged::ToWrap => "DDP tagged buffer error: tagged offset wrap",
                DdpTagged::InvalidVersion => "DDP tagged buffer error: invalid DDP version",
            },
            TermError::DdpUntagged(u) => match u {
                DdpUntagged::InvalidQn => "DDP untagged buffer error: invalid QN",
                DdpUntagged::InvalidMsnNoBuffer => {
                    "DDP untagged buffer error: invalid MSN, no buffer available"
                }
                DdpUntagged::InvalidMsnRange => {
                    "DDP untagged buffer error: invalid MSN, MSN range not valid"
                }
                DdpUntagged::InvalidMo => "DDP untagged buffer error: invalid MO",
                DdpUntagged::MessageTooLong => {
                    "DDP untagged buffer error: message too long for available buffer"
                }
                DdpUntagged::InvalidVersion => "DDP untagged buffer error: invalid DDP version",
            },
            TermError::Mpa(m) => match m {
                MpaCode::ConnectionLost => "MPA error: TCP connection closed, terminated or lost",
                MpaCode::Crc => "MPA error: CRC error",
                MpaCode::MarkerMismatch => "MPA error: marker and ULPDU length field mismatch",
                MpaCode::InvalidSetupFrame => "MPA error: invalid MPA request or reply frame",
                MpaCode::LocalCatastrophic => "MPA error: local catastrophic error",
                MpaCode::InsufficientIrd => "MPA error: insufficient IRD resources",
                MpaCode::NoMatchingRtr => "MPA error: no matching RTR option",
            },
            TermError::Unregistered { .. } => "unregistered Terminate error",
        };
        write!(f, "{name} ({l:#x}/{t:#x}/{c:#04x})")
    }
}

/// Bit layout of a Terminate control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermLayout {
    /// RFC 5040: byte 0 = layer << 4 | type, byte 1 = code, byte 2 =
    /// M `0x80` | D `0x40` | R `0x20` | reserved, byte 3 reserved.
    Rfc,
    /// Linux `siw` on a little-endian host: byte 0 = type << 4 | layer,
    /// byte 1 = code, byte 2 = M `0x01` | D `0x02` | R `0x04` | reserved.
    SiwLittleEndian,
}

/// Largest Terminate body this codec writes: control word, segment length,
/// untagged header, Read Request header.
pub const TERMINATE_MAX_LEN: usize = 4 + 2 + UNTAGGED_HDR_LEN + READ_REQUEST_LEN;

/// A Terminate body: the payload of a segment whose header is
/// [`Ulp::Terminate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminate<'a> {
    pub error: TermError,
    pub layout: TermLayout,
    /// M: the segment length field's value is meaningful.
    pub length_valid: bool,
    /// The 13 reserved bits, in the layout's own order.
    pub reserved: u16,
    /// The offending segment's length field (present when M or D is set).
    pub segment_len: Option<u16>,
    /// The offending DDP header, 14 or 18 bytes (D).
    pub ddp_header: Option<&'a [u8]>,
    /// The offending Read Request's 28-byte RDMAP header (R).
    pub rdmap_header: Option<&'a [u8]>,
    /// The headers above were found after a control word that announced
    /// none (see the module docs); its flags stay as received.
    pub inferred: bool,
}

impl<'a> Terminate<'a> {
    /// A Terminate without offending headers.
    pub const fn new(error: TermError) -> Terminate<'static> {
        Terminate {
            error,
            layout: TermLayout::Rfc,
            length_valid: false,
            reserved: 0,
            segment_len: None,
            ddp_header: None,
            rdmap_header: None,
            inferred: false,
        }
    }

    /// A Terminate naming the offending segment: its ULPDU length, its DDP
    /// header and, for a Read Request, the 28-byte RDMAP header.
    pub const fn with_segment(
        error: TermError,
        ulpdu_len: u16,
        ddp_header: &'a [u8],
        rdmap_header: Option<&'a [u8]>,
    ) -> Terminate<'a> {
        Terminate {
            error,
            layout: TermLayout::Rfc,
            length_valid: true,
            reserved: 0,
            segment_len: Some(ulpdu_len),
            ddp_header: Some(ddp_header),
            rdmap_header,
            inferred: false,
        }
    }

    fn flags(&self) -> (bool, bool, bool) {
        let d = self.ddp_header.is_some() && !self.inferred;
        let r = self.rdmap_header.is_some() && !self.inferred;
        (self.length_valid, d, r)
    }

    /// Bytes [`encode`](Self::encode) writes.
    pub fn encoded_len(&self) -> usize {
        4 + self.segment_len.map_or(0, |_| 2)
            + self.ddp_header.map_or(0, <[u8]>::len)
            + self.rdmap_header.map_or(0, <[u8]>::len)
    }

    /// Write the body into `out`; returns its length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, TermEncodeError> {
        let (m, d, r) = self.flags();
        // The parts must be the ones the flags announce.
        let len_field = if self.inferred {
            self.segment_len.is_some()
        } else {
            m || d
        };
        if len_field != self.segment_len.is_some()
            || (self.inferred && (m || self.ddp_header.is_none()))
            || self.reserved > 0x1FFF
        {
            return Err(TermEncodeError::Inconsistent);
        }
        if let Some(h) = self.ddp_header {
            let want = if h.first().is_some_and(|c| c & DDP_TAGGED != 0) {
                TAGGED_HDR_LEN
            } else {
                UNTAGGED_HDR_LEN
            };
            if h.len() != want {
                return Err(TermEncodeError::DdpHeaderLength(h.len()));
            }
        }
        if self
            .rdmap_header
            .is_some_and(|h| h.len() != READ_REQUEST_LEN)
        {
            return Err(TermEncodeError::RdmapHeaderLength(
                self.rdmap_header.map_or(0, <[u8]>::len),
            ));
        }
        let total = self.encoded_len();
        if out.len() < total {
            return Err(TermEncodeError::BufferTooSmall { need: total });
        }
        let (layer, etype, code) = self.error.raw();
        if layer > 0xF || etype > 0xF {
            return Err(TermEncodeError::Inconsistent);
        }
        out[..4].copy_from_slice(&control_word(
            self.layout,
            layer,
            etype,
            code,
            m,
            d,
            r,
            self.reserved,
        ));
        let mut at = 4;
        if let Some(l) = self.segment_len {
            out[at..at + 2].copy_from_slice(&l.to_be_bytes());
            at += 2;
        }
        for part in [self.ddp_header, self.rdmap_header].into_iter().flatten() {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(at)
    }

    /// Read a body, guessing the control word's layout (module docs);
    /// returns it and the bytes it covers. Bytes after that are tolerated.
    pub fn decode(body: &'a [u8]) -> Result<(Terminate<'a>, usize), TermDecodeError> {
        if body.len() < 4 {
            return Err(TermDecodeError::Truncated {
                error: None,
                need: 4,
            });
        }
        Terminate::decode_as(body, detect_layout([body[0], body[1], body[2], body[3]]))
    }

    /// [`decode`](Self::decode) with a known layout.
    pub fn decode_as(
        body: &'a [u8],
        layout: TermLayout,
    ) -> Result<(Terminate<'a>, usize), TermDecodeError> {
        if body.len() < 4 {
            return Err(TermDecodeError::Truncated {
                error: None,
                need: 4,
            });
        }
        let w = [body[0], body[1], body[2], body[3]];
        let (layer, etype, code, m, d, r, reserved) = split_word(layout, w);
        let error = TermError::from_raw(layer, etype, code);
        let mut t = Terminate {
            error,
            layout,
            length_valid: m,
            reserved,
            segment_len: None,
            ddp_header: None,
            rdmap_header: None,
            inferred: false,
        };
        let truncated = |need| TermDecodeError::Truncated {
            error: Some(error),
            need,
        };
        let mut at = 4;
        if m || d {
            if body.len() < at + 2 {
                return Err(truncated(at + 2));
            }
            t.segment_len = Some(be16(body, at));
            at += 2;
        }
        if d {
            let Some(&c0) = body.get(at) else {
                return Err(truncated(at + TAGGED_HDR_LEN));
            };
            let hl = if c0 & DDP_TAGGED != 0 {
                TAGGED_HDR_LEN
            } else {
                UNTAGGED_HDR_LEN
            };
            if body.len() < at + hl {
                return Err(truncated(at + hl));
            }
            t.ddp_header = Some(&body[at..at + hl]);
            at += hl;
        }
        if r {
            if body.len() < at + READ_REQUEST_LEN {
                return Err(truncated(at + READ_REQUEST_LEN));
            }
            t.rdmap_header = Some(&body[at..at + READ_REQUEST_LEN]);
            at += READ_REQUEST_LEN;
        }
        if !(m || d || r) {
            at += t.infer(&body[4..]);
        }
        Ok((t, at))
    }

    /// Unannounced `[length][DDP header][Read Request header]` after the
    /// control word: take them if they parse. Returns the bytes taken.
    fn infer(&mut self, rest: &'a [u8]) -> usize {
        if rest.len() < 2 + TAGGED_HDR_LEN {
            return 0;
        }
        let Some(hl) = plausible_ddp_header(&rest[2..]) else {
            return 0;
        };
        if rest.len() < 2 + hl {
            return 0;
        }
        self.inferred = true;
        self.segment_len = Some(be16(rest, 0));
        self.ddp_header = Some(&rest[2..2 + hl]);
        let mut taken = 2 + hl;
        if rest[3] & RDMAP_OPCODE_MASK == Opcode::ReadRequest as u8
            && rest.len() >= taken + READ_REQUEST_LEN
        {
            self.rdmap_header = Some(&rest[taken..taken + READ_REQUEST_LEN]);
            taken += READ_REQUEST_LEN;
        }
        taken
    }

    /// The offending segment's header, decoded (Read Request included when
    /// the RDMAP header came along): its MSN or STag/offset tells which
    /// operation failed.
    pub fn offending(&self) -> Option<Result<Header, DdpError>> {
        let ddp = self.ddp_header?;
        let mut all = [0u8; MAX_HDR_LEN];
        all[..ddp.len()].copy_from_slice(ddp);
        let mut n = ddp.len();
        if let Some(r) = self.rdmap_header {
            all[n..n + r.len()].copy_from_slice(r);
            n += r.len();
        }
        Some(Header::decode(&all[..n]).map(|(h, _)| h))
    }
}

/// A DDP header's length if its control bytes look like one this codec
/// speaks (both versions 1, opcode ≤ 7, T bit matching the opcode).
fn plausible_ddp_header(b: &[u8]) -> Option<usize> {
    match Header::decode(&b[..b.len().min(2)]) {
        Err(DdpError::Truncated { need }) if b.len() >= 2 => Some(need.min(UNTAGGED_HDR_LEN)),
        _ => None,
    }
}

fn detect_layout(w: [u8; 4]) -> TermLayout {
    if w[2] & 0xE0 != 0 {
        return TermLayout::Rfc;
    }
    if w[2] & 0x07 != 0 {
        return TermLayout::SiwLittleEndian;
    }
    if TermError::from_raw(w[0] >> 4, w[0] & 0xF, w[1]).registered() {
        return TermLayout::Rfc;
    }
    if TermError::from_raw(w[0] & 0xF, w[0] >> 4, w[1]).registered() {
        return TermLayout::SiwLittleEndian;
    }
    TermLayout::Rfc
}

type WordFields = (u8, u8, u8, bool, bool, bool, u16);

fn split_word(layout: TermLayout, w: [u8; 4]) -> WordFields {
    match layout {
        TermLayout::Rfc => (
            w[0] >> 4,
            w[0] & 0xF,
            w[1],
            w[2] & 0x80 != 0,
            w[2] & 0x40 != 0,
            w[2] & 0x20 != 0,
            (u16::from(w[2] & 0x1F) << 8) | u16::from(w[3]),
        ),
        TermLayout::SiwLittleEndian => (
            w[0] & 0xF,
            w[0] >> 4,
            w[1],
            w[2] & 0x01 != 0,
            w[2] & 0x02 != 0,
            w[2] & 0x04 != 0,
            u16::from(w[2] >> 3) | (u16::from(w[3]) << 5),
        ),
    }
}

#[allow(clippy::too_many_arguments)]
fn control_word(
    layout: TermLayout,
    layer: u8,
    etype: u8,
    code: u8,
    m: bool,
    d: bool,
    r: bool,
    reserved: u16,
) -> [u8; 4] {
    let bit = |on: bool, mask: u8| if on { mask } else { 0 };
    match layout {
        TermLayout::Rfc => [
            (layer << 4) | etype,
            code,
            bit(m, 0x80) | bit(d, 0x40) | bit(r, 0x20) | ((reserved >> 8) as u8 & 0x1F),
            reserved as u8,
        ],
        TermLayout::SiwLittleEndian => [
            (etype << 4) | layer,
            code,
            bit(m, 0x01) | bit(d, 0x02) | bit(r, 0x04) | ((reserved as u8) << 3),
            (reserved >> 5) as u8,
        ],
    }
}

/// Why a Terminate body could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermEncodeError {
    BufferTooSmall {
        need: usize,
    },
    /// The DDP header is not 14 (tagged) or 18 (untagged) bytes by its T bit.
    DdpHeaderLength(usize),
    /// The RDMAP header is not 28 bytes.
    RdmapHeaderLength(usize),
    /// Flags and parts disagree, or a field is out of range.
    Inconsistent,
}

impl fmt::Display for TermEncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TermEncodeError::BufferTooSmall { need } => write!(f, "Terminate needs {need} bytes"),
            TermEncodeError::DdpHeaderLength(n) => write!(f, "offending DDP header of {n} bytes"),
            TermEncodeError::RdmapHeaderLength(n) => {
                write!(f, "offending RDMAP header of {n} bytes")
            }
            TermEncodeError::Inconsistent => write!(f, "Terminate flags and parts disagree"),
        }
    }
}

impl std::error::Error for TermEncodeError {}

/// Why a Terminate body could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermDecodeError {
    /// Shorter than its control word, or than the parts it announces; the
    /// error it reports is given when the control word was complete.
    Truncated {
        error: Option<TermError>,
        need: usize,
    },
}

impl fmt::Display for TermDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TermDecodeError::Truncated {
                error: Some(e),
                need,
            } => {
                write!(f, "Terminate ({e}) truncated: {need} bytes needed")
            }
            TermDecodeError::Truncated { error: None, need } => {
                write!(f, "Terminate truncated: {need} bytes needed")
            }
        }
    }
}

impl std::error::Error for TermDecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time CRC32c (reflected Castagnoli polynomial 0x82F63B78),
    /// independent of the crate, to cross-check it.
    fn reference_crc32c(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    /// splitmix64: a small deterministic PRNG for the property tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
        fn bytes(&mut self, out: &mut [u8]) {
            for b in out {
                *b = self.next() as u8;
            }
        }
    }

    fn hdr(ulp: Ulp, last: bool) -> Header {
        Header::new(ulp, last)
    }

    fn encode_hdr(h: &Header) -> ([u8; MAX_HDR_LEN], usize) {
        let mut out = [0u8; MAX_HDR_LEN];
        let n = h.encode(&mut out);
        (out, n)
    }

    fn all_ulps() -> [Ulp; 9] {
        let req = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            source_stag: 4,
            source_to: 5,
        };
        [
            Ulp::RdmaWrite {
                stag: 0xDEAD_BEEF,
                to: u64::MAX,
            },
            Ulp::ReadRequest { msn: 7, mo: 0, req },
            Ulp::ReadResponse {
                stag: 0x0102_0304,
                to: 0x7F00_0000_1000,
            },
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            Ulp::Send {
                msn: 2,
                mo: 4096,
                solicited: false,
                invalidate: Some(0x55AA_55AA),
            },
            Ulp::Send {
                msn: 3,
                mo: 8,
                solicited: true,
                invalidate: None,
            },
            Ulp::Send {
                msn: u32::MAX,
                mo: u32::MAX,
                solicited: true,
                invalidate: Some(9),
            },
            Ulp::Terminate { msn: 1, mo: 0 },
            Ulp::Terminate { msn: 5, mo: 3 },
        ]
    }

    /// Feed `bytes` to a parser in chunks of `chunk`; the final status and
    /// the total consumed.
    fn parse_mpa(
        cfg: MpaConfig,
        bytes: &[u8],
        chunk: usize,
    ) -> (Result<Option<(MpaFrameOwned, usize)>, MpaError>, usize) {
        let mut p = MpaParser::new(cfg);
        let mut pos = 0;
        loop {
            let end = (pos + chunk).min(bytes.len());
            match p.feed(&bytes[pos..end]) {
                Err(e) => return (Err(e), pos),
                Ok(fed) => {
                    pos += fed.consumed;
                    match fed.status {
                        MpaStatus::Frame(f) => {
                            return (Ok(Some((MpaFrameOwned::from(&f), pos))), pos)
                        }
                        MpaStatus::NeedMore(n) => {
                            assert!(n > 0);
                            if end == bytes.len() {
                                return (Ok(None), pos);
                            }
                        }
                    }
                }
            }
        }
    }

    /// A decoded frame detached from the parser's buffer.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct MpaFrameOwned {
        kind: MpaKind,
        markers: bool,
        crc: bool,
        reject: bool,
        revision: u8,
        ird_ord: Option<IrdOrd>,
        private_data: Vec<u8>,
        reserved_flags: u8,
    }

    impl From<&MpaFrame<'_>> for MpaFrameOwned {
        fn from(f: &MpaFrame<'_>) -> Self {
            MpaFrameOwned {
                kind: f.kind,
                markers: f.markers,
                crc: f.crc,
                reject: f.reject,
                revision: f.revision,
                ird_ord: f.ird_ord,
                private_data: f.private_data.to_vec(),
                reserved_flags: f.reserved_flags,
            }
        }
    }

    impl MpaFrameOwned {
        fn frame(&self) -> MpaFrame<'_> {
            MpaFrame {
                kind: self.kind,
                markers: self.markers,
                crc: self.crc,
                reject: self.reject,
                revision: self.revision,
                ird_ord: self.ird_ord,
                private_data: &self.private_data,
                reserved_flags: self.reserved_flags,
            }
        }
    }

    // ───────────── CRC ─────────────

    #[test]
    fn crc32c_known_answers_from_iscsi_test_vectors() {
        let ascending: Vec<u8> = (0u8..32).collect();
        let descending: Vec<u8> = (0u8..32).rev().collect();
        let cases: [(&[u8], u32); 5] = [
            (&[0u8; 32], 0x8A91_36AA),
            (&[0xFFu8; 32], 0x62A8_AB43),
            (&ascending, 0x46DD_794E),
            (&descending, 0x113F_DB5C),
            (b"123456789", 0xE306_9283),
        ];
        for (data, want) in cases {
            assert_eq!(crc32c_of(data), want);
            assert_eq!(reference_crc32c(data), want);
        }
        // On the wire, 32 zero bytes' CRC reads aa 36 91 8a (iSCSI's byte order).
        let mut c = Crc::new();
        c.update(&[0u8; 32]);
        assert_eq!(c.wire_bytes(), [0xAA, 0x36, 0x91, 0x8A]);
    }

    #[test]
    fn crc_accumulator_over_pieces_equals_one_shot() {
        let mut rng = Rng(1);
        let mut data = [0u8; 300];
        rng.bytes(&mut data);
        for split in [0, 1, 3, 4, 150, 299, 300] {
            let (a, b) = data.split_at(split);
            let mut by_bytes = Crc::new();
            by_bytes.update(a);
            by_bytes.update(b);
            let mut by_crc = Crc::new();
            by_crc.append_crc(crc32c_of(a), a.len());
            by_crc.append_crc(crc32c_of(b), b.len());
            assert_eq!(by_bytes.value(), crc32c_of(&data));
            assert_eq!(by_crc.value(), crc32c_of(&data));
        }
        assert_eq!(Crc::new().value(), crc32c_of(&[]));
    }

    // ───────────── MPA ─────────────

    #[test]
    fn mpa_request_golden_enhanced_ird_ord_and_three_bytes() {
        let frame = MpaFrame {
            ird_ord: Some(IrdOrd {
                ird: 1,
                ord: 1,
                peer_to_peer: true,
                rtr: RtrFlags {
                    rdma_write: true,
                    ..RtrFlags::default()
                },
            }),
            private_data: b"abc",
            ..MpaFrame::new(MpaKind::Request, 2)
        };
        let mut want = Vec::new();
        want.extend_from_slice(b"MPA ID Req Frame");
        want.extend_from_slice(&[0x10, 0x02, 0x00, 0x07]); // H, revision 2, 4 + 3 bytes
        want.extend_from_slice(&[0x80, 0x01, 0x80, 0x01]); // P2P | IRD 1, write RTR | ORD 1
        want.extend_from_slice(b"abc");
        let mut out = [0u8; 64];
        let n = frame.encode(&mut out).unwrap();
        assert_eq!(&out[..n], &want[..]);
        assert_eq!(n, frame.encoded_len());
        let (r, consumed) = parse_mpa(MpaConfig::new(MpaKind::Request), &want, want.len());
        let (got, _) = r.unwrap().unwrap();
        assert_eq!(consumed, want.len());
        assert_eq!(got.frame(), frame);
    }

    #[test]
    fn mpa_reply_golden_revision_one_reject_with_crc() {
        let frame = MpaFrame {
            crc: true,
            reject: true,
            private_data: b"no",
            ..MpaFrame::new(MpaKind::Reply, 1)
        };
        let mut out = [0u8; 32];
        let n = frame.encode(&mut out).unwrap();
        let mut want = b"MPA ID Rep Frame".to_vec();
        want.extend_from_slice(&[0x60, 0x01, 0x00, 0x02, b'n', b'o']);
        assert_eq!(&out[..n], &want[..]);
    }

    #[test]
    fn mpa_roundtrip_every_flag_revision_and_length() {
        let pd: Vec<u8> = (0..=255u8).cycle().take(PROFILE_PD_SEND_MAX).collect();
        let mut out = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
        for kind in [MpaKind::Request, MpaKind::Reply] {
            for revision in 0..=2u8 {
                for flags in 0..16u8 {
                    for enhanced in [false, true] {
                        if enhanced && revision < 2 {
                            continue;
                        }
                        for len in [0, 1, 3, 4, 5, 252] {
                            let ird_ord = enhanced.then_some(IrdOrd {
                                ird: IRD_ORD_MAX,
                                ord: u16::from(flags),
                                peer_to_peer: flags & 1 != 0,
                                rtr: RtrFlags {
                                    zero_length_send: flags & 2 != 0,
                                    rdma_write: flags & 4 != 0,
                                    rdma_read: flags & 8 != 0,
                                },
                            });
                            let frame = MpaFrame {
                                kind,
                                markers: flags & 1 != 0,
                                crc: flags & 2 != 0,
                                reject: flags & 4 != 0,
                                revision,
                                ird_ord,
                                private_data: &pd[..len],
                                reserved_flags: flags & 8,
                            };
                            let n = frame.encode(&mut out).unwrap();
                            let cfg = MpaConfig {
                                accept_markers: true,
                                ..MpaConfig::new(kind)
                            };
                            for chunk in [1, 7, n] {
                                let (r, consumed) = parse_mpa(cfg, &out[..n], chunk);
                                let (got, _) = r.unwrap().unwrap();
                                assert_eq!(consumed, n);
                                assert_eq!(got.frame(), frame);
                                assert_eq!(got.frame().effective_revision(), revision.max(1));
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn mpa_parser_stops_at_frame_end_and_reports_need() {
        let frame = MpaFrame {
            private_data: b"xyz",
            ..MpaFrame::new(MpaKind::Reply, 1)
        };
        let mut buf = [0u8; 64];
        let n = frame.encode(&mut buf).unwrap();
        buf[n..n + 8].copy_from_slice(&[0x00, 0x12, 0xC1, 0x40, 1, 2, 3, 4]); // an FPDU follows
        let mut p = MpaParser::new(MpaConfig::new(MpaKind::Reply));
        let fed = p.feed(&buf[..5]).unwrap();
        assert_eq!((fed.consumed, fed.status), (5, MpaStatus::NeedMore(15)));
        let fed = p.feed(&buf[5..20]).unwrap();
        assert_eq!((fed.consumed, fed.status), (15, MpaStatus::NeedMore(3)));
        let fed = p.feed(&buf[20..n + 8]).unwrap();
        assert_eq!(fed.consumed, 3);
        assert_eq!(fed.status, MpaStatus::Frame(frame));
        // Done: nothing more is taken.
        let fed = p.feed(&buf[n..n + 8]).unwrap();
        assert_eq!((fed.consumed, fed.status), (0, MpaStatus::Frame(frame)));
        // Empty input asks for the header.
        let mut p = MpaParser::new(MpaConfig::new(MpaKind::Reply));
        assert_eq!(
            p.feed(&[]).unwrap().status,
            MpaStatus::NeedMore(MPA_HEADER_LEN)
        );
    }

    #[test]
    fn mpa_http_request_and_garbage_fail_at_first_wrong_byte() {
        let mut p = MpaParser::new(MpaConfig::new(MpaKind::Request));
        assert_eq!(
            p.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Err(MpaError::BadKey)
        );
        // Sticky.
        assert_eq!(p.feed(b"MPA ID Req Frame"), Err(MpaError::BadKey));
        // A key that starts right and goes wrong later.
        let (r, consumed) = parse_mpa(
            MpaConfig::new(MpaKind::Request),
            b"MPA ID Reg Frame\x00\x01\x00\x00",
            1,
        );
        assert_eq!(r, Err(MpaError::BadKey));
        assert_eq!(consumed, 9);
        // A truncated header is not an error, just incomplete.
        let (r, consumed) = parse_mpa(
            MpaConfig::new(MpaKind::Request),
            b"MPA ID Req Frame\x00\x01",
            4,
        );
        assert_eq!((r, consumed), (Ok(None), 18));
    }

    #[test]
    fn mpa_other_sides_key_is_reported_as_such() {
        let mut buf = [0u8; 32];
        let n = MpaFrame::new(MpaKind::Reply, 2).encode(&mut buf).unwrap();
        let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &buf[..n], 1);
        assert_eq!(r, Err(MpaError::UnexpectedKey(MpaKind::Reply)));
        let n = MpaFrame::new(MpaKind::Request, 2).encode(&mut buf).unwrap();
        let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Reply), &buf[..n], n);
        assert_eq!(r, Err(MpaError::UnexpectedKey(MpaKind::Request)));
    }

    fn raw_mpa(kind: MpaKind, flags: u8, revision: u8, pd_len: u16) -> Vec<u8> {
        let mut v = kind.key().to_vec();
        v.push(flags);
        v.push(revision);
        v.extend_from_slice(&pd_len.to_be_bytes());
        v.resize(MPA_HEADER_LEN + pd_len as usize, 0);
        v
    }

    #[test]
    fn mpa_revision_three_and_above_refused_zero_accepted_as_one() {
        for rev in [3u8, 4, 0xFF] {
            let (r, consumed) = parse_mpa(
                MpaConfig::new(MpaKind::Request),
                &raw_mpa(MpaKind::Request, 0, rev, 0),
                64,
            );
            assert_eq!(r, Err(MpaError::UnsupportedRevision(rev)));
            assert_eq!(consumed, 0);
        }
        let (r, _) = parse_mpa(
            MpaConfig::new(MpaKind::Request),
            &raw_mpa(MpaKind::Request, 0, 0, 0),
            64,
        );
        assert_eq!(r.unwrap().unwrap().0.frame().effective_revision(), 1);
    }

    #[test]
    fn mpa_private_data_over_limit_refused_from_header() {
        let cfg = MpaConfig::new(MpaKind::Request);
        let (r, _) = parse_mpa(
            cfg,
            &raw_mpa(MpaKind::Request, 0, 1, 513)[..MPA_HEADER_LEN],
            64,
        );
        assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 513, max: 512 }));
        let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Request, 0, 1, 512), 64);
        assert!(r.unwrap().is_some());
        let small = MpaConfig {
            max_private_data: 256,
            ..cfg
        };
        let (r, _) = parse_mpa(small, &raw_mpa(MpaKind::Request, 0, 1, 257), 64);
        assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 257, max: 256 }));
        // A limit above the RFC's is capped.
        let big = MpaConfig {
            max_private_data: 4000,
            ..cfg
        };
        let (r, _) = parse_mpa(
            big,
            &raw_mpa(MpaKind::Request, 0, 1, 600)[..MPA_HEADER_LEN],
            64,
        );
        assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 600, max: 512 }));
    }

    #[test]
    fn mpa_markers_reported_distinctly_with_revision() {
        let bytes = raw_mpa(MpaKind::Request, 0x80, 2, 0);
        let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &bytes, 64);
        assert_eq!(r, Err(MpaError::Markers { revision: 2 }));
        let cfg = MpaConfig {
            accept_markers: true,
            ..MpaConfig::new(MpaKind::Request)
        };
        let (r, _) = parse_mpa(cfg, &bytes, 64);
        assert!(r.unwrap().unwrap().0.markers);
    }

    #[test]
    fn mpa_enhanced_needs_revision_two_and_four_bytes() {
        let cfg = MpaConfig::new(MpaKind::Reply);
        let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 1, 4), 64);
        assert_eq!(r, Err(MpaError::EnhancedNeedsRevision2 { revision: 1 }));
        let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 0, 4), 64);
        assert_eq!(r, Err(MpaError::EnhancedNeedsRevision2 { revision: 0 }));
        let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 2, 3), 64);
        assert_eq!(r, Err(MpaError::EnhancedTooShort { len: 3 }));
        // Revision 2 without H: no IRD/ORD word.
        let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0, 2, 3), 64);
        let f = r.unwrap().unwrap().0;
        assert_eq!((f.ird_ord, f.private_data.len()), (None, 3));
    }

    #[test]
    fn mpa_reserved_flags_tolerated_and_kept() {
        let bytes = raw_mpa(MpaKind::Request, 0x4F, 1, 0);
        let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &bytes, 64);
        let f = r.unwrap().unwrap().0;
        assert!(f.crc);
        assert_eq!(f.reserved_flags, 0x0F);
        let mut out = [0u8; 32];
        let n = f.frame().encode(&mut out).unwrap();
        assert_eq!(&out[..n], &bytes[..]);
    }

    #[test]
    fn mpa_encode_refuses_what_the_profile_does_not_send() {
        let pd = [0u8; 300];
        let mut out = [0u8; 600];
        let f = MpaFrame {
            private_data: &pd[..253],
            ird_ord: Some(IrdOrd::default()),
            ..MpaFrame::new(MpaKind::Request, 2)
        };
        assert_eq!(
            f.encode(&mut out),
            Err(MpaEncodeError::PrivateDataTooLong { len: 257, max: 256 })
        );
        let f = MpaFrame {
            private_data: &pd[..252],
            ..f
        };
        assert_eq!(f.encode(&mut out), Ok(MPA_HEADER_LEN + 256));
        assert_eq!(
            f.encode(&mut out[..100]),
            Err(MpaEncodeError::BufferTooSmall { need: 276 })
        );
        let f = MpaFrame {
            private_data: &pd,
            ..MpaFrame::new(MpaKind::Request, 1)
        };
        assert_eq!(f.encode_with_limit(&mut out, 512), Ok(MPA_HEADER_LEN + 300));
        let f = MpaFrame {
            ird_ord: Some(IrdOrd {
                ird: 0x4000,
                ..IrdOrd::default()
            }),
            ..MpaFrame::new(MpaKind::Reply, 2)
        };
        assert_eq!(f.encode(&mut out), Err(MpaEncodeError::IrdOrdOutOfRange));
        let f = MpaFrame {
            ird_ord: Some(IrdOrd::default()),
            ..MpaFrame::new(MpaKind::Reply, 1)
        };
        assert_eq!(
            f.encode(&mut out),
            Err(MpaEncodeError::EnhancedNeedsRevision2 { revision: 1 })
        );
        let f = MpaFrame::new(MpaKind::Reply, 3);
        assert_eq!(f.encode(&mut out), Err(MpaEncodeError::Revision(3)));
        let f = MpaFrame {
            reserved_flags: 0x10,
            ..MpaFrame::new(MpaKind::Reply, 1)
        };
        assert_eq!(f.encode(&mut out), Err(MpaEncodeError::ReservedFlags(0x10)));
    }

    #[test]
    fn ird_ord_word_bits() {
        let io = IrdOrd {
            ird: 0x1234,
            ord: 0x0ABC,
            peer_to_peer: true,
            rtr: RtrFlags {
                zero_length_send: true,
                rdma_write: false,
                rdma_read: true,
            },
        };
        assert_eq!(io.encode(), Some([0xD2, 0x34, 0x4A, 0xBC]));
        assert_eq!(IrdOrd::decode([0xD2, 0x34, 0x4A, 0xBC]), io);
        assert_eq!(IrdOrd { ord: 0x4000, ..io }.encode(), None);
    }

    // ───────────── DDP / RDMAP ─────────────

    #[test]
    fn header_roundtrip_every_kind_and_last_flag() {
        for ulp in all_ulps() {
            for last in [false, true] {
                let h = hdr(ulp, last);
                let (buf, n) = encode_hdr(&h);
                assert_eq!(n, ulp.header_len());
                assert_eq!(Header::decode(&buf[..n]), Ok((h, n)));
                let mut out = [0u8; MAX_HDR_LEN];
                assert_eq!(ulp.encode(last, &mut out), n);
                assert_eq!(Ulp::decode(&out[..n]).unwrap().0.ulp, ulp);
                // One byte short is truncated, never a wrong header.
                assert_eq!(
                    Header::decode(&buf[..n - 1]),
                    Err(DdpError::Truncated { need: n })
                );
            }
        }
    }

    #[test]
    fn header_opcode_numbers_and_queues() {
        let want = [
            (0, true, None),
            (1, false, Some(1)),
            (2, true, None),
            (3, false, Some(0)),
        ];
        for (v, tagged, queue) in want {
            let op = Opcode::from_u8(v).unwrap();
            assert_eq!((op as u8, op.tagged(), op.queue()), (v, tagged, queue));
        }
        for v in 4..=6 {
            assert_eq!(Opcode::from_u8(v).unwrap().queue(), Some(QN_SEND));
        }
        assert_eq!(Opcode::Terminate.queue(), Some(QN_TERMINATE));
        assert!((8..16).all(|v| Opcode::from_u8(v).is_none()));
    }

    #[test]
    fn golden_tagged_rdma_write_fpdu_with_five_bytes_and_pad() {
        let h = hdr(
            Ulp::RdmaWrite {
                stag: 0x1122_3344,
                to: 0x0000_7F00_1234_5678,
            },
            true,
        );
        let mut want = vec![
            0x00, 0x13, // ULPDU length 19 = 14 + 5
            0xC1, // T | L | DDP version 1
            0x40, // RDMAP version 1, opcode 0 (RDMA Write)
            0x11, 0x22, 0x33, 0x44, // Sink STag
            0x00, 0x00, 0x7F, 0x00, 0x12, 0x34, 0x56, 0x78, // Tagged Offset
            b'h', b'e', b'l', b'l', b'o', // payload
            0x00, 0x00, 0x00, // pad: 2 + 19 + 3 = 24
        ];
        let crc = reference_crc32c(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        let mut out = [0u8; 64];
        let n = encode_fpdu(&h, b"hello", true, &mut out).unwrap();
        assert_eq!(&out[..n], &want[..]);
        assert_eq!(n, 19 + fpdu_overhead(19));
        // Without CRC the field is zeros.
        let n = encode_fpdu(&h, b"hello", false, &mut out).unwrap();
        assert_eq!(&out[..n - 4], &want[..n - 4]);
        assert_eq!(&out[n - 4..n], &[0, 0, 0, 0]);
    }

    #[test]
    fn golden_send_with_solicited_event() {
        let h = hdr(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: true,
                invalidate: None,
            },
            true,
        );
        let (buf, n) = encode_hdr(&h);
        #[rustfmt::skip]
        let want = [
            0x41, // L | DDP version 1 (untagged)
            0x45, // RDMAP version 1, opcode 5 (Send with SE)
            0, 0, 0, 0, // reserved (no Invalidate STag)
            0, 0, 0, 0, // QN 0
            0, 0, 0, 1, // MSN 1
            0, 0, 0, 0, // MO 0
        ];
        assert_eq!(&buf[..n], &want);
        let h = hdr(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: true,
                invalidate: Some(0xCAFE_F00D),
            },
            false,
        );
        let (buf, n) = encode_hdr(&h);
        assert_eq!(&buf[..6], &[0x01, 0x46, 0xCA, 0xFE, 0xF0, 0x0D]);
        assert_eq!(n, UNTAGGED_HDR_LEN);
    }

    #[test]
    fn golden_read_request_with_its_28_bytes() {
        let req = ReadRequest {
            sink_stag: 0xAABB_CCDD,
            sink_to: 0x1000,
            size: 0x2000,
            source_stag: 0x0102_0304,
            source_to: 0xDE_ADBE_EF00,
        };
        let h = hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true);
        let (buf, n) = encode_hdr(&h);
        #[rustfmt::skip]
        let want = [
            0x41, 0x41, // L | DDP v1; RDMAP v1, opcode 1
            0, 0, 0, 0, // reserved
            0, 0, 0, 1, // QN 1
            0, 0, 0, 1, // MSN 1
            0, 0, 0, 0, // MO 0
            0xAA, 0xBB, 0xCC, 0xDD, // Sink STag
            0, 0, 0, 0, 0, 0, 0x10, 0x00, // Sink TO
            0, 0, 0x20, 0x00, // Read size
            0x01, 0x02, 0x03, 0x04, // Source STag
            0, 0, 0, 0xDE, 0xAD, 0xBE, 0xEF, 0x00, // Source TO
        ];
        assert_eq!(&buf[..n], &want);
        let mut r = [0u8; READ_REQUEST_LEN];
        req.encode(&mut r);
        assert_eq!(&r[..], &want[UNTAGGED_HDR_LEN..]);
        assert_eq!(ReadRequest::decode(&want[UNTAGGED_HDR_LEN..]), Some(req));
        assert_eq!(ReadRequest::decode(&want[UNTAGGED_HDR_LEN + 1..]), None);
        // As an FPDU: ULPDU 46, no pad.
        let mut out = [0u8; 64];
        assert_eq!(encode_fpdu(&h, &[], true, &mut out), Ok(2 + 46 + 4));
    }

    #[test]
    fn ddp_version_errors_name_tagged_or_untagged_code() {
        let (mut w, n) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 1, to: 2 }, true));
        w[0] = (w[0] & !3) | 2;
        let e = Header::decode(&w[..n]).unwrap_err();
        assert_eq!(
            e,
            DdpError::DdpVersion {
                tagged: true,
                version: 2
            }
        );
        assert_eq!(e.term().unwrap().raw(), (1, 1, 0x04));
        let (mut s, n) = encode_hdr(&hdr(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        ));
        s[0] &= !3;
        let e = Header::decode(&s[..n]).unwrap_err();
        assert_eq!(
            e,
            DdpError::DdpVersion {
                tagged: false,
                version: 0
            }
        );
        assert_eq!(e.term().unwrap().raw(), (1, 2, 0x06));
        // Reported from the two control bytes alone.
        assert_eq!(Header::decode(&s[..2]), Err(e));
    }

    #[test]
    fn rdmap_version_and_opcode_errors() {
        let (mut s, n) = encode_hdr(&hdr(Ulp::Terminate { msn: 1, mo: 0 }, true));
        s[1] = 0x87; // version 2
        let e = Header::decode(&s[..n]).unwrap_err();
        assert_eq!(e, DdpError::RdmapVersion(2));
        assert_eq!(e.term().unwrap().raw(), (0, 2, 0x05));
        for op in 8..16u8 {
            s[1] = 0x40 | op;
            let e = Header::decode(&s[..n]).unwrap_err();
            assert_eq!(e, DdpError::Opcode(op));
            assert_eq!(e.term().unwrap().raw(), (0, 2, 0x06));
        }
    }

    #[test]
    fn tagged_bit_must_match_opcode() {
        let (mut w, n) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 1, to: 2 }, true));
        w[0] &= !DDP_TAGGED;
        let e = Header::decode(&w[..n]).unwrap_err();
        assert_eq!(
            e,
            DdpError::TaggedMismatch {
                opcode: Opcode::RdmaWrite,
                tagged: false
            }
        );
        assert_eq!(
            e.term(),
            Some(TermError::RdmapOperation(RdmapOperation::UnexpectedOpcode))
        );
        let (mut s, n) = encode_hdr(&hdr(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        ));
        s[0] |= DDP_TAGGED;
        assert_eq!(
            Header::decode(&s[..n]),
            Err(DdpError::TaggedMismatch {
                opcode: Opcode::Send,
                tagged: true
            })
        );
    }

    #[test]
    fn wrong_queue_number_for_send_read_request_terminate() {
        for ulp in all_ulps().into_iter().filter(|u| !u.opcode().tagged()) {
            let (mut b, n) = encode_hdr(&hdr(ulp, true));
            let right = ulp.opcode().queue().unwrap();
            for qn in [0u32, 1, 2, 3, u32::MAX]
                .into_iter()
                .filter(|&q| q != right)
            {
                b[6..10].copy_from_slice(&qn.to_be_bytes());
                let e = Header::decode(&b[..n]).unwrap_err();
                assert_eq!(
                    e,
                    DdpError::InvalidQn {
                        opcode: ulp.opcode(),
                        qn
                    }
                );
                assert_eq!(e.term().unwrap().raw(), (1, 2, 0x01));
            }
        }
    }

    #[test]
    fn reserved_header_bits_tolerated_and_kept() {
        let (mut b, n) = encode_hdr(&hdr(
            Ulp::Send {
                msn: 4,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            false,
        ));
        b[0] |= 0x3C;
        b[1] |= 0x30;
        b[2..6].copy_from_slice(&[1, 2, 3, 4]);
        let (h, len) = Header::decode(&b[..n]).unwrap();
        assert_eq!(
            h.ulp,
            Ulp::Send {
                msn: 4,
                mo: 0,
                solicited: false,
                invalidate: None
            }
        );
        assert_eq!(
            h.reserved,
            Reserved {
                ddp: 0x3C,
                rdmap: 0x30,
                word: 0x0102_0304
            }
        );
        let (again, m) = encode_hdr(&h);
        assert_eq!(&again[..m], &b[..len]);
    }

    // ───────────── FPDU ─────────────

    #[test]
    fn fpdu_pad_and_overhead() {
        let pads = [2, 1, 0, 3, 2, 1, 0, 3];
        for (len, pad) in pads.iter().enumerate() {
            assert_eq!(fpdu_pad(len), *pad);
            assert_eq!((2 + len + fpdu_pad(len)) % 4, 0);
            assert_eq!(fpdu_overhead(len), 2 + pad + 4);
        }
        assert_eq!(fpdu_pad(MAX_ULPDU_LEN), 3);
    }

    #[test]
    fn max_payload_fills_but_never_exceeds_the_limit() {
        for mss in [0usize, 20, 21, 100, 1448, 1460, 9000, 70_000] {
            for hl in [TAGGED_HDR_LEN, UNTAGGED_HDR_LEN] {
                let p = max_payload(hl, mss);
                if p > 0 || hl + fpdu_overhead(hl) <= mss {
                    assert!(hl + p + fpdu_overhead(hl + p) <= mss, "{mss} {hl}");
                    assert!(hl + p <= MAX_ULPDU_LEN);
                    let more = hl + p + 1;
                    assert!(more > MAX_ULPDU_LEN || more + fpdu_overhead(more) > mss);
                }
            }
        }
        assert_eq!(max_payload(TAGGED_HDR_LEN, 1460), 1440);
        assert_eq!(
            max_payload(TAGGED_HDR_LEN, 1 << 20),
            MAX_ULPDU_LEN - TAGGED_HDR_LEN
        );
    }

    #[test]
    fn fpdu_tx_pieces_match_one_shot_encoding() {
        let mut rng = Rng(7);
        let mut payload = [0u8; 1001];
        rng.bytes(&mut payload);
        let h = hdr(
            Ulp::Send {
                msn: 9,
                mo: 100,
                solicited: false,
                invalidate: None,
            },
            false,
        );
        for crc in [false, true] {
            let mut whole = [0u8; 1100];
            let n = encode_fpdu(&h, &payload, crc, &mut whole).unwrap();
            let mut tx = FpduTx::new(&h, payload.len(), crc).unwrap();
            let mut wire = tx.head().to_vec();
            let (a, rest) = payload.split_at(10);
            let (b, c) = rest.split_at(500);
            tx.payload(a).unwrap();
            tx.payload_crc(b.len(), crc32c_of(b)).unwrap();
            tx.payload(c).unwrap();
            wire.extend_from_slice(&payload);
            wire.extend_from_slice(tx.trailer().unwrap());
            assert_eq!(&wire[..], &whole[..n]);
        }
    }

    #[test]
    fn fpdu_tx_refuses_oversize_and_wrong_payload_counts() {
        let h = hdr(Ulp::RdmaWrite { stag: 1, to: 0 }, true);
        assert_eq!(
            FpduTx::new(&h, MAX_ULPDU_LEN - TAGGED_HDR_LEN + 1, true).unwrap_err(),
            FpduError::UlpduTooLong {
                ulpdu_len: MAX_ULPDU_LEN + 1,
                max: MAX_ULPDU_LEN
            }
        );
        assert!(FpduTx::new(&h, MAX_ULPDU_LEN - TAGGED_HDR_LEN, true).is_ok());
        let mut tx = FpduTx::new(&h, 4, true).unwrap();
        assert_eq!(
            tx.trailer().unwrap_err(),
            FpduError::Misuse {
                expected: 4,
                got: 0
            }
        );
        assert_eq!(
            tx.payload(&[0; 5]),
            Err(FpduError::Misuse {
                expected: 4,
                got: 5
            })
        );
        let mut small = [0u8; 10];
        assert_eq!(
            encode_fpdu(&h, &[1, 2], true, &mut small),
            Err(FpduError::BufferTooSmall {
                need: 2 + 16 + 2 + 4
            })
        );
    }

    /// A stream of FPDUs of every kind and several payload sizes, with the
    /// segments and payloads that went in.
    fn sample_stream(crc: bool) -> (Vec<u8>, Vec<(Header, Vec<u8>)>) {
        let mut stream = Vec::new();
        let mut sent = Vec::new();
        let mut out = vec![0u8; 70_000];
        for (i, ulp) in all_ulps().into_iter().enumerate() {
            let payload: Vec<u8> = match ulp {
                Ulp::ReadRequest { .. } => Vec::new(),
                _ => (0..i * 37 % 11 + i).map(|x| x as u8).collect(),
            };
            let h = hdr(ulp, i % 2 == 0);
            let n = encode_fpdu(&h, &payload, crc, &mut out).unwrap();
            stream.extend_from_slice(&out[..n]);
            sent.push((h, payload));
        }
        (stream, sent)
    }

    /// Drive a reader over `stream` in chunks of `chunk`, collecting segments
    /// and payloads.
    fn read_stream(
        reader: &mut FpduReader,
        stream: &[u8],
        chunk: usize,
    ) -> Result<Vec<(Header, Vec<u8>)>, FpduError> {
        let mut got = Vec::new();
        let mut pos = 0;
        let mut current: Option<(Header, Vec<u8>)> = None;
        while pos < stream.len() {
            let end = (pos + chunk).min(stream.len());
            let before = reader.need();
            let fed = reader.feed(&stream[pos..end])?;
            if let RxNeed::Payload(_) = before {
                current
                    .as_mut()
                    .unwrap()
                    .1
                    .extend_from_slice(&stream[pos..pos + fed.consumed]);
            }
            pos += fed.consumed;
            match fed.event {
                Some(RxEvent::Segment(s)) => {
                    assert_eq!(reader.segment(), Some(s));
                    current = Some((s.header, Vec::new()));
                }
                Some(RxEvent::Done) => got.push(current.take().unwrap()),
                None => assert!(fed.consumed > 0 || pos == stream.len()),
            }
        }
        Ok(got)
    }

    #[test]
    fn fpdu_reader_streams_segments_in_any_chunking() {
        for crc in [false, true] {
            let (stream, sent) = sample_stream(crc);
            for chunk in [1, 2, 3, 5, 16, 47, stream.len()] {
                let mut r = FpduReader::new(crc);
                assert_eq!(read_stream(&mut r, &stream, chunk).unwrap(), sent);
                assert_eq!(r.need(), RxNeed::Header(4));
            }
        }
    }

    #[test]
    fn fpdu_reader_is_at_a_boundary_only_between_fpdus() {
        let (stream, _) = sample_stream(false);
        let mut r = FpduReader::new(false);
        assert!(r.at_boundary());
        let mut boundaries = 0;
        for (i, b) in stream.iter().enumerate() {
            r.feed(std::slice::from_ref(b)).unwrap();
            if r.at_boundary() {
                boundaries += 1;
                // Every boundary is where a length field starts.
                assert!(i + 1 == stream.len() || r.need() == RxNeed::Header(4));
            }
        }
        assert!(r.at_boundary(), "the stream ends between FPDUs");
        let (_, sent) = sample_stream(false);
        assert_eq!(boundaries, sent.len());
        // A refused header leaves the reader nowhere.
        let mut r = FpduReader::new(false);
        assert!(r.feed(&[0, 20, 0x41, 0x40]).is_err());
        assert!(!r.at_boundary());
    }

    #[test]
    fn fpdu_reader_direct_read_and_placed_crc() {
        let (stream, sent) = sample_stream(true);
        let mut r = FpduReader::new(true);
        let mut pos = 0;
        let mut got = Vec::new();
        let mut payload = Vec::new();
        while pos < stream.len() {
            let event = match r.need() {
                RxNeed::Header(n) | RxNeed::Trailer(n) => {
                    // As a read() into the reader's own buffer would.
                    let spare = r.spare();
                    assert_eq!(spare.len(), n);
                    let k = n.min(3);
                    spare[..k].copy_from_slice(&stream[pos..pos + k]);
                    pos += k;
                    r.commit(k).unwrap()
                }
                RxNeed::Payload(n) => {
                    assert!(r.spare().is_empty());
                    // "Placement" elsewhere, then the CRC of what was placed.
                    let k = n.min(4);
                    payload.extend_from_slice(&stream[pos..pos + k]);
                    let placed = &stream[pos..pos + k];
                    pos += k;
                    r.placed_crc(k, crc32c_of(placed)).unwrap();
                    None
                }
            };
            match event {
                Some(RxEvent::Segment(s)) => got.push((s.header, Vec::new())),
                Some(RxEvent::Done) => got.last_mut().unwrap().1 = std::mem::take(&mut payload),
                None => {}
            }
        }
        assert_eq!(got, sent);
        // Misuse is refused without breaking the stream.
        assert_eq!(
            r.placed(&[1]),
            Err(FpduError::Misuse {
                expected: 0,
                got: 1
            })
        );
        assert_eq!(
            r.commit(9),
            Err(FpduError::Misuse {
                expected: 4,
                got: 9
            })
        );
    }

    #[test]
    fn fpdu_reader_detects_bad_crc_anywhere() {
        let h = hdr(Ulp::ReadResponse { stag: 5, to: 6 }, true);
        let mut out = [0u8; 64];
        let n = encode_fpdu(&h, b"payload", true, &mut out).unwrap();
        for i in 0..n {
            let mut bad = out;
            bad[i] ^= 0x01;
            let mut r = FpduReader::new(true);
            let res = read_stream(&mut r, &bad[..n], n);
            if i < 2 + TAGGED_HDR_LEN {
                // Length or header bits: either a header error or a CRC error.
                assert!(res.is_err() || i == 0, "byte {i}");
            } else {
                let e = res.unwrap_err();
                assert!(matches!(e, FpduError::Crc { .. }), "byte {i}: {e:?}");
                assert_eq!(e.term(), Some(TermError::Mpa(MpaCode::Crc)));
                // Sticky.
                assert_eq!(r.feed(&[0]), Err(e));
            }
        }
        // Without CRC, the field is not checked.
        let mut r = FpduReader::new(false);
        let mut bad = out;
        bad[n - 1] ^= 0xFF;
        assert_eq!(read_stream(&mut r, &bad[..n], 5).unwrap().len(), 1);
    }

    #[test]
    fn fpdu_reader_length_field_checks() {
        // ULPDU length shorter than the tagged header it announces.
        let mut r = FpduReader::new(false);
        let e = r.feed(&[0x00, 0x0D, 0xC1, 0x40]).unwrap_err();
        assert_eq!(
            e,
            FpduError::UlpduTooShort {
                ulpdu_len: 13,
                header_len: TAGGED_HDR_LEN
            }
        );
        assert_eq!(e.term().unwrap().raw(), (2, 0, 0x03));
        // A Read Request needs 46.
        let mut r = FpduReader::new(false);
        let e = r.feed(&[0x00, 0x12, 0x41, 0x41]).unwrap_err();
        assert_eq!(
            e,
            FpduError::UlpduTooShort {
                ulpdu_len: 18,
                header_len: READ_REQUEST_HDR_LEN
            }
        );
        // Over the reader's limit.
        let mut r = FpduReader::with_max_ulpdu(false, 1460);
        let e = r.feed(&[0x05, 0xB5, 0xC1, 0x40]).unwrap_err();
        assert_eq!(
            e,
            FpduError::UlpduTooLong {
                ulpdu_len: 1461,
                max: 1460
            }
        );
        // Header errors carry their Terminate codes.
        let mut r = FpduReader::new(false);
        let e = r.feed(&[0x00, 0x20, 0xC2, 0x40]).unwrap_err();
        assert_eq!(e.term().unwrap().raw(), (1, 1, 0x04));
        let mut r = FpduReader::new(false);
        let mut s = [0u8; 24];
        s[..2].copy_from_slice(&[0x00, 0x12]);
        s[2..4].copy_from_slice(&[0x41, 0x43]);
        s[8..12].copy_from_slice(&5u32.to_be_bytes());
        let e = read_stream(&mut r, &s, 24).unwrap_err();
        assert_eq!(
            e,
            FpduError::Ddp(DdpError::InvalidQn {
                opcode: Opcode::Send,
                qn: 5
            })
        );
    }

    // ───────────── Terminate ─────────────

    #[test]
    fn terminate_codes_match_the_iana_rddp_registry() {
        use TermError as T;
        let table = [
            (T::RdmapCatastrophic { code: 0x00 }, (0, 0, 0x00)),
            (T::RdmapCatastrophic { code: 0xFF }, (0, 0, 0xFF)),
            (
                T::RdmapProtection(RdmapProtection::InvalidStag),
                (0, 1, 0x00),
            ),
            (
                T::RdmapProtection(RdmapProtection::BaseOrBounds),
                (0, 1, 0x01),
            ),
            (
                T::RdmapProtection(RdmapProtection::AccessRights),
                (0, 1, 0x02),
            ),
            (
                T::RdmapProtection(RdmapProtection::StagNotAssociated),
                (0, 1, 0x03),
            ),
            (T::RdmapProtection(RdmapProtection::ToWrap), (0, 1, 0x04)),
            (
                T::RdmapProtection(RdmapProtection::CannotInvalidate),
                (0, 1, 0x09),
            ),
            (
                T::RdmapProtection(RdmapProtection::Unspecified),
                (0, 1, 0xFF),
            ),
            (
                T::RdmapOperation(RdmapOperation::InvalidVersion),
                (0, 2, 0x05),
            ),
            (
                T::RdmapOperation(RdmapOperation::UnexpectedOpcode),
                (0, 2, 0x06),
            ),
            (
                T::RdmapOperation(RdmapOperation::CatastrophicStream),
                (0, 2, 0x07),
            ),
            (
                T::RdmapOperation(RdmapOperation::CatastrophicGlobal),
                (0, 2, 0x08),
            ),
            (
                T::RdmapOperation(RdmapOperation::CannotInvalidate),
                (0, 2, 0x09),
            ),
            (T::RdmapOperation(RdmapOperation::Unspecified), (0, 2, 0xFF)),
            (T::DdpCatastrophic, (1, 0, 0x00)),
            (T::DdpTagged(DdpTagged::InvalidStag), (1, 1, 0x00)),
            (T::DdpTagged(DdpTagged::BaseOrBounds), (1, 1, 0x01)),
            (T::DdpTagged(DdpTagged::StagNotAssociated), (1, 1, 0x02)),
            (T::DdpTagged(DdpTagged::ToWrap), (1, 1, 0x03)),
            (T::DdpTagged(DdpTagged::InvalidVersion), (1, 1, 0x04)),
            (T::DdpUntagged(DdpUntagged::InvalidQn), (1, 2, 0x01)),
            (
                T::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
                (1, 2, 0x02),
            ),
            (T::DdpUntagged(DdpUntagged::InvalidMsnRange), (1, 2, 0x03)),
            (T::DdpUntagged(DdpUntagged::InvalidMo), (1, 2, 0x04)),
            (T::DdpUntagged(DdpUntagged::MessageTooLong), (1, 2, 0x05)),
            (T::DdpUntagged(DdpUntagged::InvalidVersion), (1, 2, 0x06)),
            (T::Mpa(MpaCode::ConnectionLost), (2, 0, 0x01)),
            (T::Mpa(MpaCode::Crc), (2, 0, 0x02)),
            (T::Mpa(MpaCode::MarkerMismatch), (2, 0, 0x03)),
            (T::Mpa(MpaCode::InvalidSetupFrame), (2, 0, 0x04)),
            (T::Mpa(MpaCode::LocalCatastrophic), (2, 0, 0x05)),
            (T::Mpa(MpaCode::InsufficientIrd), (2, 0, 0x06)),
            (T::Mpa(MpaCode::NoMatchingRtr), (2, 0, 0x07)),
        ];
        for (e, raw) in table {
            assert_eq!(e.raw(), raw);
            assert_eq!(T::from_raw(raw.0, raw.1, raw.2), e);
            assert!(e.registered());
            assert!(!e.to_string().contains("unregistered"));
        }
        // Everything else is kept as received.
        let mut registered = 0;
        for layer in 0..16u8 {
            for etype in 0..16u8 {
                for code in 0..=255u8 {
                    let e = T::from_raw(layer, etype, code);
                    assert_eq!(e.raw(), (layer, etype, code));
                    registered += usize::from(e.registered());
                }
            }
        }
        assert_eq!(registered, 256 + table.len() - 2);
    }

    #[test]
    fn golden_terminate_invalid_stag_of_a_read_request() {
        let req = ReadRequest {
            sink_stag: 0x10,
            sink_to: 0x2000,
            size: 64,
            source_stag: 0xBAD,
            source_to: 0x3000,
        };
        let (rr, rr_len) = encode_hdr(&hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true));
        let term = Terminate::with_segment(
            TermError::RdmapProtection(RdmapProtection::InvalidStag),
            rr_len as u16,
            &rr[..UNTAGGED_HDR_LEN],
            Some(&rr[UNTAGGED_HDR_LEN..rr_len]),
        );
        let mut body = [0u8; TERMINATE_MAX_LEN];
        let blen = term.encode(&mut body).unwrap();
        let h = hdr(Ulp::Terminate { msn: 1, mo: 0 }, true);
        let mut out = [0u8; 128];
        let n = encode_fpdu(&h, &body[..blen], true, &mut out).unwrap();
        #[rustfmt::skip]
        let mut want = vec![
            0x00, 0x46, // ULPDU 70 = 18 + 52
            0x41, 0x47, // L | DDP v1; RDMAP v1, opcode 7 (Terminate)
            0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // reserved, QN 2, MSN 1, MO 0
            0x01, // layer 0 (RDMAP), type 1 (remote protection)
            0x00, // code 0 (invalid STag)
            0xE0, // M | D | R
            0x00,
            0x00, 0x2E, // offending ULPDU length 46
            0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, // its DDP header
            0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 64, // sink STag, TO, size
            0, 0, 0x0B, 0xAD, 0, 0, 0, 0, 0, 0, 0x30, 0, // source STag, TO
        ];
        let crc = reference_crc32c(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(&out[..n], &want[..]);
        // And back.
        let mut r = FpduReader::new(true);
        let segs = read_stream(&mut r, &want, 7).unwrap();
        assert_eq!(segs[0].0, h);
        let (t, used) = Terminate::decode(&segs[0].1).unwrap();
        assert_eq!((t, used), (term, blen));
        assert_eq!(
            t.offending(),
            Some(Ok(hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true)))
        );
    }

    #[test]
    fn terminate_roundtrip_with_and_without_headers() {
        let (w, wl) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 3, to: 4 }, false));
        let (s, sl) = encode_hdr(&hdr(
            Ulp::Send {
                msn: 2,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        ));
        let cases = [
            Terminate::new(TermError::RdmapCatastrophic { code: 0xFF }),
            Terminate::new(TermError::Mpa(MpaCode::Crc)),
            Terminate::with_segment(
                TermError::DdpTagged(DdpTagged::BaseOrBounds),
                100,
                &w[..wl],
                None,
            ),
            Terminate::with_segment(
                TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
                18,
                &s[..sl],
                None,
            ),
            Terminate {
                segment_len: Some(7),
                ..Terminate::new(TermError::DdpCatastrophic)
            }
            .with_length_valid(),
            // Reserved bits in the last byte only: the low bits of byte 2 would read
            // as siw's flags.
            Terminate {
                reserved: 0x00BC,
                ..Terminate::new(TermError::Unregistered {
                    layer: 9,
                    etype: 3,
                    code: 1,
                })
            },
        ];
        for t in cases {
            let mut body = [0u8; TERMINATE_MAX_LEN];
            let n = t.encode(&mut body).unwrap();
            assert_eq!(n, t.encoded_len());
            assert_eq!(Terminate::decode(&body[..n]), Ok((t, n)));
            for cut in 0..n {
                assert!(
                    matches!(
                        Terminate::decode(&body[..cut]),
                        Err(TermDecodeError::Truncated { .. })
                    ),
                    "cut {cut}"
                );
            }
        }
        // Parts that disagree with the flags are refused.
        let bad = Terminate {
            segment_len: Some(1),
            ..Terminate::new(TermError::DdpCatastrophic)
        };
        assert_eq!(
            bad.encode(&mut [0u8; 64]),
            Err(TermEncodeError::Inconsistent)
        );
        let bad = Terminate::with_segment(TermError::DdpCatastrophic, 1, &w[..wl - 1], None);
        assert_eq!(
            bad.encode(&mut [0u8; 64]),
            Err(TermEncodeError::DdpHeaderLength(13))
        );
        let bad = Terminate::with_segment(TermError::DdpCatastrophic, 1, &s[..sl], Some(&s[..4]));
        assert_eq!(
            bad.encode(&mut [0u8; 64]),
            Err(TermEncodeError::RdmapHeaderLength(4))
        );
    }

    impl Terminate<'_> {
        fn with_length_valid(self) -> Self {
            Terminate {
                length_valid: true,
                ..self
            }
        }
    }

    #[test]
    fn terminate_truncated_still_names_its_error() {
        let body = [0x12, 0x02, 0xC0, 0x00, 0x00];
        assert_eq!(
            Terminate::decode(&body),
            Err(TermDecodeError::Truncated {
                error: Some(TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)),
                need: 6
            })
        );
        assert_eq!(
            Terminate::decode(&body[..3]),
            Err(TermDecodeError::Truncated {
                error: None,
                need: 4
            })
        );
    }

    #[test]
    fn terminate_from_siw_little_endian_bitfields() {
        // What siw on x86 sends for "no receive posted" against a Send: type
        // in the high nibble, M|D in the low bits of byte 2, then the length
        // (siw puts the payload length) and the 18-byte DDP header.
        let (s, sl) = encode_hdr(&hdr(
            Ulp::Send {
                msn: 3,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        ));
        let mut body = vec![0x21, 0x02, 0x03, 0x00, 0x00, 0x10];
        body.extend_from_slice(&s[..sl]);
        let (t, n) = Terminate::decode(&body).unwrap();
        assert_eq!(t.layout, TermLayout::SiwLittleEndian);
        assert_eq!(
            t.error,
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)
        );
        assert_eq!(
            (t.length_valid, t.segment_len, t.ddp_header, t.inferred),
            (true, Some(16), Some(&s[..sl]), false)
        );
        assert_eq!(n, body.len());
        let mut again = [0u8; TERMINATE_MAX_LEN];
        let m = t.encode(&mut again).unwrap();
        assert_eq!(&again[..m], &body[..]);
        // RDMAP remote protection with the whole Read Request: M|D|R = 0x07.
        let req = ReadRequest::default();
        let (rr, rl) = encode_hdr(&hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true));
        let mut body = vec![0x10, 0x00, 0x07, 0x00, 0x00, 0x00];
        body.extend_from_slice(&rr[..rl]);
        let (t, n) = Terminate::decode(&body).unwrap();
        assert_eq!(
            t.error,
            TermError::RdmapProtection(RdmapProtection::InvalidStag)
        );
        assert_eq!(
            (t.rdmap_header.map(<[u8]>::len), n),
            (Some(READ_REQUEST_LEN), body.len())
        );
        // No flags, but only the swapped reading is registered: MPA CRC error.
        let (t, _) = Terminate::decode(&[0x02, 0x02, 0x00, 0x00]).unwrap();
        assert_eq!(
            (t.layout, t.error),
            (TermLayout::SiwLittleEndian, TermError::Mpa(MpaCode::Crc))
        );
        // The RFC layout of the same error.
        let (t, _) = Terminate::decode(&[0x20, 0x02, 0x00, 0x00]).unwrap();
        assert_eq!(
            (t.layout, t.error),
            (TermLayout::Rfc, TermError::Mpa(MpaCode::Crc))
        );
        // Explicit layout.
        let (t, _) =
            Terminate::decode_as(&[0x21, 0x02, 0x00, 0x00], TermLayout::SiwLittleEndian).unwrap();
        assert_eq!(
            t.error,
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)
        );
    }

    #[test]
    fn terminate_trailing_bytes_tolerated_and_unannounced_headers_inferred() {
        let (w, wl) = encode_hdr(&hdr(
            Ulp::RdmaWrite {
                stag: 0xAB,
                to: 0x1000,
            },
            true,
        ));
        let mut body = vec![0x11, 0x00, 0x00, 0x00, 0x00, 0x20];
        body.extend_from_slice(&w[..wl]);
        body.extend_from_slice(&[0xEE; 5]); // beyond anything announced
        let (t, n) = Terminate::decode(&body).unwrap();
        assert_eq!(t.error, TermError::DdpTagged(DdpTagged::InvalidStag));
        assert!(t.inferred);
        assert_eq!(
            (t.segment_len, t.ddp_header, n),
            (Some(0x20), Some(&w[..wl]), 6 + wl)
        );
        assert_eq!(
            t.offending(),
            Some(Ok(hdr(
                Ulp::RdmaWrite {
                    stag: 0xAB,
                    to: 0x1000
                },
                true
            )))
        );
        let mut again = [0u8; TERMINATE_MAX_LEN];
        let m = t.encode(&mut again).unwrap();
        assert_eq!(&again[..m], &body[..n]);
        // Trailing bytes that do not parse are left alone.
        let (t, n) = Terminate::decode(&[
            0x00, 0xFF, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
        ])
        .unwrap();
        assert_eq!(
            (t.error, t.inferred, n),
            (TermError::RdmapCatastrophic { code: 0xFF }, false, 4)
        );
    }

    // ───────────── Property: random and mutated input ─────────────

    fn check_mpa(bytes: &[u8], rng: &mut Rng) {
        for kind in [MpaKind::Request, MpaKind::Reply] {
            let cfg = MpaConfig {
                accept_markers: rng.below(2) == 0,
                ..MpaConfig::new(kind)
            };
            let chunk = 1 + rng.below(40);
            if let (Ok(Some((f, consumed))), _) = parse_mpa(cfg, bytes, chunk) {
                let mut out = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
                let n = f.frame().encode_with_limit(&mut out, MPA_PD_MAX).unwrap();
                assert_eq!(&out[..n], &bytes[..consumed]);
            }
        }
    }

    fn check_header(bytes: &[u8]) {
        if let Ok((h, n)) = Header::decode(bytes) {
            let (out, m) = encode_hdr(&h);
            assert_eq!(&out[..m], &bytes[..n]);
        }
    }

    fn check_terminate(bytes: &[u8]) {
        if let Ok((t, n)) = Terminate::decode(bytes) {
            let mut out = [0u8; TERMINATE_MAX_LEN];
            let m = t.encode(&mut out).unwrap();
            assert_eq!(&out[..m], &bytes[..n]);
            let _ = t.offending();
        }
    }

    fn check_fpdus(bytes: &[u8], crc: bool, rng: &mut Rng) {
        let mut r = FpduReader::with_max_ulpdu(
            crc,
            if rng.below(2) == 0 {
                MAX_ULPDU_LEN
            } else {
                200
            },
        );
        let (mut pos, mut start) = (0, 0);
        while pos < bytes.len() {
            let end = (pos + 1 + rng.below(64)).min(bytes.len());
            let Ok(fed) = r.feed(&bytes[pos..end]) else {
                return;
            };
            pos += fed.consumed;
            match fed.event {
                Some(RxEvent::Segment(s)) => {
                    let (out, m) = encode_hdr(&s.header);
                    assert_eq!(&out[..m], &bytes[start + 2..start + 2 + m]);
                    assert_eq!(usize::from(s.ulpdu_len), m + s.payload_len);
                    assert_eq!(be16(bytes, start), s.ulpdu_len);
                }
                Some(RxEvent::Done) => {
                    if crc {
                        let c = reference_crc32c(&bytes[start..pos - 4]);
                        assert_eq!(&c.to_le_bytes()[..], &bytes[pos - 4..pos]);
                    }
                    start = pos;
                }
                None => {}
            }
        }
    }

    fn mutate(rng: &mut Rng, v: &mut Vec<u8>) {
        for _ in 0..rng.below(3) {
            if !v.is_empty() {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
        }
        if rng.below(4) == 0 {
            v.truncate(rng.below(v.len() + 1));
        }
    }

    #[test]
    fn parsers_never_panic_and_never_accept_what_they_cannot_reproduce() {
        let mut rng = Rng(0x1D_A7A5);
        let (stream_crc, _) = sample_stream(true);
        let (stream_plain, _) = sample_stream(false);
        let mut frames = Vec::new();
        let mut buf = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
        for (kind, rev, io) in [
            (MpaKind::Request, 2, true),
            (MpaKind::Reply, 1, false),
            (MpaKind::Reply, 2, true),
        ] {
            let f = MpaFrame {
                ird_ord: io.then_some(IrdOrd {
                    ird: 4,
                    ord: 4,
                    ..IrdOrd::default()
                }),
                private_data: b"private",
                ..MpaFrame::new(kind, rev)
            };
            let n = f.encode(&mut buf).unwrap();
            frames.push(buf[..n].to_vec());
        }
        let mut terms = Vec::new();
        let (rr, rl) = encode_hdr(&hdr(
            Ulp::ReadRequest {
                msn: 1,
                mo: 0,
                req: ReadRequest::default(),
            },
            true,
        ));
        for t in [
            Terminate::new(TermError::Mpa(MpaCode::Crc)),
            Terminate::with_segment(
                TermError::RdmapProtection(RdmapProtection::AccessRights),
                46,
                &rr[..18],
                Some(&rr[18..rl]),
            ),
        ] {
            let mut b = [0u8; TERMINATE_MAX_LEN];
            let n = t.encode(&mut b).unwrap();
            terms.push(b[..n].to_vec());
        }
        let mut accepted = [0usize; 4];
        for round in 0..20_000 {
            // Pure noise, or a valid encoding with a few bits flipped.
            let mut v = vec![0u8; rng.below(200)];
            rng.bytes(&mut v);
            let choice = rng.below(6);
            match choice {
                0 => {}
                1 => v = frames[round % frames.len()].clone(),
                2 => v = stream_crc.clone(),
                3 => v = stream_plain.clone(),
                4 => v = terms[round % terms.len()].clone(),
                _ => {
                    v = encode_hdr(&hdr(all_ulps()[round % 9], round % 2 == 0))
                        .0
                        .to_vec()
                }
            }
            if choice != 0 {
                mutate(&mut rng, &mut v);
            }
            check_mpa(&v, &mut rng);
            check_header(&v);
            check_terminate(&v);
            check_fpdus(&v, true, &mut rng);
            check_fpdus(&v, false, &mut rng);
            accepted[0] += usize::from(Header::decode(&v).is_ok());
            accepted[1] += usize::from(Terminate::decode(&v).is_ok());
            accepted[2] += usize::from(matches!(
                parse_mpa(MpaConfig::new(MpaKind::Reply), &v, 64).0,
                Ok(Some(_))
            ));
            accepted[3] += usize::from(
                read_stream(&mut FpduReader::new(true), &v, 9).is_ok_and(|s| !s.is_empty()),
            );
        }
        // The mutated inputs reached the accepting paths, not only the errors.
        assert!(accepted.iter().all(|&a| a > 50), "{accepted:?}");
    }
}
