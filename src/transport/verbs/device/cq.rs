//! A verbs completion queue with its own completion channel: polled
//! through the device's ops table, waited on through the channel's
//! descriptor. With a notification hook (a DAT CNO), the device's event
//! thread watches the channel instead and hands notifications on through
//! an eventfd.

use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::VerbsDevice;
use crate::sync::lock_anyway;
use crate::transport::api::*;
use crate::transport::verbs::ring::{ring_of, Ring};
use crate::transport::verbs::sys::*;
use crate::transport::verbs::{set_nonblocking, Ptr};

type Hook = Arc<dyn Fn() + Send + Sync>;

pub struct VerbsCq {
    dev: Arc<VerbsDevice>,
    cq: Ptr<ibv_cq>,
    /// A completion polled to answer [`CompletionQueue::has_completions`].
    stash: Mutex<Option<Wc>>,
    /// Whether `stash` may hold one (read without its lock on the poll
    /// path).
    stashed: AtomicBool,
    /// Rings with completions due that did not fit the poll that found
    /// them (a send queue's completions held back for an earlier RDMA
    /// Read and released by it: ring.rs), handed out by the next take.
    backlog: Mutex<Vec<Arc<Ring>>>,
    /// Whether `backlog` may hold one (read without its lock).
    backlogged: AtomicBool,
    /// The rings this CQ's completions named lately, so that a poll finds
    /// them without the device's table.
    rings: Mutex<RingCache>,
    notify: Arc<Notify>,
}

/// A few rings by id, replaced in turn.
#[derive(Default)]
struct RingCache {
    e: [Option<(u32, Arc<Ring>)>; 8],
    next: usize,
}

impl RingCache {
    /// The ring `id`, from here or else from the device's table.
    #[inline]
    fn get(&mut self, id: u32, dev: &VerbsDevice) -> Option<&Arc<Ring>> {
        let hit = self
            .e
            .iter()
            .position(|x| x.as_ref().is_some_and(|(i, _)| *i == id));
        let k = match hit {
            Some(k) => k,
            None => self.fill(id, dev)?,
        };
        self.e[k].as_ref().map(|(_, r)| r)
    }

    #[cold]
    #[inline(never)]
    fn fill(&mut self, id: u32, dev: &VerbsDevice) -> Option<usize> {
        let r = dev.rings.load().get(&id).cloned()?;
        let k = self.next;
        self.next = (k + 1) % self.e.len();
        self.e[k] = Some((id, r));
        Some(k)
    }
}

/// The completion channel and what a notification runs: shared with the
/// device's event thread while a hook is set. The channel goes with the
/// last holder.
pub(super) struct Notify {
    lib: &'static crate::transport::verbs::lib::Lib,
    channel: Ptr<ibv_comp_channel>,
    hook: Mutex<Option<Hook>>,
    hooked: AtomicBool,
    /// Who reads the channel while hooked: the event thread, or a waiter
    /// that sleeps on it (no thread hop per notification).
    watch: Mutex<Watch>,
    pub(super) token: u64,
}

/// The channel is in the event thread's set (`watched`) exactly while a
/// hook is set and no waiter owns the channel.
#[derive(Default)]
struct Watch {
    owned: bool,
    watched: bool,
}

// SAFETY: the CQ and channel are rdma-core objects usable from any thread;
// the Rust state is behind locks or atomics.
unsafe impl Send for VerbsCq {}
unsafe impl Sync for VerbsCq {}
// SAFETY: as above.
unsafe impl Send for Notify {}
unsafe impl Sync for Notify {}

impl Notify {
    pub(super) fn fd(&self) -> i32 {
        // SAFETY: the channel lives as long as self.
        unsafe { (*self.channel.0).fd }
    }

    /// Reads every notification off the channel (non-blocking).
    fn drain_channel(&self) -> bool {
        let mut any = false;
        loop {
            let mut cq = std::ptr::null_mut();
            let mut ctx = std::ptr::null_mut();
            // SAFETY: the channel's descriptor is non-blocking; an event
            // got is acknowledged at once.
            unsafe {
                if (self.lib.ibv_get_cq_event)(self.channel.0, &mut cq, &mut ctx) != 0 {
                    return any;
                }
                (self.lib.ibv_ack_cq_events)(cq, 1);
            }
            any = true;
        }
    }

    /// The event thread saw the channel readable (hooked mode). A waiter
    /// that owns the channel reads it itself: a readiness the event thread
    /// took before the waiter did is left alone.
    pub(super) fn notified(&self) {
        let any = {
            let w = lock_anyway(&self.watch);
            !w.owned && self.drain_channel()
        };
        if any {
            let hook = lock_anyway(&self.hook).clone();
            if let Some(h) = hook {
                h();
            }
        }
    }

