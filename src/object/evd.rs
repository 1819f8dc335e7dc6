//! Event Dispatcher: a bounded event queue with at most one direct waiter,
//! optionally feeding a CNO.
//!
//! The queue is allocated when the EVD is created or resized; posting and
//! dequeuing never allocate. It has its own mutex (the hot path); posting
//! releases it before waking the waiter (only if one sleeps), triggering the
//! CNO or reporting an overflow. Structural changes (CNO association, free)
//! first take the IA lock, then the queue lock.

use std::collections::{HashMap, VecDeque};

use crate::ring::Fifo;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::attr::{COMPLETION_SOLICITED_WAIT, COMPLETION_UNSIGNALLED};
use crate::object::cno::CnoEvd;
use crate::object::ep::{EpEvd, WorkQueue};
use crate::object::event::Credit;
use crate::object::event::{self, Event};
use crate::object::ia::{self, AsyncSink, Ia, IaState};
use crate::object::{lock, lock_anyway, Cno, Ep, Object, EVD_DTO_FLAG, EVD_RMR_BIND_FLAG};
use crate::transport::api::{CompletionQueue, QpNum, Wc, WcOp};
use crate::wait::{self, Held, Notifier, Sleep, Wake};

/// `DAT_EVD_SOFTWARE_FLAG`.
pub const EVD_SOFTWARE_FLAG: u32 = 0x001;
/// `DAT_EVD_ASYNC_FLAG`.
pub const EVD_ASYNC_FLAG: u32 = 0x100;

/// `DAT_EVD_STATE_*` bands.
pub const STATE_ENABLED: u32 = 0x01;
pub const STATE_DISABLED: u32 = 0x02;
pub const STATE_WAITABLE: u32 = 0x04;
pub const STATE_UNWAITABLE: u32 = 0x08;

pub use crate::object::event::TIMEOUT_INFINITE;

struct Queue {
    /// The queue (memory follows use: [`Fifo`]); `qlen` deep.
    events: Fifo<Event>,
    qlen: usize,
    enabled: bool,
    waitable: bool,
    cno: Option<Arc<Cno>>,
    /// A thread is blocked in `dat_evd_wait`.
    waiter: bool,
    /// Freed or its IA closed.
    dead: bool,
    /// The async EVD overflowed: catastrophic, wait/dequeue fail.
    broken: bool,
    /// Completion flags of the EP streams feeding the EVD, by (EP, queue).
    stream_flags: HashMap<(Handle, WorkQueue), u32>,
    /// Queue pairs whose completions land in the CQ: their EP and which
    /// directions this EVD receives (looked up for every completion).
    streams: Streams,
    /// Events that must come after the completions already in the CQ
    /// (connection events, flushes made by the DAT layer).
    deferred: VecDeque<Event>,
    /// Bumped for every notification event queued.
    notified: u64,
}

/// Hashes queue pair numbers with one multiplication (Fibonacci hashing:
/// the top bits are well mixed, the low bits of consecutive numbers
/// differ). The numbers are handed out by the local device, not chosen by
/// a peer, so a keyed hash buys nothing on this per-completion lookup.
#[derive(Default)]
struct QpHasher(u64);

impl Hasher for QpHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The queue pairs feeding an EVD's CQ, looked up for every completion:
/// a few (most EVDs serve one or two EPs) in a vector searched in order,
/// more in a hash map.
#[derive(Default)]
struct Streams {
    few: Vec<(QpNum, Stream)>,
    many: HashMap<QpNum, Stream, BuildHasherDefault<QpHasher>>,
}

/// Streams kept in the vector at most.
const FEW_STREAMS: usize = 8;

impl Streams {
    #[inline]
    fn get(&self, qp: QpNum) -> Option<&Stream> {
        if self.many.is_empty() {
            self.few.iter().find(|(n, _)| *n == qp).map(|(_, s)| s)
        } else {
            self.many.get(&qp)
        }
    }

    fn get_or_insert(&mut self, qp: QpNum, make: impl FnOnce() -> Stream) -> &mut Stream {
        if self.many.is_empty() {
            if let Some(i) = self.few.iter().position(|(n, _)| *n == qp) {
                return &mut self.few[i].1;
            }
            if self.few.len() < FEW_STREAMS {
                self.few.push((qp, make()));
                let last = self.few.len() - 1;
                return &mut self.few[last].1;
            }
            self.many.extend(self.few.drain(..));
        }
        self.many.entry(qp).or_insert_with(make)
    }

    fn remove(&mut self, qp: QpNum) {
        self.few.retain(|(n, _)| *n != qp);
        self.many.remove(&qp);
    }

    fn values(&self) -> impl Iterator<Item = &Stream> {
        self.few.iter().map(|(_, s)| s).chain(self.many.values())
    }

    fn clear(&mut self) {
        self.few.clear();
        self.many.clear();
    }
}

/// One queue pair feeding the EVD's CQ.
struct Stream {
    ep: Arc<Ep>,
    recv: bool,
    request: bool,
    recv_depth: u32,
    request_depth: u32,
}

