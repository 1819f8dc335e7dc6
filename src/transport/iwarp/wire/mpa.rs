//! MPA setup frames (RFC 5044, RFC 6581 revision 2): one Request or Reply
//! ([`MpaFrame`]), with the enhanced-setup IRD/ORD word ([`IrdOrd`]), and
//! [`MpaParser`], which takes the byte stream in pieces of any size and
//! never consumes a byte past the frame.

use std::fmt;

use super::*;

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

pub(super) const MPA_FLAG_MARKERS: u8 = 0x80;
pub(super) const MPA_FLAG_CRC: u8 = 0x40;
pub(super) const MPA_FLAG_REJECT: u8 = 0x20;
pub(super) const MPA_FLAG_ENHANCED: u8 = 0x10;
pub(super) const MPA_FLAGS_RESERVED: u8 = 0x0F;
pub(super) const MPA_REV_MAX: u8 = 2;

pub(super) const IRD_PEER_TO_PEER: u16 = 0x8000;
pub(super) const IRD_RTR_ZERO_SEND: u16 = 0x4000;
pub(super) const ORD_RTR_WRITE: u16 = 0x8000;
pub(super) const ORD_RTR_READ: u16 = 0x4000;

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
    pub(super) cfg: MpaConfig,
    pub(super) buf: [u8; MPA_HEADER_LEN + MPA_PD_MAX],
    pub(super) have: usize,
    /// Frame length once the header is in, else 0.
    pub(super) total: usize,
    /// Some byte of the key so far differs from the expected key.
    pub(super) off_key: bool,
    pub(super) failed: Option<MpaError>,
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
