//! The background progress thread: runs the engine of connections nobody
//! else is driving.
//!
//! Application threads drive their own connections (posting writes the
//! socket, polling and waiting read it), so the latency path has no thread
//! hop. This thread steps in for what no application thread is doing:
//! RDMA Reads and Writes that target an idle application, connection
//! requests and MPA exchanges, a send queue that filled the socket while
//! its poster went to sleep, and every timer (connect, accept and RTR
//! deadlines, receiver-not-ready expiry, graceful-close drain).
//!
//! - One thread per process, started when the first [`Source`] is
//!   registered and ended when the last one goes (the last close); it is
//!   detached, so process exit never waits for it. After `fork()` the
//!   child has no such thread and must not use what it inherited: a
//!   registration in the child starts a fresh engine (new epoll instance)
//!   and the parent's is left alone.
//! - Descriptors are watched one-shot and edge-triggered, for input, and
//!   for output only while the source has bytes waiting for socket space
//!   ([`Run::output`]). A source run must consume everything it can (the
//!   engines do: they read and write until `EWOULDBLOCK`) or ask to be run
//!   again at a time; the descriptor is re-armed after the run.
//! - Stepping aside: a source exposes an activity counter (its completion
//!   queues' polls) and whether a thread sleeps on its queues. If the
//!   counter moved since the thread last looked, or someone sleeps there,
//!   an application thread is driving the source: the thread leaves its
//!   descriptor disarmed (so packets for a busy-polled connection never
//!   wake it, which on a small machine would preempt the poller) and looks
//!   again after 1 ms, doubling up to 8 ms while the application stays
//!   active; it takes over once the counter has stood still for 10 ms (a
//!   poller the scheduler keeps off its core for a while has not
//!   stopped). A source nobody polls is run at once. An application
//!   thread about to sleep ([`hand_over`], from the device's `idle`) ends
//!   that grace period at once for every source left for polling: it will
//!   not poll them, so waiting out the 10 ms would only delay them (a
//!   connection's teardown or setup seen by a thread that now sleeps on a
//!   connection EVD, for example).
//! - Priority: the thread runs at the process's normal priority. A lower
//!   one (tried: nice 19) lets busy application threads starve it while it
//!   holds a queue pair's lock, and then their polls spin on that lock; the
//!   stepping aside above is what keeps it off polled connections.
//! - Locks: the engine's own mutex guards the source table and the timer
//!   heap, and is never held while a source runs. Sources may register,
//!   unregister and schedule while holding their own locks (order: source
//!   lock → engine mutex).

#![allow(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::sync::lock_anyway as lock;

/// How long the thread first stays away from a source an application
/// drives, and the longest.
const STEP_ASIDE: Duration = Duration::from_millis(1);
const STEP_ASIDE_MAX: Duration = Duration::from_millis(8);
/// How long after an application last polled a source the thread still
/// counts it as driven (longer than a poller is typically kept off its
/// core by the scheduler).
const ACTIVE: Duration = Duration::from_millis(10);

/// What a source run asks for next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Run again at this time regardless of readiness.
    pub at: Option<Instant>,
    /// Bytes wait for socket space: wake on writability too.
    pub output: bool,
}
/// Epoll data of the control eventfd.
const WAKE: u64 = u64::MAX;

/// Something the progress thread runs: a connection, a listener.
pub trait Source: Send + Sync {
    /// Runs once without blocking (its descriptor is ready or its time has
    /// come).
    fn run(&self) -> Run;
    /// Moves whenever an application thread drives the source (0 for
    /// sources only the thread drives).
    fn activity(&self) -> u64 {
        0
    }
    /// An application thread sleeps on the source's completion queues.
    fn sleeping(&self) -> bool {
        false
    }
    /// A sleeping application thread will drive the source itself (it
    /// wakes on the same readiness): true unless the source has work that
    /// no input will wake it for (output waiting for socket space).
    fn attended(&self) -> bool {
        false
    }
    /// Work left for the application's next step that must not wait past
    /// this time: the thread runs the source then even while it is polled.
    fn due_by(&self) -> Option<Instant> {
        None
    }
}

