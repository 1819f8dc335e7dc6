//! Terminate messages (RDMAP opcode 7): the control word and the offending
//! segment's headers, encoded in the RFC layout and decoded in either the
//! RFC's or `siw`'s little-endian one ([`TermLayout`]).

use std::fmt;

use super::*;

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
pub(super) fn plausible_ddp_header(b: &[u8]) -> Option<usize> {
    match Header::decode(&b[..b.len().min(2)]) {
        Err(DdpError::Truncated { need }) if b.len() >= 2 => Some(need.min(UNTAGGED_HDR_LEN)),
        _ => None,
    }
}

pub(super) fn detect_layout(w: [u8; 4]) -> TermLayout {
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

pub(super) type WordFields = (u8, u8, u8, bool, bool, bool, u16);

pub(super) fn split_word(layout: TermLayout, w: [u8; 4]) -> WordFields {
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
pub(super) fn control_word(
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
