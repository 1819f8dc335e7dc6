//! The queue-pair layer of the iWARP device over loopback, through the
//! `verbs` interface only: every operation with one and many scatter
//! elements (data checked byte for byte, guard bytes around every element),
//! completion semantics (signalled/unsignalled, solicited notification,
//! ordering, fence), queue limits, receiver-not-ready, connection setup
//! outcomes, CRC and FPDU sizing (checked on the wire by a relay that
//! parses the byte stream), local completion, a peer process killed
//! mid-transfer, many queue pairs at once and graceful disconnect.
//!
//! The device has no background thread yet: every wait drives both devices
//! (`Device::progress`, and polling the CQs) and has a deadline.
//!
//! `peer_process_entry_point` is not a test of its own: it is the peer role
//! of `peer_killed_mid_transfer_…`, which re-executes this test binary with
//! [`PEER_ENV`] set; without it the function returns at once.

mod common {
    pub mod qp;
}

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::qp::{
    assert_no_wc, drive_for, poll_one, quiesce, spin, spin_for, wait_ev, wait_request, wait_wc,
    wait_wcs, wc, Got, Mem, Pair, QpOpts, Rec, Request, Scatter, Side, ALL, DEADLINE, GUARD, LO,
    MPA_CRC, REQ_PD,
};
use udapl::transport::api::KeyFault;
use udapl::transport::api::{
    Access, CompletionQueue, Device, DeviceError, PostError, QpConfig, QpState, RecvWr, SendOp,
    SendWr, Sge, Wc, WcOp, WcStatus,
};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

use WcStatus::{Flushed, Success};

// ───────────────────────────── helpers ─────────────────────────────

/// Asserts two byte strings are equal without printing megabytes.
#[track_caller]
fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at byte {i} of {} (got {:#04x}, want {:#04x})",
            want.len(),
            got[i],
            want[i]
        );
    }
}

fn send(solicited: bool) -> SendOp {
    SendOp::Send { solicited }
}

fn write_to(m: &Mem, off: usize) -> SendOp {
    SendOp::RdmaWrite {
        remote_addr: m.addr(off),
        rkey: m.mr.rkey,
    }
}

fn read_from(m: &Mem, off: usize) -> SendOp {
    SendOp::RdmaRead {
        remote_addr: m.addr(off),
        rkey: m.mr.rkey,
    }
}

fn post(side: &Side, wr_id: u64, op: SendOp, sgl: &[Sge], signaled: bool, fence: bool) {
    side.qp
        .post_send(&SendWr {
            wr_id,
            ctx: 0,
            op,
            sgl,
            signaled,
            fence,
        })
        .unwrap_or_else(|e| panic!("post_send {wr_id}: {e:?}"));
}

/// Whether either device completes Sends/Writes when handed to TCP (then a
/// Write's completion does not mean its bytes are placed yet).
fn local_completion(from: &Side, to: &Side) -> bool {
    from.dev.options().local_completion || to.dev.options().local_completion
}

/// A Send (`solicited` or not) from a scatter list of `src` element sizes
/// into a receive of `dst` element sizes: exact completions on both sides,
/// every byte, nothing beyond the message, guards intact.
fn check_send(p: &Pair, from: &Side, to: &Side, solicited: bool, src: &[usize], dst: &[usize]) {
    let what = format!("send {src:?} -> {dst:?}");
    let s = Scatter::new(from, src, 0);
    let len = s.total();
    let data = common::qp::pattern(len, (len % 251) as u8);
    s.fill(&data);
    let d = Scatter::new(to, dst, 0);
    assert!(d.total() >= len, "{what}: receive too small");
    to.post_recv(100, &d.sges);
    from.post_send(200, send(solicited), &s.sges);
    let r = p.wait_wc(&to.rcq, &what);
    let mut want = wc(100, Success, WcOp::Recv, len as u64, to.num());
    want.solicited = solicited;
    assert_eq!(r, want, "{what}: receive completion");
    let c = p.wait_wc(&from.scq, &what);
    assert_eq!(
        c,
        wc(200, Success, WcOp::Send, len as u64, from.num()),
        "{what}: send completion"
    );
    let got = d.gather();
    assert_bytes(&got[..len], &data, &what);
    assert!(got[len..].iter().all(|&b| b == 0), "{what}: beyond");
    assert!(d.guards_intact(), "{what}: receive guards");
    assert!(s.guards_intact(), "{what}: send guards");
    assert_bytes(&s.gather(), &data, "send source unchanged");
    assert_eq!(poll_one(&from.rcq), None);
    assert_eq!(poll_one(&to.scq), None);
}

/// An RDMA Write from a scatter list of `src` element sizes to offset
/// `off` of a fresh region at the peer.
fn check_write(p: &Pair, from: &Side, to: &Side, src: &[usize], off: usize) {
    let what = format!("write {src:?} at {off}");
    let s = Scatter::new(from, src, 0);
    let len = s.total();
    let data = common::qp::pattern(len, (len % 241) as u8);
    s.fill(&data);
    let r = Mem::new(to, off + len + 9, GUARD);
    from.post_send(300, write_to(&r, off), &s.sges);
    let c = p.wait_wc(&from.scq, &what);
    assert_eq!(
        c,
        wc(300, Success, WcOp::RdmaWrite, len as u64, from.num()),
        "{what}"
    );
    if local_completion(from, to) {
        // Completed when handed to TCP: the bytes land a little later.
        p.spin(&what, || r.read(off, len) == data);
    }
    let got = r.read_all();
    assert_bytes(&got[off..off + len], &data, &what);
    assert!(got[..off].iter().all(|&b| b == GUARD), "{what}: before");
    assert!(
        got[off + len..].iter().all(|&b| b == GUARD),
        "{what}: after"
    );
    assert!(s.guards_intact(), "{what}: source guards");
    assert_eq!(poll_one(&to.rcq), None, "{what}: nothing at the target");
    assert_eq!(poll_one(&to.scq), None, "{what}: nothing at the target");
}

/// An RDMA Read of offset `off` of a fresh region at the peer into a
/// scatter list of `dst` element sizes.
fn check_read(p: &Pair, from: &Side, to: &Side, dst: &[usize], off: usize) {
    let what = format!("read {dst:?} from {off}");
    let d = Scatter::new(from, dst, 0);
    let len = d.total();
    let data = common::qp::pattern(len, (len % 239) as u8);
    let r = Mem::new(to, off + len + 9, GUARD);
    r.write(off, &data);
    from.post_send(400, read_from(&r, off), &d.sges);
    let c = p.wait_wc(&from.scq, &what);
    assert_eq!(
        c,
        wc(400, Success, WcOp::RdmaRead, len as u64, from.num()),
        "{what}"
    );
    assert_bytes(&d.gather(), &data, &what);
    assert!(d.guards_intact(), "{what}: sink guards");
    assert_bytes(&r.read(off, len), &data, "read source unchanged");
    assert_eq!(poll_one(&to.rcq), None, "{what}: nothing at the target");
    assert_eq!(poll_one(&to.scq), None, "{what}: nothing at the target");
}

/// Zero-length Send (no element, and one empty element), RDMA Write and
/// RDMA Read: each completes with 0 bytes and moves nothing.
fn check_zero_length(p: &Pair, from: &Side, to: &Side) {
    let rbuf = Mem::new(to, 32, GUARD);
    let sbuf = Mem::new(from, 32, 0x11);
    let rnum = to.num();
    let snum = from.num();
    for (i, sgl) in [vec![], vec![sbuf.sge(4, 0)]].into_iter().enumerate() {
        let i = i as u64;
        to.post_recv(10 + i, &[rbuf.sge(0, 32)]);
        from.post_send(20 + i, send(false), &sgl);
        assert_eq!(
            p.wait_wc(&to.rcq, "zero-length receive"),
            wc(10 + i, Success, WcOp::Recv, 0, rnum)
        );
        assert_eq!(
            p.wait_wc(&from.scq, "zero-length send"),
            wc(20 + i, Success, WcOp::Send, 0, snum)
        );
    }
    // A receive with no element takes a zero-length Send.
    to.post_recv(12, &[]);
    from.post_send(22, send(true), &[]);
    let mut want = wc(12, Success, WcOp::Recv, 0, rnum);
    want.solicited = true;
    assert_eq!(p.wait_wc(&to.rcq, "zero-length receive"), want);
    assert_eq!(
        p.wait_wc(&from.scq, "zero-length send"),
        wc(22, Success, WcOp::Send, 0, snum)
    );
    from.post_send(30, write_to(&rbuf, 3), &[]);
    assert_eq!(
        p.wait_wc(&from.scq, "zero-length write"),
        wc(30, Success, WcOp::RdmaWrite, 0, snum)
    );
    from.post_send(31, write_to(&rbuf, 3), &[sbuf.sge(0, 0)]);
    assert_eq!(
        p.wait_wc(&from.scq, "zero-length write"),
        wc(31, Success, WcOp::RdmaWrite, 0, snum)
    );
    from.post_send(40, read_from(&rbuf, 5), &[]);
    assert_eq!(
        p.wait_wc(&from.scq, "zero-length read"),
        wc(40, Success, WcOp::RdmaRead, 0, snum)
    );
    from.post_send(41, read_from(&rbuf, 5), &[sbuf.sge(8, 0)]);
    assert_eq!(
        p.wait_wc(&from.scq, "zero-length read"),
        wc(41, Success, WcOp::RdmaRead, 0, snum)
    );
    // Let anything stray arrive, then check nothing moved.
    quiesce(&p.devs(), Duration::from_millis(20));
    assert!(rbuf.read_all().iter().all(|&b| b == GUARD), "target moved");
    assert!(sbuf.read_all().iter().all(|&b| b == 0x11), "source moved");
    assert_eq!(poll_one(&to.rcq), None);
    assert_eq!(poll_one(&to.scq), None);
    assert_eq!(poll_one(&from.rcq), None);
    assert_eq!(poll_one(&from.scq), None);
}

