//! The background progress thread's lifetime: it starts with the first
//! connection object, ends with the last, starts again on next use, and a
//! forked child gets its own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use udapl::transport::iwarp::device::IwarpDevice;
use udapl::transport::iwarp::progress;
use udapl::transport::verbs::{CmEvent, CmHandler, Device, QpConfig, QpNum};
use udapl::transport::SOFTWARE_CAPABILITIES;

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn until(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[derive(Default)]
struct Rec(Mutex<Vec<String>>);
impl CmHandler for Rec {
    fn event(&self, _qp: Option<QpNum>, ev: CmEvent<'_>) {
        let s = match ev {
            CmEvent::ConnectRequest { request, .. } => format!("request {request}"),
            CmEvent::Established { .. } => "established".into(),
            other => format!("{other:?}"),
        };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }
}
impl Rec {
    fn find(&self, prefix: &str) -> Option<String> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter().find(|s| s.starts_with(prefix)).cloned()
    }
}

/// Connects two devices of this process with no one calling `progress`
/// on the passive one: only the progress thread can take the request.
fn connect_with_idle_passive_side() {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let qp = |d: &Arc<IwarpDevice>, rec: Arc<Rec>| {
        let pd = d.alloc_pd().expect("pd");
        let cq = d.create_cq(16).expect("cq");
        d.create_qp(QpConfig {
            pd,
            send_cq: cq.clone(),
            recv_cq: cq,
            srq: None,
            send_depth: 4,
            recv_depth: 4,
            max_send_sge: 1,
            max_recv_sge: 1,
            ird: 1,
            ord: 1,
            cm: rec,
        })
        .expect("qp")
    };
    let arec = Arc::new(Rec::default());
    let a = qp(&da, arec.clone());
    let b = qp(&db, Arc::new(Rec::default()));
    a.connect(
        SocketAddr::new(LO, 0),
        l.port(),
        b"",
        Duration::from_secs(10),
    )
    .expect("connect");
    until("connection request", || lrec.find("request").is_some());
    let req: u64 = lrec
        .find("request")
        .and_then(|s| s[8..].parse().ok())
        .expect("request id");
    db.accept(req, &*b, b"").expect("accept");
    until("established", || arec.find("established").is_some());
}

/// The tests here watch the one progress thread: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn progress_thread_lifetime_and_fork() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // (Another test's thread may still be on its way out.)
    until("no thread while nothing is open", || !progress::running());
    connect_with_idle_passive_side();
    until("thread ends at the last close", || !progress::running());

    connect_with_idle_passive_side();
    until("thread ends again", || !progress::running());

    // A listener keeps a thread running in the parent across fork().
    let d = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let _l = d.listen(0, Arc::new(Rec::default())).expect("listen");
    assert!(progress::running());
    // SAFETY: the child only runs this test's code and then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let ok = std::panic::catch_unwind(|| {
            assert!(!progress::running(), "a child starts with no thread");
            connect_with_idle_passive_side();
        })
        .is_ok();
        // SAFETY: ends the child without running the parent's atexit
        // handlers or test harness.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child: status {status:#x}"
    );
    assert!(progress::running(), "the parent's thread is untouched");
}

/// A child must leave the queue pairs it inherited alone: posting there is
/// refused, and closing them does not disturb the parent's connection.
#[test]
fn a_forked_child_leaves_inherited_queue_pairs_alone() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    use udapl::transport::verbs::{
        Access, CompletionQueue, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus,
    };
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let mk = |d: &Arc<IwarpDevice>, rec: Arc<Rec>| {
        let pd = d.alloc_pd().expect("pd");
        let cq = d.create_cq(16).expect("cq");
        let qp = d
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
                cm: rec,
            })
            .expect("qp");
        (pd, cq, qp)
    };
    let arec = Arc::new(Rec::default());
    let (pa, ca, qa) = mk(&da, arec.clone());
    let (pb, cb, qb) = mk(&db, Arc::new(Rec::default()));
    qa.connect(
        SocketAddr::new(LO, 0),
        l.port(),
        b"",
        Duration::from_secs(10),
    )
    .expect("connect");
    until("request", || lrec.find("request").is_some());
    let req: u64 = lrec
        .find("request")
        .and_then(|s| s[8..].parse().ok())
        .expect("id");
    db.accept(req, &*qb, b"").expect("accept");
    until("established", || arec.find("established").is_some());
    let src = vec![7u8; 32];
    let dst = vec![0u8; 32];
    let all = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
    let ms = da.register(pa, src.as_ptr() as u64, 32, all).expect("reg");
    let md = db.register(pb, dst.as_ptr() as u64, 32, all).expect("reg");
    let send = SendWr {
        wr_id: 1,
        op: SendOp::Send { solicited: false },
        sgl: &[Sge {
            addr: ms.addr,
            len: 32,
            lkey: ms.lkey,
        }],
        signaled: true,
        fence: false,
    };

    // SAFETY: the child only runs this test's code and then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_eq!(
                qa.post_send(&send),
                Err(udapl::transport::verbs::PostError::State)
            );
            assert!(qa.disconnect(false).is_err());
        }))
        .is_ok();
        // Close everything inherited (sockets, epoll registrations).
        drop((qa, qb, ca, cb, l, da, db));
        // SAFETY: ends the child without the parent's atexit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // The parent's connection works as before.
    qb.post_recv(&RecvWr {
        wr_id: 2,
        sgl: &[Sge {
            addr: md.addr,
            len: 32,
            lkey: md.lkey,
        }],
    })
    .expect("recv");
    qa.post_send(&send).expect("send");
    let wait = |cq: &Arc<dyn CompletionQueue>| {
        let mut out = [Wc {
            wr_id: 0,
            status: WcStatus::Fatal,
            op: WcOp::Send,
            byte_len: 0,
            qp: 0,
            solicited: false,
        }];
        let end = Instant::now() + Duration::from_secs(10);
        while cq.poll(&mut out) == 0 {
            assert!(Instant::now() < end, "completion");
        }
        out[0]
    };
    let w = wait(&cb);
    assert_eq!((w.wr_id, w.status, w.byte_len), (2, WcStatus::Success, 32));
    assert_eq!(wait(&ca).status, WcStatus::Success);
    assert_eq!(dst, src);
}
