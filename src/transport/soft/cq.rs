//! The software completion queue: a ring allocated at creation, one-shot
//! notification, and the list of engines that feed it.
//!
//! Invariants: [`CompletionQueue::poll`] first runs every feeder's engine
//! once, so the polling thread produces the completions it waits for; the
//! ring's mutex is never held while an engine runs; pushing and polling
//! never allocate (a push into a full ring is an overrun); a notification
//! is consumed only by the thread that sleeps on the queue. Notification,
//! wait descriptors and overruns: docs/transport.md.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::eventfd::{EfdFlags, EventFd};

use super::progress::{self, Reg, Run, Source};
use crate::ring::{Fifo, ResizeError};
use crate::sync::lock_anyway;
use crate::transport::api::{CompletionQueue, DeviceError, Wc, WcOp, WcStatus};

/// Something whose engine produces completions for a queue: a queue pair.
pub trait Feeder: Send + Sync {
    /// Runs the engine once without blocking; true if anything happened.
    fn progress(&self) -> bool;
    /// Whether a queue it feeds is driven changed ([`Cq::driven`]): the
    /// feeder looks at its queues again and lets the progress thread watch
    /// it or not.
    fn driven_changed(&self) {}
    /// Sends what it left for a spinning application's next post
    /// (acknowledgements): the queue's check calls it, so that nothing
    /// waits for an application that stopped calling the library.
    fn flush(&self) {}
}

/// A poll that finds nothing within this long of the last one continues a
/// spin.
const SPIN_GAP_NS: u64 = 5_000;
/// Empty polls in a row, each within [`SPIN_GAP_NS`] of the one before,
/// that make a spin: an application waiting for a completion by calling
/// `dat_evd_dequeue` in a loop, not one that drains its queue now and then.
const SPIN_POLLS: u32 = 2;
/// While the queue is in use, how often the progress thread looks whether
/// it is still driven (an application that stops spinning without a
/// completion, the one case a timer covers: its queue pairs wait at most
/// two periods for the progress thread).
const DRIVE_CHECK: Duration = Duration::from_millis(1);

/// Nanoseconds on a process-wide monotonic clock.
fn clock_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

const DISARMED: u8 = 0;
const ARMED_ANY: u8 = 1;
const ARMED_SOLICITED: u8 = 2;

/// Epoll data of the notification eventfd (sockets use their own values).
pub const NOTIFY_TOKEN: u64 = u64::MAX;

struct Ring {
    wcs: Fifo<Wc>,
}

/// Epoll data of the socket epoll inside the wait epoll.
const INPUT_TOKEN: u64 = u64::MAX - 1;

/// A completion queue of the software transports.
pub struct Cq {
    ring: Mutex<Ring>,
    armed: AtomicU8,
    notify: EventFd,
    /// The feeders' sockets.
    input: Epoll,
    /// `input` and `notify`.
    epoll: Epoll,
    feeders: ArcSwap<Vec<Weak<dyn Feeder>>>,
    /// Serialises changes of the feeder list.
    feeders_lock: Mutex<()>,
    /// A feeder stopped with work a poll would do ([`Cq::mark_busy`]);
    /// cleared when a poll starts (its feeders set it again).
    busy: AtomicBool,
    /// Completions in the ring (kept under the ring's lock, read without
    /// it: a poll of an empty queue takes no lock).
    queued: AtomicU32,
    /// An application thread drives the feeders: it spins on the queue or
    /// sleeps on its descriptors ([`Cq::driven`]).
    driving: AtomicBool,
    /// Polls so far, and as the last drive check saw them.
    polls: AtomicU64,
    checked_polls: AtomicU64,
    /// The current run of quick empty polls, and when the last one was.
    streak: AtomicU32,
    last_empty: AtomicU64,
    /// Threads sleeping on the queue's descriptors.
    sleepers: AtomicU32,
    /// The drive check's timer (made the first time the queue is driven).
    check: Mutex<Option<Reg>>,
    me: Weak<Cq>,
    /// Run when an armed notification fires ([`CompletionQueue::on_notify`]).
    hook: Mutex<Option<NotifyHook>>,
    /// A notification fired and the hook has yet to run ([`Cq::run_hook`]).
    hook_due: AtomicBool,
}