/// Element sizes: odd, different, one element larger than an FPDU.
const EIGHT_SRC: [usize; 8] = [1, 4_096, 3, 70_000, 17, 65_521, 2, 9_999];
const EIGHT_DST: [usize; 8] = [5, 100_000, 1, 30_000, 13, 8_000, 7, 20_000];
const EIGHT_SMALL: [usize; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
/// Lengths: tiny, odd, just beyond one FPDU, several FPDUs.
const ONE_SGE_LENS: [usize; 7] = [1, 2, 3, 4_093, 65_536 + 13, 131_071, 300_001];

/// Every operation both ways, multi-element and multi-FPDU, plus the
/// zero-length ones: the battery the CRC, MSS and local-completion tests
/// run over their connections.
fn exercise(p: &Pair) {
    let (a, b) = (&p.a, &p.b);
    check_send(p, a, b, false, &EIGHT_SRC, &[EIGHT_SRC.iter().sum()]);
    check_send(p, b, a, true, &[300_001], &[1, 150_000, 7, 150_000]);
    check_send(p, a, b, false, &EIGHT_SMALL, &EIGHT_SMALL);
    check_write(p, a, b, &EIGHT_SRC, 1);
    check_write(p, b, a, &[1 << 20], 7);
    check_read(p, a, b, &[(1 << 20) + 3], 5);
    check_read(p, b, a, &EIGHT_DST, 3);
    check_zero_length(p, a, b);
    check_zero_length(p, b, a);
}

fn opts() -> DeviceOptions {
    DeviceOptions::default()
}

// ───────────────────────────── operations ─────────────────────────────

#[test]
fn send_with_one_sge_delivers_every_byte_for_odd_and_multi_fpdu_lengths() {
    let p = Pair::new();
    for len in ONE_SGE_LENS {
        check_send(&p, &p.a, &p.b, false, &[len], &[len]);
        check_send(&p, &p.a, &p.b, false, &[len], &[len + 5]);
    }
}

#[test]
fn send_with_eight_sges_of_different_sizes_delivers_every_byte() {
    let p = Pair::new();
    let total: usize = EIGHT_SRC.iter().sum();
    check_send(&p, &p.a, &p.b, false, &EIGHT_SRC, &EIGHT_DST);
    check_send(&p, &p.a, &p.b, false, &EIGHT_SRC, &[total]);
    check_send(&p, &p.a, &p.b, false, &[total], &EIGHT_SRC);
    check_send(&p, &p.a, &p.b, false, &EIGHT_SMALL, &[36]);
    let mut rev = EIGHT_SMALL;
    rev.reverse();
    check_send(&p, &p.a, &p.b, false, &EIGHT_SMALL, &rev);
}

#[test]
fn solicited_send_with_one_and_eight_sges_delivers_every_byte_and_marks_the_receive() {
    let p = Pair::new();
    check_send(&p, &p.a, &p.b, true, &[1], &[1]);
    check_send(&p, &p.a, &p.b, true, &[300_001], &[300_001]);
    check_send(&p, &p.a, &p.b, true, &EIGHT_SRC, &EIGHT_DST);
    check_send(&p, &p.b, &p.a, true, &EIGHT_SMALL, &[40]);
}

#[test]
fn rdma_write_with_one_sge_places_every_byte_for_odd_and_multi_fpdu_lengths() {
    let p = Pair::new();
    for (i, len) in ONE_SGE_LENS.into_iter().enumerate() {
        check_write(&p, &p.a, &p.b, &[len], i * 3);
    }
}

#[test]
fn rdma_write_with_eight_sges_of_different_sizes_places_every_byte() {
    let p = Pair::new();
    check_write(&p, &p.a, &p.b, &EIGHT_SRC, 1);
    check_write(&p, &p.a, &p.b, &EIGHT_DST, 4_093);
    check_write(&p, &p.a, &p.b, &EIGHT_SMALL, 0);
}

#[test]
fn rdma_read_with_one_sge_fetches_every_byte_for_odd_and_multi_fpdu_lengths() {
    let p = Pair::new();
    for (i, len) in ONE_SGE_LENS.into_iter().enumerate() {
        check_read(&p, &p.a, &p.b, &[len], i * 5);
    }
}

#[test]
fn rdma_read_with_eight_sges_of_different_sizes_fetches_every_byte() {
    let p = Pair::new();
    check_read(&p, &p.a, &p.b, &EIGHT_SRC, 1);
    check_read(&p, &p.a, &p.b, &EIGHT_DST, 4_093);
    check_read(&p, &p.a, &p.b, &EIGHT_SMALL, 0);
}

#[test]
fn zero_length_send_write_and_read_complete_and_move_nothing() {
    let p = Pair::new();
    check_zero_length(&p, &p.a, &p.b);
    check_zero_length(&p, &p.b, &p.a);
}

// ───────────────────────────── completions ─────────────────────────────

#[test]
fn unsignalled_successes_produce_no_completion() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 200_000, 0);
    let data = common::qp::pattern(200_000, 3);
    src.write(0, &data);
    let remote = Mem::new(b, 200_000, 0);
    let back = Mem::new(a, 1_000, 0);
    let rbuf = Mem::new(b, 100_000, 0);
    b.post_recv(1, &[rbuf.sge(0, 100_000)]);
    // Unsignalled Write, Send and Read, then one signalled Write.
    post(
        a,
        10,
        write_to(&remote, 0),
        &[src.sge(0, 100_000)],
        false,
        false,
    );
    post(
        a,
        11,
        send(false),
        &[src.sge(100_000, 77_777)],
        false,
        false,
    );
    post(
        a,
        12,
        read_from(&remote, 5),
        &[back.sge(0, 1_000)],
        false,
        false,
    );
    post(
        a,
        13,
        write_to(&remote, 100_000),
        &[src.sge(100_000, 100_000)],
        true,
        false,
    );
    assert_eq!(
        p.wait_wc(&a.scq, "the signalled write"),
        Wc {
            implicit: 3,
            ..wc(13, Success, WcOp::RdmaWrite, 100_000, a.num())
        },
        "only the signalled request completes, counting the three before it"
    );
    assert_eq!(
        p.wait_wc(&b.rcq, "receive"),
        wc(1, Success, WcOp::Recv, 77_777, b.num())
    );
    assert_no_wc(&p.devs(), &a.scq, Duration::from_millis(50));
    assert_bytes(&remote.read_all(), &data, "written");
    assert_bytes(&rbuf.read(0, 77_777), &data[100_000..177_777], "sent");
    assert_bytes(&back.read_all(), &data[5..1_005], "read");
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

#[test]
fn unsignalled_error_still_completes() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 4_096, 1);
    let remote = Mem::new(b, 4_096, 0);
    let arecv = Mem::new(a, 64, 0);
    a.post_recv(50, &[arecv.sge(0, 64)]);
    // A good unsignalled Write, then one with a wrong remote key, then a
    // signalled Send that is never executed.
    post(a, 1, write_to(&remote, 0), &[src.sge(0, 100)], false, false);
    let bad = SendOp::RdmaWrite {
        remote_addr: remote.addr(0),
        rkey: remote.mr.rkey ^ 0x0101_0000,
    };
    post(a, 2, bad, &[src.sge(0, 100)], false, false);
    // The target's progress thread may have refused the bad Write and the
    // Terminate broken the queue pair already: then the Send is refused
    // (the queue pair is in error), else it is flushed.
    let sent = a.qp.post_send(&SendWr {
        wr_id: 3,
        ctx: 0,
        op: send(false),
        sgl: &[src.sge(0, 10)],
        signaled: true,
        fence: false,
    });
    assert!(matches!(sent, Ok(()) | Err(PostError::State)), "{sent:?}");
    assert_eq!(p.wait_ev(&b.rec, "target breaks"), Got::Broken);
    assert_eq!(p.wait_ev(&a.rec, "initiator breaks"), Got::Broken);
    let mut want = vec![Wc {
        implicit: 1,
        ..wc(2, WcStatus::RemoteAccess, WcOp::RdmaWrite, 0, a.num())
    }];
    if sent.is_ok() {
        want.push(wc(3, Flushed, WcOp::Send, 0, a.num()));
    }
    let got = p.wait_wcs(&a.scq, want.len(), "send queue");
    assert_eq!(
        got, want,
        "the unsignalled error completes; the good unsignalled write before it is counted in it"
    );
    assert_eq!(
        p.wait_wc(&a.rcq, "receive flushed"),
        wc(50, Flushed, WcOp::Recv, 0, a.num())
    );
    assert_no_wc(&p.devs(), &a.scq, Duration::from_millis(30));
    assert_eq!(poll_one(&b.rcq), None);
    assert_eq!(poll_one(&b.scq), None);
    assert_bytes(&remote.read(0, 100), &[1; 100], "the good write landed");
    assert_eq!(a.qp.state(), QpState::Closed);
    assert_eq!(b.qp.state(), QpState::Closed);
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

