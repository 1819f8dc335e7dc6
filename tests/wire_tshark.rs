//! Wire conformance of the iWARP codec (`udapl::transport::iwarp::wire`)
//! against an independent implementation: Wireshark's `iwarp_mpa` and
//! `iwarp_ddp_rdmap` dissectors, run as `tshark`.
//!
//! The codec builds the frames of three connections (MPA Request/Reply with
//! the RFC 6581 IRD/ORD word, then FPDUs of every RDMAP kind; CRC on, CRC
//! off, and a connection of Terminate layouts peers use). Two ways to get
//! them into a capture file:
//! - `synthetic_pcap_decodes`: a pcap file written by the harness (needs no
//!   capture privilege; runs whenever tshark is installed);
//! - `live_loopback_capture_decodes`: real TCP connections on 127.0.0.1,
//!   each frame written with one `write()`, captured with `tshark -i lo`
//!   (skipped when this machine does not allow capturing).
//!
//! Both decode the file with tshark and assert, frame by frame, what the
//! dissectors show against what the codec meant, and that the whole decode
//! has no malformed packet and no warning beyond the dissector's known
//! pre-RFC 6581 complaints (see `tests/common/tshark.rs`).
//!
//! Set `UDAPL_KEEP_PCAP=1` to keep the capture files (their directory is
//! printed), e.g. to open them in Wireshark.

mod common {
    pub mod tshark;
}

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::time::Instant;

use common::tshark::{
    self, CrcView, Decoded, FpduView, Iwarp, MpaView, Placement, ReadRequestView, TerminateView,
    ALLOWED_EXPERT, CHECKSUM_ARGS,
};
use udapl::transport::iwarp::wire::{
    crc32c_of, encode_fpdu, fpdu_pad, DdpUntagged, FpduReader, FpduTx, Header, IrdOrd, MpaConfig,
    MpaFrame, MpaKind, MpaParser, MpaStatus, RdmapProtection, ReadRequest, RtrFlags, RxEvent,
    TermError, TermLayout, Terminate, Ulp, QN_READ_REQUEST, QN_SEND, QN_TERMINATE, TAGGED_HDR_LEN,
    UNTAGGED_HDR_LEN,
};

// ───────────────────────────── the frames ─────────────────────────────

/// What the codec meant by a frame.
#[derive(Clone, Debug)]
enum Expect {
    Mpa {
        kind: MpaKind,
        crc: bool,
        ird_ord: IrdOrd,
        private_data: Vec<u8>,
    },
    Fpdu {
        header: Header,
        payload_len: usize,
        crc: bool,
        term: Option<TermSent>,
    },
}

/// A Terminate body as the codec built it.
#[derive(Clone, Debug)]
struct TermSent {
    error: TermError,
    layout: TermLayout,
    m: bool,
    d: bool,
    r: bool,
    segment_len: Option<u16>,
    ddp_header: Option<Vec<u8>>,
    rdmap_header: Option<Vec<u8>>,
    body: Vec<u8>,
}

/// One frame, written by one side with a single `write()`.
#[derive(Clone, Debug)]
struct Frame {
    from_client: bool,
    bytes: Vec<u8>,
    expect: Expect,
    what: String,
}

