//! The TCP driver's tests: devices talking over loopback.

use super::device::{IwarpDevice, DEFAULT_RNR_TIMEOUT};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock_anyway as lock;
use crate::transport::api::{
    Access, BindWr, CmEvent, CmHandler, CompletionQueue, Device, DeviceError, MemoryRegion, PdId,
    PostError, QpConfig, QpNum, QpState, QueuePair, RecvWr, SendWr, SharedReceiveQueue, Wc, WcOp,
    WcStatus,
};
use crate::transport::api::{SendOp, Sge};
use crate::transport::SOFTWARE_CAPABILITIES;
use std::net::Ipv4Addr;

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Request(u64, Vec<u8>),
    Established(Vec<u8>),
    Rejected(Vec<u8>),
    Unreachable,
    TimedOut,
    AcceptFailed,
    Disconnected,
    Broken,
}

#[derive(Default)]
struct Rec(Mutex<Vec<Got>>);
impl CmHandler for Rec {
    fn event(&self, _qp: Option<QpNum>, ev: CmEvent<'_>) {
        let g = match ev {
            CmEvent::ConnectRequest {
                request,
                private_data,
                ..
            } => Got::Request(request, private_data.to_vec()),
            CmEvent::Established { private_data } => Got::Established(private_data.to_vec()),
            CmEvent::Rejected { private_data } => Got::Rejected(private_data.to_vec()),
            CmEvent::Unreachable | CmEvent::Refused => Got::Unreachable,
            CmEvent::TimedOut => Got::TimedOut,
            CmEvent::AcceptFailed => Got::AcceptFailed,
            CmEvent::Disconnected => Got::Disconnected,
            CmEvent::Broken => Got::Broken,
        };
        lock(&self.0).push(g);
    }
}
impl Rec {
    fn take(&self) -> Vec<Got> {
        std::mem::take(&mut *lock(&self.0))
    }
}

struct Side {
    dev: Arc<IwarpDevice>,
    pd: PdId,
    cq: Arc<dyn CompletionQueue>,
    qp: Arc<dyn QueuePair>,
    rec: Arc<Rec>,
}

fn side(dev: &Arc<IwarpDevice>) -> Side {
    side_cq(dev, 256)
}

fn side_cq(dev: &Arc<IwarpDevice>, cq_depth: u32) -> Side {
    let pd = dev.alloc_pd().expect("pd");
    let cq = dev.create_cq(cq_depth).expect("cq");
    let rec = Arc::new(Rec::default());
    let qp = dev
        .create_qp(QpConfig {
            pd,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            srq: None,
            send_depth: 64,
            recv_depth: 64,
            max_send_sge: 4,
            max_recv_sge: 4,
            ird: 4,
            ord: 4,
            cm: rec.clone(),
        })
        .expect("qp");
    Side {
        dev: dev.clone(),
        pd,
        cq,
        qp,
        rec,
    }
}

fn spin(devs: &[&Arc<IwarpDevice>], mut done: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < end, "deadline");
        for d in devs {
            d.progress();
        }
    }
}

fn wait_ev(devs: &[&Arc<IwarpDevice>], rec: &Rec) -> Got {
    let mut got = None;
    spin(devs, || {
        got = lock(&rec.0).first().cloned();
        got.is_some()
    });
    lock(&rec.0).remove(0);
    got.expect("event")
}

/// Connected pair: (active, passive), each on its own device.
fn connected(n: usize) -> Vec<(Side, Side)> {
    connected_cq(n, 256)
}

/// Like [`connected`], the passive sides' CQs `cq_depth` deep.
fn connected_cq(n: usize, cq_depth: u32) -> Vec<(Side, Side)> {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let mut out = Vec::new();
    for _ in 0..n {
        let a = side(&da);
        let b = side_cq(&db, cq_depth);
        a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"hi", DEADLINE)
            .expect("connect");
        let Got::Request(id, pd) = wait_ev(&[&da, &db], &lrec) else {
            panic!("request")
        };
        assert_eq!(pd, b"hi");
        db.accept(id, &*b.qp, b"yo").expect("accept");
        assert_eq!(
            wait_ev(&[&da, &db], &a.rec),
            Got::Established(b"yo".to_vec())
        );
        assert!(matches!(wait_ev(&[&da, &db], &b.rec), Got::Established(_)));
        out.push((a, b));
    }
    out
}

fn reg(s: &Side, buf: &[u8]) -> MemoryRegion {
    let all = Access::LOCAL_READ
        .union(Access::LOCAL_WRITE)
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_WRITE);
    s.dev
        .register(s.pd, buf.as_ptr() as u64, buf.len() as u64, all)
        .expect("register")
}

fn sge(mr: &MemoryRegion, len: usize) -> Sge {
    Sge {
        addr: mr.addr,
        len: len as u64,
        lkey: mr.lkey,
    }
}

