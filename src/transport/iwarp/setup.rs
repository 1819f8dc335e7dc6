//! MPA connection setup (RFC 5044 / RFC 6581) on an already-connected TCP
//! byte stream, without I/O: the caller moves the bytes and the clock.
//!
//! - **Initiator** ([`Initiator`]): send [`Initiator::request`] in one
//!   `write()`, then [`Initiator::feed`] the stream until it reports
//!   [`InitiatorEvent::Established`] (send its `tx`, the RTR, before any
//!   FPDU) or [`InitiatorEvent::Rejected`]. Bytes after the Reply are never
//!   consumed: they belong to the FPDU stream.
//! - **Responder** ([`Responder`]): [`Responder::feed`] the stream until it
//!   reports [`ResponderEvent::Request`]; the DAT layer then calls
//!   [`Responder::accept`] (send the Reply; if an RTR is due, keep feeding
//!   until [`ResponderEvent::Established`]) or [`Responder::reject`] (send
//!   the Reply, close). A Request with markers is answered by
//!   [`ResponderEvent::Refused`] carrying a reject Reply to send before
//!   closing.
//! - **Time**: no clocks here. The caller arms [`REPLY_TIMEOUT`] (initiator),
//!   [`REQUEST_TIMEOUT`] and [`RTR_TIMEOUT`] (responder) and reports expiry
//!   with `timed_out()`, an end of stream with `closed()`; both return the
//!   final error.
//!
//! # Decisions
//!
//! - **Frames**: the initiator speaks revision 2 with H, the IRD/ORD word,
//!   peer-to-peer and the zero-length RDMA Write RTR. The responder answers
//!   in the Request's revision and mirrors H (revision 1, or 2 without H,
//!   gets a Reply without the IRD/ORD word); reject Replies carry a zero
//!   IRD/ORD word when H is mirrored. The Reply's C is set when either side
//!   asked for CRC (the value in use).
//! - **IRD/ORD** (all capped at [`IRD_ORD_DEVICE_MAX`]): each side
//!   advertises IRD = consumer IRD + 1, the extra inbound credit a peer of
//!   this library needs for its ack reads (`conn` admits at most consumer
//!   IRD + 1), and ORD = consumer ORD + 1 when ack reads are wanted (else
//!   the consumer ORD); the responder's ORD is further bounded by the
//!   initiator's IRD. Negotiated: `ird` = what this side advertised, `ord` =
//!   min(advertised ORD, peer's IRD), `ack_reads` = wanted and the peer's
//!   IRD ≥ consumer ORD + 1 (otherwise local completion). A Reply whose ORD
//!   exceeds the IRD the initiator advertised is refused. Without an IRD/ORD
//!   word (revision 1) the consumer values are used and ack reads are off.
//! - **RTR**: the initiator offers only the zero-length RDMA Write (STag 0,
//!   TO 0) and sends it when the Reply grants peer-to-peer (a Reply that
//!   picks only another RTR is refused; one with no RTR bit gets the Write).
//!   The responder picks the Write when offered, else the zero-length Read:
//!   it consumes the Read Request and hands back the zero-length Read
//!   Response in [`Established::tx`]; that Read Request used inbound Read
//!   MSN 1 ([`Established::read_rtr_msn`]), which the connection engine must
//!   account for before it accepts a Read. An offer of only the
//!   zero-length-Send RTR (it would consume a receive) is answered without
//!   peer-to-peer. Without an RTR the responder reports
//!   [`Established::hold_tx_until_first_rx`]: it must not send before the
//!   first inbound FPDU.
//! - **Private data**: at most [`PROFILE_PD_SEND_MAX`] bytes on the wire,
//!   IRD/ORD word included ([`CONSUMER_PD_MAX_ENHANCED`] for the consumer
//!   with H, [`CONSUMER_PD_MAX_BASIC`] without); longer consumer data is
//!   refused with [`SetupError::PrivateDataTooLong`]
//!   (`DAT_INVALID_PARAMETER`). On receipt, up to the configured
//!   `max_pd_in` (at most 512).
//! - **Markers** are not supported: a Reply with M fails the connect, a
//!   Request with M is rejected.

use std::fmt;
use std::time::Duration;

use super::conn::Negotiated;
use super::wire::{
    self, FpduError, FpduReader, Header, IrdOrd, MpaConfig, MpaError, MpaFrame, MpaKind, MpaParser,
    MpaStatus, Opcode, RtrFlags, RxEvent, Ulp, IRD_ORD_LEN, PROFILE_PD_SEND_MAX,
};

/// How long the initiator waits for the Reply (as `siw`).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the responder waits for the Request (as `siw`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the responder waits for the RTR after its Reply.
pub const RTR_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest IRD or ORD this device advertises (as `siw`).
pub const IRD_ORD_DEVICE_MAX: u16 = 128;
/// Revision this library speaks as initiator.
pub const REVISION: u8 = 2;
/// Consumer private data carried with the IRD/ORD word (H set).
pub const CONSUMER_PD_MAX_ENHANCED: usize = PROFILE_PD_SEND_MAX - IRD_ORD_LEN;
/// Consumer private data carried without the IRD/ORD word.
pub const CONSUMER_PD_MAX_BASIC: usize = PROFILE_PD_SEND_MAX;
/// Default limit on received private data (the RFC's ceiling).
pub const MAX_PD_IN: u16 = wire::MPA_PD_MAX as u16;

/// Where a setup stands (for errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Initiator waiting for the Reply.
    Reply,
    /// Responder waiting for the Request.
    Request,
    /// Responder waiting for the DAT layer's accept or reject.
    Decision,
    /// Responder waiting for the initiator's RTR.
    Rtr,
    /// Setup finished (established, rejected or failed).
    Done,
}

/// Why setup failed. Every error but [`PrivateDataTooLong`] and
/// [`WrongState`] is final: the caller closes the connection.
///
/// [`PrivateDataTooLong`]: SetupError::PrivateDataTooLong
/// [`WrongState`]: SetupError::WrongState
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// Consumer private data above the profile's limit
    /// (`DAT_INVALID_PARAMETER`).
    PrivateDataTooLong { len: usize, max: usize },
    /// The peer's setup frame is refused (bad key, revision, length, H
    /// without revision 2, markers…).
    Mpa(MpaError),
    /// The Reply grants the initiator more inbound reads than it advertised.
    PeerOrdAboveOurIrd { peer_ord: u16, our_ird: u16 },
    /// The Reply picks an RTR message the initiator did not offer.
    RtrNotOffered(RtrFlags),
    /// The first FPDU after the Reply is not the agreed RTR message.
    UnexpectedRtr { opcode: Opcode, payload_len: usize },
    /// The RTR FPDU is malformed (header, length or CRC).
    Fpdu(FpduError),
    /// The caller's timer for this stage expired.
    Timeout(Stage),
    /// The peer closed the stream during this stage (a truncated frame).
    Closed(Stage),
    /// A call that this stage does not allow (nothing changed).
    WrongState(Stage),
}