/// The frames of one TCP connection.
struct Conn {
    name: &'static str,
    crc: bool,
    frames: Vec<Frame>,
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

const IRD_ORD: IrdOrd = IrdOrd {
    ird: 4,
    ord: 4,
    peer_to_peer: true,
    rtr: RtrFlags {
        zero_length_send: false,
        rdma_write: true,
        rdma_read: false,
    },
};

fn mpa_frame(kind: MpaKind, crc: bool, pd: &[u8], what: &str) -> Frame {
    let mut f = MpaFrame::new(kind, 2);
    f.crc = crc;
    f.ird_ord = Some(IRD_ORD);
    f.private_data = pd;
    let mut buf = vec![0u8; f.encoded_len()];
    let n = f.encode(&mut buf).expect("encode MPA frame");
    buf.truncate(n);
    Frame {
        from_client: kind == MpaKind::Request,
        bytes: buf,
        expect: Expect::Mpa {
            kind,
            crc,
            ird_ord: IRD_ORD,
            private_data: pd.to_vec(),
        },
        what: what.into(),
    }
}

fn fpdu_frame(from_client: bool, header: Header, payload: &[u8], crc: bool, what: &str) -> Frame {
    let mut buf = vec![0u8; 2 + header.header_len() + payload.len() + 3 + 4];
    let n = encode_fpdu(&header, payload, crc, &mut buf).expect("encode FPDU");
    buf.truncate(n);
    Frame {
        from_client,
        bytes: buf,
        expect: Expect::Fpdu {
            header,
            payload_len: payload.len(),
            crc,
            term: None,
        },
        what: what.into(),
    }
}

/// An FPDU built the transport's copy-free way: head, payload pieces (one
/// with its CRC computed elsewhere), trailer; concatenated for one write.
fn fpdu_frame_pieces(
    from_client: bool,
    header: Header,
    payload: &[u8],
    crc: bool,
    what: &str,
) -> Frame {
    let mut tx = FpduTx::new(&header, payload.len(), crc).expect("FpduTx");
    let mut bytes = tx.head().to_vec();
    let (a, b) = payload.split_at(payload.len() / 3);
    tx.payload(a).unwrap();
    tx.payload_crc(b.len(), crc32c_of(b)).unwrap();
    bytes.extend_from_slice(payload);
    bytes.extend_from_slice(tx.trailer().unwrap());
    let reference = fpdu_frame(from_client, header, payload, crc, what);
    assert_eq!(bytes, reference.bytes, "FpduTx and encode_fpdu disagree");
    Frame { bytes, ..reference }
}

fn terminate_frame(msn: u32, t: &Terminate<'_>, crc: bool, what: &str) -> Frame {
    let mut body = vec![0u8; t.encoded_len()];
    let n = t.encode(&mut body).expect("encode Terminate");
    body.truncate(n);
    let header = Header::new(Ulp::Terminate { msn, mo: 0 }, true);
    let mut f = fpdu_frame(false, header, &body, crc, what);
    let Expect::Fpdu { term, .. } = &mut f.expect else {
        unreachable!()
    };
    *term = Some(TermSent {
        error: t.error,
        layout: t.layout,
        m: t.length_valid,
        d: t.ddp_header.is_some(),
        r: t.rdmap_header.is_some(),
        segment_len: t.segment_len,
        ddp_header: t.ddp_header.map(<[u8]>::to_vec),
        rdmap_header: t.rdmap_header.map(<[u8]>::to_vec),
        body,
    });
    f
}

/// The DDP header bytes of a segment (for Terminates naming it).
fn ddp_header_of(frame: &Frame, len: usize) -> Vec<u8> {
    frame.bytes[2..2 + len].to_vec()
}

fn by_name<'a>(frames: &'a [Frame], what: &str) -> &'a Frame {
    frames.iter().find(|f| f.what == what).expect(what)
}

fn ulpdu_len_of(frame: &Frame) -> u16 {
    u16::from_be_bytes([frame.bytes[0], frame.bytes[1]])
}

fn setup(crc: bool) -> Vec<Frame> {
    vec![
        mpa_frame(MpaKind::Request, crc, b"abc", "MPA Request"),
        mpa_frame(MpaKind::Reply, crc, b"reply!", "MPA Reply"),
        fpdu_frame(
            true,
            Header::new(Ulp::RdmaWrite { stag: 0, to: 0 }, true),
            &[],
            crc,
            "RTR: zero-length RDMA Write",
        ),
    ]
}

const WRITE_STAG: u32 = 0x8765_4321;
const WRITE_TO: u64 = 0x0000_7f12_3456_7000;
const SINK_STAG: u32 = 0x1111_2222;
const SINK_TO: u64 = 0x0000_1000_2000_3000;
const SOURCE_STAG: u32 = 0x3333_4444;
const SOURCE_TO: u64 = 0x0000_5000_6000_7000;

