//! Endpoint: the DAT state machine (semantics-ep.md §1) over a transport
//! queue pair, built on first need (docs/endpoints.md).
//!
//! Invariants: the state is an atomic read without a lock and changed only
//! under the EP's own mutex (`inner`); no transport call is made with that
//! mutex held (a transport may report a connection event on the calling
//! thread). Posts are remembered in the queue pair's order, and a DTO holds
//! one `max_*_dtos` slot until its completion is dequeued.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::event::Event;
use crate::object::ia::{self, Ia};
use crate::object::srq::Srq;
use crate::object::{lock, lock_anyway, Object, Pz};
use crate::object::{EVD_CONNECTION_FLAG, EVD_DTO_FLAG};
use crate::transport::api::{CompletionQueue, DeviceError, PdId, QpConfig, QpNum, QueuePair};
use crate::transport::SockAddrStorage;

mod attr;
mod cm;
mod dto;

/// The segment types a post takes.
pub use crate::object::segment::{RemoteSegment, Segment, MAX_IOV};
use attr::field;
pub use attr::EpAttr;
use cm::EpCm;
pub(crate) use cm::NON_PEER_MARK;
pub use dto::Request;

/// One of an EP's two work queues: requests (sends, RDMA, binds) or
/// receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WorkQueue {
    Request,
    Receive,
}

/// An EVD as an endpoint uses it (implemented by the EVD, which knows
/// endpoints: the EP knows its EVDs only through this): the CQ its queue
/// pair feeds, the streams feeding it, and the events the EP queues itself.
pub(crate) trait EpEvd: crate::object::srq::Feeder {
    /// Its handle.
    fn handle(&self) -> Handle;
    /// Its transport CQ (EVDs with DTO or RMR-bind flags).
    fn cq(&self) -> Option<Arc<dyn CompletionQueue>>;
    /// A queue pair of `ep` feeds the CQ (one direction per call).
    fn attach(&self, qp: QpNum, ep: &Arc<Ep>, queue: WorkQueue, depth: u32);
    /// The queue pair no longer feeds the EVD.
    fn detach(&self, qp: QpNum);
    /// Records the completion flags of an EP stream feeding the EVD.
    fn set_stream_flags(&self, ep: Handle, queue: WorkQueue, flags: u32);
    /// Forgets an EP stream.
    fn clear_stream_flags(&self, ep: Handle, queue: WorkQueue);
    /// Whether a new stream with `flags` may join.
    fn sharing_ok(&self, flags: u32, queue: WorkQueue) -> bool;
    /// Queues an event behind the completions already in the CQ.
    fn post_after_completions(&self, ev: Event, notify: bool);
}

/// An EVD argument in an EP role ([`crate::object::evd_for_role`]).
fn evd_for_role(ia: &Ia, addr: usize, need: u32, sub: Sub) -> Result<Option<Arc<dyn EpEvd>>> {
    let evd = crate::object::evd_for_role(ia, addr, need, sub)?;
    Ok(evd.map(|e| e as Arc<dyn EpEvd>))
}

/// The DAT state of an endpoint (semantics-ep.md §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EpState {
    Unconnected,
    Reserved,
    PassiveConnectionPending,
    ActiveConnectionPending,
    TentativeConnectionPending,
    Connected,
    DisconnectPending,
    Disconnected,
    CompletionPending,
}

impl EpState {
    /// Its `DAT_EP_STATE` value.
    pub const fn to_dat(self) -> u32 {
        match self {
            EpState::Unconnected => 0,
            EpState::Reserved => 2,
            EpState::PassiveConnectionPending => 4,
            EpState::ActiveConnectionPending => 6,
            EpState::TentativeConnectionPending => 7,
            EpState::Connected => 9,
            EpState::DisconnectPending => 10,
            EpState::Disconnected => 11,
            EpState::CompletionPending => 12,
        }
    }

