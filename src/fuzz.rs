//! Fuzz entry points: everything a peer or a dat.conf file controls, fed
//! arbitrary bytes. `fuzz/` runs them under libFuzzer (`make fuzz`);
//! `tests/fuzz_corpus.rs` replays the committed corpus through them on
//! stable Rust. An entry panics only on a bug: a decoder that panics, or
//! that breaks its own contract (consumes more than it was given, reports a
//! header longer than its input, forgets a final error).
//!
//! The first input byte steers the parsers (configuration, and how the rest
//! is cut into `feed` calls, so that incremental parsers see every split).
#![doc(hidden)]

use crate::registry::conf;
use crate::transport::iwarp::setup::{
    self, AcceptConfig, Initiator, InitiatorConfig, Responder, ResponderConfig, ResponderEvent,
};
use crate::transport::iwarp::wire::{
    self, FpduReader, Header, MpaConfig, MpaKind, MpaParser, MpaStatus, ReadRequest, RxEvent,
    TermLayout, Terminate, Ulp,
};

/// A fuzz entry point.
pub type Target = fn(&[u8]);

/// Every target, by name (the names of `fuzz/fuzz_targets/` and of the
/// corpus directories).
pub const TARGETS: &[(&str, Target)] = &[
    ("mpa", mpa),
    ("setup", setup_engine),
    ("fpdu", fpdu),
    ("ddp", ddp),
    ("terminate", terminate),
    ("conf", conf_file),
];

/// The steering byte and the rest, cut into pieces of 1 to 16 bytes (the
/// byte's high nibble + 1), or whole when its bit 3 is set.
fn split(data: &[u8]) -> Option<(u8, Vec<&[u8]>)> {
    let (&ctl, rest) = data.split_first()?;
    let pieces = if ctl & 0x08 != 0 {
        vec![rest]
    } else {
        rest.chunks(usize::from(ctl >> 4) + 1).collect()
    };
    Some((ctl, pieces))
}

/// The MPA Request/Reply parser.
pub fn mpa(data: &[u8]) {
    let Some((ctl, pieces)) = split(data) else {
        return;
    };
    let mut cfg = MpaConfig::new(if ctl & 1 != 0 {
        MpaKind::Request
    } else {
        MpaKind::Reply
    });
    cfg.accept_markers = ctl & 2 != 0;
    if ctl & 4 != 0 {
        cfg.max_private_data = 64;
    }
    let mut p = MpaParser::new(cfg);
    for piece in pieces {
        match p.feed(piece) {
            Ok(fed) => {
                assert!(fed.consumed <= piece.len(), "consumed more than given");
                if let MpaStatus::Frame(f) = fed.status {
                    assert!(f.pd_len() <= usize::from(cfg.max_private_data).max(512));
                    assert!(f.encoded_len() >= f.pd_len());
                    // A complete frame consumes nothing more.
                    let again = p.feed(piece).expect("a complete frame stays complete");
                    assert_eq!(again.consumed, 0);
                    return;
                }
            }
            Err(e) => {
                assert_eq!(p.feed(piece).err(), Some(e), "an error is final");
                return;
            }
        }
    }
}