fn wait_wc(devs: &[&Arc<IwarpDevice>], cq: &Arc<dyn CompletionQueue>) -> Wc {
    let mut out = [Wc::BLANK];
    spin(devs, || cq.poll(&mut out) == 1);
    out[0]
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

/// The passive side's application makes no progress call at all: the
/// progress thread takes the connection request, finishes the MPA
/// exchange, and serves RDMA Writes and Reads aimed at it.
#[test]
fn progress_thread_serves_an_idle_target() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = side(&da);
    let b = side(&db);
    a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"idle", DEADLINE)
        .expect("connect");
    let Got::Request(id, _) = wait_ev(&[&da], &lrec) else {
        panic!("request")
    };
    db.accept(id, &*b.qp, b"").expect("accept");
    assert!(matches!(wait_ev(&[&da], &a.rec), Got::Established(_)));

    let target = pattern(300_000, 1);
    let tmr = reg(&b, &target);
    let src = pattern(200_000, 9);
    let smr = reg(&a, &src);
    let dst = vec![0u8; 300_000];
    let dmr = reg(&a, &dst);
    a.qp.post_send(&SendWr {
        wr_id: 1,
        ctx: 0,
        op: SendOp::RdmaWrite {
            remote_addr: tmr.addr + 50_000,
            rkey: tmr.rkey,
        },
        sgl: &[sge(&smr, src.len())],
        signaled: true,
        fence: false,
    })
    .expect("write");
    a.qp.post_send(&SendWr {
        wr_id: 2,
        ctx: 0,
        op: SendOp::RdmaRead {
            remote_addr: tmr.addr,
            rkey: tmr.rkey,
        },
        sgl: &[sge(&dmr, dst.len())],
        signaled: true,
        fence: false,
    })
    .expect("read");
    for id in [1, 2] {
        let wc = wait_wc(&[], &a.cq);
        assert_eq!((wc.wr_id, wc.status), (id, WcStatus::Success));
    }
    let mut want = pattern(300_000, 1);
    want[50_000..250_000].copy_from_slice(&src);
    assert!(dst == want, "read back what the write placed");
    assert!(b
        .rec
        .take()
        .iter()
        .all(|g| matches!(g, Got::Established(_))));
}

/// Connects `a` (on `da`) to `b` (on `db`) through a fresh listener.
fn join(da: &Arc<IwarpDevice>, db: &Arc<IwarpDevice>, a: &Side, b: &Side) {
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"", DEADLINE)
        .expect("connect");
    let Got::Request(id, _) = wait_ev(&[da, db], &lrec) else {
        panic!("request")
    };
    db.accept(id, &*b.qp, b"").expect("accept");
    assert!(matches!(wait_ev(&[da, db], &a.rec), Got::Established(_)));
    assert!(matches!(wait_ev(&[da, db], &b.rec), Got::Established(_)));
}

/// A side whose queue pair takes receives from `srq`.
fn side_srq(dev: &Arc<IwarpDevice>, pd: PdId, srq: &Arc<dyn SharedReceiveQueue>) -> Side {
    let cq = dev.create_cq(64).expect("cq");
    let rec = Arc::new(Rec::default());
    let qp = dev
        .create_qp(QpConfig {
            pd,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            srq: Some(srq.clone()),
            send_depth: 16,
            recv_depth: 0,
            max_send_sge: 2,
            max_recv_sge: 2,
            ird: 2,
            ord: 2,
            cm: rec.clone(),
        })
        .expect("qp");
    Side {
        dev: dev.clone(),
        pd,
        cq,
        qp,
        rec,
    }
}

#[test]
fn shared_receive_queue_feeds_two_queue_pairs_in_posting_order() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let pd = db.alloc_pd().expect("pd");
    let srq = db.create_srq(pd, 4, 2).expect("srq");
    assert_eq!(srq.depth(), 4);
    let (a1, a2) = (side(&da), side(&da));
    let (b1, b2) = (side_srq(&db, pd, &srq), side_srq(&db, pd, &srq));
    assert_eq!(
        b1.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &[]
        }),
        Err(PostError::Unsupported),
        "receives go to the shared queue"
    );
    join(&da, &db, &a1, &b1);
    join(&da, &db, &a2, &b2);
    let bufs: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 1000]).collect();
    let mrs: Vec<MemoryRegion> = bufs.iter().map(|b| reg(&b1, b)).collect();
    for (i, mr) in mrs.iter().enumerate() {
        srq.post_recv(&RecvWr {
            wr_id: 100 + i as u64,
            ctx: 0,
            sgl: &[sge(mr, 1000)],
        })
        .expect("post");
    }
    assert_eq!(srq.outstanding(), 3);
    let m1 = pattern(700, 1);
    let m2 = pattern(300, 2);
    let (r1, r2) = (reg(&a1, &m1), reg(&a2, &m2));
    // (The SRQ side grants IRD 2 + 1, so a1, with ORD 4, completes
    // locally: wait for the placement itself before the second Send.)
    send(&a1, 1, &r1, m1.len());
    assert_eq!(wait_wc(&[&da, &db], &a1.cq).status, WcStatus::Success);
    let w1 = wait_wc(&[&da, &db], &b1.cq);
    send(&a2, 2, &r2, m2.len());
    assert_eq!(wait_wc(&[&da, &db], &a2.cq).status, WcStatus::Success);
    let w2 = wait_wc(&[&da, &db], &b2.cq);
    assert_eq!((w1.wr_id, w1.byte_len, w1.qp), (100, 700, b1.qp.num()));
    assert_eq!((w2.wr_id, w2.byte_len, w2.qp), (101, 300, b2.qp.num()));
    assert_eq!(&bufs[0][..700], &m1[..]);
    assert_eq!(&bufs[1][..300], &m2[..]);
    assert_eq!(srq.outstanding(), 1);
    srq.resize(8).expect("resize");
    assert_eq!((srq.depth(), srq.outstanding()), (8, 1));
    assert_eq!(srq.resize(0), Err(DeviceError::Invalid));
}