/// Whether `cq`'s wait descriptor is readable within `ms`.
fn readable(cq: &Arc<dyn CompletionQueue>, ms: u16) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(cq.wait_fd(), PollFlags::POLLIN)];
    nix::poll::poll(&mut fds, PollTimeout::from(ms)).expect("poll") == 1
}

/// The epoll tokens ready on `cq`'s wait descriptor now (the descriptor is
/// an epoll set; its notification eventfd is `u64::MAX`, sockets their QP).
fn ready_tokens(cq: &Arc<dyn CompletionQueue>) -> Vec<u64> {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 8];
    // SAFETY: the descriptor is a live epoll set; `evs` is writable for 8.
    let n = unsafe { libc::epoll_wait(cq.wait_fd().as_raw_fd(), evs.as_mut_ptr(), 8, 0) };
    assert!(n >= 0, "epoll_wait");
    evs[..n as usize].iter().map(|e| e.u64).collect()
}

#[test]
fn solicited_only_arming_wakes_the_wait_fd_only_for_the_solicited_receive() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 64, 7);
    let dst = Mem::new(b, 128, 0);
    b.post_recv(1, &[dst.sge(0, 64)]);
    b.post_recv(2, &[dst.sge(64, 64)]);
    b.rcq.arm(true);
    quiesce(&p.devs(), Duration::from_millis(10));
    assert!(!readable(&b.rcq, 0), "armed, nothing happened");
    // An unsolicited Send: its receive completes, the descriptor stays quiet.
    a.post_send(10, send(false), &[src.sge(0, 64)]);
    assert_eq!(
        p.wait_wc(&a.scq, "send (acknowledged: the peer processed it)"),
        wc(10, Success, WcOp::Send, 64, a.num())
    );
    quiesce(&p.devs(), Duration::from_millis(20));
    assert!(
        !readable(&b.rcq, 100),
        "an unsolicited receive must not fire a solicited-only arm (ready: {:?})",
        ready_tokens(&b.rcq)
    );
    assert_eq!(
        poll_one(&b.rcq),
        Some(wc(1, Success, WcOp::Recv, 64, b.num()))
    );
    assert!(!readable(&b.rcq, 50), "still quiet after polling");
    // A solicited Send: the notification fires.
    a.post_send(11, send(true), &[src.sge(0, 33)]);
    assert_eq!(
        p.wait_wc(&a.scq, "solicited send"),
        wc(11, Success, WcOp::Send, 33, a.num())
    );
    quiesce(&p.devs(), Duration::from_millis(20));
    assert!(
        readable(&b.rcq, 1000),
        "the solicited receive fires the arm"
    );
    assert_eq!(
        ready_tokens(&b.rcq),
        vec![u64::MAX],
        "the notification (not socket data) made it readable"
    );
    let mut want = wc(2, Success, WcOp::Recv, 33, b.num());
    want.solicited = true;
    assert_eq!(poll_one(&b.rcq), Some(want));
    assert_eq!(poll_one(&b.rcq), None);
}

// ───────────────────────────── ordering and fence ─────────────────────────────

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Write `len` bytes at `off` (same offset in the source and target).
    Write { off: usize, len: usize },
    /// Send number `idx` of `len` bytes from `src_off`, after `writes` writes.
    Send {
        idx: u64,
        len: usize,
        src_off: usize,
        writes: usize,
    },
}

#[test]
fn receiver_sees_each_send_only_after_the_preceding_writes_are_in_place() {
    const STEPS: usize = 360;
    const SLOTS: usize = 32;
    const SLOT: usize = 70_016;
    let q = QpOpts {
        send_depth: 24,
        recv_depth: SLOTS as u32,
        ..QpOpts::default()
    };
    let p = Pair::with(opts(), opts(), q, q);
    let (a, b) = (&p.a, &p.b);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut steps = Vec::with_capacity(STEPS);
    let (mut woff, mut soff, mut nsend) = (0usize, 0usize, 0u64);
    let mut writes: Vec<(usize, usize)> = Vec::new();
    for _ in 0..STEPS {
        if rng.below(10) < 3 {
            let len = if rng.below(8) == 0 {
                70_000
            } else {
                16 + rng.below(3_000) as usize
            };
            steps.push(Step::Send {
                idx: nsend,
                len,
                src_off: soff,
                writes: writes.len(),
            });
            nsend += 1;
            soff += len;
        } else {
            let len = if rng.below(10) == 0 {
                65_536 + rng.below(80_000) as usize
            } else {
                1 + rng.below(20_000) as usize
            };
            steps.push(Step::Write { off: woff, len });
            writes.push((woff, len));
            woff += len;
        }
    }
    let wdata = common::qp::pattern(woff, 77);
    let wsrc = Mem::new(a, woff, 0);
    wsrc.write(0, &wdata);
    let target = Mem::new(b, woff, GUARD);
    let ssrc = Mem::new(a, soff, 0);
    let mut sends = Vec::new();
    for s in &steps {
        if let Step::Send {
            idx,
            len,
            src_off,
            writes,
        } = *s
        {
            let mut m = common::qp::pattern(len, idx as u8);
            m[..8].copy_from_slice(&idx.to_le_bytes());
            m[8..16].copy_from_slice(&(writes as u64).to_le_bytes());
            ssrc.write(src_off, &m);
            sends.push((len, writes, m));
        }
    }
    let rbuf = Mem::new(b, SLOTS * SLOT, 0);
    let mut posted_recvs = 0u64;
    while posted_recvs < SLOTS as u64 {
        let slot = posted_recvs as usize % SLOTS;
        b.post_recv(posted_recvs, &[rbuf.sge(slot * SLOT, SLOT)]);
        posted_recvs += 1;
    }
    let (mut next, mut sq_done, mut received, mut checked_writes) = (0usize, 0usize, 0usize, 0);
    let end = Instant::now() + DEADLINE;
    while sq_done < STEPS || received < sends.len() {
        assert!(
            Instant::now() < end,
            "deadline: {sq_done} sq, {received} rq"
        );
        while next < STEPS {
            let (op, sge) = match steps[next] {
                Step::Write { off, len } => (write_to(&target, off), wsrc.sge(off, len)),
                Step::Send { len, src_off, .. } => (send(false), ssrc.sge(src_off, len)),
            };
            let r = a.qp.post_send(&SendWr {
                wr_id: next as u64,
                ctx: 0,
                op,
                sgl: &[sge],
                signaled: true,
                fence: false,
            });
            match r {
                Ok(()) => next += 1,
                Err(PostError::QueueFull) => break,
                Err(e) => panic!("post {next}: {e:?}"),
            }
        }
        a.dev.progress();
        b.dev.progress();
        while let Some(w) = poll_one(&a.scq) {
            let op = match steps[sq_done] {
                Step::Write { len, .. } => (WcOp::RdmaWrite, len),
                Step::Send { len, .. } => (WcOp::Send, len),
            };
            assert_eq!(
                w,
                wc(sq_done as u64, Success, op.0, op.1 as u64, a.num()),
                "send queue completes in posting order"
            );
            sq_done += 1;
        }
        while let Some(w) = poll_one(&b.rcq) {
            let (len, nwrites, ref msg) = sends[received];
            assert_eq!(
                w,
                wc(received as u64, Success, WcOp::Recv, len as u64, b.num())
            );
            // Every Write posted before this Send is in place now.
            for &(off, l) in &writes[checked_writes..nwrites] {
                assert_bytes(
                    &target.read(off, l),
                    &wdata[off..off + l],
                    &format!("write at {off} before send {received}"),
                );
            }
            checked_writes = checked_writes.max(nwrites);
            let slot = received % SLOTS;
            assert_bytes(
                &rbuf.read(slot * SLOT, len),
                msg,
                &format!("send {received}"),
            );
            received += 1;
            if posted_recvs < sends.len() as u64 {
                b.post_recv(posted_recvs, &[rbuf.sge(slot * SLOT, SLOT)]);
                posted_recvs += 1;
            }
        }
    }
    assert_bytes(&target.read_all(), &wdata, "every write");
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

#[test]
fn fenced_send_after_rdma_reads_carries_the_read_data() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let lens = [(1 << 20) + 3, 5, 70_001];
    let total: usize = lens.iter().sum();
    let remote = Mem::new(b, total, 0);
    let data = common::qp::pattern(total, 42);
    remote.write(0, &data);
    // The reads' sinks are the fenced Send's source.
    let sinks = Scatter::new(a, &lens, 0);
    let dst = Mem::new(b, total, 0);
    b.post_recv(9, &[dst.sge(0, total)]);
    let mut off = 0;
    for (i, s) in sinks.sges.iter().enumerate() {
        post(a, i as u64 + 1, read_from(&remote, off), &[*s], true, false);
        off += s.len as usize;
    }
    post(a, 4, send(false), &sinks.sges, true, true);
    let got = p.wait_wcs(&a.scq, 4, "reads and the fenced send");
    assert_eq!(
        got,
        vec![
            wc(1, Success, WcOp::RdmaRead, lens[0] as u64, a.num()),
            wc(2, Success, WcOp::RdmaRead, lens[1] as u64, a.num()),
            wc(3, Success, WcOp::RdmaRead, lens[2] as u64, a.num()),
            wc(4, Success, WcOp::Send, total as u64, a.num()),
        ]
    );
    assert_eq!(
        p.wait_wc(&b.rcq, "receive"),
        wc(9, Success, WcOp::Recv, total as u64, b.num())
    );
    assert_bytes(&sinks.gather(), &data, "read data");
    assert_bytes(
        &dst.read_all(),
        &data,
        "the fenced send carries what the reads fetched",
    );
}