    /// Puts the channel in the event thread's set or takes it out, as
    /// `Watch` says it must be.
    fn sync_watch(self: &Arc<Self>, dev: &VerbsDevice, w: &mut Watch) {
        let want = self.hooked.load(Ordering::Acquire) && !w.owned;
        if want != w.watched {
            if want {
                dev.events.watch_cq(self.clone());
            } else {
                dev.events.unwatch_cq(self);
            }
            w.watched = want;
        }
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        // SAFETY: its CQ is gone (the CQ holds this alive).
        unsafe {
            (self.lib.ibv_destroy_comp_channel)(self.channel.0);
        }
    }
}

/// How many completions one ops call polls.
const BATCH: usize = 16;

/// The least depth of a CQ on a device that cannot resize CQs.
const UNRESIZABLE_CQ_DEPTH: u32 = 4096;

impl VerbsCq {
    pub(super) fn create(dev: Arc<VerbsDevice>, depth: u32) -> Result<Arc<VerbsCq>, DeviceError> {
        let lib = dev.lib;
        // SAFETY: the context is open; results are checked.
        unsafe {
            let channel = (lib.ibv_create_comp_channel)(dev.ctx.0);
            if channel.is_null() {
                return Err(DeviceError::Resources);
            }
            set_nonblocking((*channel).fd);
            // The DAT layer grows a CQ as EPs attach (evd.rs): where the
            // device cannot, the CQ is made deep from the start, so that an
            // EVD serving several EPs does not overrun (siw drops the
            // completions that do not fit: e2e_threads).
            let floor = if dev.cq_resizable {
                1
            } else {
                UNRESIZABLE_CQ_DEPTH
            };
            let depth = depth.max(floor).clamp(1, dev_max_cqe(&dev)) as i32;
            let cq = (lib.ibv_create_cq)(dev.ctx.0, depth, std::ptr::null_mut(), channel, 0);
            if cq.is_null() {
                (lib.ibv_destroy_comp_channel)(channel);
                return Err(DeviceError::Resources);
            }
            let notify = Arc::new(Notify {
                lib,
                channel: Ptr(channel),
                hook: Mutex::new(None),
                hooked: AtomicBool::new(false),
                watch: Mutex::new(Watch::default()),
                token: dev.next_id(),
            });
            let me = Arc::new(VerbsCq {
                dev: dev.clone(),
                cq: Ptr(cq),
                stash: Mutex::new(None),
                stashed: AtomicBool::new(false),
                backlog: Mutex::new(Vec::with_capacity(8)),
                backlogged: AtomicBool::new(false),
                rings: Mutex::new(RingCache::default()),
                notify,
            });
            lock_anyway(&dev.cq_ptrs).insert(Arc::as_ptr(&me) as usize, Ptr(cq));
            Ok(me)
        }
    }

    /// Polls the hardware into `out`, translating each completion.
    fn poll_hw(&self, out: &mut [Wc]) -> usize {
        let mut done = 0;
        // Written by the device's poll before anything reads it.
        let mut raw = [const { MaybeUninit::<ibv_wc>::uninit() }; BATCH];
        // SAFETY: the CQ lives as long as self; its context's ops table
        // does too.
        let poll = unsafe { (*(*self.cq.0).context).ops.poll_cq };
        let Some(poll) = poll else {
            return 0;
        };
        // Read before the poll: rings marked before it may be flushed once
        // it finds the CQ empty (every flush of the device is in by then).
        let orphans = self.dev.orphans.load(Ordering::Acquire) > 0;
        let mut empty = false;
        // (Locked once something came: an empty poll takes no lock.)
        let mut rings = None;
        while done < out.len() {
            let want = (out.len() - done).min(BATCH);
            // SAFETY: ibv_poll_cq is the device's op on a live CQ, writing
            // at most `want` entries into `raw`.
            let n = unsafe { poll(self.cq.0, want as i32, raw.as_mut_ptr().cast()) };
            if n <= 0 {
                empty = true;
                break;
            }
            for w in &raw[..n as usize] {
                // SAFETY: the device wrote the first `n` entries.
                let w = unsafe { w.assume_init_ref() };
                let cache = rings.get_or_insert_with(|| lock_anyway(&self.rings));
                let Some(ring) = cache.get(ring_of(w.wr_id), &self.dev) else {
                    continue;
                };
                let status = status_of(w.status);
                let iwarp = self.dev.iwarp;
                let (k, more) = ring.complete(
                    w.wr_id,
                    |d| Wc {
                        wr_id: d.cookie,
                        ctx: d.ctx,
                        implicit: 0,
                        status,
                        op: d.op,
                        byte_len: if d.op == WcOp::Recv {
                            u64::from(w.byte_len)
                        } else {
                            d.len
                        },
                        qp: w.qp_num,
                        solicited: d.op == WcOp::Recv && (iwarp || solicited_imm(w)),
                    },
                    &mut out[done..],
                );
                done += k;
                if more {
                    self.defer_ring(ring);
                }
                if !matches!(status, WcStatus::Success | WcStatus::Flushed) {
                    // The queue pair is in the error state now: the
                    // connection is lost (told from the event thread, not
                    // under the poller's locks).
                    if let Some(q) = self.dev.events.qp(w.qp_num) {
                        self.dev
                            .events
                            .defer(Arc::downgrade(&q), super::Made::Broken);
                    }
                }
            }
            if (n as usize) < want {
                empty = true;
                break;
            }
        }
        drop(rings);
        if orphans && empty {
            done += self.flush_orphans(&mut out[done..]);
        }
        done
    }