struct Entry {
    src: Weak<dyn Source>,
    /// The activity count when the thread last looked.
    seen: u64,
    /// The time the source asked for (stale heap entries are skipped).
    due: Option<Instant>,
    fd: RawFd,
    /// How long to stay away next while an application drives it.
    aside: Duration,
    /// Shared with the [`Reg`].
    flags: Arc<Flags>,
    /// When the thread last saw the activity counter move.
    moved_at: Option<Instant>,
    /// Away because an application polled it (counted in
    /// [`Engine::polled_away`]), not because a thread sleeps on it.
    polled: bool,
    /// [`HANDOVER`] at the last look: when it moved since, a thread went
    /// to sleep and the polls seen before do not count.
    epoch: u64,
}

struct Table {
    entries: HashMap<u64, Entry>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    next_token: u64,
    /// Whether a thread serves this engine now.
    running: bool,
}

struct Engine {
    pid: u32,
    epoll: Epoll,
    wake: EventFd,
    table: Mutex<Table>,
}

/// Moves at each [`hand_over`].
static HANDOVER: AtomicU64 = AtomicU64::new(0);

/// Entries of this process's engine away because an application polled
/// them (reset in a forked child, whose engine starts empty).
static POLLED_AWAY: AtomicUsize = AtomicUsize::new(0);

/// Counts fork()s into a child (set by a `pthread_atfork` handler).
static FORK_GEN: AtomicU32 = AtomicU32::new(0);
static ATFORK: std::sync::Once = std::sync::Once::new();

extern "C" fn forked_child() {
    FORK_GEN.fetch_add(1, Ordering::Relaxed);
    POLLED_AWAY.store(0, Ordering::Relaxed);
}

/// The current fork generation: objects remember it at creation, and one
/// created before a fork() is inherited (the parent's) in the child.
/// Installs the fork handler on first use.
pub fn fork_generation() -> u32 {
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only increments an atomic (an
        // async-signal-safe operation, as a child handler requires).
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    FORK_GEN.load(Ordering::Relaxed)
}

/// True in a child for an object created (at generation `gen`) before
/// the fork: it shares sockets and epoll instances with the parent and
/// must not touch them.
pub fn inherited(gen: u32) -> bool {
    FORK_GEN.load(Ordering::Relaxed) != gen
}

/// The engine of this process (a forked child gets a new one).
static ENGINE: Mutex<Option<Arc<Engine>>> = Mutex::new(None);

fn engine() -> std::io::Result<Arc<Engine>> {
    let mut g = lock(&ENGINE);
    let pid = std::process::id();
    if let Some(e) = g.as_ref().filter(|e| e.pid == pid) {
        return Ok(e.clone());
    }
    if let Some(old) = g.take() {
        // Inherited across fork(): its thread lives only in the parent.
        // Keep its descriptors open (the parent's entries name them).
        std::mem::forget(old);
    }
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    let wake = EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?;
    epoll.add(wake.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, WAKE))?;
    let e = Arc::new(Engine {
        pid,
        epoll,
        wake,
        table: Mutex::new(Table {
            entries: HashMap::new(),
            timers: BinaryHeap::new(),
            next_token: 1,
            running: false,
        }),
    });
    *g = Some(e.clone());
    Ok(e)
}

fn interest(output: bool) -> EpollFlags {
    let f = EpollFlags::EPOLLIN
        | EpollFlags::EPOLLRDHUP
        | EpollFlags::EPOLLET
        | EpollFlags::EPOLLONESHOT;
    if output {
        f | EpollFlags::EPOLLOUT
    } else {
        f
    }
}

/// A registration with the progress thread; dropping it unregisters (do so
/// before closing the descriptor).
pub struct Reg {
    engine: Arc<Engine>,
    token: u64,
    fd: RawFd,
    flags: Arc<Flags>,
}

/// What an entry and its [`Reg`] share.
#[derive(Default)]
struct Flags {
    /// Set while the thread stays away (a recheck is scheduled).
    away: AtomicBool,
    /// Output was wanted: the next run arms for writability. Paired with
    /// `away` (both sequentially consistent) so that a want racing the
    /// thread's return is seen by one side.
    want: AtomicBool,
}

