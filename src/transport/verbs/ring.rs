//! The work requests a queue has outstanding, by slot: a work request is
//! posted with its slot as the verbs work request id, and its completion
//! finds there what verbs does not say (the consumer's cookie, the length
//! of a send, the operation of a flushed request).
//!
//! A verbs work request id is `ring id << 32 | generation << 24 | slot`;
//! the device keeps its rings by id (lock-free lookup on the poll path).
//! The generation changes when the device is known to report no more of
//! what is outstanding (the queue pair was reset, or siw lost its flushes):
//! those requests are flushed here, and a late report of one is ignored.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::sync::lock_anyway;
use crate::transport::api::{Wc, WcOp, WcStatus};

#[derive(Clone, Copy)]
struct Slot {
    cookie: u64,
    ctx: u64,
    len: u64,
    op: WcOp,
    /// Posted, its completion not handed out yet.
    busy: bool,
    /// Posted with a completion of its own on success.
    signaled: bool,
    /// Unsignalled and done: a later request of the queue completed
    /// (verbs: everything posted before a completed request is done).
    implicit: bool,
    /// The ring's generation when it was posted.
    gen: u8,
}

pub(super) struct Ring {
    pub id: u32,
    /// Completions are handed out in posting order (a send queue: the DAT
    /// layer's, and verbs', rule), whatever order the device reports them
    /// in. siw completes a Send or RDMA Write posted after an RDMA Read
    /// before the Read's response is in.
    ordered: bool,
    /// A send queue's CQ (its `ibv_cq` address) and queue pair number.
    home: (usize, u32),
    /// The device will not report some requests still outstanding (siw
    /// loses a terminated queue pair's send queue, a reset queue pair
    /// reports nothing): [`Ring::orphan`].
    orphan: AtomicBool,
    /// Its queue pair is gone: the device forgets the ring once it is
    /// flushed.
    retired: AtomicBool,
    inner: Mutex<Inner>,
}

struct Inner {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Ordered: the outstanding slots in posting order. Otherwise: the
    /// slots completed and not yet handed out, in completion order.
    queue: VecDeque<u32>,
    /// A slot's completion, made when the device reported it, until it is
    /// handed out.
    ready: Vec<Option<Wc>>,
    gen: u8,
    /// Implicitly done requests taken off the front since the last
    /// completion handed out (its [`Wc::implicit`]).
    implicit: u32,
}

/// What a completion's slot held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Done {
    pub cookie: u64,
    pub ctx: u64,
    pub len: u64,
    pub op: WcOp,
}

const BLANK: Slot = Slot {
    cookie: 0,
    ctx: 0,
    len: 0,
    op: WcOp::Send,
    busy: false,
    signaled: true,
    implicit: false,
    gen: 0,
};

impl Ring {
    /// A ring of `depth` slots (allocated here, never on the post path);
    /// `ordered` for a send queue.
    pub fn new(id: u32, depth: u32, ordered: bool) -> Ring {
        Ring::with_home(id, depth, ordered, (0, 0))
    }

    /// The ring of a queue pair's send queue (`ordered`) or receive
    /// queue: queue pair `qp`, reporting to the CQ at `cq`.
    pub fn of_queue(id: u32, depth: u32, ordered: bool, cq: usize, qp: u32) -> Ring {
        Ring::with_home(id, depth, ordered, (cq, qp))
    }