/// Every RDMAP message kind, then a Terminate (whose kind depends on `crc`
/// so that both connections carry a different one).
fn operations(crc: bool) -> Vec<Frame> {
    let mut v = setup(crc);
    // RDMA Write in three segments (pads 0, 3 and 2), L on the last only.
    let mut to = WRITE_TO;
    let sizes = [1000usize, 513, 30];
    for (i, &n) in sizes.iter().enumerate() {
        let last = i + 1 == sizes.len();
        let h = Header::new(
            Ulp::RdmaWrite {
                stag: WRITE_STAG,
                to,
            },
            last,
        );
        let what = format!("RDMA Write segment {}/{}", i + 1, sizes.len());
        let payload = pattern(n, i as u8);
        v.push(if i == 0 {
            fpdu_frame_pieces(true, h, &payload, crc, &what)
        } else {
            fpdu_frame(true, h, &payload, crc, &what)
        });
        to += n as u64;
    }
    let send = |msn, mo, solicited, last| {
        Header::new(
            Ulp::Send {
                msn,
                mo,
                solicited,
                invalidate: None,
            },
            last,
        )
    };
    v.push(fpdu_frame(
        true,
        send(1, 0, false, true),
        &pattern(10, 7),
        crc,
        "Send MSN 1",
    ));
    v.push(fpdu_frame(
        true,
        send(2, 0, false, false),
        &pattern(40, 8),
        crc,
        "Send MSN 2 segment 1/2",
    ));
    v.push(fpdu_frame(
        true,
        send(2, 40, false, true),
        &pattern(7, 9),
        crc,
        "Send MSN 2 segment 2/2",
    ));
    v.push(fpdu_frame(
        true,
        send(3, 0, true, true),
        &pattern(1, 10),
        crc,
        "Send with SE MSN 3",
    ));
    let rreq = |msn, size| {
        Header::new(
            Ulp::ReadRequest {
                msn,
                mo: 0,
                req: ReadRequest {
                    sink_stag: SINK_STAG,
                    sink_to: SINK_TO,
                    size,
                    source_stag: SOURCE_STAG,
                    source_to: SOURCE_TO,
                },
            },
            true,
        )
    };
    let rresp = Header::new(
        Ulp::ReadResponse {
            stag: SINK_STAG,
            to: SINK_TO,
        },
        true,
    );
    v.push(fpdu_frame(
        true,
        rreq(1, 64),
        &[],
        crc,
        "Read Request MSN 1 (64 bytes)",
    ));
    v.push(fpdu_frame(
        false,
        rresp,
        &pattern(64, 11),
        crc,
        "Read Response (64 bytes)",
    ));
    v.push(fpdu_frame(
        true,
        rreq(2, 0),
        &[],
        crc,
        "zero-length Read Request MSN 2",
    ));
    v.push(fpdu_frame(
        false,
        rresp,
        &[],
        crc,
        "zero-length Read Response",
    ));
    v.push(fpdu_frame(
        false,
        send(1, 0, false, true),
        &pattern(4, 12),
        crc,
        "responder's Send MSN 1",
    ));
    let term = if crc {
        // Remote protection error: invalid STag, naming RDMA Write segment 2.
        let seg = by_name(&v, "RDMA Write segment 2/3");
        let hdr = ddp_header_of(seg, TAGGED_HDR_LEN);
        let t = Terminate::with_segment(
            TermError::RdmapProtection(RdmapProtection::InvalidStag),
            ulpdu_len_of(seg),
            &hdr,
            None,
        );
        terminate_frame(1, &t, crc, "Terminate: RDMAP invalid STag (RDMA Write)")
    } else {
        // DDP untagged buffer error: no buffer, naming the Send with SE.
        let seg = by_name(&v, "Send with SE MSN 3");
        let hdr = ddp_header_of(seg, UNTAGGED_HDR_LEN);
        let t = Terminate::with_segment(
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
            ulpdu_len_of(seg),
            &hdr,
            None,
        );
        terminate_frame(1, &t, crc, "Terminate: DDP no buffer (Send with SE)")
    };
    v.push(term);
    v
}

/// Terminates naming a Read Request (DDP and RDMAP headers), and one in the
/// control-word layout Linux `siw` sends from a little-endian host.
fn terminates() -> Vec<Frame> {
    let crc = true;
    let mut v = setup(crc);
    let rreq = Header::new(
        Ulp::ReadRequest {
            msn: 1,
            mo: 0,
            req: ReadRequest {
                sink_stag: SINK_STAG,
                sink_to: SINK_TO,
                size: 4096,
                source_stag: 0xDEAD_BEEF,
                source_to: SOURCE_TO,
            },
        },
        true,
    );
    v.push(fpdu_frame(
        true,
        rreq,
        &[],
        crc,
        "Read Request MSN 1 (bad source STag)",
    ));
    let seg = by_name(&v, "Read Request MSN 1 (bad source STag)").clone();
    let ddp = ddp_header_of(&seg, UNTAGGED_HDR_LEN);
    let rdmap = seg.bytes[2 + UNTAGGED_HDR_LEN..2 + UNTAGGED_HDR_LEN + 28].to_vec();
    let t = Terminate::with_segment(
        TermError::RdmapProtection(RdmapProtection::InvalidStag),
        ulpdu_len_of(&seg),
        &ddp,
        Some(&rdmap),
    );
    v.push(terminate_frame(
        1,
        &t,
        crc,
        "Terminate: RDMAP invalid STag (Read Request, D+R)",
    ));
    let write = fpdu_frame(
        true,
        Header::new(
            Ulp::RdmaWrite {
                stag: WRITE_STAG,
                to: WRITE_TO,
            },
            true,
        ),
        &pattern(8, 1),
        crc,
        "RDMA Write",
    );
    let hdr = ddp_header_of(&write, TAGGED_HDR_LEN);
    let len = ulpdu_len_of(&write);
    v.push(write);
    let mut t = Terminate::with_segment(
        TermError::RdmapProtection(RdmapProtection::InvalidStag),
        len,
        &hdr,
        None,
    );
    t.layout = TermLayout::SiwLittleEndian;
    v.push(terminate_frame(
        2,
        &t,
        crc,
        "Terminate in siw's little-endian layout",
    ));
    v
}

