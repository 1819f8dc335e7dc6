//! The iWARP device between two network namespaces joined by a veth pair:
//! a connection, a Send, an RDMA Write and an RDMA Read, data verified,
//! over a real (virtual) link instead of loopback.
//!
//! Setup (as root, all made and removed by the test): namespaces
//! `udapl-<pid>-<n>-a` and `…-b`, a veth pair `ud<pid>a` (10.199.X.1/24, in
//! A) — `ud<pid>b` (10.199.X.2/24, in B), X from the pid. Nothing is added
//! to the host's namespace: the pair is created inside the two namespaces,
//! and the namespaces' guards delete them (and the pair) on drop, also when
//! the test fails. Traffic stays on the veth.
//!
//! Each side runs on its own thread that first moved into its namespace
//! (`setns(CLONE_NEWNET)`, thread-local). The device creates sockets only
//! in `listen` (bind), `connect` (socket + connect) and, for accepted
//! connections, in the listener's own namespace; all of these run on the
//! side's thread, and every wait drives only that side's device. The test
//! checks that this holds: the host namespace does not have the
//! addresses (so a listener bound to 10.199.X.1 exists only in A), the
//! connect request arrives from 10.199.X.2 (B's veth address) at
//! 10.199.X.1, and the veth's byte counters show the transfers crossed it.
//!
//! Skips (prints `skipped: …` and passes) when not root or when `ip netns`
//! is unavailable.

mod common {
    pub mod netns;
    pub mod qp;
    pub mod tshark;
}

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use common::netns::Netns;
use common::qp::{
    pattern, settle, sge, spin, wait_ev, wait_ok, wait_request, wait_wc, Got, QpOpts, Rec, Side,
    DEADLINE,
};
use common::tshark::skip;
use udapl::transport::api::{Device, QpState, SendOp, WcOp, WcStatus};
use udapl::transport::tcp::IwarpDevice;
use udapl::transport::SOFTWARE_CAPABILITIES;

const SEND_LEN: usize = 5000;
const WRITE_LEN: usize = 300_000;
const READ_LEN: usize = 300_000;
const PD_REQ: &[u8] = b"from namespace B";
const PD_REP: &[u8] = b"from namespace A";

/// What one side's thread tells the other.
#[derive(Debug)]
enum Note {
    /// A listens on this port.
    Port(u16),
    /// A posted its receive and registered its buffers: the Write target
    /// and the Read source (address, STag).
    Ready {
        target: (u64, u32),
        source: (u64, u32),
    },
    /// B's RDMA Write completed (A checks the bytes).
    Written,
    /// B's RDMA Read completed and its bytes were right.
    ReadDone,
}

/// Waits for the peer thread's next note while driving this side's device.
fn note(devs: &[&Arc<IwarpDevice>], rx: &Receiver<Note>, what: &str) -> Note {
    let mut got = None;
    spin(devs, what, || match rx.try_recv() {
        Ok(n) => {
            got = Some(n);
            true
        }
        Err(TryRecvError::Empty) => false,
        Err(TryRecvError::Disconnected) => panic!("{what}: the other side's thread ended"),
    });
    got.expect("note")
}