#[test]
fn shared_receive_queue_empty_holds_the_send_until_a_receive_is_posted() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let pd = db.alloc_pd().expect("pd");
    let srq = db.create_srq(pd, 4, 1).expect("srq");
    let a = side(&da);
    let b = side_srq(&db, pd, &srq);
    join(&da, &db, &a, &b);
    let m = pattern(5000, 3);
    let mr = reg(&a, &m);
    send(&a, 1, &mr, m.len());
    // Let the Send arrive and find the queue empty.
    let end = Instant::now() + Duration::from_millis(100);
    while Instant::now() < end {
        da.progress();
        db.progress();
    }
    let dst = vec![0u8; 5000];
    let dmr = reg(&b, &dst);
    srq.post_recv(&RecvWr {
        wr_id: 9,
        ctx: 0,
        sgl: &[sge(&dmr, 5000)],
    })
    .expect("post");
    let w = wait_wc(&[&da, &db], &b.cq);
    assert_eq!(
        (w.wr_id, w.status, w.byte_len),
        (9, WcStatus::Success, 5000)
    );
    assert_eq!(wait_wc(&[&da, &db], &a.cq).status, WcStatus::Success);
    assert!(dst == m);
}

#[test]
fn window_bind_grants_remote_access_and_unbind_revokes_it() {
    let v = connected(1);
    let (a, b) = &v[0];
    let target = vec![0u8; 8192];
    let local = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
    let tmr = b
        .dev
        .register(b.pd, target.as_ptr() as u64, 8192, local)
        .expect("register");
    assert_eq!(tmr.rkey, 0, "no remote access of its own");
    let w = b.dev.alloc_window(b.pd).expect("window");
    let rkey =
        b.qp.post_bind(&BindWr {
            wr_id: 7,
            ctx: 0,
            window: w,
            lkey: tmr.lkey,
            addr: tmr.addr + 4096,
            len: 1024,
            access: Access::REMOTE_WRITE,
            signaled: true,
            fence: false,
        })
        .expect("bind");
    assert_ne!(rkey, 0);
    let bw = wait_wc(&[&a.dev, &b.dev], &b.cq);
    assert_eq!(
        (bw.wr_id, bw.op, bw.status),
        (7, WcOp::Bind, WcStatus::Success)
    );
    assert_eq!(
        b.dev.deregister(&tmr),
        Err(DeviceError::Busy),
        "a bound registration stays"
    );
    let src = pattern(1024, 4);
    let smr = reg(a, &src);
    let write = |wr_id, rkey, off: u64, len| {
        a.qp.post_send(&SendWr {
            wr_id,
            ctx: 0,
            op: SendOp::RdmaWrite {
                remote_addr: tmr.addr + off,
                rkey,
            },
            sgl: &[sge(&smr, len)],
            signaled: true,
            fence: false,
        })
        .expect("write")
    };
    write(1, rkey, 4096, 1024);
    assert_eq!(wait_wc(&[&a.dev, &b.dev], &a.cq).status, WcStatus::Success);
    assert!(target[4096..5120] == src[..]);
    assert!(target[..4096]
        .iter()
        .chain(&target[5120..])
        .all(|&x| x == 0));
    // Unbind: the key stops working.
    let zero =
        b.qp.post_bind(&BindWr {
            wr_id: 8,
            ctx: 0,
            window: w,
            lkey: tmr.lkey,
            addr: 0,
            len: 0,
            access: Access::NONE,
            signaled: false,
            fence: false,
        })
        .expect("unbind");
    assert_eq!(zero, 0);
    b.dev.deregister(&tmr).expect("free once unbound");
    write(2, rkey, 4096, 16);
    assert_eq!(
        wait_wc(&[&a.dev, &b.dev], &a.cq).status,
        WcStatus::RemoteAccess
    );
    b.dev.dealloc_window(w).expect("free window");
    assert_eq!(b.dev.dealloc_window(w), Err(DeviceError::NotFound));
}

/// A receiver that polls until its receive completes and then stops:
/// the Send is acknowledged all the same (the step that placed it sent
/// the acknowledgement; nothing waits for a next poll).
#[test]
fn an_acknowledgement_left_by_a_poller_that_stops_still_goes_out() {
    let v = connected(1);
    let (a, b) = &v[0];
    let dst = vec![0u8; 64];
    let md = reg(b, &dst);
    b.qp.post_recv(&RecvWr {
        wr_id: 5,
        ctx: 0,
        sgl: &[sge(&md, 64)],
    })
    .expect("recv");
    let src = pattern(64, 2);
    let ms = reg(a, &src);
    send(a, 6, &ms, 64);
    // The receiver polls until its receive completes, then stops.
    let w = wait_wc(&[], &b.cq);
    assert_eq!((w.wr_id, w.status), (5, WcStatus::Success));
    let t = Instant::now();
    let w = wait_wc(&[], &a.cq);
    assert_eq!((w.wr_id, w.status), (6, WcStatus::Success));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
}

/// A request the DAT layer never answered fails to accept once the
/// initiator gave up, and goes with its listener.
#[test]
fn an_unanswered_request_goes_with_its_listener() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = side(&da);
    let b = side(&db);
    a.qp.connect(
        SocketAddr::new(LO, 0),
        l.port(),
        b"",
        Duration::from_millis(200),
    )
    .expect("connect");
    let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
        panic!("request")
    };
    assert_eq!(wait_ev(&[&da, &db], &a.rec), Got::TimedOut);
    drop(a);
    assert_eq!(lock(&db.pending).len(), 1);
    drop(l);
    assert!(lock(&db.pending).is_empty());
    assert_eq!(db.accept(id, &*b.qp, b""), Err(DeviceError::NotFound));
}

