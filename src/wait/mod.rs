//! Blocking waits: a bounded spin, then a sleep that ends on a wake-up, the
//! deadline or a signal.
//!
//! A waiter calls [`wait`] with a *poll* closure that returns `Some` once the
//! wait is over. The closure runs first without any cost; if the wait must
//! block:
//!
//! 1. every asynchronous signal is blocked for the thread (its own mask is
//!    saved), so a signal that arrives from now on stays pending instead of
//!    running its handler where the wait could not notice it;
//! 2. the thread spins, calling the closure, for at most the spin budget
//!    (`DAT_WAIT_SPIN_US`, default 5 µs, 0 allowed) and never past the
//!    deadline. The data path uses this time to drive its transport;
//! 3. the thread registers its parker with the object's [`Notifier`], polls
//!    once more, and sleeps in `ppoll(2)` with its original signal mask:
//!    the kernel installs the mask and sleeps atomically, so a pending or
//!    arriving signal runs its handler and ends the sleep with `EINTR`, and
//!    the wait returns [`Wake::Interrupted`]. A signal is never lost.
//!
//! Wakers change the condition (under the object's own lock), release that
//! lock, then call [`Notifier::notify`], which costs one fence and one load
//! when nobody sleeps. The sleeper publishes its registration before its
//! last poll and the waker publishes the condition before it reads the
//! sleeper count (both sequentially consistent), so a wake-up cannot fall
//! between them.
//!
//! Each thread's parker is an `eventfd` created on its first sleep. The
//! sleep can also watch one more descriptor ([`Sleep::fd`]): a transport
//! passes its socket or epoll descriptor so a waiting thread wakes for
//! network readiness as well as for completions.
//!
//! Lock order: the notifier's list lock is a leaf (nothing is taken while it
//! is held except the kernel's eventfd).

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
use nix::sys::time::TimeSpec;

/// How a wait ended without its condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The deadline passed.
    TimedOut,
    /// A signal handler ran (installed without `SA_RESTART`).
    Interrupted,
}

/// The default spin budget before sleeping.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(5);

/// The spin budget: `DAT_WAIT_SPIN_US` microseconds (0 allowed), read once.
pub fn spin_budget() -> Duration {
    static SPIN: OnceLock<Duration> = OnceLock::new();
    *SPIN.get_or_init(|| {
        std::env::var("DAT_WAIT_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(DEFAULT_SPIN, |us| Duration::from_micros(us.min(1_000_000)))
    })
}

mod notify;
pub use notify::Notifier;

/// What the notifier protocol is built from (`notify.rs` is also compiled
/// against loom's versions of these by the loom model test).
mod sync {
    pub(super) use std::sync::atomic::{fence, AtomicUsize, Ordering};
    pub(super) use std::sync::{Arc, Mutex};
}

/// A thread's parker: an eventfd it sleeps on, written by wakers.
pub(crate) struct Parker {
    fd: EventFd,
}

impl Parker {
    pub(crate) fn unpark(&self) {
        // A full counter (EAGAIN) already means "woken".
        let _ = self.fd.write(1);
    }

    fn drain(&self) {
        let _ = self.fd.read();
    }
}

thread_local! {
    static PARKER: Option<Arc<Parker>> =
        EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .ok()
            .map(|fd| Arc::new(Parker { fd }));
}

/// Blocks every asynchronous signal of the thread until dropped. Signals
/// that report a fault of the thread itself are left alone.
struct SignalsHeld {
    saved: SigSet,
}

impl SignalsHeld {
    fn new() -> Option<SignalsHeld> {
        let mut block = SigSet::all();
        for s in [
            Signal::SIGSEGV,
            Signal::SIGBUS,
            Signal::SIGILL,
            Signal::SIGFPE,
            Signal::SIGTRAP,
            Signal::SIGSYS,
        ] {
            block.remove(s);
        }
        let mut saved = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&block), Some(&mut saved)).ok()?;
        Some(SignalsHeld { saved })
    }
}

impl Drop for SignalsHeld {
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.saved), None);
    }
}

/// What a wait may sleep on besides its notifier.
#[derive(Clone, Copy, Default)]
pub struct Sleep<'a> {
    /// Deadline; `None` waits for ever.
    pub deadline: Option<Instant>,
    /// One more descriptor whose readability ends a sleep (a transport's).
    pub fd: Option<BorrowedFd<'a>>,
}

