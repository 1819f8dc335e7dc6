//! Event Dispatcher: a bounded event queue with at most one direct waiter,
//! optionally feeding a CNO.
//!
//! Locking: the queue has its own mutex and condition variable (the hot
//! path). Structural changes (CNO association, free) first take the IA lock,
//! then the queue lock. A CNO is triggered only after the queue lock has
//! been released.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{DatError, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Object};
use crate::object::event::{self, Event};
use crate::object::ia::{self, AsyncEvd, Ia, IaState};
use crate::object::Cno;
use crate::transport::{Blocker, Wake};

/// `DAT_EVD_SOFTWARE_FLAG`.
pub const EVD_SOFTWARE_FLAG: u32 = 0x001;
/// `DAT_EVD_ASYNC_FLAG`.
pub const EVD_ASYNC_FLAG: u32 = 0x100;

/// `DAT_EVD_STATE_*` bands.
pub const STATE_ENABLED: u32 = 0x01;
pub const STATE_DISABLED: u32 = 0x02;
pub const STATE_WAITABLE: u32 = 0x04;
pub const STATE_UNWAITABLE: u32 = 0x08;

/// `DAT_TIMEOUT_INFINITE`.
pub const TIMEOUT_INFINITE: u32 = u32::MAX;

struct Queue {
    events: VecDeque<Event>,
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
    /// EP completion streams that allow only threshold 1 (UNSIGNALLED or
    /// SOLICITED_WAIT); maintained by the endpoint layer.
    threshold_one_streams: usize,
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
pub struct Evd {
    /// Its handle.
    pub handle: Handle,
    /// The IA that created it.
    pub ia: Arc<Ia>,
    /// Creation flags, verbatim.
    pub flags: u32,
    q: Mutex<Queue>,
    blocker: Blocker,
}

fn invalid() -> DatError {
    DatError::handle(Sub::Handle1)
}

impl Evd {
    /// `dat_evd_create`. Checks in the reference order: qlen, CNO, flags.
    pub fn create(ia: &Arc<Ia>, min_qlen: i32, cno: Handle, flags: u32) -> Result<Arc<Evd>> {
        if min_qlen <= 0 {
            return Err(DatError::arg(2));
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
            if !st.is_live(c.handle) {
                return Err(DatError::handle(Sub::HandleCno));
            }
            Some(c)
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
        let qlen = usize::try_from(qlen).map_err(|_| DatError::arg(2))?;
        let res = handle::reserve(ia.provider_word)?;
        let evd = Arc::new(Evd {
            handle: res.handle(),
            ia: ia.clone(),
            flags,
            q: Mutex::new(Queue {
                events: VecDeque::new(),
                qlen,
                enabled: true,
                waitable: true,
                cno: cno.clone(),
                waiter: false,
                dead: false,
                broken: false,
                threshold_one_streams: 0,
            }),
            blocker: Blocker::new(),
        });
        if let Some(c) = &cno {
            st.add_use(c.handle);
            c.attach(&evd);
        }
        st.insert(evd.handle, Object::Evd(evd.clone()));
        res.publish(Object::Evd(evd.clone()));
        Ok(evd)
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn live_queue(&self) -> Result<MutexGuard<'_, Queue>> {
        let q = self.queue();
        if q.dead {
            Err(invalid())
        } else {
            Ok(q)
        }
    }

    fn check_alive(&self) -> Result<()> {
        self.live_queue().map(|_| ())
    }

    /// Not freed and its IA not closed.
    pub fn is_alive(&self) -> bool {
        !self.queue().dead
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
            return Err(DatError::arg(1));
        }
        if event_number != event::SOFTWARE {
            self.check_alive()?;
            return Err(DatError::arg(2));
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
        let mut q = self.queue();
        if q.dead {
            return;
        }
        if q.events.len() >= q.qlen {
            q.broken = true;
            self.blocker.wake_all();
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
            if software {
                return Err(DatError::of(Type::QueueFull));
            }
            let (number, about, reason) = ia::overflow_event(self.handle);
            self.ia.post_async(number, about, reason);
            return Err(DatError::of(Type::QueueFull));
        }
        ev.evd = self.handle;
        q.events.push_back(ev);
        let mut trigger = None;
        if notify {
            if q.waiter {
                self.blocker.wake_all();
            } else if q.enabled {
                trigger = q.cno.clone();
            }
        }
        drop(q);
        if let Some(cno) = trigger {
            cno.trigger(self.handle);
        }
        Ok(())
    }

    /// `dat_evd_dequeue`.
    pub fn dequeue(&self) -> Result<Event> {
        let mut q = self.live_queue()?;
        if q.broken {
            return Err(ia::invalid_state());
        }
        if q.waiter {
            return Err(DatError::state(Sub::EvdWaiter));
        }
        q.events.pop_front().ok_or(DatError::of(Type::QueueEmpty))
    }

    /// `dat_evd_wait`: succeed once at least `threshold` events are queued.
    pub fn wait(&self, timeout_us: u32, threshold: i32) -> Result<WaitOutcome> {
        let mut q = self.live_queue()?;
        let threshold = usize::try_from(threshold)
            .ok()
            .filter(|t| *t >= 1 && *t <= q.qlen)
            .ok_or(DatError::arg(3))?;
        if q.broken {
            return Err(ia::invalid_state());
        }
        if !q.waitable {
            return Err(DatError::state(Sub::EvdUnwaitable));
        }
        if q.waiter {
            return Err(DatError::state(Sub::EvdWaiter));
        }
        if threshold > 1 && q.threshold_one_streams > 0 {
            return Err(DatError::state(Sub::EvdConfigThreshold));
        }
        let deadline = (timeout_us != TIMEOUT_INFINITE)
            .then(|| Instant::now() + Duration::from_micros(u64::from(timeout_us)));
        q.waiter = true;
        let outcome = loop {
            if q.dead {
                break Err(DatError::of(Type::Abort));
            }
            if q.broken {
                break Err(ia::invalid_state());
            }
            if !q.waitable {
                break Err(DatError::state(Sub::EvdUnwaitable));
            }
            if q.events.len() >= threshold {
                let ev = q
                    .events
                    .pop_front()
                    .ok_or(DatError::of(Type::InternalError))?;
                break Ok(WaitOutcome::Event(ev, q.events.len()));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break Ok(WaitOutcome::Timeout(q.events.len()));
            }
            let ticket = self.blocker.ticket();
            drop(q);
            let wake = self.blocker.wait(ticket, deadline);
            q = self.queue();
            if wake == Wake::Interrupted {
                break Err(DatError::of(Type::InterruptedCall));
            }
        };
        q.waiter = false;
        outcome
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
            self.blocker.wake_all();
        }
        Ok(())
    }