fn connections() -> Vec<Conn> {
    vec![
        Conn {
            name: "CRC on",
            crc: true,
            frames: operations(true),
        },
        Conn {
            name: "CRC off",
            crc: false,
            frames: operations(false),
        },
        Conn {
            name: "Terminate layouts",
            crc: true,
            frames: terminates(),
        },
    ]
}

// ───────────────────────── receiving with the codec ─────────────────────────

/// The receiving side decodes what it read with the codec itself.
fn codec_receives(frame: &Frame, crc: bool) {
    match &frame.expect {
        Expect::Mpa { kind, .. } => {
            let mut p = MpaParser::new(MpaConfig::new(*kind));
            let fed = p.feed(&frame.bytes).expect("codec parses its MPA frame");
            assert_eq!(fed.consumed, frame.bytes.len());
            let MpaStatus::Frame(f) = fed.status else {
                panic!("incomplete MPA frame")
            };
            assert_eq!(f.ird_ord, Some(IRD_ORD));
        }
        Expect::Fpdu { header, .. } => {
            let mut r = FpduReader::new(crc);
            let mut at = 0;
            let mut done = false;
            while at < frame.bytes.len() {
                let fed = r.feed(&frame.bytes[at..]).expect("codec reads its FPDU");
                at += fed.consumed;
                match fed.event {
                    Some(RxEvent::Segment(s)) => assert_eq!(s.header, *header),
                    Some(RxEvent::Done) => done = true,
                    None => {}
                }
            }
            assert!(done, "{}: FPDU not complete", frame.what);
        }
    }
}

// ───────────────────────────── checking tshark ─────────────────────────────

/// How tshark (RFC 5040 reading: layer in the high nibble of byte 0, type
/// in the low one, M/D/R the top bits of byte 2) shows a Terminate body,
/// and which headers it takes: the DDP header is 14 bytes when the error
/// type is 1, else 18 (Wireshark's rule, not the header's T bit).
fn tshark_reading(body: &[u8]) -> (u8, u8, u8, bool, bool, bool, u16, usize) {
    let (w0, w1, w2, w3) = (body[0], body[1], body[2], body[3]);
    let etype = w0 & 0xF;
    let ddp_len = if etype == 1 {
        TAGGED_HDR_LEN
    } else {
        UNTAGGED_HDR_LEN
    };
    (
        w0 >> 4,
        etype,
        w1,
        w2 & 0x80 != 0,
        w2 & 0x40 != 0,
        w2 & 0x20 != 0,
        (u16::from(w2 & 0x1F) << 8) | u16::from(w3),
        ddp_len,
    )
}

fn check_mpa(
    v: &MpaView,
    kind: MpaKind,
    crc: bool,
    ird_ord: &IrdOrd,
    pd: &[u8],
    got_kind: MpaKind,
    err: &mut Vec<String>,
) {
    let mut e = |ok: bool, msg: String| {
        if !ok {
            err.push(msg);
        }
    };
    e(
        got_kind == kind,
        format!("decoded as {got_kind:?}, sent {kind:?}"),
    );
    e(!v.markers, "M set".into());
    e(v.crc == crc, format!("C = {}, sent {crc}", v.crc));
    e(!v.reject, "R set".into());
    e(
        v.reserved == 0x10,
        format!("flags low bits {:#x}, want H = 0x10", v.reserved),
    );
    e(v.revision == 2, format!("revision {}", v.revision));
    e(
        usize::from(v.pd_len) == 4 + pd.len(),
        format!("private data length {}, want {}", v.pd_len, 4 + pd.len()),
    );
    e(
        v.private_data.len() == 4 + pd.len() && v.private_data[4..] == *pd,
        format!("private data {:02x?}", v.private_data),
    );
    e(
        v.ird_ord().as_ref() == Some(ird_ord),
        format!("IRD/ORD {:?}, want {ird_ord:?}", v.ird_ord()),
    );
}