/// The connection setup engines: a responder (Request, then accept and
/// the RTR) or an initiator (Reply, RTR rules), fed the peer's bytes.
pub fn setup_engine(data: &[u8]) {
    let Some((ctl, pieces)) = split(data) else {
        return;
    };
    let crc = ctl & 2 != 0;
    if ctl & 1 != 0 {
        let mut r = Responder::new(ResponderConfig {
            crc_requested: crc,
            max_pd_in: 512,
            max_fpdu: 65_535,
        });
        for piece in pieces {
            let mut rest = piece;
            while !rest.is_empty() {
                let Ok(p) = r.feed(rest) else { return };
                assert!(p.consumed <= rest.len(), "consumed more than given");
                rest = &rest[p.consumed..];
                match p.event {
                    Some(ResponderEvent::Request(_)) => {
                        let accepted = r.accept(AcceptConfig {
                            private_data: b"fuzz".to_vec(),
                            ird: 4,
                            ord: 4,
                            ack_reads_wanted: ctl & 4 != 0,
                        });
                        match accepted {
                            Ok(a) if a.established.is_some() => return,
                            Ok(_) => {}
                            Err(_) => return,
                        }
                    }
                    Some(_) => return,
                    None if p.consumed == 0 => break,
                    None => {}
                }
            }
        }
    } else {
        let Ok(mut i) = Initiator::new(InitiatorConfig {
            private_data: b"fuzz".to_vec(),
            crc_requested: crc,
            ird: 4,
            ord: 4,
            ack_reads_wanted: ctl & 4 != 0,
            max_pd_in: 512,
            max_fpdu: 65_535,
        }) else {
            panic!("a valid initiator configuration was refused");
        };
        for piece in pieces {
            let Ok(p) = i.feed(piece) else { return };
            assert!(p.consumed <= piece.len(), "consumed more than given");
            if p.event.is_some() {
                return;
            }
        }
    }
}

/// The FPDU reader (MPA framing, DDP/RDMAP headers, pad, CRC), with the
/// payload taken as placed.
pub fn fpdu(data: &[u8]) {
    let Some((ctl, pieces)) = split(data) else {
        return;
    };
    let mut r = if ctl & 4 != 0 {
        FpduReader::with_max_ulpdu(ctl & 1 != 0, 1024)
    } else {
        FpduReader::new(ctl & 1 != 0)
    };
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            let fed = match r.feed(rest) {
                Ok(f) => f,
                Err(e) => {
                    assert_eq!(r.feed(rest).err(), Some(e), "an error is final");
                    return;
                }
            };
            assert!(fed.consumed <= rest.len(), "consumed more than given");
            if let Some(RxEvent::Segment(s)) = fed.event {
                assert!(s.payload_len <= usize::from(s.ulpdu_len));
            }
            if fed.consumed == 0 && fed.event.is_none() {
                break;
            }
            rest = &rest[fed.consumed..];
        }
    }
}

/// DDP/RDMAP headers and the Read Request body, decoded and encoded back.
pub fn ddp(data: &[u8]) {
    if let Ok((h, n)) = Header::decode(data) {
        assert!(n <= data.len(), "a header longer than its input");
        assert_eq!(n, h.ulp.header_len());
        let mut out = [0u8; wire::MAX_HDR_LEN];
        assert_eq!(h.encode(&mut out), n);
        let (again, m) = Header::decode(&out[..n]).expect("an encoded header decodes");
        assert_eq!(m, n);
        assert_eq!(again.ulp, h.ulp);
        if let Ulp::ReadRequest { req, .. } = h.ulp {
            let mut b = [0u8; wire::READ_REQUEST_LEN];
            req.encode(&mut b);
            assert_eq!(ReadRequest::decode(&b), Some(req));
        }
    }
    if let Some(req) = ReadRequest::decode(data) {
        let mut b = [0u8; wire::READ_REQUEST_LEN];
        req.encode(&mut b);
        assert_eq!(ReadRequest::decode(&b), Some(req));
    }
}

/// Terminate bodies, in both control-word layouts and guessed.
pub fn terminate(data: &[u8]) {
    for (_, n) in [
        Terminate::decode(data),
        Terminate::decode_as(data, TermLayout::Rfc),
        Terminate::decode_as(data, TermLayout::SiwLittleEndian),
    ]
    .into_iter()
    .flatten()
    {
        assert!(n <= data.len(), "a Terminate longer than its input");
    }
}

/// A dat.conf file, and the built-in provider's instance data of each of
/// its lines (and of the whole input as one).
pub fn conf_file(data: &[u8]) {
    let (entries, _) = conf::parse(data);
    for e in &entries {
        let _ = conf::parse_builtin_params(&e.instance_data);
        let _ = crate::registry::builtin_device(&conf::parse_builtin_params(&e.instance_data));
    }
    let _ = conf::parse_builtin_params(&String::from_utf8_lossy(data));
}