/// Devices on IPv6 loopback connect and move data like IPv4 ones.
#[test]
fn ipv6_connection_moves_data() {
    let lo6 = IpAddr::V6(std::net::Ipv6Addr::LOCALHOST);
    if std::net::TcpListener::bind((lo6, 0)).is_err() {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    }
    let da = IwarpDevice::open(lo6, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(lo6, SOFTWARE_CAPABILITIES);
    assert_eq!(da.address().ip(), lo6);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = side(&da);
    let b = side(&db);
    a.qp.connect(SocketAddr::new(lo6, 0), l.port(), b"six", DEADLINE)
        .expect("connect");
    let Got::Request(id, pd) = wait_ev(&[&da, &db], &lrec) else {
        panic!("request")
    };
    assert_eq!(pd, b"six");
    db.accept(id, &*b.qp, b"").expect("accept");
    assert!(matches!(wait_ev(&[&da, &db], &a.rec), Got::Established(_)));
    let dst = vec![0u8; 3000];
    let md = reg(&b, &dst);
    b.qp.post_recv(&RecvWr {
        wr_id: 1,
        ctx: 0,
        sgl: &[sge(&md, 3000)],
    })
    .expect("recv");
    let src = pattern(3000, 6);
    let ms = reg(&a, &src);
    send(&a, 2, &ms, 3000);
    let w = wait_wc(&[&da, &db], &b.cq);
    assert_eq!(
        (w.wr_id, w.status, w.byte_len),
        (1, WcStatus::Success, 3000)
    );
    assert!(dst == src);
}

/// Posting Sends, RDMA Writes and receives and polling their
/// completions (which runs the engines, sockets and all) allocate
/// nothing once the connection is up.
#[test]
fn the_data_path_allocates_nothing() {
    use crate::object::tests::counting;
    let v = connected(1);
    let (a, b) = &v[0];
    let src = pattern(3000, 1);
    let dst = vec![0u8; 3000];
    let target = vec![0u8; 70_000];
    let big = pattern(70_000, 2);
    let (ms, md, mt, mb) = (reg(a, &src), reg(b, &dst), reg(b, &target), reg(a, &big));
    let round = |i: u64| {
        b.qp.post_recv(&RecvWr {
            wr_id: i,
            ctx: 0,
            sgl: &[sge(&md, 3000)],
        })
        .expect("recv");
        send(a, i, &ms, 3000);
        a.qp.post_send(&SendWr {
            wr_id: i + 1000,
            ctx: 0,
            op: SendOp::RdmaWrite {
                remote_addr: mt.addr,
                rkey: mt.rkey,
            },
            sgl: &[sge(&mb, 70_000)],
            signaled: true,
            fence: false,
        })
        .expect("write");
        // Only this thread polls (no other progress call).
        let mut got = 0;
        let end = Instant::now() + DEADLINE;
        let mut out = [Wc {
            wr_id: 0,
            ctx: 0,
            implicit: 0,
            status: WcStatus::Fatal,
            op: WcOp::Send,
            byte_len: 0,
            qp: 0,
            solicited: false,
        }; 4];
        while got < 3 {
            assert!(Instant::now() < end, "deadline");
            for cq in [&a.cq, &b.cq] {
                let n = cq.poll(&mut out);
                for w in &out[..n] {
                    assert_eq!(w.status, WcStatus::Success, "{w:?}");
                }
                got += n;
            }
        }
    };
    // Warm up per-thread state and the sockets' buffers.
    for i in 0..3 {
        round(i);
    }
    let before = counting::count();
    for i in 3..40 {
        round(i);
    }
    assert_eq!(
        counting::count() - before,
        0,
        "allocations on the data path"
    );
    assert!(dst == src && target == big);
}

#[test]
fn connect_accept_with_private_data_both_ways() {
    let v = connected(1);
    assert_eq!(v[0].0.qp.state(), QpState::Connected);
    assert_eq!(v[0].1.qp.state(), QpState::Connected);
}

#[test]
fn reject_carries_private_data() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let a = side(&da);
    a.qp.connect(SocketAddr::new(LO, 0), l.port(), b"x", DEADLINE)
        .expect("connect");
    let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
        panic!("request")
    };
    l.reject(id, b"no thanks").expect("reject");
    assert_eq!(
        wait_ev(&[&da, &db], &a.rec),
        Got::Rejected(b"no thanks".to_vec())
    );
}

#[test]
fn closed_port_is_unreachable_and_busy_port_is_in_use() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let l = da.listen(0, Arc::new(Rec::default())).expect("listen");
    assert_eq!(
        da.listen(l.port(), Arc::new(Rec::default())).err(),
        Some(DeviceError::PortInUse)
    );
    let port = l.port();
    drop(l);
    let a = side(&da);
    a.qp.connect(SocketAddr::new(LO, 0), port, b"", DEADLINE)
        .expect("connect");
    assert_eq!(wait_ev(&[&da], &a.rec), Got::Unreachable);
}

#[test]
fn closed_listener_frees_its_port_while_still_held() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let l = da.listen(0, Arc::new(Rec::default())).expect("listen");
    let held = l.clone();
    let port = l.port();
    l.close();
    drop(l);
    let again = da
        .listen(port, Arc::new(Rec::default()))
        .expect("port free after close");
    assert_eq!(again.port(), port);
    drop(held);
    // The old listener's last drop leaves the new one alone.
    assert_eq!(
        da.listen(port, Arc::new(Rec::default())).err(),
        Some(DeviceError::PortInUse)
    );
}