fn check_fpdu(
    v: &FpduView,
    header: &Header,
    payload_len: usize,
    crc: bool,
    term: Option<&TermSent>,
    err: &mut Vec<String>,
) {
    let mut e = |ok: bool, msg: String| {
        if !ok {
            err.push(msg);
        }
    };
    let ulpdu = header.header_len() + payload_len;
    e(
        usize::from(v.ulpdu_len) == ulpdu,
        format!("ULPDU length {}, want {ulpdu}", v.ulpdu_len),
    );
    e(
        v.pad_len == fpdu_pad(ulpdu),
        format!("pad {} bytes, want {}", v.pad_len, fpdu_pad(ulpdu)),
    );
    if crc {
        e(
            matches!(v.crc, CrcView::Good(_)),
            format!("CRC {:?}, want Good", v.crc),
        );
    } else {
        e(
            v.crc == CrcView::Unchecked(0),
            format!("CRC {:?}, want unchecked zeros", v.crc),
        );
    }
    let op = header.ulp.opcode();
    e(v.ddp_version == 1, format!("DDP version {}", v.ddp_version));
    e(
        v.rdmap_version == 1,
        format!("RDMAP version {}", v.rdmap_version),
    );
    e(
        v.opcode == op as u8,
        format!("opcode {} ({}), want {:?}", v.opcode, v.opcode_name, op),
    );
    e(v.tagged == op.tagged(), format!("T = {}", v.tagged));
    e(
        v.last == header.last,
        format!("L = {}, want {}", v.last, header.last),
    );
    let want = match header.ulp {
        Ulp::RdmaWrite { stag, to } | Ulp::ReadResponse { stag, to } => {
            Placement::Tagged { stag, to }
        }
        Ulp::Send { msn, mo, .. } => Placement::Untagged {
            qn: QN_SEND,
            msn,
            mo,
        },
        Ulp::ReadRequest { msn, mo, .. } => Placement::Untagged {
            qn: QN_READ_REQUEST,
            msn,
            mo,
        },
        Ulp::Terminate { msn, mo } => Placement::Untagged {
            qn: QN_TERMINATE,
            msn,
            mo,
        },
    };
    e(
        v.placement == Some(want),
        format!("placement {:?}, want {want:?}", v.placement),
    );
    if let Ulp::ReadRequest { req, .. } = header.ulp {
        let want = ReadRequestView {
            sink_stag: req.sink_stag,
            sink_to: req.sink_to,
            size: req.size,
            source_stag: req.source_stag,
            source_to: req.source_to,
        };
        e(
            v.read_request == Some(want),
            format!("Read Request {:?}, want {want:?}", v.read_request),
        );
    } else {
        e(
            v.read_request.is_none(),
            "unexpected Read Request header".into(),
        );
    }
    match (term, &v.terminate) {
        (None, None) => {}
        (Some(t), Some(tv)) => check_terminate(tv, t, err),
        (t, tv) => err.push(format!("Terminate sent {t:?}, decoded {tv:?}")),
    }
}

