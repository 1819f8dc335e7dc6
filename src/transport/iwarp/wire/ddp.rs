//! The ULPDU header: DDP (RFC 5041) tagged or untagged fields with the
//! RDMAP (RFC 5040) control byte ([`Header`]), the Read Request's RDMAP
//! header ([`ReadRequest`]), and the Terminate error codes of the RFC 6580
//! registry ([`TermError`]). [`Header::decode`] names each failure with the
//! Terminate error the peer is owed.

use std::fmt;

use super::*;

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

pub(super) const DDP_TAGGED: u8 = 0x80;
pub(super) const DDP_LAST: u8 = 0x40;
pub(super) const DDP_RESERVED: u8 = 0x3C;
pub(super) const DDP_VERSION_MASK: u8 = 0x03;
pub(super) const RDMAP_VERSION_SHIFT: u8 = 6;
pub(super) const RDMAP_RESERVED: u8 = 0x30;
pub(super) const RDMAP_OPCODE_MASK: u8 = 0x0F;

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