fn send_recv(len: usize) {
    let v = connected(1);
    let (a, b) = &v[0];
    let src = pattern(len, 3);
    let dst = vec![0u8; len + 16];
    let (ms, md) = (reg(a, &src), reg(b, &dst));
    b.qp.post_recv(&RecvWr {
        wr_id: 9,
        ctx: 0,
        sgl: &[sge(&md, dst.len())],
    })
    .expect("recv");
    a.qp.post_send(&SendWr {
        wr_id: 5,
        ctx: 0,
        op: SendOp::Send { solicited: false },
        sgl: &[sge(&ms, len)],
        signaled: true,
        fence: false,
    })
    .expect("send");
    let devs = [&a.dev, &b.dev];
    let r = wait_wc(&devs, &b.cq);
    assert_eq!(
        (r.wr_id, r.status, r.op),
        (9, WcStatus::Success, WcOp::Recv)
    );
    assert_eq!(r.byte_len, len as u64);
    let s = wait_wc(&devs, &a.cq);
    assert_eq!((s.wr_id, s.status), (5, WcStatus::Success));
    assert_eq!(&dst[..len], &src[..]);
}

#[test]
fn send_recv_0_bytes() {
    send_recv(0);
}

#[test]
fn send_recv_1_byte() {
    send_recv(1);
}

#[test]
fn send_recv_1_mib() {
    send_recv(1 << 20);
}

#[test]
fn rdma_write_and_read_1_mib() {
    let v = connected(1);
    let (a, b) = &v[0];
    let len = 1 << 20;
    let src = pattern(len, 11);
    let remote = vec![0u8; len];
    let back = vec![0u8; len];
    let (ms, mr, mb) = (reg(a, &src), reg(b, &remote), reg(a, &back));
    let devs = [&a.dev, &b.dev];
    a.qp.post_send(&SendWr {
        wr_id: 1,
        ctx: 0,
        op: SendOp::RdmaWrite {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        },
        sgl: &[sge(&ms, len)],
        signaled: true,
        fence: false,
    })
    .expect("write");
    let w = wait_wc(&devs, &a.cq);
    assert_eq!((w.wr_id, w.status), (1, WcStatus::Success));
    assert!(remote == src, "written bytes");
    a.qp.post_send(&SendWr {
        wr_id: 2,
        ctx: 0,
        op: SendOp::RdmaRead {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        },
        sgl: &[sge(&mb, len)],
        signaled: true,
        fence: false,
    })
    .expect("read");
    let r = wait_wc(&devs, &a.cq);
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (2, WcStatus::Success, len as u64)
    );
    assert!(back == src, "read bytes");
}

#[test]
fn sixteen_queue_pairs_at_once() {
    let v = connected(16);
    let bufs: Vec<(Vec<u8>, Vec<u8>)> = (0..16)
        .map(|i| (pattern(4096, i as u8), vec![0u8; 4096]))
        .collect();
    for ((a, b), (s, d)) in v.iter().zip(&bufs) {
        let (ms, md) = (reg(a, s), reg(b, d));
        b.qp.post_recv(&RecvWr {
            wr_id: 1,
            ctx: 0,
            sgl: &[sge(&md, d.len())],
        })
        .expect("recv");
        a.qp.post_send(&SendWr {
            wr_id: 2,
            ctx: 0,
            op: SendOp::Send { solicited: false },
            sgl: &[sge(&ms, s.len())],
            signaled: true,
            fence: false,
        })
        .expect("send");
    }
    for ((a, b), (s, d)) in v.iter().zip(&bufs) {
        let devs = [&a.dev, &b.dev];
        assert_eq!(wait_wc(&devs, &b.cq).status, WcStatus::Success);
        assert_eq!(wait_wc(&devs, &a.cq).status, WcStatus::Success);
        assert!(s == d);
    }
}

#[test]
fn disconnect_flushes_outstanding_receives() {
    let v = connected(1);
    let (a, b) = &v[0];
    let dst = vec![0u8; 64];
    let md = reg(b, &dst);
    for id in 0..3 {
        b.qp.post_recv(&RecvWr {
            wr_id: id,
            ctx: 0,
            sgl: &[sge(&md, 64)],
        })
        .expect("recv");
    }
    a.qp.disconnect(true).expect("disconnect");
    assert_eq!(a.rec.take(), vec![Got::Disconnected]);
    let devs = [&a.dev, &b.dev];
    assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
    for id in 0..3 {
        let w = wait_wc(&devs, &b.cq);
        assert_eq!((w.wr_id, w.status), (id, WcStatus::Flushed));
    }
    assert_eq!(b.qp.state(), QpState::Closed);
}

#[test]
fn abrupt_disconnect_sends_the_acknowledgements_it_owes() {
    let v = connected(1);
    let (a, b) = &v[0];
    let src = pattern(64, 7);
    let dst = vec![0u8; 64];
    let (ms, md) = (reg(a, &src), reg(b, &dst));
    b.qp.post_recv(&RecvWr {
        wr_id: 1,
        ctx: 0,
        sgl: &[sge(&md, 64)],
    })
    .expect("recv");
    a.qp.post_send(&SendWr {
        wr_id: 2,
        ctx: 0,
        op: SendOp::Send { solicited: false },
        sgl: &[sge(&ms, 64)],
        signaled: true,
        fence: false,
    })
    .expect("send");
    // B polls (its acknowledgement may wait for its next step), sees
    // the receive, and resets the connection at once.
    let mut out = [Wc::BLANK; 1];
    let end = Instant::now() + DEADLINE;
    while b.cq.poll(&mut out) == 0 {
        assert!(Instant::now() < end, "deadline");
    }
    assert_eq!((out[0].wr_id, out[0].status), (1, WcStatus::Success));
    b.qp.disconnect(false).expect("disconnect");
    let w = wait_wc(&[&a.dev], &a.cq);
    assert_eq!(
        (w.wr_id, w.status),
        (2, WcStatus::Success),
        "the Send arrived: A's completion must say so"
    );
}