fn check_terminate(v: &TerminateView, t: &TermSent, err: &mut Vec<String>) {
    let (layer, etype, code, m, d, r, reserved, ddp_len) = tshark_reading(&t.body);
    let mut e = |ok: bool, msg: String| {
        if !ok {
            err.push(msg);
        }
    };
    // What tshark shows must be its reading of the bytes…
    let shown = (v.layer, v.etype, v.code, v.m, v.d, v.r, v.reserved);
    e(
        shown == (layer, etype, code, m, d, r, reserved),
        format!(
            "Terminate control shown as {shown:?}, bytes read {:?}",
            (layer, etype, code, m, d, r, reserved)
        ),
    );
    // …and, in the RFC layout, exactly what the codec meant.
    if t.layout == TermLayout::Rfc {
        let (l, ty, c) = t.error.raw();
        e(
            (v.layer, v.etype, v.code) == (l, ty, c),
            format!(
                "Terminate error shown {:?}, sent {:?}",
                (v.layer, v.etype, v.code),
                (l, ty, c)
            ),
        );
        e(
            (v.m, v.d, v.r) == (t.m, t.d, t.r),
            format!(
                "Terminate M/D/R shown {:?}, sent {:?}",
                (v.m, v.d, v.r),
                (t.m, t.d, t.r)
            ),
        );
        e(
            v.reserved == 0,
            format!("Terminate reserved {:#x}", v.reserved),
        );
    }
    if d {
        let seg = t.body[4..6].to_vec();
        e(
            v.segment_len.as_deref() == Some(&seg[..]),
            format!("segment length {:02x?}, want {seg:02x?}", v.segment_len),
        );
        if t.layout == TermLayout::Rfc {
            e(
                seg == t.segment_len.unwrap().to_be_bytes(),
                "segment length bytes".into(),
            );
        }
        let want = t.body[6..6 + ddp_len].to_vec();
        e(
            v.ddp_header.as_deref() == Some(&want[..]),
            format!(
                "terminated DDP header {:02x?}, want {want:02x?}",
                v.ddp_header
            ),
        );
        let ours = t.ddp_header.as_deref().unwrap();
        e(
            t.body[6..6 + ours.len()] == *ours,
            "codec's DDP header not after the segment length".into(),
        );
    } else {
        e(
            v.segment_len.is_none() && v.ddp_header.is_none(),
            "headers shown without D".into(),
        );
    }
    if r {
        let at = 6 + ddp_len;
        let want = t.body[at..at + 28].to_vec();
        e(
            v.rdmap_header.as_deref() == Some(&want[..]),
            format!(
                "terminated RDMAP header {:02x?}, want {want:02x?}",
                v.rdmap_header
            ),
        );
        let ours = t.rdmap_header.as_deref().unwrap();
        let at = 6 + t.ddp_header.as_ref().unwrap().len();
        e(
            t.body[at..at + 28] == *ours,
            "codec's RDMAP header misplaced".into(),
        );
    } else {
        e(
            v.rdmap_header.is_none(),
            "RDMAP header shown without R".into(),
        );
    }
}

/// Match the decoded TCP data segments to the frames, in order, and check
/// each; then the whole decode for problems. Returns the disagreements and
/// a report of the Terminates as tshark shows them.
fn check_decode(decoded: &Decoded, conns: &[Conn], source: &str) -> (Vec<String>, Vec<String>) {
    let frames: Vec<(&Conn, &Frame)> = conns
        .iter()
        .flat_map(|c| c.frames.iter().map(move |f| (c, f)))
        .collect();
    let data: Vec<_> = decoded.tcp_data().collect();
    let mut errors = Vec::new();
    let mut report = Vec::new();
    if data.len() != frames.len() {
        errors.push(format!(
            "{} TCP data segments, {} frames sent (each frame must be one segment)",
            data.len(),
            frames.len()
        ));
    }
    for (p, (conn, frame)) in data.iter().zip(&frames) {
        let mut err = Vec::new();
        let payload = p.tcp_payload().unwrap_or_default();
        if payload != frame.bytes {
            err.push(format!(
                "segment holds {} bytes, not the frame's {}",
                payload.len(),
                frame.bytes.len()
            ));
        }
        let views = p.iwarp();
        match (&frame.expect, views.as_slice()) {
            (
                Expect::Mpa {
                    kind,
                    crc,
                    ird_ord,
                    private_data,
                },
                [Iwarp::Request(v)] | [Iwarp::Reply(v)],
            ) => {
                let got = if matches!(views[0], Iwarp::Request(_)) {
                    MpaKind::Request
                } else {
                    MpaKind::Reply
                };
                check_mpa(v, *kind, *crc, ird_ord, private_data, got, &mut err);
            }
            (
                Expect::Fpdu {
                    header,
                    payload_len,
                    crc,
                    term,
                },
                [Iwarp::Fpdu(v)],
            ) => {
                check_fpdu(v, header, *payload_len, *crc, term.as_ref(), &mut err);
                if let (Some(t), Some(tv)) = (term, &v.terminate) {
                    report.push(format!(
                        "{source}: {}: bytes {:02x?} shown as layer {:#x} ({}), type {:#x} ({}), code {:#04x} ({}), M/D/R {}/{}/{}, reserved {:#x}, DDP header {} bytes{}",
                        frame.what,
                        &t.body[..4],
                        tv.layer,
                        tv.labels[0],
                        tv.etype,
                        tv.labels[1],
                        tv.code,
                        tv.labels[2],
                        u8::from(tv.m),
                        u8::from(tv.d),
                        u8::from(tv.r),
                        tv.reserved,
                        tv.ddp_header.as_ref().map_or(0, Vec::len),
                        tv.rdmap_header.as_ref().map_or(String::new(), |h| format!(", RDMAP header {} bytes", h.len())),
                    ));
                }
            }
            (_, v) => err.push(format!("decoded as {v:?}")),
        }
        for e in err {
            errors.push(format!(
                "frame {} [{}: {}]: {e}",
                p.number(),
                conn.name,
                frame.what
            ));
        }
    }
    errors.extend(decoded.problems(ALLOWED_EXPERT));
    (errors, report)
}