    /// The state `EpState as u8` stored (only [`Ep::set_state`] and the
    /// constructors store into the atomic, so nothing else occurs).
    fn from_stored(v: u8) -> EpState {
        match v {
            0 => EpState::Unconnected,
            1 => EpState::Reserved,
            2 => EpState::PassiveConnectionPending,
            3 => EpState::ActiveConnectionPending,
            4 => EpState::TentativeConnectionPending,
            5 => EpState::Connected,
            6 => EpState::DisconnectPending,
            7 => EpState::Disconnected,
            _ => EpState::CompletionPending,
        }
    }
}

/// `DAT_EP_PARAM` as the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpParam {
    pub ia: Handle,
    /// `DAT_EP_STATE`.
    pub state: u32,
    /// `struct sockaddr *` of the IA.
    pub local_addr: usize,
    pub local_port: u64,
    /// `struct sockaddr *` of the peer (valid while the EP lives), or 0.
    pub remote_addr: usize,
    pub remote_port: u64,
    pub pz: Handle,
    pub recv_evd: Handle,
    pub request_evd: Handle,
    pub connect_evd: Handle,
    pub srq: Handle,
    pub attr: EpAttr,
}

/// What `dat_ep_create[_with_srq]` was given.
#[derive(Clone, Copy, Debug)]
pub struct EpArgs {
    pub pz: Handle,
    pub recv_evd: Handle,
    pub request_evd: Handle,
    pub connect_evd: Handle,
    /// NULL for `dat_ep_create`.
    pub srq: Handle,
    pub with_srq: bool,
    pub attr: Option<EpAttr>,
}

struct Inner {
    pz: Option<Arc<Pz>>,
    recv_evd: Option<Arc<dyn EpEvd>>,
    req_evd: Option<Arc<dyn EpEvd>>,
    conn_evd: Option<Arc<dyn EpEvd>>,
    srq: Option<Arc<Srq>>,
    attr: EpAttr,
    qp: Option<Arc<dyn QueuePair>>,
    /// CQs for a direction whose EVD is NULL (completions discarded).
    sink: Option<Arc<dyn CompletionQueue>>,
    local_port: u64,
    remote: Option<SocketAddr>,
    remote_port: u64,
    /// Queue pairs replaced by `dat_ep_modify` whose flushed receives are
    /// still to be reported (their streams stay attached).
    retired: Vec<QpNum>,
    /// Reserved by an RSP, or waiting for the consumer's answer to a CR.
    reserved_by: Option<Handle>,
    /// Created by a provider PSP for a request (handed back on reject).
    provider_created: bool,
    freed: bool,
}

/// Data the consumer reads through pointers in events and queries.
struct Exposed {
    /// The acceptor's private data of the last ESTABLISHED.
    private_data: [u8; 256],
    remote: SockAddrStorage,
}

/// An endpoint.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Ep {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    /// An [`EpState`] as `u8`.
    state: AtomicU8,
    inner: Mutex<Inner>,
    req_out: AtomicI32,
    recv_out: AtomicI32,
    req_max: AtomicI32,
    recv_max: AtomicI32,
    /// Completion flags of the two streams (translation reads them).
    recv_flags: AtomicU32,
    /// The SRQ the EP receives from (fixed at creation).
    srq_handle: Option<Handle>,
    /// A completion sink exists (a direction's EVD is NULL).
    has_sink: AtomicBool,
    exposed: Mutex<Exposed>,
    me: Weak<Ep>,
}

impl handle::Kind for Ep {
    const TYPE: HandleType = HandleType::Ep;
}

/// `DAT_INVALID_STATE` naming the endpoint's current state.
pub fn state_error(state: EpState) -> DatError {
    DatError::state(match state {
        EpState::Unconnected => Sub::EpUnconnected,
        EpState::Reserved => Sub::EpReserved,
        EpState::PassiveConnectionPending => Sub::EpPassConnPending,
        EpState::ActiveConnectionPending => Sub::EpActConnPending,
        EpState::TentativeConnectionPending => Sub::EpTentConnPending,
        EpState::Connected => Sub::EpConnected,
        EpState::DisconnectPending => Sub::EpDiscPending,
        EpState::Disconnected => Sub::EpDisconnected,
        EpState::CompletionPending => Sub::EpComplPending,
    })
}

