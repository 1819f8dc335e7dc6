//! Model check, with loom, of the notification protocol between a software
//! completion queue and a thread that sleeps on it in `dat_evd_wait`: every
//! interleaving (and weak-memory outcome loom models) of a producer pushing
//! completions and running the queue's hook, the sleeper's last looks
//! before it sleeps, and (in some models) a third thread that moves
//! completions from the queue into the EVD.
//!
//! It is a standalone copy of the protocol, not the code itself (which
//! needs sockets and epoll); it mirrors, at commit 768f8ec:
//!
//! - `src/transport/soft/cq.rs`: `Cq::push` (queue the completion; if
//!   armed, disarm, write the notification eventfd, mark the hook due),
//!   `Cq::run_hook` (the producer runs the hook once it holds no lock),
//!   `CompletionQueue::arm` (arm; it never consumes a notification),
//!   `CompletionQueue::clear_notification` (read the eventfd);
//! - `src/object/evd.rs`: `Evd::cq_notified` (the CNO hook: trigger the CNO
//!   unless a waiter owns the EVD, and arm again), `Evd::wait` (the sleeper:
//!   poll, then clear the notification, arm, poll a last time, sleep on the
//!   eventfd until it is readable, and again) and `Evd::fill_then` (take
//!   completions out of the queue, then put them in the EVD's event queue
//!   under its lock).
//!
//! The eventfd is a counter: a write adds one, a read empties it, a sleeper
//! in `ppoll` waits until it is non-zero. The property checked is that
//! whenever the sleeper sleeps, either a later push writes the eventfd or
//! the completion is visible to its last look: a sleeper that finds the
//! eventfd empty once every other thread has finished would sleep for ever,
//! and the model fails with "lost wake-up" and what was left in the queue
//! and the EVD. (Not as a loom deadlock: loom aborts the process when the
//! model's objects are dropped while it unwinds from one, so a negative
//! model could not be a `#[should_panic]` test.) Sockets are left out: data arriving for the queue pair
//! also wakes a real sleeper, but a completion's own wake-up must not
//! depend on more data coming.
//!
//! Negative models (`#[should_panic(expected = "lost wake-up")]`) show that the
//! check finds the lost wake-ups:
//!
//! - `old_arm_that_drains_the_eventfd_loses_the_wake_up`: the bug fixed in
//!   768f8ec (arming read the eventfd; the CNO hook arms after every
//!   notification and took the one the sleeper was woken for);
//! - `third_party_fill_loses_the_wake_up`: the protocol as it is: a thread
//!   other than the waiter (a `dat_cno_wait` polling the EVDs of its CNO, a
//!   post that needs a request slot: `Ep::take_request_slot`) takes the
//!   completion out of the queue, the waiter's clear consumes the
//!   notification and its last look finds neither the queue nor the EVD
//!   holding it, then the other thread queues it in the EVD and wakes
//!   nobody. `ctests/ep/notify_stress.c` cases F and H hit it over TCP.
//!
//! `fill_under_queue_lock_keeps_the_wake_up_and_the_order` checks a fix:
//! completions are taken from the queue while the EVD's lock is held (the
//! engines still run before, without it), so the waiter's last look sees
//! every completion pushed before it armed, and concurrent fills cannot
//! reorder completions either.
//!
//! Run by `make loom`; compiled only with `--cfg udapl_loom`.
#![cfg(udapl_loom)]

use std::collections::VecDeque;

use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use loom::sync::{Arc, Mutex};

/// The notification eventfd (`EFD_NONBLOCK`, a counter).
struct EventFd {
    count: Mutex<u64>,
}

impl EventFd {
    fn new() -> EventFd {
        EventFd {
            count: Mutex::new(0),
        }
    }

    /// `write(1)`.
    fn write(&self) {
        *self.count.lock().unwrap() += 1;
    }

    /// `read`: empties the counter (EAGAIN when empty: nothing happens).
    fn read(&self) {
        *self.count.lock().unwrap() = 0;
    }

    /// `ppoll` until readable (the sleeper does not read it: its next round
    /// clears it before it arms). False if it would sleep for ever: it is
    /// not readable and every other thread is done (`done`, set once they
    /// all finished: no write can come any more).
    fn sleep_until_readable(&self, done: &AtomicBool) -> bool {
        loop {
            let over = done.load(Ordering::SeqCst);
            if *self.count.lock().unwrap() > 0 {
                return true;
            }
            if over {
                return false;
            }
            loom::thread::yield_now();
        }
    }
}

const DISARMED: u8 = 0;
const ARMED: u8 = 1;

/// How `arm` treats a notification already written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArmMode {
    /// As now: arming never consumes a notification.
    Keeps,
    /// As before 768f8ec: arming read the eventfd first.
    Drains,
}

/// How a fill takes completions from the queue into the EVD.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FillMode {
    /// As `Evd::fill_then` now: poll the queue (its own lock), then lock
    /// the EVD's queue and append.
    Split,
    /// The fix: take from the queue with the EVD's lock held.
    UnderQueueLock,
}