    /// Flushes the requests of this CQ's orphaned send queues that the
    /// device will not report (`QpInner::to_error`).
    #[cold]
    fn flush_orphans(&self, out: &mut [Wc]) -> usize {
        let mut n = 0;
        for ring in self.dev.rings.load().values() {
            if ring.is_orphan() && ring.cq() == self.cq.0 as usize {
                let (k, more, was) = ring.flush_rest(&mut out[n..]);
                n += k;
                if more {
                    self.defer_ring(ring);
                }
                if was {
                    self.dev.orphans.fetch_sub(1, Ordering::AcqRel);
                }
                if ring.is_retired() && !more && !ring.is_orphan() {
                    self.dev.remove_ring(ring.id);
                }
            }
        }
        n
    }

    /// Remembers a ring whose due completions did not fit.
    #[cold]
    fn defer_ring(&self, ring: &Arc<Ring>) {
        let mut b = lock_anyway(&self.backlog);
        if !b.iter().any(|r| Arc::ptr_eq(r, ring)) {
            b.push(ring.clone());
        }
        self.backlogged.store(true, Ordering::Release);
    }

    /// Hands out what the backlog's rings have due, into `out`.
    fn drain_backlog(&self, out: &mut [Wc]) -> usize {
        if out.is_empty() || !self.backlogged.load(Ordering::Acquire) {
            return 0;
        }
        let mut b = lock_anyway(&self.backlog);
        let mut n = 0;
        b.retain(|r| {
            let (k, more) = r.drain(&mut out[n..]);
            n += k;
            if !more && r.is_retired() && !r.is_orphan() {
                self.dev.remove_ring(r.id);
            }
            more
        });
        if b.is_empty() {
            self.backlogged.store(false, Ordering::Release);
        }
        n
    }
}

/// A receive of a Send our peer marked solicited (see `qp::SOLICITED_IMM`).
fn solicited_imm(w: &ibv_wc) -> bool {
    // SAFETY: the immediate data is valid when the flag says so.
    w.wc_flags & IBV_WC_WITH_IMM != 0
        && u32::from_be(unsafe { w.__bindgen_anon_1.imm_data }) == super::qp::SOLICITED_IMM
}

fn dev_max_cqe(dev: &VerbsDevice) -> u32 {
    use crate::transport::api::Device;
    dev.capabilities().max_cqe.max(1)
}

/// A verbs completion status as the interface's.
pub(super) fn status_of(s: ibv_wc_status) -> WcStatus {
    match s {
        IBV_WC_SUCCESS => WcStatus::Success,
        IBV_WC_LOC_LEN_ERR => WcStatus::LocalLength,
        IBV_WC_LOC_QP_OP_ERR => WcStatus::LocalOperation,
        IBV_WC_LOC_PROT_ERR | IBV_WC_LOC_ACCESS_ERR => WcStatus::LocalProtection,
        IBV_WC_WR_FLUSH_ERR => WcStatus::Flushed,
        IBV_WC_MW_BIND_ERR => WcStatus::BindFailure,
        IBV_WC_REM_INV_REQ_ERR => WcStatus::RemoteInvalidRequest,
        IBV_WC_REM_ACCESS_ERR => WcStatus::RemoteAccess,
        IBV_WC_REM_OP_ERR => WcStatus::RemoteOperation,
        IBV_WC_RETRY_EXC_ERR => WcStatus::TransportRetry,
        IBV_WC_RNR_RETRY_EXC_ERR => WcStatus::ReceiverNotReady,
        _ => WcStatus::Fatal,
    }
}

