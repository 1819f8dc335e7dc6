//! The iWARP target against a deliberately misbehaving peer.
//!
//! The target is a real `IwarpDevice` with a listener and queue pairs on
//! 127.0.0.1, driven by `Device::progress` from the tests' wait loops. The
//! peer (`tests/common/peer.rs`) is a raw TCP socket that performs its own
//! MPA setup and then sends hand-built FPDUs that break the rules: forged,
//! stale and foreign STags, out-of-range and wrapping offsets, missing
//! rights, wrong MSNs, MOs and queue numbers, cut and lying frames, bad
//! CRCs, too many RDMA Reads, and setup frames the target must refuse.
//!
//! Every misbehaviour test proves the same four things:
//! - the target answers as the RFCs say: a Terminate (RFC 5040 §4.8) whose
//!   layer / error type / error code are the IANA RDDP registry's entry for
//!   the violation, naming the offending segment, then the connection
//!   closes; or, for setup frames, a clean refusal (close, or a Reply with
//!   R for markers);
//! - on the target side the queue pair reports `CmEvent::Broken` (a peer
//!   that merely closes, even inside an FPDU, `Disconnected`) and its
//!   outstanding work completes `Flushed`;
//! - memory is safe: registered test memory sits between `PROT_NONE` guard
//!   pages and is filled with canary bytes, and afterwards every byte
//!   outside what the peer was allowed to write (and all unregistered
//!   memory) still holds its canary; refused reads return no data;
//! - the target survives: the same device then accepts a well-behaved peer
//!   and serves its RDMA Write, Send and RDMA Read.
//!
//! The last section is the other way round: peers that the library must
//! *not* refuse, because the Linux kernel's siw (6.1) behaves that way (a
//! Read Response with stale data to an ack read; a responder that misses
//! what arrives right after its MPA Reply, which the library as initiator
//! answers with "nudges"). There the peer also plays the passive side
//! (`Peer::accept`), with the library as the initiator.

mod common {
    pub mod peer;
    pub mod qp;
}

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::peer::{
    self, fpdu_with_len, read_request, send, tagged, ulpdu, untagged, write, Guarded, Incoming,
    Peer, Reply, Request, FLAG_C, FLAG_H, FLAG_M, FLAG_R, KEY_REPLY, KEY_REQUEST, OP_READ_REQUEST,
    OP_READ_RESPONSE, OP_SEND,
};
use common::qp::{pattern, poll_one, wait_for, Got, QpOpts, Rec, Side, ALL, LO};
use udapl::transport::api::{
    Access, Device, Listener, MemoryRegion, PdId, QpState, SendOp, Sge, Wc, WcOp, WcStatus,
};
use udapl::transport::iwarp::wire::{ReadRequest, Terminate, Ulp};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

/// The longest any wait here may take (shorter than the shared helpers'
/// default).
const DEADLINE: Duration = Duration::from_secs(5);

/// The IANA RDDP registry's (layer, error type, error code) triples used here.
mod code {
    pub type Triple = (u8, u8, u8);
    // RDMAP remote protection errors (RFC 5040).
    pub const RDMAP_INVALID_STAG: Triple = (0x0, 0x1, 0x00);
    pub const RDMAP_BASE_BOUNDS: Triple = (0x0, 0x1, 0x01);
    pub const RDMAP_ACCESS_RIGHTS: Triple = (0x0, 0x1, 0x02);
    pub const RDMAP_STAG_NOT_ASSOCIATED: Triple = (0x0, 0x1, 0x03);
    pub const RDMAP_TO_WRAP: Triple = (0x0, 0x1, 0x04);
    // DDP tagged buffer errors (RFC 5041).
    pub const DDP_T_INVALID_STAG: Triple = (0x1, 0x1, 0x00);
    pub const DDP_T_BASE_BOUNDS: Triple = (0x1, 0x1, 0x01);
    pub const DDP_T_STAG_NOT_ASSOCIATED: Triple = (0x1, 0x1, 0x02);
    pub const DDP_T_TO_WRAP: Triple = (0x1, 0x1, 0x03);
    // DDP untagged buffer errors (RFC 5041).
    pub const DDP_U_INVALID_QN: Triple = (0x1, 0x2, 0x01);
    pub const DDP_U_MSN_RANGE: Triple = (0x1, 0x2, 0x03);
    pub const DDP_U_INVALID_MO: Triple = (0x1, 0x2, 0x04);
    pub const DDP_U_TOO_LONG: Triple = (0x1, 0x2, 0x05);
    // MPA errors (RFC 5044).
    pub const MPA_CRC: Triple = (0x2, 0x0, 0x02);
    pub const MPA_FRAMING: Triple = (0x2, 0x0, 0x03);
}

// ─────────────────────────────── the target ───────────────────────────────

/// The device under test, listening on loopback.
struct Target {
    dev: Arc<IwarpDevice>,
    pd: PdId,
    _listener: Arc<dyn Listener>,
    lrec: Arc<Rec>,
    addr: SocketAddr,
}

impl Target {
    fn new() -> Target {
        Target::with(DeviceOptions::default())
    }

    fn with(opts: DeviceOptions) -> Target {
        let dev = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, opts);
        let pd = dev.alloc_pd().expect("pd");
        let lrec = Arc::new(Rec::default());
        let listener = dev.listen(0, lrec.clone()).expect("listen");
        let addr = SocketAddr::new(LO, listener.port());
        Target {
            dev,
            pd,
            _listener: listener,
            lrec,
            addr,
        }
    }

    fn pump(&self) {
        self.dev.progress();
    }

    /// A queue pair in the target's PD with one CQ for both queues: IRD 2
    /// and ORD 2 for the consumer (the device advertises IRD 3: one more
    /// for ack reads).
    fn qp(&self) -> Side {
        let o = QpOpts {
            send_depth: 16,
            recv_depth: 16,
            max_send_sge: 2,
            max_recv_sge: 2,
            ird: 2,
            ord: 2,
            cq_depth: 64,
        };
        let cq = self.dev.create_cq(o.cq_depth).expect("cq");
        Side::with_cqs(&self.dev, self.pd, cq.clone(), cq, o)
    }

    /// Registers `[off, off + len)` of `g` in `pd`.
    fn register(&self, pd: PdId, g: &Guarded, off: usize, len: usize, a: Access) -> MemoryRegion {
        self.dev
            .register(pd, g.addr(off), len as u64, a)
            .expect("register")
    }

    /// Waits for `f` to give a value, driving the target's device, within
    /// [`DEADLINE`].
    fn wait<T>(&self, what: &str, f: impl FnMut() -> Option<T>) -> T {
        wait_for(&[&self.dev], what, DEADLINE, f)
    }

    fn wait_event(&self, rec: &Rec) -> Got {
        self.wait("a connection event", || rec.pop())
    }

    fn wait_request(&self) -> (u64, Vec<u8>) {
        match self.wait_event(&self.lrec) {
            Got::Request(r) => (r.id, r.private_data),
            other => panic!("expected a connection request, got {other:?}"),
        }
    }

    fn wait_wc(&self, q: &Side) -> Wc {
        self.wait("a completion", || poll_one(q.cq()))
    }

    /// Asserts the queue pair broke, and that exactly `flushed` (wr_id, op)
    /// complete, all `Flushed`, in that order.
    fn assert_broken_and_flushed(&self, q: &Side, flushed: &[(u64, WcOp)]) {
        self.assert_ended_and_flushed(q, Got::Broken, flushed);
    }

    /// Asserts the connection ended with `how` (its one event), and that
    /// exactly `flushed` (wr_id, op) complete, all `Flushed`, in that order.
    fn assert_ended_and_flushed(&self, q: &Side, how: Got, flushed: &[(u64, WcOp)]) {
        assert_eq!(self.wait_event(&q.rec), how, "how the connection ends");
        for &(id, op) in flushed {
            let w = self.wait_wc(q);
            assert_eq!((w.wr_id, w.op, w.status), (id, op, WcStatus::Flushed));
        }
        assert_eq!(poll_one(q.cq()), None, "nothing else completes");
        assert_eq!(q.qp.state(), QpState::Closed);
        assert!(q.rec.is_empty(), "one event");
    }
}

/// Posts a receive of `len` bytes at `off` of `g` (registered as `mr`).
fn post_recv(q: &Side, wr_id: u64, g: &Guarded, mr: &MemoryRegion, off: usize, len: usize) {
    q.post_recv(
        wr_id,
        &[Sge {
            addr: g.addr(off),
            len: len as u64,
            lkey: mr.lkey,
        }],
    );
}

/// Runs the peer's side of MPA setup with `req` and the target's accept on
/// `q`; sends the RTR if the Reply asks for one. Returns the peer and the
/// Reply once the target reports the connection established.
fn connect(t: &Target, q: &Side, req: &Request) -> (Peer, Reply) {
    let mut p = Peer::connect(t.addr);
    p.send_raw(&req.bytes());
    let (id, _) = t.wait_request();
    t.dev.accept(id, &*q.qp, b"target").expect("accept");
    let reply = p.read_reply(&mut || t.pump()).expect("the Reply");
    assert_eq!(reply.flags & FLAG_R, 0, "accepted");
    assert_eq!(
        reply.revision, req.revision,
        "the Reply mirrors the revision"
    );
    assert_eq!(reply.private_data(), b"target");
    p.set_crc(reply.flags & FLAG_C != 0);
    if let Some((_, _, true, true, _)) = reply.ird_ord() {
        // The agreed RTR: a zero-length RDMA Write, STag 0, TO 0.
        p.send_fpdu(&write(true, 0, 0));
    }
    assert!(matches!(t.wait_event(&q.rec), Got::Established(_)));
    (p, reply)
}