/// Watches `fd` (edge-triggered, input and output) and runs `src` when it
/// becomes ready. Starts the thread if needed.
pub fn register(fd: BorrowedFd<'_>, src: Weak<dyn Source>) -> std::io::Result<Reg> {
    let engine = engine()?;
    let seen = src.upgrade().map_or(0, |s| s.activity());
    let flags = Arc::new(Flags::default());
    let (token, start) = {
        let mut t = lock(&engine.table);
        let token = t.next_token;
        t.next_token += 1;
        engine
            .epoll
            .add(fd, EpollEvent::new(interest(true), token))?;
        t.entries.insert(
            token,
            Entry {
                src,
                seen,
                due: None,
                fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
                aside: STEP_ASIDE,
                flags: flags.clone(),
                moved_at: None,
                polled: false,
                epoch: HANDOVER.load(Ordering::SeqCst),
            },
        );
        let start = !t.running;
        t.running = true;
        tracing::trace!(
            token,
            fd = std::os::fd::AsRawFd::as_raw_fd(&fd),
            "progress: registered"
        );
        (token, start)
    };
    if start {
        let e = engine.clone();
        let spawned = std::thread::Builder::new()
            .name("udapl-progress".into())
            .spawn(move || serve(e));
        if let Err(err) = spawned {
            let mut t = lock(&engine.table);
            t.running = false;
            if let Some(ent) = t.entries.remove(&token) {
                // SAFETY: `ent.fd` is the caller's live descriptor
                // (borrowed for this call).
                let fd = unsafe { BorrowedFd::borrow_raw(ent.fd) };
                let _ = engine.epoll.delete(fd);
            }
            return Err(err);
        }
    }
    Ok(Reg {
        engine,
        token,
        fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
        flags,
    })
}

impl Reg {
    /// Runs the source at `at` (or earlier, if its descriptor gets ready).
    pub fn schedule(&self, at: Instant) {
        let mut t = lock(&self.engine.table);
        let Some(e) = t.entries.get_mut(&self.token) else {
            return;
        };
        if e.due.is_some_and(|d| d <= at) {
            return;
        }
        e.due = Some(at);
        let first = t.timers.peek().is_none_or(|Reverse((d, _))| at < *d);
        t.timers.push(Reverse((at, self.token)));
        drop(t);
        if first {
            let _ = self.engine.wake.write(1);
        }
    }
}

impl Reg {
    /// Output waits for socket space: wake the thread when the socket
    /// becomes writable. No user-space lock (the owner calls it when its
    /// output first blocks). No system call while the thread stays away
    /// from an application-driven source: it arms for the output when it
    /// comes back.
    pub fn want_output(&self) {
        self.flags.want.store(true, Ordering::SeqCst);
        if self.flags.away.load(Ordering::SeqCst) {
            tracing::trace!(tok = self.token, "progress: output wanted while away");
            return;
        }
        tracing::trace!(tok = self.token, "progress: output wanted");
        // `want` stays set: a run ending now re-arms the descriptor after
        // this call, and must keep the output interest (epoll reports an
        // event only if it matches the interest in force when it is read).
        // SAFETY: the descriptor stays open while its `Reg` lives.
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let mut ev = EpollEvent::new(interest(true), self.token);
        let _ = self.engine.epoll.modify(fd, &mut ev);
    }
}