impl SetupError {
    /// The error is the consumer's (its parameters), not the peer's.
    pub const fn is_invalid_parameter(&self) -> bool {
        matches!(self, SetupError::PrivateDataTooLong { .. })
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SetupError::PrivateDataTooLong { len, max } => {
                write!(f, "{len} bytes of private data exceed {max}")
            }
            SetupError::Mpa(e) => write!(f, "MPA setup refused: {e}"),
            SetupError::PeerOrdAboveOurIrd { peer_ord, our_ird } => {
                write!(f, "MPA Reply ORD {peer_ord} exceeds our IRD {our_ird}")
            }
            SetupError::RtrNotOffered(r) => write!(f, "MPA Reply picks an RTR not offered: {r:?}"),
            SetupError::UnexpectedRtr {
                opcode,
                payload_len,
            } => write!(
                f,
                "expected a zero-length RTR, got {opcode:?} with {payload_len} bytes"
            ),
            SetupError::Fpdu(e) => write!(f, "bad RTR FPDU: {e}"),
            SetupError::Timeout(s) => write!(f, "MPA setup timed out waiting for {s:?}"),
            SetupError::Closed(s) => write!(f, "peer closed while waiting for {s:?}"),
            SetupError::WrongState(s) => write!(f, "call not allowed at stage {s:?}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// What a `feed` call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress<E> {
    /// Bytes of the input taken; the rest is not setup's.
    pub consumed: usize,
    pub event: Option<E>,
}

/// The result of a successful setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Established {
    pub negotiated: Negotiated,
    /// The peer's consumer private data (after the IRD/ORD word).
    pub private_data: Vec<u8>,
    /// The peer's frame revision, as on the wire.
    pub revision: u8,
    /// The peer's IRD/ORD word, if it sent one.
    pub peer_ird_ord: Option<IrdOrd>,
    /// Bytes to send before any FPDU: the initiator's RTR, or the
    /// responder's zero-length Read Response to a Read RTR. Often empty.
    pub tx: Vec<u8>,
    /// Responder without RTR: send nothing until the first inbound FPDU.
    pub hold_tx_until_first_rx: bool,
    /// The MSN of the inbound Read Request a Read RTR used (responder).
    pub read_rtr_msn: Option<u32>,
}

fn clamp(v: u32) -> u16 {
    v.min(u32::from(IRD_ORD_DEVICE_MAX)) as u16
}

fn check_pd(len: usize, enhanced: bool) -> Result<(), SetupError> {
    let max = if enhanced {
        CONSUMER_PD_MAX_ENHANCED
    } else {
        CONSUMER_PD_MAX_BASIC
    };
    if len > max {
        return Err(SetupError::PrivateDataTooLong { len, max });
    }
    Ok(())
}

fn encode_frame(frame: &MpaFrame<'_>) -> Vec<u8> {
    let mut out = vec![0u8; frame.encoded_len()];
    // The inputs were checked (private data, revision, IRD/ORD ≤ 128).
    let n = frame.encode(&mut out).unwrap_or(0);
    out.truncate(n);
    out
}

fn encode_rtr(header: &Header, crc: bool) -> Result<Vec<u8>, SetupError> {
    let mut out = [0u8; 2 + wire::MAX_HDR_LEN + 3 + wire::CRC_LEN];
    let n = wire::encode_fpdu(header, &[], crc, &mut out).map_err(SetupError::Fpdu)?;
    Ok(out[..n].to_vec())
}

/// The zero-length RDMA Write RTR an initiator sends.
pub fn rtr_write(crc: bool) -> Result<Vec<u8>, SetupError> {
    encode_rtr(&Header::new(Ulp::RdmaWrite { stag: 0, to: 0 }, true), crc)
}

// ─────────────────────────────── initiator ───────────────────────────────

/// What the active side asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitiatorConfig {
    /// At most [`CONSUMER_PD_MAX_ENHANCED`] bytes.
    pub private_data: Vec<u8>,
    pub crc_requested: bool,
    /// The consumer's inbound reads.
    pub ird: u32,
    /// The consumer's outbound reads.
    pub ord: u32,
    /// Complete Sends/Writes through zero-length reads if the peer allows.
    pub ack_reads_wanted: bool,
    /// Longest Reply private data accepted (IRD/ORD word included).
    pub max_pd_in: u16,
    /// Largest FPDU to send (copied into [`Negotiated::max_fpdu`]).
    pub max_fpdu: usize,
}

/// What ended an initiator's setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitiatorEvent {
    Established(Established),
    /// The responder refused (R): its private data. Close the connection.
    Rejected {
        private_data: Vec<u8>,
    },
}

/// The active side's setup.
#[derive(Clone, Debug)]
pub struct Initiator {
    request: Vec<u8>,
    parser: MpaParser,
    crc: bool,
    max_fpdu: usize,
    consumer_ird: u16,
    consumer_ord: u16,
    ird_adv: u16,
    ord_adv: u16,
    ack_wanted: bool,
    failed: Option<SetupError>,
    done: bool,
}

impl Initiator {
    pub fn new(cfg: InitiatorConfig) -> Result<Initiator, SetupError> {
        check_pd(cfg.private_data.len(), true)?;
        let consumer_ird = clamp(cfg.ird);
        let consumer_ord = clamp(cfg.ord);
        let ird_adv = clamp(cfg.ird.saturating_add(1));
        let ord_adv = clamp(cfg.ord.saturating_add(u32::from(cfg.ack_reads_wanted)));
        let mut frame = MpaFrame::new(MpaKind::Request, REVISION);
        frame.crc = cfg.crc_requested;
        frame.ird_ord = Some(IrdOrd {
            ird: ird_adv,
            ord: ord_adv,
            peer_to_peer: true,
            rtr: RtrFlags {
                rdma_write: true,
                ..RtrFlags::default()
            },
        });
        frame.private_data = &cfg.private_data;
        let request = encode_frame(&frame);
        let mut pcfg = MpaConfig::new(MpaKind::Reply);
        pcfg.max_private_data = cfg.max_pd_in;
        Ok(Initiator {
            request,
            parser: MpaParser::new(pcfg),
            crc: cfg.crc_requested,
            max_fpdu: cfg.max_fpdu,
            consumer_ird,
            consumer_ord,
            ird_adv,
            ord_adv,
            ack_wanted: cfg.ack_reads_wanted,
            failed: None,
            done: false,
        })
    }

    /// The MPA Request, to send in one `write()`.
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    fn stage(&self) -> Stage {
        if self.done || self.failed.is_some() {
            Stage::Done
        } else {
            Stage::Reply
        }
    }

    fn fail(&mut self, e: SetupError) -> SetupError {
        self.failed = Some(e);
        e
    }

