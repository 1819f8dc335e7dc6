//! Blocking waits: a bounded spin, then a sleep that ends on a wake-up, the
//! deadline or a signal (docs/hot-path.md, "Waits").
//!
//! A blocking call takes a [`Held`] as its very first act, before it looks
//! up its object or takes any lock, so a signal that arrives during the call
//! stays pending and ends the sleep instead of being lost. [`wait`] polls,
//! spins for the budget (`DAT_WAIT_SPIN_US`) never past the deadline, then
//! registers with the object's [`Notifier`], polls once more and sleeps in
//! `ppoll(2)` with the thread's original mask. Wakers change the condition
//! under the object's lock, release it, then call [`Notifier::notify`].
//! Lock order: the notifier's list lock is a leaf.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

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
        #[cfg(test)]
        tests::UNPARKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        // A full counter (EAGAIN) already means "woken".
        let _ = self.fd.write(1);
    }

    fn drain(&self) {
        let _ = self.fd.read();
    }
}

/// What a thread sleeps on: its parker, and a timer for its deadlines.
/// A timerfd expires on time, where a `ppoll` timeout would be stretched by
/// the thread's timer slack (50 µs by default).
struct Sleeper {
    parker: Arc<Parker>,
    timer: TimerFd,
    /// The fork generation it was made in.
    gen: u32,
}

impl Sleeper {
    fn new() -> Option<Sleeper> {
        let fd =
            EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK).ok();
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )
        .ok();
        fd.zip(timer).map(|(fd, timer)| Sleeper {
            parker: Arc::new(Parker { fd }),
            timer,
            gen: crate::sys::fork_generation(),
        })
    }
}

thread_local! {
    /// The thread's sleeper. A child of fork() gets the forking thread's
    /// copy, whose eventfd and timerfd the parent's thread still uses: a
    /// wait in the child would drain the parent's wake-ups and re-arm the
    /// parent's deadline (parent waits that ended only at their timeouts,
    /// or never). So a sleeper made before a fork is replaced in the child.
    static SLEEPER: std::cell::RefCell<Option<std::rc::Rc<Sleeper>>> =
        const { std::cell::RefCell::new(None) };
}

/// This thread's sleeper (made on first use, and again after a fork).
fn sleeper() -> Option<std::rc::Rc<Sleeper>> {
    SLEEPER.with(|cell| {
        let mut s = cell.borrow_mut();
        if s.as_ref().is_none_or(|x| crate::sys::inherited(x.gen)) {
            *s = Sleeper::new().map(std::rc::Rc::new);
        }
        s.clone()
    })
}

/// The thread's asynchronous signals, blocked from [`Held::signals`] until
/// the value is dropped (the thread's own mask is then restored, and a signal
/// that arrived meanwhile runs its handler). Signals that report a fault of
/// the thread itself are left alone.
///
/// A blocking call creates it first, before anything that can take time:
/// see the module documentation. [`wait`] sleeps with the saved mask
/// installed, so a signal held from here on ends the sleep.
#[must_use = "the signals are held only while the value lives"]
pub struct Held {
    /// The thread's own mask; `None` if nothing is held.
    saved: Option<SigSet>,
}

impl Held {
    /// Blocks every asynchronous signal of the thread. If the mask cannot be
    /// changed, nothing is held and a wait sleeps with the thread's mask.
    pub fn signals() -> Held {
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
        let saved = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&block), Some(&mut saved))
            .ok()
            .map(|()| saved);
        Held { saved }
    }

    /// Holds nothing: for a call that cannot sleep (a zero timeout), which
    /// then makes no system call. Should its [`wait`] need to sleep after
    /// all, the wait holds the signals itself from that point.
    pub fn nothing() -> Held {
        Held { saved: None }
    }

    /// [`Held::signals`] if `hold`, else [`Held::nothing`].
    pub fn signals_if(hold: bool) -> Held {
        if hold {
            Held::signals()
        } else {
            Held::nothing()
        }
    }

    /// True if signals are held.
    pub fn holds(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(saved), None);
        }
    }
}