/// What a completion queue runs when an armed notification fires.
pub type NotifyHook = Arc<dyn Fn() + Send + Sync>;

fn ring_of(depth: u32) -> Result<Fifo<Wc>, DeviceError> {
    Fifo::new(depth as usize, Wc::BLANK).map_err(|_| DeviceError::Resources)
}

impl Cq {
    /// A queue of `depth` completions.
    pub fn new(depth: u32) -> Result<Arc<Cq>, DeviceError> {
        if depth == 0 {
            return Err(DeviceError::Invalid);
        }
        let notify =
            EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
                .map_err(|_| DeviceError::Resources)?;
        let input =
            Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(|_| DeviceError::Resources)?;
        let epoll =
            Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(|_| DeviceError::Resources)?;
        epoll
            .add(
                notify.as_fd(),
                EpollEvent::new(EpollFlags::EPOLLIN, NOTIFY_TOKEN),
            )
            .map_err(|_| DeviceError::Resources)?;
        epoll
            .add(
                input.0.as_fd(),
                EpollEvent::new(EpollFlags::EPOLLIN, INPUT_TOKEN),
            )
            .map_err(|_| DeviceError::Resources)?;
        let wcs = ring_of(depth)?;
        Ok(Arc::new_cyclic(|me| Cq {
            ring: Mutex::new(Ring { wcs }),
            armed: AtomicU8::new(DISARMED),
            notify,
            input,
            epoll,
            feeders: ArcSwap::from_pointee(Vec::new()),
            feeders_lock: Mutex::new(()),
            busy: AtomicBool::new(false),
            queued: AtomicU32::new(0),
            hook: Mutex::new(None),
            hook_due: AtomicBool::new(false),
            driving: AtomicBool::new(false),
            polls: AtomicU64::new(0),
            checked_polls: AtomicU64::new(0),
            streak: AtomicU32::new(0),
            last_empty: AtomicU64::new(0),
            sleepers: AtomicU32::new(0),
            check: Mutex::new(None),
            me: me.clone(),
        }))
    }

    /// True while an application thread drives the queue pairs feeding
    /// this queue: it spins on the queue (a run of quick empty polls) or
    /// sleeps on its descriptors. They need not be watched by the progress
    /// thread meanwhile: that thread would only be woken to find the work
    /// done (on a busy 2-core machine, each such wake-up preempts one of
    /// the spinning threads). It ends when a poll brings completions (what
    /// the spinner waited for came: it may go and poll its memory or
    /// compute now) unless a thread sleeps on the queue, or when the
    /// progress thread's check finds the queue neither polled since the
    /// last check nor slept on ([`DRIVE_CHECK`]: a spinner that gave up).
    pub fn driven(&self) -> bool {
        self.driving.load(Ordering::Relaxed)
    }

    /// Driven by a spinning thread (none sleeps on it): it will step the
    /// queue pairs again in a moment.
    pub fn spun(&self) -> bool {
        self.driving.load(Ordering::Relaxed) && self.sleepers.load(Ordering::Relaxed) == 0
    }

    fn start_driving(&self) {
        if self.driving.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::trace!("completion queue driven by the application");
        self.checked_polls
            .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
        self.for_feeders(|f| f.driven_changed());
        let mut c = lock_anyway(&self.check);
        if c.is_none() {
            let src: Weak<dyn Source> = self.me.clone();
            *c = progress::register_timer(src).ok();
        }
        match c.as_ref() {
            Some(r) => r.schedule(Instant::now() + DRIVE_CHECK),
            None => {
                // No progress thread to end it: do not start.
                drop(c);
                self.stop_driving();
            }
        }
    }

    fn stop_driving(&self) {
        if self.driving.swap(false, Ordering::SeqCst) {
            tracing::trace!("completion queue left to the progress thread");
            self.streak.store(0, Ordering::Relaxed);
            self.for_feeders(|f| f.driven_changed());
        }
    }

    fn for_feeders(&self, mut f: impl FnMut(&dyn Feeder)) {
        for w in self.feeders.load().iter() {
            if let Some(x) = w.upgrade() {
                f(&*x);
            }
        }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        lock_anyway(&self.ring)
    }

