//! End-to-end wire conformance of the iWARP device
//! (`udapl::transport::tcp`): two devices on 127.0.0.1 connect
//! and move data of every kind while `tshark -i lo` captures the
//! connection; Wireshark's `iwarp_mpa` / `iwarp_ddp_rdmap` dissectors then
//! decode the capture, and the test checks what they show against what was
//! posted.
//!
//! One session ([`transfers`]): MPA Request and Reply with private data
//! both ways; the initiator's RTR; from the initiator Sends (plain,
//! solicited, zero-length, and one > 64 KiB, several segments), RDMA
//! Writes (small, > 64 KiB, zero-length) and RDMA Reads (small, > 64 KiB,
//! zero-length); from the responder one Send and one Read; the engine's ack
//! reads (a zero-length Read Request behind each signalled Send/Write,
//! answered by a zero-length Read Response); graceful close. Every wait
//! drives both devices' progress, with a deadline.
//!
//! Checked on the decoded capture ([`check_session`]):
//! - the MPA Request and Reply: one each, each in one TCP segment,
//!   revision 2 with H, C as configured, no M/R, the RFC 6581 IRD/ORD word
//!   (peer-to-peer, RDMA Write RTR, IRD/ORD = consumer's + 1), the
//!   consumer's private data after it; the initiator sends no FPDU before
//!   the Reply and the responder none before the RTR;
//! - every FPDU: DDP and RDMAP version 1, a known opcode with the matching
//!   T bit and queue number, pad to 4 bytes, the CRC good (CRC on) or the
//!   field zero (CRC off), no larger than the FPDU limit; untagged
//!   segments: MSN 1, 2, … per queue, MO = the segment's offset in the
//!   message, L on the last segment only; tagged segments: one STag per
//!   message, tagged offset advancing with the data;
//! - the messages of each direction, in order, are exactly the expected
//!   ones (kinds, lengths, STags and offsets, Read Request fields), each
//!   Read Response answers the next Read Request of the other direction
//!   (sink STag, sink offset, size); payload lengths sum to what was
//!   transferred; the TCP bytes of each direction are exactly the MPA
//!   frames plus the FPDUs (nothing undecoded);
//! - no Terminate, a FIN from each side and no RST; no malformed packet and
//!   no expert warning or error beyond the dissector's known pre-RFC 6581
//!   complaints and TCP flow-control notes ([`allowed`]).
//!
//! A second session ([`overlapped`], CRC on) puts operations in flight
//! together both ways (an RDMA Write and a Send from the initiator while
//! the responder reads its memory twice) and checks the same per FPDU, with
//! the order within a direction left free except for what iWARP and the
//! engine promise: the RTR first, no two tagged messages interleaved, Read
//! Responses in the order of the Read Requests, at least one ack read.
//!
//! Setup variants, each with a few transfers both ways: CRC asked for by
//! one side only (used both ways: the Reply's C, good CRCs everywhere),
//! with the largest private data the profile sends (252 consumer bytes);
//! `DeviceOptions::local_completion` on both sides (ORD advertised without
//! the ack read's credit, no ack reads on the wire).
//!
//! Failure paths: a rejected connection (the Reply with R, revision 2 and
//! H mirrored, a zero IRD/ORD word, the consumer's private data, then the
//! responder's FIN; no FPDU); a Send that finds no receive until the
//! responder's RNR time runs out (its Terminate: DDP layer, untagged buffer
//! error, invalid MSN / no buffer available, M and D with the Send's
//! ULPDU length and DDP header, on queue 2 with MSN 1; the responder's FIN
//! after it).
//!
//! Run with CRC off and on (`DeviceOptions::crc`), and once with
//! `DeviceOptions::fpdu_mss` ([`fpdu_mss_fpdus_fit_the_mss`]): FPDUs no
//! larger than the MSS negotiated in the SYNs. That test runs in a private
//! network namespace whose loopback has a 1500-byte MTU when the test runs
//! as root (and checks that the large FPDUs fill the MSS), else on the
//! host's loopback (64 KiB MTU; see [`mss_session`]).
//!
//! Skips (prints `skipped: …` and passes) when tshark is missing or live
//! capture is not permitted. `UDAPL_KEEP_PCAP=1` keeps the capture files.

mod common {
    pub mod netns;
    pub mod qp;
    pub mod tshark;
}

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::netns::Netns;
use common::qp::{
    pattern, poll_one, settle, sge, spin, wait_ev, wait_ok, wait_request, wait_wc, Got, QpOpts,
    Rec, Side, DEADLINE, LO,
};
use common::tshark::{
    self, CrcView, Decoded, FpduView, Iwarp, MpaView, Placement, ReadRequestView, TerminateView,
    Unavailable, ALLOWED_EXPERT,
};
use udapl::transport::api::{Device, MemoryRegion, QpState, SendOp, Sge, Wc, WcOp, WcStatus};
use udapl::transport::iwarp::wire::{IrdOrd, RtrFlags};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

/// The queue pairs' inbound/outbound reads.
const IRD: u32 = 4;
const ORD: u32 = 4;
/// Consumer private data of the Request and of the Reply.
const PD_REQ: &[u8] = b"udapl e2e: connect request";
const PD_REP: &[u8] = b"udapl e2e: accepted";
/// The largest FPDU the device sends by default (16-bit framing).
const MAX_FPDU: usize = 65535;

/// TCP expert items that correct traffic raises here: flow control, which
/// this single-threaded test provokes (one side's receive window fills
/// while the test thread drives the other), and TCP sending a segment
/// twice meanwhile (the byte accounting counts sequence space, so a
/// repeated segment is harmless; tshark does not dissect it again).
const TCP_FLOW: &[(&str, &str, &str)] = &[
    (
        "TCP",
        "TCP window specified by the receiver is now completely full",
        "flow control: the receiver is not being driven at that moment",
    ),
    (
        "TCP",
        "TCP Zero Window segment",
        "flow control: the receiver's buffer is full",
    ),
    (
        "TCP",
        "D-SACK Sequence",
        "the receiver reports a segment it got twice (a probe or retransmission)",
    ),
];

/// The expert items a check tolerates: the dissector's known complaints
/// about correct RFC 6581 setup frames (see `tests/common/tshark.rs`) and
/// [`TCP_FLOW`].
fn allowed() -> Vec<(&'static str, &'static str, &'static str)> {
    ALLOWED_EXPERT.iter().chain(TCP_FLOW).copied().collect()
}

// ───────────────────────────── the expected traffic ─────────────────────────────

/// Direction of a message: initiator → responder or back.
const FWD: usize = 0;
const BACK: usize = 1;

/// A message as the test expects it on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Msg {
    /// The initiator's ready-to-receive: a zero-length RDMA Write naming
    /// STag 0, offset 0.
    Rtr,
    Send {
        solicited: bool,
        len: u64,
    },
    Write {
        stag: u32,
        to: u64,
        len: u64,
    },
    /// A consumer's RDMA Read Request (source = the peer's memory).
    Read {
        size: u32,
        stag: u32,
        to: u64,
    },
    /// The engine's acknowledgement: a zero-length Read Request naming no
    /// memory (source STag 0, offset 0).
    AckRead,
    /// The answer to the other direction's next Read Request.
    ReadResponse {
        len: u64,
    },
    /// A Terminate (RFC 5040 control word) naming an offending segment by
    /// its length and DDP header.
    Terminate {
        layer: u8,
        etype: u8,
        code: u8,
        segment_len: u16,
        ddp_header: Vec<u8>,
    },
}