    /// Take Reply bytes from the stream; never past the Reply's end.
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress<InitiatorEvent>, SetupError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.done {
            return Err(SetupError::WrongState(Stage::Done));
        }
        let fed = match self.parser.feed(input) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(SetupError::Mpa(e))),
        };
        let consumed = fed.consumed;
        let MpaStatus::Frame(frame) = fed.status else {
            return Ok(Progress {
                consumed,
                event: None,
            });
        };
        let (reject, peer_crc, revision, peer) =
            (frame.reject, frame.crc, frame.revision, frame.ird_ord);
        let private_data = frame.private_data.to_vec();
        if reject {
            self.done = true;
            return Ok(Progress {
                consumed,
                event: Some(InitiatorEvent::Rejected { private_data }),
            });
        }
        let crc = self.crc || peer_crc;
        let mut neg = Negotiated {
            crc,
            max_fpdu: self.max_fpdu,
            ird: u32::from(self.consumer_ird),
            ord: u32::from(self.consumer_ord),
            ack_reads: false,
        };
        let mut tx = Vec::new();
        if let Some(p) = peer {
            if p.ord > self.ird_adv {
                return Err(self.fail(SetupError::PeerOrdAboveOurIrd {
                    peer_ord: p.ord,
                    our_ird: self.ird_adv,
                }));
            }
            neg.ird = u32::from(self.ird_adv);
            neg.ord = u32::from(self.ord_adv.min(p.ird));
            neg.ack_reads =
                self.ack_wanted && self.ord_adv > self.consumer_ord && p.ird > self.consumer_ord;
            if p.peer_to_peer {
                let none = p.rtr == RtrFlags::default();
                if !p.rtr.rdma_write && !none {
                    return Err(self.fail(SetupError::RtrNotOffered(p.rtr)));
                }
                tx = match rtr_write(crc) {
                    Ok(b) => b,
                    Err(e) => return Err(self.fail(e)),
                };
            }
        }
        self.done = true;
        Ok(Progress {
            consumed,
            event: Some(InitiatorEvent::Established(Established {
                negotiated: neg,
                private_data,
                revision,
                peer_ird_ord: peer,
                tx,
                hold_tx_until_first_rx: false,
                read_rtr_msn: None,
            })),
        })
    }

    /// The caller's [`REPLY_TIMEOUT`] expired: the final error.
    pub fn timed_out(&mut self) -> SetupError {
        let s = self.stage();
        self.fail(SetupError::Timeout(s))
    }

    /// The stream ended before the Reply was complete: the final error.
    pub fn closed(&mut self) -> SetupError {
        let s = self.stage();
        self.fail(SetupError::Closed(s))
    }
}

// ─────────────────────────────── responder ───────────────────────────────

/// The passive side's instance options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    pub crc_requested: bool,
    /// Longest Request private data accepted (IRD/ORD word included).
    pub max_pd_in: u16,
    /// Largest FPDU to send (copied into [`Negotiated::max_fpdu`]).
    pub max_fpdu: usize,
}

/// A complete MPA Request, for the DAT layer to accept or reject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// As on the wire (0 and 1 are revision 1).
    pub revision: u8,
    /// The initiator asked for CRC.
    pub crc: bool,
    pub ird_ord: Option<IrdOrd>,
    pub private_data: Vec<u8>,
}

/// The DAT layer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptConfig {
    /// At most [`CONSUMER_PD_MAX_ENHANCED`] bytes (H) or
    /// [`CONSUMER_PD_MAX_BASIC`] (no H).
    pub private_data: Vec<u8>,
    pub ird: u32,
    pub ord: u32,
    pub ack_reads_wanted: bool,
}

/// What [`Responder::accept`] produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The Reply, to send in one `write()`.
    pub reply: Vec<u8>,
    /// Set when no RTR is due; otherwise keep feeding.
    pub established: Option<Established>,
}

/// What a responder's `feed` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResponderEvent {
    /// The Request is in: call [`Responder::accept`] or [`Responder::reject`].
    Request(Request),
    /// The Request is refused (markers): send `reply` (R set), then close.
    Refused { reply: Vec<u8>, reason: SetupError },
    /// The RTR arrived: the connection is up.
    Established(Established),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RtrKind {
    Write,
    Read,
}

#[derive(Clone, Debug)]
enum RState {
    Request,
    Decision(Request),
    Rtr(Box<RtrWait>),
    Done,
}

/// Waiting for the initiator's RTR FPDU.
#[derive(Clone, Debug)]
struct RtrWait {
    reader: FpduReader,
    kind: RtrKind,
    est: Established,
    /// The Read RTR's MSN and request, once its header is in.
    read: Option<(u32, wire::ReadRequest)>,
}

/// The passive side's setup.
#[derive(Clone, Debug)]
pub struct Responder {
    cfg: ResponderConfig,
    parser: MpaParser,
    state: RState,
    failed: Option<SetupError>,
}

/// A Reply in the Request's format: same revision, H mirrored.
fn reply_frame<'a>(req_revision: u8, enhanced: bool) -> MpaFrame<'a> {
    let mut f = MpaFrame::new(MpaKind::Reply, req_revision);
    if enhanced {
        f.ird_ord = Some(IrdOrd::default());
    }
    f
}

impl Responder {
    pub fn new(cfg: ResponderConfig) -> Responder {
        let mut pcfg = MpaConfig::new(MpaKind::Request);
        pcfg.max_private_data = cfg.max_pd_in;
        // Markers are refused with a reject Reply, which needs the frame.
        pcfg.accept_markers = true;
        Responder {
            cfg,
            parser: MpaParser::new(pcfg),
            state: RState::Request,
            failed: None,
        }
    }

    fn stage(&self) -> Stage {
        if self.failed.is_some() {
            return Stage::Done;
        }
        match self.state {
            RState::Request => Stage::Request,
            RState::Decision(_) => Stage::Decision,
            RState::Rtr(_) => Stage::Rtr,
            RState::Done => Stage::Done,
        }
    }

    fn fail(&mut self, e: SetupError) -> SetupError {
        self.failed = Some(e);
        self.state = RState::Done;
        e
    }