/// The target is still alive: a well-behaved peer connects and its RDMA
/// Write, Send and RDMA Read are served exactly.
fn serves_a_good_peer(t: &Target) {
    assert!(t.lrec.is_empty(), "no stray connection request");
    let q = t.qp();
    let g = Guarded::new(8192, 0xC5);
    let mr = t.register(t.pd, &g, 512, 1024, ALL);
    let r = Guarded::new(4096, 0x3C);
    let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
    post_recv(&q, 77, &r, &rm, 0, 64);
    let (mut p, _) = connect(t, &q, &Request::v2(4, 4, b"good"));
    let pump = &mut || t.pump();
    let data = pattern(100, 9);
    p.send_fpdu(&ulpdu(&write(true, mr.rkey, g.addr(600)), &data));
    p.send_fpdu(&ulpdu(&send(true, 1, 0), b"hello target"));
    p.send_fpdu(&read_request(
        1,
        (0x7777, 0x40),
        100,
        (mr.rkey, g.addr(600)),
    ));
    match p.next(pump) {
        Incoming::Fpdu(got) => {
            assert_eq!(
                (got.header.ulp, got.header.last),
                (
                    Ulp::ReadResponse {
                        stag: 0x7777,
                        to: 0x40
                    },
                    true
                ),
                "the Read Response"
            );
            assert_eq!(got.payload, data, "read back what was written");
        }
        other => panic!("expected the Read Response, got {other:?}"),
    }
    let w = t.wait_wc(&q);
    assert_eq!(
        (w.wr_id, w.status, w.op, w.byte_len),
        (77, WcStatus::Success, WcOp::Recv, 12)
    );
    assert_eq!(&r.snapshot()[..12], b"hello target");
    r.assert_untouched_outside(0, 12, "receive buffer");
    g.assert_untouched_outside(600, 700, "written region");
    p.shutdown_write();
    assert_eq!(t.wait_event(&q.rec), Got::Disconnected);
    p.expect_closed(pump);
}

/// Asserts `got` is the target's first Terminate (queue 2, MSN 1, MO 0,
/// last) with `err`, naming the offending segment when `offending` gives
/// its ULPDU (header first).
fn assert_terminate(got: &peer::Got, err: code::Triple, offending: Option<&[u8]>) {
    assert_eq!(
        (got.header.ulp, got.header.last),
        (Ulp::Terminate { msn: 1, mo: 0 }, true),
        "a Terminate on queue 2"
    );
    let (t, _) = Terminate::decode(&got.payload).expect("Terminate body");
    assert_eq!(
        t.error.raw(),
        err,
        "layer/type/code (got {}, want {err:x?})",
        t.error
    );
    assert!(t.error.registered());
    if let Some(u) = offending {
        let ddp_len = if u[0] & 0x80 != 0 { 14 } else { 18 };
        assert!(!t.inferred, "headers announced by M/D/R");
        assert_eq!(
            t.segment_len,
            Some(u.len() as u16),
            "offending ULPDU length"
        );
        assert_eq!(t.ddp_header, Some(&u[..ddp_len]), "offending DDP header");
        let rdmap = (u[1] & 0x0F == OP_READ_REQUEST).then(|| &u[18..46]);
        assert_eq!(t.rdmap_header, rdmap, "offending RDMAP header");
    }
}

// ───────────────────────────── scenarios ─────────────────────────────

/// A target with a remote-accessible region, a receive posted, an
/// unregistered buffer, and a misbehaving peer connected.
struct Stage {
    t: Target,
    q: Side,
    p: Peer,
    reply: Reply,
    /// 8 KiB; `[REG, REG + REG_LEN)` registered with every remote right.
    g: Guarded,
    mr: MemoryRegion,
    /// Receive buffer: `[0, 64)` posted (wr_id 1).
    r: Guarded,
    /// Never registered.
    u: Guarded,
}

const REG: usize = 256;
const REG_LEN: usize = 1024;

impl Stage {
    fn new() -> Stage {
        Stage::with(Target::new(), Request::v2(4, 4, b"evil"))
    }

    fn with(t: Target, req: Request) -> Stage {
        let q = t.qp();
        let g = Guarded::new(8192, 0xA5);
        let mr = t.register(t.pd, &g, REG, REG_LEN, ALL);
        let r = Guarded::new(4096, 0x5A);
        let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
        post_recv(&q, 1, &r, &rm, 0, 64);
        let u = Guarded::new(4096, 0x77);
        let (p, reply) = connect(&t, &q, &req);
        Stage {
            t,
            q,
            p,
            reply,
            g,
            mr,
            r,
            u,
        }
    }

    /// Sends `u` as one FPDU, expects the Terminate `err` naming it (or no
    /// offending header when `names` is false), the close, and the queue
    /// pair broken with its receive flushed.
    fn refused(&mut self, u: &[u8], err: code::Triple, names: bool) {
        self.p.send_fpdu(u);
        self.expect_terminate(err, names.then_some(u));
    }

    /// Expects the Terminate `err` as the target's next FPDU (naming
    /// `offending` when given), the close, and the queue pair broken with
    /// its receive flushed.
    fn expect_terminate(&mut self, err: code::Triple, offending: Option<&[u8]>) {
        let t = &self.t;
        let pump = &mut || t.pump();
        let (before, term) = self.p.until_terminate(pump);
        assert!(before.is_empty(), "FPDUs before the Terminate: {before:?}");
        assert_terminate(&term, err, offending);
        self.p.expect_closed(pump);
        self.t
            .assert_broken_and_flushed(&self.q, &[(1, WcOp::Recv)]);
    }

    /// Nothing was written anywhere (receive buffer, region, unregistered
    /// memory).
    fn assert_nothing_written(&self) {
        self.g.assert_untouched("registered region");
        self.r.assert_untouched("receive buffer");
        self.u.assert_untouched("unregistered memory");
    }

    fn finish(self) {
        serves_a_good_peer(&self.t);
    }
}

// ───────────────────────── tagged: RDMA Write sinks ─────────────────────────

/// An RDMA Write of `len` bytes to (stag, to) is refused with `err` and
/// places nothing.
fn write_refused(s: &mut Stage, stag: u32, to: u64, len: usize, err: code::Triple) {
    let u = ulpdu(&write(true, stag, to), &pattern(len, 1));
    s.refused(&u, err, true);
    s.assert_nothing_written();
}

#[test]
fn write_with_forged_stag_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let to = s.u.addr(0);
    write_refused(&mut s, 0xDEAD_BEEF, to, 64, code::DDP_T_INVALID_STAG);
    s.finish();
}

#[test]
fn write_with_stag_zero_and_data_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let to = s.g.addr(REG);
    write_refused(&mut s, 0, to, 16, code::DDP_T_INVALID_STAG);
    s.finish();
}

#[test]
fn write_with_local_key_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let (lkey, to) = (s.mr.lkey, s.g.addr(REG));
    write_refused(&mut s, lkey, to, 16, code::DDP_T_INVALID_STAG);
    s.finish();
}

#[test]
fn write_with_deregistered_stag_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let old = s.t.register(s.t.pd, &s.g, 4096, 1024, ALL);
    s.t.dev.deregister(&old).expect("deregister");
    let to = s.g.addr(4096);
    write_refused(&mut s, old.rkey, to, 32, code::DDP_T_INVALID_STAG);
    s.finish();
}

#[test]
fn write_with_stag_of_another_generation_is_refused_invalid_stag() {
    let mut s = Stage::new();
    // Same table index, another generation (keys are generation << 18 | index).
    let stale = s.mr.rkey ^ (0x15 << 18);
    assert_eq!(stale & 0x3FFFF, s.mr.rkey & 0x3FFFF);
    let to = s.g.addr(REG);
    write_refused(&mut s, stale, to, 32, code::DDP_T_INVALID_STAG);
    s.finish();
}

#[test]
fn write_with_stag_of_another_protection_domain_is_refused_not_associated() {
    let mut s = Stage::new();
    let pd2 = s.t.dev.alloc_pd().expect("pd");
    let other = s.t.register(pd2, &s.g, 4096, 1024, ALL);
    let to = s.g.addr(4096);
    write_refused(&mut s, other.rkey, to, 32, code::DDP_T_STAG_NOT_ASSOCIATED);
    s.finish();
}

#[test]
fn write_past_the_end_is_refused_base_or_bounds() {
    let mut s = Stage::new();
    let (rkey, to) = (s.mr.rkey, s.g.addr(REG + REG_LEN - 8));
    write_refused(&mut s, rkey, to, 16, code::DDP_T_BASE_BOUNDS);
    s.finish();
}

#[test]
fn write_before_the_start_is_refused_base_or_bounds() {
    let mut s = Stage::new();
    let (rkey, to) = (s.mr.rkey, s.g.addr(REG) - 1);
    write_refused(&mut s, rkey, to, 4, code::DDP_T_BASE_BOUNDS);
    s.finish();
}

#[test]
fn write_into_unregistered_memory_with_a_valid_stag_is_refused_base_or_bounds() {
    let mut s = Stage::new();
    let (rkey, to) = (s.mr.rkey, s.u.addr(0));
    write_refused(&mut s, rkey, to, 64, code::DDP_T_BASE_BOUNDS);
    s.finish();
}

#[test]
fn write_whose_offset_plus_length_wraps_is_refused_to_wrap() {
    let mut s = Stage::new();
    let rkey = s.mr.rkey;
    write_refused(&mut s, rkey, u64::MAX - 7, 16, code::DDP_T_TO_WRAP);
    s.finish();
}