/// What a wait may sleep on besides its notifier.
#[derive(Clone, Copy, Default)]
pub struct Sleep<'a> {
    /// Deadline; `None` waits for ever.
    pub deadline: Option<Instant>,
    /// One more descriptor whose readability ends a sleep (a transport's).
    pub fd: Option<BorrowedFd<'a>>,
    /// Runs once when the spin is over and the thread is about to sleep
    /// (a transport hands what the thread was driving to its own thread).
    pub before: Option<&'a dyn Fn()>,
}

/// Waits until `poll` returns `Some`, the deadline passes, or a signal
/// handler runs. `held` is the caller's [`Held`], taken at the start of its
/// call: a signal that arrived since then ends the wait. See the module
/// documentation.
pub fn wait<R>(
    n: &Notifier,
    sleep: Sleep<'_>,
    held: &Held,
    mut poll: impl FnMut() -> Option<R>,
) -> Result<R, Wake> {
    wait_phased(n, sleep, held, |_| poll())
}

/// [`wait`], telling the closure whether a sleep follows if it returns
/// `None` (`true` for the polls made after the parker is registered, just
/// before each sleep): a transport need only arm its notification then.
pub fn wait_phased<R>(
    n: &Notifier,
    sleep: Sleep<'_>,
    held: &Held,
    mut poll: impl FnMut(bool) -> Option<R>,
) -> Result<R, Wake> {
    if let Some(r) = poll(false) {
        return Ok(r);
    }
    let expired = |now: Instant| sleep.deadline.is_some_and(|d| now >= d);
    let start = Instant::now();
    if expired(start) {
        return Err(Wake::TimedOut);
    }
    // A caller that held nothing (it expected not to sleep) is held from here.
    let own;
    let held = if held.holds() {
        held
    } else {
        own = Held::signals();
        &own
    };
    // Spin, polling, for the budget but never past the deadline.
    let spin_end = start + spin_budget();
    let spin_end = sleep.deadline.map_or(spin_end, |d| d.min(spin_end));
    let mut round = 0u32;
    loop {
        if let Some(r) = poll(false) {
            return Ok(r);
        }
        round = round.wrapping_add(1);
        if round % 8 == 0 {
            let now = Instant::now();
            if now >= spin_end {
                if expired(now) {
                    return poll(false).ok_or(Wake::TimedOut);
                }
                break;
            }
        }
        std::hint::spin_loop();
    }
    let sleeper = sleeper();
    {
        if let Some(s) = &sleeper {
            n.register(&s.parker);
        }
        if let Some(f) = sleep.before {
            f();
        }
        let out = loop {
            if let Some(r) = poll(true) {
                break Ok(r);
            }
            let now = Instant::now();
            if expired(now) {
                break Err(Wake::TimedOut);
            }
            let left = sleep.deadline.map(|d| d - now);
            match park(sleeper.as_deref(), sleep.fd, left, held) {
                SleepEnd::Interrupted => break Err(Wake::Interrupted),
                SleepEnd::Other => {}
            }
        };
        if let Some(s) = &sleeper {
            n.unregister(&s.parker);
            if sleep.deadline.is_some() {
                // A later wait without a deadline must not see it expire.
                let _ = s.timer.unset();
            }
        }
        out
    }
}

/// How one sleep ([`park`]) ended.
enum SleepEnd {
    Interrupted,
    Other,
}

