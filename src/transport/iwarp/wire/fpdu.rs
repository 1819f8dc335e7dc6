//! FPDU framing `[ULPDU length][ULPDU][pad][CRC]`: [`FpduTx`] builds the
//! bytes around a payload the transport writes from application memory;
//! [`FpduReader`] is told what arrived and says what it needs next
//! ([`RxNeed`]), never seeing the payload itself. Nothing may complete
//! before [`RxEvent::Done`] (the CRC is checked after placement).

use std::fmt;

use super::*;

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
    pub(super) head: [u8; MPA_LEN_FIELD + MAX_HDR_LEN],
    pub(super) head_len: usize,
    pub(super) trailer: [u8; 3 + CRC_LEN],
    pub(super) pad: usize,
    pub(super) crc: Option<Crc>,
    pub(super) payload_left: usize,
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
pub(super) enum Stage {
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
    pub(super) crc_on: bool,
    pub(super) max_ulpdu: usize,
    pub(super) stage: Stage,
    pub(super) buf: [u8; MPA_LEN_FIELD + MAX_HDR_LEN],
    pub(super) have: usize,
    pub(super) want: usize,
    pub(super) segment: Option<Segment>,
    pub(super) payload_left: usize,
    pub(super) crc: Crc,
    pub(super) failed: Option<FpduError>,
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