/// Namespace A: listens, accepts, receives the Send, is written to and read
/// from.
fn side_a(ns: &Netns, me: Ipv4Addr, peer: Ipv4Addr, tx: Sender<Note>, rx: Receiver<Note>) {
    ns.enter();
    let dev = IwarpDevice::open(IpAddr::V4(me), SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    // Binds 10.199.X.1, which only namespace A has.
    let l = dev
        .listen(0, lrec.clone())
        .expect("listen on A's veth address from a thread in A");
    let port = l.port();
    tx.send(Note::Port(port)).expect("to B");
    let side = Side::one_cq(&dev, QpOpts::reads(4, 4));
    let devs = [&dev];
    let r = wait_request(&devs, &lrec, "the connect request");
    assert_eq!(
        (r.remote.ip(), r.local),
        (IpAddr::V4(peer), SocketAddr::new(IpAddr::V4(me), port)),
        "the request came from B's veth address to A's"
    );
    assert_eq!(r.private_data, PD_REQ);
    dev.accept(r.id, &*side.qp, PD_REP).expect("accept");
    assert!(matches!(
        wait_ev(&devs, &side.rec, "A established"),
        Got::Established(_)
    ));

    let inbox = vec![0u8; SEND_LEN + 64];
    let target = vec![0u8; WRITE_LEN];
    let source = pattern(READ_LEN, 3);
    let (mi, mt, ms) = (side.reg(&inbox), side.reg(&target), side.reg(&source));
    side.post_recv(10, &[sge(&mi, inbox.len())]);
    tx.send(Note::Ready {
        target: (mt.addr, mt.rkey),
        source: (ms.addr, ms.rkey),
    })
    .expect("to B");

    let r = wait_wc(&devs, side.cq(), "the Send from B");
    assert_eq!(
        (r.wr_id, r.status, r.op, r.byte_len),
        (10, WcStatus::Success, WcOp::Recv, SEND_LEN as u64)
    );
    assert!(inbox[..SEND_LEN] == pattern(SEND_LEN, 1)[..], "Send data");
    assert!(matches!(note(&devs, &rx, "B's Write",), Note::Written));
    assert!(target == pattern(WRITE_LEN, 2), "RDMA Write data");
    assert!(matches!(note(&devs, &rx, "B's Read"), Note::ReadDone));
    assert_eq!(
        wait_ev(&devs, &side.rec, "A disconnected by B"),
        Got::Disconnected
    );
    assert_eq!(side.qp.state(), QpState::Closed);
    settle(&devs, "the device to go idle");
    for mr in [mi, mt, ms] {
        dev.deregister(&mr).expect("deregister");
    }
}

/// Namespace B: connects, sends, writes, reads, disconnects.
fn side_b(ns: &Netns, me: Ipv4Addr, peer: Ipv4Addr, tx: Sender<Note>, rx: Receiver<Note>) {
    ns.enter();
    let dev = IwarpDevice::open(IpAddr::V4(me), SOFTWARE_CAPABILITIES);
    let side = Side::one_cq(&dev, QpOpts::reads(4, 4));
    let devs = [&dev];
    let Note::Port(port) = note(&devs, &rx, "A's port") else {
        panic!("expected A's port")
    };
    // The socket is made here, on a thread in B: 10.199.X.1 is reachable
    // through the veth only.
    side.qp
        .connect(SocketAddr::new(IpAddr::V4(peer), 0), port, PD_REQ, DEADLINE)
        .expect("connect");
    assert_eq!(
        wait_ev(&devs, &side.rec, "B established"),
        Got::Established(PD_REP.to_vec())
    );
    let Note::Ready { target, source } = note(&devs, &rx, "A ready") else {
        panic!("expected A's buffers")
    };

    let out = pattern(SEND_LEN, 1);
    let data = pattern(WRITE_LEN, 2);
    let back = vec![0u8; READ_LEN];
    let (mo, md, mb) = (side.reg(&out), side.reg(&data), side.reg(&back));
    let send = SendOp::Send { solicited: false };
    side.post_send(1, send, &[sge(&mo, SEND_LEN)]);
    wait_ok(&devs, side.cq(), 1, WcOp::Send, "B's Send");
    let write = SendOp::RdmaWrite {
        remote_addr: target.0,
        rkey: target.1,
    };
    side.post_send(2, write, &[sge(&md, WRITE_LEN)]);
    wait_ok(&devs, side.cq(), 2, WcOp::RdmaWrite, "B's RDMA Write");
    tx.send(Note::Written).expect("to A");
    let read = SendOp::RdmaRead {
        remote_addr: source.0,
        rkey: source.1,
    };
    side.post_send(3, read, &[sge(&mb, READ_LEN)]);
    let n = wait_ok(&devs, side.cq(), 3, WcOp::RdmaRead, "B's RDMA Read");
    assert_eq!(n, READ_LEN as u64);
    assert!(back == pattern(READ_LEN, 3), "RDMA Read data");
    tx.send(Note::ReadDone).expect("to A");

    side.qp.disconnect(true).expect("disconnect");
    assert_eq!(side.rec.take(), vec![Got::Disconnected]);
    settle(&devs, "the device to go idle");
    for mr in [mo, md, mb] {
        dev.deregister(&mr).expect("deregister");
    }
}

/// The text of a panic payload.
fn message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-text panic)".into())
}