/// One sleep: until the parker or `extra` is readable, `left` has passed,
/// or a signal arrives (the thread's own mask is installed atomically).
fn park(
    sleeper: Option<&Sleeper>,
    extra: Option<BorrowedFd<'_>>,
    left: Option<Duration>,
    held: &Held,
) -> SleepEnd {
    let mask = held.saved;
    let Some(s) = sleeper else {
        // No descriptors could be had: sleep in short slices.
        let slice = Duration::from_micros(200);
        let ts = TimeSpec::from_duration(left.map_or(slice, |l| l.min(slice)));
        return match ppoll(&mut [], Some(ts), mask) {
            Err(nix::errno::Errno::EINTR) => SleepEnd::Interrupted,
            _ => SleepEnd::Other,
        };
    };
    if let Some(l) = left {
        // Re-arming also clears an earlier expiry.
        let due = Expiration::OneShot(TimeSpec::from_duration(l.max(Duration::from_nanos(1))));
        let _ = s.timer.set(due, TimerSetTimeFlags::empty());
    }
    let own = s.parker.fd.as_fd();
    // Without a deadline the timer is disarmed and never becomes readable;
    // without an extra descriptor the parker is listed twice.
    let mut fds = [
        PollFd::new(own, PollFlags::POLLIN),
        PollFd::new(s.timer.as_fd(), PollFlags::POLLIN),
        PollFd::new(extra.unwrap_or(own), PollFlags::POLLIN),
    ];
    let r = ppoll(&mut fds, None, mask);
    if readable(&fds[0]) {
        s.parker.drain();
    }
    match r {
        Err(nix::errno::Errno::EINTR) => SleepEnd::Interrupted,
        _ => SleepEnd::Other,
    }
}