/// Valid inputs for each target, built by the encoders (the seed corpus):
/// (target, steering byte + bytes).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let with = |ctl: u8, bytes: &[u8]| [&[ctl][..], bytes].concat();
    let mut out = Vec::new();
    let init = |crc: bool| {
        Initiator::new(InitiatorConfig {
            private_data: b"seed".to_vec(),
            crc_requested: crc,
            ird: 4,
            ord: 4,
            ack_reads_wanted: true,
            max_pd_in: 512,
            max_fpdu: 65_535,
        })
        .expect("initiator")
    };
    for crc in [false, true] {
        let request = init(crc).request().to_vec();
        // The responder's Reply to it, and the RTR that follows.
        let mut r = Responder::new(ResponderConfig {
            crc_requested: crc,
            max_pd_in: 512,
            max_fpdu: 65_535,
        });
        let _ = r.feed(&request);
        let reply = r
            .accept(AcceptConfig {
                private_data: b"seed".to_vec(),
                ird: 4,
                ord: 4,
                ack_reads_wanted: true,
            })
            .map(|a| a.reply)
            .unwrap_or_default();
        let rtr = setup::rtr_write(crc).unwrap_or_default();
        let c = u8::from(crc) << 1;
        out.push(("mpa", with(0x09, &request)));
        out.push(("mpa", with(0x38, &reply)));
        out.push((
            "setup",
            with(0x09 | c, &[request.as_slice(), &rtr].concat()),
        ));
        out.push(("setup", with(0x18 | c, &reply)));
        // FPDUs: a Send, an RDMA Write, a Read Request, a Terminate.
        let req = ReadRequest {
            sink_stag: 0x100,
            sink_to: 0x2000,
            size: 64,
            source_stag: 0x200,
            source_to: 0x3000,
        };
        let mut body = [0u8; wire::READ_REQUEST_LEN];
        req.encode(&mut body);
        let headers = [
            (
                Ulp::Send {
                    msn: 1,
                    mo: 0,
                    solicited: false,
                    invalidate: None,
                },
                &b"hello, fuzz"[..],
            ),
            (Ulp::RdmaWrite { stag: 0x100, to: 8 }, &b"written"[..]),
            (Ulp::ReadRequest { msn: 1, mo: 0, req }, &[][..]),
            (
                Ulp::Terminate { msn: 1, mo: 0 },
                &[0x10, 0x01, 0x00, 0x00][..],
            ),
        ];
        for (ulp, payload) in headers {
            let h = Header::new(ulp, true);
            let mut f = vec![0u8; 2 + wire::MAX_HDR_LEN + payload.len() + 3 + wire::CRC_LEN];
            if let Ok(n) = wire::encode_fpdu(&h, payload, crc, &mut f) {
                f.truncate(n);
                out.push(("fpdu", with(0x08 | u8::from(crc), &f)));
                out.push(("fpdu", with(0x20 | u8::from(crc), &f)));
                let mut hb = [0u8; wire::MAX_HDR_LEN];
                let hn = h.encode(&mut hb);
                out.push(("ddp", [&hb[..hn], payload].concat()));
            }
        }
    }
    out.push(("terminate", vec![0x10, 0x01, 0xc0, 0x00, 0x00, 0x12]));
    out.push(("terminate", vec![0x01, 0x01, 0x07, 0x00]));
    out.push(("conf", include_bytes!("../dat.conf.example").to_vec()));
    out.push((
        "conf",
        b"OpenIB-cma u1.2 nonthreadsafe default libdat.so.1 dapl.1.2 \"ib0 0\" \"\"\n\
          x u1.2 threadsafe default builtin udapl.1.2 \"crc=on ack=local fpdu=mss keepalive=5,1,3\" \"\"\n"
            .to_vec(),
    ));
    out
}