/// What each direction should carry, in order.
#[derive(Default)]
struct Script {
    msgs: [Vec<Msg>; 2],
    /// The operations overlapped: each direction's messages may come in
    /// any order, except that the RTR comes first and Read Responses
    /// follow the Read Requests' order; between one and the scripted number
    /// of ack reads (the engine sends one per burst), each answered.
    overlapped: bool,
    /// Whether each direction's sender completes Sends and Writes through
    /// ack reads (else locally, `DeviceOptions::local_completion`).
    ack_reads: [bool; 2],
    /// The responder terminated the connection (its Terminate, then its
    /// FIN; the initiator may reset) instead of a graceful close.
    terminated: bool,
}

impl Script {
    /// A signalled Send or Write from `dir`: the message, then (with ack
    /// reads) an ack read that the peer answers with a zero-length response.
    fn acked(&mut self, dir: usize, m: Msg) {
        self.msgs[dir].push(m);
        if self.ack_reads[dir] {
            self.msgs[dir].push(Msg::AckRead);
            self.msgs[1 - dir].push(Msg::ReadResponse { len: 0 });
        }
    }

    fn read(&mut self, dir: usize, m: Msg) {
        let Msg::Read { size, .. } = m else {
            unreachable!()
        };
        self.msgs[dir].push(m);
        self.msgs[1 - dir].push(Msg::ReadResponse {
            len: u64::from(size),
        });
    }

    /// Bytes of Send and RDMA Write payload `dir` carries.
    fn pushed(&self, dir: usize) -> u64 {
        self.msgs[dir]
            .iter()
            .map(|m| match m {
                Msg::Send { len, .. } | Msg::Write { len, .. } => *len,
                _ => 0,
            })
            .sum()
    }

    /// Bytes of Read Response payload `dir` carries.
    fn answered(&self, dir: usize) -> u64 {
        self.msgs[dir]
            .iter()
            .map(|m| match m {
                Msg::ReadResponse { len } => *len,
                _ => 0,
            })
            .sum()
    }
}

// ───────────────────────────── doing the transfers ─────────────────────────────

/// A registered buffer.
struct Buf {
    bytes: Vec<u8>,
    mr: MemoryRegion,
}

impl Buf {
    fn new(side: &Side, bytes: Vec<u8>) -> Buf {
        // A zero-length registration would name a dangling pointer.
        let bytes = if bytes.is_empty() { vec![0] } else { bytes };
        let mr = side.reg(&bytes);
        Buf { bytes, mr }
    }

    /// A scatter list of the first `len` bytes (empty for 0: a zero-length
    /// operation).
    fn sgl(&self, len: usize) -> Vec<Sge> {
        if len == 0 {
            Vec::new()
        } else {
            vec![sge(&self.mr, len)]
        }
    }
}

/// The two ends of the connection and what they have done.
struct Session<'a> {
    /// The two devices, driven by every wait.
    devs: [&'a Arc<IwarpDevice>; 2],
    /// The initiator (active side) and the responder (passive side).
    ends: [&'a Side; 2],
    script: Script,
    next_id: u64,
}

impl Session<'_> {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A Send of `len` bytes from `dir`'s sender into a receive posted by
    /// the peer; data and completions checked.
    fn send(&mut self, dir: usize, len: usize, solicited: bool) {
        let (from, to) = (self.ends[dir], self.ends[1 - dir]);
        let (sid, rid) = (self.id(), self.id());
        let src = Buf::new(from, pattern(len, sid as u8));
        let dst = Buf::new(to, vec![0u8; len + 64]);
        to.post_recv(rid, &dst.sgl(len + 64));
        from.post_send(sid, SendOp::Send { solicited }, &src.sgl(len));
        let what = format!("{len}-byte Send (solicited: {solicited})");
        let r = wait_wc(&self.devs, to.cq(), &format!("receive of the {what}"));
        assert_eq!(
            (r.wr_id, r.status, r.op, r.byte_len, r.solicited),
            (rid, WcStatus::Success, WcOp::Recv, len as u64, solicited),
            "receive of the {what}"
        );
        wait_ok(&self.devs, from.cq(), sid, WcOp::Send, &what);
        assert!(dst.bytes[..len] == src.bytes[..len], "{what}: data");
        assert!(dst.bytes[len..].iter().all(|&b| b == 0), "{what}: overrun");
        self.script.acked(
            dir,
            Msg::Send {
                solicited,
                len: len as u64,
            },
        );
        self.forget(from, &src);
        self.forget(to, &dst);
    }

    /// An RDMA Write of `len` bytes from `dir`'s sender to `offset` in a
    /// buffer of the peer.
    fn write(&mut self, dir: usize, len: usize, offset: usize) {
        let (from, to) = (self.ends[dir], self.ends[1 - dir]);
        let id = self.id();
        let src = Buf::new(from, pattern(len, id as u8));
        let dst = Buf::new(to, vec![0u8; offset + len + 64]);
        let (stag, addr) = (dst.mr.rkey, dst.mr.addr + offset as u64);
        let op = SendOp::RdmaWrite {
            remote_addr: addr,
            rkey: stag,
        };
        from.post_send(id, op, &src.sgl(len));
        let what = format!("{len}-byte RDMA Write");
        wait_ok(&self.devs, from.cq(), id, WcOp::RdmaWrite, &what);
        if !self.script.ack_reads[dir] {
            // Completed when handed to TCP: the placement follows.
            spin(&self.devs, &format!("{what}: placement"), || {
                dst.bytes[offset..offset + len] == src.bytes[..len]
            });
        }
        assert!(
            dst.bytes[offset..offset + len] == src.bytes[..len],
            "{what}: data"
        );
        assert!(
            dst.bytes[..offset]
                .iter()
                .chain(&dst.bytes[offset + len..])
                .all(|&b| b == 0),
            "{what}: bytes outside the target range changed"
        );
        self.script.acked(
            dir,
            Msg::Write {
                stag,
                to: addr,
                len: len as u64,
            },
        );
        self.forget(from, &src);
        self.forget(to, &dst);
    }

    /// An RDMA Read by `dir`'s sender of `len` bytes at `offset` in a buffer
    /// of the peer.
    fn read(&mut self, dir: usize, len: usize, offset: usize) {
        let (from, to) = (self.ends[dir], self.ends[1 - dir]);
        let id = self.id();
        let src = Buf::new(to, pattern(offset + len + 64, id as u8));
        let dst = Buf::new(from, vec![0u8; len + 64]);
        let (stag, addr) = (src.mr.rkey, src.mr.addr + offset as u64);
        let op = SendOp::RdmaRead {
            remote_addr: addr,
            rkey: stag,
        };
        from.post_send(id, op, &dst.sgl(len));
        let what = format!("{len}-byte RDMA Read");
        let n = wait_ok(&self.devs, from.cq(), id, WcOp::RdmaRead, &what);
        assert_eq!(n, len as u64, "{what}: byte count");
        assert!(
            dst.bytes[..len] == src.bytes[offset..offset + len],
            "{what}: data"
        );
        assert!(dst.bytes[len..].iter().all(|&b| b == 0), "{what}: overrun");
        self.script.read(
            dir,
            Msg::Read {
                size: len as u32,
                stag,
                to: addr,
            },
        );
        self.forget(from, &src);
        self.forget(to, &dst);
    }

    /// Deregisters `b`, registered on `side`.
    fn forget(&self, side: &Side, b: &Buf) {
        side.dev.deregister(&b.mr).expect("deregister");
    }
}