    /// Queues a completion. False if the ring is full (an overrun: the
    /// completion is lost and the device must report it). A notification
    /// it fires wakes sleepers at once; the hook runs when the producer
    /// calls [`Cq::run_hook`], with its own locks let go.
    pub fn push(&self, wc: Wc) -> bool {
        {
            let mut r = self.ring();
            // Room was reserved for `depth` completions.
            if !r.wcs.push_back(wc) {
                return false;
            }
            self.queued.store(r.wcs.len() as u32, Ordering::Release);
        }
        let want = match self.armed.load(Ordering::Acquire) {
            DISARMED => return true,
            ARMED_ANY => true,
            _ => (wc.op == WcOp::Recv && wc.solicited) || !matches!(wc.status, WcStatus::Success),
        };
        if want && self.armed.swap(DISARMED, Ordering::AcqRel) != DISARMED {
            // A full counter already means "notified".
            let _ = self.notify.write(1);
            self.hook_due.store(true, Ordering::Release);
        }
        true
    }

    /// Runs the hook if a notification fired since it last ran: called by
    /// whoever pushed, once it holds no lock (the hook reaches the DAT
    /// layer, and a CNO's agent is the application's code).
    pub fn run_hook(&self) {
        if !self.hook_due.load(Ordering::Acquire) || !self.hook_due.swap(false, Ordering::AcqRel) {
            return;
        }
        let hook = lock_anyway(&self.hook).clone();
        if let Some(h) = hook {
            h();
        }
    }

    /// Adds a queue pair's engine to those `poll` runs.
    pub fn attach(&self, f: &Arc<dyn Feeder>) {
        let _g = lock_anyway(&self.feeders_lock);
        let mut v: Vec<Weak<dyn Feeder>> = self
            .feeders
            .load()
            .iter()
            .filter(|w| w.strong_count() > 0)
            .cloned()
            .collect();
        v.push(Arc::downgrade(f));
        self.feeders.store(Arc::new(v));
    }

    /// Removes a queue pair's engine (and any that no longer exist).
    pub fn detach(&self, f: &Arc<dyn Feeder>) {
        let _g = lock_anyway(&self.feeders_lock);
        let target = Arc::downgrade(f);
        let v: Vec<Weak<dyn Feeder>> = self
            .feeders
            .load()
            .iter()
            .filter(|w| w.strong_count() > 0 && !Weak::ptr_eq(w, &target))
            .cloned()
            .collect();
        self.feeders.store(Arc::new(v));
    }

    /// Makes a feeder's socket wake threads sleeping on the queue's
    /// descriptors (`token` is returned by epoll).
    pub fn watch(&self, fd: BorrowedFd<'_>, token: u64) -> Result<(), DeviceError> {
        self.input
            .add(fd, EpollEvent::new(EpollFlags::EPOLLIN, token))
            .map_err(|_| DeviceError::Resources)
    }

    /// Makes the watched socket wake sleepers on writability too (`true`:
    /// its queue pair has bytes waiting for socket space, which a sleeping
    /// poster then pushes itself) or on input only (`false`).
    pub fn watch_output(&self, fd: BorrowedFd<'_>, token: u64, on: bool) {
        let flags = if on {
            EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT
        } else {
            EpollFlags::EPOLLIN
        };
        let mut ev = EpollEvent::new(flags, token);
        let _ = self.input.modify(fd, &mut ev);
    }

    /// Stops watching a socket.
    pub fn unwatch(&self, fd: BorrowedFd<'_>) {
        let _ = self.input.delete(fd);
    }

    /// A poll found nothing: part of a spin if it came quickly after the
    /// last one.
    fn empty_poll(&self) {
        let now = clock_ns();
        let prev = self.last_empty.swap(now, Ordering::Relaxed);
        let s = if now.wrapping_sub(prev) < SPIN_GAP_NS {
            self.streak.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.streak.store(1, Ordering::Relaxed);
            1
        };
        if s >= SPIN_POLLS && !self.driving.load(Ordering::Relaxed) {
            self.start_driving();
        }
    }