    /// `dat_evd_resize`: grows, or shrinks when the queued events fit.
    pub fn resize(&self, min_qlen: i32) -> Result<()> {
        if min_qlen <= 0 {
            self.check_alive()?;
            return Err(DatError::arg(2));
        }
        if min_qlen > self.ia.limits.max_evd_qlen {
            self.check_alive()?;
            return Err(DatError::resources(Sub::ResourceTevd));
        }
        let mut q = self.live_queue()?;
        let new = usize::try_from(min_qlen).map_err(|_| DatError::arg(2))?;
        if new < q.events.len() {
            return Err(ia::invalid_state());
        }
        q.qlen = new;
        Ok(())
    }

    /// `dat_evd_modify_cno`: attach, replace or (with NULL) detach the CNO.
    pub fn modify_cno(self: &Arc<Self>, cno: Handle) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if !st.is_live(self.handle) {
            return Err(invalid());
        }
        let new = if cno.is_null() {
            None
        } else {
            let c = handle::expect::<Cno>(cno.addr(), Sub::HandleCno)?;
            ia::same_ia(&c.ia, &self.ia, Sub::HandleCno)?;
            if !st.is_live(c.handle) {
                return Err(DatError::handle(Sub::HandleCno));
            }
            Some(c)
        };
        let old = {
            let mut q = self.queue();
            if q.cno.as_ref().map(|c| c.handle) == new.as_ref().map(|c| c.handle) {
                return Ok(());
            }
            std::mem::replace(&mut q.cno, new.clone())
        };
        if let Some(o) = &old {
            st.drop_use(o.handle);
            o.detach(self);
        }
        if let Some(n) = &new {
            st.add_use(n.handle);
            n.attach(self);
        }
        Ok(())
    }

    /// `dat_evd_free`: refused while a stream feeds the EVD, or for the IA's
    /// own async EVD. A blocked waiter gets `DAT_ABORT`.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        if !st.is_live(self.handle) {
            return Err(invalid());
        }
        if let AsyncEvd::Created(own) = &st.async_evd {
            if own.handle == self.handle {
                return Err(DatError::state(Sub::EvdInUse));
            }
        }
        if st.users(self.handle) > 0 {
            return Err(DatError::state(Sub::EvdInUse));
        }
        let cno = self.queue().cno.clone();
        let cno_left = cno.as_ref().map(|c| st.drop_use(c.handle));
        st.remove(self.handle);
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
            let mut q = self.queue();
            q.dead = true;
            q.events.clear();
            self.blocker.wake_all();
            q.cno.take()
        };
        if let Some(c) = cno {
            c.detach(self);
        }
    }

    /// True if an arriving event would notify the CNO now and one is queued
    /// (used by `dat_cno_wait` at entry: a pending event counts as a trigger).
    pub(crate) fn has_notifiable_event(&self) -> bool {
        let q = self.queue();
        !q.dead && q.enabled && !q.waiter && !q.events.is_empty()
    }

    /// Adds or removes an EP completion stream that restricts waits to threshold 1.
    pub fn set_threshold_one_stream(&self, add: bool) {
        let mut q = self.queue();
        if add {
            q.threshold_one_streams += 1;
        } else {
            q.threshold_one_streams = q.threshold_one_streams.saturating_sub(1);
        }
    }
}

/// Looks up an EVD by handle, `DAT_INVALID_HANDLE` otherwise. A freed EVD's
/// handle is retired before the EVD dies; each operation re-checks under its
/// own queue lock, so this takes no lock itself.
pub fn lookup(addr: usize) -> Result<Arc<Evd>> {
    handle::get::<Evd>(addr).ok_or_else(invalid)
}
