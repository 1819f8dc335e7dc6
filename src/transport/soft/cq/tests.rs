//! The completion queue's tests: ring, notification, feeders, wait descriptors.

use super::*;
use crate::transport::api::WcOp;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::sync::atomic::AtomicUsize;

fn wc(id: u64, op: WcOp, status: WcStatus, solicited: bool) -> Wc {
    Wc {
        wr_id: id,
        ctx: 0,
        implicit: 0,
        status,
        op,
        byte_len: 0,
        qp: 1,
        solicited,
    }
}

fn readable(cq: &Cq) -> bool {
    let mut fds = [PollFd::new(cq.wait_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) == 1
}

#[test]
fn completions_come_out_in_order_and_the_ring_is_bounded() {
    let cq = Cq::new(3).expect("cq");
    for i in 0..3 {
        assert!(cq.push(wc(i, WcOp::Send, WcStatus::Success, false)));
    }
    assert!(
        !cq.push(wc(9, WcOp::Send, WcStatus::Success, false)),
        "overrun"
    );
    let mut out = [wc(0, WcOp::Send, WcStatus::Fatal, false); 2];
    assert_eq!(cq.poll(&mut out), 2);
    assert_eq!((out[0].wr_id, out[1].wr_id), (0, 1));
    assert_eq!(cq.poll(&mut out), 1);
    assert_eq!(out[0].wr_id, 2);
    assert_eq!(cq.poll(&mut out), 0);
}

#[test]
fn arming_notifies_once() {
    let cq = Cq::new(8).expect("cq");
    assert!(cq.push(wc(1, WcOp::Send, WcStatus::Success, false)));
    assert!(!readable(&cq), "not armed: no notification");
    cq.arm(false);
    assert!(cq.push(wc(2, WcOp::Send, WcStatus::Success, false)));
    assert!(readable(&cq));
    cq.clear_notification();
    assert!(cq.push(wc(3, WcOp::Send, WcStatus::Success, false)));
    assert!(!readable(&cq), "one notification per arm");
}

/// Issue 17, finding 4: a hook that re-arms (a CNO's EVD does, after
/// every notification) consumed the notification a thread sleeping on
/// the queue was woken for, and that thread slept on for ever.
#[test]
fn rearming_keeps_a_notification_a_sleeper_has_not_seen() {
    let cq = Cq::new(8).expect("cq");
    let c = cq.clone();
    cq.on_notify(Some(Arc::new(move || c.arm(false))));
    cq.arm(false);
    assert!(cq.push(wc(1, WcOp::Recv, WcStatus::Success, false)));
    cq.run_hook();
    assert!(readable(&cq), "the sleeper still finds its notification");
    cq.clear_notification();
    assert!(!readable(&cq));
    assert!(cq.push(wc(2, WcOp::Recv, WcStatus::Success, false)));
    cq.run_hook();
    assert!(readable(&cq), "the hook armed again: the next one notifies");
}

#[test]
fn solicited_arming_waits_for_a_solicited_receive_or_an_error() {
    let cq = Cq::new(8).expect("cq");
    cq.arm(true);
    assert!(cq.push(wc(1, WcOp::Recv, WcStatus::Success, false)));
    assert!(cq.push(wc(2, WcOp::Send, WcStatus::Success, false)));
    assert!(!readable(&cq));
    assert!(cq.push(wc(3, WcOp::Recv, WcStatus::Success, true)));
    assert!(readable(&cq));
    cq.clear_notification();
    cq.arm(true);
    assert!(cq.push(wc(4, WcOp::Send, WcStatus::RemoteAccess, false)));
    assert!(readable(&cq), "errors always notify");
}

struct Counter(AtomicUsize, Arc<Cq>);
impl Feeder for Counter {
    fn progress(&self) -> bool {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        self.1
            .push(wc(n as u64, WcOp::Recv, WcStatus::Success, false))
    }
}

#[test]
fn polling_runs_the_feeders_engines() {
    let cq = Cq::new(8).expect("cq");
    let f: Arc<dyn Feeder> = Arc::new(Counter(AtomicUsize::new(0), cq.clone()));
    cq.attach(&f);
    let mut out = [wc(0, WcOp::Send, WcStatus::Fatal, false); 4];
    assert_eq!(cq.poll(&mut out), 1, "the engine produced a completion");
    assert_eq!(cq.poll(&mut out), 1);
    assert_eq!(out[0].wr_id, 1);
    cq.detach(&f);
    assert_eq!(cq.poll(&mut out), 0, "detached engines are not run");
    let g: Arc<dyn Feeder> = Arc::new(Counter(AtomicUsize::new(0), cq.clone()));
    cq.attach(&g);
    drop(g);
    assert_eq!(cq.poll(&mut out), 0, "dropped engines are not run");
}

struct Busy(Arc<Cq>, std::sync::atomic::AtomicBool);
impl Feeder for Busy {
    fn progress(&self) -> bool {
        if self.1.load(Ordering::SeqCst) {
            self.0.mark_busy();
        }
        false
    }
}

#[test]
fn busy_says_whether_the_feeders_left_work_for_the_next_poll() {
    let cq = Cq::new(4).expect("cq");
    assert!(!cq.busy(), "nothing fed");
    let b = Arc::new(Busy(cq.clone(), std::sync::atomic::AtomicBool::new(true)));
    let f: Arc<dyn Feeder> = b.clone();
    cq.attach(&f);
    let mut out = [wc(0, WcOp::Send, WcStatus::Fatal, false); 2];
    assert_eq!(cq.poll(&mut out), 0);
    assert!(cq.busy(), "the engine stopped with work left");
    b.1.store(false, Ordering::SeqCst);
    assert_eq!(cq.poll(&mut out), 0);
    assert!(
        !cq.busy(),
        "a poll clears it; the engine did not set it again"
    );
    cq.detach(&f);
}

struct Watch(AtomicUsize);
impl Feeder for Watch {
    fn progress(&self) -> bool {
        false
    }
    fn driven_changed(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The driven state (progress on arrival, issue 17 finding 5): a
/// spinning poller drives its queue pairs; a completion, or a check
/// that finds nobody polling, gives them back to the progress thread.
#[test]
fn a_spinner_drives_until_it_gets_a_completion_or_stops() {
    let cq = Cq::new(8).expect("cq");
    let w = Arc::new(Watch(AtomicUsize::new(0)));
    let f: Arc<dyn Feeder> = w.clone();
    cq.attach(&f);
    let mut out = [Wc::BLANK; 4];
    assert_eq!(cq.poll(&mut out), 0);
    assert!(!cq.driven(), "one empty poll is not a spin (a drain)");
    assert_eq!(cq.poll(&mut out), 0);
    assert!(cq.driven(), "two quick empty polls are");
    assert_eq!(w.0.load(Ordering::SeqCst), 1, "the feeder was told");
    // What the spinner waited for comes: it may go and poll memory.
    assert!(cq.push(wc(1, WcOp::Recv, WcStatus::Success, false)));
    assert_eq!(cq.poll(&mut out), 1);
    assert!(!cq.driven());
    assert_eq!(w.0.load(Ordering::SeqCst), 2);
    // A slow poller (a drain now and then) never drives.
    for _ in 0..3 {
        assert_eq!(cq.poll(&mut out), 0);
        std::thread::sleep(Duration::from_micros(50));
        assert_eq!(cq.poll(&mut out), 0);
        assert!(!cq.driven(), "empty polls far apart");
        std::thread::sleep(Duration::from_micros(50));
    }
    // A spinner that gives up without a completion: the check ends it
    // once a whole period passed with no poll.
    assert_eq!(cq.poll(&mut out), 0);
    assert_eq!(cq.poll(&mut out), 0);
    assert!(cq.driven());
    assert_eq!(cq.poll(&mut out), 0);
    assert!(cq.run().at.is_some(), "polled since: still driven");
    assert!(cq.driven());
    let end = Instant::now() + Duration::from_secs(5);
    while cq.driven() {
        assert!(Instant::now() < end, "the check ended it");
        std::thread::sleep(Duration::from_millis(1));
    }
    // A sleeper drives however long it sleeps, and a completion does
    // not end that.
    cq.sleeping(true);
    assert!(cq.driven());
    assert!(cq.push(wc(2, WcOp::Recv, WcStatus::Success, false)));
    assert_eq!(cq.poll(&mut out), 1);
    assert!(cq.driven(), "a sleeper still drives");
    assert_eq!(cq.run().at, None, "no check while a thread sleeps here");
    assert!(cq.driven());
    // The sleeper leaves without polling again: the check, started
    // again as it left, ends it.
    cq.sleeping(false);
    let end = Instant::now() + Duration::from_secs(5);
    while cq.driven() {
        assert!(Instant::now() < end, "the check ended it");
        std::thread::sleep(Duration::from_millis(1));
    }
    cq.detach(&f);
}

#[test]
fn a_fired_notification_runs_the_hook_once_per_arm() {
    let cq = Cq::new(8).expect("cq");
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    cq.on_notify(Some(Arc::new(move || {
        m.fetch_add(1, Ordering::SeqCst);
    })));
    assert!(cq.push(wc(1, WcOp::Send, WcStatus::Success, false)));
    assert_eq!(n.load(Ordering::SeqCst), 0, "not armed");
    cq.arm(false);
    assert!(cq.push(wc(2, WcOp::Send, WcStatus::Success, false)));
    assert_eq!(
        n.load(Ordering::SeqCst),
        0,
        "not while the producer holds its locks"
    );
    assert!(cq.push(wc(3, WcOp::Send, WcStatus::Success, false)));
    cq.run_hook();
    cq.run_hook();
    assert_eq!(n.load(Ordering::SeqCst), 1, "once per arm");
    cq.on_notify(None);
    cq.arm(false);
    assert!(cq.push(wc(4, WcOp::Send, WcStatus::Success, false)));
    cq.run_hook();
    assert_eq!(n.load(Ordering::SeqCst), 1, "removed");
}

#[test]
fn resize_keeps_queued_completions() {
    let cq = Cq::new(2).expect("cq");
    assert!(cq.push(wc(1, WcOp::Send, WcStatus::Success, false)));
    assert!(cq.push(wc(2, WcOp::Send, WcStatus::Success, false)));
    assert_eq!(cq.resize(1), Err(DeviceError::Invalid));
    cq.resize(4).expect("grow");
    assert_eq!(cq.depth(), 4);
    assert!(cq.push(wc(3, WcOp::Send, WcStatus::Success, false)));
    assert_eq!(cq.len(), 3);
    assert_eq!(Cq::new(0).err(), Some(DeviceError::Invalid));
}

#[test]
fn a_watched_socket_wakes_the_wait_descriptor() {
    let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
    let cq = Cq::new(4).expect("cq");
    cq.watch(b.as_fd(), 7).expect("watch");
    assert!(!readable(&cq));
    use std::io::Write;
    (&a).write_all(b"x").expect("write");
    assert!(readable(&cq));
    cq.unwatch(b.as_fd());
}