/// `Cq`: the ring, the armed state, the eventfd, the hook's due flag.
struct Cq {
    ring: Mutex<VecDeque<u32>>,
    armed: AtomicU8,
    notify: EventFd,
    hook_due: AtomicBool,
    arm_mode: ArmMode,
}

impl Cq {
    /// `Cq::push` (the ring's lock is let go before the notification).
    fn push(&self, wc: u32) {
        self.ring.lock().unwrap().push_back(wc);
        if self.armed.load(Ordering::Acquire) == DISARMED {
            return;
        }
        if self.armed.swap(DISARMED, Ordering::AcqRel) != DISARMED {
            self.notify.write();
            self.hook_due.store(true, Ordering::Release);
        }
    }

    /// `Cq::run_hook`: the hook of a notification that fired, run by the
    /// producer with no lock held.
    fn run_hook(&self, evd: &Evd) {
        if !self.hook_due.load(Ordering::Acquire) || !self.hook_due.swap(false, Ordering::AcqRel) {
            return;
        }
        evd.cq_notified();
    }

    /// `CompletionQueue::arm`.
    fn arm(&self) {
        if self.arm_mode == ArmMode::Drains {
            self.notify.read();
        }
        self.armed.store(ARMED, Ordering::Release);
    }

    /// `CompletionQueue::clear_notification`.
    fn clear_notification(&self) {
        self.notify.read();
    }

    /// `CompletionQueue::poll` (what the engines produced is already pushed).
    fn take(&self) -> Vec<u32> {
        self.ring.lock().unwrap().drain(..).collect()
    }
}

/// The EVD's queue.
struct Queue {
    events: VecDeque<u32>,
    /// A thread is blocked in `dat_evd_wait`.
    waiter: bool,
}

/// An EVD with a CQ and (`cno`) a CNO whose hook is installed.
struct Evd {
    q: Mutex<Queue>,
    cq: Cq,
    fill_mode: FillMode,
    cno: bool,
}

impl Evd {
    fn new(arm_mode: ArmMode, fill_mode: FillMode, cno: bool) -> Arc<Evd> {
        let evd = Arc::new(Evd {
            q: Mutex::new(Queue {
                events: VecDeque::new(),
                waiter: false,
                // (no overflow, no deferred events, no notification
                // suppression: one stream, every completion notifies)
            }),
            cq: Cq {
                ring: Mutex::new(VecDeque::new()),
                armed: AtomicU8::new(DISARMED),
                notify: EventFd::new(),
                hook_due: AtomicBool::new(false),
                arm_mode,
            },
            fill_mode,
            cno,
        });
        if cno {
            // `Evd::hook_cno`: a CNO attached arms the queue at once.
            evd.cq.arm();
        }
        evd
    }

    /// `Evd::fill`.
    fn fill(&self) {
        match self.fill_mode {
            FillMode::Split => {
                let wcs = self.cq.take();
                self.q.lock().unwrap().events.extend(wcs);
            }
            FillMode::UnderQueueLock => {
                let mut q = self.q.lock().unwrap();
                let wcs = self.cq.take();
                q.events.extend(wcs);
            }
        }
    }

    /// `Evd::cq_notified`: the CQ's hook.
    fn cq_notified(&self) {
        if !self.cno {
            return;
        }
        // (The CNO is triggered unless a waiter owns the EVD: it wakes CNO
        // waiters, not this EVD's sleeper, so the model leaves it out.)
        let _trigger = !self.q.lock().unwrap().waiter;
        self.cq.arm();
    }

    /// The producer: the engine pushes a completion, then runs the hooks
    /// once it let go of its locks (`IwarpQp::run_hooks`).
    fn produce(&self, wc: u32) {
        self.cq.push(wc);
        self.cq.run_hook(self);
    }

    fn ready(&self) -> Option<u32> {
        self.q.lock().unwrap().events.pop_front()
    }

    /// `dat_evd_wait(threshold 1)` on an EVD with a CQ, from the point where
    /// the wait must sleep (the spin's polls only shorten the race). `None`:
    /// it sleeps for ever (`done`: nobody else will act any more).
    fn wait_one(&self, done: &AtomicBool) -> Option<u32> {
        self.q.lock().unwrap().waiter = true;
        let ev = loop {
            self.fill();
            if let Some(e) = self.ready() {
                break Some(e);
            }
            self.cq.clear_notification();
            self.cq.arm();
            self.fill();
            if let Some(e) = self.ready() {
                break Some(e);
            }
            if !self.cq.notify.sleep_until_readable(done) {
                break None;
            }
        };
        self.q.lock().unwrap().waiter = false;
        ev
    }

    /// What a sleeper that sleeps for ever left behind: (in the queue, in
    /// the EVD).
    fn stranded(&self) -> (usize, usize) {
        (
            self.cq.ring.lock().unwrap().len(),
            self.q.lock().unwrap().events.len(),
        )
    }
}