fn readable(fd: &PollFd<'_>) -> bool {
    fd.revents().is_some_and(|r| r.contains(PollFlags::POLLIN))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// Eventfd writes made by wakers (all tests of this module).
    pub(super) static UNPARKS: AtomicU64 = AtomicU64::new(0);

    #[test]
    fn notify_without_a_sleeper_makes_no_system_call() {
        let n = Notifier::new();
        let before = UNPARKS.load(Ordering::SeqCst);
        for _ in 0..1000 {
            n.notify();
        }
        // Other tests may wake their own sleepers meanwhile, but not 1000 times.
        assert!(UNPARKS.load(Ordering::SeqCst) - before < 100);
        let flag = Arc::new(AtomicBool::new(false));
        let n = Arc::new(n);
        let (n2, f2) = (n.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            wait(&n2, Sleep::default(), &Held::signals(), || {
                f2.load(Ordering::SeqCst).then_some(())
            })
        });
        while n.sleepers() == 0 {
            std::thread::yield_now();
        }
        let before = UNPARKS.load(Ordering::SeqCst);
        flag.store(true, Ordering::SeqCst);
        n.notify();
        assert!(
            UNPARKS.load(Ordering::SeqCst) > before,
            "a sleeper is woken"
        );
        assert_eq!(t.join().ok(), Some(Ok(())));
    }

    #[test]
    fn ready_condition_returns_at_once() {
        let n = Notifier::new();
        assert_eq!(
            wait(&n, Sleep::default(), &Held::nothing(), || Some(5)),
            Ok(5)
        );
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
                    before: None,
                },
                &Held::signals(),
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
            wait(&n2, Sleep::default(), &Held::signals(), || {
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
                wait(&n2, Sleep::default(), &Held::signals(), || {
                    f2.load(Ordering::SeqCst).then_some(())
                })
            });
            flag.store(true, Ordering::SeqCst);
            n.notify();
            assert_eq!(t.join().ok(), Some(Ok(())));
        }
    }

    thread_local! {
        /// Handler runs of [`TEST_SIGNAL`] on this thread (tests run side by
        /// side, each signalling only its own thread).
        static HANDLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// The signal the signal tests send to their own thread (no other test
    /// of the crate uses it).
    pub(crate) const TEST_SIGNAL: Signal = Signal::SIGUSR2;

    extern "C" fn count_signal(_: libc::c_int) {
        // A const-initialised thread local without destructor: a plain
        // access to the thread's static TLS block, safe in a handler.
        HANDLED.with(|h| h.set(h.get() + 1));
    }

    /// Installs a counting handler for [`TEST_SIGNAL`] without `SA_RESTART`
    /// (once per process) and returns its runs on this thread so far.
    pub(crate) fn handled() -> u64 {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler};
        static INSTALL: std::sync::Once = std::sync::Once::new();
        INSTALL.call_once(|| {
            let sa = SigAction::new(
                SigHandler::Handler(count_signal),
                SaFlags::empty(),
                SigSet::empty(),
            );
            // SAFETY: the handler only increments an atomic counter.
            #[allow(unsafe_code)]
            let r = unsafe { sigaction(TEST_SIGNAL, &sa) };
            r.expect("sigaction");
        });
        HANDLED.with(std::cell::Cell::get)
    }

    /// Sends [`TEST_SIGNAL`] to the calling thread (`raise` targets the
    /// calling thread, not the process).
    pub(crate) fn signal_self() {
        nix::sys::signal::raise(TEST_SIGNAL).expect("raise");
    }

    fn five_seconds() -> Sleep<'static> {
        Sleep {
            deadline: Some(Instant::now() + Duration::from_secs(5)),
            fd: None,
            before: None,
        }
    }

    /// A signal that arrives after the call took its [`Held`], while it
    /// still looks up its object, waits until the wait can report it.
    #[test]
    fn a_signal_before_the_wait_starts_is_reported() {
        let n = Notifier::new();
        let before = handled();
        let held = Held::signals();
        assert!(held.holds());
        signal_self();
        assert_eq!(handled(), before, "held: the handler has not run yet");
        let t0 = Instant::now();
        assert_eq!(
            wait(&n, five_seconds(), &held, || None::<()>),
            Err(Wake::Interrupted)
        );
        assert!(t0.elapsed() < Duration::from_secs(4));
        assert_eq!(handled(), before + 1);
        drop(held);
        assert_eq!(handled(), before + 1, "run once, in the sleep");
    }

    /// A signal that arrives while the first poll runs (the object's own
    /// work: locks, queue checks) ends the wait. Before signals were held
    /// from the start of the call, its handler ran during that poll and
    /// the wait slept to its deadline.
    #[test]
    fn a_signal_during_the_first_poll_is_reported() {
        let n = Notifier::new();
        let before = handled();
        let held = Held::signals();
        let mut first = true;
        let r = wait(&n, five_seconds(), &held, || {
            if std::mem::take(&mut first) {
                signal_self();
            }
            None::<()>
        });
        assert_eq!(r, Err(Wake::Interrupted));
        assert_eq!(handled(), before + 1);
    }

    /// Why a call holds the signals before anything else: a handler that
    /// ran before the hold (here, during the first poll of a call that held
    /// nothing) leaves no trace, and the wait then sleeps to its deadline.
    #[test]
    fn a_handler_run_before_the_hold_is_not_seen() {
        let n = Notifier::new();
        let before = handled();
        let mut first = true;
        let r = wait(
            &n,
            Sleep {
                deadline: Some(Instant::now() + Duration::from_millis(30)),
                fd: None,
                before: None,
            },
            &Held::nothing(),
            || {
                if std::mem::take(&mut first) {
                    signal_self();
                }
                None::<()>
            },
        );
        assert_eq!(handled(), before + 1);
        assert_eq!(r, Err(Wake::TimedOut));
    }

    /// A call that held nothing (it expected not to sleep) still cannot
    /// lose a signal once its wait decides to sleep.
    #[test]
    fn a_wait_without_a_hold_holds_before_it_sleeps() {
        let n = Notifier::new();
        let before = handled();
        let nothing = Held::nothing();
        assert!(!nothing.holds());
        let mut polls = 0;
        let r = wait(&n, five_seconds(), &nothing, || {
            polls += 1;
            // The second poll runs in the spin, with the signals held.
            if polls == 2 {
                signal_self();
            }
            None::<()>
        });
        assert_eq!(r, Err(Wake::Interrupted));
        assert_eq!(handled(), before + 1);
    }

    /// The thread's own mask comes back when the hold ends, with a signal
    /// that arrived meanwhile delivered then.
    #[test]
    fn the_hold_restores_the_threads_mask() {
        let before = handled();
        let mut own = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut own)).expect("mask");
        {
            let _held = Held::signals();
            let mut now = SigSet::empty();
            pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut now)).expect("mask");
            assert!(now.contains(TEST_SIGNAL));
            assert!(!now.contains(Signal::SIGSEGV), "faults are never blocked");
            signal_self();
            assert_eq!(handled(), before);
        }
        assert_eq!(handled(), before + 1);
        let mut after = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut after)).expect("mask");
        assert_eq!(after, own);
        let nothing = Held::nothing();
        drop(nothing);
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut after)).expect("mask");
        assert_eq!(after, own);
    }
}