impl CompletionQueue for VerbsCq {
    fn passive(&self) -> bool {
        true
    }

    fn progress(&self) {}

    fn take(&self, out: &mut [Wc]) -> usize {
        if out.is_empty() {
            return 0;
        }
        let mut n = 0;
        if self.stashed.load(Ordering::Acquire) {
            let mut s = lock_anyway(&self.stash);
            if let Some(w) = s.take() {
                out[0] = w;
                n = 1;
            }
            self.stashed.store(false, Ordering::Release);
        }
        n += self.drain_backlog(&mut out[n..]);
        n + self.poll_hw(&mut out[n..])
    }

    fn polled(&self, _got: usize) {}

    fn arm(&self, solicited_only: bool) {
        // SAFETY: ibv_req_notify_cq is the device's op on a live CQ.
        unsafe {
            let ctx = (*self.cq.0).context;
            if let Some(f) = (*ctx).ops.req_notify_cq {
                f(self.cq.0, i32::from(solicited_only));
            }
        }
    }

    fn clear_notification(&self) {
        let n = &self.notify;
        if n.hooked.load(Ordering::Acquire) {
            // The waiter reads the channel from now until it releases it:
            // the event thread (which triggers the CNO of a hooked CQ) is
            // not woken for every completion. Taken before the waiter
            // arms, so every notification of that arm reaches it.
            let mut w = lock_anyway(&n.watch);
            if !w.owned {
                w.owned = true;
                n.sync_watch(&self.dev, &mut w);
            }
        }
        n.drain_channel();
    }

    fn release_notifications(&self) {
        let n = &self.notify;
        let mut w = lock_anyway(&n.watch);
        if w.owned {
            w.owned = false;
            // What the channel holds is the waiter's (it woke for it, and a
            // CQ with a waiter triggers no CNO): read here, not handed to
            // the event thread. Then armed again before the event thread
            // watches, so that the next completion triggers the CNO.
            n.drain_channel();
            if n.hooked.load(Ordering::Acquire) {
                self.arm(false);
            }
            n.sync_watch(&self.dev, &mut w);
        }
    }

    fn wait_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the channel's descriptor lives as long as self.
        unsafe { BorrowedFd::borrow_raw(self.notify.fd()) }
    }

    fn sleeping(&self, _on: bool) {}

    fn input_fd(&self) -> BorrowedFd<'_> {
        self.dev.idle_fd()
    }

    fn on_notify(&self, hook: Option<Arc<dyn Fn() + Send + Sync>>) {
        let n = &self.notify;
        let on = hook.is_some();
        *lock_anyway(&n.hook) = hook;
        let mut w = lock_anyway(&n.watch);
        n.hooked.store(on, Ordering::Release);
        n.sync_watch(&self.dev, &mut w);
    }

    fn has_completions(&self) -> bool {
        let mut s = lock_anyway(&self.stash);
        if s.is_some() || self.backlogged.load(Ordering::Acquire) {
            return true;
        }
        let mut one = [Wc::BLANK];
        if self.poll_hw(&mut one) == 1 {
            *s = Some(one[0]);
            self.stashed.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    fn busy(&self) -> bool {
        false
    }

    fn depth(&self) -> u32 {
        // SAFETY: the CQ lives as long as self.
        unsafe { (*self.cq.0).cqe.max(0) as u32 }
    }

    fn resize(&self, depth: u32) -> Result<(), DeviceError> {
        let depth = depth.clamp(1, dev_max_cqe(&self.dev)) as i32;
        // SAFETY: a live CQ; the result is checked.
        if unsafe { (self.dev.lib.ibv_resize_cq)(self.cq.0, depth) } != 0 {
            return Err(DeviceError::Resources);
        }
        Ok(())
    }
}

impl Drop for VerbsCq {
    fn drop(&mut self) {
        lock_anyway(&self.dev.cq_ptrs).remove(&(self as *const VerbsCq as usize));
        // The rings of queue pairs gone that waited for this CQ's poller.
        for r in self.dev.rings.load().values() {
            if r.is_retired() && r.cq() == self.cq.0 as usize {
                self.dev.remove_ring(r.id);
            }
        }
        let n = &self.notify;
        if lock_anyway(&n.watch).watched {
            self.dev.events.unwatch_cq(n);
        }
        n.drain_channel();
        // SAFETY: no queue pair uses the CQ any more (each holds it
        // alive); events the event thread still reads it acknowledges.
        unsafe {
            (self.dev.lib.ibv_destroy_cq)(self.cq.0);
        }
    }
}