impl Drop for Reg {
    fn drop(&mut self) {
        let mut t = lock(&self.engine.table);
        // In a forked child the parent's epoll instance is shared: leave it.
        let ours = self.engine.pid == std::process::id();
        let ent = t.entries.remove(&self.token);
        if ours && ent.as_ref().is_some_and(|e| e.polled) {
            POLLED_AWAY.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(ent) = ent.filter(|_| ours) {
            // SAFETY: the owner drops its registration before closing the
            // descriptor, so `ent.fd` is still open here.
            let fd = unsafe { BorrowedFd::borrow_raw(ent.fd) };
            let _ = self.engine.epoll.delete(fd);
        }
        if t.entries.is_empty() && ours {
            // The last one: the thread ends (it checks under the lock).
            drop(t);
            let _ = self.engine.wake.write(1);
        }
    }
}

/// An application thread is about to sleep: the sources it was polling
/// are run as soon as something happens on them (or now, for those away
/// for activity) instead of after the grace period given to a poller that
/// may only have lost its core. Costs one atomic add when nothing is away
/// for activity.
pub fn hand_over() {
    HANDOVER.fetch_add(1, Ordering::SeqCst);
    if POLLED_AWAY.load(Ordering::SeqCst) == 0 {
        return;
    }
    let e = {
        let g = lock(&ENGINE);
        match g.as_ref() {
            Some(e) if e.pid == std::process::id() => e.clone(),
            _ => return,
        }
    };
    let _ = e.wake.write(1);
}

/// True while a progress thread serves this process.
pub fn running() -> bool {
    let g = lock(&ENGINE);
    g.as_ref()
        .filter(|e| e.pid == std::process::id())
        .is_some_and(|e| lock(&e.table).running)
}

static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LOOKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// (sources run, sources looked at) by progress threads so far.
pub fn stats() -> (u64, u64) {
    (RUNS.load(Ordering::Relaxed), LOOKS.load(Ordering::Relaxed))
}

fn serve(engine: Arc<Engine>) {
    let mut events = [EpollEvent::empty(); 64];
    let mut due: Vec<u64> = Vec::with_capacity(64);
    let mut handed = 0u64;
    loop {
        let timeout = {
            let mut t = lock(&engine.table);
            if t.entries.is_empty() {
                t.running = false;
                t.timers.clear();
                return;
            }
            match t.timers.peek() {
                None => EpollTimeout::NONE,
                Some(Reverse((at, _))) => {
                    let d = at.saturating_duration_since(Instant::now());
                    // Round up: waking early would only spin.
                    let ms = d.as_micros().div_ceil(1000).min(60_000) as u16;
                    EpollTimeout::from(ms)
                }
            }
        };
        let n = match engine.epoll.wait(&mut events, timeout) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(_) => {
                std::thread::sleep(STEP_ASIDE);
                0
            }
        };
        due.clear();
        for ev in &events[..n] {
            if ev.data() == WAKE {
                let _ = engine.wake.read();
            } else {
                due.push(ev.data());
            }
        }
        let now = Instant::now();
        {
            let mut t = lock(&engine.table);
            let h = HANDOVER.load(Ordering::SeqCst);
            if h != handed {
                handed = h;
                due.extend(
                    t.entries
                        .iter()
                        .filter(|(_, e)| e.polled)
                        .map(|(&tok, _)| tok),
                );
            }
            while let Some(&Reverse((at, tok))) = t.timers.peek() {
                if at > now {
                    break;
                }
                t.timers.pop();
                if let Some(e) = t.entries.get_mut(&tok) {
                    if e.due == Some(at) {
                        e.due = None;
                        due.push(tok);
                    }
                }
            }
        }
        due.sort_unstable();
        due.dedup();
        for &tok in &due {
            run_one(&engine, tok);
        }
    }
}