/// How a session is set up: each side's device options and the private
/// data of the Request and the Reply.
#[derive(Clone)]
struct Setup {
    opts: [DeviceOptions; 2],
    pd: [Vec<u8>; 2],
}

impl Setup {
    /// Both sides with `opts`, the default private data.
    fn both(opts: DeviceOptions) -> Setup {
        Setup {
            opts: [opts, opts],
            pd: [PD_REQ.to_vec(), PD_REP.to_vec()],
        }
    }

    /// CRC is used on the connection when either side asks for it.
    fn crc(&self) -> bool {
        self.opts[FWD].crc || self.opts[BACK].crc
    }
}

/// What a captured session gives the checks.
struct Captured {
    decoded: Decoded,
    script: Script,
    /// The responder's (listening) port: tells the directions apart.
    port: u16,
    setup: Setup,
}

/// Opens two devices as `setup` says, captures a connection between them on
/// which `work` runs (after setup; a graceful close follows), decodes the
/// capture. `Err` when live capture is not possible here.
fn capture_session(
    ts: &Path,
    setup: &Setup,
    tag: &str,
    work: impl FnOnce(&mut Session<'_>),
) -> Result<Captured, Unavailable> {
    let [pd_req, pd_rep] = &setup.pd;
    let da = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, setup.opts[FWD]);
    let db = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, setup.opts[BACK]);
    let lrec = Arc::new(Rec::default());
    let listener = db.listen(0, lrec.clone()).expect("listen");
    let port = listener.port();
    let dir = tshark::TempDir::new(tag);
    let cap = tshark::LiveCapture::start(ts, &[port], &dir.join("e2e.pcapng"))?;

    let a = Side::one_cq(&da, QpOpts::reads(IRD, ORD));
    let b = Side::one_cq(&db, QpOpts::reads(IRD, ORD));
    let devs = [&da, &db];
    a.qp.connect(SocketAddr::new(LO, 0), port, pd_req, DEADLINE)
        .expect("connect");
    let r = wait_request(&devs, &lrec, "the connect request");
    assert_eq!(&r.private_data, pd_req, "request private data");
    assert_eq!(
        (r.remote.ip(), r.local.ip(), r.local.port()),
        (LO, LO, port)
    );
    db.accept(r.id, &*b.qp, pd_rep).expect("accept");
    assert_eq!(
        wait_ev(&devs, &a.rec, "the initiator's Established"),
        Got::Established(pd_rep.clone())
    );
    assert!(matches!(
        wait_ev(&devs, &b.rec, "the responder's Established"),
        Got::Established(_)
    ));

    let mut s = Session {
        devs,
        ends: [&a, &b],
        script: Script {
            ack_reads: setup.opts.map(|o| !o.local_completion),
            ..Script::default()
        },
        next_id: 0,
    };
    s.script.msgs[FWD].push(Msg::Rtr);
    work(&mut s);

    if !s.script.terminated {
        a.qp.disconnect(true).expect("disconnect");
        assert_eq!(a.rec.take(), vec![Got::Disconnected]);
        assert_eq!(
            wait_ev(&devs, &b.rec, "the responder's Disconnected"),
            Got::Disconnected
        );
    }
    assert_eq!(
        (a.qp.state(), b.qp.state()),
        (QpState::Closed, QpState::Closed)
    );
    // Let the closes finish (a draining side reads its peer's FIN).
    settle(&devs, "both devices idle after the close");
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
    let script = std::mem::take(&mut s.script);
    drop(s);

    let file = cap.finish();
    let decoded = tshark::decode_iwarp(ts, &file, &[]);
    Ok(Captured {
        decoded,
        script,
        port,
        setup: setup.clone(),
    })
}

/// Every kind of transfer, both directions.
fn transfers(s: &mut Session<'_>) {
    s.send(FWD, 100, false);
    s.send(FWD, 33, true);
    s.send(FWD, 0, false);
    s.send(FWD, 150_000, false);
    s.send(BACK, 77, false);
    s.write(FWD, 1000, 8);
    s.write(FWD, 200_001, 3);
    s.write(FWD, 0, 0);
    s.read(FWD, 500, 16);
    s.read(FWD, 200_003, 5);
    s.read(FWD, 0, 0);
    s.read(BACK, 64, 0);
}

/// Operations in flight together, both ways: the initiator's RDMA Write
/// and Send (> 64 KiB each) while the responder reads the initiator's
/// memory twice. The initiator's stream then carries Write, Send and Read
/// Response segments: Sends may come between them, but two tagged messages
/// never interleave, and Read Responses keep the Read Requests' order.
fn overlapped(s: &mut Session<'_>) {
    const W: usize = 200_000;
    const S: usize = 100_000;
    const R1: usize = 150_000;
    const R2: usize = 1000;
    s.script.overlapped = true;
    let (a, b) = (s.ends[FWD], s.ends[BACK]);
    let (w_src, w_dst) = (Buf::new(a, pattern(W, 1)), Buf::new(b, vec![0; W]));
    let (s_src, s_dst) = (Buf::new(a, pattern(S, 2)), Buf::new(b, vec![0; S]));
    let (r1_src, r1_dst) = (Buf::new(a, pattern(R1, 3)), Buf::new(b, vec![0; R1]));
    let (r2_src, r2_dst) = (Buf::new(a, pattern(R2, 4)), Buf::new(b, vec![0; R2]));
    b.post_recv(20, &s_dst.sgl(S));
    let write = SendOp::RdmaWrite {
        remote_addr: w_dst.mr.addr,
        rkey: w_dst.mr.rkey,
    };
    a.post_send(1, write, &w_src.sgl(W));
    a.post_send(2, SendOp::Send { solicited: false }, &s_src.sgl(S));
    let read = |src: &Buf| SendOp::RdmaRead {
        remote_addr: src.mr.addr,
        rkey: src.mr.rkey,
    };
    b.post_send(3, read(&r1_src), &r1_dst.sgl(R1));
    b.post_send(4, read(&r2_src), &r2_dst.sgl(R2));
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    spin(&s.devs, "the overlapped operations' completions", || {
        wa.extend(poll_one(a.cq()));
        wb.extend(poll_one(b.cq()));
        wa.len() == 2 && wb.len() == 3
    });
    let ids = |v: &[Wc]| v.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>();
    assert_eq!(
        ids(&wa),
        [(1, WcStatus::Success), (2, WcStatus::Success)],
        "initiator's completions, in posting order"
    );
    // The responder's reads complete in order; its receive at any point.
    let reads: Vec<_> = wb
        .iter()
        .filter(|w| w.op == WcOp::RdmaRead)
        .copied()
        .collect();
    assert_eq!(
        ids(&reads),
        [(3, WcStatus::Success), (4, WcStatus::Success)]
    );
    let recv = wb.iter().find(|w| w.op == WcOp::Recv).expect("receive");
    assert_eq!(
        (recv.wr_id, recv.status, recv.byte_len),
        (20, WcStatus::Success, S as u64)
    );
    assert!(w_dst.bytes == w_src.bytes, "RDMA Write data");
    assert!(s_dst.bytes == s_src.bytes, "Send data");
    assert!(r1_dst.bytes == r1_src.bytes, "first RDMA Read data");
    assert!(r2_dst.bytes == r2_src.bytes, "second RDMA Read data");
    s.script.acked(
        FWD,
        Msg::Write {
            stag: w_dst.mr.rkey,
            to: w_dst.mr.addr,
            len: W as u64,
        },
    );
    s.script.acked(
        FWD,
        Msg::Send {
            solicited: false,
            len: S as u64,
        },
    );
    for (src, len) in [(&r1_src, R1), (&r2_src, R2)] {
        s.script.read(
            BACK,
            Msg::Read {
                size: len as u32,
                stag: src.mr.rkey,
                to: src.mr.addr,
            },
        );
    }
    for (side, b) in [
        (a, &w_src),
        (b, &w_dst),
        (a, &s_src),
        (b, &s_dst),
        (a, &r1_src),
        (b, &r1_dst),
        (a, &r2_src),
        (b, &r2_dst),
    ] {
        s.forget(side, b);
    }
}