// ───────────────────────────── limits ─────────────────────────────

/// Posts `n` reads of different sizes from distinct remote regions into
/// distinct local regions, all at once; all must complete in order.
fn many_reads(p: &Pair, n: usize) {
    let (a, b) = (&p.a, &p.b);
    let lens: Vec<usize> = (0..n).map(|i| 65_536 + 7 * i + 1).collect();
    let total: usize = lens.iter().sum();
    let remote = Mem::new(b, total, 0);
    let data = common::qp::pattern(total, 5);
    remote.write(0, &data);
    let local = Mem::new(a, total, 0);
    let mut off = 0;
    for (i, &l) in lens.iter().enumerate() {
        a.qp.post_send(&SendWr {
            wr_id: i as u64,
            ctx: 0,
            op: read_from(&remote, off),
            sgl: &[local.sge(off, l)],
            signaled: true,
            fence: false,
        })
        .unwrap_or_else(|e| panic!("read {i} beyond ORD must be queued, got {e:?}"));
        off += l;
    }
    let got = p.wait_wcs(&a.scq, n, "reads");
    for (i, w) in got.iter().enumerate() {
        assert_eq!(
            *w,
            wc(i as u64, Success, WcOp::RdmaRead, lens[i] as u64, a.num())
        );
    }
    assert_bytes(&local.read_all(), &data, "read data");
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

#[test]
fn reads_beyond_ord_are_queued_and_all_complete() {
    let qa = QpOpts {
        ord: 2,
        ..QpOpts::default()
    };
    let qb = QpOpts {
        ird: 2,
        ..QpOpts::default()
    };
    many_reads(&Pair::with(opts(), opts(), qa, qb), 16);
}

#[test]
fn reads_beyond_the_peers_ird_are_queued_and_all_complete() {
    let qa = QpOpts {
        ord: 8,
        ..QpOpts::default()
    };
    let qb = QpOpts {
        ird: 1,
        ..QpOpts::default()
    };
    many_reads(&Pair::with(opts(), opts(), qa, qb), 16);
}

#[test]
fn posting_beyond_the_queue_depth_is_queue_full() {
    let q = QpOpts {
        send_depth: 4,
        recv_depth: 4,
        ..QpOpts::default()
    };
    // Before connecting: receives are held up to the depth.
    {
        let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
        let s = Side::new(&dev, q);
        let m = Mem::new(&s, 64, 0);
        for i in 0..4 {
            s.post_recv(i, &[m.sge(0, 64)]);
        }
        assert_eq!(
            s.qp.post_recv(&RecvWr {
                wr_id: 4,
                ctx: 0,
                sgl: &[m.sge(0, 64)]
            }),
            Err(PostError::QueueFull)
        );
    }
    let p = Pair::with(opts(), opts(), q, q);
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 4_000, 3);
    // Four Sends to a target with no receive posted: it holds them
    // (receiver not ready), so nothing is acknowledged while the send
    // queue is checked (the peer's progress thread would otherwise
    // acknowledge Writes at once and free the slots).
    for i in 0..4 {
        a.post_send(i, send(false), &[src.sge(1_000 * i as usize, 1_000)]);
    }
    let remote = Mem::new(b, 64, 0);
    for op in [send(false), write_to(&remote, 0), read_from(&remote, 0)] {
        assert_eq!(
            a.qp.post_send(&SendWr {
                wr_id: 99,
                ctx: 0,
                op,
                sgl: &[src.sge(0, 10)],
                signaled: true,
                fence: false,
            }),
            Err(PostError::QueueFull),
            "{op:?} beyond the send depth"
        );
    }
    // The receive queue of a connected queue pair (nobody sends to a).
    let ra = Mem::new(a, 64, 0);
    for i in 0..4 {
        a.post_recv(i, &[ra.sge(0, 64)]);
    }
    assert_eq!(
        a.qp.post_recv(&RecvWr {
            wr_id: 4,
            ctx: 0,
            sgl: &[ra.sge(0, 64)]
        }),
        Err(PostError::QueueFull),
        "receive beyond the receive depth"
    );
    let rb = Mem::new(b, 4_000, 0);
    for i in 0..4 {
        b.post_recv(i, &[rb.sge(1_000 * i as usize, 1_000)]);
    }
    let got = p.wait_wcs(&a.scq, 4, "the sends");
    for (i, w) in got.iter().enumerate() {
        assert_eq!(*w, wc(i as u64, Success, WcOp::Send, 1_000, a.num()));
    }
    assert_bytes(&rb.read(0, 4_000), &src.read(0, 4_000), "the sends landed");
    // Room again; nothing refused was queued.
    a.post_send(5, write_to(&remote, 0), &[src.sge(0, 10)]);
    assert_eq!(
        p.wait_wc(&a.scq, "write after room"),
        wc(5, Success, WcOp::RdmaWrite, 10, a.num())
    );
    assert_no_wc(&p.devs(), &a.scq, Duration::from_millis(20));
    let got = p.wait_wcs(&b.rcq, 4, "the receives");
    for (i, w) in got.iter().enumerate() {
        assert_eq!(*w, wc(i as u64, Success, WcOp::Recv, 1_000, b.num()));
    }
    assert_eq!(poll_one(&b.rcq), None);
    assert_eq!(a.qp.state(), QpState::Connected);
}

#[test]
fn more_sges_than_the_device_max_is_too_many_sge() {
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let idle = Side::new(&dev, QpOpts::default());
    let m = Mem::new(&idle, 64, 0);
    let nine: Vec<Sge> = (0..9).map(|i| m.sge(i, 1)).collect();
    assert_eq!(
        idle.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &nine
        }),
        Err(PostError::TooManySge),
        "before connecting"
    );
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let ma = Mem::new(a, 64, 0);
    let mb = Mem::new(b, 64, 0);
    let nine_a: Vec<Sge> = (0..9).map(|i| ma.sge(i, 1)).collect();
    let nine_b: Vec<Sge> = (0..9).map(|i| mb.sge(i, 1)).collect();
    for op in [send(false), write_to(&mb, 0), read_from(&mb, 0)] {
        assert_eq!(
            a.qp.post_send(&SendWr {
                wr_id: 1,
                ctx: 0,
                op,
                sgl: &nine_a,
                signaled: true,
                fence: false,
            }),
            Err(PostError::TooManySge),
            "{op:?}"
        );
    }
    assert_eq!(
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &nine_b
        }),
        Err(PostError::TooManySge)
    );
    // Eight is fine, and nothing refused was queued.
    b.post_recv(2, &nine_b[..8]);
    a.post_send(3, send(false), &nine_a[..8]);
    assert_eq!(
        p.wait_wc(&b.rcq, "receive"),
        wc(2, Success, WcOp::Recv, 8, b.num())
    );
    assert_eq!(
        p.wait_wc(&a.scq, "send"),
        wc(3, Success, WcOp::Send, 8, a.num())
    );
    assert_no_wc(&p.devs(), &a.scq, Duration::from_millis(20));
    assert_eq!(poll_one(&b.rcq), None);
}

#[test]
fn sge_limits_are_per_queue() {
    // Fewer send elements than receive elements, and the reverse.
    let qa = QpOpts {
        max_send_sge: 2,
        max_recv_sge: 8,
        ..QpOpts::default()
    };
    let qb = QpOpts {
        max_send_sge: 8,
        max_recv_sge: 2,
        ..QpOpts::default()
    };
    let p = Pair::with(opts(), opts(), qa, qb);
    let (a, b) = (&p.a, &p.b);
    let ma = Mem::new(a, 64, 0);
    let mb = Mem::new(b, 64, 0);
    let three_a: Vec<Sge> = (0..3).map(|i| ma.sge(i, 1)).collect();
    let three_b: Vec<Sge> = (0..3).map(|i| mb.sge(i, 1)).collect();
    assert_eq!(
        a.qp.post_send(&SendWr {
            wr_id: 1,
            ctx: 0,
            op: write_to(&mb, 0),
            sgl: &three_a,
            signaled: true,
            fence: false,
        }),
        Err(PostError::TooManySge),
        "3 elements on a send queue of 2"
    );
    assert_eq!(
        b.qp.post_recv(&RecvWr {
            wr_id: 2,
            ctx: 0,
            sgl: &three_b
        }),
        Err(PostError::TooManySge),
        "3 elements on a receive queue of 2"
    );
    // Each queue takes up to its own limit: 8 elements from b's send queue
    // into 8 on a's receive queue, 2 from a's into 2 on b's.
    let eight_a: Vec<Sge> = (0..8).map(|i| ma.sge(4 * i, 4)).collect();
    let eight_b: Vec<Sge> = (0..8).map(|i| mb.sge(3 * i, 3)).collect();
    a.post_recv(3, &eight_a);
    b.post_send(4, send(false), &eight_b);
    b.post_recv(5, &three_b[..2]);
    a.post_send(6, send(false), &three_a[..2]);
    assert_eq!(
        p.wait_wc(&a.rcq, "8-element receive"),
        wc(3, Success, WcOp::Recv, 24, a.num())
    );
    assert_eq!(
        p.wait_wc(&b.scq, "8-element send"),
        wc(4, Success, WcOp::Send, 24, b.num())
    );
    assert_eq!(
        p.wait_wc(&b.rcq, "2-element receive"),
        wc(5, Success, WcOp::Recv, 2, b.num())
    );
    assert_eq!(
        p.wait_wc(&a.scq, "2-element send"),
        wc(6, Success, WcOp::Send, 2, a.num())
    );
    // Neither queue may ask for more than the device's 8.
    for (send_sge, recv_sge) in [(9, 8), (8, 9)] {
        let r = a.dev.create_qp(QpConfig {
            pd: a.pd,
            send_cq: a.scq.clone(),
            recv_cq: a.rcq.clone(),
            srq: None,
            send_depth: 4,
            recv_depth: 4,
            max_send_sge: send_sge,
            max_recv_sge: recv_sge,
            ird: 1,
            ord: 1,
            cm: Arc::new(Rec::default()),
        });
        assert_eq!(
            r.err(),
            Some(DeviceError::Invalid),
            "max_send_sge {send_sge}, max_recv_sge {recv_sge}"
        );
    }
}

