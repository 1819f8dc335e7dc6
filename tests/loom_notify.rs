//! Model check of the sleeper/waker protocol of `src/wait/notify.rs` with
//! loom: every interleaving (and every weak-memory outcome loom models) of
//! sleepers registering, polling and parking against wakers publishing a
//! condition and notifying. A lost wake-up leaves a sleeper parked for ever,
//! which loom reports as a deadlock. Run by `make loom` (part of `make
//! check`); compiled only with `--cfg udapl_loom`.
#![cfg(udapl_loom)]

mod sync {
    pub(super) use loom::sync::atomic::{fence, AtomicUsize, Ordering};
    pub(super) use loom::sync::{Arc, Mutex};
}

/// A model of the eventfd parker: a sticky wake-up token. (Built from a
/// mutex and a condition variable rather than loom's thread park, whose
/// unpark also releases a thread blocked on a mutex.)
pub(crate) struct Parker {
    token: loom::sync::Mutex<bool>,
    cv: loom::sync::Condvar,
}

impl Parker {
    fn new() -> Parker {
        Parker {
            token: loom::sync::Mutex::new(false),
            cv: loom::sync::Condvar::new(),
        }
    }

    /// Writes the eventfd.
    pub(crate) fn unpark(&self) {
        *self.token.lock().unwrap() = true;
        self.cv.notify_one();
    }

    /// Sleeps until the eventfd is readable, then drains it.
    fn park(&self) {
        let mut t = self.token.lock().unwrap();
        while !*t {
            t = self.cv.wait(t).unwrap();
        }
        *t = false;
    }
}

#[path = "../src/wait/notify.rs"]
mod notify;

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use notify::Notifier;

/// What an EVD does: the condition lives under the object's lock and is
/// mirrored in a change counter that a spinning sleeper reads without it.
struct Object {
    queued: Mutex<u32>,
    seq: AtomicU64,
    waiters: Notifier,
}

impl Object {
    fn post(&self) {
        {
            let mut q = self.queued.lock().unwrap();
            *q += 1;
            self.seq.fetch_add(1, Ordering::Release);
        }
        self.waiters.notify();
    }

    /// The sleeper side of `wait::wait`: poll, register, poll, park, poll…
    fn wait_for(&self, want: u32) {
        let mut seen = None;
        let mut poll = || {
            let now = self.seq.load(Ordering::Acquire);
            if seen == Some(now) {
                return false;
            }
            seen = Some(now);
            *self.queued.lock().unwrap() >= want
        };
        if poll() {
            return;
        }
        let me = Arc::new(Parker::new());
        self.waiters.register(&me);
        while !poll() {
            me.park();
        }
        self.waiters.unregister(&me);
    }
}

/// Explores interleavings with up to three preemptions, which covers every
/// ordering of the protocol's steps between two threads (loom's advice for
/// keeping models tractable); the default is unbounded.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

fn object() -> Arc<Object> {
    Arc::new(Object {
        queued: Mutex::new(0),
        seq: AtomicU64::new(0),
        waiters: Notifier::new(),
    })
}

#[test]
fn one_sleeper_one_waker() {
    model(|| {
        let o = object();
        let o2 = o.clone();
        let sleeper = loom::thread::spawn(move || o2.wait_for(1));
        o.post();
        sleeper.join().unwrap();
        assert_eq!(o.waiters.sleepers(), 0);
    });
}

#[test]
fn one_sleeper_two_wakers() {
    model(|| {
        let o = object();
        let (a, b) = (o.clone(), o.clone());
        let sleeper = loom::thread::spawn(move || a.wait_for(2));
        let waker = loom::thread::spawn(move || b.post());
        o.post();
        waker.join().unwrap();
        sleeper.join().unwrap();
    });
}

#[test]
fn two_sleepers_one_waker() {
    model(|| {
        let o = object();
        let (a, b) = (o.clone(), o.clone());
        let s1 = loom::thread::spawn(move || a.wait_for(1));
        let s2 = loom::thread::spawn(move || b.wait_for(1));
        o.post();
        s1.join().unwrap();
        s2.join().unwrap();
    });
}
