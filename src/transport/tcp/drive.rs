//! Who runs a queue pair's engine. One lock per queue pair (`Inner`):
//! posting threads take it to write FPDUs themselves; pollers, the progress
//! thread and `Device::progress` only try it. The progress thread hands a
//! queue pair it finds locked to the holder (`kick`), which runs the engine
//! again when it lets go (`QpGuard`).

use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::state::{phase_deadline, sock_of, Inner, IwarpQp};
use crate::sync::lock_anyway as lock;
use crate::transport::soft::cq::Feeder;
use crate::transport::soft::progress::{self, Reg, Run, Source};

/// A queue pair's lock held by an application thread (or a test): when it
/// is let go, the engine runs for what the progress thread handed over
/// meanwhile ([`IwarpQp::after_unlock`]).
pub(super) struct QpGuard<'a> {
    pub(super) qp: &'a IwarpQp,
    pub(super) inner: Option<MutexGuard<'a, Inner>>,
    /// Runs `after_unlock` on drop (unset by `into_raw`).
    pub(super) check: bool,
    /// Only looked ([`IwarpQp::look`]): on drop, a run handed over
    /// meanwhile goes back to the progress thread.
    pub(super) look: bool,
}

impl<'a> QpGuard<'a> {
    /// The plain lock: the caller lets go and calls `after_unlock` itself.
    pub(super) fn into_raw(mut self) -> MutexGuard<'a, Inner> {
        self.check = false;
        self.look = false;
        self.inner
            .take()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl std::ops::Deref for QpGuard<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        self.inner
            .as_deref()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl std::ops::DerefMut for QpGuard<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        self.inner
            .as_deref_mut()
            .expect("a QpGuard holds its lock until dropped")
    }
}

impl Drop for QpGuard<'_> {
    fn drop(&mut self) {
        drop(self.inner.take());
        if self.check {
            self.qp.after_unlock();
        } else if self.look {
            self.qp.hand_back();
        }
    }
}

impl IwarpQp {
    /// Steps the engine with the lock held, lets go, reports the event;
    /// then runs what the progress thread handed over meanwhile.
    /// `thorough`: see [`IwarpQp::pump_rx`].
    pub(super) fn run(&self, g: QpGuard<'_>, thorough: bool) -> bool {
        let any = self.run_step(g.into_raw(), thorough, false);
        self.after_unlock();
        any
    }

    /// [`IwarpQp::run`] without taking over what was handed over.
    /// `defer_acks`: an application thread spinning on the queues steps.
    pub(super) fn run_step(
        &self,
        inner: MutexGuard<'_, Inner>,
        thorough: bool,
        defer_acks: bool,
    ) -> bool {
        let mut inner = inner;
        let (any, ev) = self.step(&mut inner, thorough, defer_acks);
        self.note_tx(&inner);
        self.watch(&inner);
        // A deadline of the phase (connect, accept, drain, close, receiver
        // not ready) stays scheduled: a timer that fired is gone, and a
        // registration keeps only its earliest time.
        if let Some((sock, at)) = phase_deadline(&inner) {
            sock.wake_at(at);
        }
        // Stopped at a budget (the rest is already there), or the phase
        // changed (setup took its bytes; what followed them is unread):
        // no new edge will say so, so the progress thread runs it again
        // (a budget left to a driving application thread is its own: it
        // polls again, and the progress thread gets it when it stops).
        let more = self.rx_more.load(Ordering::Relaxed) || self.tx_more.load(Ordering::Relaxed);
        if (more && !self.driven()) || ev.is_some() {
            if let Some(sock) = sock_of(&inner) {
                sock.wake_at(Instant::now());
            }
        }
        drop(inner);
        if let Some(ev) = ev {
            self.cm_event(ev);
        }
        self.run_hooks();
        any
    }

