//! Posting sends, receives, RDMA and binds, and turning their completions
//! into DAT events.
//!
//! Each post's flags (and a bind's RMR) travel with its work request
//! ([`SendWr::ctx`]) and come back in its completion, so the EP keeps no
//! record per request and posters take no lock to keep one in order.
//! Successful SUPPRESS Sends and RDMA Writes are posted unsignalled (as
//! OFED's dapl does), except the one that takes an EP's last request slot:
//! its completion, suppressed in turn, gives back the slots of the
//! unsignalled requests before it ([`Wc::implicit`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle};
use crate::object::attr::{
    COMPLETION_BARRIER_FENCE, COMPLETION_SOLICITED_WAIT, COMPLETION_SUPPRESS,
    COMPLETION_UNSIGNALLED,
};
use crate::object::event::{self, Credit, Event, EventData};
use crate::object::ia::Ia;
use crate::object::rmr::BindQueue;
use crate::object::segment::{key_fault, sgl, RemoteSegment, Segment, MAX_IOV};
use crate::object::{lock_anyway, Rmr};
use crate::transport::api::{
    Access, BindWr, PdId, PostError, QueuePair, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus,
};

use super::{state_error, Ep, EpAttr, EpState, WorkQueue};

/// The `DAT_COMPLETION_*_FLAG` bits a post may carry.
const POST_FLAGS: u32 = 0x0f;

/// A post's word in its work request ([`SendWr::ctx`]): its completion
/// flags in the low four bits, a bind's RMR handle (64-byte aligned) above.
#[inline(always)]
fn post_ctx(flags: u32, rmr: Option<Handle>) -> u64 {
    let h = rmr.map_or(0, |h| h.addr() as u64);
    debug_assert_eq!(h & u64::from(POST_FLAGS), 0);
    h | u64::from(flags & POST_FLAGS)
}

/// The flags and RMR [`post_ctx`] packed.
#[inline(always)]
fn post_info(ctx: u64) -> (u32, Option<Handle>) {
    let flags = (ctx & u64::from(POST_FLAGS)) as u32;
    let h = (ctx & !u64::from(POST_FLAGS)) as usize;
    (flags, (h != 0).then(|| Handle::from_addr(h)))
}

/// The EP configuration a request post reads.
struct PostView {
    qp: Option<Arc<dyn QueuePair>>,
    attr: PostAttr,
    pz: Option<u64>,
}

/// The attributes a request post checks (copied under the EP's lock).
#[derive(Clone, Copy)]
struct PostAttr {
    request_completion_flags: u32,
    max_request_iov: i32,
    max_rdma_write_iov: i32,
    max_rdma_read_iov: i32,
    max_rdma_read_out: i32,
    max_message_size: u64,
    max_rdma_size: u64,
}

impl PostAttr {
    #[inline(always)]
    fn of(a: &EpAttr) -> PostAttr {
        PostAttr {
            request_completion_flags: a.request_completion_flags,
            max_request_iov: a.max_request_iov,
            max_rdma_write_iov: a.max_rdma_write_iov,
            max_rdma_read_iov: a.max_rdma_read_iov,
            max_rdma_read_out: a.max_rdma_read_out,
            max_message_size: a.max_message_size,
            max_rdma_size: a.max_rdma_size,
        }
    }
}

/// The request kind of a post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Send,
    Write(RemoteSegment),
    Read(RemoteSegment),
}

/// `DAT_DTO_COMPLETION_STATUS` of a transport status (§3.2).
pub fn dto_status(s: WcStatus) -> u32 {
    match s {
        WcStatus::Success => 0,
        WcStatus::Flushed => 1,
        WcStatus::LocalLength => 2,
        WcStatus::LocalOperation => 3,
        WcStatus::LocalProtection => 4,
        WcStatus::RemoteInvalidRequest => 5,
        WcStatus::RemoteAccess => 6,
        WcStatus::RemoteOperation => 7,
        WcStatus::TransportRetry | WcStatus::Fatal => 8,
        WcStatus::ReceiverNotReady => 9,
        WcStatus::BindFailure => 11,
    }
}

