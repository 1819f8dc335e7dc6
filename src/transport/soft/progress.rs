//! The background progress thread: the software NIC's engine, which runs
//! each registered [`Source`] when its descriptor reports an arrival or its
//! timer is due, whether or not an application thread is in the library.
//!
//! Invariants: one detached thread per process (per fork generation), from
//! the first registration to the last; descriptors are edge-triggered,
//! never re-armed, and watched for what their owner asks ([`Reg::watch`]);
//! a source found busy is handed to its holder ([`Source::run`]); the
//! engine's mutex is never held while a source runs (lock order: source
//! lock → engine mutex). How it shares the work: docs/transport.md.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::sync::lock_anyway as lock;
use crate::sys;

/// What a source run asks for next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Run again at this time regardless of readiness (`now` to run again
    /// as soon as the thread has served the others).
    pub at: Option<Instant>,
}

/// Epoll data of the control eventfd.
const WAKE: u64 = u64::MAX;

/// Something the progress thread runs: a connection, a listener.
pub trait Source: Send + Sync {
    /// Runs once without blocking (its descriptor got ready or its time
    /// has come). It must take everything that is there, or hand the work
    /// to whoever holds it, or ask to run again: no new edge comes for
    /// what has already arrived.
    fn run(&self) -> Run;
}

struct Entry {
    src: Weak<dyn Source>,
    /// The time the source asked for (stale heap entries are skipped).
    due: Option<Instant>,
    /// The watched descriptor; `None` for a source that only has timers.
    fd: Option<RawFd>,
}

struct Table {
    entries: HashMap<u64, Entry>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    next_token: u64,
    /// Whether a thread serves this engine now.
    running: bool,
}

struct Engine {
    /// The fork generation it was made in (a forked child makes its own).
    gen: u32,
    epoll: Epoll,
    wake: EventFd,
    table: Mutex<Table>,
}

pub use crate::sys::{fork_generation, inherited};

/// The engine of this process (a forked child gets a new one).
static ENGINE: Mutex<Option<Arc<Engine>>> = Mutex::new(None);