#[test]
fn connection_send_write_read_across_a_veth_pair() {
    let test = "connection_send_write_read_across_a_veth_pair";
    let t0 = Instant::now();
    let (a, b) = match (Netns::create("a"), Netns::create("b")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => {
            skip(test, &why);
            return;
        }
    };
    let pid = std::process::id();
    let net = (1 + pid % 250) as u8;
    let (ia, ib) = (
        Ipv4Addr::new(10, 199, net, 1),
        Ipv4Addr::new(10, 199, net, 2),
    );
    let (if_a, if_b) = (format!("ud{pid}a"), format!("ud{pid}b"));
    Netns::veth(
        &a,
        &if_a,
        &format!("{ia}/24"),
        &b,
        &if_b,
        &format!("{ib}/24"),
    )
    .unwrap_or_else(|e| panic!("veth pair: {e}"));
    // The host namespace (this thread's) does not have the addresses: a
    // socket bound to them can only be in a namespace.
    for ip in [ia, ib] {
        let e = UdpSocket::bind((ip, 0)).expect_err("the host has a namespace's address");
        assert_eq!(e.kind(), std::io::ErrorKind::AddrNotAvailable, "{ip}: {e}");
    }
    let (rx_a0, tx_a0) = a.counters(&if_a);

    let (to_b, from_a) = channel();
    let (to_a, from_b) = channel();
    std::thread::scope(|sc| {
        let ta = sc.spawn(|| side_a(&a, ia, ib, to_b, from_b));
        let tb = sc.spawn(|| side_b(&b, ib, ia, to_a, from_a));
        // When one side fails the other soon does too (its peer is gone):
        // report both.
        let failures: Vec<String> = [("A", ta.join()), ("B", tb.join())]
            .into_iter()
            .filter_map(|(who, r)| r.err().map(|p| format!("side {who}: {}", message(&*p))))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });

    let (rx_a, tx_a) = a.counters(&if_a);
    let (rx, tx) = (rx_a - rx_a0, tx_a - tx_a0);
    assert!(
        rx >= (SEND_LEN + WRITE_LEN) as u64 && tx >= READ_LEN as u64,
        "A's veth moved {rx} bytes in and {tx} out: the transfers did not cross it"
    );
    println!(
        "{test}: {ia} ({}) <-> {ib} ({}) over veth {if_a}/{if_b}: A's veth received {rx} bytes, sent {tx}; {:?}",
        a.name(),
        b.name(),
        t0.elapsed()
    );
}

/// Peer loss by silence: the link goes down under an established
/// connection with data in flight; after the user timeout (here 300 ms)
/// the connection breaks and every outstanding request completes flushed.
#[test]
fn a_silent_peer_breaks_the_connection_after_the_user_timeout() {
    use std::time::Duration;
    use udapl::transport::tcp::DeviceOptions;
    let test = "a_silent_peer_breaks_the_connection_after_the_user_timeout";
    let ns = match Netns::create("silent") {
        Ok(ns) => ns,
        Err(why) => return skip(test, &why),
    };
    // Everything runs on a thread inside the namespace, over its loopback.
    let t = std::thread::spawn(move || {
        ns.enter();
        let opts = DeviceOptions {
            user_timeout: Duration::from_millis(300),
            keepalive_idle: Duration::from_secs(1),
            keepalive_interval: Duration::from_secs(1),
            keepalive_count: 1,
            ..DeviceOptions::default()
        };
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let da = IwarpDevice::open_with(lo, SOFTWARE_CAPABILITIES, opts);
        let db = IwarpDevice::open_with(lo, SOFTWARE_CAPABILITIES, opts);
        let devs = [&da, &db];
        let lrec = Arc::new(Rec::default());
        let l = db.listen(0, lrec.clone()).expect("listen");
        let a = Side::one_cq(&da, QpOpts::reads(2, 2));
        let b = Side::one_cq(&db, QpOpts::reads(2, 2));
        a.qp.connect(SocketAddr::new(lo, 0), l.port(), b"", DEADLINE)
            .expect("connect");
        let r = wait_request(&devs, &lrec, "request");
        db.accept(r.id, &*b.qp, b"").expect("accept");
        assert!(matches!(
            wait_ev(&devs, &a.rec, "established"),
            Got::Established(_)
        ));
        // Silence: nothing gets through any more, in either direction.
        ns.ip(&["link", "set", "lo", "down"]).expect("lo down");
        let src = pattern(100_000, 3);
        let ms = a.reg(&src);
        a.post_send(7, SendOp::Send { solicited: false }, &[sge(&ms, src.len())]);
        let t0 = Instant::now();
        // Only A's side is driven: B cannot hear anything anyway.
        let devs_a = [&da];
        assert_eq!(wait_ev(&devs_a, &a.rec, "broken"), Got::Broken);
        let waited = t0.elapsed();
        let w = wait_wc(&devs_a, a.cq(), "flushed send");
        assert_eq!((w.wr_id, w.status), (7, WcStatus::Flushed));
        assert_eq!(a.qp.state(), QpState::Closed);
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(10),
            "broken after {waited:?}"
        );
        drop(ns);
    });
    t.join().expect("namespace thread");
}