/// A stream that only allows waits with threshold 1 (§3.5).
fn threshold_one(queue: WorkQueue, flags: u32) -> bool {
    flags & COMPLETION_UNSIGNALLED != 0
        || (queue == WorkQueue::Receive && flags & COMPLETION_SOLICITED_WAIT != 0)
}

/// What `dat_evd_wait` returned.
#[derive(Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// One event dequeued; `nmore` events are left.
    Event(Event, usize),
    /// Timed out with `nmore` events queued; nothing dequeued.
    Timeout(usize),
}

/// `DAT_EVD_PARAM` as the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvdParams {
    pub ia: Handle,
    pub qlen: i32,
    pub state: u32,
    pub cno: Handle,
    pub flags: u32,
}

/// An Event Dispatcher.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Evd {
    /// Its handle.
    pub handle: Handle,
    /// The IA that created it.
    pub ia: Arc<Ia>,
    /// Creation flags, verbatim.
    pub flags: u32,
    q: Mutex<Queue>,
    /// Bumped (under the queue lock) by everything a blocked waiter must
    /// look at: a notification event, death, unwaitability, breakage. A
    /// spinning waiter on an EVD without a CQ reads it instead of taking
    /// the lock (one with a CQ polls and looks at the queue anyway, so
    /// completions moved from the CQ do not bump it).
    seq: AtomicU64,
    waiters: Notifier,
    /// The transport CQ of an EVD with DTO or RMR-bind flags.
    cq: Option<Arc<dyn CompletionQueue>>,
    /// The CQ needs no progress calls (`CompletionQueue::passive`).
    cq_passive: bool,
}

/// Completions a dequeue takes from a passive CQ when nothing is queued:
/// one, as perftest polls (the rest wait in the CQ; a dequeue of an empty
/// EVD, a busy poller's spin, initialises no more than it needs).
const DEQUEUE_BATCH: usize = 1;

/// Completions taken from a CQ in one call.
const TAKE_BATCH: usize = 16;

fn invalid() -> DatError {
    DatError::handle(Sub::Handle1)
}

/// A queue of `qlen` events, reserved now (never while posting).
fn events_for(qlen: usize) -> Result<Fifo<Event>> {
    Fifo::new(qlen, Event::software(0)).map_err(|_| DatError::resources(Sub::ResourceMemory))
}

impl Evd {
    /// `dat_evd_create`. Checks in the reference order: qlen, CNO, flags.
    pub fn create(ia: &Arc<Ia>, min_qlen: i32, cno: Handle, flags: u32) -> Result<Arc<Evd>> {
        if min_qlen <= 0 {
            return Err(DatError::invalid(Input::EvdMinQlen));
        }
        if min_qlen > ia.limits.max_evd_qlen {
            return Err(DatError::resources(Sub::ResourceTevd));
        }
        let mut st = ia.live_state()?;
        let cno = if cno.is_null() {
            None
        } else {
            let c = handle::expect::<Cno>(cno.addr(), Sub::HandleCno)?;
            ia::same_ia(&c.ia, ia, Sub::HandleCno)?;
            Some(c.arc())
        };
        // Every pair of streams may share an EVD (the merging matrix is all
        // TRUE), and undefined flag bits are accepted as the reference does.
        Self::create_locked(ia, &mut st, min_qlen, cno, flags)
    }

    /// Creates an EVD with the IA lock held (also used for the async EVD).
    pub(crate) fn create_locked(
        ia: &Arc<Ia>,
        st: &mut IaState,
        qlen: i32,
        cno: Option<Arc<Cno>>,
        flags: u32,
    ) -> Result<Arc<Evd>> {
        st.check_limit(HandleType::Evd, ia.limits.max_evds, Sub::ResourceTevd)?;
        let qlen = usize::try_from(qlen).map_err(|_| DatError::invalid(Input::EvdMinQlen))?;
        let events = events_for(qlen)?;
        let cq = if flags & (EVD_DTO_FLAG | EVD_RMR_BIND_FLAG) != 0 {
            let depth = u32::try_from(qlen).unwrap_or(u32::MAX);
            Some(
                ia.dev
                    .create_cq(depth)
                    .map_err(|_| DatError::resources(Sub::ResourceTevd))?,
            )
        } else {
            None
        };
        let res = handle::reserve(ia.provider_word)?;
        let evd = Arc::new(Evd {
            handle: res.handle(),
            ia: ia.clone(),
            flags,
            q: Mutex::new(Queue {
                events,
                qlen,
                enabled: true,
                waitable: true,
                cno: cno.clone(),
                waiter: false,
                dead: false,
                broken: false,
                stream_flags: HashMap::new(),
                streams: Streams::default(),
                deferred: VecDeque::new(),
                notified: 0,
            }),
            seq: AtomicU64::new(0),
            waiters: Notifier::new(),
            cq_passive: cq.as_ref().is_some_and(|c| c.passive()),
            cq,
        });
        evd.hook_cno(cno.is_some());
        if let Some(c) = &cno {
            st.add_use(c.handle);
            c.attach(&evd);
        }
        st.insert(evd.handle, Object::Evd(evd.clone()));
        res.publish(evd.clone());
        Ok(evd)
    }