#[test]
fn queue_pairs_take_as_many_sges_as_the_device_advertises() {
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let max = dev.capabilities().max_sge;
    let pd = dev.alloc_pd().expect("pd");
    let cq = dev.create_cq(16).expect("cq");
    let r = dev.create_qp(QpConfig {
        pd,
        send_cq: cq.clone(),
        recv_cq: cq,
        srq: None,
        send_depth: 4,
        recv_depth: 4,
        max_send_sge: max,
        max_recv_sge: max,
        ird: 1,
        ord: 1,
        cm: Arc::new(Rec::default()),
    });
    assert!(
        r.is_ok(),
        "capabilities().max_sge is {max}, create_qp with it: {:?}",
        r.err()
    );
}

#[test]
fn bad_local_keys_are_protection_errors_and_leave_the_connection_up() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 256, 9);
    let ro = Mem::on(&a.dev, a.pd, 256, 0, Access::LOCAL_READ);
    let dst = Mem::new(b, 256, 0);
    let bad_key = Sge {
        lkey: src.mr.lkey ^ 0x5A5A_0000,
        ..src.sge(0, 16)
    };
    let remote_key = Sge {
        lkey: src.mr.rkey,
        ..src.sge(0, 16)
    };
    let beyond = src.sge(200, 100);
    let try_send = |op: SendOp, s: Sge| {
        a.qp.post_send(&SendWr {
            wr_id: 1,
            ctx: 0,
            op,
            sgl: &[src.sge(0, 1), s],
            signaled: true,
            fence: false,
        })
    };
    for op in [send(false), write_to(&dst, 0), read_from(&dst, 0)] {
        assert_eq!(
            try_send(op, bad_key),
            Err(PostError::Protection(KeyFault::Key)),
            "{op:?}: unknown key"
        );
        assert_eq!(
            try_send(op, remote_key),
            Err(PostError::Protection(KeyFault::Key)),
            "{op:?}: a remote key used locally"
        );
        assert_eq!(
            try_send(op, beyond),
            Err(PostError::Protection(KeyFault::Bounds)),
            "{op:?}: beyond the registration"
        );
    }
    assert_eq!(
        a.qp.post_send(&SendWr {
            wr_id: 1,
            ctx: 0,
            op: read_from(&dst, 0),
            sgl: &[ro.sge(0, 16)],
            signaled: true,
            fence: false,
        }),
        Err(PostError::Protection(KeyFault::Rights)),
        "a read into memory registered without local write"
    );
    let rbad = Sge {
        lkey: dst.mr.lkey ^ 0x5A5A_0000,
        ..dst.sge(0, 16)
    };
    assert_eq!(
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &[rbad]
        }),
        Err(PostError::Protection(KeyFault::Key))
    );
    let rro = Mem::on(&b.dev, b.pd, 64, 0, Access::LOCAL_READ);
    assert_eq!(
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &[rro.sge(0, 16)]
        }),
        Err(PostError::Protection(KeyFault::Rights)),
        "a receive into memory registered without local write"
    );
    // A key of another protection domain on the same device.
    let other_pd = a.dev.alloc_pd().expect("pd");
    let foreign = Mem::on(&a.dev, other_pd, 64, 0, ALL);
    assert_eq!(
        try_send(send(false), foreign.sge(0, 8)),
        Err(PostError::Protection(KeyFault::Domain))
    );
    // Nothing was queued, nothing completes, and the connection still works.
    check_send(&p, a, b, false, &[100], &[100]);
    assert_eq!(a.qp.state(), QpState::Connected);
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

// ───────────────────────────── receiver not ready ─────────────────────────────

#[test]
fn rnr_send_held_then_satisfied_by_a_receive_posted_in_time() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let len = 200_001;
    let src = Mem::new(a, len, 0);
    let data = common::qp::pattern(len, 8);
    src.write(0, &data);
    let dst = Mem::new(b, len, 0);
    a.post_send(1, send(false), &[src.sge(0, len)]);
    // Held (no receive): nothing completes meanwhile.
    drive_for(&p.devs(), Duration::from_millis(200), || {
        for cq in [&a.scq, &a.rcq, &b.scq, &b.rcq] {
            assert_eq!(poll_one(cq), None, "completion while held");
        }
    });
    assert_eq!(b.qp.state(), QpState::Connected);
    assert_eq!(a.qp.state(), QpState::Connected);
    b.post_recv(2, &[dst.sge(0, len)]);
    assert_eq!(
        p.wait_wc(&b.rcq, "receive"),
        wc(2, Success, WcOp::Recv, len as u64, b.num())
    );
    assert_eq!(
        p.wait_wc(&a.scq, "send"),
        wc(1, Success, WcOp::Send, len as u64, a.num())
    );
    assert_bytes(&dst.read_all(), &data, "held send");
    // The connection carries on.
    check_send(&p, a, b, false, &[10], &[10]);
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

#[test]
fn rnr_send_held_then_timed_out_completes_receiver_not_ready_and_breaks_both_sides() {
    let rnr = Duration::from_millis(150);
    let short = DeviceOptions {
        rnr_timeout: rnr,
        ..opts()
    };
    let p = Pair::with(opts(), short, QpOpts::default(), QpOpts::default());
    let (a, b) = (&p.a, &p.b);
    let src = Mem::new(a, 100_000, 1);
    let remote = Mem::new(b, 100_000, 0);
    let ar = Mem::new(a, 64, 0);
    a.post_recv(30, &[ar.sge(0, 64)]);
    let t = Instant::now();
    a.post_send(1, send(false), &[src.sge(0, 5_000)]);
    a.post_send(2, write_to(&remote, 0), &[src.sge(0, 100_000)]);
    a.post_send(3, send(true), &[src.sge(0, 64)]);
    assert_eq!(p.wait_ev(&b.rec, "receiver breaks"), Got::Broken);
    let held = t.elapsed();
    assert!(held >= rnr, "held for the RNR time (only {held:?})");
    assert_eq!(p.wait_ev(&a.rec, "sender breaks"), Got::Broken);
    assert_eq!(
        p.wait_wcs(&a.scq, 3, "send queue"),
        vec![
            wc(1, WcStatus::ReceiverNotReady, WcOp::Send, 0, a.num()),
            wc(2, Flushed, WcOp::RdmaWrite, 0, a.num()),
            wc(3, Flushed, WcOp::Send, 0, a.num()),
        ]
    );
    assert_eq!(
        p.wait_wc(&a.rcq, "receive queue"),
        wc(30, Flushed, WcOp::Recv, 0, a.num())
    );
    assert_no_wc(&p.devs(), &a.scq, Duration::from_millis(30));
    for cq in [&a.rcq, &b.scq, &b.rcq] {
        assert_eq!(poll_one(cq), None);
    }
    assert!(
        remote.read_all().iter().all(|&x| x == 0),
        "nothing after the held Send was placed"
    );
    assert_eq!(a.qp.state(), QpState::Closed);
    assert_eq!(b.qp.state(), QpState::Closed);
    assert_eq!(
        b.qp.post_recv(&RecvWr {
            wr_id: 4,
            ctx: 0,
            sgl: &[]
        }),
        Err(PostError::State)
    );
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

// ───────────────────────────── connection setup ─────────────────────────────

#[test]
fn reject_delivers_the_private_data_to_the_initiator() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = Side::new(&da, QpOpts::default());
    let m = Mem::new(&a, 64, 0);
    a.post_recv(5, &[m.sge(0, 64)]);
    a.qp.connect(SocketAddr::new(LO, 0), l.port(), REQ_PD, DEADLINE)
        .expect("connect");
    let devs = [&da, &db];
    let r = wait_request(&devs, &lrec, "request");
    assert_eq!(r.private_data, REQ_PD);
    let why = b"no room at the inn, try port 4791 \x00\xff";
    l.reject(r.id, why).expect("reject");
    assert_eq!(
        wait_ev(&devs, &a.rec, "rejected"),
        Got::Rejected(why.to_vec())
    );
    assert_eq!(
        wait_wc(&devs, &a.rcq, "early receive flushed"),
        wc(5, Flushed, WcOp::Recv, 0, a.num())
    );
    assert_eq!(a.qp.state(), QpState::Closed);
    drive_for(&devs, Duration::from_millis(30), || {});
    assert!(a.rec.take().is_empty(), "one event");
    assert!(lrec.take().is_empty());
    assert_eq!(l.reject(r.id, b""), Err(DeviceError::NotFound));
}