fn engine() -> std::io::Result<Arc<Engine>> {
    let mut g = lock(&ENGINE);
    let gen = fork_generation();
    if let Some(e) = g.as_ref().filter(|e| e.gen == gen) {
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
        gen,
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

/// Input and a close by the peer (`input`), socket space (`output`): every
/// edge. Errors and hang-ups are always reported.
fn interest(input: bool, output: bool) -> EpollFlags {
    let mut f = EpollFlags::EPOLLET;
    if input {
        f |= EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP;
    }
    if output {
        f |= EpollFlags::EPOLLOUT;
    }
    f
}

/// A registration with the progress thread; dropping it unregisters (do so
/// before closing the descriptor).
pub struct Reg {
    engine: Arc<Engine>,
    token: u64,
    fd: Option<RawFd>,
}

/// Watches `fd` (edge-triggered, input and output) and runs `src` when it
/// becomes ready. Starts the thread if needed.
pub fn register(fd: BorrowedFd<'_>, src: Weak<dyn Source>) -> std::io::Result<Reg> {
    add(Some(fd), src)
}

/// A source the thread runs only at the times it asks for
/// ([`Reg::schedule`]).
pub fn register_timer(src: Weak<dyn Source>) -> std::io::Result<Reg> {
    add(None, src)
}

fn add(fd: Option<BorrowedFd<'_>>, src: Weak<dyn Source>) -> std::io::Result<Reg> {
    let engine = engine()?;
    let raw = fd.map(|f| std::os::fd::AsRawFd::as_raw_fd(&f));
    let (token, start) = {
        let mut t = lock(&engine.table);
        let token = t.next_token;
        t.next_token += 1;
        if let Some(fd) = fd {
            engine
                .epoll
                .add(fd, EpollEvent::new(interest(true, true), token))?;
        }
        t.entries.insert(
            token,
            Entry {
                src,
                due: None,
                fd: raw,
            },
        );
        let start = !t.running;
        t.running = true;
        tracing::trace!(token, fd = ?raw, "progress: registered");
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
            if let Some(raw) = t.entries.remove(&token).and_then(|e| e.fd) {
                // `raw` is the caller's live descriptor (borrowed for this
                // call).
                let _ = sys::epoll_delete(&engine.epoll, raw);
            }
            return Err(err);
        }
    }
    Ok(Reg {
        engine,
        token,
        fd: raw,
    })
}

impl Reg {
    /// Runs the source at `at` (or earlier, if its descriptor gets ready).
    pub fn schedule(&self, at: Instant) {
        schedule(&self.engine, self.token, at);
    }

    /// A handle that schedules the source without the registration (so
    /// without whatever lock guards it); nothing once it is unregistered.
    pub fn waker(&self) -> Waker {
        Waker {
            engine: self.engine.clone(),
            token: self.token,
        }
    }
}

/// Schedules a registration's source ([`Reg::waker`]).
pub struct Waker {
    engine: Arc<Engine>,
    token: u64,
}

impl Waker {
    /// [`Reg::schedule`].
    pub fn schedule(&self, at: Instant) {
        schedule(&self.engine, self.token, at);
    }
}

fn schedule(engine: &Engine, token: u64, at: Instant) {
    let mut t = lock(&engine.table);
    let Some(e) = t.entries.get_mut(&token) else {
        return;
    };
    if e.due.is_some_and(|d| d <= at) {
        return;
    }
    e.due = Some(at);
    let first = t.timers.peek().is_none_or(|Reverse((d, _))| at < *d);
    t.timers.push(Reverse((at, token)));
    drop(t);
    if first {
        let _ = engine.wake.write(1);
    }
}

impl Reg {
    /// What the descriptor is watched for: input (off while an
    /// application thread drives the source), output (on only while bytes
    /// wait for socket space: a writable socket would wake the thread at
    /// every change). Errors and hang-ups always wake the thread. Watching
    /// for something that is ready now wakes the thread at once. The owner
    /// calls it under its own lock, so calls do not race. (A descriptor is
    /// registered watched for both.)
    pub fn watch(&self, input: bool, output: bool) {
        let Some(raw) = self.fd.filter(|_| !inherited(self.engine.gen)) else {
            return;
        };
        let flags = interest(input, output);
        // The descriptor stays open while its `Reg` lives.
        let _ = sys::epoll_modify(
            &self.engine.epoll,
            raw,
            &mut EpollEvent::new(flags, self.token),
        );
    }
}

impl Drop for Reg {
    fn drop(&mut self) {
        let mut t = lock(&self.engine.table);
        // In a forked child the parent's epoll instance is shared: leave it.
        let ours = !inherited(self.engine.gen);
        let ent = t.entries.remove(&self.token);
        if let Some(raw) = ent.and_then(|e| e.fd).filter(|_| ours) {
            // The owner drops its registration before closing the
            // descriptor, so it is still open here.
            let _ = sys::epoll_delete(&self.engine.epoll, raw);
        }
        if t.entries.is_empty() && ours {
            // The last one: the thread ends (it checks under the lock).
            drop(t);
            let _ = self.engine.wake.write(1);
        }
    }
}

/// True while a progress thread serves this process.
pub fn running() -> bool {
    let g = lock(&ENGINE);
    g.as_ref()
        .filter(|e| !inherited(e.gen))
        .is_some_and(|e| lock(&e.table).running)
}

static RUNS: AtomicU64 = AtomicU64::new(0);
static HANDED: AtomicU64 = AtomicU64::new(0);

/// (sources run, runs handed to an application thread that held the
/// source) by progress threads so far.
pub fn stats() -> (u64, u64) {
    (RUNS.load(Ordering::Relaxed), HANDED.load(Ordering::Relaxed))
}

/// Counts a run the thread handed to the source's holder.
pub fn note_handed() {
    HANDED.fetch_add(1, Ordering::Relaxed);
}

/// The progress thread's nice value unless `DAT_PROGRESS_NICE` says
/// otherwise: a NIC's engine is not a peer of the application's spinning
/// threads, whose time slices it would otherwise wait for
/// (docs/transport.md, "Progress: who runs the engine").
pub const DEFAULT_NICE: i32 = -10;

/// `DAT_PROGRESS_NICE` (-20..19) or [`DEFAULT_NICE`], read once.
pub fn nice_value() -> i32 {
    static NICE: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *NICE.get_or_init(|| {
        std::env::var("DAT_PROGRESS_NICE")
            .ok()
            .and_then(|v| v.trim().parse::<i32>().ok())
            .map_or(DEFAULT_NICE, |n| n.clamp(-20, 19))
    })
}

/// Gives the calling (progress) thread [`nice_value`]. Without the right
/// to raise a priority (`CAP_SYS_NICE` or `RLIMIT_NICE`) the thread keeps
/// the process's priority: data then still moves, with longer tails when
/// the application spins on every core.
fn raise_priority() {
    let nice = nice_value();
    if let Err(err) = sys::set_thread_nice(nice) {
        tracing::debug!(
            nice,
            %err,
            "progress: thread keeps the process's priority"
        );
    }
}

fn serve(engine: Arc<Engine>) {
    raise_priority();
    let mut events = [EpollEvent::empty(); 64];
    let mut due: Vec<u64> = Vec::with_capacity(64);
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
                std::thread::sleep(Duration::from_millis(1));
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

/// Runs one source and keeps the time it asks for.
fn run_one(engine: &Engine, tok: u64) {
    let src = {
        let t = lock(&engine.table);
        let Some(src) = t.entries.get(&tok).and_then(|e| e.src.upgrade()) else {
            return;
        };
        src
    };
    RUNS.fetch_add(1, Ordering::Relaxed);
    let run = src.run();
    tracing::trace!(tok, at = ?run.at, "progress: ran");
    if let Some(at) = run.at {
        let mut t = lock(&engine.table);
        if let Some(e) = t.entries.get_mut(&tok) {
            if e.due.is_none_or(|d| at < d) {
                e.due = Some(at);
                t.timers.push(Reverse((at, tok)));
            }
        }
    }
    // The source's last reference may be this one: dropped outside the
    // table lock (its Drop unregisters).
    drop(src);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::AtomicUsize;

    struct Count {
        runs: AtomicUsize,
        sock: UnixStream,
        again: Mutex<Option<Instant>>,
    }
    impl Source for Count {
        fn run(&self) -> Run {
            let mut b = [0u8; 64];
            while std::io::Read::read(&mut &self.sock, &mut b).is_ok_and(|n| n > 0) {}
            self.runs.fetch_add(1, Ordering::SeqCst);
            Run {
                at: lock(&self.again).take(),
            }
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
            sock: b,
            again: Mutex::new(None),
        });
        (c, a)
    }

    #[test]
    fn every_arrival_and_every_timer_runs_the_source() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = register(c.sock.as_fd(), w).expect("register");
        // Each arrival is an edge of its own: the source runs for each,
        // with nothing re-armed in between.
        for k in 0..20u8 {
            let base = c.runs.load(Ordering::SeqCst);
            (&peer).write_all(&[k]).expect("write");
            until("run on input", || c.runs.load(Ordering::SeqCst) > base);
        }
        // A timer.
        let base = c.runs.load(Ordering::SeqCst);
        reg.schedule(Instant::now() + Duration::from_millis(20));
        until("run at the time", || c.runs.load(Ordering::SeqCst) > base);
        // "Again at once" from a run.
        let base = c.runs.load(Ordering::SeqCst);
        *lock(&c.again) = Some(Instant::now());
        (&peer).write_all(b"x").expect("write");
        until("run on input and again", || {
            c.runs.load(Ordering::SeqCst) >= base + 2
        });
        drop(reg);
    }

    #[test]
    fn an_idle_source_is_not_run() {
        let (c, peer) = count();
        let w: Weak<dyn Source> = Arc::downgrade(&(c.clone() as Arc<dyn Source>));
        let reg = register(c.sock.as_fd(), w).expect("register");
        // Registering a writable socket may run it once (its first edge).
        std::thread::sleep(Duration::from_millis(30));
        let base = c.runs.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            c.runs.load(Ordering::SeqCst),
            base,
            "no run without an edge"
        );
        drop(reg);
        drop(peer);
    }
}