/// [`check_decode`], failing the test on any disagreement.
fn assert_decode(decoded: &Decoded, conns: &[Conn], source: &str) -> Vec<String> {
    let (errors, report) = check_decode(decoded, conns, source);
    assert!(
        errors.is_empty(),
        "{source}: tshark disagrees with the codec:\n  {}",
        errors.join("\n  ")
    );
    report
}

// ───────────────────────────── the tests ─────────────────────────────

fn tshark_or_skip(test: &str) -> Option<std::path::PathBuf> {
    match tshark::find_tshark() {
        Ok(t) => Some(t),
        Err(why) => {
            tshark::skip(test, &why);
            None
        }
    }
}

/// Write the connections into a pcap file and decode it. Needs only tshark.
#[test]
fn synthetic_pcap_decodes() {
    let Some(ts) = tshark_or_skip("synthetic_pcap_decodes") else {
        return;
    };
    let t0 = Instant::now();
    let conns = connections();
    let dir = tshark::TempDir::new("wire-tshark");
    let file = dir.join("synthetic.pcap");
    for conn in &conns {
        for f in &conn.frames {
            codec_receives(f, conn.crc);
        }
    }
    write_pcap(&conns, &file);
    let decoded = tshark::decode_iwarp(&ts, &file, CHECKSUM_ARGS);
    let report = assert_decode(&decoded, &conns, "synthetic pcap");
    for line in &report {
        println!("{line}");
    }
    println!(
        "synthetic pcap: {} frames decoded as sent by {} in {:?}",
        conns.iter().map(|c| c.frames.len()).sum::<usize>(),
        tshark::tshark_version(&ts),
        t0.elapsed()
    );
}

/// One synthetic TCP conversation per connection, one segment per frame.
fn write_pcap(conns: &[Conn], file: &Path) {
    let mut pcap = tshark::PcapWriter::new();
    for (i, conn) in conns.iter().enumerate() {
        let client = (Ipv4Addr::LOCALHOST, 40001 + i as u16);
        let server = (Ipv4Addr::LOCALHOST, 50000);
        let isn = [0x1000_0000 * (i as u32 + 1), 0x8000_0000 + 7 * i as u32];
        let mut flow = tshark::TcpFlow::connect(&mut pcap, client, server, isn);
        for f in &conn.frames {
            flow.send(&mut pcap, usize::from(!f.from_client), &f.bytes);
        }
        flow.close(&mut pcap);
    }
    pcap.save(file);
}

/// The checks have teeth: frames corrupted the ways a codec could get
/// them wrong are reported.
#[test]
fn synthetic_pcap_catches_corruption() {
    let Some(ts) = tshark_or_skip("synthetic_pcap_catches_corruption") else {
        return;
    };
    let mut conns = connections();
    conns.truncate(2);
    let find = |c: &Conn, what: &str| c.frames.iter().position(|f| f.what == what).unwrap();
    // CRC on: the CRC stored big-endian instead of little-endian.
    let i = find(&conns[0], "Send MSN 1");
    let b = &mut conns[0].frames[i].bytes;
    let n = b.len();
    b[n - 4..].reverse();
    // CRC off: MSN 2 on the wire where the codec meant 1.
    let i = find(&conns[1], "Send MSN 1");
    conns[1].frames[i].bytes[2 + 13] = 2;
    // CRC off: a ULPDU length 4 too long (framing lost).
    let i = find(&conns[1], "Send with SE MSN 3");
    conns[1].frames[i].bytes[1] += 4;
    let dir = tshark::TempDir::new("wire-tshark-bad");
    let file = dir.join("corrupt.pcap");
    write_pcap(&conns, &file);
    let decoded = tshark::decode_iwarp(&ts, &file, CHECKSUM_ARGS);
    let (errors, _) = check_decode(&decoded, &conns, "corrupted pcap");
    let all = errors.join("\n");
    let has = |needle: &str| errors.iter().any(|e| e.contains(needle));
    assert!(has("[CRC on: Send MSN 1]: CRC Bad"), "{all}");
    assert!(has("[CRC off: Send MSN 1]: placement"), "{all}");
    assert!(has("[CRC off: Send with SE MSN 3]"), "{all}");
    println!("corruptions caught:\n  {}", errors.join("\n  "));
}