#[test]
fn connect_carries_as_much_private_data_as_the_device_advertises() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let max = da.capabilities().max_private_data as usize;
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = Side::new(&da, QpOpts::default());
    let b = Side::new(&db, QpOpts::default());
    let req = common::qp::pattern(max, 1);
    let rep = common::qp::pattern(max, 2);
    assert_eq!(
        a.qp.connect(SocketAddr::new(LO, 0), l.port(), &req, DEADLINE),
        Ok(()),
        "connect with {max} bytes of private data"
    );
    let devs = [&da, &db];
    let r = wait_request(&devs, &lrec, "request");
    assert_bytes(&r.private_data, &req, "request private data");
    assert_eq!(
        db.accept(r.id, &*b.qp, &rep),
        Ok(()),
        "accept with {max} bytes"
    );
    assert_eq!(
        wait_ev(&devs, &a.rec, "established"),
        Got::Established(rep.clone())
    );
    assert_eq!(wait_ev(&devs, &b.rec, "established"), Got::Established(req));
}

#[test]
fn connect_with_no_listener_is_unreachable() {
    let port = {
        let l = TcpListener::bind((LO, 0)).expect("bind");
        l.local_addr().expect("addr").port()
    };
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let a = Side::new(&da, QpOpts::default());
    a.qp.connect(SocketAddr::new(LO, 0), port, b"", DEADLINE)
        .expect("connect");
    assert_eq!(wait_ev(&[&da], &a.rec, "unreachable"), Got::Unreachable);
    drive_for(&[&da], Duration::from_millis(30), || {});
    assert!(a.rec.take().is_empty(), "one event");
    assert_eq!(a.qp.state(), QpState::Closed);
}

#[test]
fn connect_to_a_listener_that_never_accepts_times_out() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = Side::new(&da, QpOpts::default());
    let timeout = Duration::from_millis(300);
    let t = Instant::now();
    a.qp.connect(SocketAddr::new(LO, 0), l.port(), REQ_PD, timeout)
        .expect("connect");
    let devs = [&da, &db];
    assert_eq!(wait_ev(&devs, &a.rec, "timed out"), Got::TimedOut);
    let took = t.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(5),
        "{took:?}"
    );
    let reqs = lrec.take();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let Got::Request(Request { id, .. }) = reqs[0] else {
        panic!("{reqs:?}")
    };
    assert!(a.rec.take().is_empty(), "one event");
    // Accepting the stale request now fails: the initiator went away.
    let b = Side::new(&db, QpOpts::default());
    assert_eq!(db.accept(id, &*b.qp, b""), Ok(()));
    assert_eq!(wait_ev(&devs, &b.rec, "accept failed"), Got::AcceptFailed);
}

#[test]
fn connect_to_a_tcp_listener_that_never_answers_mpa_times_out() {
    let silent = TcpListener::bind((LO, 0)).expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let a = Side::new(&da, QpOpts::default());
    let timeout = Duration::from_millis(300);
    let t = Instant::now();
    a.qp.connect(SocketAddr::new(LO, 0), port, REQ_PD, timeout)
        .expect("connect");
    assert_eq!(wait_ev(&[&da], &a.rec, "timed out"), Got::TimedOut);
    let took = t.elapsed();
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(5),
        "{took:?}"
    );
    drive_for(&[&da], Duration::from_millis(30), || {});
    assert!(a.rec.take().is_empty(), "one event");
    assert_eq!(a.qp.state(), QpState::Closed);
    drop(silent);
}

/// The initiator's nudges between two devices of this library. They exist
/// for the Linux kernel's siw (6.1) as responder, which loses what arrives
/// between its MPA Reply and the moment its socket callbacks are in place
/// (our RTR sits unread until more bytes come): while nothing at all has
/// come back since the connection came up, the initiator sends zero-length
/// RDMA Writes (STag 0, TO 0: the RTR's form) 10, 20, 40, ... ms apart, at
/// most 6. A responder of this library that never sends (a server waiting
/// for requests) receives all of them: they must have no effect there (no
/// completion, no event, no error), and the connection must work
/// afterwards. A relay counts the FPDUs on the wire; nobody drives the
/// devices while it watches (the progress threads keep the schedule).
#[test]
fn silent_responder_takes_the_initiators_nudges_without_effect() {
    for crc in [false, true] {
        let o = DeviceOptions { crc, ..opts() };
        let (p, tap) = Pair::tapped(o, opts(), QpOpts::default(), QpOpts::default(), None);
        let end = Instant::now() + DEADLINE;
        while tap.fwd().fpdus < 7 {
            assert!(
                Instant::now() < end,
                "the RTR and six nudges: {:?}",
                tap.fwd()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // The next would have come 640 ms after the sixth.
        std::thread::sleep(Duration::from_millis(1500));
        let (f, b) = (tap.fwd(), tap.back());
        assert_eq!(f.fpdus, 7, "the RTR and six nudges, no more: {f:?}");
        assert_eq!(b.fpdus, 0, "the responder sent nothing: {b:?}");
        if crc {
            assert_eq!(f.crc_good, 7, "CRC on every nudge: {f:?}");
        } else {
            assert_eq!(f.crc_zero, 7, "{f:?}");
        }
        for (side, s) in [("initiator", &p.a), ("responder", &p.b)] {
            assert_eq!(poll_one(&s.scq), None, "{side}: no send completion");
            assert_eq!(poll_one(&s.rcq), None, "{side}: no receive completion");
            assert!(s.rec.is_empty(), "{side}: no event: {:?}", s.rec.peek());
            assert_eq!(s.qp.state(), QpState::Connected, "{side}");
        }
        exercise(&p);
        assert!(p.a.rec.is_empty() && p.b.rec.is_empty());
    }
}

// ───────────────────────────── CRC, FPDU size ─────────────────────────────

/// A tapped pair with CRC requested as given: data verified, and on the
/// wire every FPDU's CRC field is the CRC32c of the FPDU when either side
/// asked, zero otherwise.
fn crc_case(a_crc: bool, b_crc: bool) {
    let (p, tap) = Pair::tapped(
        DeviceOptions {
            crc: a_crc,
            ..opts()
        },
        DeviceOptions {
            crc: b_crc,
            ..opts()
        },
        QpOpts::default(),
        QpOpts::default(),
        None,
    );
    exercise(&p);
    let used = a_crc || b_crc;
    let (f, b) = (tap.fwd(), tap.back());
    assert_eq!(
        f.mpa_flags.map(|x| x & MPA_CRC != 0),
        Some(a_crc),
        "Request's C flag"
    );
    assert_eq!(
        b.mpa_flags.map(|x| x & MPA_CRC != 0),
        Some(used),
        "Reply's C flag"
    );
    for (dir, s) in [("initiator → responder", &f), ("responder → initiator", &b)] {
        assert!(s.fpdus > 20, "{dir}: {s:?}");
        assert_eq!(s.crc_bad, 0, "{dir}: {s:?}");
        if used {
            assert_eq!(s.crc_good, s.fpdus, "{dir}: every FPDU has a CRC: {s:?}");
        } else {
            assert_eq!(s.crc_zero, s.fpdus, "{dir}: no CRCs: {s:?}");
        }
    }
}

#[test]
fn crc_off_on_both_sides_sends_zero_crc_fields_and_moves_data_intact() {
    crc_case(false, false);
}

#[test]
fn crc_requested_by_the_initiator_only_is_used_both_ways() {
    crc_case(true, false);
}

#[test]
fn crc_requested_by_the_responder_only_is_used_both_ways() {
    crc_case(false, true);
}

#[test]
fn crc_on_both_sides_is_used_and_moves_data_intact() {
    crc_case(true, true);
}

/// The MSS the tap announces to both devices.
const SMALL_MSS: u32 = 1_200;

#[test]
fn fpdu_mss_keeps_every_fpdu_within_the_tcp_mss_on_large_transfers() {
    let mss = DeviceOptions {
        fpdu_mss: true,
        ..opts()
    };
    let (p, tap) = Pair::tapped(
        mss,
        mss,
        QpOpts::default(),
        QpOpts::default(),
        Some(SMALL_MSS),
    );
    exercise(&p);
    check_write(&p, &p.a, &p.b, &[(1 << 21) + 1], 0);
    check_read(&p, &p.a, &p.b, &[(1 << 21) + 1], 0);
    for (dir, s) in [
        ("initiator → responder", tap.fwd()),
        ("responder → initiator", tap.back()),
    ] {
        assert!(s.fpdus > 2_000, "{dir}: {s:?}");
        assert!(
            s.max_fpdu <= SMALL_MSS as usize,
            "{dir}: an FPDU of {} bytes with an MSS of {SMALL_MSS}",
            s.max_fpdu
        );
        assert!(
            s.max_fpdu > SMALL_MSS as usize - 100,
            "{dir}: FPDUs fill the MSS: {s:?}"
        );
    }
}

#[test]
fn without_fpdu_mss_fpdus_exceed_a_small_tcp_mss() {
    let (p, tap) = Pair::tapped(
        opts(),
        opts(),
        QpOpts::default(),
        QpOpts::default(),
        Some(SMALL_MSS),
    );
    check_write(&p, &p.a, &p.b, &[300_000], 0);
    check_read(&p, &p.a, &p.b, &[300_000], 0);
    for (dir, s) in [
        ("initiator → responder", tap.fwd()),
        ("responder → initiator", tap.back()),
    ] {
        assert!(s.max_fpdu > 60_000, "{dir}: 64 KiB FPDUs by default: {s:?}");
    }
}

// ───────────────────────────── local completion ─────────────────────────────

#[test]
fn local_completion_on_both_sides_runs_every_operation() {
    let lc = DeviceOptions {
        local_completion: true,
        ..opts()
    };
    let p = Pair::with(lc, lc, QpOpts::default(), QpOpts::default());
    exercise(&p);
    many_reads(&p, 6);
    for len in ONE_SGE_LENS {
        check_write(&p, &p.a, &p.b, &[len], 1);
    }
}

#[test]
fn local_completion_on_one_side_runs_every_operation() {
    let lc = DeviceOptions {
        local_completion: true,
        ..opts()
    };
    exercise(&Pair::with(
        lc,
        opts(),
        QpOpts::default(),
        QpOpts::default(),
    ));
    exercise(&Pair::with(
        opts(),
        lc,
        QpOpts::default(),
        QpOpts::default(),
    ));
}

// ───────────────────────────── peer death ─────────────────────────────

/// Set (to anything) in the re-executed test binary that plays the peer.
const PEER_ENV: &str = "UDAPL_QP_OPS_PEER";
/// The peer's target region.
const PEER_MEM: usize = 4 << 20;
/// Receives the peer posts for the parent's Sends.
const PEER_RECVS: u64 = 8;

/// The peer role of `peer_killed_mid_transfer_…` (a no-op in a normal
/// run): listens, accepts one connection, prints
/// `PEER <port> <addr> <rkey>` and drives its device until killed (or 60 s).
#[test]
fn peer_process_entry_point() {
    if std::env::var_os(PEER_ENV).is_none() {
        return;
    }
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let s = Side::new(&dev, QpOpts::default());
    let lrec = Arc::new(Rec::default());
    let l = dev.listen(0, lrec.clone()).expect("listen");
    let mem = Mem::new(&s, PEER_MEM, 0x5C);
    let rbuf = Mem::new(&s, 64 * 1024 * PEER_RECVS as usize, 0);
    for i in 0..PEER_RECVS {
        let off = i as usize * 64 * 1024;
        s.post_recv(i, &[rbuf.sge(off, 64 * 1024)]);
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "PEER {} {} {}", l.port(), mem.addr(0), mem.mr.rkey).expect("stdout");
        out.flush().expect("flush");
    }
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        dev.progress();
        if let Some(Got::Request(r)) = lrec.pop() {
            dev.accept(r.id, &*s.qp, b"peer").expect("accept");
        }
        while poll_one(&s.scq).is_some() || poll_one(&s.rcq).is_some() {}
    }
}

