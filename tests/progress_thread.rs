//! The background progress thread's lifetime: it starts with the first
//! connection object, ends with the last, starts again on next use, and a
//! forked child gets its own.

mod common {
    pub mod qp;
}

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::qp::{poll_one, Got, QpOpts, Rec, Side, LO};
use udapl::transport::iwarp::device::IwarpDevice;
use udapl::transport::iwarp::progress;
use udapl::transport::verbs::{Device, Listener};
use udapl::transport::SOFTWARE_CAPABILITIES;

/// Waits (sleeping, driving nothing: only the progress thread may move
/// the connections here) until `f` holds; panics after 10 s.
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Two devices of this process, a listener on `db`, and a small queue
/// pair on each (one CQ for both queues): `a` connected to `b`.
struct Conn {
    da: Arc<IwarpDevice>,
    db: Arc<IwarpDevice>,
    l: Arc<dyn Listener>,
    a: Side,
    b: Side,
}

/// Connects two devices of this process with no one calling `progress`
/// on the passive one: only the progress thread can take the request.
fn connect_with_idle_passive_side() -> Conn {
    let da = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let db = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = db.listen(0, lrec.clone()).expect("listen");
    let o = QpOpts {
        send_depth: 4,
        recv_depth: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        ird: 1,
        ord: 1,
        cq_depth: 16,
    };
    let a = Side::one_cq(&da, o);
    let b = Side::one_cq(&db, o);
    a.qp.connect(
        SocketAddr::new(LO, 0),
        l.port(),
        b"",
        Duration::from_secs(10),
    )
    .expect("connect");
    // The first request recorded (the record is kept).
    let request = || {
        lrec.peek().into_iter().find_map(|g| match g {
            Got::Request(r) => Some(r.id),
            _ => None,
        })
    };
    until("connection request", || request().is_some());
    let req = request().expect("request id");
    db.accept(req, &*b.qp, b"").expect("accept");
    until("established", || {
        a.rec
            .peek()
            .iter()
            .any(|g| matches!(g, Got::Established(_)))
    });
    Conn { da, db, l, a, b }
}

/// The tests here watch the one progress thread: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn progress_thread_lifetime_and_fork() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // (Another test's thread may still be on its way out.)
    until("no thread while nothing is open", || !progress::running());
    drop(connect_with_idle_passive_side());
    until("thread ends at the last close", || !progress::running());

    drop(connect_with_idle_passive_side());
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
            drop(connect_with_idle_passive_side());
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
    use udapl::transport::verbs::{Access, CompletionQueue, SendOp, SendWr, Sge, WcStatus};
    let Conn { da, db, l, a, b } = connect_with_idle_passive_side();
    let src = vec![7u8; 32];
    let dst = vec![0u8; 32];
    let all = Access::LOCAL_READ.union(Access::LOCAL_WRITE);
    let ms = da
        .register(a.pd, src.as_ptr() as u64, 32, all)
        .expect("reg");
    let md = db
        .register(b.pd, dst.as_ptr() as u64, 32, all)
        .expect("reg");
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
                a.qp.post_send(&send),
                Err(udapl::transport::verbs::PostError::State)
            );
            assert!(a.qp.disconnect(false).is_err());
        }))
        .is_ok();
        // Close everything inherited (sockets, epoll registrations).
        drop((a, b, l, da, db));
        // SAFETY: ends the child without the parent's atexit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // The parent's connection works as before.
    b.post_recv(
        2,
        &[Sge {
            addr: md.addr,
            len: 32,
            lkey: md.lkey,
        }],
    );
    a.qp.post_send(&send).expect("send");
    // Polling drives the queue pairs; nothing else does.
    let wait = |cq: &Arc<dyn CompletionQueue>| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(w) = poll_one(cq) {
                return w;
            }
            assert!(Instant::now() < end, "completion");
        }
    };
    let w = wait(b.cq());
    assert_eq!((w.wr_id, w.status, w.byte_len), (2, WcStatus::Success, 32));
    assert_eq!(wait(a.cq()).status, WcStatus::Success);
    assert_eq!(dst, src);
}
