//! MPA connection setup (RFC 5044 / RFC 6581) on an already-connected TCP
//! byte stream, without I/O: the caller moves the bytes and runs the clock.
//! An [`Initiator`] and a [`Responder`] are fed the stream and say what to
//! send and when the connection is established (with its `Negotiated`
//! parameters), refused or failed.
//!
//! Invariants: bytes after the MPA frames are never consumed (they belong
//! to the FPDU stream); no clocks here, the caller arms the timeouts and
//! reports expiry. How to drive it, and its decisions: docs/wire.md.

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
mod tests;