/// Kills (SIGKILL) and reaps the child when dropped.
struct ChildGuard(Child);
impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether every thread of process `pid` is stopped.
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut n = 0;
    for t in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            return false;
        };
        // "tid (comm) S ...": the state follows the last ')'.
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.trim_start().chars().next());
        if !matches!(state, Some('T' | 't')) {
            return false;
        }
        n += 1;
    }
    n > 0
}

#[test]
fn peer_killed_mid_transfer_flushes_every_outstanding_request_once_and_reports_disconnected() {
    const WRITES: u64 = 24;
    let mut child = ChildGuard(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "peer_process_entry_point",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(PEER_ENV, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the peer"),
    );
    let pid = child.0.id();
    let out = child.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (port, raddr, rkey) = loop {
        let line = rx.recv_timeout(DEADLINE).expect("the peer's PEER line");
        // The harness may have printed "test … ... " on the same line.
        let Some(at) = line.find("PEER ") else {
            continue;
        };
        let f: Vec<&str> = line[at..].split_whitespace().collect();
        if f.len() == 4 {
            break (
                f[1].parse::<u16>().expect("port"),
                f[2].parse::<u64>().expect("addr"),
                f[3].parse::<u32>().expect("rkey"),
            );
        }
    };
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let a = Side::new(&dev, QpOpts::default());
    let devs = [&dev];
    a.qp.connect(SocketAddr::new(LO, 0), port, b"", DEADLINE)
        .expect("connect");
    assert_eq!(
        wait_ev(&devs, &a.rec, "established"),
        Got::Established(b"peer".to_vec())
    );
    let src = Mem::new(&a, PEER_MEM, 0xA5);
    let sink = Mem::new(&a, PEER_MEM, 0);
    let arecv = Mem::new(&a, 4 * 64, 0);
    for i in 0..4u64 {
        a.post_recv(1_000 + i, &[arecv.sge(i as usize * 64, 64)]);
    }
    // Large Writes, with a Read and a Send between them.
    let mut posted: Vec<(u64, WcOp)> = Vec::new();
    let whole = SendOp::RdmaWrite {
        remote_addr: raddr,
        rkey,
    };
    // A first Write completes while the peer runs; then the peer is frozen
    // and the rest is posted: it cannot finish before the kill.
    a.post_send(0, whole, &[src.sge(0, PEER_MEM)]);
    posted.push((0, WcOp::RdmaWrite));
    let mut seen: Vec<Wc> = Vec::new();
    let drain = |seen: &mut Vec<Wc>| {
        while let Some(w) = poll_one(&a.scq) {
            seen.push(w);
        }
    };
    spin(&devs, "the first completion", || {
        drain(&mut seen);
        !seen.is_empty()
    });
    // Frozen, its receive buffer fills: its death is a reset, and the set
    // of outstanding requests is known exactly.
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    spin_for(&[], "the peer to stop", DEADLINE, || {
        all_threads_stopped(pid)
    });
    for i in 1..WRITES {
        a.post_send(i, whole, &[src.sge(0, PEER_MEM)]);
        posted.push((i, WcOp::RdmaWrite));
        if i == 4 {
            let rd = SendOp::RdmaRead {
                remote_addr: raddr,
                rkey,
            };
            a.post_send(100, rd, &[sink.sge(0, PEER_MEM)]);
            posted.push((100, WcOp::RdmaRead));
            a.post_send(101, send(false), &[src.sge(0, 60_000)]);
            posted.push((101, WcOp::Send));
        }
    }
    drive_for(&devs, Duration::from_millis(150), || drain(&mut seen));
    let before = seen.len();
    assert!(
        seen.iter().all(|w| w.status == Success),
        "before the kill: {seen:?}"
    );
    assert!(
        before < posted.len() - 10,
        "most of the transfer is still outstanding ({before} of {} done)",
        posted.len()
    );
    assert_eq!(a.rec.take(), Vec::<Got>::new(), "no event before the kill");
    child.0.kill().expect("kill -9");
    let t = Instant::now();
    // A peer process that dies disconnects (rulings: teardown events).
    spin(&devs, "every request and the Disconnected event", || {
        drain(&mut seen);
        seen.len() >= posted.len() && !a.rec.is_empty()
    });
    let took = t.elapsed();
    let status = child.0.wait().expect("reap");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // A little longer: nothing completes twice, no second event.
    drive_for(&devs, Duration::from_millis(100), || drain(&mut seen));
    assert_eq!(a.rec.take(), vec![Got::Disconnected], "after {took:?}");
    assert_eq!(seen.len(), posted.len(), "each request completes once");
    for (k, w) in seen.iter().enumerate() {
        let (id, op) = posted[k];
        let status = if k < before { Success } else { Flushed };
        let len = match (status, op) {
            (Flushed, _) => 0,
            (_, WcOp::Send) => 60_000,
            _ => PEER_MEM as u64,
        };
        assert_eq!(*w, wc(id, status, op, len, a.num()), "completion {k}");
    }
    let recvs = wait_wcs(&devs, &a.rcq, 4, "receives flushed");
    for (i, w) in recvs.iter().enumerate() {
        assert_eq!(*w, wc(1_000 + i as u64, Flushed, WcOp::Recv, 0, a.num()));
    }
    assert_eq!(poll_one(&a.rcq), None);
    assert_eq!(a.qp.state(), QpState::Closed);
    assert_eq!(
        a.qp.post_send(&SendWr {
            wr_id: 1,
            ctx: 0,
            op: send(false),
            sgl: &[],
            signaled: true,
            fence: false,
        }),
        Err(PostError::State)
    );
}

#[test]
fn peer_stream_ending_inside_an_fpdu_is_a_disconnect() {
    // A raw TCP peer plays the initiator: an MPA Request (revision 2, IRD
    // and ORD 1, no RTR), then half an FPDU and an orderly FIN, as a peer
    // process that dies while its engine is part-way through writing an
    // FPDU would leave the stream: the peer disconnected (rulings:
    // teardown events; rdma_cm reports any iWARP close so).
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let b = Side::new(&db, QpOpts::default());
    let m = Mem::new(&b, 1_000, 0);
    b.post_recv(1, &[m.sge(0, 1_000)]);
    let mut raw = std::net::TcpStream::connect((LO, l.port())).expect("connect");
    let mut req = b"MPA ID Req Frame".to_vec();
    req.extend_from_slice(&[0x10, 2, 0, 4, 0, 1, 0, 1]);
    raw.write_all(&req).expect("request");
    let devs = [&db];
    let r = wait_request(&devs, &lrec, "request");
    db.accept(r.id, &*b.qp, b"").expect("accept");
    assert_eq!(
        wait_ev(&devs, &b.rec, "established"),
        Got::Established(vec![])
    );
    let mut reply = [0u8; 24];
    raw.set_read_timeout(Some(DEADLINE)).expect("timeout");
    std::io::Read::read_exact(&mut raw, &mut reply).expect("reply");
    assert_eq!(&reply[..16], b"MPA ID Rep Frame");
    // A Send FPDU (queue 0, MSN 1, MO 0, last) announcing 200 bytes of
    // ULPDU; its header and 50 of its 182 payload bytes arrive.
    let mut fpdu = vec![
        0, 200, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    ];
    fpdu.extend_from_slice(&[0x77; 50]);
    raw.write_all(&fpdu).expect("half an FPDU");
    raw.shutdown(std::net::Shutdown::Write).expect("FIN");
    assert_eq!(wait_ev(&devs, &b.rec, "end of stream"), Got::Disconnected);
    assert_eq!(
        wait_wc(&devs, &b.rcq, "receive flushed"),
        wc(1, Flushed, WcOp::Recv, 0, b.num())
    );
}

// ───────────────────────────── many queue pairs ─────────────────────────────

#[test]
fn sixty_four_queue_pairs_between_two_devices_carry_verified_traffic() {
    const N: usize = 64;
    const W: usize = 8_192;
    const S: usize = 3_000;
    const R: usize = 5_000;
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let devs = [&da, &db];
    let (pa, pb) = (da.alloc_pd().expect("pd"), db.alloc_pd().expect("pd"));
    // One CQ per device for all its queue pairs.
    let cqa = da.create_cq(4 * N as u32).expect("cq");
    let cqb = db.create_cq(4 * N as u32).expect("cq");
    let q = QpOpts {
        send_depth: 8,
        recv_depth: 4,
        ird: 2,
        ord: 2,
        ..QpOpts::default()
    };
    let a: Vec<Side> = (0..N)
        .map(|_| Side::with_cqs(&da, pa, cqa.clone(), cqa.clone(), q))
        .collect();
    let b: Vec<Side> = (0..N)
        .map(|_| Side::with_cqs(&db, pb, cqb.clone(), cqb.clone(), q))
        .collect();
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    // All connect at once; the private data names the peer to accept with.
    for (i, s) in a.iter().enumerate() {
        s.qp.connect(
            SocketAddr::new(LO, 0),
            l.port(),
            &(i as u32).to_be_bytes(),
            DEADLINE,
        )
        .expect("connect");
    }
    let mut accepted = 0;
    spin(&devs, "64 connect requests", || {
        while let Some(g) = lrec.pop() {
            let Got::Request(Request {
                id, private_data, ..
            }) = g
            else {
                panic!("{g:?}")
            };
            let i = u32::from_be_bytes(private_data[..4].try_into().expect("index")) as usize;
            db.accept(id, &*b[i].qp, &private_data).expect("accept");
            accepted += 1;
        }
        accepted == N
    });
    spin(&devs, "64 connections established", || {
        a.iter().chain(&b).all(|s| s.rec.len() == 1)
    });
    for (i, s) in a.iter().chain(&b).enumerate() {
        let pd = ((i % N) as u32).to_be_bytes().to_vec();
        assert_eq!(s.rec.take(), vec![Got::Established(pd)], "qp {i}");
    }
    // Per pair: a Write, a Send and a Read, each its own bytes.
    let wsrc = Mem::on(&da, pa, N * (W + S + 2 * N), 0, ALL);
    let wdst = Mem::on(&db, pb, N * (W + N), 0, ALL);
    let rbuf = Mem::on(&db, pb, N * (S + N), 0, ALL);
    let rsrc = Mem::on(&db, pb, N * (R + N), 0, ALL);
    let rdst = Mem::on(&da, pa, N * (R + N), 0, ALL);
    let data = common::qp::pattern(wsrc.len(), 1);
    wsrc.write(0, &data);
    let rdata = common::qp::pattern(rsrc.len(), 2);
    rsrc.write(0, &rdata);
    let (wl, sl, rl) = (|i: usize| W + i, |i: usize| S + i, |i: usize| R + i);
    for (i, s) in b.iter().enumerate() {
        s.post_recv(i as u64, &[rbuf.sge(i * (S + N), sl(i))]);
    }
    for (i, s) in a.iter().enumerate() {
        let base = i * (W + S + 2 * N);
        let w = i as u64 * 10;
        s.post_send(
            w + 1,
            write_to(&wdst, i * (W + N)),
            &[wsrc.sge(base, wl(i))],
        );
        s.post_send(w + 2, send(false), &[wsrc.sge(base + W + N, sl(i))]);
        s.post_send(
            w + 3,
            read_from(&rsrc, i * (R + N)),
            &[rdst.sge(i * (R + N), rl(i))],
        );
    }
    let wa = wait_wcs(&devs, &cqa, 3 * N, "64 × write, send, read");
    let wb = wait_wcs(&devs, &cqb, N, "64 receives");
    for i in 0..N {
        let mine: Vec<Wc> = wa.iter().filter(|w| w.qp == a[i].num()).copied().collect();
        let w = i as u64 * 10;
        assert_eq!(
            mine,
            vec![
                wc(w + 1, Success, WcOp::RdmaWrite, wl(i) as u64, a[i].num()),
                wc(w + 2, Success, WcOp::Send, sl(i) as u64, a[i].num()),
                wc(w + 3, Success, WcOp::RdmaRead, rl(i) as u64, a[i].num()),
            ],
            "queue pair {i}"
        );
        let theirs: Vec<Wc> = wb.iter().filter(|w| w.qp == b[i].num()).copied().collect();
        assert_eq!(
            theirs,
            vec![wc(i as u64, Success, WcOp::Recv, sl(i) as u64, b[i].num())],
            "queue pair {i}"
        );
        let base = i * (W + S + 2 * N);
        assert_bytes(
            &wdst.read(i * (W + N), wl(i)),
            &data[base..base + wl(i)],
            &format!("write {i}"),
        );
        let s0 = base + W + N;
        assert_bytes(
            &rbuf.read(i * (S + N), sl(i)),
            &data[s0..s0 + sl(i)],
            &format!("send {i}"),
        );
        let r0 = i * (R + N);
        assert_bytes(
            &rdst.read(r0, rl(i)),
            &rdata[r0..r0 + rl(i)],
            &format!("read {i}"),
        );
    }
    assert_no_wc(&devs, &cqa, Duration::from_millis(20));
    assert_eq!(poll_one(&cqb), None);
    for s in a.iter().chain(&b) {
        assert!(s.rec.take().is_empty());
        assert_eq!(s.qp.state(), QpState::Connected);
    }
}

// ───────────────────────────── disconnect ─────────────────────────────

#[test]
fn graceful_disconnect_reports_disconnected_on_both_sides_and_flushes_receives() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    check_send(&p, a, b, false, &[1_000], &[1_000]);
    let ma = Mem::new(a, 3 * 64, 0);
    let mb = Mem::new(b, 3 * 64, 0);
    for i in 0..3u64 {
        a.post_recv(10 + i, &[ma.sge(i as usize * 64, 64)]);
        b.post_recv(20 + i, &[mb.sge(i as usize * 64, 64)]);
    }
    a.qp.disconnect(true).expect("disconnect");
    assert_eq!(a.rec.take(), vec![Got::Disconnected], "the closing side");
    assert_eq!(
        p.wait_ev(&b.rec, "the peer sees the close"),
        Got::Disconnected
    );
    let fa = p.wait_wcs(&a.rcq, 3, "a's receives flushed");
    let fb = p.wait_wcs(&b.rcq, 3, "b's receives flushed");
    for i in 0..3 {
        assert_eq!(fa[i], wc(10 + i as u64, Flushed, WcOp::Recv, 0, a.num()));
        assert_eq!(fb[i], wc(20 + i as u64, Flushed, WcOp::Recv, 0, b.num()));
    }
    drive_for(&p.devs(), Duration::from_millis(100), || {});
    for cq in [&a.scq, &a.rcq, &b.scq, &b.rcq] {
        assert_eq!(poll_one(cq), None);
    }
    assert!(
        a.rec.take().is_empty() && b.rec.take().is_empty(),
        "one event each"
    );
    assert_eq!(a.qp.state(), QpState::Closed);
    assert_eq!(b.qp.state(), QpState::Closed);
    for s in [a, b] {
        assert_eq!(
            s.qp.post_send(&SendWr {
                wr_id: 1,
                ctx: 0,
                op: send(false),
                sgl: &[],
                signaled: true,
                fence: false,
            }),
            Err(PostError::State)
        );
        assert_eq!(
            s.qp.post_recv(&RecvWr {
                wr_id: 1,
                ctx: 0,
                sgl: &[]
            }),
            Err(PostError::State)
        );
    }
}