/// Interleavings with up to three preemptions (as `tests/loom_notify.rs`),
/// or `LOOM_MAX_PREEMPTIONS`.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// A sleeper waits for `want` completions that the producer (the main
/// thread: the progress thread) pushes; `filler`: a third thread fills the
/// EVD as often (a CNO waiter polling it, a post needing a request slot).
/// The sleeper gets the completions in order.
fn sleeper_and_producer(arm: ArmMode, fill: FillMode, cno: bool, want: u32, filler: bool) {
    model(move || {
        let evd = Evd::new(arm, fill, cno);
        let done = Arc::new(AtomicBool::new(false));
        let (e, d) = (evd.clone(), done.clone());
        let sleeper = loom::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..want {
                match e.wait_one(&d) {
                    Some(x) => got.push(x),
                    None => return Err(e.stranded()),
                }
            }
            Ok(got)
        });
        let third = filler.then(|| {
            let e = evd.clone();
            loom::thread::spawn(move || {
                for _ in 0..want {
                    e.fill();
                }
            })
        });
        for i in 0..want {
            evd.produce(i);
        }
        if let Some(t) = third {
            t.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        match sleeper.join().unwrap() {
            Ok(got) => assert_eq!(got, (0..want).collect::<Vec<_>>(), "completions in order"),
            Err((in_cq, in_evd)) => panic!(
                "lost wake-up: the sleeper sleeps for ever with {in_cq} completion(s) in the \
                 queue and {in_evd} in the EVD"
            ),
        }
    });
}

/// No CNO: a push into the armed queue wakes the sleeper.
#[test]
fn push_wakes_the_sleeper() {
    sleeper_and_producer(ArmMode::Keeps, FillMode::Split, false, 2, false);
}

/// A CNO attached: its hook re-arms after every notification and must not
/// take the one the sleeper waits for (the bug fixed in 768f8ec; the hook
/// runs on the producer's thread after the push).
#[test]
fn cno_hook_rearming_keeps_the_wake_up() {
    sleeper_and_producer(ArmMode::Keeps, FillMode::Split, true, 2, false);
}

/// Negative: the old `arm`, which drained the eventfd, with the CNO hook
/// that arms after every notification: the sleeper sleeps for ever with
/// the completion in the queue.
#[test]
#[should_panic(expected = "lost wake-up")]
fn old_arm_that_drains_the_eventfd_loses_the_wake_up() {
    sleeper_and_producer(ArmMode::Drains, FillMode::Split, true, 1, false);
}

/// Negative (the protocol as it is): a third thread that fills the EVD
/// holds the completion between the queue and the EVD while the sleeper
/// clears the notification and looks a last time; nobody wakes it.
#[test]
#[should_panic(expected = "lost wake-up")]
fn third_party_fill_loses_the_wake_up() {
    sleeper_and_producer(ArmMode::Keeps, FillMode::Split, false, 1, true);
}

/// The same with a CNO attached (case F of ctests/ep/notify_stress.c: the
/// third thread is the CNO's waiter).
#[test]
#[should_panic(expected = "lost wake-up")]
fn third_party_fill_with_cno_loses_the_wake_up() {
    sleeper_and_producer(ArmMode::Keeps, FillMode::Split, true, 1, true);
}

/// Negative: two threads filling, split, can also reorder completions
/// (case H of ctests/ep/notify_stress.c saw Send 235 before 233). Checked
/// without a sleeper: a consumer that dequeues (fills, then pops under the
/// lock, as `Evd::dequeue`) while another thread fills.
#[test]
#[should_panic(expected = "completions in order")]
fn split_fills_reorder_completions() {
    dequeuer_and_filler(FillMode::Split);
}

/// The fix: the completions are taken from the queue under the EVD's lock.
/// The sleeper is always woken or finds them, and in order.
#[test]
fn fill_under_queue_lock_keeps_the_wake_up_and_the_order() {
    sleeper_and_producer(ArmMode::Keeps, FillMode::UnderQueueLock, false, 1, true);
    sleeper_and_producer(ArmMode::Keeps, FillMode::UnderQueueLock, true, 2, true);
    dequeuer_and_filler(FillMode::UnderQueueLock);
}

/// Two completions already pushed; a consumer takes both with `dequeue`
/// (fill, then pop) while a third thread fills once.
fn dequeuer_and_filler(fill: FillMode) {
    model(move || {
        let evd = Evd::new(ArmMode::Keeps, fill, false);
        let e = evd.clone();
        let filler = loom::thread::spawn(move || e.fill());
        // The engine pushes them one by one; each fill may take a part.
        evd.produce(0);
        let e = evd.clone();
        let second = loom::thread::spawn(move || e.produce(1));
        let mut got = Vec::new();
        while got.len() < 2 {
            evd.fill();
            if let Some(x) = evd.ready() {
                got.push(x);
            } else {
                loom::thread::yield_now();
            }
        }
        filler.join().unwrap();
        second.join().unwrap();
        assert_eq!(got, vec![0, 1], "completions in order");
    });
}