#[test]
fn write_to_a_read_only_region_is_refused_access_rights() {
    let mut s = Stage::new();
    let ro = s.t.register(
        s.t.pd,
        &s.g,
        4096,
        1024,
        Access::LOCAL_READ.union(Access::REMOTE_READ),
    );
    let to = s.g.addr(4096);
    write_refused(&mut s, ro.rkey, to, 32, code::RDMAP_ACCESS_RIGHTS);
    s.finish();
}

#[test]
fn second_segment_of_a_write_past_the_end_places_only_the_first() {
    let mut s = Stage::new();
    let first = pattern(64, 3);
    let to = s.g.addr(REG + REG_LEN - 64);
    s.p.send_fpdu(&ulpdu(&write(false, s.mr.rkey, to), &first));
    let bad = ulpdu(&write(true, s.mr.rkey, to + 64), &pattern(64, 4));
    s.refused(&bad, code::DDP_T_BASE_BOUNDS, true);
    assert_eq!(
        &s.g.snapshot()[REG + REG_LEN - 64..REG + REG_LEN],
        &first[..]
    );
    s.g.assert_untouched_outside(REG + REG_LEN - 64, REG + REG_LEN, "region");
    s.r.assert_untouched("receive buffer");
    s.finish();
}

// ───────────────────────── tagged: RDMA Read sources ─────────────────────────

/// An RDMA Read Request of `size` bytes from (stag, to) is refused with
/// `err`: no data comes back.
fn read_refused(s: &mut Stage, stag: u32, to: u64, size: u32, err: code::Triple) {
    let u = read_request(1, (0x5151, 0), size, (stag, to));
    s.refused(&u, err, true);
    s.assert_nothing_written();
}

#[test]
fn read_with_forged_stag_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let to = s.u.addr(0);
    read_refused(&mut s, 0x0BAD_F00D, to, 64, code::RDMAP_INVALID_STAG);
    s.finish();
}

#[test]
fn read_with_deregistered_stag_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let old = s.t.register(s.t.pd, &s.g, 4096, 1024, ALL);
    s.t.dev.deregister(&old).expect("deregister");
    let to = s.g.addr(4096);
    read_refused(&mut s, old.rkey, to, 64, code::RDMAP_INVALID_STAG);
    s.finish();
}

#[test]
fn read_with_stag_of_another_generation_is_refused_invalid_stag() {
    let mut s = Stage::new();
    let (stale, to) = (s.mr.rkey ^ (0x2A << 18), s.g.addr(REG));
    read_refused(&mut s, stale, to, 64, code::RDMAP_INVALID_STAG);
    s.finish();
}

#[test]
fn read_with_stag_of_another_protection_domain_is_refused_not_associated() {
    let mut s = Stage::new();
    let pd2 = s.t.dev.alloc_pd().expect("pd");
    let other = s.t.register(pd2, &s.g, 4096, 1024, ALL);
    let to = s.g.addr(4096);
    read_refused(&mut s, other.rkey, to, 64, code::RDMAP_STAG_NOT_ASSOCIATED);
    s.finish();
}

#[test]
fn read_past_the_end_is_refused_base_or_bounds() {
    let mut s = Stage::new();
    let (rkey, to) = (s.mr.rkey, s.g.addr(REG + 8));
    read_refused(&mut s, rkey, to, REG_LEN as u32, code::RDMAP_BASE_BOUNDS);
    s.finish();
}

#[test]
fn read_of_four_gibibytes_is_refused_base_or_bounds() {
    let mut s = Stage::new();
    let (rkey, to) = (s.mr.rkey, s.g.addr(REG));
    read_refused(&mut s, rkey, to, u32::MAX, code::RDMAP_BASE_BOUNDS);
    s.finish();
}

#[test]
fn read_whose_offset_plus_length_wraps_is_refused_to_wrap() {
    let mut s = Stage::new();
    let rkey = s.mr.rkey;
    read_refused(&mut s, rkey, u64::MAX - 15, 64, code::RDMAP_TO_WRAP);
    s.finish();
}

#[test]
fn read_from_a_write_only_region_is_refused_access_rights() {
    let mut s = Stage::new();
    let wo = s.t.register(
        s.t.pd,
        &s.g,
        4096,
        1024,
        Access::LOCAL_WRITE.union(Access::REMOTE_WRITE),
    );
    let to = s.g.addr(4096);
    read_refused(&mut s, wo.rkey, to, 64, code::RDMAP_ACCESS_RIGHTS);
    s.finish();
}

// ─────────────────────────── untagged: MSN, MO, QN ───────────────────────────

#[test]
fn send_with_a_wrong_msn_is_refused_msn_range_and_flushes_outstanding_work() {
    let mut s = Stage::new();
    // Outstanding work on the target's send queue too: an RDMA Read the
    // peer never answers.
    let sink = Guarded::new(4096, 0x11);
    let sm = s.t.register(s.t.pd, &sink, 0, 64, Access::LOCAL_WRITE);
    s.q.post_send(
        50,
        SendOp::RdmaRead {
            remote_addr: 0x1000,
            rkey: 0x1234,
        },
        &[Sge {
            addr: sink.addr(0),
            len: 64,
            lkey: sm.lkey,
        }],
    );
    let u = ulpdu(&send(true, 2, 0), b"msn two first");
    s.p.send_fpdu(&u);
    let t = &s.t;
    let (before, term) = s.p.until_terminate(&mut || t.pump());
    assert_eq!(before.len(), 1, "the target's own Read Request: {before:?}");
    assert_eq!(before[0].header.ulp.opcode() as u8, OP_READ_REQUEST);
    assert_terminate(&term, code::DDP_U_MSN_RANGE, Some(&u));
    s.p.expect_closed(&mut || t.pump());
    s.t.assert_broken_and_flushed(&s.q, &[(50, WcOp::RdmaRead), (1, WcOp::Recv)]);
    s.assert_nothing_written();
    sink.assert_untouched("read sink");
    s.finish();
}