#[test]
fn graceful_disconnect_lets_queued_work_finish_first() {
    let p = Pair::new();
    let (a, b) = (&p.a, &p.b);
    let len = 4 << 20;
    let src = Mem::new(a, len, 0);
    let data = common::qp::pattern(len, 6);
    src.write(0, &data);
    let remote = Mem::new(b, len, 0);
    let rb = Mem::new(b, 1_000, 0);
    b.post_recv(7, &[rb.sge(0, 1_000)]);
    a.post_send(1, write_to(&remote, 0), &[src.sge(0, len)]);
    a.post_send(2, send(false), &[src.sge(0, 1_000)]);
    a.qp.disconnect(true).expect("disconnect");
    assert_eq!(
        p.wait_wcs(&a.scq, 2, "queued work"),
        vec![
            wc(1, Success, WcOp::RdmaWrite, len as u64, a.num()),
            wc(2, Success, WcOp::Send, 1_000, a.num()),
        ]
    );
    assert_eq!(
        p.wait_wc(&b.rcq, "receive"),
        wc(7, Success, WcOp::Recv, 1_000, b.num())
    );
    assert_bytes(&remote.read_all(), &data, "written before the close");
    assert_eq!(a.rec.take(), vec![Got::Disconnected]);
    assert_eq!(p.wait_ev(&b.rec, "peer"), Got::Disconnected);
}