// ───────────────────────────── checking the capture ─────────────────────────────

/// One FPDU as decoded, with where it was seen.
struct Seen {
    frame: u64,
    v: FpduView,
}

/// A message reassembled from its decoded segments.
#[derive(Clone, Debug)]
struct WireMsg {
    opcode: u8,
    first_frame: u64,
    segments: usize,
    len: u64,
    /// Tagged: STag and offset of the first segment.
    tagged: Option<(u32, u64)>,
    /// Untagged: queue and MSN.
    untagged: Option<(u32, u32)>,
    read_request: Option<ReadRequestView>,
    terminate: Option<TerminateView>,
}

/// RFC 5040 opcodes this library sends, with their DDP placement: (tagged,
/// queue number, DDP + RDMAP header bytes).
fn opcode_layout(op: u8) -> Option<(bool, u32, usize)> {
    match op {
        0 | 2 => Some((true, 0, 14)),   // RDMA Write, Read Response
        1 => Some((false, 1, 18 + 28)), // Read Request
        3 | 5 => Some((false, 0, 18)),  // Send, Send with SE
        7 => Some((false, 2, 18)),      // Terminate
        _ => None,
    }
}

fn pad_of(ulpdu: usize) -> usize {
    (4 - (2 + ulpdu) % 4) % 4
}

/// Total FPDU bytes on the wire (length field, ULPDU, pad, CRC).
fn fpdu_size(v: &FpduView) -> usize {
    let u = usize::from(v.ulpdu_len);
    2 + u + pad_of(u) + 4
}

/// Checks every segment of one direction and groups them into messages.
fn messages(
    dir: &str,
    segs: &[Seen],
    crc: bool,
    max_fpdu: usize,
    err: &mut Vec<String>,
) -> Vec<WireMsg> {
    let mut out = Vec::new();
    let mut open_tagged: Option<WireMsg> = None;
    let mut open_untagged: Vec<WireMsg> = Vec::new();
    let mut next_msn = [1u32; 3];
    for s in segs {
        let v = &s.v;
        let mut e = |ok: bool, msg: String| {
            if !ok {
                err.push(format!("{dir}, frame {}: {msg} — {v:?}", s.frame));
            }
        };
        e(v.ddp_version == 1, format!("DDP version {}", v.ddp_version));
        e(
            v.rdmap_version == 1,
            format!("RDMAP version {}", v.rdmap_version),
        );
        if crc {
            e(
                matches!(v.crc, CrcView::Good(_)),
                format!("CRC {:?}, want good", v.crc),
            );
        } else {
            e(
                v.crc == CrcView::Unchecked(0),
                format!("CRC field {:?}, want zeros", v.crc),
            );
        }
        let ulpdu = usize::from(v.ulpdu_len);
        e(
            v.pad_len == pad_of(ulpdu),
            format!("pad {} bytes, want {}", v.pad_len, pad_of(ulpdu)),
        );
        e(
            fpdu_size(v) <= max_fpdu,
            format!("FPDU of {} bytes > limit {max_fpdu}", fpdu_size(v)),
        );
        let Some((tagged, qn, hdr)) = opcode_layout(v.opcode) else {
            e(
                false,
                format!("unexpected opcode {} ({})", v.opcode, v.opcode_name),
            );
            continue;
        };
        e(
            v.tagged == tagged,
            format!("T = {}, want {tagged}", v.tagged),
        );
        if ulpdu < hdr {
            e(false, format!("ULPDU {ulpdu} bytes < header {hdr}"));
            continue;
        }
        let payload = (ulpdu - hdr) as u64;
        match v.placement {
            Some(Placement::Tagged { stag, to }) if tagged => {
                let m = open_tagged.get_or_insert(WireMsg {
                    opcode: v.opcode,
                    first_frame: s.frame,
                    segments: 0,
                    len: 0,
                    tagged: Some((stag, to)),
                    untagged: None,
                    read_request: None,
                    terminate: None,
                });
                let (stag0, to0) = m.tagged.unwrap();
                e(
                    m.opcode == v.opcode,
                    format!(
                        "opcode {} inside a tagged message of opcode {}",
                        v.opcode, m.opcode
                    ),
                );
                e(
                    stag == stag0,
                    format!("STag {stag:#x} inside a message to {stag0:#x}"),
                );
                e(
                    to == to0.wrapping_add(m.len),
                    format!(
                        "tagged offset {to:#x}, want {:#x} (message start + {})",
                        to0.wrapping_add(m.len),
                        m.len
                    ),
                );
                m.segments += 1;
                m.len += payload;
                if v.last {
                    out.extend(open_tagged.take());
                }
            }
            Some(Placement::Untagged {
                qn: got_qn,
                msn,
                mo,
            }) if !tagged => {
                e(got_qn == qn, format!("queue {got_qn}, want {qn}"));
                if v.opcode == 1 {
                    e(
                        payload == 0,
                        format!("Read Request with {payload} payload bytes"),
                    );
                    e(v.read_request.is_some(), "no Read Request header".into());
                }
                let q = got_qn.min(2) as usize;
                let at = open_untagged
                    .iter()
                    .position(|m| m.untagged == Some((got_qn, msn)));
                let i = match at {
                    Some(i) => i,
                    None => {
                        e(
                            msn == next_msn[q],
                            format!("new message MSN {msn}, want {}", next_msn[q]),
                        );
                        next_msn[q] = msn.wrapping_add(1);
                        open_untagged.push(WireMsg {
                            opcode: v.opcode,
                            first_frame: s.frame,
                            segments: 0,
                            len: 0,
                            tagged: None,
                            untagged: Some((got_qn, msn)),
                            read_request: v.read_request,
                            terminate: v.terminate.clone(),
                        });
                        open_untagged.len() - 1
                    }
                };
                let m = &mut open_untagged[i];
                e(
                    m.opcode == v.opcode,
                    format!("opcode {} inside message of opcode {}", v.opcode, m.opcode),
                );
                e(
                    u64::from(mo) == m.len,
                    format!("MO {mo}, want {} (bytes before it)", m.len),
                );
                m.segments += 1;
                m.len += payload;
                if v.last {
                    out.push(open_untagged.remove(i));
                }
            }
            p => e(false, format!("placement {p:?} for opcode {}", v.opcode)),
        }
    }
    if let Some(m) = open_tagged {
        err.push(format!("{dir}: tagged message without L: {m:?}"));
    }
    for m in open_untagged {
        err.push(format!("{dir}: untagged message without L: {m:?}"));
    }
    out
}