    fn with_home(id: u32, depth: u32, ordered: bool, home: (usize, u32)) -> Ring {
        let depth = depth.max(1) as usize;
        Ring {
            id,
            ordered,
            home,
            orphan: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                slots: vec![BLANK; depth],
                free: (0..depth as u32).rev().collect(),
                queue: VecDeque::with_capacity(depth),
                ready: vec![None; depth],
                gen: 0,
                implicit: 0,
            }),
        }
    }

    /// The verbs work request id of `slot` in generation `gen`.
    fn wr_id(&self, gen: u8, slot: u32) -> u64 {
        u64::from(self.id) << 32 | u64::from(gen) << 24 | u64::from(slot)
    }

    /// Takes a slot for a work request and runs `post` with its verbs id,
    /// under the ring's lock (so posts keep their order); the slot is
    /// given back if `post` fails. `None`: no free slot. An unsignalled
    /// request (only on an ordered ring) is done once a later one of the
    /// ring completes.
    #[allow(clippy::too_many_arguments)]
    pub fn post<E>(
        &self,
        cookie: u64,
        ctx: u64,
        len: u64,
        op: WcOp,
        signaled: bool,
        post: impl FnOnce(u64) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        debug_assert!(signaled || self.ordered);
        let mut g = lock_anyway(&self.inner);
        let slot = g.free.pop()?;
        let gen = g.gen;
        let r = post(self.wr_id(gen, slot));
        if r.is_err() {
            g.free.push(slot);
            return Some(r);
        }
        g.slots[slot as usize] = Slot {
            cookie,
            ctx,
            len,
            op,
            busy: true,
            signaled,
            implicit: false,
            gen,
        };
        if self.ordered {
            // (Never grows: the queue holds at most every slot.)
            g.queue.push_back(slot);
        }
        Some(r)
    }

    /// The device completed the work request `wr_id`: its completion
    /// (`make` builds it from what the slot held) is handed out into `out`
    /// when its turn comes, with any after it that came early. Returns how
    /// many were written, and whether some that are due did not fit (they
    /// wait for [`Ring::drain`]). A work request id the ring does not know
    /// as outstanding is ignored.
    pub fn complete(
        &self,
        wr_id: u64,
        make: impl FnOnce(Done) -> Wc,
        out: &mut [Wc],
    ) -> (usize, bool) {
        let slot = (wr_id & SLOT_MASK) as usize;
        let gen = (wr_id >> 24) as u8;
        let mut g = lock_anyway(&self.inner);
        let Some(s) = g.slots.get(slot).copied() else {
            return (0, false);
        };
        if !s.busy || s.gen != gen || s.implicit || g.ready[slot].is_some() {
            return (0, false);
        }
        let done = Done {
            cookie: s.cookie,
            ctx: s.ctx,
            len: s.len,
            op: s.op,
        };
        // The common case: nothing waits before it (a receive queue with
        // none held back, a send queue whose oldest request this is, with
        // no unsignalled ones counted): handed out at once.
        let first = if self.ordered {
            g.queue.front() == Some(&(slot as u32))
        } else {
            g.queue.is_empty()
        };
        if first && !out.is_empty() {
            let mut wc = make(done);
            wc.implicit = std::mem::take(&mut g.implicit);
            out[0] = wc;
            g.slots[slot].busy = false;
            g.free.push(slot as u32);
            if !self.ordered {
                return (1, false);
            }
            g.queue.pop_front();
            // What came early behind it (siw) is due now.
            if g.queue.front().is_some_and(|&f| due(&g, f as usize)) {
                let (n, more) = drain_locked(&mut g, &mut out[1..]);
                return (1 + n, more);
            }
            return (1, false);
        }
        g.ready[slot] = Some(make(done));
        if !self.ordered {
            g.queue.push_back(slot as u32);
        } else {
            // The unsignalled requests posted before it are done.
            let Inner {
                slots,
                queue,
                ready,
                ..
            } = &mut *g;
            for &q in queue.iter() {
                let q = q as usize;
                if q == slot {
                    break;
                }
                let e = &mut slots[q];
                if !e.signaled && !e.implicit && ready[q].is_none() {
                    e.implicit = true;
                }
            }
        }
        drain_locked(&mut g, out)
    }

    /// The CQ (`ibv_cq` address) a send queue's ring reports to.
    pub fn cq(&self) -> usize {
        self.home.0
    }

    /// The device may report nothing more of the requests outstanding
    /// now (its queue pair was reset, or is in the error state on a device
    /// known to lose flushes): a new generation starts, and once the CQ's
    /// poller has taken what the device did report and seen the CQ empty,
    /// [`Ring::flush_rest`] flushes the rest. True if the ring was not
    /// marked yet and has requests outstanding (the caller counts it).
    pub fn orphan(&self) -> bool {
        let mut g = lock_anyway(&self.inner);
        g.gen = g.gen.wrapping_add(1);
        let waiting = g
            .slots
            .iter()
            .zip(&g.ready)
            .any(|(s, r)| s.busy && !s.implicit && r.is_none());
        waiting && !self.orphan.swap(true, Ordering::AcqRel)
    }

    /// Marks the ring of a queue pair that is gone.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Unmarks the ring; true if it was marked.
    pub fn unorphan(&self) -> bool {
        self.orphan.swap(false, Ordering::AcqRel)
    }

    pub fn is_orphan(&self) -> bool {
        self.orphan.load(Ordering::Acquire)
    }

    /// Completes every request of an earlier generation still
    /// outstanding as flushed (after those the device reported; in posting
    /// order on an ordered ring) and hands out what is due into `out`, as
    /// [`Ring::complete`]; unmarks the ring. The third value says whether
    /// the ring was marked.
    pub fn flush_rest(&self, out: &mut [Wc]) -> (usize, bool, bool) {
        let mut g = lock_anyway(&self.inner);
        let was = self.orphan.swap(false, Ordering::AcqRel);
        if was {
            let ordered = self.ordered;
            let Inner {
                slots,
                queue,
                ready,
                gen,
                ..
            } = &mut *g;
            for (i, s) in slots.iter().enumerate() {
                if !s.busy || s.gen == *gen || s.implicit || ready[i].is_some() {
                    continue;
                }
                ready[i] = Some(Wc {
                    wr_id: s.cookie,
                    ctx: s.ctx,
                    implicit: 0,
                    status: WcStatus::Flushed,
                    op: s.op,
                    byte_len: 0,
                    qp: self.home.1,
                    solicited: false,
                });
                if !ordered {
                    queue.push_back(i as u32);
                }
            }
        }
        let (n, more) = drain_locked(&mut g, out);
        (n, more, was)
    }

    /// Hands out the completions that are due (see [`Ring::complete`]).
    pub fn drain(&self, out: &mut [Wc]) -> (usize, bool) {
        drain_locked(&mut lock_anyway(&self.inner), out)
    }

    /// Work requests outstanding (posted, their completions not handed out).
    pub fn outstanding(&self) -> u32 {
        let g = lock_anyway(&self.inner);
        (g.slots.len() - g.free.len()) as u32
    }

    pub fn depth(&self) -> u32 {
        lock_anyway(&self.inner).slots.len() as u32
    }

    /// Grows to `depth` slots (never shrinks: slots in use stay put).
    pub fn grow(&self, depth: u32) {
        let mut g = lock_anyway(&self.inner);
        let old = g.slots.len() as u32;
        if depth > old {
            g.slots.resize(depth as usize, BLANK);
            g.ready.resize(depth as usize, None);
            let more = depth as usize - g.queue.len();
            g.queue.reserve(more);
            g.free.extend((old..depth).rev());
        }
    }

    /// Forgets every outstanding request (the queue was reset).
    #[cfg(test)]
    pub fn clear(&self) {
        let mut g = lock_anyway(&self.inner);
        let n = g.slots.len() as u32;
        g.free = (0..n).rev().collect();
        g.queue.clear();
        g.ready.iter_mut().for_each(|r| *r = None);
        g.slots.iter_mut().for_each(|s| *s = BLANK);
        g.gen = 0;
        g.implicit = 0;
    }
}