fn device_error(e: DeviceError) -> DatError {
    match e {
        DeviceError::Resources | DeviceError::Memory(_) => DatError::resources(Sub::ResourceTep),
        DeviceError::Invalid => DatError::of(Type::InvalidParameter),
        DeviceError::PortInUse => DatError::of(Type::ConnQualInUse),
        DeviceError::NotFound | DeviceError::Busy | DeviceError::State => {
            DatError::of(Type::InvalidState)
        }
        DeviceError::Unsupported => DatError::of(Type::ModelNotSupported),
    }
}

impl Ep {
    /// `dat_ep_create` / `dat_ep_create_with_srq`.
    pub fn create(ia: &Arc<Ia>, args: EpArgs) -> Result<Arc<Ep>> {
        let pz = crate::object::pz_for(ia, args.pz.addr(), !args.with_srq)?;
        let recv = evd_for_role(ia, args.recv_evd.addr(), EVD_DTO_FLAG, Sub::HandleEvdRecv)?;
        let req = evd_for_role(
            ia,
            args.request_evd.addr(),
            EVD_DTO_FLAG,
            Sub::HandleEvdRequest,
        )?;
        let conn = evd_for_role(
            ia,
            args.connect_evd.addr(),
            EVD_CONNECTION_FLAG,
            Sub::HandleEvdConn,
        )?;
        let srq = if args.with_srq {
            let s = crate::object::srq::lookup(args.srq.addr())?;
            ia::same_ia(&s.ia, ia, Sub::HandleSrq)?;
            Some(s.arc())
        } else {
            None
        };
        if args.with_srq && args.attr.is_none() {
            return Err(DatError::invalid(Input::EpAttributes));
        }
        if let (Some(s), Some(p)) = (&srq, &pz) {
            if s.pz.handle != p.handle && !ia.provider_attributes.srq_ep_pz_difference_supported {
                return Err(DatError::invalid(Input::PzHandle));
            }
        }
        let mut attr = args.attr.unwrap_or_else(|| Self::default_attr(ia));
        if srq.is_some() {
            // Ignored for an SRQ EP (§4.2): the SRQ's own limit applies.
            attr.max_recv_iov = ia.limits.max_iov_segments_per_dto;
        }
        Self::check_attr(ia, &attr, srq.is_some(), Input::EpAttributes)?;
        if args.attr.is_some() {
            if attr.max_recv_dtos > 0 && recv.is_none() && srq.is_none() {
                return Err(DatError::invalid(Input::EpAttributes));
            }
            if attr.max_request_dtos > 0 && req.is_none() {
                return Err(DatError::invalid(Input::EpAttributes));
            }
        }
        Self::check_sharing(
            recv.as_ref(),
            attr.recv_completion_flags,
            req.as_ref(),
            attr.request_completion_flags,
            conn.as_ref(),
        )?;
        let mut st = ia.live_state()?;
        st.check_limit(HandleType::Ep, ia.limits.max_eps, Sub::ResourceTep)?;
        if let Some(p) = &pz {
            if !handle::is_live(p.handle) {
                return Err(DatError::handle(Sub::HandlePz));
            }
        }
        let res = handle::reserve(ia.provider_word)?;
        let ep = Self::build(
            ia,
            res.handle(),
            attr,
            pz.map(|p| p.arc()),
            recv,
            req,
            conn,
            srq,
        );
        ep.take_uses(&mut st);
        st.insert(ep.handle, Object::Ep(ep.clone()));
        res.publish(ep.clone());
        Ok(ep)
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        ia: &Arc<Ia>,
        handle: Handle,
        attr: EpAttr,
        pz: Option<Arc<Pz>>,
        recv: Option<Arc<dyn EpEvd>>,
        req: Option<Arc<dyn EpEvd>>,
        conn: Option<Arc<dyn EpEvd>>,
        srq: Option<Arc<Srq>>,
    ) -> Arc<Ep> {
        Arc::new_cyclic(|me| Ep {
            handle,
            ia: ia.clone(),
            state: AtomicU8::new(EpState::Unconnected as u8),
            req_out: AtomicI32::new(0),
            recv_out: AtomicI32::new(0),
            req_max: AtomicI32::new(attr.max_request_dtos),
            recv_max: AtomicI32::new(attr.max_recv_dtos),
            recv_flags: AtomicU32::new(attr.recv_completion_flags),
            srq_handle: srq.as_ref().map(|s| s.handle),
            has_sink: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                pz,
                recv_evd: recv,
                req_evd: req,
                conn_evd: conn,
                srq,
                attr,
                qp: None,
                sink: None,
                retired: Vec::new(),
                local_port: 0,
                remote: None,
                remote_port: 0,
                reserved_by: None,
                provider_created: false,
                freed: false,
            }),
            exposed: Mutex::new(Exposed {
                private_data: [0; 256],
                remote: SockAddrStorage { bytes: [0; 32] },
            }),
            me: me.clone(),
        })
    }

    /// An EP a provider PSP creates for an arriving request: no PZ, no
    /// EVDs, TENTATIVE_CONNECTION_PENDING.
    pub(crate) fn create_for_request(ia: &Arc<Ia>) -> Result<Arc<Ep>> {
        let mut st = ia.live_state()?;
        st.check_limit(HandleType::Ep, ia.limits.max_eps, Sub::ResourceTep)?;
        let res = handle::reserve(ia.provider_word)?;
        let ep = Self::build(
            ia,
            res.handle(),
            Self::default_attr(ia),
            None,
            None,
            None,
            None,
            None,
        );
        ep.state
            .store(EpState::TentativeConnectionPending as u8, Ordering::Release);
        lock_anyway(&ep.inner).provider_created = true;
        st.insert(ep.handle, Object::Ep(ep.clone()));
        res.publish(ep.clone());
        Ok(ep)
    }

    /// Records this EP's uses of its PZ, EVDs and SRQ (IA lock held).
    fn take_uses(&self, st: &mut ia::IaState) {
        let i = lock_anyway(&self.inner);
        if let Some(p) = &i.pz {
            st.add_use(p.handle);
        }
        for e in [&i.recv_evd, &i.req_evd, &i.conn_evd].into_iter().flatten() {
            st.add_use(e.handle());
        }
        if let Some(s) = &i.srq {
            st.add_use(s.handle);
        }
        Self::feed_srq(&i);
        drop(i);
        self.stream_flags_changed();
    }

    /// Tells the SRQ (if any) where its receives complete (`Srq::query`).
    fn feed_srq(i: &Inner) {
        if let (Some(s), Some(e)) = (&i.srq, &i.recv_evd) {
            let e: Arc<dyn crate::object::srq::Feeder> = e.clone();
            s.fed_by(&e);
        }
    }

    fn drop_uses(i: &Inner, st: &mut ia::IaState) {
        if let Some(p) = &i.pz {
            st.drop_use(p.handle);
        }
        for e in [&i.recv_evd, &i.req_evd, &i.conn_evd].into_iter().flatten() {
            st.drop_use(e.handle());
        }
        if let Some(s) = &i.srq {
            st.drop_use(s.handle);
        }
    }

    /// Threshold-one bookkeeping of the EVDs (UNSIGNALLED or SOLICITED_WAIT streams).
    fn stream_flags_changed(&self) {
        let i = lock_anyway(&self.inner);
        self.recv_flags
            .store(i.attr.recv_completion_flags, Ordering::Release);
        if let Some(e) = &i.recv_evd {
            e.set_stream_flags(
                self.handle,
                WorkQueue::Receive,
                i.attr.recv_completion_flags,
            );
        }
        if let Some(e) = &i.req_evd {
            e.set_stream_flags(
                self.handle,
                WorkQueue::Request,
                i.attr.request_completion_flags,
            );
        }
    }

    fn clear_stream_flags(&self, i: &Inner) {
        if let Some(e) = &i.recv_evd {
            e.clear_stream_flags(self.handle, WorkQueue::Receive);
        }
        if let Some(e) = &i.req_evd {
            e.clear_stream_flags(self.handle, WorkQueue::Request);
        }
    }

    #[inline]
    fn inner(&self) -> Result<MutexGuard<'_, Inner>> {
        let i = lock(&self.inner)?;
        if i.freed {
            return Err(DatError::handle(Sub::HandleEp));
        }
        Ok(i)
    }

    /// The current state.
    pub fn state(&self) -> EpState {
        EpState::from_stored(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, s: EpState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// `dat_ep_query`.
    pub fn query(&self, mask: u64) -> Result<EpParam> {
        if mask & !field::ALL != 0 {
            return Err(DatError::invalid(Input::EpParamMask));
        }
        let i = self.inner()?;
        let remote_addr = if i.remote.is_some() {
            let x = lock_anyway(&self.exposed);
            &x.remote as *const SockAddrStorage as usize
        } else {
            0
        };
        Ok(EpParam {
            ia: self.ia.handle,
            state: self.state().to_dat(),
            local_addr: &*self.ia.sockaddr as *const SockAddrStorage as usize,
            local_port: i.local_port,
            remote_addr,
            remote_port: i.remote_port,
            pz: i.pz.as_ref().map_or(Handle::NULL, |p| p.handle),
            recv_evd: i.recv_evd.as_ref().map_or(Handle::NULL, |e| e.handle()),
            request_evd: i.req_evd.as_ref().map_or(Handle::NULL, |e| e.handle()),
            connect_evd: i.conn_evd.as_ref().map_or(Handle::NULL, |e| e.handle()),
            srq: i.srq.as_ref().map_or(Handle::NULL, |s| s.handle),
            attr: i.attr,
        })
    }

    /// The peer of a CONNECTED EP and the qualifier it was reached on
    /// (`dat_ep_dup_connect`).
    pub fn connected_peer(&self) -> Result<(SocketAddr, u64)> {
        let i = self.inner()?;
        let s = self.state();
        if s != EpState::Connected {
            return Err(state_error(s));
        }
        i.remote
            .map(|r| (r, i.remote_port))
            .ok_or(DatError::of(Type::InvalidState))
    }

    /// `dat_ep_get_status`: state (`DAT_EP_STATE`), receive idle, request
    /// idle.
    pub fn status(&self) -> Result<(u32, bool, bool)> {
        let i = self.inner()?;
        let recv_idle = if i.srq.is_some() {
            i.qp.as_ref().is_none_or(|q| q.recv_outstanding().0 == 0)
                && self.recv_out.load(Ordering::Acquire) <= 0
        } else {
            self.recv_out.load(Ordering::Acquire) <= 0
        };
        Ok((
            self.state().to_dat(),
            recv_idle,
            self.req_out.load(Ordering::Acquire) <= 0,
        ))
    }

    /// `dat_ep_recv_query`: buffers allocated to the EP and their span.
    pub fn recv_query(&self) -> Result<(i32, i32)> {
        let _i = self.inner()?;
        let n = self.recv_out.load(Ordering::Acquire).max(0);
        Ok((n, n))
    }

    // ───────────────────────── queue pair and streams ─────────────────────────

    /// The queue pair, built on first need from the current configuration.
    #[inline]
    fn ensure_qp(&self, i: &mut Inner) -> Result<Arc<dyn QueuePair>> {
        if let Some(q) = &i.qp {
            return Ok(q.clone());
        }
        self.build_qp(i)
    }

    #[cold]
    fn build_qp(&self, i: &mut Inner) -> Result<Arc<dyn QueuePair>> {
        let pz = i.pz.clone().ok_or(DatError::state(Sub::EpNotReady))?;
        let dev = &self.ia.dev;
        let has_sink = &self.has_sink;
        let sink = |i: &mut Inner| -> Result<Arc<dyn CompletionQueue>> {
            if let Some(s) = &i.sink {
                return Ok(s.clone());
            }
            let s = dev.create_cq(1024).map_err(device_error)?;
            i.sink = Some(s.clone());
            has_sink.store(true, Ordering::Relaxed);
            Ok(s)
        };
        let send_cq = match i.req_evd.as_ref().and_then(|e| e.cq()) {
            Some(c) => c,
            None => sink(i)?,
        };
        let recv_cq = match i.recv_evd.as_ref().and_then(|e| e.cq()) {
            Some(c) => c,
            None => sink(i)?,
        };
        let a = &i.attr;
        let pos = |v: i32| u32::try_from(v.max(1)).unwrap_or(1);
        let cfg = QpConfig {
            pd: PdId(pz.key_id()),
            send_cq,
            recv_cq,
            srq: i.srq.as_ref().map(|s| s.transport()),
            send_depth: pos(a.max_request_dtos),
            recv_depth: pos(a.max_recv_dtos),
            max_send_sge: pos(a
                .max_request_iov
                .max(a.max_rdma_read_iov)
                .max(a.max_rdma_write_iov))
            .min(MAX_IOV as u32),
            max_recv_sge: pos(a.max_recv_iov).min(MAX_IOV as u32),
            ird: u32::try_from(a.max_rdma_read_in.max(0)).unwrap_or(0),
            ord: u32::try_from(a.max_rdma_read_out.max(0)).unwrap_or(0),
            cm: Arc::new(EpCm {
                ep: self.me.clone(),
            }),
        };
        let qp = dev.create_qp(cfg).map_err(device_error)?;
        self.attach_streams(i, qp.num());
        i.qp = Some(qp.clone());
        Ok(qp)
    }

    fn attach_streams(&self, i: &Inner, num: QpNum) {
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let req_depth = u32::try_from(i.attr.max_request_dtos.max(1)).unwrap_or(1);
        let recv_depth = if let Some(s) = &i.srq {
            s.depth()
        } else {
            u32::try_from(i.attr.max_recv_dtos.max(1)).unwrap_or(1)
        };
        if let Some(e) = &i.req_evd {
            e.attach(num, &me, WorkQueue::Request, req_depth);
        }
        if let Some(e) = &i.recv_evd {
            e.attach(num, &me, WorkQueue::Receive, recv_depth);
        }
    }

    /// Takes the queue pair away (its streams detached); the caller drops
    /// it with no lock held.
    fn detach_qp(&self, i: &mut Inner) -> Option<Arc<dyn QueuePair>> {
        for n in std::mem::take(&mut i.retired) {
            for e in [&i.req_evd, &i.recv_evd].into_iter().flatten() {
                e.detach(n);
            }
        }
        let qp = i.qp.take()?;
        for e in [&i.req_evd, &i.recv_evd].into_iter().flatten() {
            e.detach(qp.num());
        }
        self.req_out.store(0, Ordering::Release);
        self.recv_out.store(0, Ordering::Release);
        Some(qp)
    }

    /// `dat_ep_free`.
    pub fn free(&self) -> Result<()> {
        let ia = &self.ia;
        let mut st = ia.live_state()?;
        let (qp, connected) = {
            let mut i = self.inner()?;
            let state = self.state();
            if matches!(
                state,
                EpState::Reserved
                    | EpState::PassiveConnectionPending
                    | EpState::TentativeConnectionPending
            ) {
                return Err(state_error(state));
            }
            st.remove(self.handle, Sub::HandleEp)?;
            Self::drop_uses(&i, &mut st);
            self.clear_stream_flags(&i);
            i.freed = true;
            let connected = matches!(
                state,
                EpState::ActiveConnectionPending
                    | EpState::CompletionPending
                    | EpState::Connected
                    | EpState::DisconnectPending
            );
            let qp = self.detach_qp(&mut i);
            i.pz = None;
            i.recv_evd = None;
            i.req_evd = None;
            i.conn_evd = None;
            i.srq = None;
            i.sink = None;
            (qp, connected)
        };
        drop(st);
        if let Some(qp) = qp {
            if connected {
                let _ = qp.disconnect(false);
            }
        }
        Ok(())
    }

    /// IA close: the EP dies with it.
    pub(crate) fn destroy(&self) {
        let qp = {
            let mut i = lock_anyway(&self.inner);
            i.freed = true;
            let qp = self.detach_qp(&mut i);
            i.pz = None;
            i.recv_evd = None;
            i.req_evd = None;
            i.conn_evd = None;
            i.srq = None;
            i.sink = None;
            qp
        };
        if let Some(qp) = qp {
            let _ = qp.disconnect(false);
        }
    }
}

/// Looks up a live EP, `DAT_INVALID_HANDLE/EP` otherwise. Lock-free.
#[inline]
pub fn lookup(addr: usize) -> Result<Ref<Ep>> {
    handle::expect::<Ep>(addr, Sub::HandleEp)
}