/// Runs one source unless an application drives it.
fn run_one(engine: &Engine, tok: u64) {
    let (src, seen, aside, moved_at, fresh) = {
        let mut t = lock(&engine.table);
        let Some(e) = t.entries.get_mut(&tok) else {
            return;
        };
        let Some(src) = e.src.upgrade() else {
            return;
        };
        let h = HANDOVER.load(Ordering::SeqCst);
        let fresh = std::mem::replace(&mut e.epoch, h) != h;
        (src, e.seen, e.aside, e.moved_at, fresh)
    };
    LOOKS.fetch_add(1, Ordering::Relaxed);
    let act = src.activity();
    let now = Instant::now();
    // Driven: the counter moved since the last look, a thread sleeps on
    // the queues, or the counter moved less than ACTIVE ago (a poller that
    // merely lost its core for a while has not stopped).
    // While a thread sleeps on the queues the counter says nothing: the
    // sleeper drives the source unless output is waiting, which it does
    // not wake for.
    // A source handed over by a thread going to sleep forgets the polls
    // before that.
    let moved = act != seen && !fresh;
    let moved_at = moved_at.filter(|_| !fresh);
    let sleeping = src.sleeping();
    let driven = if sleeping {
        src.attended()
    } else {
        moved || moved_at.is_some_and(|t| now.saturating_duration_since(t) < ACTIVE)
    };
    // Work the poller left that cannot wait for it any longer.
    let due_by = if driven { src.due_by() } else { None };
    let driven = driven && due_by.is_none_or(|d| now < d);
    let polled = driven && !sleeping;
    tracing::trace!(tok, act, seen, fresh, sleeping, driven, "progress: look");
    let run = if driven {
        // Leave the descriptor disarmed; look again later.
        Run {
            // Work left by the poller: look again soon (not as late as
            // the doubling allows) to see whether it is still stepping.
            at: Some(now + if due_by.is_some() { STEP_ASIDE } else { aside }),
            output: false,
        }
    } else {
        RUNS.fetch_add(1, Ordering::Relaxed);
        src.run()
    };
    let mut t = lock(&engine.table);
    if let Some(e) = t.entries.get_mut(&tok) {
        e.seen = act;
        if moved {
            e.moved_at = Some(now);
        } else if fresh {
            e.moved_at = None;
        }
        if e.polled != polled {
            e.polled = polled;
            if polled {
                POLLED_AWAY.fetch_add(1, Ordering::Relaxed);
            } else {
                POLLED_AWAY.fetch_sub(1, Ordering::Relaxed);
            }
        }
        e.flags.away.store(driven, Ordering::SeqCst);
        if driven {
            e.aside = (aside * 2).min(STEP_ASIDE_MAX);
        } else {
            e.aside = STEP_ASIDE;
            // Output wanted while away (or while this run was ending: the
            // owner saw `away` still set and left it to us).
            let output = run.output | e.flags.want.swap(false, Ordering::SeqCst);
            tracing::trace!(tok, output, at = ?run.at.map(|a| a - now), "progress: ran");
            // SAFETY: registered descriptors stay open until their `Reg`
            // is dropped, which removes the entry under this lock first.
            let fd = unsafe { BorrowedFd::borrow_raw(e.fd) };
            let mut ev = EpollEvent::new(interest(output), tok);
            let _ = engine.epoll.modify(fd, &mut ev);
        }
        if let Some(at) = run.at {
            if e.due.is_none_or(|d| at < d) {
                e.due = Some(at);
                t.timers.push(Reverse((at, tok)));
            }
        }
    }
    drop(t);
    // The source's last reference may be this one: dropped outside the
    // table lock (its Drop unregisters).
    drop(src);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    struct Count {
        runs: AtomicUsize,
        act: AtomicU64,
        sleeping: std::sync::atomic::AtomicBool,
        sock: UnixStream,
        again: Mutex<Option<Instant>>,
        /// Wants output from inside the next run (as an application
        /// thread would right after the run let go of its lock).
        want_in_run: Mutex<Option<Arc<Reg>>>,
    }
    impl Source for Count {
        fn run(&self) -> Run {
            let mut b = [0u8; 64];
            while std::io::Read::read(&mut &self.sock, &mut b).is_ok_and(|n| n > 0) {}
            self.runs.fetch_add(1, Ordering::SeqCst);
            if let Some(r) = lock(&self.want_in_run).take() {
                r.want_output();
            }
            Run {
                at: lock(&self.again).take(),
                output: false,
            }
        }
        fn activity(&self) -> u64 {
            self.act.load(Ordering::SeqCst)
        }
        fn sleeping(&self) -> bool {
            self.sleeping.load(Ordering::SeqCst)
        }
        fn attended(&self) -> bool {
            self.sleeping.load(Ordering::SeqCst)
        }
    }

    fn until(what: &str, f: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(5);
        while !f() {
            assert!(Instant::now() < end, "timed out: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn count() -> (Arc<Count>, UnixStream) {
        let (a, b) = UnixStream::pair().expect("pair");
        b.set_nonblocking(true).expect("nb");
        let c = Arc::new(Count {
            runs: AtomicUsize::new(0),
            act: AtomicU64::new(0),
            sleeping: std::sync::atomic::AtomicBool::new(false),
            sock: b,
            again: Mutex::new(None),
            want_in_run: Mutex::new(None),
        });
        (c, a)
    }

    #[test]
    fn readiness_timers_and_stepping_aside() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = register(c.sock.as_fd(), w).expect("register");
        let base = c.runs.load(Ordering::SeqCst);
        (&peer).write_all(b"x").expect("write");
        until("run on input", || c.runs.load(Ordering::SeqCst) > base);

        // A timer.
        let base = c.runs.load(Ordering::SeqCst);
        reg.schedule(Instant::now() + Duration::from_millis(20));
        until("run at the time", || c.runs.load(Ordering::SeqCst) > base);

        // An application thread sleeps on it: the thread steps aside
        // however long that lasts, and runs it once the sleeper is gone.
        c.sleeping.store(true, Ordering::SeqCst);
        let base = c.runs.load(Ordering::SeqCst);
        (&peer).write_all(b"y").expect("write");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(c.runs.load(Ordering::SeqCst), base, "stepped aside");
        c.sleeping.store(false, Ordering::SeqCst);
        until("run once the application is gone", || {
            c.runs.load(Ordering::SeqCst) > base
        });

        // An application polls it: a moved counter sends the thread away
        // (looked at once, then later).
        let base = c.runs.load(Ordering::SeqCst);
        c.act.fetch_add(1, Ordering::SeqCst);
        (&peer).write_all(b"z").expect("write");
        until("run after stepping aside once", || {
            c.runs.load(Ordering::SeqCst) > base
        });
        drop(reg);
    }

    #[test]
    fn output_wanted_as_the_thread_comes_back_is_not_lost() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = Arc::new(register(c.sock.as_fd(), w).expect("register"));
        // Polled: the thread stays away (and looks again).
        c.act.fetch_add(1, Ordering::SeqCst);
        let base = c.runs.load(Ordering::SeqCst);
        *lock(&c.want_in_run) = Some(reg.clone());
        (&peer).write_all(b"x").expect("write");
        // The polls stop; the thread comes back and runs the source, and
        // output is wanted during that run, while `away` still reads set.
        until("run once the polls stopped", || {
            c.runs.load(Ordering::SeqCst) > base
        });
        // The socket is writable: armed for output, the thread runs it
        // again although no input came.
        until("run again for the output", || {
            c.runs.load(Ordering::SeqCst) > base + 1
        });
        drop(reg);
    }

    #[test]
    fn output_wanted_during_a_run_survives_the_rearm() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = Arc::new(register(c.sock.as_fd(), w).expect("register"));
        let base = c.runs.load(Ordering::SeqCst);
        // Nobody polls: the thread runs the source at once, and output is
        // wanted during that run (the thread is not away).
        *lock(&c.want_in_run) = Some(reg.clone());
        (&peer).write_all(b"x").expect("write");
        until("run on input", || c.runs.load(Ordering::SeqCst) > base);
        until("run again for the output", || {
            c.runs.load(Ordering::SeqCst) > base + 1
        });
        drop(reg);
    }

    #[test]
    fn a_thread_going_to_sleep_hands_its_sources_over() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = register(c.sock.as_fd(), w).expect("register");
        let stop = Arc::new(AtomicBool::new(false));
        // A poller keeps the activity counter moving.
        let poller = {
            let (c, stop) = (c.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    c.act.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_micros(200));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        let base = c.runs.load(Ordering::SeqCst);
        (&peer).write_all(b"x").expect("write");
        // Polled: left alone (for as long as the poller polls; not
        // asserted, other tests in this process may hand over too).
        std::thread::sleep(Duration::from_millis(40));
        hand_over();
        until("run once handed over", || {
            c.runs.load(Ordering::SeqCst) > base
        });
        stop.store(true, Ordering::SeqCst);
        poller.join().expect("poller");
        drop(reg);
    }
}