/// The slot bits of a work request id (below the generation).
const SLOT_MASK: u64 = 0xff_ffff;

/// Whether the request in `slot` is done (reported or implicitly).
#[inline]
fn due(g: &Inner, slot: usize) -> bool {
    g.slots[slot].implicit || g.ready[slot].is_some()
}

/// Moves the completions that are due from the queue's front into `out`;
/// implicitly done requests leave without one, counted in the next.
fn drain_locked(g: &mut Inner, out: &mut [Wc]) -> (usize, bool) {
    let mut n = 0;
    while let Some(&front) = g.queue.front() {
        let f = front as usize;
        if g.slots[f].implicit {
            g.implicit += 1;
        } else {
            let Some(mut wc) = g.ready[f] else {
                break;
            };
            if n == out.len() {
                return (n, true);
            }
            wc.implicit = std::mem::take(&mut g.implicit);
            out[n] = wc;
            n += 1;
            g.ready[f] = None;
        }
        let s = &mut g.slots[f];
        s.busy = false;
        s.implicit = false;
        g.queue.pop_front();
        g.free.push(front);
    }
    (n, false)
}

/// The ring id of a verbs work request id.
pub(super) fn ring_of(wr_id: u64) -> u32 {
    (wr_id >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(d: Done) -> Wc {
        Wc {
            wr_id: d.cookie,
            ctx: d.ctx,
            implicit: 0,
            status: WcStatus::Success,
            op: d.op,
            byte_len: d.len,
            qp: 1,
            solicited: false,
        }
    }

    fn post(r: &Ring, cookie: u64, op: WcOp) -> u64 {
        let mut id = 0;
        assert!(matches!(
            r.post(cookie, cookie + 1000, cookie * 100, op, true, |i| {
                id = i;
                Ok::<_, ()>(())
            }),
            Some(Ok(()))
        ));
        id
    }

    fn cookies(out: &[Wc]) -> Vec<u64> {
        out.iter().map(|w| w.wr_id).collect()
    }

    #[test]
    fn slots_carry_cookie_length_and_op_and_come_back() {
        let r = Ring::new(7, 2, false);
        let ids = [post(&r, 10, WcOp::RdmaRead), post(&r, 11, WcOp::Send)];
        assert!(r
            .post(12, 0, 0, WcOp::Send, true, |_| Ok::<_, ()>(()))
            .is_none());
        assert_eq!(r.outstanding(), 2);
        assert_eq!(ring_of(ids[1]), 7);
        let mut out = [Wc::BLANK; 2];
        assert_eq!(r.complete(ids[1], wc, &mut out), (1, false));
        assert_eq!(
            (out[0].wr_id, out[0].ctx, out[0].byte_len, out[0].op),
            (11, 1011, 1100, WcOp::Send)
        );
        // A second report of the same request is ignored.
        assert_eq!(r.complete(ids[1], wc, &mut out), (0, false));
        assert_eq!(
            r.post(13, 0, 0, WcOp::Send, true, |_| Err(())),
            Some(Err(()))
        );
        assert_eq!(r.outstanding(), 1);
        r.grow(4);
        assert_eq!((r.depth(), r.outstanding()), (4, 1));
        r.clear();
        assert_eq!(r.outstanding(), 0);
    }

    /// siw reports a Send and an RDMA Write posted after an RDMA Read
    /// before the Read: an ordered ring holds them back until the Read's
    /// completion, then hands all three out in posting order.
    #[test]
    fn an_ordered_ring_hands_out_in_posting_order() {
        let r = Ring::new(3, 8, true);
        let read = post(&r, 0, WcOp::RdmaRead);
        let send = post(&r, 1, WcOp::Send);
        let write = post(&r, 2, WcOp::RdmaWrite);
        let mut out = [Wc::BLANK; 4];
        assert_eq!(r.complete(send, wc, &mut out), (0, false));
        assert_eq!(r.complete(write, wc, &mut out), (0, false));
        assert_eq!(r.outstanding(), 3);
        assert_eq!(r.complete(read, wc, &mut out), (3, false));
        assert_eq!(cookies(&out[..3]), [0, 1, 2]);
        assert_eq!(r.outstanding(), 0);
    }

    fn post_unsignalled(r: &Ring, cookie: u64) -> u64 {
        let mut id = 0;
        assert!(matches!(
            r.post(cookie, 0, 8, WcOp::Send, false, |i| {
                id = i;
                Ok::<_, ()>(())
            }),
            Some(Ok(()))
        ));
        id
    }

    /// Unsignalled requests are done when a later one completes: they
    /// leave without a completion, counted in the next one handed out.
    #[test]
    fn unsignalled_requests_are_counted_in_the_next_completion() {
        let r = Ring::new(8, 8, true);
        let _ = post_unsignalled(&r, 1);
        let _ = post_unsignalled(&r, 2);
        let s = post(&r, 3, WcOp::Send);
        let mut out = [Wc::BLANK; 4];
        assert_eq!(r.complete(s, wc, &mut out), (1, false));
        assert_eq!((out[0].wr_id, out[0].ctx, out[0].implicit), (3, 1003, 2));
        assert_eq!(r.outstanding(), 0);
        // siw completes a Send posted after an RDMA Read before the Read:
        // the unsignalled Write before both is done, the Read is not.
        let _ = post_unsignalled(&r, 4);
        let read = post(&r, 5, WcOp::RdmaRead);
        let send = post(&r, 6, WcOp::Send);
        assert_eq!(r.complete(send, wc, &mut out), (0, false));
        assert_eq!(r.outstanding(), 2);
        assert_eq!(r.complete(read, wc, &mut out), (2, false));
        assert_eq!(cookies(&out[..2]), [5, 6]);
        assert_eq!((out[0].implicit, out[1].implicit), (1, 0));
        // An unsignalled request that fails completes itself.
        let _ = post_unsignalled(&r, 7);
        let bad = post_unsignalled(&r, 8);
        let failed = |d: Done| Wc {
            status: WcStatus::RemoteAccess,
            ..wc(d)
        };
        assert_eq!(r.complete(bad, failed, &mut out), (1, false));
        assert_eq!(
            (out[0].wr_id, out[0].status, out[0].implicit),
            (8, WcStatus::RemoteAccess, 1)
        );
        // A lost queue's unsignalled requests are flushed like the rest.
        let _ = post_unsignalled(&r, 9);
        assert!(r.orphan());
        assert_eq!(r.flush_rest(&mut out), (1, false, true));
        assert_eq!((out[0].wr_id, out[0].status), (9, WcStatus::Flushed));
        assert_eq!(r.outstanding(), 0);
    }

    /// What is due but does not fit waits for drain, in order.
    #[test]
    fn due_completions_that_do_not_fit_wait_for_drain() {
        let r = Ring::new(3, 8, true);
        let ids: Vec<u64> = (0..5).map(|c| post(&r, c, WcOp::Send)).collect();
        let mut out = [Wc::BLANK; 2];
        for &i in &ids[1..] {
            assert_eq!(r.complete(i, wc, &mut out), (0, false));
        }
        assert_eq!(r.complete(ids[0], wc, &mut out), (2, true));
        assert_eq!(cookies(&out), [0, 1]);
        assert_eq!(r.drain(&mut out), (2, true));
        assert_eq!(cookies(&out), [2, 3]);
        assert_eq!(r.drain(&mut out), (1, false));
        assert_eq!(out[0].wr_id, 4);
        assert_eq!(r.drain(&mut out), (0, false));
        // Unordered: each as it comes, the ones that do not fit kept.
        let u = Ring::new(4, 4, false);
        let a = post(&u, 7, WcOp::Recv);
        let b = post(&u, 8, WcOp::Recv);
        assert_eq!(u.complete(b, wc, &mut out[..0]), (0, true));
        assert_eq!(u.complete(a, wc, &mut out[..1]), (1, true));
        assert_eq!(out[0].wr_id, 8);
        assert_eq!(u.drain(&mut out), (1, false));
        assert_eq!(out[0].wr_id, 7);
    }

    /// A terminated siw queue pair's send queue: what the device reported
    /// comes first, the rest is flushed, in posting order, once.
    #[test]
    fn an_orphaned_ring_flushes_what_the_device_never_reports() {
        let r = Ring::of_queue(5, 8, true, 0x1000, 42);
        assert_eq!(r.cq(), 0x1000);
        let ids: Vec<u64> = (0..4).map(|c| post(&r, c, WcOp::Send)).collect();
        let mut out = [Wc::BLANK; 8];
        assert_eq!(r.complete(ids[0], wc, &mut out), (1, false));
        // The second was flushed by the device, the last two were lost.
        let flushed = |d: Done| Wc {
            status: WcStatus::Flushed,
            ..wc(d)
        };
        assert_eq!(r.complete(ids[1], flushed, &mut out), (1, false));
        assert!(r.orphan() && !r.orphan() && r.is_orphan());
        // Posted after the mark (a reset queue pair in use again): not
        // flushed, handed out behind the flushed ones.
        let late = post(&r, 9, WcOp::Send);
        assert_eq!(r.flush_rest(&mut out), (2, false, true));
        assert_eq!(cookies(&out[..2]), [2, 3]);
        assert!(out[..2]
            .iter()
            .all(|w| w.status == WcStatus::Flushed && w.qp == 42 && w.byte_len == 0));
        assert!(!r.is_orphan());
        assert_eq!(r.outstanding(), 1);
        // A late report of a lost one is ignored, the new one's is not.
        assert_eq!(r.complete(ids[3], wc, &mut out), (0, false));
        assert_eq!(r.flush_rest(&mut out), (0, false, false));
        assert_eq!(r.complete(late, wc, &mut out), (1, false));
        assert_eq!(out[0].wr_id, 9);
        // Nothing outstanding: nothing to mark.
        assert!(!r.orphan());
    }

    /// A reset queue pair's receive ring: its receives are flushed (the
    /// device reports none), a slot's old work request id is ignored once
    /// the slot is in use again.
    #[test]
    fn a_reset_receive_ring_flushes_and_ignores_stale_ids() {
        let r = Ring::of_queue(6, 2, false, 0x2000, 7);
        let a = post(&r, 1, WcOp::Recv);
        let b = post(&r, 2, WcOp::Recv);
        assert!(r.orphan());
        let mut out = [Wc::BLANK; 4];
        assert_eq!(r.flush_rest(&mut out), (2, false, true));
        let mut got = cookies(&out[..2]);
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        let c = post(&r, 3, WcOp::Recv);
        assert_eq!(c & SLOT_MASK, b & SLOT_MASK);
        assert_eq!(r.complete(a, wc, &mut out), (0, false));
        assert_eq!(r.complete(b, wc, &mut out), (0, false));
        assert_eq!(r.complete(c, wc, &mut out), (1, false));
        assert_eq!(out[0].wr_id, 3);
    }
}