    #[inline]
    fn live_queue(&self) -> Result<MutexGuard<'_, Queue>> {
        let q = lock(&self.q)?;
        if q.dead {
            Err(invalid())
        } else {
            Ok(q)
        }
    }

    fn check_alive(&self) -> Result<()> {
        self.live_queue().map(|_| ())
    }

    /// Marks a change a blocked waiter must look at (queue lock held).
    fn changed(&self) {
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// Not freed and its IA not closed.
    pub fn is_alive(&self) -> bool {
        self.live_queue().is_ok()
    }

    /// `dat_evd_query`.
    pub fn query(&self) -> Result<EvdParams> {
        let q = self.live_queue()?;
        Ok(EvdParams {
            ia: self.ia.handle,
            qlen: i32::try_from(q.qlen).unwrap_or(i32::MAX),
            state: (if q.enabled {
                STATE_ENABLED
            } else {
                STATE_DISABLED
            }) | (if q.waitable {
                STATE_WAITABLE
            } else {
                STATE_UNWAITABLE
            }),
            cno: q.cno.as_ref().map_or(Handle::NULL, |c| c.handle),
            flags: self.flags,
        })
    }

    /// `dat_evd_post_se`: a software event carrying `pointer`.
    pub fn post_se(&self, event_number: u32, pointer: usize) -> Result<()> {
        if self.flags & EVD_SOFTWARE_FLAG == 0 {
            self.check_alive()?;
            return Err(DatError::invalid(Input::EvdHandle));
        }
        if event_number != event::SOFTWARE {
            self.check_alive()?;
            return Err(DatError::invalid(Input::Event));
        }
        self.enqueue(Event::software(pointer), true, true)
    }

    /// Queues a provider-generated event. On a full queue the event is lost
    /// and `DAT_ASYNC_ERROR_EVD_OVERFLOW` goes to the IA's async EVD.
    /// `notify` is false for completions that are not notification events.
    pub fn post_provider_event(&self, ev: Event, notify: bool) {
        if let Err(e) = self.enqueue(ev, notify, false) {
            tracing::trace!(evd = self.handle.addr(), error = %e, "event dropped");
        }
    }

    /// Queues an asynchronous error on this (async) EVD. If it overflows the
    /// EVD is broken for good.
    pub(crate) fn post_async_event(&self, ev: Event) {
        let Ok(mut q) = self.live_queue() else {
            return;
        };
        if q.events.len() >= q.qlen {
            q.broken = true;
            self.changed();
            drop(q);
            self.waiters.notify();
            tracing::warn!(
                evd = self.handle.addr(),
                "async EVD overflow: EVD is now unusable"
            );
            return;
        }
        drop(q);
        let _ = self.enqueue(ev, true, false);
    }

    fn enqueue(&self, mut ev: Event, notify: bool, software: bool) -> Result<()> {
        let mut q = self.live_queue()?;
        if q.events.len() >= q.qlen {
            drop(q);
            if !software {
                let (number, about, reason) = ia::overflow_event(self.handle);
                self.ia.post_async(number, about, reason);
            }
            return Err(DatError::of(Type::QueueFull));
        }
        ev.evd = self.handle;
        // Room was reserved for qlen events: this never allocates.
        q.events.push_back(ev);
        if notify {
            q.notified = q.notified.wrapping_add(1);
        }
        let mut wake = false;
        let mut trigger = None;
        if notify {
            if q.waiter {
                self.changed();
                wake = true;
            } else if q.enabled {
                trigger = q.cno.clone();
            }
        }
        drop(q);
        if wake {
            self.waiters.notify();
        }
        if let Some(cno) = trigger {
            cno.trigger(self.handle);
        }
        Ok(())
    }

    /// Whether a dequeue or wait that has events queued must still poll
    /// the CQ first: only when the transport holds data a poll would move
    /// (a bulk transfer needs its engine driven; what is queued stays
    /// ahead of what the poll brings).
    fn must_poll(&self, q: &Queue) -> bool {
        q.events.is_empty() || self.cq.as_ref().is_some_and(|c| c.busy())
    }

    /// `dat_evd_dequeue`. An event already queued is returned without
    /// polling the CQ: whatever the CQ holds completed after it, and
    /// running the engines once per event (rather than once per empty
    /// queue) would send acknowledgements the next post carries anyway.
    /// Unless the transport has data to move (`CompletionQueue::busy`):
    /// then a poll comes first, as for an empty queue.
    pub fn dequeue(&self) -> Result<Event> {
        if let Some(cq) = self.cq.as_ref().filter(|_| self.cq_passive) {
            return self.dequeue_passive(cq.as_ref());
        }
        {
            let mut q = self.live_queue()?;
            if q.broken {
                return Err(ia::invalid_state());
            }
            if q.waiter {
                return Err(DatError::state(Sub::EvdWaiter));
            }
            if !self.must_poll(&q) {
                if let Some(ev) = q.events.pop_front() {
                    drop(q);
                    release(&ev);
                    return Ok(ev);
                }
            }
        }
        // Nothing queued (or the transport has data to move): poll, and
        // take the first event under the lock that queued it.
        let Some(cq) = &self.cq else {
            return Err(DatError::of(Type::QueueEmpty));
        };
        let ev = self
            .fill_then(cq, |q| {
                if q.dead {
                    return Err(invalid());
                }
                q.events.pop_front().ok_or(DatError::of(Type::QueueEmpty))
            })
            .unwrap_or_else(|| Err(invalid()))?;
        release(&ev);
        Ok(ev)
    }

    /// `dat_evd_wait`: succeed once at least `threshold` events are queued.
    /// Events already queued at entry count; after that only a
    /// notification event ends the wait (rulings: notification). An EVD
    /// with a CQ drives its queue pairs while it spins (polling the CQ
    /// only while the queue is short of the threshold) and, before it
    /// sleeps on the CQ's descriptor, arms the CQ and tells the transport.
    /// `held` is the call's [`Held`], taken before the EVD was looked up.
    pub fn wait(&self, timeout_us: u32, threshold: i32, held: &Held) -> Result<WaitOutcome> {
        let deadline = (timeout_us != TIMEOUT_INFINITE)
            .then(|| Instant::now() + Duration::from_micros(u64::from(timeout_us)));
        let (threshold, queued_ready) = {
            let mut q = self.live_queue()?;
            let threshold = usize::try_from(threshold)
                .ok()
                .filter(|t| *t >= 1 && *t <= q.qlen)
                .ok_or(DatError::invalid(Input::Threshold))?;
            if q.broken {
                return Err(ia::invalid_state());
            }
            if !q.waitable {
                return Err(DatError::state(Sub::EvdUnwaitable));
            }
            if q.waiter {
                return Err(DatError::state(Sub::EvdWaiter));
            }
            if threshold > 1
                && q.stream_flags
                    .iter()
                    .any(|(&(_, queue), &f)| threshold_one(queue, f))
            {
                return Err(DatError::state(Sub::EvdConfigThreshold));
            }
            q.waiter = true;
            // Enough already queued: no need to poll the CQ first (unless
            // the transport has data to move).
            let ready = (q.events.len() >= threshold && !self.must_poll(&q)).then_some(q.notified);
            (threshold, ready)
        };
        let cq = self.cq.as_ref();
        let (ready_at_entry, notified_at_entry) = match queued_ready {
            Some(notified) => (true, notified),
            None => {
                self.fill();
                let q = lock_anyway(&self.q);
                (q.events.len() >= threshold, q.notified)
            }
        };
        let mut seen = None;
        // Whether the transport was told a thread sleeps on the CQ (from
        // the first sleep on): it then leaves the queue pairs to this
        // thread, which wakes for their data.
        let declared = std::cell::Cell::new(false);
        // Whether this thread took the CQ's notifications (it then gives
        // them back when it stops waiting).
        let cleared = std::cell::Cell::new(false);
        let before = || {
            if let Some(cq) = cq {
                if !declared.replace(true) {
                    cq.sleeping(true);
                }
            }
        };
        let sleep = Sleep {
            deadline,
            fd: cq.map(|c| c.wait_fd()),
            before: Some(&before),
        };
        // Ends the wait if the queue meets the threshold (and the wait may
        // end now: events queued at entry, or a notification since).
        let ready = |q: &mut Queue| -> Option<Result<WaitOutcome>> {
            if q.dead {
                return Some(Err(DatError::of(Type::Abort)));
            }
            if q.broken {
                return Some(Err(ia::invalid_state()));
            }
            if !q.waitable {
                return Some(Err(DatError::state(Sub::EvdUnwaitable)));
            }
            if q.events.len() >= threshold && (ready_at_entry || q.notified != notified_at_entry) {
                let ev = q.events.pop_front()?;
                return Some(Ok(WaitOutcome::Event(ev, q.events.len())));
            }
            None
        };
        let r = wait::wait_phased(&self.waiters, sleep, held, |sleep_next| {
            if let Some(cq) = cq {
                // What is queued comes before anything still in the CQ: no
                // poll (and no engine run) while it is enough, unless the
                // transport has data to move.
                {
                    let mut q = lock_anyway(&self.q);
                    if !self.must_poll(&q) {
                        if let Some(r) = ready(&mut q) {
                            return Some(r);
                        }
                    }
                }
                self.fill();
                if sleep_next {
                    // What that poll brought may be enough: then no arm and
                    // no second poll (whose engine run would send, alone,
                    // the acknowledgement the next post would carry).
                    if let Some(r) = ready(&mut lock_anyway(&self.q)) {
                        return Some(r);
                    }
                    // Only a sleep needs the notification: arming while
                    // spinning would read the eventfd on every poll, and
                    // the completions the next poll pushes would write it.
                    // This thread is the one that consumes notifications
                    // (what it takes is in the queue it looks at next).
                    cq.clear_notification();
                    cleared.set(true);
                    cq.arm(false);
                    self.fill();
                }
            } else {
                // (Connection events come from the transport's engine,
                // which runs on arrival.)
                let now = self.seq.load(Ordering::Acquire);
                if seen == Some(now) {
                    return None;
                }
                seen = Some(now);
            }
            ready(&mut lock_anyway(&self.q))
        });
        if let Some(cq) = cq.filter(|_| declared.get()) {
            cq.sleeping(false);
        }
        if let Some(cq) = cq.filter(|_| cleared.get()) {
            cq.release_notifications();
        }
        let mut q = lock_anyway(&self.q);
        q.waiter = false;
        let out = match r {
            Ok(outcome) => outcome,
            Err(Wake::TimedOut) => Ok(WaitOutcome::Timeout(q.events.len())),
            Err(Wake::Interrupted) => Err(DatError::of(Type::InterruptedCall)),
        };
        drop(q);
        if let Ok(WaitOutcome::Event(ev, _)) = &out {
            release(ev);
        }
        out
    }

    // ─────────────────────────── completion streams ───────────────────────────

    /// The transport CQ (EVDs with DTO or RMR-bind flags).
    pub fn cq(&self) -> Option<Arc<dyn CompletionQueue>> {
        self.cq.clone()
    }

    /// Moves completions from the CQ into the event queue (as many as fit),
    /// then the deferred events once the CQ is empty. Runs the transport's
    /// engines (no thread hop); called with no lock held.
    pub(crate) fn fill(&self) {
        if let Some(cq) = &self.cq {
            self.fill_then(cq, |_| ());
        }
    }

    /// [`Evd::fill`], then `last` on the queue under the lock of the final
    /// step (`None` if the EVD died first). The transport's engines run
    /// first, with no lock held; completions are then taken from the CQ
    /// and queued as events under the queue's lock, in one step: two
    /// threads filling at once (a CNO waiter, a post that needs a request
    /// slot, the EVD's own waiter or poller) cannot reorder them, nor can
    /// one hold completions the other's last look misses (it would then
    /// sleep through them: they are neither in the CQ nor queued yet).
    fn fill_then<T>(
        &self,
        cq: &Arc<dyn CompletionQueue>,
        last: impl FnOnce(&mut Queue) -> T,
    ) -> Option<T> {
        let mut wcs = [Wc::BLANK; TAKE_BATCH];
        let mut got = 0;
        if !self.cq_passive {
            cq.progress();
        }
        let out = loop {
            let mut guard = lock_anyway(&self.q);
            let q = &mut *guard;
            if q.dead {
                break None;
            }
            if self.take_step(cq.as_ref(), q, &mut wcs, &mut got) {
                continue;
            }
            break Some(last(q));
        };
        if !self.cq_passive {
            cq.polled(got);
        }
        out
    }

    /// `dat_evd_dequeue` of an EVD whose CQ needs no progress calls (the
    /// device moves the data itself): one look under the lock, polling the
    /// CQ only when nothing is queued, for a few completions; the first
    /// becomes the event returned, the others are queued.
    #[inline]
    fn dequeue_passive(&self, cq: &dyn CompletionQueue) -> Result<Event> {
        let mut q = self.live_queue()?;
        if q.broken {
            return Err(ia::invalid_state());
        }
        if q.waiter {
            return Err(DatError::state(Sub::EvdWaiter));
        }
        if let Some(ev) = q.events.pop_front() {
            drop(q);
            release(&ev);
            return Ok(ev);
        }
        if !q.deferred.is_empty() {
            // Deferred events go behind what the CQ holds: the full step.
            let mut wcs = [Wc::BLANK; TAKE_BATCH];
            let mut got = 0;
            while self.take_step(cq, &mut q, &mut wcs, &mut got) {}
            let ev = q.events.pop_front().ok_or(DatError::of(Type::QueueEmpty))?;
            drop(q);
            release(&ev);
            return Ok(ev);
        }
        let mut wcs = [Wc::BLANK; DEQUEUE_BATCH];
        let room = q.qlen.min(wcs.len());
        let mut first = None;
        loop {
            let n = cq.take(&mut wcs[..room]);
            self.queue_taken(&mut q, &wcs[..n], &mut first);
            // (All suppressed and the CQ may hold more: look again.)
            if first.is_some() || n < room {
                break;
            }
        }
        first.ok_or(DatError::of(Type::QueueEmpty))
    }

    /// Translates completions taken from the CQ: the first event into
    /// `first` (its slot given back), the others queued.
    #[inline]
    fn queue_taken(&self, q: &mut Queue, wcs: &[Wc], first: &mut Option<Event>) {
        for wc in wcs {
            let Some((mut ev, notify, ep)) = self.translate(q, wc) else {
                continue;
            };
            ev.evd = self.handle;
            let take = first.is_none();
            if take {
                // Its slot goes back now: the event is the consumer's.
                match ev.credit {
                    Credit::Request(_) => ep.release(WorkQueue::Request),
                    Credit::Recv(_) => ep.release(WorkQueue::Receive),
                    _ => release(&ev),
                }
            }
            if notify {
                q.notified = q.notified.wrapping_add(1);
            }
            if take {
                *first = Some(ev);
            } else if q.events.len() < q.qlen {
                q.events.push_back(ev);
            }
        }
    }

    /// The event of a completion on this EVD's CQ (queue lock held), whether
    /// it is a notification event, and the EP it belongs to; `None` for a
    /// queue pair or direction this EVD does not take, and for a successful
    /// SUPPRESS post.
    #[inline(always)]
    fn translate<'q>(&self, q: &'q Queue, wc: &Wc) -> Option<(Event, bool, &'q Arc<Ep>)> {
        let s = q.streams.get(wc.qp)?;
        let queue = if wc.op == WcOp::Recv {
            WorkQueue::Receive
        } else {
            WorkQueue::Request
        };
        let attached = match queue {
            WorkQueue::Receive => s.recv,
            WorkQueue::Request => s.request,
        };
        if !attached {
            return None;
        }
        let (ev, notify) = s.ep.translate(wc, queue)?;
        Some((ev, notify, &s.ep))
    }

    /// One step of moving completions into the queue (its lock held): what
    /// fits of the CQ's, at most a batch, each translated into an event;
    /// then, once the CQ is empty, the deferred events. True if another
    /// step is needed (the CQ may hold more); `got` counts what was taken.
    fn take_step(
        &self,
        cq: &dyn CompletionQueue,
        q: &mut Queue,
        wcs: &mut [Wc],
        got: &mut usize,
    ) -> bool {
        let room = q.qlen.saturating_sub(q.events.len()).min(wcs.len());
        let n = cq.take(&mut wcs[..room]);
        *got += n;
        // (No `changed()`: a waiter on an EVD with a CQ fills and looks at
        // the queue itself; only waiters without one read `seq`.)
        for wc in &wcs[..n] {
            if let Some((mut ev, notify, _)) = self.translate(q, wc) {
                ev.evd = self.handle;
                if q.events.len() < q.qlen {
                    q.events.push_back(ev);
                    if notify {
                        q.notified = q.notified.wrapping_add(1);
                    }
                }
            }
        }
        if room > 0 && n == room {
            return true;
        }
        // Deferred events go behind every completion in the CQ (a
        // completion pushed since the take came before them: whoever
        // queued one saw the completions of the requests before it).
        if q.deferred.is_empty() || !cq.has_completions() {
            while q.events.len() < q.qlen {
                let Some(mut ev) = q.deferred.pop_front() else {
                    break;
                };
                ev.evd = self.handle;
                q.events.push_back(ev);
                q.notified = q.notified.wrapping_add(1);
            }
            false
        } else {
            room > 0
        }
    }

    /// Queues a provider event behind the completions already in the CQ
    /// (§3.4: completions before the DISCONNECTED event); without a CQ it
    /// is queued at once.
    pub(crate) fn post_after_completions(&self, ev: Event, notify: bool) {
        if self.cq.is_none() {
            self.post_provider_event(ev, notify);
            return;
        }
        let Ok(mut q) = self.live_queue() else {
            return;
        };
        q.deferred.push_back(ev);
        let wake = q.waiter;
        let cno = if !wake && q.enabled {
            q.cno.clone()
        } else {
            None
        };
        self.changed();
        drop(q);
        if wake {
            self.waiters.notify();
        }
        if let Some(c) = cno {
            c.trigger(self.handle);
        }
    }

    /// A queue pair of `ep` feeds the CQ (one direction per call).
    pub(crate) fn attach(&self, qp: QpNum, ep: &Arc<Ep>, queue: WorkQueue, depth: u32) {
        let total = {
            let mut q = lock_anyway(&self.q);
            let s = q.streams.get_or_insert(qp, || Stream {
                ep: ep.clone(),
                recv: false,
                request: false,
                recv_depth: 0,
                request_depth: 0,
            });
            match queue {
                WorkQueue::Receive => {
                    s.recv = true;
                    s.recv_depth = depth;
                }
                WorkQueue::Request => {
                    s.request = true;
                    s.request_depth = depth;
                }
            }
            let extra: u64 = q
                .streams
                .values()
                .map(|s| u64::from(s.recv_depth) + u64::from(s.request_depth))
                .sum();
            extra + q.qlen as u64
        };
        // Every completion in the CQ holds one of its EP's slots: a CQ as
        // deep as all slots (plus the EVD) never overruns.
        if let Some(cq) = &self.cq {
            let want = u32::try_from(total).unwrap_or(u32::MAX);
            if cq.depth() < want {
                let _ = cq.resize(want);
            }
        }
    }

    /// The queue pair no longer feeds this EVD; its later completions are dropped.
    pub(crate) fn detach(&self, qp: QpNum) {
        lock_anyway(&self.q).streams.remove(qp);
    }

    /// Room for one more event (a connection request is refused otherwise).
    pub(crate) fn has_room(&self) -> bool {
        self.live_queue()
            .is_ok_and(|q| q.events.len() + q.deferred.len() < q.qlen)
    }

    /// Records the completion flags of an EP stream feeding this EVD.
    pub(crate) fn set_stream_flags(&self, ep: Handle, queue: WorkQueue, flags: u32) {
        lock_anyway(&self.q).stream_flags.insert((ep, queue), flags);
    }

    /// Forgets an EP stream.
    pub(crate) fn clear_stream_flags(&self, ep: Handle, queue: WorkQueue) {
        lock_anyway(&self.q).stream_flags.remove(&(ep, queue));
    }

    /// Whether a new stream with `flags` may join (only violations that
    /// involve an UNSIGNALLED receive stream are refused, §3.5).
    pub(crate) fn sharing_ok(&self, flags: u32, queue: WorkQueue) -> bool {
        let unsig = |f: u32| f & COMPLETION_UNSIGNALLED != 0;
        let q = lock_anyway(&self.q);
        q.stream_flags.iter().all(|(&(_, other), &f)| {
            let joins_unsignalled_recv = queue == WorkQueue::Receive && unsig(flags) && !unsig(f);
            let meets_unsignalled_recv = other == WorkQueue::Receive && unsig(f) && !unsig(flags);
            !joins_unsignalled_recv && !meets_unsignalled_recv
        })
    }

    /// With a CNO attached, the CQ's notifications trigger it (nobody may
    /// be polling the CQ).
    fn hook_cno(self: &Arc<Self>, attached: bool) {
        let Some(cq) = &self.cq else {
            return;
        };
        if !attached {
            cq.on_notify(None);
            return;
        }
        let me = Arc::downgrade(self);
        cq.on_notify(Some(Arc::new(move || {
            if let Some(evd) = me.upgrade() {
                evd.cq_notified();
            }
        })));
        cq.arm(false);
    }

    /// The CQ's armed notification fired: trigger the CNO unless a waiter
    /// has the event, and arm again (without consuming the notification:
    /// a thread sleeping on the CQ wakes on it).
    fn cq_notified(&self) {
        let cno = {
            let q = lock_anyway(&self.q);
            if q.dead || q.waiter || !q.enabled {
                None
            } else {
                q.cno.clone()
            }
        };
        if let Some(cq) = &self.cq {
            cq.arm(false);
        }
        if let Some(c) = cno {
            c.trigger(self.handle);
        }
    }

    /// `dat_evd_enable` / `dat_evd_disable`.
    pub fn set_enabled(&self, enabled: bool) -> Result<()> {
        self.live_queue()?.enabled = enabled;
        Ok(())
    }

    /// `dat_evd_set_unwaitable` / `dat_evd_clear_unwaitable`. Making the EVD
    /// unwaitable wakes a blocked waiter, which returns `DAT_INVALID_STATE`.
    pub fn set_waitable(&self, waitable: bool) -> Result<()> {
        let mut q = self.live_queue()?;
        q.waitable = waitable;
        if !waitable {
            self.changed();
            drop(q);
            self.waiters.notify();
        }
        Ok(())
    }

    /// `dat_evd_resize`: grows, or shrinks when the queued events fit.
    pub fn resize(&self, min_qlen: i32) -> Result<()> {
        if min_qlen <= 0 {
            self.check_alive()?;
            return Err(DatError::invalid(Input::EvdMinQlen));
        }
        if min_qlen > self.ia.limits.max_evd_qlen {
            self.check_alive()?;
            return Err(DatError::resources(Sub::ResourceTevd));
        }
        let mut q = self.live_queue()?;
        let new = usize::try_from(min_qlen).map_err(|_| DatError::invalid(Input::EvdMinQlen))?;
        if new < q.events.len() {
            return Err(ia::invalid_state());
        }
        q.events
            .resize(new)
            .map_err(|_| DatError::resources(Sub::ResourceMemory))?;
        q.qlen = new;
        Ok(())
    }

    /// `dat_evd_modify_cno`: attach, replace or (with NULL) detach the CNO.
    pub fn modify_cno(self: &Arc<Self>, cno: Handle) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if !handle::is_live(self.handle) {
            return Err(invalid());
        }
        let new = if cno.is_null() {
            None
        } else {
            let c = handle::expect::<Cno>(cno.addr(), Sub::HandleCno)?;
            ia::same_ia(&c.ia, &self.ia, Sub::HandleCno)?;
            Some(c.arc())
        };
        let old = {
            let mut q = self.live_queue()?;
            if q.cno.as_ref().map(|c| c.handle) == new.as_ref().map(|c| c.handle) {
                return Ok(());
            }
            std::mem::replace(&mut q.cno, new.clone())
        };
        if let Some(o) = &old {
            st.drop_use(o.handle);
            o.detach(&**self);
        }
        if let Some(n) = &new {
            st.add_use(n.handle);
            n.attach(self);
        }
        self.hook_cno(new.is_some());
        Ok(())
    }

    /// `dat_evd_free`: refused while a stream feeds the EVD, or for the IA's
    /// own async EVD. A blocked waiter gets `DAT_ABORT`; when this was the
    /// last EVD of its CNO, the CNO's waiters and agent are released.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if self.ia.is_own_async_evd(self.handle) {
            return Err(DatError::state(Sub::EvdInUse));
        }
        if st.users(self.handle) > 0 {
            return Err(DatError::state(Sub::EvdInUse));
        }
        st.remove(self.handle, Sub::Handle1)?;
        let cno = lock_anyway(&self.q).cno.clone();
        let cno_left = cno.as_ref().map(|c| st.drop_use(c.handle));
        drop(st);
        self.destroy();
        if let (Some(c), Some(0)) = (cno, cno_left) {
            c.release_waiters(false);
        }
        Ok(())
    }

    /// Marks the EVD dead, drops its events, detaches it from its CNO and
    /// wakes a blocked waiter (which returns `DAT_ABORT`).
    pub(crate) fn destroy(&self) {
        let cno = {
            let mut q = lock_anyway(&self.q);
            q.dead = true;
            q.events.clear();
            q.deferred.clear();
            q.streams.clear();
            self.changed();
            q.cno.take()
        };
        self.waiters.notify();
        if let Some(c) = cno {
            c.detach(self);
        }
        if let Some(cq) = &self.cq {
            cq.on_notify(None);
        }
    }

    /// True if an arriving event would notify the CNO now and one is queued
    /// (used by `dat_cno_wait` at entry: a pending event counts as a trigger).
    pub(crate) fn has_notifiable_event(&self) -> bool {
        let q = lock_anyway(&self.q);
        let pending = !q.events.is_empty() || !q.deferred.is_empty();
        !q.dead && q.enabled && !q.waiter && pending
    }

    /// Leaves the queue lock poisoned, as a panic inside an EVD call would.
    #[cfg(test)]
    pub(crate) fn poison_for_test(&self) {
        std::thread::scope(|s| {
            let _ = s
                .spawn(|| {
                    let _q = lock_anyway(&self.q);
                    panic!("poisoning the queue lock");
                })
                .join();
        });
    }
}