    /// The queue pair's lock, for any thread but the progress thread:
    /// what the progress thread hands over while it is held runs when it
    /// is let go.
    pub(super) fn hold(&self) -> QpGuard<'_> {
        QpGuard {
            qp: self,
            inner: Some(lock(&self.inner)),
            check: true,
            look: false,
        }
    }

    /// The lock for a caller that only looks (state, address, counts):
    /// such calls come from under the DAT layer's locks, even from within
    /// a connection event (the EP reads its local address as it takes
    /// ESTABLISHED). Running the engine when it lets go, as [`Self::hold`]
    /// does, could deliver the next event (the peer's close) into a lock
    /// its caller holds: so what the progress thread handed over meanwhile
    /// goes back to it ([`Self::hand_back`]).
    pub(super) fn look(&self) -> QpGuard<'_> {
        QpGuard {
            qp: self,
            inner: Some(lock(&self.inner)),
            check: false,
            look: true,
        }
    }

    /// [`IwarpQp::hold`] if nobody holds the lock (a poisoned lock is
    /// taken anyway: teardown must go on).
    pub(super) fn try_hold(&self) -> Option<QpGuard<'_>> {
        let g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(QpGuard {
            qp: self,
            inner: Some(g),
            check: true,
            look: false,
        })
    }

    /// Runs the notification hooks of the queue pair's completion queues
    /// that its completions fired (with no lock held).
    pub(super) fn run_hooks(&self) {
        self.send_cq.run_hook();
        if !Arc::ptr_eq(&self.send_cq, &self.recv_cq) {
            self.recv_cq.run_hook();
        }
    }

    /// After the lock was let go: runs the hooks the completions made
    /// under it fired, then what the progress thread handed over while it
    /// was held. Two loads, a fence and a load when there was nothing.
    pub(super) fn after_unlock(&self) {
        self.run_hooks();
        // Pairs with the fence in `Source::run`: either the progress
        // thread sees the lock free, or this thread sees its kick.
        fence(Ordering::SeqCst);
        if self.kick.load(Ordering::Relaxed) {
            self.run_kicked();
        }
    }

    /// After a look let go of the lock: a run the progress thread handed
    /// over meanwhile is scheduled on the progress thread at once (if the
    /// lock is taken again already, its holder sees the kick).
    pub(super) fn hand_back(&self) {
        // Pairs with the fence in `Source::run`, as in `after_unlock`.
        fence(Ordering::SeqCst);
        if !self.kick.load(Ordering::Relaxed) {
            return;
        }
        let g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let waker = sock_of(&g).and_then(|s| s.reg.as_ref()).map(Reg::waker);
        // Let go first: a run that found the lock still held would be
        // handed back here, with nobody left to see it.
        drop(g);
        if let Some(w) = waker {
            w.schedule(Instant::now());
        }
    }

    /// Runs the engine for as long as runs are handed over and the lock is
    /// free. False if a kick was left to another holder.
    pub(super) fn run_kicked(&self) -> bool {
        while self.kick.load(Ordering::Relaxed) {
            let g = match self.inner.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                // The holder sees the kick when it lets go.
                Err(std::sync::TryLockError::WouldBlock) => return false,
            };
            // Taken with the lock held: what arrived before it was set is
            // in the socket for this step to read.
            if self.kick.swap(false, Ordering::SeqCst) {
                self.run_step(g, true, false);
            } else {
                drop(g);
            }
            fence(Ordering::SeqCst);
        }
        true
    }
}

impl Feeder for IwarpQp {
    /// An application polls: runs the engine unless another thread is in
    /// (then that thread's step, or the one it was handed, covers it).
    fn progress(&self) -> bool {
        if progress::inherited(self.gen) {
            return false;
        }
        let Some(g) = self.try_hold() else {
            return false;
        };
        // Acknowledgements may wait for a spinner's next post or step; a
        // thread that sleeps posts nothing before it sleeps again.
        let any = self.run_step(g.into_raw(), false, true);
        self.after_unlock();
        any
    }

    /// Acknowledgements a spinner left for its next post and still unsent
    /// go now (the completion queue's check, on the progress thread).
    fn flush(&self) {
        if self.acks_left.load(Ordering::Relaxed) && !progress::inherited(self.gen) {
            self.kick.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            self.run_kicked();
        }
    }

    /// A queue started or stopped being driven by an application thread:
    /// the progress thread watches the socket only while none is.
    fn driven_changed(&self) {
        if progress::inherited(self.gen) {
            return;
        }
        let g = self.hold();
        self.watch(&g);
    }
}

impl Source for IwarpQp {
    /// Something arrived (or socket space, or a deadline came): run the
    /// engine now, or hand the run to the thread that holds the queue
    /// pair, which runs it when it lets go.
    fn run(&self) -> Run {
        if progress::inherited(self.gen) {
            return Run::default();
        }
        self.kick.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.run_kicked() {
            progress::note_handed();
            tracing::trace!(qp = self.num, "progress: handed to the holder");
        }
        // (What must run again, at once or at a deadline, the step that
        // saw it scheduled.)
        Run::default()
    }
}