    /// Take Request (then RTR) bytes from the stream; never past their end.
    /// While the DAT layer decides, consumes nothing.
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress<ResponderEvent>, SetupError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.state {
            RState::Request => self.feed_request(input),
            RState::Decision(_) => Ok(Progress {
                consumed: 0,
                event: None,
            }),
            RState::Rtr(_) => self.feed_rtr(input),
            RState::Done => Err(SetupError::WrongState(Stage::Done)),
        }
    }

    fn feed_request(&mut self, input: &[u8]) -> Result<Progress<ResponderEvent>, SetupError> {
        let fed = match self.parser.feed(input) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(SetupError::Mpa(e))),
        };
        let consumed = fed.consumed;
        let MpaStatus::Frame(frame) = fed.status else {
            return Ok(Progress {
                consumed,
                event: None,
            });
        };
        if frame.markers {
            let mut reply = reply_frame(frame.revision, frame.enhanced());
            reply.reject = true;
            let reply = encode_frame(&reply);
            let reason = SetupError::Mpa(MpaError::Markers {
                revision: frame.revision,
            });
            self.fail(reason);
            return Ok(Progress {
                consumed,
                event: Some(ResponderEvent::Refused { reply, reason }),
            });
        }
        let req = Request {
            revision: frame.revision,
            crc: frame.crc,
            ird_ord: frame.ird_ord,
            private_data: frame.private_data.to_vec(),
        };
        self.state = RState::Decision(req.clone());
        Ok(Progress {
            consumed,
            event: Some(ResponderEvent::Request(req)),
        })
    }

    fn feed_rtr(&mut self, input: &[u8]) -> Result<Progress<ResponderEvent>, SetupError> {
        let mut consumed = 0;
        loop {
            let RState::Rtr(w) = &mut self.state else {
                return Err(SetupError::WrongState(Stage::Done));
            };
            let RtrWait {
                reader, kind, read, ..
            } = &mut **w;
            let fed = match reader.feed(&input[consumed..]) {
                Ok(f) => f,
                Err(e) => return Err(self.fail(SetupError::Fpdu(e))),
            };
            consumed += fed.consumed;
            match fed.event {
                None if consumed == input.len() => {
                    return Ok(Progress {
                        consumed,
                        event: None,
                    })
                }
                None => {}
                Some(RxEvent::Segment(seg)) => {
                    let ok = seg.header.last && seg.payload_len == 0;
                    match (seg.header.ulp, *kind) {
                        (Ulp::RdmaWrite { .. }, RtrKind::Write) if ok => {}
                        (Ulp::ReadRequest { msn, req, .. }, RtrKind::Read)
                            if ok && req.size == 0 =>
                        {
                            *read = Some((msn, req));
                        }
                        (ulp, _) => {
                            return Err(self.fail(SetupError::UnexpectedRtr {
                                opcode: ulp.opcode(),
                                payload_len: seg.payload_len,
                            }))
                        }
                    }
                }
                Some(RxEvent::Done) => break,
            }
        }
        let RState::Rtr(w) = std::mem::replace(&mut self.state, RState::Done) else {
            return Err(SetupError::WrongState(Stage::Done));
        };
        let RtrWait { mut est, read, .. } = *w;
        if let Some((msn, req)) = read {
            let h = Header::new(
                Ulp::ReadResponse {
                    stag: req.sink_stag,
                    to: req.sink_to,
                },
                true,
            );
            est.tx = match encode_rtr(&h, est.negotiated.crc) {
                Ok(b) => b,
                Err(e) => return Err(self.fail(e)),
            };
            est.read_rtr_msn = Some(msn);
        }
        Ok(Progress {
            consumed,
            event: Some(ResponderEvent::Established(est)),
        })
    }

    fn decision(&self) -> Result<&Request, SetupError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match &self.state {
            RState::Decision(r) => Ok(r),
            _ => Err(SetupError::WrongState(self.stage())),
        }
    }

    /// Accept the Request: the Reply, and the result if no RTR is due.
    /// Too much private data leaves the Request pending.
    pub fn accept(&mut self, cfg: AcceptConfig) -> Result<Accepted, SetupError> {
        let req = self.decision()?.clone();
        check_pd(cfg.private_data.len(), req.ird_ord.is_some())?;
        let crc = req.crc || self.cfg.crc_requested;
        let our_ird = clamp(cfg.ird.saturating_add(1));
        let consumer_ord = clamp(cfg.ord);
        let ord_want = clamp(cfg.ord.saturating_add(u32::from(cfg.ack_reads_wanted)));
        let mut neg = Negotiated {
            crc,
            max_fpdu: self.cfg.max_fpdu,
            ird: u32::from(our_ird),
            ord: u32::from(consumer_ord),
            ack_reads: false,
        };
        let mut frame = reply_frame(req.revision, false);
        frame.crc = crc;
        frame.private_data = &cfg.private_data;
        let mut rtr = None;
        if let Some(p) = req.ird_ord {
            let ord = ord_want.min(p.ird);
            neg.ord = u32::from(ord);
            neg.ack_reads = cfg.ack_reads_wanted && ord_want > consumer_ord && p.ird > consumer_ord;
            if p.peer_to_peer {
                if p.rtr.rdma_write {
                    rtr = Some(RtrKind::Write);
                } else if p.rtr.rdma_read {
                    rtr = Some(RtrKind::Read);
                }
            }
            frame.ird_ord = Some(IrdOrd {
                ird: our_ird,
                ord,
                peer_to_peer: rtr.is_some(),
                rtr: RtrFlags {
                    zero_length_send: false,
                    rdma_write: rtr == Some(RtrKind::Write),
                    rdma_read: rtr == Some(RtrKind::Read),
                },
            });
        }
        let reply = encode_frame(&frame);
        let est = Established {
            negotiated: neg,
            private_data: req.private_data,
            revision: req.revision,
            peer_ird_ord: req.ird_ord,
            tx: Vec::new(),
            hold_tx_until_first_rx: rtr.is_none(),
            read_rtr_msn: None,
        };
        let established = match rtr {
            Some(kind) => {
                self.state = RState::Rtr(Box::new(RtrWait {
                    reader: FpduReader::new(crc),
                    kind,
                    est,
                    read: None,
                }));
                None
            }
            None => {
                self.state = RState::Done;
                Some(est)
            }
        };
        Ok(Accepted { reply, established })
    }

    /// Reject the Request: the Reply (R set) to send before closing. Too
    /// much private data leaves the Request pending.
    pub fn reject(&mut self, private_data: &[u8]) -> Result<Vec<u8>, SetupError> {
        let req = self.decision()?;
        let enhanced = req.ird_ord.is_some();
        check_pd(private_data.len(), enhanced)?;
        let mut frame = reply_frame(req.revision, enhanced);
        frame.reject = true;
        frame.private_data = private_data;
        let reply = encode_frame(&frame);
        self.state = RState::Done;
        Ok(reply)
    }

    /// The caller's timer for the current stage expired: the final error.
    pub fn timed_out(&mut self) -> SetupError {
        let s = self.stage();
        self.fail(SetupError::Timeout(s))
    }

    /// The stream ended during the current stage: the final error.
    pub fn closed(&mut self) -> SetupError {
        let s = self.stage();
        self.fail(SetupError::Closed(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::iwarp::wire::{ReadRequest, MPA_KEY_REPLY, MPA_KEY_REQUEST};

    fn icfg() -> InitiatorConfig {
        InitiatorConfig {
            private_data: Vec::new(),
            crc_requested: false,
            ird: 2,
            ord: 3,
            ack_reads_wanted: true,
            max_pd_in: MAX_PD_IN,
            max_fpdu: 65535,
        }
    }

    fn rcfg() -> ResponderConfig {
        ResponderConfig {
            crc_requested: false,
            max_pd_in: MAX_PD_IN,
            max_fpdu: 1460,
        }
    }

    fn acfg() -> AcceptConfig {
        AcceptConfig {
            private_data: Vec::new(),
            ird: 5,
            ord: 1,
            ack_reads_wanted: true,
        }
    }

    /// Feed `bytes` whole or one byte per call until an event; returns the
    /// bytes consumed and the event.
    fn drive<E>(
        mut feed: impl FnMut(&[u8]) -> Result<Progress<E>, SetupError>,
        bytes: &[u8],
        bytewise: bool,
    ) -> Result<(usize, Option<E>), SetupError> {
        let mut at = 0;
        loop {
            let end = if bytewise {
                (at + 1).min(bytes.len())
            } else {
                bytes.len()
            };
            let p = feed(&bytes[at..end])?;
            at += p.consumed;
            if p.event.is_some() || p.consumed == 0 || at == bytes.len() {
                return Ok((at, p.event));
            }
        }
    }

    /// A hand-written setup frame.
    fn frame(key: &[u8; 16], flags: u8, rev: u8, pd: &[u8]) -> Vec<u8> {
        let mut v = key.to_vec();
        v.push(flags);
        v.push(rev);
        v.extend_from_slice(&(pd.len() as u16).to_be_bytes());
        v.extend_from_slice(pd);
        v
    }

    fn word(io: IrdOrd) -> Vec<u8> {
        io.encode().unwrap().to_vec()
    }

    fn header_of(bytes: &[u8], crc: bool) -> (Header, usize) {
        let mut r = FpduReader::new(crc);
        let mut at = 0;
        let mut hdr = None;
        loop {
            let f = r.feed(&bytes[at..]).unwrap();
            at += f.consumed;
            match f.event {
                Some(RxEvent::Segment(s)) => hdr = Some(s.header),
                Some(RxEvent::Done) => return (hdr.unwrap(), at),
                None => assert!(f.consumed > 0, "FPDU incomplete"),
            }
        }
    }

    struct Pair {
        i: Established,
        r: Established,
        reply: Vec<u8>,
    }

    const AFTER: &[u8] = b"\x00\x12next FPDU bytes";

    /// Full exchange; checks that neither side consumes the bytes that
    /// follow its frame.
    fn back_to_back(ic: InitiatorConfig, rc: ResponderConfig, ac: AcceptConfig, bw: bool) -> Pair {
        let mut ini = Initiator::new(ic.clone()).unwrap();
        let mut resp = Responder::new(rc);
        let req = ini.request().to_vec();
        let (n, ev) = drive(|b| resp.feed(b), &req, bw).unwrap();
        assert_eq!(n, req.len());
        let Some(ResponderEvent::Request(r)) = ev else {
            panic!("no request: {ev:?}")
        };
        assert_eq!(r.private_data, ic.private_data);
        assert_eq!(r.revision, 2);
        assert_eq!(r.crc, ic.crc_requested);
        let acc = resp.accept(ac).unwrap();
        let mut stream = acc.reply.clone();
        stream.extend_from_slice(AFTER);
        let (n, ev) = drive(|b| ini.feed(b), &stream, bw).unwrap();
        assert_eq!(n, acc.reply.len(), "initiator consumed past the Reply");
        let Some(InitiatorEvent::Established(i)) = ev else {
            panic!("not established: {ev:?}")
        };
        let r = match acc.established {
            Some(r) => {
                assert!(i.tx.is_empty());
                r
            }
            None => {
                assert!(!i.tx.is_empty());
                let mut s = i.tx.clone();
                s.extend_from_slice(AFTER);
                let (n, ev) = drive(|b| resp.feed(b), &s, bw).unwrap();
                assert_eq!(n, i.tx.len(), "responder consumed past the RTR");
                let Some(ResponderEvent::Established(r)) = ev else {
                    panic!("responder not established: {ev:?}")
                };
                r
            }
        };
        assert_eq!(resp.feed(b"x"), Err(SetupError::WrongState(Stage::Done)));
        assert_eq!(ini.feed(b"x"), Err(SetupError::WrongState(Stage::Done)));
        Pair {
            i,
            r,
            reply: acc.reply,
        }
    }

    #[test]
    fn request_wire_format_is_rev2_enhanced_p2p_write_rtr() {
        let mut c = icfg();
        c.private_data = b"abc".to_vec();
        c.crc_requested = true;
        let ini = Initiator::new(c).unwrap();
        let r = ini.request();
        assert_eq!(&r[..16], &MPA_KEY_REQUEST);
        assert_eq!(r[16], 0x50);
        assert_eq!(r[17], 2);
        assert_eq!(&r[18..20], &[0, 7]);
        // IRD = 2 + 1, ORD = 3 + 1 (ack read), peer-to-peer, Write RTR.
        assert_eq!(&r[20..24], &[0x80, 3, 0x80, 4]);
        assert_eq!(&r[24..], b"abc");
    }

    #[test]
    fn back_to_back_crc_on_when_either_side_asks() {
        for bw in [false, true] {
            for (ci, cr) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut ic = icfg();
                ic.crc_requested = ci;
                let mut rc = rcfg();
                rc.crc_requested = cr;
                let p = back_to_back(ic, rc, acfg(), bw);
                assert_eq!(p.i.negotiated.crc, ci || cr);
                assert_eq!(p.r.negotiated.crc, ci || cr);
                assert_eq!(p.reply[16] & 0x40 != 0, ci || cr);
                assert_eq!(p.reply[16] & 0x10, 0x10);
                assert_eq!(p.i.negotiated.max_fpdu, 65535);
                assert_eq!(p.r.negotiated.max_fpdu, 1460);
                assert!(!p.r.hold_tx_until_first_rx);
                assert!(!p.i.hold_tx_until_first_rx);
                // The RTR is a zero-length RDMA Write with the agreed CRC.
                let (h, len) = header_of(&p.i.tx, ci || cr);
                assert_eq!(len, p.i.tx.len());
                assert_eq!(h.ulp, Ulp::RdmaWrite { stag: 0, to: 0 });
                assert!(h.last);
                assert!(p.r.tx.is_empty());
                assert_eq!(p.r.read_rtr_msn, None);
            }
        }
    }

    #[test]
    fn private_data_both_ways_at_0_1_and_max() {
        for bw in [false, true] {
            for len in [0, 1, CONSUMER_PD_MAX_ENHANCED] {
                let mut ic = icfg();
                ic.private_data = (0..len).map(|i| i as u8).collect();
                let mut ac = acfg();
                ac.private_data = (0..len).map(|i| !(i as u8)).collect();
                let p = back_to_back(ic.clone(), rcfg(), ac.clone(), bw);
                assert_eq!(p.i.private_data, ac.private_data);
                assert_eq!(p.r.private_data, ic.private_data);
                assert_eq!(p.reply.len(), 20 + 4 + len);
            }
        }
    }

    #[test]
    fn private_data_over_limit_is_an_invalid_parameter() {
        let mut ic = icfg();
        ic.private_data = vec![0; CONSUMER_PD_MAX_ENHANCED + 1];
        let e = Initiator::new(ic).unwrap_err();
        assert_eq!(e, SetupError::PrivateDataTooLong { len: 253, max: 252 });
        assert!(e.is_invalid_parameter());

        let ini = Initiator::new(icfg()).unwrap();
        let mut resp = Responder::new(rcfg());
        resp.feed(ini.request()).unwrap();
        let mut ac = acfg();
        ac.private_data = vec![0; 253];
        assert!(resp.accept(ac).unwrap_err().is_invalid_parameter());
        assert!(resp.reject(&[0; 253]).unwrap_err().is_invalid_parameter());
        // The request is still pending.
        assert!(resp.accept(acfg()).is_ok());

        // Without H (revision 1) the consumer gets all 256 bytes.
        let mut resp = Responder::new(rcfg());
        resp.feed(&frame(&MPA_KEY_REQUEST, 0, 1, b"")).unwrap();
        let mut ac = acfg();
        ac.private_data = vec![7; 257];
        assert_eq!(
            resp.accept(ac.clone()),
            Err(SetupError::PrivateDataTooLong { len: 257, max: 256 })
        );
        ac.private_data.pop();
        assert_eq!(resp.accept(ac).unwrap().reply.len(), 20 + 256);
    }

    #[test]
    fn reject_carries_private_data_to_the_initiator() {
        for bw in [false, true] {
            let mut ini = Initiator::new(icfg()).unwrap();
            let mut resp = Responder::new(rcfg());
            resp.feed(ini.request()).unwrap();
            let reply = resp.reject(b"go away").unwrap();
            assert_eq!(reply[16], 0x30, "R and mirrored H");
            assert_eq!(reply[17], 2);
            assert_eq!(
                resp.accept(acfg()),
                Err(SetupError::WrongState(Stage::Done))
            );
            let (n, ev) = drive(|b| ini.feed(b), &reply, bw).unwrap();
            assert_eq!(n, reply.len());
            assert_eq!(
                ev,
                Some(InitiatorEvent::Rejected {
                    private_data: b"go away".to_vec()
                })
            );
        }
    }

    #[test]
    fn request_with_markers_is_answered_by_a_reject_reply() {
        let ini = Initiator::new(icfg()).unwrap();
        let mut req = ini.request().to_vec();
        req[16] |= 0x80;
        let mut resp = Responder::new(rcfg());
        let p = resp.feed(&req).unwrap();
        assert_eq!(p.consumed, req.len());
        let Some(ResponderEvent::Refused { reply, reason }) = p.event else {
            panic!("{:?}", p.event)
        };
        assert_eq!(reason, SetupError::Mpa(MpaError::Markers { revision: 2 }));
        assert_eq!(reply[16] & 0x20, 0x20);
        assert_eq!(resp.feed(b""), Err(reason));
        let mut ini = Initiator::new(icfg()).unwrap();
        let ev = ini.feed(&reply).unwrap().event;
        assert!(matches!(ev, Some(InitiatorEvent::Rejected { .. })));
    }

    #[test]
    fn reply_with_markers_is_refused() {
        let mut ini = Initiator::new(icfg()).unwrap();
        let reply = frame(&MPA_KEY_REPLY, 0x80, 1, b"");
        assert_eq!(
            ini.feed(&reply),
            Err(SetupError::Mpa(MpaError::Markers { revision: 1 }))
        );
    }

    #[test]
    fn ird_ord_negotiation_with_ack_read_credit() {
        // Initiator: consumer IRD 2 / ORD 3 → advertises 3 / 4.
        // Responder: consumer IRD 5 / ORD 1 → advertises 6 / min(2, 3).
        let p = back_to_back(icfg(), rcfg(), acfg(), false);
        let (i, r) = (p.i.negotiated, p.r.negotiated);
        assert_eq!((i.ird, i.ord, i.ack_reads), (3, 4, true));
        assert_eq!((r.ird, r.ord, r.ack_reads), (6, 2, true));
        let io = p.i.peer_ird_ord.unwrap();
        assert_eq!((io.ird, io.ord), (6, 2));
        assert!(io.peer_to_peer && io.rtr.rdma_write && !io.rtr.rdma_read);
        let io = p.r.peer_ird_ord.unwrap();
        assert_eq!((io.ird, io.ord), (3, 4));
    }

    #[test]
    fn ack_reads_off_when_not_wanted() {
        let mut ic = icfg();
        ic.ack_reads_wanted = false;
        let mut ac = acfg();
        ac.ack_reads_wanted = false;
        let p = back_to_back(ic, rcfg(), ac, false);
        assert_eq!(p.i.negotiated.ord, 3);
        assert_eq!(p.r.negotiated.ord, 1);
        assert!(!p.i.negotiated.ack_reads && !p.r.negotiated.ack_reads);
    }

    #[test]
    fn ack_reads_off_when_peer_grants_no_extra_ird() {
        // Responder side: the initiator's IRD (2 + 1 = 3) leaves no room
        // beyond the responder's consumer ORD 3.
        let mut ac = acfg();
        ac.ord = 3;
        let p = back_to_back(icfg(), rcfg(), ac, false);
        assert_eq!(p.r.negotiated.ord, 3);
        assert!(!p.r.negotiated.ack_reads);

        // Initiator side: a Reply granting IRD = consumer ORD exactly.
        let mut ini = Initiator::new(icfg()).unwrap();
        let io = IrdOrd {
            ird: 3,
            ord: 1,
            peer_to_peer: true,
            rtr: RtrFlags {
                rdma_write: true,
                ..RtrFlags::default()
            },
        };
        let reply = frame(&MPA_KEY_REPLY, 0x10, 2, &word(io));
        let Some(InitiatorEvent::Established(e)) = ini.feed(&reply).unwrap().event else {
            panic!()
        };
        assert_eq!((e.negotiated.ord, e.negotiated.ack_reads), (3, false));
        assert!(!e.tx.is_empty());
    }

    #[test]
    fn ird_ord_clamped_at_device_max() {
        let mut ic = icfg();
        ic.ird = 1000;
        ic.ord = u32::MAX;
        let ini = Initiator::new(ic).unwrap();
        assert_eq!(&ini.request()[20..24], &[0x80, 128, 0x80, 128]);
        let mut resp = Responder::new(rcfg());
        resp.feed(ini.request()).unwrap();
        let mut ac = acfg();
        ac.ird = 500;
        ac.ord = 127;
        let acc = resp.accept(ac).unwrap();
        let io = IrdOrd::decode([acc.reply[20], acc.reply[21], acc.reply[22], acc.reply[23]]);
        assert_eq!((io.ird, io.ord), (128, 128));
    }

    #[test]
    fn reply_ord_above_our_ird_is_refused() {
        let mut ini = Initiator::new(icfg()).unwrap();
        let io = IrdOrd {
            ird: 8,
            ord: 4,
            ..IrdOrd::default()
        };
        let reply = frame(&MPA_KEY_REPLY, 0x10, 2, &word(io));
        assert_eq!(
            ini.feed(&reply),
            Err(SetupError::PeerOrdAboveOurIrd {
                peer_ord: 4,
                our_ird: 3
            })
        );
    }

    #[test]
    fn reply_picking_an_rtr_not_offered_is_refused() {
        let mut ini = Initiator::new(icfg()).unwrap();
        let io = IrdOrd {
            ird: 8,
            ord: 1,
            peer_to_peer: true,
            rtr: RtrFlags {
                rdma_read: true,
                ..RtrFlags::default()
            },
        };
        let reply = frame(&MPA_KEY_REPLY, 0x10, 2, &word(io));
        assert_eq!(ini.feed(&reply), Err(SetupError::RtrNotOffered(io.rtr)));
    }

    #[test]
    fn rev2_reply_without_p2p_means_no_rtr() {
        let mut ini = Initiator::new(icfg()).unwrap();
        let io = IrdOrd {
            ird: 8,
            ord: 1,
            ..IrdOrd::default()
        };
        let reply = frame(&MPA_KEY_REPLY, 0x10, 2, &word(io));
        let Some(InitiatorEvent::Established(e)) = ini.feed(&reply).unwrap().event else {
            panic!()
        };
        assert!(e.tx.is_empty());
        assert!(e.negotiated.ack_reads);
    }

    #[test]
    fn revision1_reply_means_no_rtr_no_ird_ord_no_ack_reads() {
        for bw in [false, true] {
            let mut ini = Initiator::new(icfg()).unwrap();
            let mut s = frame(&MPA_KEY_REPLY, 0x40, 1, b"rev1");
            let len = s.len();
            s.extend_from_slice(AFTER);
            let (n, ev) = drive(|b| ini.feed(b), &s, bw).unwrap();
            assert_eq!(n, len);
            let Some(InitiatorEvent::Established(e)) = ev else {
                panic!()
            };
            assert!(e.tx.is_empty());
            assert_eq!(e.peer_ird_ord, None);
            assert_eq!(e.revision, 1);
            assert_eq!(e.private_data, b"rev1");
            let n = e.negotiated;
            assert!(n.crc);
            assert_eq!((n.ird, n.ord, n.ack_reads), (2, 3, false));
        }
    }

    #[test]
    fn revision1_request_gets_revision1_reply_and_tx_hold() {
        for rev in [0, 1] {
            let mut resp = Responder::new(rcfg());
            let req = frame(&MPA_KEY_REQUEST, 0, rev, b"old");
            let Some(ResponderEvent::Request(r)) = resp.feed(&req).unwrap().event else {
                panic!()
            };
            assert_eq!((r.revision, r.crc, r.ird_ord), (rev, false, None));
            assert_eq!(r.private_data, b"old");
            let mut ac = acfg();
            ac.private_data = b"ok".to_vec();
            let acc = resp.accept(ac).unwrap();
            assert_eq!(acc.reply, frame(&MPA_KEY_REPLY, 0, rev, b"ok"));
            let e = acc.established.unwrap();
            assert!(e.hold_tx_until_first_rx);
            assert!(!e.negotiated.ack_reads);
            assert_eq!(e.negotiated.ord, 1);
        }
    }

    #[test]
    fn request_without_rtr_gets_tx_hold() {
        // Revision 2 with H but no peer-to-peer (as siw sends).
        let io = IrdOrd {
            ird: 1,
            ord: 1,
            ..IrdOrd::default()
        };
        let mut resp = Responder::new(rcfg());
        resp.feed(&frame(&MPA_KEY_REQUEST, 0x10, 2, &word(io)))
            .unwrap();
        let acc = resp.accept(acfg()).unwrap();
        let e = acc.established.unwrap();
        assert!(e.hold_tx_until_first_rx);
        let got = IrdOrd::decode([acc.reply[20], acc.reply[21], acc.reply[22], acc.reply[23]]);
        assert!(!got.peer_to_peer);
        // Our ORD (1 + 1) is bounded by the initiator's IRD 1: no ack reads.
        assert_eq!((got.ird, got.ord), (6, 1));
        assert!(!e.negotiated.ack_reads);
    }

    #[test]
    fn send_only_rtr_offer_is_answered_without_p2p() {
        let io = IrdOrd {
            ird: 4,
            ord: 4,
            peer_to_peer: true,
            rtr: RtrFlags {
                zero_length_send: true,
                ..RtrFlags::default()
            },
        };
        let mut resp = Responder::new(rcfg());
        resp.feed(&frame(&MPA_KEY_REQUEST, 0x10, 2, &word(io)))
            .unwrap();
        let acc = resp.accept(acfg()).unwrap();
        assert_eq!(&acc.reply[20..24], &[0, 6, 0, 2]);
        assert!(acc.established.unwrap().hold_tx_until_first_rx);
    }

    #[test]
    fn read_rtr_is_consumed_and_answered_with_a_zero_length_read_response() {
        for crc in [false, true] {
            let io = IrdOrd {
                ird: 4,
                ord: 4,
                peer_to_peer: true,
                rtr: RtrFlags {
                    rdma_read: true,
                    ..RtrFlags::default()
                },
            };
            let mut resp = Responder::new(rcfg());
            let flags = 0x10 | if crc { 0x40 } else { 0 };
            resp.feed(&frame(&MPA_KEY_REQUEST, flags, 2, &word(io)))
                .unwrap();
            let acc = resp.accept(acfg()).unwrap();
            assert!(acc.established.is_none());
            assert_eq!(&acc.reply[20..24], &[0x80, 6, 0x40, 2]);
            let rr = Header::new(
                Ulp::ReadRequest {
                    msn: 1,
                    mo: 0,
                    req: ReadRequest {
                        sink_stag: 0x1234,
                        sink_to: 0x10,
                        size: 0,
                        source_stag: 0,
                        source_to: 0,
                    },
                },
                true,
            );
            let mut s = encode_rtr(&rr, crc).unwrap();
            let len = s.len();
            s.extend_from_slice(AFTER);
            let (n, ev) = drive(|b| resp.feed(b), &s, true).unwrap();
            assert_eq!(n, len);
            let Some(ResponderEvent::Established(e)) = ev else {
                panic!()
            };
            assert_eq!(e.read_rtr_msn, Some(1));
            assert!(!e.hold_tx_until_first_rx);
            let (h, l) = header_of(&e.tx, crc);
            assert_eq!(l, e.tx.len());
            assert_eq!(
                h.ulp,
                Ulp::ReadResponse {
                    stag: 0x1234,
                    to: 0x10
                }
            );
        }
    }

    fn responder_awaiting_write_rtr() -> Responder {
        let ini = Initiator::new(icfg()).unwrap();
        let mut resp = Responder::new(rcfg());
        resp.feed(ini.request()).unwrap();
        assert!(resp.accept(acfg()).unwrap().established.is_none());
        resp
    }

    #[test]
    fn anything_but_the_agreed_rtr_is_refused() {
        let send = Header::new(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        );
        let mut resp = responder_awaiting_write_rtr();
        assert_eq!(
            resp.feed(&encode_rtr(&send, false).unwrap()),
            Err(SetupError::UnexpectedRtr {
                opcode: Opcode::Send,
                payload_len: 0
            })
        );
        assert!(resp.feed(b"").is_err());

        let mut resp = responder_awaiting_write_rtr();
        let w = Header::new(Ulp::RdmaWrite { stag: 1, to: 0 }, true);
        let mut buf = [0u8; 64];
        let n = wire::encode_fpdu(&w, b"data", false, &mut buf).unwrap();
        assert_eq!(
            resp.feed(&buf[..n]),
            Err(SetupError::UnexpectedRtr {
                opcode: Opcode::RdmaWrite,
                payload_len: 4
            })
        );

        // A CRC mismatch (the Request asked for CRC).
        let mut ic = icfg();
        ic.crc_requested = true;
        let ini = Initiator::new(ic).unwrap();
        let mut resp = Responder::new(rcfg());
        resp.feed(ini.request()).unwrap();
        resp.accept(acfg()).unwrap();
        let mut rtr = rtr_write(true).unwrap();
        *rtr.last_mut().unwrap() ^= 1;
        assert!(matches!(
            resp.feed(&rtr),
            Err(SetupError::Fpdu(FpduError::Crc { .. }))
        ));
    }

    #[test]
    fn rtr_consumed_exactly_leaving_the_next_fpdu() {
        let mut ic = icfg();
        ic.crc_requested = true;
        let p = back_to_back(ic.clone(), rcfg(), acfg(), false);
        let mut resp = Responder::new(rcfg());
        let ini = Initiator::new(ic).unwrap();
        resp.feed(ini.request()).unwrap();
        resp.accept(acfg()).unwrap();
        let send = Header::new(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        );
        let mut next = [0u8; 64];
        let n = wire::encode_fpdu(&send, b"hello", true, &mut next).unwrap();
        let mut s = p.i.tx.clone();
        s.extend_from_slice(&next[..n]);
        let pr = resp.feed(&s).unwrap();
        assert_eq!(pr.consumed, p.i.tx.len());
        assert!(matches!(pr.event, Some(ResponderEvent::Established(_))));
        let (h, l) = header_of(&s[pr.consumed..], true);
        assert_eq!(l, n);
        assert_eq!(h, send);
    }

    #[test]
    fn bytes_before_the_decision_are_left_alone() {
        let ini = Initiator::new(icfg()).unwrap();
        let mut s = ini.request().to_vec();
        let len = s.len();
        s.extend_from_slice(AFTER);
        let mut resp = Responder::new(rcfg());
        assert_eq!(resp.feed(&s).unwrap().consumed, len);
        assert_eq!(resp.feed(AFTER).unwrap().consumed, 0);
    }

    #[test]
    fn garbage_wrong_key_revision3_oversized_and_h_without_rev2_are_refused() {
        let http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let mut resp = Responder::new(rcfg());
        assert_eq!(resp.feed(http), Err(SetupError::Mpa(MpaError::BadKey)));
        assert_eq!(resp.feed(b"MPA"), Err(SetupError::Mpa(MpaError::BadKey)));
        let mut ini = Initiator::new(icfg()).unwrap();
        assert_eq!(ini.feed(http), Err(SetupError::Mpa(MpaError::BadKey)));
        assert_eq!(ini.feed(&[0; 40]), Err(SetupError::Mpa(MpaError::BadKey)));

        let mut resp = Responder::new(rcfg());
        assert_eq!(
            resp.feed(&frame(&MPA_KEY_REPLY, 0, 1, b"")),
            Err(SetupError::Mpa(MpaError::UnexpectedKey(MpaKind::Reply)))
        );
        let mut ini = Initiator::new(icfg()).unwrap();
        assert_eq!(
            ini.feed(&frame(&MPA_KEY_REQUEST, 0, 1, b"")),
            Err(SetupError::Mpa(MpaError::UnexpectedKey(MpaKind::Request)))
        );

        let mut ini = Initiator::new(icfg()).unwrap();
        assert_eq!(
            ini.feed(&frame(&MPA_KEY_REPLY, 0, 3, b"")),
            Err(SetupError::Mpa(MpaError::UnsupportedRevision(3)))
        );
        let mut resp = Responder::new(rcfg());
        assert_eq!(
            resp.feed(&frame(&MPA_KEY_REQUEST, 0, 3, b"")),
            Err(SetupError::Mpa(MpaError::UnsupportedRevision(3)))
        );

        let mut ic = icfg();
        ic.max_pd_in = 64;
        let mut ini = Initiator::new(ic).unwrap();
        assert_eq!(
            ini.feed(&frame(&MPA_KEY_REPLY, 0x10, 2, &[0; 65])),
            Err(SetupError::Mpa(MpaError::PrivateDataTooLong {
                len: 65,
                max: 64
            }))
        );
        let mut resp = Responder::new(rcfg());
        let mut huge = frame(&MPA_KEY_REQUEST, 0, 1, b"");
        huge[18..20].copy_from_slice(&600u16.to_be_bytes());
        assert_eq!(
            resp.feed(&huge),
            Err(SetupError::Mpa(MpaError::PrivateDataTooLong {
                len: 600,
                max: 512
            }))
        );

        let mut ini = Initiator::new(icfg()).unwrap();
        assert_eq!(
            ini.feed(&frame(&MPA_KEY_REPLY, 0x10, 1, &[0; 4])),
            Err(SetupError::Mpa(MpaError::EnhancedNeedsRevision2 {
                revision: 1
            }))
        );
        let mut resp = Responder::new(rcfg());
        assert_eq!(
            resp.feed(&frame(&MPA_KEY_REQUEST, 0x10, 2, &[0; 2])),
            Err(SetupError::Mpa(MpaError::EnhancedTooShort { len: 2 }))
        );
    }

    #[test]
    fn truncated_frames_end_in_closed() {
        let mut ini = Initiator::new(icfg()).unwrap();
        let reply = frame(&MPA_KEY_REPLY, 0, 1, b"private");
        let p = ini.feed(&reply[..reply.len() - 1]).unwrap();
        assert_eq!((p.consumed, p.event), (reply.len() - 1, None));
        assert_eq!(ini.closed(), SetupError::Closed(Stage::Reply));
        assert_eq!(
            ini.feed(&reply[reply.len() - 1..]),
            Err(SetupError::Closed(Stage::Reply))
        );

        let mut resp = Responder::new(rcfg());
        resp.feed(&MPA_KEY_REQUEST[..10]).unwrap();
        assert_eq!(resp.closed(), SetupError::Closed(Stage::Request));

        let mut resp = responder_awaiting_write_rtr();
        resp.feed(&rtr_write(false).unwrap()[..5]).unwrap();
        assert_eq!(resp.closed(), SetupError::Closed(Stage::Rtr));
    }

    #[test]
    fn timeouts_name_the_stage_and_are_final() {
        assert_eq!(REPLY_TIMEOUT, Duration::from_secs(10));
        assert_eq!(REQUEST_TIMEOUT, Duration::from_secs(5));
        let mut ini = Initiator::new(icfg()).unwrap();
        assert_eq!(ini.timed_out(), SetupError::Timeout(Stage::Reply));
        assert_eq!(
            ini.feed(&frame(&MPA_KEY_REPLY, 0, 1, b"")),
            Err(SetupError::Timeout(Stage::Reply))
        );

        let mut resp = Responder::new(rcfg());
        assert_eq!(resp.timed_out(), SetupError::Timeout(Stage::Request));
        assert_eq!(resp.feed(b"MPA"), Err(SetupError::Timeout(Stage::Request)));

        let mut resp = Responder::new(rcfg());
        resp.feed(Initiator::new(icfg()).unwrap().request())
            .unwrap();
        assert_eq!(resp.timed_out(), SetupError::Timeout(Stage::Decision));
        assert_eq!(
            resp.accept(acfg()),
            Err(SetupError::Timeout(Stage::Decision))
        );

        let mut resp = responder_awaiting_write_rtr();
        assert_eq!(resp.timed_out(), SetupError::Timeout(Stage::Rtr));
        assert_eq!(
            resp.feed(&rtr_write(false).unwrap()),
            Err(SetupError::Timeout(Stage::Rtr))
        );
    }

    #[test]
    fn calls_out_of_order_are_refused_without_effect() {
        let mut resp = Responder::new(rcfg());
        assert_eq!(
            resp.accept(acfg()),
            Err(SetupError::WrongState(Stage::Request))
        );
        assert_eq!(
            resp.reject(b""),
            Err(SetupError::WrongState(Stage::Request))
        );
        let mut resp = responder_awaiting_write_rtr();
        assert_eq!(resp.accept(acfg()), Err(SetupError::WrongState(Stage::Rtr)));
        let p = resp.feed(&rtr_write(false).unwrap()).unwrap();
        assert!(matches!(p.event, Some(ResponderEvent::Established(_))));
    }
}
