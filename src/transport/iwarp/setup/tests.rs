//! Connection setup's tests: both engines fed by each other, every
//! refusal and timeout.

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
