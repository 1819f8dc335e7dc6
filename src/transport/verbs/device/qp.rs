//! A verbs RC queue pair. It is created with `ibv_create_qp` and moved to
//! INIT at once (receives may be posted before a connection exists); each
//! connection gets an rdma_cm id of its own, and the queue pair follows
//! it: on InfiniBand and RoCE this transport moves it to RTR and RTS with
//! the attributes rdma_cm computes, on iWARP the kernel's iw_cm does.
//! Posts go straight to the device's ops table.

use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Made;
use super::Owner;
use super::VerbsDevice;
use crate::sync::lock_anyway;
use crate::transport::api::*;
use crate::transport::verbs::ring::Ring;
use crate::transport::verbs::sys::*;
use crate::transport::verbs::{sockaddr_of, socket_addr_at, Ptr, MAX_SGE};

/// The immediate data of a solicited Send (InfiniBand and RoCE).
pub(super) const SOLICITED_IMM: u32 = 0x5d47_0001;

/// The queue pair as the device's tables and event thread know it.
pub struct QpInner {
    pub(super) dev: Arc<VerbsDevice>,
    qp: Ptr<ibv_qp>,
    num: u32,
    pub(super) token: u64,
    pub(super) cm: Arc<dyn CmHandler>,
    cfg: QpConfig,
    send: Arc<Ring>,
    recv: Option<Arc<Ring>>,
    state: AtomicU8,
    /// The rdma_cm id of the current connection.
    id: Mutex<Option<Ptr<rdma_cm_id>>>,
    /// What `rdma_connect` sends once the route is resolved.
    connecting: Mutex<Option<(Vec<u8>, i32)>>,
    /// Counts connection attempts (names the one a deadline is for).
    attempt: std::sync::atomic::AtomicU64,
    max_send_sge: u32,
    /// Sends and RDMA Writes of at most this many bytes are posted inline
    /// (copied into the work request at the post, as OFED's providers do).
    max_inline: u32,
}

