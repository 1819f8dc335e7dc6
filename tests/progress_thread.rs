//! The background progress thread's lifetime: it starts with the first
//! connection object, ends with the last, starts again on next use, and a
//! forked child gets its own; and what only it can notice (a peer's close
//! that arrived with the last data an application took).

mod common {
    #[allow(dead_code)] // the misbehaving peer, used here as a plain one
    pub mod peer;
    pub mod qp;
}

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::qp::{poll_one, Got, QpOpts, Rec, Side, LO};
use udapl::transport::api::{Device, Listener};
use udapl::transport::soft::progress;
use udapl::transport::tcp::IwarpDevice;
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
    use udapl::transport::api::{Access, CompletionQueue, SendOp, SendWr, Sge, WcStatus};
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
        ctx: 0,
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
                Err(udapl::transport::api::PostError::State)
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

/// A peer that sends a message and closes at once (its FIN in the same TCP
/// segment as the data: corked, then shut down) while an application
/// thread polls the completion queue until it takes the message's
/// completion and then never calls the library again. The queue pair must
/// still report `Disconnected`: the progress thread watches sockets
/// edge-triggered, so the end of stream that came with the data raises no
/// new edge, and a step that took the data (the application's poll, or the
/// progress thread's own) must go on reading until the socket says it is
/// empty (it used not to: the disconnect was never seen). A race, so run
/// many times, a third of the runs each way: the application spins on the
/// queue (it drives the queue pair, and its poll takes the data), polls
/// slowly (the progress thread takes the data, the poll the completion),
/// or calls nothing at all until the disconnect is reported (the progress
/// thread alone; then one poll takes the completion).
#[test]
fn data_and_fin_arriving_together_are_both_seen_without_further_calls() {
    use common::peer::{send, ulpdu, Peer, Request};
    use common::qp::{wait_for, Got, Mem};
    use std::os::fd::AsRawFd;
    use udapl::transport::api::{Access, WcOp, WcStatus};

    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dev = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let lrec = Arc::new(Rec::default());
    let l = dev.listen(0, lrec.clone()).expect("listen");
    let addr = SocketAddr::new(LO, l.port());
    let o = QpOpts {
        send_depth: 4,
        recv_depth: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        ird: 1,
        ord: 1,
        cq_depth: 16,
    };
    let limit = Duration::from_secs(10);
    let msg = b"last words before the FIN";
    for i in 0..50 {
        let q = Side::one_cq(&dev, o);
        let buf = Mem::on(&dev, q.pd, 64, 0, Access::LOCAL_WRITE);
        q.post_recv(1, &[buf.sge(0, 64)]);
        // Setup, driven by this thread.
        let mut p = Peer::connect(addr);
        p.send_raw(&Request::v2(1, 1, b"").bytes());
        let id = wait_for(&[&dev], "connection request", limit, || {
            lrec.pop().map(|g| match g {
                Got::Request(r) => r.id,
                other => panic!("expected a request, got {other:?}"),
            })
        });
        dev.accept(id, &*q.qp, b"").expect("accept");
        p.read_reply(&mut || {
            dev.progress();
        })
        .expect("Reply");
        p.send_fpdu(&common::peer::write(true, 0, 0));
        let ev = wait_for(&[&dev], "established", limit, || q.rec.pop());
        assert!(matches!(ev, Got::Established(_)), "{ev:?}");

        // The application thread: polls until it has the message, then
        // leaves the library alone (or, every third run, calls nothing
        // until the disconnect is reported).
        let mode = i % 3;
        let (spin, late) = (mode == 0, mode == 2);
        let cq = q.cq().clone();
        let app = (!late).then(|| {
            std::thread::spawn(move || {
                let end = Instant::now() + limit;
                loop {
                    if let Some(w) = poll_one(&cq) {
                        return w;
                    }
                    assert!(Instant::now() < end, "the message's completion");
                    if !spin {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
            })
        });
        if spin {
            // Let it start spinning.
            std::thread::sleep(Duration::from_millis(2));
        }
        // Data and FIN in one segment: corked, the FIN joins the unsent data.
        let fd = p.sock.as_raw_fd();
        let one: libc::c_int = 1;
        // SAFETY: a valid socket and an option value of the size passed.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_CORK,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "TCP_CORK");
        p.send_fpdu(&ulpdu(&send(true, 1, 0), msg));
        p.shutdown_write();
        let w = app.map(|a| a.join().expect("application thread"));
        // Nobody calls the library now: only the progress thread can.
        until(&format!("run {i} (mode {mode}): Disconnected"), || {
            q.rec.peek().contains(&Got::Disconnected)
        });
        assert_eq!(q.rec.take(), [Got::Disconnected], "run {i}");
        let w = w.unwrap_or_else(|| poll_one(q.cq()).expect("the message's completion"));
        assert_eq!(
            (w.wr_id, w.status, w.op, w.byte_len),
            (1, WcStatus::Success, WcOp::Recv, msg.len() as u64),
            "run {i}"
        );
        assert_eq!(buf.read(0, msg.len()), msg);
        p.expect_closed(&mut || std::thread::sleep(Duration::from_millis(1)));
    }
}

/// The nice value of this process's thread named `name`, from
/// `/proc/self/task/*/stat` (field 19).
fn nice_of_thread(name: &str) -> Option<i32> {
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
        // Fields after the command's closing parenthesis start at field 3.
        let rest = &stat[stat.rfind(')')? + 2..];
        return rest.split(' ').nth(19 - 3)?.parse().ok();
    }
    None
}

/// The progress thread outranks the application's threads where the
/// process may raise a priority (root here): at the same nice value a
/// wake-up on a machine whose cores all spin waited milliseconds.
#[test]
fn progress_thread_runs_at_its_own_nice_value() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = IwarpDevice::open(LO, SOFTWARE_CAPABILITIES);
    let _l = d.listen(0, Arc::new(Rec::default())).expect("listen");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut nice = None;
    until("the progress thread has set its priority", || {
        nice = nice_of_thread("udapl-progress");
        nice == Some(progress::nice_value()) || (!root && nice.is_some())
    });
    if root && std::env::var_os("DAT_PROGRESS_NICE").is_none() {
        assert_eq!(nice, Some(progress::DEFAULT_NICE));
    }
}