#[test]
fn graceful_disconnect_lets_queued_work_finish() {
    let v = connected(1);
    let (a, b) = &v[0];
    let target = vec![0u8; 4 << 20];
    let tmr = reg(b, &target);
    let src = pattern(4 << 20, 6);
    let smr = reg(a, &src);
    // Unsignalled: only the close waits for its acknowledgement.
    a.qp.post_send(&SendWr {
        wr_id: 1,
        ctx: 0,
        op: SendOp::RdmaWrite {
            remote_addr: tmr.addr,
            rkey: tmr.rkey,
        },
        sgl: &[sge(&smr, src.len())],
        signaled: false,
        fence: false,
    })
    .expect("write");
    a.qp.disconnect(true).expect("disconnect");
    assert_eq!(
        a.qp.post_send(&SendWr {
            wr_id: 2,
            ctx: 0,
            op: SendOp::Send { solicited: false },
            sgl: &[],
            signaled: true,
            fence: false,
        }),
        Err(PostError::State),
        "nothing new once closing"
    );
    let devs = [&a.dev, &b.dev];
    assert_eq!(wait_ev(&devs, &a.rec), Got::Disconnected);
    assert!(
        target == src,
        "the queued write was placed before the close"
    );
    assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
    let mut out = [Wc {
        wr_id: 0,
        ctx: 0,
        implicit: 0,
        status: WcStatus::Fatal,
        op: WcOp::Send,
        byte_len: 0,
        qp: 0,
        solicited: false,
    }];
    assert_eq!(a.cq.poll(&mut out), 0, "the unsignalled write succeeded");
}

#[test]
fn abrupt_disconnect_disconnects_the_peer_and_flushes() {
    let v = connected(1);
    let (a, b) = &v[0];
    let dst = vec![0u8; 64];
    let md = reg(b, &dst);
    b.qp.post_recv(&RecvWr {
        wr_id: 7,
        ctx: 0,
        sgl: &[sge(&md, 64)],
    })
    .expect("recv");
    a.qp.disconnect(false).expect("disconnect");
    assert_eq!(a.rec.take(), vec![Got::Disconnected]);
    let devs = [&a.dev, &b.dev];
    // A reset from the peer is its disconnect (rulings: teardown events).
    assert_eq!(wait_ev(&devs, &b.rec), Got::Disconnected);
    let w = wait_wc(&devs, &b.cq);
    assert_eq!((w.wr_id, w.status), (7, WcStatus::Flushed));
    assert_eq!(
        a.qp.post_send(&SendWr {
            wr_id: 1,
            ctx: 0,
            op: SendOp::Send { solicited: false },
            sgl: &[],
            signaled: true,
            fence: false,
        }),
        Err(PostError::State)
    );
}

#[test]
fn a_deallocated_pd_takes_no_registration() {
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let pd = dev.alloc_pd().expect("pd");
    let buf = [0u8; 64];
    let addr = buf.as_ptr() as u64;
    let mr = dev
        .register(pd, addr, 64, Access::LOCAL_READ)
        .expect("register");
    dev.deregister(&mr).expect("deregister");
    dev.dealloc_pd(pd).expect("dealloc");
    assert_eq!(dev.dealloc_pd(pd), Err(DeviceError::NotFound));
    assert_eq!(
        dev.register(pd, addr, 64, Access::LOCAL_READ).err(),
        Some(DeviceError::Invalid)
    );
    assert_eq!(
        dev.register(PdId(9999), addr, 64, Access::LOCAL_READ).err(),
        Some(DeviceError::Invalid),
        "a PD this device never gave out"
    );
}

#[test]
fn register_checks_the_memory() {
    use crate::transport::api::MemoryFault;
    use crate::transport::soft::memcheck::TestPages;
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let pd = dev.alloc_pd().expect("pd");
    let rw = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
    let page = TestPages::page_size();
    let mem = TestPages::map(2);
    let a = mem.addr();
    // The second page is unmapped, the first made read-only.
    mem.unmap(1);
    mem.protect(0, libc::PROT_READ);
    assert_eq!(
        dev.register(pd, a + page as u64, page as u64, Access::LOCAL_READ)
            .err(),
        Some(DeviceError::Memory(MemoryFault::Unmapped))
    );
    assert_eq!(
        dev.register(pd, a, page as u64, rw).err(),
        Some(DeviceError::Memory(MemoryFault::NotWritable))
    );
    let remote_write = Access::LOCAL_READ.union(Access::REMOTE_WRITE);
    assert_eq!(
        dev.register(pd, a, page as u64, remote_write).err(),
        Some(DeviceError::Memory(MemoryFault::NotWritable))
    );
    let ro = dev
        .register(pd, a, page as u64, Access::LOCAL_READ)
        .expect("read-only memory, read access");
    dev.deregister(&ro).expect("deregister");
    let heap = vec![0u8; 10_000];
    let mr = dev
        .register(pd, heap.as_ptr() as u64, heap.len() as u64, rw)
        .expect("heap buffer");
    dev.deregister(&mr).expect("deregister");
}

