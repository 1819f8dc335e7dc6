//! Who runs a queue pair's engine. One lock per queue pair (`Inner`):
//! posting threads take it to write FPDUs themselves; pollers, the progress
//! thread and `Device::progress` only try it. The progress thread hands a
//! queue pair it finds locked to the holder (`kick`), which runs the engine
//! again when it lets go (`QpGuard`).

use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::{
    cm::{phase_deadline, sock_of},
    qp::{Inner, IwarpQp, QpGuard},
};
use crate::sync::lock_anyway as lock;
use crate::transport::soft::cq::Feeder;
use crate::transport::soft::progress::{self, Reg, Run, Source};

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

    /// Has the progress thread watch the socket for what only it would
    /// notice: nothing while an application thread drives the queue pair
    /// (it takes the input and pushes the output itself), else input, and
    /// output while bytes wait for socket space. (Acknowledgements left for
    /// a spinner's next post go with it, with its next step, or with the
    /// completion queue's check, `Feeder::flush`.)
    pub(super) fn watch(&self, inner: &Inner) {
        if let Some(sock) = sock_of(inner) {
            let driven = self.driven();
            sock.watch(!driven, !driven && self.tx_blocked.load(Ordering::Relaxed));
        }
    }

    /// Whether an application thread spins on one of its completion
    /// queues (and none sleeps there): it steps again in a moment.
    pub(super) fn spun(&self) -> bool {
        self.send_cq.spun() || self.recv_cq.spun()
    }

    /// Whether an application thread drives the queue pair (spins on or
    /// sleeps on one of its completion queues: [`Cq::driven`]).
    pub(super) fn driven(&self) -> bool {
        self.send_cq.driven() || self.recv_cq.driven()
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