#[test]
fn send_with_msn_zero_is_refused_msn_range() {
    let mut s = Stage::new();
    s.refused(
        &ulpdu(&send(true, 0, 0), b"zero"),
        code::DDP_U_MSN_RANGE,
        true,
    );
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn replayed_send_msn_is_refused_msn_range() {
    let t = Target::new();
    let q = t.qp();
    let r = Guarded::new(4096, 0x5A);
    let rm = t.register(t.pd, &r, 0, 128, Access::LOCAL_WRITE);
    post_recv(&q, 1, &r, &rm, 0, 64);
    post_recv(&q, 2, &r, &rm, 64, 64);
    let (mut p, _) = connect(&t, &q, &Request::v2(4, 4, b""));
    p.send_fpdu(&ulpdu(&send(true, 1, 0), b"first"));
    let w = t.wait_wc(&q);
    assert_eq!((w.wr_id, w.status, w.byte_len), (1, WcStatus::Success, 5));
    let again = ulpdu(&send(true, 1, 0), b"again");
    p.send_fpdu(&again);
    let pump = &mut || t.pump();
    let (before, term) = p.until_terminate(pump);
    assert!(before.is_empty());
    assert_terminate(&term, code::DDP_U_MSN_RANGE, Some(&again));
    p.expect_closed(pump);
    t.assert_broken_and_flushed(&q, &[(2, WcOp::Recv)]);
    assert_eq!(&r.snapshot()[..5], b"first");
    r.assert_untouched_outside(0, 5, "receive buffers");
    serves_a_good_peer(&t);
}

#[test]
fn read_request_with_a_wrong_msn_is_refused_msn_range() {
    let mut s = Stage::new();
    let u = read_request(3, (0x5151, 0), 16, (s.mr.rkey, s.g.addr(REG)));
    s.refused(&u, code::DDP_U_MSN_RANGE, true);
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn send_starting_at_a_nonzero_mo_is_refused_invalid_mo() {
    let mut s = Stage::new();
    s.refused(
        &ulpdu(&send(true, 1, 8), b"offset"),
        code::DDP_U_INVALID_MO,
        true,
    );
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn send_segment_with_an_mo_gap_is_refused_invalid_mo() {
    let mut s = Stage::new();
    s.p.send_fpdu(&ulpdu(&send(false, 1, 0), b"12345678"));
    let gap = ulpdu(&send(true, 1, 16), b"rest");
    s.refused(&gap, code::DDP_U_INVALID_MO, true);
    // The first segment was placed where the receive allows; the receive
    // still completes only as flushed.
    assert_eq!(&s.r.snapshot()[..8], b"12345678");
    s.r.assert_untouched_outside(0, 8, "receive buffer");
    s.g.assert_untouched("registered region");
    s.finish();
}

#[test]
fn read_request_with_a_nonzero_mo_is_refused_invalid_mo() {
    let mut s = Stage::new();
    let mut u = read_request(1, (0x5151, 0), 16, (s.mr.rkey, s.g.addr(REG)));
    u[14..18].copy_from_slice(&4u32.to_be_bytes());
    s.refused(&u, code::DDP_U_INVALID_MO, true);
    s.finish();
}

#[test]
fn send_on_the_read_request_queue_is_refused_invalid_qn() {
    let mut s = Stage::new();
    s.refused(
        &ulpdu(&untagged(OP_SEND, true, 1, 1, 0), b"queue one"),
        code::DDP_U_INVALID_QN,
        false,
    );
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn send_on_an_unknown_queue_is_refused_invalid_qn() {
    let mut s = Stage::new();
    s.refused(
        &ulpdu(&untagged(OP_SEND, true, 0xFFFF_FFFF, 1, 0), b"queue max"),
        code::DDP_U_INVALID_QN,
        false,
    );
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn read_request_on_the_send_queue_is_refused_invalid_qn() {
    let mut s = Stage::new();
    let mut u = read_request(1, (0x5151, 0), 16, (s.mr.rkey, s.g.addr(REG)));
    u[6..10].copy_from_slice(&0u32.to_be_bytes());
    s.refused(&u, code::DDP_U_INVALID_QN, false);
    s.finish();
}

// ───────────────────────── truncated and oversized frames ─────────────────────────

/// The peer sends `bytes` (an FPDU cut short) and closes its side (as a
/// peer whose process ends in the middle of a write does): the peer
/// disconnected (rulings: teardown events; rdma_cm reports an iWARP close
/// the same way), its receive is flushed, no Terminate is owed (the stream
/// is gone) and the connection closes.
fn cut_short(s: &mut Stage, bytes: &[u8]) {
    s.p.send_raw(bytes);
    s.p.shutdown_write();
    let t = &s.t;
    s.p.expect_closed(&mut || t.pump());
    s.t.assert_ended_and_flushed(&s.q, Got::Disconnected, &[(1, WcOp::Recv)]);
}

#[test]
fn peer_closing_inside_a_header_disconnects() {
    let mut s = Stage::new();
    let f = peer::fpdu(&ulpdu(&send(true, 1, 0), b"cut"), false);
    cut_short(&mut s, &f[..9]);
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn peer_closing_inside_a_write_payload_disconnects() {
    let mut s = Stage::new();
    let data = pattern(1000, 7);
    let to = s.g.addr(REG);
    let f = peer::fpdu(&ulpdu(&write(true, s.mr.rkey, to), &data), false);
    cut_short(&mut s, &f[..2 + 14 + 100]);
    // What arrived was placed inside the region; nothing else moved.
    assert_eq!(&s.g.snapshot()[REG..REG + 100], &data[..100]);
    s.g.assert_untouched_outside(REG, REG + 100, "region");
    s.r.assert_untouched("receive buffer");
    s.u.assert_untouched("unregistered memory");
    s.finish();
}

#[test]
fn peer_closing_inside_a_send_payload_disconnects() {
    let mut s = Stage::new();
    let f = peer::fpdu(&ulpdu(&send(true, 1, 0), &pattern(60, 2)), false);
    cut_short(&mut s, &f[..2 + 18 + 10]);
    s.r.assert_untouched_outside(0, 10, "receive buffer");
    s.finish();
}

#[test]
fn peer_closing_before_the_crc_disconnects() {
    let mut s = Stage::new();
    let f = peer::fpdu(&ulpdu(&send(true, 1, 0), b"no crc"), false);
    cut_short(&mut s, &f[..f.len() - 2]);
    s.finish();
}

#[test]
fn ulpdu_length_shorter_than_its_header_is_refused_framing() {
    let mut s = Stage::new();
    let u = ulpdu(&send(true, 1, 0), b"lying length");
    s.p.send_raw(&fpdu_with_len(10, &u, false));
    s.expect_terminate(code::MPA_FRAMING, None);
    s.assert_nothing_written();
    s.finish();
}

#[test]
fn send_longer_than_the_posted_receive_is_refused_too_long() {
    let t = Target::new();
    let q = t.qp();
    let r = Guarded::new(4096, 0x5A);
    let rm = t.register(t.pd, &r, 0, 4096, Access::LOCAL_WRITE);
    post_recv(&q, 1, &r, &rm, 0, 64);
    post_recv(&q, 2, &r, &rm, 64, 64);
    let (mut p, _) = connect(&t, &q, &Request::v2(4, 4, b""));
    let u = ulpdu(&send(true, 1, 0), &pattern(65, 1));
    p.send_fpdu(&u);
    let pump = &mut || t.pump();
    let (before, term) = p.until_terminate(pump);
    assert!(before.is_empty());
    assert_terminate(&term, code::DDP_U_TOO_LONG, Some(&u));
    p.expect_closed(pump);
    // The receive it was meant for completes with a length error, the next
    // one flushed; nothing was placed.
    let w = t.wait_wc(&q);
    assert_eq!((w.wr_id, w.status), (1, WcStatus::LocalLength));
    t.assert_broken_and_flushed(&q, &[(2, WcOp::Recv)]);
    r.assert_untouched("receive buffers");
    serves_a_good_peer(&t);
}

#[test]
fn largest_legal_fpdu_is_accepted() {
    // The 16-bit length field caps a ULPDU at 65535 bytes, so nothing
    // larger can even be framed; the target must take that size (RFC 5044;
    // `siw` does). Length fields that lie are tested above.
    let t = Target::new();
    let q = t.qp();
    let g = Guarded::new(70_000, 0xA5);
    let mr = t.register(t.pd, &g, 0, g.len(), ALL);
    let (mut p, _) = connect(&t, &q, &Request::v2(4, 4, b""));
    let data = pattern(65535 - 14, 5);
    let u = ulpdu(&write(true, mr.rkey, g.addr(100)), &data);
    assert_eq!(u.len(), 65535);
    p.send_fpdu(&u);
    p.send_fpdu(&read_request(1, (9, 0), 0, (0, 0)));
    match p.next(&mut || t.pump()) {
        Incoming::Fpdu(got) => assert_eq!(got.header.ulp.opcode() as u8, OP_READ_RESPONSE),
        other => panic!("expected the zero-length Read Response, got {other:?}"),
    }
    assert_eq!(&g.snapshot()[100..100 + data.len()], &data[..]);
    g.assert_untouched_outside(100, 100 + data.len(), "region");
    assert_eq!(q.qp.state(), QpState::Connected);
    serves_a_good_peer(&t);
}

#[test]
fn read_request_carrying_payload_is_refused_invalid_mo() {
    let mut s = Stage::new();
    let mut u = read_request(1, (0x5151, 0), 16, (s.mr.rkey, s.g.addr(REG)));
    u.extend_from_slice(b"junk");
    s.refused(&u, code::DDP_U_INVALID_MO, true);
    s.finish();
}

// ─────────────────────────────── CRC ───────────────────────────────

fn crc_stage() -> Stage {
    let s = Stage::with(Target::new(), Request::v2(4, 4, b"crc").with_flags(FLAG_C));
    assert_ne!(s.reply.flags & FLAG_C, 0, "the Reply confirms CRC");
    assert!(s.p.crc);
    s
}

/// The peer's `ulpdu` as an FPDU whose CRC is off by one bit.
fn bad_crc(u: &[u8]) -> Vec<u8> {
    let mut f = peer::fpdu(u, true);
    let n = f.len();
    f[n - 1] ^= 0x01;
    f
}

#[test]
fn write_with_a_bad_crc_is_refused_crc_error() {
    let mut s = crc_stage();
    let to = s.g.addr(REG);
    // A good CRC first: placed and answered.
    let good = pattern(32, 8);
    s.p.send_fpdu(&ulpdu(&write(true, s.mr.rkey, to), &good));
    s.p.send_fpdu(&read_request(1, (9, 0), 0, (0, 0)));
    let t = &s.t;
    match s.p.next(&mut || t.pump()) {
        Incoming::Fpdu(got) => assert_eq!(got.header.ulp.opcode() as u8, OP_READ_RESPONSE),
        other => panic!("expected a Read Response, got {other:?}"),
    }
    let bad = ulpdu(&write(true, s.mr.rkey, to + 32), &pattern(32, 9));
    s.p.send_raw(&bad_crc(&bad));
    s.expect_terminate(code::MPA_CRC, Some(&bad));
    // DDP may place a segment before its CRC is checked, inside what the
    // STag allows; nothing beyond it moved.
    assert_eq!(&s.g.snapshot()[REG..REG + 32], &good[..]);
    s.g.assert_untouched_outside(REG, REG + 64, "region");
    s.r.assert_untouched("receive buffer");
    s.u.assert_untouched("unregistered memory");
    s.finish();
}

#[test]
fn send_with_a_bad_crc_is_refused_crc_error_and_its_receive_never_completes() {
    let mut s = crc_stage();
    let u = ulpdu(&send(true, 1, 0), b"corrupted");
    s.p.send_raw(&bad_crc(&u));
    s.expect_terminate(code::MPA_CRC, Some(&u));
    s.r.assert_untouched_outside(0, 9, "receive buffer");
    s.g.assert_untouched("registered region");
    s.finish();
}

#[test]
fn fpdu_without_crc_on_a_crc_connection_is_refused_crc_error() {
    let mut s = crc_stage();
    let u = ulpdu(&send(true, 1, 0), b"zeros");
    s.p.send_raw(&peer::fpdu(&u, false));
    s.expect_terminate(code::MPA_CRC, Some(&u));
    s.finish();
}

// ─────────────────────────────── IRD ───────────────────────────────

#[test]
fn read_requests_beyond_the_granted_ird_are_refused_msn_range() {
    let mut s = Stage::new();
    let (ird, _, p2p, _, _) = s.reply.ird_ord().expect("IRD/ORD word");
    assert!(p2p);
    assert_eq!(ird, 3, "the target grants its consumer IRD + 1");
    // IRD + 1 requests in one write: the target reads them all before it
    // can answer any.
    let mut all = Vec::new();
    let mut last = Vec::new();
    for msn in 1..=u32::from(ird) + 1 {
        let u = read_request(msn, (0x100 + msn, 0), 256, (s.mr.rkey, s.g.addr(REG)));
        all.extend_from_slice(&peer::fpdu(&u, false));
        last = u;
    }
    s.p.send_raw(&all);
    let t = &s.t;
    let pump = &mut || t.pump();
    let (before, term) = s.p.until_terminate(pump);
    // Responses to requests within the IRD may precede the Terminate.
    assert!(before.len() <= usize::from(ird), "{before:?}");
    for (i, g) in before.iter().enumerate() {
        assert_eq!(g.header.ulp.opcode() as u8, OP_READ_RESPONSE);
        let Ulp::ReadResponse { stag, .. } = g.header.ulp else {
            unreachable!()
        };
        assert_eq!(stag, 0x101 + i as u32, "in request order");
    }
    assert_terminate(&term, code::DDP_U_MSN_RANGE, Some(&last));
    s.p.expect_closed(pump);
    s.t.assert_broken_and_flushed(&s.q, &[(1, WcOp::Recv)]);
    s.assert_nothing_written();
    s.finish();
}

// ─────────────────────────────── MPA setup ───────────────────────────────

/// The peer writes `bytes` as its setup frame: the target closes the
/// connection without a Reply and reports no connection request.
fn setup_refused_silently(t: &Target, bytes: &[u8]) {
    let mut p = Peer::connect(t.addr);
    p.send_raw(bytes);
    p.expect_closed_silently(&mut || t.pump());
    t.pump();
    assert!(t.lrec.is_empty(), "no connection request reported");
}

#[test]
fn garbage_instead_of_an_mpa_request_is_refused() {
    let t = Target::new();
    setup_refused_silently(&t, b"GET / HTTP/1.1\r\nHost: target\r\n\r\n");
    setup_refused_silently(&t, &[0u8; 64]);
    serves_a_good_peer(&t);
}

#[test]
fn request_with_a_wrong_key_is_refused() {
    let t = Target::new();
    let mut r = Request::v2(4, 4, b"");
    r.key = KEY_REPLY;
    setup_refused_silently(&t, &r.bytes());
    r.key = *b"MPA ID Req Framf";
    setup_refused_silently(&t, &r.bytes());
    serves_a_good_peer(&t);
}

#[test]
fn request_of_revision_3_is_refused() {
    let t = Target::new();
    let mut r = Request::v2(4, 4, b"");
    r.revision = 3;
    setup_refused_silently(&t, &r.bytes());
    r.revision = 0xFF;
    setup_refused_silently(&t, &r.bytes());
    serves_a_good_peer(&t);
}

#[test]
fn request_with_an_oversized_private_data_length_is_refused() {
    let t = Target::new();
    for len in [513u16, 0xFFFF] {
        let mut r = Request::v2(4, 4, b"");
        r.pd_len = Some(len);
        r.pd.resize(600, 0x42);
        setup_refused_silently(&t, &r.bytes());
    }
    serves_a_good_peer(&t);
}

#[test]
fn enhanced_request_of_revision_1_is_refused() {
    let t = Target::new();
    let mut r = Request::v2(4, 4, b"");
    r.revision = 1;
    setup_refused_silently(&t, &r.bytes());
    let mut short = Request::v1(b"");
    short.revision = 2;
    short.flags = FLAG_H;
    short.pd = vec![0, 1];
    setup_refused_silently(&t, &short.bytes());
    serves_a_good_peer(&t);
}

#[test]
fn request_for_markers_is_rejected_with_a_reply() {
    let t = Target::new();
    for req in [
        Request::v2(4, 4, b"markers").with_flags(FLAG_M),
        Request::v1(b"markers").with_flags(FLAG_M | FLAG_C),
    ] {
        let mut p = Peer::connect(t.addr);
        p.send_raw(&req.bytes());
        let pump = &mut || t.pump();
        let reply = p.read_reply(pump).expect("a reject Reply");
        assert_ne!(reply.flags & FLAG_R, 0, "R set");
        assert_eq!(reply.flags & FLAG_M, 0, "no markers offered back");
        assert_eq!(reply.revision, req.revision, "in the Request's revision");
        assert_eq!(
            reply.flags & FLAG_H,
            req.flags & FLAG_H,
            "H mirrored: {reply:?}"
        );
        p.expect_closed_silently(pump);
        assert!(t.lrec.is_empty(), "no connection request reported");
    }
    serves_a_good_peer(&t);
}

#[test]
fn request_cut_short_is_dropped() {
    let t = Target::new();
    let r = Request::v2(4, 4, b"cut").bytes();
    let mut p = Peer::connect(t.addr);
    p.send_raw(&r[..r.len() - 2]);
    p.shutdown_write();
    p.expect_closed_silently(&mut || t.pump());
    assert!(t.lrec.is_empty());
    serves_a_good_peer(&t);
}

#[test]
fn first_fpdu_other_than_the_agreed_rtr_fails_the_accept() {
    let t = Target::new();
    let q = t.qp();
    let mut p = Peer::connect(t.addr);
    p.send_raw(&Request::v2(4, 4, b"").bytes());
    let (id, _) = t.wait_request();
    t.dev.accept(id, &*q.qp, b"").expect("accept");
    let pump = &mut || t.pump();
    let reply = p.read_reply(pump).expect("Reply");
    assert_eq!(reply.ird_ord().map(|w| (w.2, w.3)), Some((true, true)));
    // A Send where the zero-length RDMA Write RTR was agreed.
    p.send_fpdu(&ulpdu(&send(true, 1, 0), b"not an rtr"));
    assert_eq!(t.wait_event(&q.rec), Got::AcceptFailed);
    p.expect_closed(pump);
    serves_a_good_peer(&t);
}

#[test]
fn revision_1_peer_is_spoken_to_only_after_its_first_fpdu() {
    // No IRD/ORD word, no RTR: the initiator sends first (RFC 5044), the
    // target holds what its consumer posts until then.
    let t = Target::new();
    let q = t.qp();
    let r = Guarded::new(4096, 0x5A);
    let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
    post_recv(&q, 1, &r, &rm, 0, 64);
    let src = Guarded::new(4096, 0x33);
    let sm = t.register(t.pd, &src, 0, 64, Access::LOCAL_READ);
    let (mut p, reply) = connect(&t, &q, &Request::v1(b"old"));
    assert_eq!((reply.revision, reply.flags & FLAG_H), (1, 0));
    q.post_send(
        5,
        SendOp::Send { solicited: false },
        &[Sge {
            addr: src.addr(0),
            len: 8,
            lkey: sm.lkey,
        }],
    );
    for _ in 0..20 {
        t.pump();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        p.nothing_arrived(),
        "the responder sent before the initiator"
    );
    p.send_fpdu(&ulpdu(&send(true, 1, 0), b"rev one"));
    let pump = &mut || t.pump();
    match p.next(pump) {
        Incoming::Fpdu(got) => {
            assert_eq!(got.header.ulp.opcode() as u8, OP_SEND);
            assert_eq!(got.payload, vec![0x33; 8]);
        }
        other => panic!("expected the target's Send, got {other:?}"),
    }
    let mut done = Vec::new();
    for _ in 0..2 {
        let w = t.wait_wc(&q);
        done.push((w.wr_id, w.status, w.byte_len));
    }
    done.sort_by_key(|d| d.0);
    assert_eq!(
        done,
        [(1, WcStatus::Success, 7), (5, WcStatus::Success, 8)],
        "the peer's Send landed; without ack reads the target's completes locally"
    );
    let bad = ulpdu(&tagged(0, true, 0xFEED_0000, 0x1000), b"forged");
    p.send_fpdu(&bad);
    let (before, term) = p.until_terminate(pump);
    assert!(before.is_empty());
    assert_terminate(&term, code::DDP_T_INVALID_STAG, Some(&bad));
    p.expect_closed(pump);
    t.assert_broken_and_flushed(&q, &[]);
    serves_a_good_peer(&t);
}

#[test]
fn peer_using_the_read_rtr_is_served() {
    // The responder picks the zero-length Read RTR when only that one is
    // offered; it used inbound Read MSN 1.
    let t = Target::new();
    let q = t.qp();
    let g = Guarded::new(8192, 0xA5);
    let mr = t.register(t.pd, &g, 0, 4096, ALL);
    let mut req = Request::v2(4, 4, b"");
    req.pd[..4].copy_from_slice(&peer::ird_ord_word(4, 4, true, false, true));
    let mut p = Peer::connect(t.addr);
    p.send_raw(&req.bytes());
    let (id, _) = t.wait_request();
    t.dev.accept(id, &*q.qp, b"").expect("accept");
    let pump = &mut || t.pump();
    let reply = p.read_reply(pump).expect("Reply");
    assert_eq!(
        reply.ird_ord().map(|w| (w.2, w.3, w.4)),
        Some((true, false, true)),
        "peer-to-peer with the Read RTR"
    );
    p.send_fpdu(&read_request(1, (0x42, 0), 0, (0, 0)));
    match p.next(pump) {
        Incoming::Fpdu(got) => assert_eq!(
            (got.header.ulp, got.payload.len()),
            (Ulp::ReadResponse { stag: 0x42, to: 0 }, 0)
        ),
        other => panic!("expected the RTR's Read Response, got {other:?}"),
    }
    assert!(matches!(t.wait_event(&q.rec), Got::Established(_)));
    p.send_fpdu(&read_request(2, (0x43, 0), 16, (mr.rkey, g.addr(0))));
    match p.next(pump) {
        Incoming::Fpdu(got) => {
            assert_eq!(got.header.ulp, Ulp::ReadResponse { stag: 0x43, to: 0 });
            assert_eq!(got.payload, vec![0xA5; 16]);
        }
        other => panic!("expected a Read Response, got {other:?}"),
    }
    // MSN 2 again is a replay.
    let replay = read_request(2, (0x44, 0), 16, (mr.rkey, g.addr(0)));
    p.send_fpdu(&replay);
    let (before, term) = p.until_terminate(pump);
    assert!(before.is_empty());
    assert_terminate(&term, code::DDP_U_MSN_RANGE, Some(&replay));
    p.expect_closed(pump);
    t.assert_broken_and_flushed(&q, &[]);
    serves_a_good_peer(&t);
}

#[test]
fn peer_frames_are_the_rfc_layout() {
    // The peer's hand-built bytes against the RFCs' layouts.
    let r = Request::v2(5, 6, b"pd").bytes();
    assert_eq!(&r[..16], b"MPA ID Req Frame");
    assert_eq!(&r[16..20], &[FLAG_H, 2, 0, 6]);
    assert_eq!(&r[20..24], &[0x80, 5, 0x80, 6]);
    assert_eq!(KEY_REQUEST, *b"MPA ID Req Frame");
    let w = write(true, 0x0102_0304, 0x1122_3344_5566_7788);
    assert_eq!(w[..6], [0xC1, 0x40, 1, 2, 3, 4]);
    let f = peer::fpdu(&send(true, 1, 0), true);
    // 2 + 18 bytes need 0 pad; the CRC of the 20 bytes, little-endian.
    assert_eq!(f.len(), 24);
    assert_eq!(f[..2], [0, 18]);
    assert_eq!(
        f[20..],
        udapl::transport::iwarp::wire::crc32c_of(&f[..20]).to_le_bytes()
    );
}

// ──────────────────── interoperability with the kernel's siw ────────────────────
//
// Peers that break no rule this side can afford to enforce: what the Linux
// kernel's software iWARP driver (siw, 6.1) does, which the library must
// cope with rather than refuse. Here the library is the target (the peer
// connects) or the initiator (the peer listens: `Peer::accept`).

/// A zero-length RDMA Write with STag 0 and TO 0, last: the RTR's form, and
/// the initiator's nudge.
fn is_zero_length_write(g: &peer::Got) -> bool {
    g.header.ulp == Ulp::RdmaWrite { stag: 0, to: 0 } && g.header.last && g.payload.is_empty()
}

/// The target's next FPDU that is not a zero-length RDMA Write (an
/// initiator's nudges may come between its messages until it hears from
/// the peer).
fn next_message(p: &mut Peer, pump: &mut dyn FnMut()) -> peer::Got {
    loop {
        match p.next(pump) {
            Incoming::Fpdu(g) if is_zero_length_write(&g) => {}
            Incoming::Fpdu(g) => return g,
            other => panic!("expected an FPDU, got {other:?}"),
        }
    }
}

/// Asserts the target sends nothing but zero-length RDMA Writes for
/// `quiet` (no Terminate, no close).
fn assert_quiet(p: &mut Peer, quiet: Duration, pump: &mut dyn FnMut()) {
    let end = Instant::now() + quiet;
    while let Some(got) = p.next_before(end, pump) {
        match got {
            Incoming::Fpdu(g) if is_zero_length_write(&g) => {}
            other => panic!("expected nothing from the target, got {other:?}"),
        }
    }
}

/// The library's queue pair `q` connects to the raw listener `l` (on
/// `port`), with private data `active`; the peer accepts, checks the
/// Request (revision 2, enhanced, peer-to-peer with the RDMA Write RTR
/// offered, C as `crc` asks) and answers with a valid Reply (IRD 4, ORD 2,
/// the Write RTR chosen, C mirrored), written in one piece. Returns the
/// peer, the Request, and when the Reply had been written (the library
/// cannot be connected before then). `pump` is what the peer does while it
/// waits.
fn accept_active(
    q: &Side,
    l: &TcpListener,
    port: u16,
    crc: bool,
    pump: &mut dyn FnMut(),
) -> (Peer, Reply, Instant) {
    q.qp.connect(SocketAddr::new(LO, 0), port, b"active", DEADLINE)
        .expect("connect");
    let mut p = Peer::accept(l, pump);
    let req = p.read_request(pump).expect("the Request");
    assert_eq!(req.revision, 2, "{req:?}");
    assert_eq!(req.flags & !FLAG_C, FLAG_H, "{req:?}");
    assert_eq!(req.flags & FLAG_C != 0, crc, "C as configured: {req:?}");
    let (ird, ord, p2p, rtr_write, _) = req.ird_ord().expect("IRD/ORD word");
    assert!(p2p && rtr_write, "peer-to-peer with the Write RTR: {req:?}");
    assert_eq!((ird, ord), (3, 3), "the consumer's 2 + 1 for ack reads");
    assert_eq!(req.private_data(), b"active");
    let mut reply = Request::reply_v2(4, 2, b"passive");
    if crc {
        reply = reply.with_flags(FLAG_C);
    }
    p.send_raw(&reply.bytes());
    let replied = Instant::now();
    p.set_crc(crc);
    (p, req, replied)
}

/// A connection between the library and a raw peer that may act as the
/// Read responder of the library's ack reads: either role for the library,
/// CRC on or off, memory as in [`Stage`].
struct Link {
    t: Target,
    q: Side,
    p: Peer,
    /// 8 KiB; `[REG, REG + REG_LEN)` registered with every remote right.
    g: Guarded,
    mr: MemoryRegion,
    /// Receive buffer: `[0, 64)` posted (wr_id 1).
    r: Guarded,
    /// Never registered.
    u: Guarded,
    /// The source of the library's Sends: `[0, 64)` registered for local
    /// reads (never written).
    src: Guarded,
    sm: MemoryRegion,
}

impl Link {
    /// The library accepts the peer's connection.
    fn passive(crc: bool) -> Link {
        let t = Target::new();
        let q = t.qp();
        let mut req = Request::v2(4, 4, b"link");
        if crc {
            req = req.with_flags(FLAG_C);
        }
        Link::build(t, q, |t, q| connect(t, q, &req).0, crc)
    }

    /// The library connects to the peer (a raw listener).
    fn active(crc: bool) -> Link {
        let t = Target::with(DeviceOptions {
            crc,
            ..DeviceOptions::default()
        });
        let q = t.qp();
        Link::build(
            t,
            q,
            |t, q| {
                let l = TcpListener::bind((LO, 0)).expect("bind");
                let port = l.local_addr().expect("address").port();
                let (p, _, _) = accept_active(q, &l, port, crc, &mut || t.pump());
                assert!(matches!(t.wait_event(&q.rec), Got::Established(_)));
                p
            },
            crc,
        )
    }

    fn build(t: Target, q: Side, open: impl FnOnce(&Target, &Side) -> Peer, crc: bool) -> Link {
        let g = Guarded::new(8192, 0xA5);
        let mr = t.register(t.pd, &g, REG, REG_LEN, ALL);
        let r = Guarded::new(4096, 0x5A);
        let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
        post_recv(&q, 1, &r, &rm, 0, 64);
        let u = Guarded::new(4096, 0x77);
        let src = Guarded::new(4096, 0x33);
        let sm = t.register(t.pd, &src, 0, 64, Access::LOCAL_READ);
        let p = open(&t, &q);
        assert_eq!(p.crc, crc, "CRC negotiated as asked");
        Link {
            t,
            q,
            p,
            g,
            mr,
            r,
            u,
            src,
            sm,
        }
    }

    /// Posts a signalled Send of `[off, off + len)` of `src`.
    fn post_send(&self, wr_id: u64, off: usize, len: usize) {
        self.q.post_send(
            wr_id,
            SendOp::Send { solicited: false },
            &[Sge {
                addr: self.src.addr(off),
                len: len as u64,
                lkey: self.sm.lkey,
            }],
        );
    }

    /// Reads the library's Send (MSN `msn`, `len` bytes of `src` at
    /// `off`) and the ack read queued behind it; returns the ack read's
    /// request (its MSN is `msn` too: the library reads nothing else here
    /// before it).
    fn expect_send_and_ack_read(
        t: &Target,
        p: &mut Peer,
        src: &Guarded,
        msn: u32,
        off: usize,
        len: usize,
    ) -> ReadRequest {
        let pump = &mut || t.pump();
        let got = next_message(p, pump);
        assert_eq!(
            (got.header.ulp, got.header.last),
            (
                Ulp::Send {
                    msn,
                    mo: 0,
                    solicited: false,
                    invalidate: None
                },
                true
            ),
            "the library's Send"
        );
        assert_eq!(got.payload, &src.snapshot()[off..off + len]);
        let got = next_message(p, pump);
        let Ulp::ReadRequest { msn: m, mo: 0, req } = got.header.ulp else {
            panic!("expected the ack read behind the Send, got {got:?}");
        };
        assert_eq!((m, req.size, got.header.last), (msn, 0, true), "{req:?}");
        assert!(got.payload.is_empty());
        req
    }

    /// The library's Send, answered the way siw answers an ack read it had
    /// to queue: `stale` bytes (a previous message's) in segments of `seg`
    /// bytes, the last one flagged; the Send completes and the connection
    /// stays up.
    fn send_acked_with_stale_bytes(&mut self, stale: usize, seg: usize) {
        self.post_send(10, 0, 32);
        let req = Link::expect_send_and_ack_read(&self.t, &mut self.p, &self.src, 1, 0, 32);
        // The Send completes only with the response.
        for _ in 0..20 {
            self.t.pump();
        }
        assert_eq!(poll_one(self.q.cq()), None, "the Send waits for its ack");
        let data = pattern(stale, 0x5E);
        let n = data.len().div_ceil(seg);
        let mut burst = Vec::new();
        for (i, chunk) in data.chunks(seg).enumerate() {
            let to = req.sink_to + (i * seg) as u64;
            let u = ulpdu(
                &tagged(OP_READ_RESPONSE, i + 1 == n, req.sink_stag, to),
                chunk,
            );
            burst.extend_from_slice(&peer::fpdu(&u, self.p.crc));
        }
        self.p.send_raw(&burst);
        let w = self.t.wait_wc(&self.q);
        assert_eq!(
            (w.wr_id, w.status, w.op, w.byte_len),
            (10, WcStatus::Success, WcOp::Send, 32),
            "the Send completes with its (stale) acknowledgement"
        );
        let t = &self.t;
        assert_quiet(&mut self.p, Duration::from_millis(50), &mut || t.pump());
        assert_eq!(self.q.qp.state(), QpState::Connected);
        assert!(self.q.rec.is_empty(), "no connection event");
        self.assert_nothing_written();
    }

    fn assert_nothing_written(&self) {
        self.g.assert_untouched("registered region");
        self.r.assert_untouched("receive buffer");
        self.u.assert_untouched("unregistered memory");
        self.src.assert_untouched("send source");
    }

    /// The connection still works both ways: the peer's RDMA Write, Send
    /// and RDMA Read are served; the library's next Send is acknowledged
    /// (by a proper zero-length response) and its RDMA Read lands exactly;
    /// then the peer closes and the library reports the disconnect.
    fn still_works(mut self) {
        let t = &self.t;
        let pump = &mut || t.pump();
        let data = pattern(100, 9);
        let at = REG + 100;
        self.p
            .send_fpdu(&ulpdu(&write(true, self.mr.rkey, self.g.addr(at)), &data));
        self.p
            .send_fpdu(&ulpdu(&send(true, 1, 0), b"still connected"));
        self.p.send_fpdu(&read_request(
            1,
            (0x7777, 0x40),
            100,
            (self.mr.rkey, self.g.addr(at)),
        ));
        let got = next_message(&mut self.p, pump);
        assert_eq!(
            (got.header.ulp, got.header.last),
            (
                Ulp::ReadResponse {
                    stag: 0x7777,
                    to: 0x40
                },
                true
            ),
            "the Read Response"
        );
        assert_eq!(got.payload, data, "read back what was written");
        let w = t.wait_wc(&self.q);
        assert_eq!(
            (w.wr_id, w.status, w.op, w.byte_len),
            (1, WcStatus::Success, WcOp::Recv, 15)
        );
        assert_eq!(&self.r.snapshot()[..15], b"still connected");

        // The library's second Send: MSN 2, its ack read MSN 2.
        self.post_send(11, 32, 16);
        let req = Link::expect_send_and_ack_read(t, &mut self.p, &self.src, 2, 32, 16);
        self.p
            .send_fpdu(&tagged(OP_READ_RESPONSE, true, req.sink_stag, req.sink_to));
        let w = t.wait_wc(&self.q);
        assert_eq!(
            (w.wr_id, w.status, w.op),
            (11, WcStatus::Success, WcOp::Send)
        );

        // The library's RDMA Read (MSN 3), answered in two segments.
        let d = Guarded::new(4096, 0x11);
        let dm = t.register(t.pd, &d, 0, 256, Access::LOCAL_WRITE);
        self.q.post_send(
            12,
            SendOp::RdmaRead {
                remote_addr: 0x1000,
                rkey: 0xABCD,
            },
            &[Sge {
                addr: d.addr(16),
                len: 48,
                lkey: dm.lkey,
            }],
        );
        let got = next_message(&mut self.p, pump);
        let Ulp::ReadRequest { msn: 3, mo: 0, req } = got.header.ulp else {
            panic!("expected the library's Read Request (MSN 3), got {got:?}");
        };
        assert_eq!(
            (req.size, req.source_stag, req.source_to),
            (48, 0xABCD, 0x1000)
        );
        let back = pattern(48, 0x21);
        self.p.send_fpdu(&ulpdu(
            &tagged(OP_READ_RESPONSE, false, req.sink_stag, req.sink_to),
            &back[..24],
        ));
        self.p.send_fpdu(&ulpdu(
            &tagged(OP_READ_RESPONSE, true, req.sink_stag, req.sink_to + 24),
            &back[24..],
        ));
        let w = t.wait_wc(&self.q);
        assert_eq!(
            (w.wr_id, w.status, w.op, w.byte_len),
            (12, WcStatus::Success, WcOp::RdmaRead, 48)
        );
        assert_eq!(&d.snapshot()[16..64], &back[..]);
        d.assert_untouched_outside(16, 64, "read sink");

        self.g.assert_untouched_outside(at, at + 100, "region");
        self.r.assert_untouched_outside(0, 15, "receive buffer");
        self.u.assert_untouched("unregistered memory");
        self.src.assert_untouched("send source");
        assert!(self.q.rec.is_empty(), "no connection event");
        self.p.shutdown_write();
        assert_eq!(t.wait_event(&self.q.rec), Got::Disconnected);
        self.p.expect_closed(pump);
        serves_a_good_peer(t);
    }
}

/// An ack read answered with `stale` bytes in segments of `seg`, in both
/// roles, with CRC as each of `crcs` says.
fn ack_read_answered_with_stale_bytes(stale: usize, seg: usize, crcs: &[bool]) {
    for &crc in crcs {
        for active in [false, true] {
            let mut l = if active {
                Link::active(crc)
            } else {
                Link::passive(crc)
            };
            l.send_acked_with_stale_bytes(stale, seg);
            l.still_works();
        }
    }
}

/// siw (6.1) answers a zero-length RDMA Read Request it had to queue (its
/// transmit side was busy when the request arrived) with a Read Response
/// that carries the bytes of the previous message it sent (a stale scatter
/// element): from a few bytes up to 64 KiB, though the request asked for
/// none. The library completes Sends and RDMA Writes "InfiniBand-style"
/// with exactly such zero-length reads (ack reads), so every completion
/// against siw risks one. The response still acknowledges everything
/// before it; refusing it (a DDP base-or-bounds Terminate) would break the
/// connection in the middle of normal traffic. The library must drop the
/// bytes (nowhere in application memory), complete the Send, send no
/// Terminate and keep the connection working.
#[test]
fn ack_read_response_with_16_stale_bytes_is_dropped_and_acknowledges() {
    ack_read_answered_with_stale_bytes(16, 16, &[false, true]);
}

/// As [`ack_read_response_with_16_stale_bytes_is_dropped_and_acknowledges`],
/// with 60,000 stale bytes sent the way siw segments them: TCP-MSS-sized
/// tagged segments (1,448 bytes), offsets increasing, the last flagged.
#[test]
fn ack_read_response_with_60000_stale_bytes_in_mss_segments_is_dropped() {
    ack_read_answered_with_stale_bytes(60_000, 1448, &[false, true]);
}

/// As [`ack_read_response_with_16_stale_bytes_is_dropped_and_acknowledges`],
/// with one FPDU of the largest size (65,521 bytes of payload; siw builds
/// FPDUs as large as its TCP send size, GSO included: up to 64 KiB on
/// loopback or with segmentation offload).
#[test]
fn ack_read_response_with_a_full_fpdu_of_stale_bytes_is_dropped() {
    ack_read_answered_with_stale_bytes(65_535 - 14, 65_535 - 14, &[false]);
}

/// The same with CRC on: the digest is taken from the dropped bytes as
/// placed, so each part of the FPDU needs room of its own (when every part
/// went into one 8 KiB bucket, an FPDU above about 16 KiB overwrote itself
/// before the digest read it: MPA CRC error Terminate, connection broken).
#[test]
fn ack_read_response_with_a_full_fpdu_of_stale_bytes_and_crc_is_dropped() {
    ack_read_answered_with_stale_bytes(65_535 - 14, 65_535 - 14, &[true]);
}

/// The allowance is for ack reads only: a Read Response longer than the
/// consumer's RDMA Read asked for is still a base-or-bounds violation
/// (RFC 5041: DDP tagged buffer error), refused with a Terminate before
/// anything is placed.
#[test]
fn read_response_longer_than_the_consumers_read_is_refused_base_or_bounds() {
    for two_segments in [false, true] {
        let mut s = Stage::new();
        let d = Guarded::new(4096, 0x11);
        let dm = s.t.register(s.t.pd, &d, 0, 256, Access::LOCAL_WRITE);
        s.q.post_send(
            50,
            SendOp::RdmaRead {
                remote_addr: 0x1000,
                rkey: 0xABCD,
            },
            &[Sge {
                addr: d.addr(0),
                len: 64,
                lkey: dm.lkey,
            }],
        );
        let t = &s.t;
        let got = next_message(&mut s.p, &mut || t.pump());
        let Ulp::ReadRequest { msn: 1, req, .. } = got.header.ulp else {
            panic!("expected the Read Request, got {got:?}");
        };
        assert_eq!(req.size, 64);
        let data = pattern(80, 0x42);
        let bad = if two_segments {
            // 64 bytes (all it asked for), not last; then 16 more.
            s.p.send_fpdu(&ulpdu(
                &tagged(OP_READ_RESPONSE, false, req.sink_stag, req.sink_to),
                &data[..64],
            ));
            ulpdu(
                &tagged(OP_READ_RESPONSE, true, req.sink_stag, req.sink_to + 64),
                &data[64..],
            )
        } else {
            ulpdu(
                &tagged(OP_READ_RESPONSE, true, req.sink_stag, req.sink_to),
                &data,
            )
        };
        s.p.send_fpdu(&bad);
        let pump = &mut || t.pump();
        let (before, term) = s.p.until_terminate(pump);
        assert!(before.is_empty(), "FPDUs before the Terminate: {before:?}");
        assert_terminate(&term, code::DDP_T_BASE_BOUNDS, Some(&bad));
        s.p.expect_closed(pump);
        s.t.assert_broken_and_flushed(&s.q, &[(50, WcOp::RdmaRead), (1, WcOp::Recv)]);
        if two_segments {
            assert_eq!(&d.snapshot()[..64], &data[..64]);
        }
        d.assert_untouched_outside(0, if two_segments { 64 } else { 0 }, "read sink");
        s.assert_nothing_written();
        s.finish();
    }
}

/// The earliest the `k`-th nudge (1-based) can be sent after the
/// connection came up: 10 ms, then gaps of 20, 40, ... ms (each counted
/// from when the one before was sent).
fn nudge_earliest(k: u32) -> Duration {
    Duration::from_millis(10 * ((1 << k) - 1))
}

/// Waits (sleeping: only the progress thread may move the library) until
/// `rec` records an event; returns it.
fn idle_wait_event(rec: &Rec) -> Got {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(g) = rec.pop() {
            return g;
        }
        assert!(Instant::now() < end, "deadline waiting for an event");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// siw (6.1) as responder installs its socket callbacks only after it has
/// sent its MPA Reply; what arrives in between (our RTR, our first
/// messages: the initiator writes them as soon as the Reply is in) raises
/// no data-ready callback, and siw never looks again until more bytes
/// arrive: the connection hangs with our RTR unread. So while nothing at
/// all has come back since the connection came up, the library as
/// initiator sends zero-length RDMA Writes (the RTR's form: STag 0, TO 0,
/// last; harmless to any peer) 10, 20, 40, ... ms apart, at most 6.
///
/// Here the raw peer accepts, answers with a valid Reply and then stays
/// silent: it must see the RTR and then exactly 6 more zero-length RDMA
/// Writes, correctly framed (CRC checked when negotiated), none earlier
/// than its schedule allows and the first within 500 ms, then nothing. The
/// connection is fine afterwards. With `drive`, an application thread
/// calls `progress` all along; without, nobody does (the progress thread
/// must keep the schedule).
fn silent_responder_gets_the_rtr_then_six_nudges(crc: bool, drive: bool) {
    let t = Target::with(DeviceOptions {
        crc,
        ..DeviceOptions::default()
    });
    let q = t.qp();
    let r = Guarded::new(4096, 0x5A);
    let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
    post_recv(&q, 1, &r, &rm, 0, 64);
    let l = TcpListener::bind((LO, 0)).expect("bind");
    let port = l.local_addr().expect("address").port();
    let pump = &mut || {
        if drive {
            t.pump();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let (mut p, _, replied) = accept_active(&q, &l, port, crc, pump);
    let mut seen = Vec::new();
    let end = replied + Duration::from_secs(10);
    while seen.len() < 7 {
        match p.next_before(end, pump) {
            Some(Incoming::Fpdu(g)) => {
                assert!(
                    is_zero_length_write(&g),
                    "FPDU {} after the Reply: {g:?}",
                    seen.len()
                );
                seen.push(Instant::now() - replied);
            }
            other => panic!("after {seen:?}: expected a zero-length RDMA Write, got {other:?}"),
        }
    }
    // Nothing more (the next would have come 640 ms after the sixth).
    let after = p.next_before(Instant::now() + Duration::from_millis(1500), pump);
    assert!(
        after.is_none(),
        "a seventh nudge: {after:?} (after {seen:?})"
    );
    let nudges = &seen[1..];
    assert!(
        nudges[0] < Duration::from_millis(500),
        "the first nudge within 500 ms: {seen:?}"
    );
    for (k, at) in (1..).zip(nudges) {
        assert!(
            *at >= nudge_earliest(k),
            "nudge {k} at {at:?}, before its time {:?}: {seen:?}",
            nudge_earliest(k)
        );
    }
    // The connection came up, and the nudges had no effect.
    let ev = if drive {
        t.wait_event(&q.rec)
    } else {
        idle_wait_event(&q.rec)
    };
    assert_eq!(ev, Got::Established(b"passive".to_vec()));
    assert!(q.rec.is_empty(), "no other event");
    assert_eq!(poll_one(q.cq()), None);
    assert_eq!(q.qp.state(), QpState::Connected);
    // Traffic works both ways.
    p.send_fpdu(&ulpdu(&send(true, 1, 0), b"finally"));
    let w = t.wait_wc(&q);
    assert_eq!(
        (w.wr_id, w.status, w.op, w.byte_len),
        (1, WcStatus::Success, WcOp::Recv, 7)
    );
    assert_eq!(&r.snapshot()[..7], b"finally");
    r.assert_untouched_outside(0, 7, "receive buffer");
    let src = Guarded::new(4096, 0x33);
    let sm = t.register(t.pd, &src, 0, 64, Access::LOCAL_READ);
    q.post_send(
        5,
        SendOp::Send { solicited: false },
        &[Sge {
            addr: src.addr(0),
            len: 8,
            lkey: sm.lkey,
        }],
    );
    let pump = &mut || t.pump();
    let got = p.next(pump);
    let Incoming::Fpdu(got) = got else {
        panic!("expected the library's Send, got {got:?}");
    };
    assert_eq!(got.header.ulp.opcode() as u8, OP_SEND, "{got:?}");
    assert_eq!(got.payload, vec![0x33; 8]);
    let Incoming::Fpdu(ack) = p.next(pump) else {
        panic!("expected the ack read");
    };
    let Ulp::ReadRequest { req, .. } = ack.header.ulp else {
        panic!("expected the ack read, got {ack:?}");
    };
    p.send_fpdu(&tagged(OP_READ_RESPONSE, true, req.sink_stag, req.sink_to));
    let w = t.wait_wc(&q);
    assert_eq!((w.wr_id, w.status), (5, WcStatus::Success));
    p.shutdown_write();
    assert_eq!(t.wait_event(&q.rec), Got::Disconnected);
    p.expect_closed(pump);
}

#[test]
fn silent_responder_gets_the_rtr_then_six_nudges_from_the_progress_thread() {
    silent_responder_gets_the_rtr_then_six_nudges(false, false);
}

#[test]
fn silent_responder_gets_the_rtr_then_six_nudges_with_crc_while_the_application_drives() {
    silent_responder_gets_the_rtr_then_six_nudges(true, true);
}

/// How many nudges can have been sent before `d` after the Reply.
fn nudges_due_by(d: Duration) -> usize {
    (1..=6).filter(|&k| nudge_earliest(k) <= d).count()
}

/// A responder that answers at once (right after the RTR: siw once its
/// callbacks are in place, any peer with something to say) is never
/// nudged: any byte from it stops the nudges. The library may send at most
/// the nudges due before the answer arrived, plus one in the step that
/// reads it (normally none: the answer comes well within 10 ms).
fn answering_responder_is_not_nudged(answer_with_send: bool) {
    let t = Target::new();
    let q = t.qp();
    let r = Guarded::new(4096, 0x5A);
    let rm = t.register(t.pd, &r, 0, 64, Access::LOCAL_WRITE);
    post_recv(&q, 1, &r, &rm, 0, 64);
    let l = TcpListener::bind((LO, 0)).expect("bind");
    let port = l.local_addr().expect("address").port();
    let idle = &mut || std::thread::sleep(Duration::from_millis(1));
    let (mut p, _, replied) = accept_active(&q, &l, port, false, idle);
    let spin = &mut || {};
    match p.next(spin) {
        Incoming::Fpdu(g) if is_zero_length_write(&g) => {}
        other => panic!("expected the RTR, got {other:?}"),
    }
    if answer_with_send {
        p.send_fpdu(&ulpdu(&send(true, 1, 0), b"right away"));
    } else {
        p.send_fpdu(&write(true, 0, 0));
    }
    let answered = Instant::now();
    assert_eq!(
        idle_wait_event(&q.rec),
        Got::Established(b"passive".to_vec())
    );
    let mut nudges = Vec::new();
    let end = replied + Duration::from_millis(1500);
    while let Some(got) = p.next_before(end, idle) {
        match got {
            Incoming::Fpdu(g) if is_zero_length_write(&g) => nudges.push(Instant::now() - replied),
            other => panic!("expected nothing, got {other:?}"),
        }
    }
    let allowed = nudges_due_by(answered + Duration::from_millis(5) - replied) + 1;
    assert!(
        nudges.len() <= allowed,
        "nudges at {nudges:?} after the Reply; the answer went at {:?}: at most {allowed} allowed",
        answered - replied
    );
    if answer_with_send {
        let w = t.wait_wc(&q);
        assert_eq!(
            (w.wr_id, w.status, w.op, w.byte_len),
            (1, WcStatus::Success, WcOp::Recv, 10)
        );
        assert_eq!(&r.snapshot()[..10], b"right away");
    } else {
        assert_eq!(
            poll_one(q.cq()),
            None,
            "a zero-length Write completes nothing"
        );
        r.assert_untouched("receive buffer");
    }
    assert!(q.rec.is_empty(), "no other event");
    assert_eq!(q.qp.state(), QpState::Connected);
    p.shutdown_write();
    assert_eq!(t.wait_event(&q.rec), Got::Disconnected);
    p.expect_closed(&mut || t.pump());
}

#[test]
fn responder_answering_with_a_send_right_after_the_rtr_is_not_nudged() {
    answering_responder_is_not_nudged(true);
}

#[test]
fn responder_answering_with_a_zero_length_write_right_after_the_rtr_is_not_nudged() {
    answering_responder_is_not_nudged(false);
}