/// Whether a decoded message is the expected one (Read Responses are
/// checked against their request by [`answers`]).
fn fits(g: &WireMsg, w: &Msg) -> bool {
    let rr = g.read_request.unwrap_or(ReadRequestView {
        sink_stag: 0,
        sink_to: 0,
        size: u32::MAX,
        source_stag: 0,
        source_to: 0,
    });
    match *w {
        Msg::Rtr => g.opcode == 0 && g.tagged == Some((0, 0)) && g.len == 0,
        Msg::Send { solicited, len } => g.opcode == if solicited { 5 } else { 3 } && g.len == len,
        Msg::Write { stag, to, len } => {
            g.opcode == 0 && g.tagged == Some((stag, to)) && g.len == len
        }
        Msg::Read { size, stag, to } => {
            g.opcode == 1 && rr.size == size && rr.source_stag == stag && rr.source_to == to
        }
        Msg::AckRead => g.opcode == 1 && rr.size == 0 && rr.source_stag == 0 && rr.source_to == 0,
        Msg::ReadResponse { len } => g.opcode == 2 && g.len == len,
        Msg::Terminate {
            layer,
            etype,
            code,
            segment_len,
            ref ddp_header,
        } => {
            g.opcode == 7
                && g.terminate.as_ref().is_some_and(|t| {
                    (t.layer, t.etype, t.code, t.m, t.d, t.r)
                        == (layer, etype, code, true, true, false)
                        && t.segment_len.as_deref() == Some(&segment_len.to_be_bytes()[..])
                        && t.ddp_header.as_deref() == Some(&ddp_header[..])
                        && t.rdmap_header.is_none()
                })
        }
    }
}

/// Whether Read Response `g` answers Read Request `req`: the sink STag and
/// offset echoed, the size delivered.
fn answers(g: &WireMsg, req: Option<&WireMsg>) -> bool {
    match req.and_then(|r| r.read_request) {
        Some(req) => {
            g.opcode == 2
                && g.tagged == Some((req.sink_stag, req.sink_to))
                && g.len == u64::from(req.size)
        }
        None => false,
    }
}

/// A direction's messages without the initiator's nudges: zero-length
/// RDMA Writes (STag 0, TO 0, the RTR's form) after the first message,
/// which the initiator sends while nothing has come back (a responder that
/// holds a Send for want of a receive, or the kernel's siw, which misses
/// what arrives just after its MPA Reply: docs/transport.md). No script
/// posts one.
fn without_nudges(got: &[WireMsg]) -> Vec<WireMsg> {
    got.iter()
        .enumerate()
        .filter(|(i, m)| *i == 0 || !(m.opcode == 0 && m.tagged == Some((0, 0)) && m.len == 0))
        .map(|(_, m)| m.clone())
        .collect()
}

/// Matches one direction's messages to the script, in order; `requests`
/// are the other direction's Read Requests (answered here in order).
fn match_script(
    dir: &str,
    got: &[WireMsg],
    want: &[Msg],
    requests: &[&WireMsg],
    err: &mut Vec<String>,
) {
    let got = &without_nudges(got)[..];
    if got.len() != want.len() {
        err.push(format!(
            "{dir}: {} messages decoded, {} expected:\n    got  {:?}\n    want {want:?}",
            got.len(),
            want.len(),
            got.iter()
                .map(|m| (m.opcode, m.len, m.first_frame))
                .collect::<Vec<_>>()
        ));
    }
    let mut answered = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let mut ok = fits(g, w) && (*w != Msg::Rtr || i == 0);
        if let Msg::ReadResponse { .. } = w {
            ok &= answers(g, requests.get(answered).copied());
            answered += 1;
        }
        if !ok {
            err.push(format!(
                "{dir}: message {i} (from frame {}) is {g:?}, expected {w:?}",
                g.first_frame
            ));
        }
    }
}

/// [`match_script`] for overlapped operations (see [`Script::overlapped`]).
fn match_overlapped(
    dir: &str,
    got: &[WireMsg],
    want: &[Msg],
    requests: &[&WireMsg],
    err: &mut Vec<String>,
) {
    let got = &without_nudges(got)[..];
    let mut used = vec![false; got.len()];
    // Read Responses: in the order of the other direction's requests.
    let responses: Vec<usize> = (0..got.len()).filter(|&i| got[i].opcode == 2).collect();
    if responses.len() != requests.len() {
        err.push(format!(
            "{dir}: {} Read Responses for {} Read Requests",
            responses.len(),
            requests.len()
        ));
    }
    for (k, &i) in responses.iter().enumerate() {
        used[i] = true;
        if !answers(&got[i], requests.get(k).copied()) {
            err.push(format!(
                "{dir}: Read Response {k} {:?} does not answer Read Request {k} {:?}",
                got[i],
                requests.get(k)
            ));
        }
    }
    // Ack reads: at least one if any were scripted, at most as many.
    let acks: Vec<usize> = (0..got.len())
        .filter(|&i| fits(&got[i], &Msg::AckRead))
        .collect();
    let scripted = want.iter().filter(|w| **w == Msg::AckRead).count();
    if acks.len() > scripted || (scripted > 0 && acks.is_empty()) {
        err.push(format!(
            "{dir}: {} ack reads, want 1..={scripted}",
            acks.len()
        ));
    }
    for i in acks {
        used[i] = true;
    }
    // Everything else: one decoded message each, the RTR first.
    for w in want
        .iter()
        .filter(|w| !matches!(w, Msg::AckRead | Msg::ReadResponse { .. }))
    {
        match (0..got.len()).find(|&i| !used[i] && fits(&got[i], w)) {
            Some(i) if *w == Msg::Rtr && i != 0 => {
                err.push(format!("{dir}: the RTR is message {i}, not the first"))
            }
            Some(i) => used[i] = true,
            None => err.push(format!("{dir}: no message on the wire is {w:?}")),
        }
    }
    for (i, g) in got.iter().enumerate().filter(|(i, _)| !used[*i]) {
        err.push(format!("{dir}: message {i} was not expected: {g:?}"));
    }
}

fn check_mpa(
    what: &str,
    v: &MpaView,
    crc: bool,
    ird_ord: IrdOrd,
    pd: &[u8],
    err: &mut Vec<String>,
) {
    let mut e = |ok: bool, msg: String| {
        if !ok {
            err.push(format!("{what}: {msg} — {v:?}"));
        }
    };
    e(!v.markers, "M set".into());
    e(v.crc == crc, format!("C = {}, want {crc}", v.crc));
    e(!v.reject, "R set".into());
    e(v.enhanced(), "H not set".into());
    e(
        v.reserved == 0x10,
        format!("flags' low bits {:#x}, want H alone", v.reserved),
    );
    e(v.revision == 2, format!("revision {}", v.revision));
    e(
        usize::from(v.pd_len) == 4 + pd.len() && v.private_data.len() == 4 + pd.len(),
        format!("private data length {}, want {}", v.pd_len, 4 + pd.len()),
    );
    e(
        v.private_data.get(4..) == Some(pd),
        "consumer private data".into(),
    );
    e(
        v.ird_ord() == Some(ird_ord),
        format!("IRD/ORD {:?}, want {ird_ord:?}", v.ird_ord()),
    );
}

/// Bytes covered by the union of sequence ranges `[start, end)`; panics on
/// a gap (a hole in the capture).
fn stream_bytes(r: &mut [(u64, u64)]) -> u64 {
    r.sort_unstable();
    let mut total = 0;
    let mut end: Option<u64> = None;
    for &(s, e) in r.iter() {
        match end {
            Some(x) if s > x => panic!("sequence gap {x}..{s}: the capture has a hole"),
            Some(x) if e <= x => {}
            Some(x) => {
                total += e - x;
                end = Some(e);
            }
            None => {
                total += e - s;
                end = Some(e);
            }
        }
    }
    total
}