/// Send the connections over real loopback TCP, capture with tshark,
/// decode. Skips when live capture is not permitted here.
#[test]
fn live_loopback_capture_decodes() {
    let test = "live_loopback_capture_decodes";
    let Some(ts) = tshark_or_skip(test) else {
        return;
    };
    let t0 = Instant::now();
    let conns = connections();
    let dir = tshark::TempDir::new("wire-tshark-live");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen on 127.0.0.1");
    let port = listener.local_addr().unwrap().port();
    let cap = match tshark::LiveCapture::start(&ts, &[port], &dir.join("live.pcapng")) {
        Ok(c) => c,
        Err(why) => {
            tshark::skip(test, &why);
            return;
        }
    };
    for conn in &conns {
        exchange(&listener, conn);
    }
    let file = cap.finish();
    let decoded = tshark::decode_iwarp(&ts, &file, &[]);
    let report = assert_decode(&decoded, &conns, "live capture");
    for line in &report {
        println!("{line}");
    }
    println!(
        "live capture on lo port {port}: {} frames decoded as sent, in {:?}",
        conns.iter().map(|c| c.frames.len()).sum::<usize>(),
        t0.elapsed()
    );
}

/// One connection: each frame with one `write()` (which must take it
/// whole), read in full by the peer before the next is written, so that
/// every frame travels in a TCP segment of its own; then FINs both ways.
fn exchange(listener: &TcpListener, conn: &Conn) {
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).expect("connect");
    let (mut server, _) = listener.accept().expect("accept");
    for s in [&client, &server] {
        s.set_nodelay(true).unwrap();
    }
    for f in &conn.frames {
        let (w, r) = if f.from_client {
            (&mut client, &mut server)
        } else {
            (&mut server, &mut client)
        };
        let n = w.write(&f.bytes).expect("write frame");
        assert_eq!(n, f.bytes.len(), "{}: short write", f.what);
        let mut got = vec![0u8; f.bytes.len()];
        r.read_exact(&mut got).expect("read frame");
        assert_eq!(got, f.bytes, "{}: bytes changed in transit", f.what);
        codec_receives(f, conn.crc);
    }
    client.shutdown(Shutdown::Write).unwrap();
    assert_eq!(tshark::drain(&mut server), 0);
    server.shutdown(Shutdown::Write).unwrap();
    assert_eq!(tshark::drain(&mut client), 0);
}

/// The harness's own pieces, without tshark.
#[test]
fn harness_parsers() {
    let pdml = r#"<pdml><packet><proto name="frame"><field name="frame.number" show="7"/></proto>
<proto name="iwarp_mpa" showname="x"><field name="iwarp_mpa.fpdu" show="" value="">
<field name="iwarp_mpa.ulpdulength" show="14" value="000e"/>
<field name="iwarp_mpa.crc_check" showname="CRC check: 0x1 (Good CRC32)" show="0x00000001" value="00000001"/></field></proto>
<proto name="iwarp_ddp_rdmap"><field name="iwarp_ddp.tagged_flag" show="1"/><field name="iwarp_ddp.last_flag" show="1"/>
<field name="iwarp_ddp.dv" show="1"/><field name="iwarp_ddp.stag" show="0x00000005"/><field name="iwarp_ddp.tagged_offset" show="0x0000000000000010"/>
<field name="iwarp_rdma.version" show="1"/><field name="iwarp_rdma.opcode" showname="OpCode: Write (0x0)" show="0x00"/></proto>
<proto name="_ws.malformed" showname="[Malformed &quot;x&quot; &amp; &lt;y&gt;]"/></packet></pdml>"#;
    let packets = tshark::parse_pdml(pdml);
    assert_eq!(packets.len(), 1);
    let p = &packets[0];
    assert_eq!(p.number(), 7);
    assert_eq!(p.problems(), vec!["[Malformed \"x\" & <y>]".to_string()]);
    let views = p.iwarp();
    let [Iwarp::Fpdu(v)] = views.as_slice() else {
        panic!("{views:?}")
    };
    assert_eq!(v.crc, CrcView::Good(1));
    assert_eq!(v.placement, Some(Placement::Tagged { stag: 5, to: 16 }));
    assert_eq!(v.opcode_name, "Write (0x0)");
    let rows = tshark::parse_expert(
        "\nWarns (2)\n=============\n   Frequency      Group           Protocol  Summary\n           2    Request          IWARP_MPA  Rev field is NOT set to one\n",
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].protocol, "IWARP_MPA");
    assert_eq!(rows[0].summary, "Rev field is NOT set to one");
    assert_eq!(rows[0].count, 2);
}