    /// A feeder's engine stopped with data to move (output waiting or cut
    /// at a budget, input cut at a budget): see [`CompletionQueue::busy`].
    pub fn mark_busy(&self) {
        if !self.busy.load(Ordering::Relaxed) {
            self.busy.store(true, Ordering::Relaxed);
        }
    }

    /// Completions queued now.
    pub fn len(&self) -> usize {
        self.ring().wcs.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl CompletionQueue for Cq {
    fn progress(&self) {
        self.polls.fetch_add(1, Ordering::Relaxed);
        if self.busy.load(Ordering::Relaxed) {
            self.busy.store(false, Ordering::Relaxed);
        }
        for f in self.feeders.load().iter() {
            if let Some(f) = f.upgrade() {
                f.progress();
            }
        }
    }

    fn take(&self, out: &mut [Wc]) -> usize {
        if self.queued.load(Ordering::Acquire) == 0 || out.is_empty() {
            return 0;
        }
        let mut r = self.ring();
        let mut n = 0;
        for slot in out.iter_mut() {
            let Some(wc) = r.wcs.pop_front() else {
                break;
            };
            *slot = wc;
            n += 1;
        }
        self.queued.store(r.wcs.len() as u32, Ordering::Release);
        n
    }

    fn polled(&self, got: usize) {
        if got == 0 {
            self.empty_poll();
        } else {
            self.streak.store(0, Ordering::Relaxed);
            // What the spinner waited for came: it may now go and do
            // something else (poll its memory, compute). A thread sleeping
            // on the queue still drives it.
            if self.driving.load(Ordering::Relaxed) && self.sleepers.load(Ordering::SeqCst) == 0 {
                self.stop_driving();
            }
        }
    }

    /// Arms; a notification that fired earlier stays readable.
    fn arm(&self, solicited_only: bool) {
        let mode = if solicited_only {
            ARMED_SOLICITED
        } else {
            ARMED_ANY
        };
        self.armed.store(mode, Ordering::Release);
    }

    fn has_completions(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }

    fn sleeping(&self, on: bool) {
        if on {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            self.start_driving();
        } else if self.sleepers.fetch_sub(1, Ordering::SeqCst) == 1 && self.driven() {
            // The check does not run while threads sleep here (an idle
            // waiter costs nothing): it starts again now.
            if let Some(r) = lock_anyway(&self.check).as_ref() {
                r.schedule(Instant::now() + DRIVE_CHECK);
            }
        }
    }

    fn clear_notification(&self) {
        let _ = self.notify.read();
    }

    fn wait_fd(&self) -> BorrowedFd<'_> {
        self.epoll.0.as_fd()
    }

    fn input_fd(&self) -> BorrowedFd<'_> {
        self.input.0.as_fd()
    }

    fn on_notify(&self, hook: Option<NotifyHook>) {
        *lock_anyway(&self.hook) = hook;
    }

    fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    fn depth(&self) -> u32 {
        u32::try_from(self.ring().wcs.depth()).unwrap_or(u32::MAX)
    }

    fn resize(&self, depth: u32) -> Result<(), DeviceError> {
        if depth == 0 {
            return Err(DeviceError::Invalid);
        }
        self.ring().wcs.resize(depth as usize).map_err(|e| match e {
            ResizeError::TooSmall => DeviceError::Invalid,
            ResizeError::Memory => DeviceError::Resources,
        })
    }
}

impl Source for Cq {
    /// The drive check: still polled or slept on since the last one, or
    /// left to the progress thread from now on.
    ///
    /// It keeps running while the queue is polled at all, driven or not
    /// (a ping-pong drives and lets go once per message: starting the
    /// check anew each time would wake the thread to set its timer), and
    /// lapses once a whole period passed without a poll.
    fn run(&self) -> Run {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // The last sleeper to leave starts the check again.
            return Run::default();
        }
        let polls = self.polls.load(Ordering::Relaxed);
        let seen = self.checked_polls.swap(polls, Ordering::Relaxed);
        let again = polls != seen;
        if !again {
            self.stop_driving();
        }
        // After that: a step that sees the queue no longer driven leaves
        // nothing, and one that left something before is done (its lock).
        self.for_feeders(|f| f.flush());
        Run {
            at: again.then(|| Instant::now() + DRIVE_CHECK),
        }
    }
}

#[cfg(test)]
mod tests;