impl EpEvd for Evd {
    fn handle(&self) -> Handle {
        self.handle
    }

    fn cq(&self) -> Option<Arc<dyn CompletionQueue>> {
        Evd::cq(self)
    }

    fn attach(&self, qp: QpNum, ep: &Arc<Ep>, queue: WorkQueue, depth: u32) {
        Evd::attach(self, qp, ep, queue, depth);
    }

    fn detach(&self, qp: QpNum) {
        Evd::detach(self, qp);
    }

    fn set_stream_flags(&self, ep: Handle, queue: WorkQueue, flags: u32) {
        Evd::set_stream_flags(self, ep, queue, flags);
    }

    fn clear_stream_flags(&self, ep: Handle, queue: WorkQueue) {
        Evd::clear_stream_flags(self, ep, queue);
    }

    fn sharing_ok(&self, flags: u32, queue: WorkQueue) -> bool {
        Evd::sharing_ok(self, flags, queue)
    }

    fn post_after_completions(&self, ev: Event, notify: bool) {
        Evd::post_after_completions(self, ev, notify);
    }
}

impl crate::object::srq::Feeder for Evd {
    fn fill(&self) {
        Evd::fill(self);
    }
}

impl CnoEvd for Evd {
    fn handle(&self) -> Handle {
        self.handle
    }