#[test]
fn cq_wait_fd_wakes_when_the_peer_sends() {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let v = connected(1);
    let (a, b) = &v[0];
    let src = pattern(100, 5);
    let dst = vec![0u8; 100];
    let (ms, md) = (reg(a, &src), reg(b, &dst));
    b.qp.post_recv(&RecvWr {
        wr_id: 3,
        ctx: 0,
        sgl: &[sge(&md, dst.len())],
    })
    .expect("recv");
    let readable = |cq: &Arc<dyn CompletionQueue>, ms: u16| {
        let mut fds = [PollFd::new(cq.wait_fd(), PollFlags::POLLIN)];
        nix::poll::poll(&mut fds, PollTimeout::from(ms)).expect("poll") == 1
    };
    assert!(!readable(&b.cq, 0), "nothing arrived yet");
    let cq = b.cq.clone();
    // A sleeper arms the queue: it wakes for the data (which it would
    // place itself) or, if the progress thread placed it first, for
    // the completion.
    cq.clear_notification();
    cq.arm(false);
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let woke = readable(&cq, DEADLINE.as_millis() as u16);
        (woke, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    a.qp.post_send(&SendWr {
        wr_id: 4,
        ctx: 0,
        op: SendOp::Send { solicited: false },
        sgl: &[sge(&ms, src.len())],
        signaled: true,
        fence: false,
    })
    .expect("send");
    let (woke, after) = waiter.join().expect("waiter");
    assert!(woke && after < DEADLINE, "woke after {after:?}");
    let mut out = [Wc {
        wr_id: 0,
        ctx: 0,
        implicit: 0,
        status: WcStatus::Fatal,
        op: WcOp::Send,
        byte_len: 0,
        qp: 0,
        solicited: false,
    }];
    let end = Instant::now() + DEADLINE;
    while b.cq.poll(&mut out) == 0 {
        assert!(Instant::now() < end, "deadline");
    }
    assert_eq!(
        (out[0].wr_id, out[0].status, out[0].op, out[0].byte_len),
        (3, WcStatus::Success, WcOp::Recv, 100)
    );
    assert_eq!(dst, src);
}

fn try_wc(cq: &Arc<dyn CompletionQueue>) -> Option<Wc> {
    let mut out = [Wc {
        wr_id: 0,
        ctx: 0,
        implicit: 0,
        status: WcStatus::Fatal,
        op: WcOp::Send,
        byte_len: 0,
        qp: 0,
        solicited: false,
    }];
    (cq.poll(&mut out) == 1).then_some(out[0])
}

fn send(s: &Side, wr_id: u64, mr: &MemoryRegion, len: usize) {
    s.qp.post_send(&SendWr {
        wr_id,
        ctx: 0,
        op: SendOp::Send { solicited: false },
        sgl: &[sge(mr, len)],
        signaled: true,
        fence: false,
    })
    .expect("send");
}

#[test]
fn rnr_send_waits_for_a_receive_posted_in_time() {
    let v = connected(1);
    let (a, b) = &v[0];
    assert_eq!(b.dev.rnr_timeout(), DEFAULT_RNR_TIMEOUT);
    let src = pattern(3000, 9);
    let dst = vec![0u8; 3000];
    let (ms, md) = (reg(a, &src), reg(b, &dst));
    send(a, 1, &ms, src.len());
    // The Send is held (no receive): nothing completes meanwhile.
    let hold = Instant::now() + Duration::from_millis(150);
    while Instant::now() < hold {
        a.dev.progress();
        b.dev.progress();
        assert!(try_wc(&a.cq).is_none() && try_wc(&b.cq).is_none());
    }
    assert_eq!(b.qp.state(), QpState::Connected);
    b.qp.post_recv(&RecvWr {
        wr_id: 2,
        ctx: 0,
        sgl: &[sge(&md, dst.len())],
    })
    .expect("recv");
    let devs = [&a.dev, &b.dev];
    let r = wait_wc(&devs, &b.cq);
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (2, WcStatus::Success, 3000)
    );
    let s = wait_wc(&devs, &a.cq);
    assert_eq!((s.wr_id, s.status), (1, WcStatus::Success));
    assert_eq!(dst, src);
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

#[test]
fn rnr_timeout_terminates_and_the_send_completes_receiver_not_ready() {
    let v = connected(1);
    let (a, b) = &v[0];
    let rnr = Duration::from_millis(100);
    b.dev.set_rnr_timeout(rnr);
    assert_eq!(b.dev.rnr_timeout(), rnr);
    let src = pattern(64, 1);
    let ms = reg(a, &src);
    let dst = vec![0u8; 64];
    let ma = reg(a, &dst);
    a.qp.post_recv(&RecvWr {
        wr_id: 30,
        ctx: 0,
        sgl: &[sge(&ma, 64)],
    })
    .expect("recv");
    let t = Instant::now();
    send(a, 1, &ms, 64);
    send(a, 2, &ms, 64);
    send(a, 3, &ms, 64);
    let devs = [&a.dev, &b.dev];
    assert_eq!(wait_ev(&devs, &b.rec), Got::Broken);
    assert!(t.elapsed() >= rnr, "held for the RNR time");
    assert_eq!(wait_ev(&devs, &a.rec), Got::Broken);
    let got: Vec<(u64, WcStatus)> = (0..4)
        .map(|_| {
            let w = wait_wc(&devs, &a.cq);
            (w.wr_id, w.status)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, WcStatus::ReceiverNotReady),
            (2, WcStatus::Flushed),
            (3, WcStatus::Flushed),
            (30, WcStatus::Flushed),
        ]
    );
    assert_eq!(a.qp.state(), QpState::Closed);
    assert_eq!(b.qp.state(), QpState::Closed);
    assert!(
        try_wc(&b.cq).is_none(),
        "nothing was posted on the receiver"
    );
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

#[test]
fn cq_overrun_breaks_the_queue_pair() {
    let v = connected_cq(1, 1);
    let (a, b) = &v[0];
    assert_eq!(b.cq.depth(), 1);
    let src = pattern(32, 2);
    let dst = vec![0u8; 64];
    let (ms, md) = (reg(a, &src), reg(b, &dst));
    for id in [1, 2] {
        b.qp.post_recv(&RecvWr {
            wr_id: id,
            ctx: 0,
            sgl: &[sge(&md, 32)],
        })
        .expect("recv");
    }
    send(a, 11, &ms, 32);
    send(a, 12, &ms, 32);
    // Nobody takes the first completion before the second arrives.
    let devs = [&a.dev, &b.dev];
    assert_eq!(wait_ev(&devs, &b.rec), Got::Broken);
    assert_eq!(b.qp.state(), QpState::Closed);
    // b reset the connection: its peer sees it disconnect.
    assert_eq!(wait_ev(&devs, &a.rec), Got::Disconnected);
    let w = try_wc(&b.cq).expect("the completion that fit");
    assert_eq!((w.wr_id, w.status), (1, WcStatus::Success));
    assert!(try_wc(&b.cq).is_none(), "the second was lost");
    for id in [11, 12] {
        assert_eq!(wait_wc(&devs, &a.cq).wr_id, id);
    }
    assert!(a.rec.take().is_empty() && b.rec.take().is_empty());
}

/// A look at a queue pair (its state, address, outstanding receives)
/// never runs the engine for what the progress thread handed over
/// while the lock was held: the EP asks for its local address while it
/// holds its own lock inside ESTABLISHED, and the peer's close run
/// there re-entered the EP and deadlocked (ctests/consumer/fork_servers,
/// 1 run in 8). The run goes back to the progress thread instead.
#[test]
fn a_look_hands_a_run_back_to_the_progress_thread() {
    struct Locked {
        m: Mutex<()>,
        owner: std::thread::ThreadId,
        reentered: AtomicBool,
        rec: Rec,
    }
    impl CmHandler for Locked {
        fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
            if std::thread::current().id() == self.owner
                && matches!(self.m.try_lock(), Err(std::sync::TryLockError::WouldBlock))
            {
                self.reentered.store(true, Ordering::SeqCst);
            }
            self.rec.event(qp, ev);
        }
    }
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let cm = Arc::new(Locked {
        m: Mutex::new(()),
        owner: std::thread::current().id(),
        reentered: AtomicBool::new(false),
        rec: Rec::default(),
    });
    let pd = da.alloc_pd().expect("pd");
    let cq = da.create_cq(16).expect("cq");
    let qp = da
        .create_qp(QpConfig {
            pd,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            srq: None,
            send_depth: 4,
            recv_depth: 4,
            max_send_sge: 1,
            max_recv_sge: 1,
            ird: 1,
            ord: 1,
            cm: cm.clone(),
        })
        .expect("qp");
    let b = side(&db);
    qp.connect(SocketAddr::new(LO, 0), l.port(), b"", DEADLINE)
        .expect("connect");
    let Got::Request(id, _) = wait_ev(&[&da, &db], &lrec) else {
        panic!("request")
    };
    db.accept(id, &*b.qp, b"").expect("accept");
    assert_eq!(wait_ev(&[&da, &db], &cm.rec), Got::Established(vec![]));
    assert!(matches!(wait_ev(&[&da, &db], &b.rec), Got::Established(_)));

    // An application thread holds the queue pair when the peer goes:
    // the progress thread hands the run over to it.
    let iq = da.find_qp(qp.num()).expect("the queue pair");
    let held = lock(&iq.inner);
    b.qp.disconnect(false).expect("disconnect");
    let end = Instant::now() + DEADLINE;
    while !iq.kick.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < end,
            "the progress thread never handed the run over"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(held); // (the raw lock: nothing runs)

    {
        let _caller = lock(&cm.m);
        let _ = qp.local_addr();
        let _ = qp.state();
        let _ = qp.recv_outstanding();
    }
    assert!(
        !cm.reentered.load(Ordering::SeqCst),
        "a look delivered a connection event into its caller's lock"
    );
    // The progress thread delivers it, with no call here.
    let end = Instant::now() + DEADLINE;
    while !lock(&cm.rec.0).contains(&Got::Disconnected) {
        assert!(Instant::now() < end, "the handed-back run never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Registered memory the application made read-only after registering it:
/// a message received into it cannot land, so its receive must not
/// complete successfully (memio's contract: a fault ends the connection).
#[test]
fn a_receive_into_memory_made_read_only_does_not_complete_successfully() {
    use crate::transport::soft::memcheck::TestPages;
    let v = connected(1);
    let (a, b) = &v[0];
    let page = TestPages::page_size();
    let mem = TestPages::map(2);
    let all = Access::LOCAL_READ
        .union(Access::LOCAL_WRITE)
        .union(Access::REMOTE_READ)
        .union(Access::REMOTE_WRITE);
    let md = b
        .dev
        .register(b.pd, mem.addr(), 2 * page as u64, all)
        .expect("register");
    mem.protect(1, libc::PROT_READ);
    // One FPDU that arrives whole: the batched receive places it.
    let len = page + 512;
    let src = pattern(len, 5);
    let ms = reg(a, &src);
    b.qp.post_recv(&RecvWr {
        wr_id: 9,
        ctx: 0,
        sgl: &[sge(&md, 2 * page)],
    })
    .expect("recv");
    send(a, 5, &ms, len);
    let r = wait_wc(&[&a.dev, &b.dev], &b.cq);
    assert_eq!((r.wr_id, r.op), (9, WcOp::Recv));
    assert_ne!(r.status, WcStatus::Success, "{r:?}");
}