/// The inline size asked of a new queue pair: `DAPL_MAX_INLINE` (OFED
/// dapl's variable) if set, else 200 bytes on InfiniBand and RoCE (OFED's
/// default) and none on iWARP: siw's inline Sends and RDMA Writes ended
/// connections to our TCP transport with a Terminate (invalid STag) in
/// the interop tests (3 cases of 8; siw against siw did not show it). A
/// device that refuses the size gets none.
fn inline_want(iwarp: bool) -> u32 {
    static ENV: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let env = ENV.get_or_init(|| {
        std::env::var("DAPL_MAX_INLINE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
    });
    env.unwrap_or(if iwarp { 0 } else { 200 })
}

// SAFETY: rdma-core objects usable from any thread; Rust state behind
// locks and atomics.
unsafe impl Send for QpInner {}
unsafe impl Sync for QpInner {}

/// The interface's queue pair: the inner part, destroyed with it.
pub struct VerbsQp(Arc<QpInner>);

fn state_code(s: QpState) -> u8 {
    match s {
        QpState::Idle => 0,
        QpState::Connecting => 1,
        QpState::Connected => 2,
        QpState::Disconnecting => 3,
        QpState::Closed => 4,
    }
}

fn state_of(c: u8) -> QpState {
    match c {
        0 => QpState::Idle,
        1 => QpState::Connecting,
        2 => QpState::Connected,
        3 => QpState::Disconnecting,
        _ => QpState::Closed,
    }
}

impl VerbsQp {
    pub(super) fn create(
        dev: Arc<VerbsDevice>,
        cfg: QpConfig,
    ) -> Result<Arc<dyn QueuePair>, DeviceError> {
        let caps = *dev.capabilities();
        let pd = dev.pd(cfg.pd).ok_or(DeviceError::NotFound)?;
        let send_cq =
            crate::transport::verbs::cq_ptr(&dev, &cfg.send_cq).ok_or(DeviceError::Invalid)?;
        let recv_cq =
            crate::transport::verbs::cq_ptr(&dev, &cfg.recv_cq).ok_or(DeviceError::Invalid)?;
        let srq = match &cfg.srq {
            Some(s) => Some(crate::transport::verbs::srq_ptr(&dev, s).ok_or(DeviceError::Invalid)?),
            None => None,
        };
        let cap = |v: u32, max: u32| v.clamp(1, max.max(1));
        // SAFETY: an all-zero init attr is valid; pointers are live objects
        // of this device; the result is checked.
        let (qp, actual) = unsafe {
            let mut ia: ibv_qp_init_attr = std::mem::zeroed();
            ia.send_cq = send_cq;
            ia.recv_cq = recv_cq;
            ia.srq = srq.unwrap_or(std::ptr::null_mut());
            ia.qp_type = IBV_QPT_RC;
            ia.cap.max_send_wr = cap(cfg.send_depth, caps.max_qp_wr);
            ia.cap.max_recv_wr = if srq.is_some() {
                0
            } else {
                cap(cfg.recv_depth, caps.max_qp_wr)
            };
            ia.cap.max_send_sge = cap(cfg.max_send_sge, caps.max_sge);
            ia.cap.max_recv_sge = if srq.is_some() {
                0
            } else {
                cap(cfg.max_recv_sge, caps.max_sge)
            };
            ia.cap.max_inline_data = inline_want(dev.iwarp);
            let mut qp = (dev.lib.ibv_create_qp)(pd, &mut ia);
            if qp.is_null() && ia.cap.max_inline_data > 0 {
                // (siw refuses more than it has rather than capping it.)
                ia.cap.max_inline_data = 0;
                qp = (dev.lib.ibv_create_qp)(pd, &mut ia);
            }
            if qp.is_null() {
                tracing::debug!(
                    errno = %crate::transport::verbs::errno(),
                    send_wr = ia.cap.max_send_wr,
                    recv_wr = ia.cap.max_recv_wr,
                    "verbs: ibv_create_qp failed"
                );
                return Err(DeviceError::Resources);
            }
            (qp, ia.cap)
        };
        // SAFETY: `qp` is live.
        let num = unsafe { (*qp).qp_num };
        let ring_id = |d: &VerbsDevice| (d.next_id() & 0x7fff_ffff) as u32;
        let send = Arc::new(Ring::of_queue(
            ring_id(&dev),
            actual.max_send_wr,
            true,
            send_cq as usize,
            num,
        ));
        let recv = srq.is_none().then(|| {
            Arc::new(Ring::of_queue(
                ring_id(&dev),
                actual.max_recv_wr,
                false,
                recv_cq as usize,
                num,
            ))
        });
        let inner = Arc::new(QpInner {
            token: dev.next_id(),
            dev: dev.clone(),
            qp: Ptr(qp),
            num,
            cm: cfg.cm.clone(),
            cfg,
            send: send.clone(),
            recv: recv.clone(),
            state: AtomicU8::new(state_code(QpState::Idle)),
            id: Mutex::new(None),
            connecting: Mutex::new(None),
            attempt: std::sync::atomic::AtomicU64::new(0),
            max_send_sge: actual.max_send_sge,
            max_inline: actual.max_inline_data,
        });
        inner.to_init()?;
        dev.add_ring(send);
        if let Some(r) = recv {
            dev.add_ring(r);
        }
        dev.events.add_qp(num, Arc::downgrade(&inner));
        dev.events
            .set_owner(inner.token, Owner::Qp(Arc::downgrade(&inner)));
        Ok(Arc::new(VerbsQp(inner)))
    }
}

impl QpInner {
    fn lib(&self) -> &'static crate::transport::verbs::lib::Lib {
        self.dev.lib
    }

    pub(super) fn state(&self) -> QpState {
        state_of(self.state.load(Ordering::Acquire))
    }

    pub(super) fn set_state(&self, s: QpState) {
        self.state.store(state_code(s), Ordering::Release);
    }

    fn modify(&self, attr: &mut ibv_qp_attr, mask: u32) -> Result<(), DeviceError> {
        // SAFETY: a live queue pair and a filled attribute struct.
        if unsafe { (self.lib().ibv_modify_qp)(self.qp.0, attr, mask as i32) } != 0 {
            tracing::debug!(qp = self.num, state = attr.qp_state, err = %std::io::Error::last_os_error(), "verbs: ibv_modify_qp");
            return Err(DeviceError::State);
        }
        Ok(())
    }

    /// RESET -> INIT: receives may be posted from here on.
    fn to_init(&self) -> Result<(), DeviceError> {
        // SAFETY: all-zero is a valid attribute struct.
        let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = IBV_QPS_INIT;
        a.qp_access_flags =
            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
        let mut mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
        if !self.dev.iwarp {
            a.pkey_index = 0;
            a.port_num = self.dev.port;
            mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        }
        self.modify(&mut a, mask)
    }

    /// Any state -> ERR: outstanding work is flushed. siw flushes a
    /// terminated queue pair's send queue only if a request is in
    /// transmission (`siw_qp_nextstate_from_term`): the requests behind it
    /// would never complete. There, once the device's flushes (written
    /// during the modify) are polled, the rest is flushed here
    /// (`VerbsCq::flush_orphans`).
    pub(super) fn to_error(&self) {
        // SAFETY: all-zero is a valid attribute struct.
        let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = IBV_QPS_ERR;
        let _ = self.modify(&mut a, IBV_QP_STATE);
        if self.dev.loses_sq_flushes {
            self.orphan(&self.send);
        }
    }

    /// What `ring` has outstanding will not all be reported by the device:
    /// the CQ's poller flushes the rest (ring.rs).
    fn orphan(&self, ring: &Ring) {
        if ring.orphan() {
            self.dev.orphans.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// INIT -> RTR -> RTS with what rdma_cm computed for `id` (InfiniBand
    /// and RoCE; iWARP's kernel moves the queue pair itself).
    pub(super) fn to_rts(&self, id: *mut rdma_cm_id) -> Result<(), DeviceError> {
        if self.dev.iwarp {
            return Ok(());
        }
        for st in [IBV_QPS_RTR, IBV_QPS_RTS] {
            // SAFETY: all-zero is a valid attribute struct; `id` is live.
            let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
            a.qp_state = st;
            let mut mask = 0;
            // SAFETY: as above.
            if unsafe { (self.lib().rdma_init_qp_attr)(id, &mut a, &mut mask) } != 0 {
                return Err(DeviceError::State);
            }
            if st == IBV_QPS_RTR {
                a.min_rnr_timer = a.min_rnr_timer.max(12);
                // (The passive side moves its queue pair before it accepts:
                // then rdma_cm computes from the request alone.)
                a.max_dest_rd_atomic = a.max_dest_rd_atomic.min(self.ird());
            } else {
                a.max_rd_atomic = a.max_rd_atomic.min(self.ord());
                a.retry_cnt = 7;
                a.rnr_retry = 7;
                mask |= (IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY) as i32;
            }
            tracing::debug!(
                qp = self.num,
                state = st,
                max_rd_atomic = a.max_rd_atomic,
                max_dest_rd_atomic = a.max_dest_rd_atomic,
                "verbs: queue pair to RTR/RTS"
            );
            self.modify(&mut a, mask as u32)?;
        }
        Ok(())
    }

    pub(super) fn conn_param(&self, private_data: &[u8], ird: u8, ord: u8) -> rdma_conn_param {
        // SAFETY: all-zero is a valid parameter struct.
        let mut p: rdma_conn_param = unsafe { std::mem::zeroed() };
        p.private_data = private_data.as_ptr().cast();
        p.private_data_len = private_data.len().min(255) as u8;
        p.responder_resources = ird;
        p.initiator_depth = ord;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        p.flow_control = 1;
        p.qp_num = self.num;
        p
    }

    pub(super) fn ird(&self) -> u8 {
        self.cfg.ird.min(self.dev.capabilities().max_ird).min(255) as u8
    }

    pub(super) fn ord(&self) -> u8 {
        self.cfg.ord.min(self.dev.capabilities().max_ord).min(255) as u8
    }

    pub(super) fn set_id(&self, id: Option<*mut rdma_cm_id>) -> Option<*mut rdma_cm_id> {
        let old = std::mem::replace(&mut *lock_anyway(&self.id), id.map(Ptr));
        old.map(|p| p.0)
    }

    pub(super) fn id(&self) -> Option<*mut rdma_cm_id> {
        lock_anyway(&self.id).map(|p| p.0)
    }

    pub(super) fn num(&self) -> u32 {
        self.num
    }

    /// The timeout of the connection being made, milliseconds.
    pub(super) fn connect_timeout(&self) -> i32 {
        lock_anyway(&self.connecting).as_ref().map_or(2000, |c| c.1)
    }

    pub(super) fn take_connecting(&self) -> Option<(Vec<u8>, i32)> {
        lock_anyway(&self.connecting).take()
    }

    fn destroy_id(&self, id: *mut rdma_cm_id) {
        // SAFETY: the id is out of the queue pair; its events are all
        // acknowledged (the event thread acknowledges before handing on).
        unsafe {
            (self.lib().rdma_destroy_id)(id);
        }
    }

    /// The deadline of connection attempt `attempt` passed: if it is still
    /// being made, it is abandoned and reported timed out.
    pub(super) fn connect_timed_out(&self, attempt: u64) {
        if self.attempt.load(Ordering::Acquire) != attempt || self.state() != QpState::Connecting {
            return;
        }
        let id = self.set_id(None);
        self.take_connecting();
        self.to_error();
        self.set_state(QpState::Closed);
        self.cm.event(Some(self.num), CmEvent::TimedOut);
        if let Some(id) = id {
            // On iWARP, destroying an id whose MPA request the peer holds
            // waits out the MPA timeout (some 10 s on siw): not on the
            // event thread, which serves every connection and deadline.
            let lib = self.lib();
            let raw = id;
            let id = Ptr(id);
            let spawned = std::thread::Builder::new()
                .name("dat-verbs-reap".into())
                .spawn(move || {
                    let id = id;
                    // SAFETY: the id is out of the queue pair; nothing
                    // else destroys it.
                    unsafe {
                        (lib.rdma_destroy_id)(id.0);
                    }
                });
            if spawned.is_err() {
                // The closure was dropped unrun: destroy it here after all.
                self.destroy_id(raw);
            }
        }
    }

    /// An asynchronous error event: the queue pair broke.
    pub(super) fn broke(&self) {
        let was = self.state();
        self.to_error();
        self.set_state(QpState::Closed);
        if matches!(
            was,
            QpState::Connected | QpState::Connecting | QpState::Disconnecting
        ) {
            self.cm.event(Some(self.num), CmEvent::Broken);
        }
    }

    /// Delivers an event made up by this transport (from the event thread).
    pub(super) fn made_event(&self, ev: Made) {
        match ev {
            Made::Disconnected => self.cm.event(Some(self.num), CmEvent::Disconnected),
            Made::Broken => {
                if !matches!(self.state(), QpState::Connected | QpState::Disconnecting) {
                    return;
                }
                if let Some(id) = self.id() {
                    // SAFETY: the connection's live id.
                    unsafe {
                        (self.lib().rdma_disconnect)(id);
                    }
                }
                self.broke();
            }
        }
    }

    #[inline(always)]
    fn post_send_wr(&self, wr: &SendWr<'_>) -> Result<(), PostError> {
        if self.state() != QpState::Connected {
            return Err(PostError::State);
        }
        if wr.sgl.len() > MAX_SGE || wr.sgl.len() > self.max_send_sge as usize {
            return Err(PostError::TooManySge);
        }
        let need = match wr.op {
            SendOp::RdmaRead { .. } => Access::LOCAL_WRITE,
            _ => Access::LOCAL_READ,
        };
        let mut sges = Sges::new();
        let total = checked_sge_list(&self.dev, wr.sgl, need, self.cfg.pd, &mut sges)?;
        let (opcode, op, remote) = match wr.op {
            // Verbs does not tell a receiver whether a Send was solicited:
            // on InfiniBand and RoCE a solicited Send carries immediate
            // data that says so (iWARP has none: there every receive
            // counts as solicited).
            SendOp::Send { solicited: true } if !self.dev.iwarp => {
                (IBV_WR_SEND_WITH_IMM, WcOp::Send, None)
            }
            SendOp::Send { .. } => (IBV_WR_SEND, WcOp::Send, None),
            SendOp::RdmaWrite { remote_addr, rkey } => (
                IBV_WR_RDMA_WRITE,
                WcOp::RdmaWrite,
                Some((remote_addr, rkey)),
            ),
            SendOp::RdmaRead { remote_addr, rkey } => {
                (IBV_WR_RDMA_READ, WcOp::RdmaRead, Some((remote_addr, rkey)))
            }
        };
        // An RDMA Read is always signalled: siw completes the requests
        // after a Read before its response is in, so a later completion
        // would not prove the Read done.
        let signaled = wr.signaled || matches!(wr.op, SendOp::RdmaRead { .. });
        let mut flags = if signaled { IBV_SEND_SIGNALED } else { 0 };
        if matches!(wr.op, SendOp::Send { solicited: true }) {
            flags |= IBV_SEND_SOLICITED;
        }
        if wr.fence {
            flags |= IBV_SEND_FENCE;
        }
        if total <= u64::from(self.max_inline) && total > 0 && carries_data(&wr.op) {
            flags |= IBV_SEND_INLINE;
        }
        let n = wr.sgl.len();
        let r = self
            .send
            .post(wr.wr_id, wr.ctx, total, op, signaled, |wr_id| {
                // SAFETY: all-zero is a valid work request; it points at the
                // stack's sge array for the call only.
                let mut w: ibv_send_wr = unsafe { std::mem::zeroed() };
                w.wr_id = wr_id;
                w.sg_list = sges.as_mut_ptr();
                w.num_sge = n as i32;
                w.opcode = opcode;
                w.send_flags = flags;
                if opcode == IBV_WR_SEND_WITH_IMM {
                    w.__bindgen_anon_1.imm_data = SOLICITED_IMM.to_be();
                }
                if let Some((addr, rkey)) = remote {
                    w.wr.rdma.remote_addr = addr;
                    w.wr.rdma.rkey = rkey;
                }
                let mut bad = std::ptr::null_mut();
                // SAFETY: ibv_post_send is the device's op on a live queue pair.
                let rc = unsafe {
                    match (*(*self.qp.0).context).ops.post_send {
                        Some(f) => f(self.qp.0, &mut w, &mut bad),
                        None => libc::ENOSYS,
                    }
                };
                post_result(rc)
            });
        r.unwrap_or(Err(PostError::QueueFull))
    }

    #[inline(always)]
    fn post_recv_wr(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        let Some(ring) = &self.recv else {
            return Err(PostError::Unsupported);
        };
        if wr.sgl.len() > MAX_SGE {
            return Err(PostError::TooManySge);
        }
        let mut sges = Sges::new();
        let total = checked_sge_list(
            &self.dev,
            wr.sgl,
            Access::LOCAL_WRITE,
            self.cfg.pd,
            &mut sges,
        )?;
        let n = recv_sge_count(wr.sgl, self.dev.iwarp, &mut sges);
        ring.post(wr.wr_id, wr.ctx, total, WcOp::Recv, true, |wr_id| {
            // SAFETY: all-zero is a valid work request.
            let mut w: ibv_recv_wr = unsafe { std::mem::zeroed() };
            w.wr_id = wr_id;
            w.sg_list = sges.as_mut_ptr();
            w.num_sge = n as i32;
            let mut bad = std::ptr::null_mut();
            // SAFETY: ibv_post_recv is the device's op on a live queue pair.
            let rc = unsafe {
                match (*(*self.qp.0).context).ops.post_recv {
                    Some(f) => f(self.qp.0, &mut w, &mut bad),
                    None => libc::ENOSYS,
                }
            };
            post_result(rc)
        })
        .unwrap_or(Err(PostError::QueueFull))
    }
}

/// Sends and RDMA Writes carry their data in the request; an RDMA Read
/// cannot be inline.
fn carries_data(op: &SendOp) -> bool {
    !matches!(op, SendOp::RdmaRead { .. })
}

/// A scatter list as verbs takes it: the first `n` entries are set (no
/// more are written or read).
pub(super) struct Sges {
    a: [MaybeUninit<ibv_sge>; MAX_SGE],
}

impl Sges {
    pub(super) fn new() -> Sges {
        Sges {
            a: [const { MaybeUninit::uninit() }; MAX_SGE],
        }
    }

    /// For the work request: verbs reads `num_sge` entries.
    pub(super) fn as_mut_ptr(&mut self) -> *mut ibv_sge {
        self.a.as_mut_ptr().cast()
    }
}

/// The interface's scatter list as verbs', built in place (no copy of
/// the whole array on the post path) in the same pass that checks each
/// segment's key, range, rights and protection domain (the DAT layer's
/// post-time errors; a device would only fail the work request when it
/// runs, and break the connection). Returns the bytes in all. At most
/// `MAX_SGE` segments (the caller checked).
#[inline(always)]
pub(super) fn checked_sge_list(
    dev: &VerbsDevice,
    sgl: &[Sge],
    need: Access,
    pd: PdId,
    sges: &mut Sges,
) -> Result<u64, PostError> {
    let mut total = 0u64;
    for (d, s) in sges.a.iter_mut().zip(sgl) {
        if s.len > 0 {
            dev.check_key(s.lkey, s.addr, s.len, need, Some(pd))
                .map_err(PostError::Protection)?;
        }
        d.write(ibv_sge {
            addr: s.addr,
            length: u32::try_from(s.len).map_err(|_| PostError::Length)?,
            lkey: s.lkey,
        });
        total = total.wrapping_add(s.len);
    }
    Ok(total)
}

/// How many entries of a receive's scatter list verbs reads. siw flushes
/// a receive posted without segments at once (PRV_05, and every later
/// message lands one receive early: dto_e2e's size sweep), so on iWARP an
/// empty receive gets one segment of no bytes, which no device
/// dereferences.
#[inline(always)]
pub(super) fn recv_sge_count(sgl: &[Sge], iwarp: bool, sges: &mut Sges) -> usize {
    if sgl.is_empty() && iwarp {
        sges.a[0].write(ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        });
        return 1;
    }
    sgl.len()
}

pub(super) fn post_result(rc: i32) -> Result<(), PostError> {
    match rc {
        0 => Ok(()),
        rc => refused(rc),
    }
}

#[cold]
#[inline(never)]
fn refused(rc: i32) -> Result<(), PostError> {
    tracing::debug!(err = %std::io::Error::from_raw_os_error(rc), "verbs: the device refused a post");
    match rc {
        libc::ENOMEM => Err(PostError::QueueFull),
        libc::EINVAL => Err(PostError::State),
        libc::ENOSYS | libc::EOPNOTSUPP => Err(PostError::Unsupported),
        _ => Err(PostError::State),
    }
}

impl QueuePair for VerbsQp {
    fn num(&self) -> QpNum {
        self.0.num
    }

    fn state(&self) -> QpState {
        self.0.state()
    }

    #[inline]
    fn post_send(&self, wr: &SendWr<'_>) -> Result<(), PostError> {
        self.0.post_send_wr(wr)
    }

    #[inline]
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        self.0.post_recv_wr(wr)
    }

    fn post_bind(&self, wr: &BindWr) -> Result<u32, PostError> {
        let q = &self.0;
        if q.state() != QpState::Connected {
            return Err(PostError::State);
        }
        let mw = q.dev.mw(wr.window).ok_or(PostError::Unsupported)?;
        // An unbind (length 0) names a registration too where it can:
        // some providers (rxe) read it even then.
        let mr = match q.dev.key(wr.lkey) {
            Some(k) => k.mr.0,
            None if wr.len == 0 => std::ptr::null_mut(),
            None => return Err(PostError::Protection(KeyFault::Key)),
        };
        let mut access = 0;
        if wr.access.contains(Access::REMOTE_READ) {
            access |= IBV_ACCESS_REMOTE_READ;
        }
        if wr.access.contains(Access::REMOTE_WRITE) {
            access |= IBV_ACCESS_REMOTE_WRITE;
        }
        let mut flags = IBV_SEND_SIGNALED;
        if wr.fence {
            flags |= IBV_SEND_FENCE;
        }
        let mut rkey = 0;
        q.send
            .post(wr.wr_id, wr.ctx, 0, WcOp::Bind, true, |wr_id| {
                // SAFETY: all-zero is a valid bind; the window, registration
                // and queue pair are live objects of this device; the op
                // exists (checked when the device opened).
                unsafe {
                    let mut b: ibv_mw_bind = std::mem::zeroed();
                    b.wr_id = wr_id;
                    b.send_flags = flags;
                    b.bind_info.mr = mr;
                    b.bind_info.addr = wr.addr;
                    b.bind_info.length = wr.len;
                    b.bind_info.mw_access_flags = access;
                    let rc = match (*(*mw).context).ops.bind_mw {
                        Some(f) => f(q.qp.0, mw, &mut b),
                        None => libc::ENOSYS,
                    };
                    rkey = (*mw).rkey;
                    post_result(rc)
                }
            })
            .unwrap_or(Err(PostError::QueueFull))?;
        Ok(rkey)
    }

    fn connect(
        &self,
        remote: SocketAddr,
        port: u16,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<(), DeviceError> {
        let q = &self.0;
        if q.state() != QpState::Idle {
            return Err(DeviceError::State);
        }
        let ms = i32::try_from(timeout.as_millis())
            .unwrap_or(i32::MAX)
            .max(1);
        let mut id = std::ptr::null_mut();
        // SAFETY: rdma_cm calls on the device's channel; results checked.
        unsafe {
            if (q.lib().rdma_create_id)(q.dev.channel.0, &mut id, q.token as *mut _, RDMA_PS_TCP)
                != 0
            {
                return Err(DeviceError::Resources);
            }
        }
        *lock_anyway(&q.connecting) = Some((private_data.to_vec(), ms));
        q.set_state(QpState::Connecting);
        let attempt = q.attempt.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(at) = std::time::Instant::now().checked_add(timeout) {
            q.dev.events.deadline(at, Arc::downgrade(q), attempt);
        }
        if let Some(old) = q.set_id(Some(id)) {
            q.destroy_id(old);
        }
        let mut src = sockaddr_of(SocketAddr::new(q.dev.address().ip(), 0));
        let mut dst = sockaddr_of(SocketAddr::new(remote.ip(), port));
        // Bound first, so that the local port (the peer's remote_port_qual)
        // is known from here on, not only once the address is resolved.
        // SAFETY: both addresses are valid sockaddr storage for the calls.
        let rc = unsafe {
            match (q.lib().rdma_bind_addr)(id, src.as_mut_ptr()) {
                0 => (q.lib().rdma_resolve_addr)(id, std::ptr::null_mut(), dst.as_mut_ptr(), ms),
                e => e,
            }
        };
        if rc != 0 {
            q.set_id(None);
            q.destroy_id(id);
            q.set_state(QpState::Idle);
            return Err(DeviceError::Invalid);
        }
        Ok(())
    }

    fn disconnect(&self, _graceful: bool) -> Result<(), DeviceError> {
        let q = &self.0;
        match q.state() {
            QpState::Connected => {
                q.set_state(QpState::Disconnecting);
                if let Some(id) = q.id() {
                    // SAFETY: the connection's live id.
                    unsafe {
                        (q.lib().rdma_disconnect)(id);
                    }
                }
                if !q.dev.iwarp {
                    q.to_error();
                }
                Ok(())
            }
            QpState::Connecting => {
                if let Some(id) = q.set_id(None) {
                    q.destroy_id(id);
                }
                q.to_error();
                q.set_state(QpState::Closed);
                q.dev.events.defer(Arc::downgrade(q), Made::Disconnected);
                Ok(())
            }
            QpState::Disconnecting | QpState::Idle | QpState::Closed => Ok(()),
        }
    }

    fn reset(&self) -> Result<(), DeviceError> {
        let q = &self.0;
        if let Some(id) = q.set_id(None) {
            q.destroy_id(id);
        }
        // SAFETY: all-zero is a valid attribute struct.
        let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = IBV_QPS_RESET;
        q.modify(&mut a, IBV_QP_STATE)?;
        // A reset queue pair reports nothing more of what it had: the
        // poller flushes it (every post gets its completion, §3.3).
        q.orphan(&q.send);
        if let Some(r) = &q.recv {
            q.orphan(r);
        }
        q.to_init()?;
        q.set_state(QpState::Idle);
        Ok(())
    }

    fn recv_outstanding(&self) -> (u32, u32) {
        match &self.0.recv {
            Some(r) => (r.outstanding(), r.depth()),
            None => (0, 0),
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        let id = self.0.id()?;
        // SAFETY: the connection's live id; its source address is a
        // sockaddr rdma_cm filled.
        unsafe {
            socket_addr_at(std::ptr::addr_of!(
                (*id).route.addr.__bindgen_anon_1.src_addr
            ))
        }
    }
}

impl Drop for QpInner {
    fn drop(&mut self) {
        let q = self;
        q.dev.events.remove_owner(q.token);
        q.dev.events.remove_qp(q.num);
        if let Some(id) = q.set_id(None) {
            q.destroy_id(id);
        }
        // SAFETY: nothing posts on the queue pair any more.
        unsafe {
            (q.lib().ibv_destroy_qp)(q.qp.0);
        }
        // A ring marked to be flushed (a queue pair reset before it went:
        // dat_ep_modify keeps the old queue pair's streams for those
        // completions) stays known until the CQ's poller has flushed it.
        for r in std::iter::once(&q.send).chain(q.recv.as_ref()) {
            r.retire();
            if !r.is_orphan() {
                q.dev.remove_ring(r.id);
            }
        }
    }
}