/// Waits until `poll` returns `Some`, the deadline passes, or a signal
/// handler runs. See the module documentation.
pub fn wait<R>(
    n: &Notifier,
    sleep: Sleep<'_>,
    mut poll: impl FnMut() -> Option<R>,
) -> Result<R, Wake> {
    if let Some(r) = poll() {
        return Ok(r);
    }
    let expired = |now: Instant| sleep.deadline.is_some_and(|d| now >= d);
    let start = Instant::now();
    if expired(start) {
        return Err(Wake::TimedOut);
    }
    let held = SignalsHeld::new();
    // Spin, polling, for the budget but never past the deadline.
    let spin_end = start + spin_budget();
    let spin_end = sleep.deadline.map_or(spin_end, |d| d.min(spin_end));
    let mut round = 0u32;
    loop {
        if let Some(r) = poll() {
            return Ok(r);
        }
        round = round.wrapping_add(1);
        if round % 8 == 0 {
            let now = Instant::now();
            if now >= spin_end {
                if expired(now) {
                    return poll().ok_or(Wake::TimedOut);
                }
                break;
            }
        }
        std::hint::spin_loop();
    }
    let parker = PARKER.with(|p| p.clone());
    if let Some(p) = &parker {
        n.register(p);
    }
    let out = loop {
        if let Some(r) = poll() {
            break Ok(r);
        }
        let now = Instant::now();
        if expired(now) {
            break Err(Wake::TimedOut);
        }
        // Without a parker (no descriptor left), sleep in short slices.
        let slice = if parker.is_some() {
            None
        } else {
            Some(Duration::from_micros(200))
        };
        let left = sleep.deadline.map(|d| d - now);
        let timeout = match (left, slice) {
            (Some(l), Some(s)) => Some(l.min(s)),
            (l, s) => l.or(s),
        };
        match park(parker.as_deref(), sleep.fd, timeout, held.as_ref()) {
            Park::Interrupted => break Err(Wake::Interrupted),
            Park::Other => {}
        }
    };
    if let Some(p) = &parker {
        n.unregister(p);
    }
    out
}

enum Park {
    Interrupted,
    Other,
}

fn park(
    parker: Option<&Parker>,
    extra: Option<BorrowedFd<'_>>,
    timeout: Option<Duration>,
    held: Option<&SignalsHeld>,
) -> Park {
    let ts = timeout.map(TimeSpec::from_duration);
    let mask = held.map(|h| h.saved);
    let own = parker.map(|p| PollFd::new(p.fd.as_fd(), PollFlags::POLLIN));
    let other = extra.map(|fd| PollFd::new(fd, PollFlags::POLLIN));
    let (r, woken) = match (own, other) {
        (Some(a), Some(b)) => {
            let mut fds = [a, b];
            let r = ppoll(&mut fds, ts, mask);
            (r, readable(&fds[0]))
        }
        (Some(a), None) => {
            let mut fds = [a];
            let r = ppoll(&mut fds, ts, mask);
            (r, readable(&fds[0]))
        }
        (None, Some(b)) => (ppoll(&mut [b], ts, mask), false),
        (None, None) => (ppoll(&mut [], ts, mask), false),
    };
    if woken {
        if let Some(p) = parker {
            p.drain();
        }
    }
    match r {
        Err(nix::errno::Errno::EINTR) => Park::Interrupted,
        _ => Park::Other,
    }
}

fn readable(fd: &PollFd<'_>) -> bool {
    fd.revents().is_some_and(|r| r.contains(PollFlags::POLLIN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn ready_condition_returns_at_once() {
        let n = Notifier::new();
        assert_eq!(wait(&n, Sleep::default(), || Some(5)), Ok(5));
    }

    #[test]
    fn timeout_is_not_early() {
        let n = Notifier::new();
        for us in [1u64, 3, 50, 2000] {
            let t0 = Instant::now();
            let d = t0 + Duration::from_micros(us);
            let r: Result<(), Wake> = wait(
                &n,
                Sleep {
                    deadline: Some(d),
                    fd: None,
                },
                || None,
            );
            assert_eq!(r, Err(Wake::TimedOut));
            assert!(Instant::now() >= d);
        }
    }

    #[test]
    fn notify_wakes_a_sleeper() {
        let n = Arc::new(Notifier::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (n2, f2) = (n.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            wait(&n2, Sleep::default(), || {
                f2.load(Ordering::SeqCst).then_some(())
            })
        });
        std::thread::sleep(Duration::from_millis(20));
        flag.store(true, Ordering::SeqCst);
        n.notify();
        assert_eq!(t.join().ok(), Some(Ok(())));
        assert_eq!(n.sleepers(), 0);
    }

    #[test]
    fn no_lost_wakeups_under_races() {
        let n = Arc::new(Notifier::new());
        for _ in 0..300 {
            let flag = Arc::new(AtomicBool::new(false));
            let (n2, f2) = (n.clone(), flag.clone());
            let t = std::thread::spawn(move || {
                wait(&n2, Sleep::default(), || {
                    f2.load(Ordering::SeqCst).then_some(())
                })
            });
            flag.store(true, Ordering::SeqCst);
            n.notify();
            assert_eq!(t.join().ok(), Some(Ok(())));
        }
    }
}