/// The post error of a transport refusal.
fn post_error(e: PostError, input: Input) -> DatError {
    match e {
        PostError::QueueFull => DatError::resources(Sub::None),
        PostError::TooManySge | PostError::Length => DatError::invalid(input),
        PostError::Protection(f) => key_fault(f, input),
        PostError::Unsupported => DatError::of(Type::ModelNotSupported),
        PostError::State => DatError::of(Type::InvalidState),
    }
}

impl Ep {
    /// Releases a DTO slot (an event carrying it was dequeued).
    pub(crate) fn release(&self, queue: WorkQueue) {
        self.release_n(queue, 1);
    }

    /// Releases `n` DTO slots.
    fn release_n(&self, queue: WorkQueue, n: i32) {
        let c = match queue {
            WorkQueue::Receive => &self.recv_out,
            WorkQueue::Request => &self.req_out,
        };
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some((v - n).max(0))
        });
    }

    /// Turns a transport completion of this EP into its DAT event, or
    /// `None` when it is not reported (a successful SUPPRESS post). The
    /// bool says whether it is a notification event.
    pub(crate) fn translate(&self, wc: &Wc, stream: WorkQueue) -> Option<(Event, bool)> {
        let ok = wc.status == WcStatus::Success;
        let status = dto_status(wc.status);
        if wc.op == WcOp::Recv {
            if stream != WorkQueue::Receive {
                return None;
            }
            let srq = self.srq_handle;
            let (post_flags, _) = post_info(wc.ctx);
            let ep_flags = self.recv_flags.load(Ordering::Acquire);
            let notify = !ok
                || if ep_flags & COMPLETION_SOLICITED_WAIT != 0 {
                    wc.solicited
                } else {
                    post_flags & COMPLETION_UNSIGNALLED == 0
                };
            let credit = match srq {
                Some(s) => Credit::Srq(s),
                None => Credit::Recv(self.handle),
            };
            return Some((
                Event {
                    number: event::DTO_COMPLETION,
                    evd: Handle::NULL,
                    data: EventData::Dto {
                        ep: self.handle,
                        cookie: wc.wr_id,
                        status,
                        length: if ok { wc.byte_len } else { 0 },
                    },
                    credit,
                },
                notify,
            ));
        }
        if stream == WorkQueue::Receive {
            return None;
        }
        // Unsignalled SUPPRESS posts done before this one.
        if wc.implicit > 0 {
            self.release_n(WorkQueue::Request, wc.implicit as i32);
        }
        let (flags, rmr) = post_info(wc.ctx);
        if let Some(rmr) = rmr {
            if let Some(r) = handle::get::<Rmr>(rmr.addr()) {
                r.bind_completed(ok);
            }
        }
        if ok && flags & COMPLETION_SUPPRESS != 0 {
            self.release(WorkQueue::Request);
            return None;
        }
        let notify = !ok || flags & COMPLETION_UNSIGNALLED == 0;
        let data = match rmr {
            Some(rmr) => EventData::RmrBind {
                rmr,
                cookie: wc.wr_id,
                status: u32::from(!ok),
            },
            None => EventData::Dto {
                ep: self.handle,
                cookie: wc.wr_id,
                status,
                length: if ok { wc.byte_len } else { 0 },
            },
        };
        let number = if rmr.is_some() {
            event::RMR_BIND_COMPLETION
        } else {
            event::DTO_COMPLETION
        };
        Some((
            Event {
                number,
                evd: Handle::NULL,
                data,
                credit: Credit::Request(self.handle),
            },
            notify,
        ))
    }

    /// A post on a DISCONNECTED EP: accepted and flushed at once (§3.3 rule 2).
    #[cold]
    #[inline(never)]
    fn flush_now(&self, queue: WorkQueue, cookie: u64, rmr: Option<Handle>) -> Result<()> {
        let evd = {
            let i = lock_anyway(&self.inner);
            match queue {
                WorkQueue::Receive => i.recv_evd.clone(),
                WorkQueue::Request => i.req_evd.clone(),
            }
        };
        if let Some(evd) = evd {
            let (number, data) = match rmr {
                Some(rmr) => (
                    event::RMR_BIND_COMPLETION,
                    EventData::RmrBind {
                        rmr,
                        cookie,
                        status: 1,
                    },
                ),
                None => (
                    event::DTO_COMPLETION,
                    EventData::Dto {
                        ep: self.handle,
                        cookie,
                        status: 1,
                        length: 0,
                    },
                ),
            };
            evd.post_after_completions(Event::new(number, data), true);
        }
        Ok(())
    }

    /// Takes a DTO slot; true if it was the last free one.
    #[inline(always)]
    fn take_slot(&self, queue: WorkQueue) -> Result<bool> {
        let (c, max) = match queue {
            WorkQueue::Receive => (&self.recv_out, &self.recv_max),
            WorkQueue::Request => (&self.req_out, &self.req_max),
        };
        let max = max.load(Ordering::Acquire);
        c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            (v < max).then_some(v + 1)
        })
        .map(|v| v + 1 >= max)
        .map_err(|_| DatError::resources(Sub::None))
    }

    /// A request slot; true if it was the last free one. When all are
    /// taken, the completions waiting in the request EVD's CQ are
    /// translated first and the slot is tried again: a successful SUPPRESS
    /// post gives its slot back when it completes (§3.6), and the consumer,
    /// who gets no event for it, may never poll that EVD. (Slots of
    /// reported completions stay taken until dequeued.)
    #[inline(always)]
    fn take_request_slot(&self) -> Result<bool> {
        if let Ok(last) = self.take_slot(WorkQueue::Request) {
            return Ok(last);
        }
        self.take_request_slot_slow()
    }

    #[cold]
    #[inline(never)]
    fn take_request_slot_slow(&self) -> Result<bool> {
        let evd = lock_anyway(&self.inner).req_evd.clone();
        if let Some(evd) = evd {
            evd.fill();
        }
        self.take_slot(WorkQueue::Request)
    }

    /// `dat_ep_post_send` / `_rdma_write` / `_rdma_read`.
    pub fn post(&self, iov: &[Segment], cookie: u64, req: Request, flags: u32) -> Result<()> {
        let state = self.state();
        let PostView { qp, attr, pz } = self.view()?;
        if state != EpState::Connected && state != EpState::Disconnected {
            return Err(state_error(state));
        }
        if flags & !POST_FLAGS != 0 {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && attr.request_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        let max_iov = match req {
            Request::Send => attr.max_request_iov,
            Request::Write(_) => attr.max_rdma_write_iov.max(attr.max_request_iov),
            Request::Read(_) => attr.max_rdma_read_iov.max(1),
        };
        if iov.len() > usize::try_from(max_iov).unwrap_or(0) {
            return Err(DatError::invalid(Input::NumSegments));
        }
        let mut buf = [Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        }; MAX_IOV];
        let (n, total) = sgl(iov, &mut buf)?;
        let op = match req {
            Request::Send => {
                if total > attr.max_message_size {
                    return Err(DatError::invalid(Input::LocalIov));
                }
                SendOp::Send {
                    solicited: flags & COMPLETION_SOLICITED_WAIT != 0,
                }
            }
            Request::Write(r) => {
                if total > attr.max_rdma_size {
                    return Err(DatError::invalid(Input::LocalIov));
                }
                if total > r.len {
                    return Err(DatError::of(Type::LengthError));
                }
                SendOp::RdmaWrite {
                    remote_addr: r.addr,
                    rkey: r.rmr_context,
                }
            }
            Request::Read(r) => {
                if attr.max_rdma_read_out <= 0 {
                    // No outbound read credits: a resource the EP lacks.
                    return Err(DatError::resources(Sub::None));
                }
                if r.len > attr.max_rdma_size {
                    return Err(DatError::invalid(Input::RemoteIov));
                }
                if total < r.len {
                    return Err(DatError::of(Type::LengthError));
                }
                SendOp::RdmaRead {
                    remote_addr: r.addr,
                    rkey: r.rmr_context,
                }
            }
        };
        if state == EpState::Disconnected {
            // Local segments are checked (key, PZ, bounds, rights) even
            // here; on a connected queue pair the transport's post does it.
            let need = if matches!(req, Request::Read(_)) {
                Access::LOCAL_WRITE
            } else {
                Access::LOCAL_READ
            };
            self.check_segments(&buf[..n], need, pz)?;
            return self.flush_now(WorkQueue::Request, cookie, None);
        }
        let Some(qp) = qp else {
            return Err(state_error(state));
        };
        // A Read moves exactly the remote length: trim the scatter list.
        let mut n = n;
        if let Request::Read(r) = req {
            let mut left = r.len;
            let mut used = 0;
            for g in buf.iter_mut().take(n) {
                if left == 0 {
                    break;
                }
                g.len = g.len.min(left);
                left -= g.len;
                used += 1;
            }
            n = used;
        }
        let sgl = &buf[..n];
        let ctx = post_ctx(flags, None);
        self.submit(&qp, cookie, None, |qp, last| {
            qp.post_send(&SendWr {
                wr_id: cookie,
                ctx,
                op,
                sgl,
                // A successful SUPPRESS post has no completion to report;
                // the one in the last slot has, to free those before it.
                signaled: flags & COMPLETION_SUPPRESS == 0 || last,
                fence: flags & COMPLETION_BARRIER_FENCE != 0,
            })
            .map(|_| ())
        })
    }

    /// Takes a slot and hands the post to the transport (`post` is told
    /// whether the slot was the last free one); a queue pair that closed
    /// meanwhile flushes it.
    #[inline(always)]
    fn submit(
        &self,
        qp: &Arc<dyn QueuePair>,
        cookie: u64,
        rmr: Option<Handle>,
        post: impl FnOnce(&Arc<dyn QueuePair>, bool) -> std::result::Result<(), PostError>,
    ) -> Result<()> {
        let last = self.take_request_slot()?;
        let posted = post(qp, last);
        match posted {
            Ok(()) => {
                self.drain_sink();
                Ok(())
            }
            Err(e) => {
                self.release(WorkQueue::Request);
                self.refused(e, WorkQueue::Request, cookie, rmr)
            }
        }
    }

    /// The queue pair refused a post. For its state: the EP was freed by
    /// another thread during the post (its handle is dead, as for any
    /// later post); or its connection is going or gone: disconnecting, or
    /// still CONNECTED because the transport's word that the peer left (or
    /// the connection broke) has not reached the EP yet; or an accept is
    /// completing (COMPLETION_PENDING). Such a post is accepted and
    /// flushed, as on a DISCONNECTED EP (§3.3 rule 2).
    #[cold]
    #[inline(never)]
    fn refused(
        &self,
        e: PostError,
        queue: WorkQueue,
        cookie: u64,
        rmr: Option<Handle>,
    ) -> Result<()> {
        if e == PostError::State {
            if lock_anyway(&self.inner).freed {
                return Err(DatError::handle(Sub::HandleEp));
            }
            let state = self.state();
            if matches!(
                state,
                EpState::Connected
                    | EpState::DisconnectPending
                    | EpState::Disconnected
                    | EpState::CompletionPending
            ) {
                return self.flush_now(queue, cookie, rmr);
            }
        }
        Err(post_error(e, Input::LocalIov))
    }

    /// What a post needs of the EP's configuration, under one short lock.
    #[inline(always)]
    fn view(&self) -> Result<PostView> {
        let i = self.inner()?;
        Ok(PostView {
            qp: i.qp.clone(),
            attr: PostAttr::of(&i.attr),
            pz: i.pz.as_ref().map(|p| p.key_id()),
        })
    }

    /// §3.7 step 6 for posts the transport does not see.
    fn check_segments(&self, sgl: &[Sge], need: Access, pz: Option<u64>) -> Result<()> {
        for s in sgl {
            self.ia
                .dev
                .check_local(s.lkey, s.addr, s.len, need, pz.map(PdId))
                .map_err(|f| key_fault(f, Input::LocalIov))?;
        }
        Ok(())
    }

    /// Completions of a direction whose EVD is NULL are discarded.
    #[inline(always)]
    fn drain_sink(&self) {
        if self.has_sink.load(Ordering::Relaxed) {
            self.drain_sink_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn drain_sink_now(&self) {
        let sink = lock_anyway(&self.inner).sink.clone();
        if let Some(cq) = sink {
            let mut wcs = [Wc::BLANK; 16];
            loop {
                let n = cq.poll(&mut wcs);
                for wc in &wcs[..n] {
                    if wc.op == WcOp::Recv {
                        self.release(WorkQueue::Receive);
                    } else {
                        self.release_n(WorkQueue::Request, 1 + wc.implicit as i32);
                    }
                }
                if n < wcs.len() {
                    break;
                }
            }
        }
    }

    /// `dat_ep_post_recv`.
    pub fn post_recv(&self, iov: &[Segment], cookie: u64, flags: u32) -> Result<()> {
        let (qp, recv_completion_flags, max_recv_iov, pz) = {
            let mut i = self.inner()?;
            if i.srq.is_some() {
                return Err(DatError::of(Type::InvalidState));
            }
            let qp = if self.state() == EpState::Disconnected {
                None
            } else {
                Some(self.ensure_qp(&mut i)?)
            };
            (
                qp,
                i.attr.recv_completion_flags,
                i.attr.max_recv_iov,
                i.pz.as_ref().map(|p| p.key_id()),
            )
        };
        if flags & !POST_FLAGS != 0
            || flags & (COMPLETION_SUPPRESS | COMPLETION_BARRIER_FENCE | COMPLETION_SOLICITED_WAIT)
                != 0
        {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && recv_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        if iov.len() > usize::try_from(max_recv_iov).unwrap_or(0) {
            return Err(DatError::invalid(Input::NumSegments));
        }
        let mut buf = [Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        }; MAX_IOV];
        let (n, _) = sgl(iov, &mut buf)?;
        let Some(qp) = qp else {
            // DISCONNECTED: checked here (the transport does it otherwise),
            // then accepted and flushed.
            self.check_segments(&buf[..n], Access::LOCAL_WRITE, pz)?;
            return self.flush_now(WorkQueue::Receive, cookie, None);
        };
        self.take_slot(WorkQueue::Receive)?;
        let posted = qp.post_recv(&RecvWr {
            wr_id: cookie,
            ctx: post_ctx(flags, None),
            sgl: &buf[..n],
        });
        match posted {
            Ok(()) => Ok(()),
            Err(e) => {
                self.release(WorkQueue::Receive);
                self.refused(e, WorkQueue::Receive, cookie, None)
            }
        }
    }
}

impl BindQueue for Ep {
    fn ia(&self) -> &Ia {
        &self.ia
    }

    /// `dat_rmr_bind` through this EP (the RMR layer checked its side).
    fn post_bind(
        &self,
        rmr: &Rmr,
        seg: Segment,
        access: Access,
        cookie: u64,
        flags: u32,
    ) -> Result<u32> {
        let state = self.state();
        let PostView { qp, attr, pz } = self.view()?;
        if state != EpState::Connected && state != EpState::Disconnected {
            return Err(state_error(state));
        }
        if flags & !POST_FLAGS != 0 || flags & COMPLETION_SOLICITED_WAIT != 0 {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && attr.request_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::invalid(Input::CompletionFlags));
        }
        if pz != Some(rmr.pz.key_id()) {
            return Err(DatError::of(Type::ProtectionViolation));
        }
        if state == EpState::Disconnected {
            self.flush_now(WorkQueue::Request, cookie, Some(rmr.handle))?;
            return Ok(0);
        }
        let Some(qp) = qp else {
            return Err(state_error(state));
        };
        let mut key = 0;
        let ctx = post_ctx(flags, Some(rmr.handle));
        self.submit(&qp, cookie, Some(rmr.handle), |qp, _| {
            qp.post_bind(&BindWr {
                wr_id: cookie,
                ctx,
                window: rmr.window(),
                lkey: seg.lmr_context,
                addr: seg.addr,
                len: seg.len,
                access,
                signaled: true,
                fence: flags & COMPLETION_BARRIER_FENCE != 0,
            })
            .map(|k| key = k)
        })?;
        Ok(key)
    }
}