    fn cq(&self) -> Option<Arc<dyn CompletionQueue>> {
        Evd::cq(self)
    }

    fn fill(&self) {
        Evd::fill(self);
    }

    fn has_notifiable_event(&self) -> bool {
        Evd::has_notifiable_event(self)
    }
}

impl AsyncSink for Evd {
    fn supplied(h: Handle) -> Option<Arc<Evd>> {
        let evd = handle::get::<Evd>(h.addr())
            .filter(|e| e.flags & EVD_ASYNC_FLAG != 0 && e.is_alive())?;
        Some(evd.arc())
    }

    fn create(ia: &Arc<Ia>, qlen: i32) -> Result<Arc<Evd>> {
        Evd::create_locked(ia, &mut ia.state(), qlen, None, EVD_ASYNC_FLAG)
    }

    fn handle(&self) -> Handle {
        self.handle
    }

    fn post(&self, ev: Event) {
        self.post_async_event(ev);
    }
}

/// Gives back the DTO slot a dequeued event held.
#[inline]
fn release(ev: &Event) {
    let (h, queue) = match ev.credit {
        Credit::None => return,
        Credit::Request(h) => (h, WorkQueue::Request),
        Credit::Recv(h) => (h, WorkQueue::Receive),
        Credit::Srq(h) => {
            if let Some(s) = handle::get::<crate::object::srq::Srq>(h.addr()) {
                s.release();
            }
            return;
        }
    };
    if let Some(ep) = handle::get::<Ep>(h.addr()) {
        ep.release(queue);
    }
}

/// Looks up an EVD by handle, `DAT_INVALID_HANDLE` otherwise. Lock-free; a
/// freed EVD's handle is retired before the EVD dies, and each operation
/// re-checks under its own queue lock.
#[inline]
pub fn lookup(addr: usize) -> Result<Ref<Evd>> {
    handle::get::<Evd>(addr).ok_or_else(invalid)
}