/// What a check found besides errors, for the test's output.
struct Summary {
    fpdus: [usize; 2],
    largest: usize,
    /// TCP retransmissions seen (not dissected again by tshark).
    retransmissions: usize,
    /// The allowed expert items the decode raised, with counts.
    allowed: Vec<String>,
    /// The smaller MSS the SYNs announced, less TCP timestamps if used.
    mss: Option<usize>,
}

/// Checks a captured session (see the module docs); panics listing every
/// disagreement.
fn check_session(c: &Captured, max_fpdu: usize) -> Summary {
    let mut err = Vec::new();
    let crc = c.setup.crc();
    let dir_of = |p: &tshark::Packet| match p.tcp_ports() {
        Some((_, dst)) if dst == c.port => Some(FWD),
        Some((src, _)) if src == c.port => Some(BACK),
        _ => None,
    };
    let names = ["initiator → responder", "responder → initiator"];
    let mut segs: [Vec<Seen>; 2] = [Vec::new(), Vec::new()];
    let mut mpa: [Vec<(u64, u64, MpaView)>; 2] = [Vec::new(), Vec::new()];
    // Sequence ranges of each direction's data (relative sequence numbers).
    let mut ranges: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
    let mut retransmissions = 0;
    let mut framed_bytes = [0u64; 2];
    let mut fins = [0usize; 2];
    let mut resets = [0usize; 2];
    let mut syn_mss: Vec<(usize, bool)> = Vec::new();
    for p in &c.decoded.packets {
        let Some(dir) = dir_of(p) else { continue };
        if p.uint("tcp.flags.syn") == Some(1) {
            if let Some(m) = p.uint("tcp.options.mss_val") {
                syn_mss.push((m as usize, p.has("tcp.options.timestamp.tsval")));
            }
        }
        fins[dir] += usize::from(p.uint("tcp.flags.fin") == Some(1));
        resets[dir] += usize::from(p.uint("tcp.flags.reset") == Some(1));
        if p.has("tcp.analysis.retransmission")
            || p.has("tcp.analysis.fast_retransmission")
            || p.has("tcp.analysis.spurious_retransmission")
        {
            // TCP repeating itself (a tail-loss probe while the test thread
            // drives the other side): tshark does not dissect it again, and
            // the byte accounting counts sequence space, not segments.
            retransmissions += 1;
        }
        let tcp_len = p.uint("tcp.len").unwrap_or(0);
        if let (true, Some(seq)) = (tcp_len > 0, p.uint("tcp.seq")) {
            ranges[dir].push((seq, seq + tcp_len));
        }
        for v in p.iwarp() {
            match v {
                Iwarp::Request(m) | Iwarp::Reply(m) => {
                    framed_bytes[dir] += 20 + u64::from(m.pd_len);
                    mpa[dir].push((p.number(), tcp_len, m));
                }
                Iwarp::Fpdu(f) => {
                    framed_bytes[dir] += fpdu_size(&f) as u64;
                    segs[dir].push(Seen {
                        frame: p.number(),
                        v: f,
                    });
                }
            }
        }
    }

    // MPA setup: one Request, one Reply, each in one segment.
    let word = |ird: u32, ord: u32| IrdOrd {
        ird: ird as u16,
        ord: ord as u16,
        peer_to_peer: true,
        rtr: RtrFlags {
            zero_length_send: false,
            rdma_write: true,
            rdma_read: false,
        },
    };
    // Both sides advertise IRD + 1 (the peer's ack reads) and ORD + 1 when
    // they use ack reads themselves (else ORD); the responder's ORD is
    // bounded by the initiator's IRD. The Request's C is the initiator's
    // wish, the Reply's the CRC in use.
    let extra = |d: usize| u32::from(!c.setup.opts[d].local_completion);
    let req_word = word(IRD + 1, ORD + extra(FWD));
    let rep_word = word(IRD + 1, (ORD + extra(BACK)).min(IRD + 1));
    let mut setup_frames = [0u64; 2];
    for (dir, what, w, c_flag) in [
        (FWD, "MPA Request", req_word, c.setup.opts[FWD].crc),
        (BACK, "MPA Reply", rep_word, crc),
    ] {
        match mpa[dir].as_slice() {
            [(frame, tcp_len, v)] => {
                setup_frames[dir] = *frame;
                check_mpa(what, v, c_flag, w, &c.setup.pd[dir], &mut err);
                if *tcp_len != 20 + u64::from(v.pd_len) {
                    err.push(format!(
                        "{what} (frame {frame}) shares a {tcp_len}-byte segment"
                    ));
                }
            }
            other => err.push(format!(
                "{}: {} MPA frames decoded, want one {what}",
                names[dir],
                other.len()
            )),
        }
    }
    let kinds: Vec<bool> = c
        .decoded
        .packets
        .iter()
        .flat_map(|p| p.iwarp())
        .filter_map(|v| match v {
            Iwarp::Request(_) => Some(true),
            Iwarp::Reply(_) => Some(false),
            Iwarp::Fpdu(_) => None,
        })
        .collect();
    if kinds != [true, false] {
        err.push(format!("setup frames (true: Request) {kinds:?}"));
    }
    // Ordering: the initiator's FPDUs after the Reply, the responder's
    // after the RTR.
    if let (Some(first), reply) = (segs[FWD].first(), setup_frames[BACK]) {
        if first.frame <= reply {
            err.push(format!(
                "the initiator's first FPDU (frame {}) precedes the Reply (frame {reply})",
                first.frame
            ));
        }
    }
    if let (Some(rtr), Some(first)) = (segs[FWD].first(), segs[BACK].first()) {
        if first.frame <= rtr.frame {
            err.push(format!(
                "the responder's first FPDU (frame {}) precedes the RTR (frame {})",
                first.frame, rtr.frame
            ));
        }
    }

    // FPDUs and messages.
    let msgs: Vec<Vec<WireMsg>> = (0..2)
        .map(|d| messages(names[d], &segs[d], crc, max_fpdu, &mut err))
        .collect();
    for d in 0..2 {
        let requests: Vec<&WireMsg> = msgs[1 - d].iter().filter(|m| m.opcode == 1).collect();
        let m = if c.script.overlapped {
            match_overlapped
        } else {
            match_script
        };
        m(names[d], &msgs[d], &c.script.msgs[d], &requests, &mut err);
        let sum = |ops: &[u8]| -> u64 {
            msgs[d]
                .iter()
                .filter(|m| ops.contains(&m.opcode))
                .map(|m| m.len)
                .sum()
        };
        let (pushed, answered) = (sum(&[0, 3, 5]), sum(&[2]));
        if pushed != c.script.pushed(d) || answered != c.script.answered(d) {
            err.push(format!(
                "{}: Send + Write payload {pushed} bytes (posted {}), Read Response payload {answered} (read {})",
                names[d],
                c.script.pushed(d),
                c.script.answered(d)
            ));
        }
        let stream = stream_bytes(&mut ranges[d]);
        if stream != framed_bytes[d] {
            err.push(format!(
                "{}: {stream} bytes of TCP stream, {} in decoded MPA frames and FPDUs",
                names[d], framed_bytes[d]
            ));
        }
    }

    // Close and the decode as a whole.
    if c.script.terminated {
        // The responder closes after its Terminate (a FIN, retransmitted if
        // the initiator is slow to answer); the initiator, broken, resets.
        // If that reset arrives between the responder's Terminate and its
        // shutdown (a preempted responder), the connection is gone and no
        // FIN follows: then the reset must be there.
        let ok = resets[BACK] == 0
            && match fins[BACK] {
                0 => resets[FWD] > 0,
                1 | 2 => true,
                _ => false,
            };
        if !ok {
            err.push(format!(
                "close: {} FINs and {} RSTs from the responder, {} RSTs from the \
                 initiator; want the responder's FIN (or, if the initiator \
                 reset first, none) and no RST from it",
                fins[BACK], resets[BACK], resets[FWD]
            ));
        }
    } else if fins != [1, 1] || resets != [0, 0] {
        err.push(format!(
            "close: FINs (initiator, responder) {fins:?}, RSTs {resets:?}; want one FIN each, no RST"
        ));
    }
    let mut allowed = allowed();
    if c.script.terminated {
        allowed.push((
            "TCP",
            "Connection reset (RST)",
            "the initiator, broken by the Terminate, closes abortively",
        ));
    }
    err.extend(c.decoded.problems(&allowed));

    assert!(
        err.is_empty(),
        "the capture disagrees with what was posted ({} problems):\n  {}",
        err.len(),
        err.join("\n  ")
    );
    let largest = segs
        .iter()
        .flatten()
        .map(|s| fpdu_size(&s.v))
        .max()
        .unwrap_or(0);
    let mss = (syn_mss.len() == 2).then(|| {
        let m = syn_mss.iter().map(|&(m, _)| m).min().unwrap();
        if syn_mss.iter().all(|&(_, ts)| ts) {
            m - 12
        } else {
            m
        }
    });
    let allowed = c
        .decoded
        .expert
        .iter()
        .map(|r| format!("{} x{} {}: {}", r.severity, r.count, r.protocol, r.summary))
        .collect();
    Summary {
        fpdus: [segs[0].len(), segs[1].len()],
        largest,
        retransmissions,
        allowed,
        mss,
    }
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

fn every_transfer(test: &str, crc: bool) {
    let Some(ts) = tshark_or_skip(test) else {
        return;
    };
    let t0 = Instant::now();
    let opts = DeviceOptions {
        crc,
        ..DeviceOptions::default()
    };
    let c = match capture_session(&ts, &Setup::both(opts), test, transfers) {
        Ok(c) => c,
        Err(why) => {
            tshark::skip(test, &why);
            return;
        }
    };
    let s = check_session(&c, MAX_FPDU);
    println!(
        "{test}: {} + {} FPDUs decoded as posted (largest {} bytes), {} + {} payload bytes, by {} in {:?}",
        s.fpdus[FWD],
        s.fpdus[BACK],
        s.largest,
        c.script.pushed(FWD) + c.script.answered(FWD),
        c.script.pushed(BACK) + c.script.answered(BACK),
        tshark::tshark_version(&ts),
        t0.elapsed()
    );
    println!(
        "{test}: {} TCP retransmissions; expert items (allowed): {:?}",
        s.retransmissions, s.allowed
    );
}

#[test]
fn every_transfer_crc_off() {
    every_transfer("every_transfer_crc_off", false);
}

#[test]
fn every_transfer_crc_on() {
    every_transfer("every_transfer_crc_on", true);
}

#[test]
fn overlapped_transfers_crc_on() {
    let test = "overlapped_transfers_crc_on";
    let Some(ts) = tshark_or_skip(test) else {
        return;
    };
    let t0 = Instant::now();
    let opts = DeviceOptions {
        crc: true,
        ..DeviceOptions::default()
    };
    let c = match capture_session(&ts, &Setup::both(opts), test, overlapped) {
        Ok(c) => c,
        Err(why) => {
            tshark::skip(test, &why);
            return;
        }
    };
    let s = check_session(&c, MAX_FPDU);
    println!(
        "{test}: {} + {} FPDUs decoded, the rules kept; {:?}",
        s.fpdus[FWD],
        s.fpdus[BACK],
        t0.elapsed()
    );
}

/// A Send that finds no receive: the responder holds it for its RNR time
/// (`DeviceOptions::rnr_timeout`), then terminates the connection with a
/// DDP untagged buffer error (invalid MSN, no buffer available) naming the
/// Send; the Send completes receiver-not-ready.
fn receiver_not_ready(s: &mut Session<'_>) {
    const LEN: usize = 64;
    let (a, b) = (s.ends[FWD], s.ends[BACK]);
    let src = Buf::new(a, pattern(LEN, 9));
    a.post_send(1, SendOp::Send { solicited: false }, &src.sgl(LEN));
    let w = wait_wc(&s.devs, a.cq(), "the refused Send's completion");
    assert_eq!((w.wr_id, w.status), (1, WcStatus::ReceiverNotReady));
    assert_eq!(
        wait_ev(&s.devs, &b.rec, "the responder breaks"),
        Got::Broken
    );
    assert_eq!(
        wait_ev(&s.devs, &a.rec, "the initiator breaks"),
        Got::Broken
    );
    s.forget(a, &src);
    // The Send (MSN 1) and its ack read, which the responder never reads;
    // the Terminate names the Send by its RFC 5041 untagged header
    // (DDP control: L, version 1; RDMAP control: version 1, Send; no
    // invalidate STag; QN 0, MSN 1, MO 0) and its ULPDU length.
    s.script.msgs[FWD].push(Msg::Send {
        solicited: false,
        len: LEN as u64,
    });
    s.script.msgs[FWD].push(Msg::AckRead);
    let send_header = [0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
    s.script.msgs[BACK].push(Msg::Terminate {
        layer: 1,
        etype: 2,
        code: 2,
        segment_len: (send_header.len() + LEN) as u16,
        ddp_header: send_header.to_vec(),
    });
    s.script.terminated = true;
}

/// A few transfers each way (for the variants of setup).
fn some_transfers(s: &mut Session<'_>) {
    s.send(FWD, 1000, false);
    s.write(FWD, 70_000, 4);
    s.read(FWD, 70_000, 8);
    s.send(BACK, 10, true);
    s.write(BACK, 3, 1);
}

/// Runs `setup` with [`some_transfers`] and checks it; `None` if skipped.
fn variant(test: &str, setup: &Setup, work: fn(&mut Session<'_>)) -> Option<Summary> {
    let ts = tshark_or_skip(test)?;
    match capture_session(&ts, setup, test, work) {
        Ok(c) => Some(check_session(&c, MAX_FPDU)),
        Err(why) => {
            tshark::skip(test, &why);
            None
        }
    }
}

/// CRC asked for by one side only is used both ways: the Request's C says
/// what the initiator asked, the Reply's C what is in use; every FPDU
/// carries a good CRC. Private data of the profile's largest size (252
/// consumer bytes after the IRD/ORD word) both ways.
#[test]
fn crc_asked_by_one_side_is_used_both_ways() {
    let test = "crc_asked_by_one_side_is_used_both_ways";
    for asker in [FWD, BACK] {
        let mut setup = Setup::both(DeviceOptions::default());
        setup.opts[asker].crc = true;
        setup.pd = [pattern(252, 0x51), pattern(252, 0xA2)];
        let Some(s) = variant(test, &setup, some_transfers) else {
            return;
        };
        println!(
            "{test}: CRC asked by the {}: {} + {} FPDUs with good CRCs",
            ["initiator", "responder"][asker],
            s.fpdus[FWD],
            s.fpdus[BACK]
        );
    }
}

/// The Terminate of a receiver-not-ready timeout, as tshark decodes it.
#[test]
fn receiver_not_ready_terminate() {
    let test = "receiver_not_ready_terminate";
    let mut setup = Setup::both(DeviceOptions::default());
    setup.opts[BACK].rnr_timeout = std::time::Duration::from_millis(100);
    if let Some(s) = variant(test, &setup, receiver_not_ready) {
        println!(
            "{test}: {} + {} FPDUs, the Terminate as expected",
            s.fpdus[FWD], s.fpdus[BACK]
        );
    }
}

/// A rejected connection: the Reply has R, mirrors revision 2 and H with a
/// zero IRD/ORD word before the consumer's private data, travels in one
/// segment, and is followed by the responder's FIN; no FPDU either way.
#[test]
fn reject_is_an_mpa_reply_with_r() {
    let test = "reject_is_an_mpa_reply_with_r";
    let Some(ts) = tshark_or_skip(test) else {
        return;
    };
    const PD_REJ: &[u8] = b"udapl e2e: not today";
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let listener = db.listen(0, lrec.clone()).expect("listen");
    let port = listener.port();
    let dir = tshark::TempDir::new(test);
    let cap = match tshark::LiveCapture::start(&ts, &[port], &dir.join("reject.pcapng")) {
        Ok(c) => c,
        Err(why) => {
            tshark::skip(test, &why);
            return;
        }
    };
    let a = Side::one_cq(&da, QpOpts::reads(IRD, ORD));
    let devs = [&da, &db];
    a.qp.connect(SocketAddr::new(LO, 0), port, PD_REQ, DEADLINE)
        .expect("connect");
    let r = wait_request(&devs, &lrec, "the connect request");
    listener.reject(r.id, PD_REJ).expect("reject");
    assert_eq!(
        wait_ev(&devs, &a.rec, "the initiator's Rejected"),
        Got::Rejected(PD_REJ.to_vec())
    );
    settle(&devs, "both devices idle after the reject");
    let decoded = tshark::decode_iwarp(&ts, &cap.finish(), &[]);

    let mut err = Vec::new();
    let mut views = Vec::new();
    let mut fin_after_reply = false;
    let mut resets_from_responder = 0;
    for p in &decoded.packets {
        let Some((src, _)) = p.tcp_ports() else {
            continue;
        };
        let from_responder = src == port;
        if from_responder && p.uint("tcp.flags.fin") == Some(1) {
            fin_after_reply = views.len() == 2;
        }
        resets_from_responder +=
            usize::from(from_responder && p.uint("tcp.flags.reset") == Some(1));
        for v in p.iwarp() {
            let len = p.uint("tcp.len").unwrap_or(0);
            views.push((from_responder, len, v));
        }
    }
    match views.as_slice() {
        [(false, _, Iwarp::Request(q)), (true, len, Iwarp::Reply(r))] => {
            let word = IrdOrd {
                ird: (IRD + 1) as u16,
                ord: (ORD + 1) as u16,
                peer_to_peer: true,
                rtr: RtrFlags {
                    zero_length_send: false,
                    rdma_write: true,
                    rdma_read: false,
                },
            };
            check_mpa("MPA Request", q, false, word, PD_REQ, &mut err);
            let mut e = |ok: bool, msg: &str| {
                if !ok {
                    err.push(format!("reject Reply: {msg} — {r:?}"));
                }
            };
            e(r.reject, "R not set");
            e(!r.markers && !r.crc, "M or C set");
            e(
                r.revision == 2 && r.reserved == 0x10,
                "not revision 2 with H",
            );
            e(
                r.ird_ord() == Some(IrdOrd::default()),
                "IRD/ORD word not zero",
            );
            e(r.private_data.get(4..) == Some(PD_REJ), "private data");
            e(*len == 20 + u64::from(r.pd_len), "not alone in its segment");
        }
        other => err.push(format!(
            "decoded {other:?}; want the Request, then the reject Reply, nothing else"
        )),
    }
    if !fin_after_reply || resets_from_responder != 0 {
        err.push(format!(
            "the responder should close with a FIN after the Reply (FIN seen after it: {fin_after_reply}, RSTs: {resets_from_responder})"
        ));
    }
    err.extend(decoded.problems(&allowed()));
    assert!(err.is_empty(), "{}", err.join("\n  "));
    println!("{test}: reject Reply decoded as sent");
}

/// With `local_completion` on both sides: ORD advertised without the ack
/// read's extra credit, and no ack reads on the wire.
#[test]
fn local_completion_sends_no_ack_reads() {
    let test = "local_completion_sends_no_ack_reads";
    let setup = Setup::both(DeviceOptions {
        local_completion: true,
        ..DeviceOptions::default()
    });
    if let Some(s) = variant(test, &setup, transfers) {
        println!(
            "{test}: {} + {} FPDUs, no ack reads",
            s.fpdus[FWD], s.fpdus[BACK]
        );
    }
}

/// Large transfers each way with `fpdu_mss`: every FPDU within the MSS the
/// SYNs negotiated (less timestamps), and with `fill` the large ones
/// filling it.
///
/// Filling is checked only on a 1500-byte MTU: the device sizes FPDUs by
/// `TCP_MAXSEG` when the connection comes up, and Linux bounds that value
/// by half the largest window the peer has advertised, which on a 64 KiB
/// MTU loopback (window 64 KiB at first) gives 32 KiB FPDUs for a 65483-byte
/// MSS: within the MSS, not filling it.
fn mss_session(ts: &Path, test: &str, fill: bool) -> Result<(Summary, Captured), Unavailable> {
    let opts = DeviceOptions {
        fpdu_mss: true,
        crc: true,
        ..DeviceOptions::default()
    };
    let c = capture_session(ts, &Setup::both(opts), test, |s| {
        s.send(FWD, 20_000, false);
        s.write(FWD, 100_000, 1);
        s.read(FWD, 100_000, 2);
        s.send(BACK, 9_000, true);
    })?;
    // First with the default limit, to find the MSS; then against it.
    let s = check_session(&c, MAX_FPDU);
    let mss = s.mss.expect("both SYNs announce an MSS");
    let s = check_session(&c, mss);
    assert!(
        !fill || s.largest + 3 >= mss,
        "largest FPDU {} bytes: MSS-sized FPDUs should fill the {mss}-byte MSS (within the 4-byte alignment)",
        s.largest
    );
    Ok((s, c))
}

#[test]
fn fpdu_mss_fpdus_fit_the_mss() {
    let test = "fpdu_mss_fpdus_fit_the_mss";
    let Some(ts) = tshark_or_skip(test) else {
        return;
    };
    let t0 = Instant::now();
    // A namespace whose loopback has an Ethernet-sized MTU, when possible.
    let ns = match Netns::create("mss") {
        Ok(ns) => match ns.ip(&["link", "set", "lo", "mtu", "1500"]) {
            Ok(()) => Some(ns),
            Err(e) => panic!("{e}"),
        },
        Err(why) => {
            eprintln!("{test}: no namespace ({why}); using the host's loopback");
            None
        }
    };
    let where_ = if ns.is_some() {
        "a namespace's loopback (MTU 1500)"
    } else {
        "the host's loopback"
    };
    let r = std::thread::scope(|sc| {
        sc.spawn(|| {
            if let Some(ns) = &ns {
                ns.enter();
            }
            mss_session(&ts, test, ns.is_some())
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    match r {
        Ok((s, c)) => println!(
            "{test}: on {where_}, {} + {} FPDUs, largest {} bytes ≤ MSS {}; {} bytes moved; {:?}",
            s.fpdus[FWD],
            s.fpdus[BACK],
            s.largest,
            s.mss.unwrap_or(0),
            (0..2)
                .map(|d| c.script.pushed(d) + c.script.answered(d))
                .sum::<u64>(),
            t0.elapsed()
        ),
        Err(why) => tshark::skip(test, &why),
    }
}
