//! Endpoint: the DAT state machine (semantics-ep.md §1) over a transport
//! queue pair.
//!
//! **State.** The DAT state is an atomic (posting reads it without a lock);
//! every transition is made under the endpoint's own mutex (`inner`), which
//! also holds the PZ, the EVDs, the attributes and the queue pair. No
//! transport call is made with that mutex held: a transport may report a
//! connection event on the calling thread (a refused connect does).
//!
//! **Completions.** Request and receive completions stay in the transport
//! CQ of the EVD until the consumer dequeues or waits; the EVD then asks
//! the endpoint to translate each one ([`Ep::translate`]). Per-post
//! completion flags and RMR handles are remembered in posting order
//! (`req_posts`, `recv_posts`): a queue pair completes its send queue in
//! order, and its own receive queue in order. Threads posting on the same
//! endpoint take turns per direction (`req_order`, `recv_order`) from
//! remembering a post until the queue pair has it, so that the remembered
//! order is the queue pair's.
//!
//! **Slots.** A DTO holds one of the endpoint's `max_*_dtos` slots from its
//! post until its completion is dequeued (§3.6); the completion event
//! carries a [`Credit`] that the EVD releases.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::error::{DatError, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::event::{self, Credit, Event, EventData};
use crate::object::ia::{self, Ia};
use crate::object::srq::Srq;
use crate::object::{lock, lock_anyway, Evd, Object, Pz, Rmr};
use crate::object::{EVD_CONNECTION_FLAG, EVD_DTO_FLAG};
use crate::transport::verbs::Device;
use crate::transport::verbs::{
    Access, BindWr, CmEvent, CmHandler, CompletionQueue, DeviceError, PdId, PostError, QpConfig,
    QpNum, QueuePair, RecvWr, SendOp, SendWr, Sge, Wc, WcOp, WcStatus,
};
use crate::transport::{self, SockAddrStorage};

/// `DAT_EP_STATE` values.
pub const UNCONNECTED: u32 = 0;
pub const RESERVED: u32 = 2;
pub const PASSIVE_CONNECTION_PENDING: u32 = 4;
pub const ACTIVE_CONNECTION_PENDING: u32 = 6;
pub const TENTATIVE_CONNECTION_PENDING: u32 = 7;
pub const CONNECTED: u32 = 9;
pub const DISCONNECT_PENDING: u32 = 10;
pub const DISCONNECTED: u32 = 11;
pub const COMPLETION_PENDING: u32 = 12;

/// `DAT_COMPLETION_*_FLAG`.
pub const COMPLETION_SUPPRESS: u32 = 0x01;
pub const COMPLETION_SOLICITED_WAIT: u32 = 0x02;
pub const COMPLETION_UNSIGNALLED: u32 = 0x04;
pub const COMPLETION_BARRIER_FENCE: u32 = 0x08;
pub const COMPLETION_EVD_THRESHOLD: u32 = 0x10;
const POST_FLAGS: u32 = 0x0f;

/// `DAT_SERVICE_TYPE_RC`.
pub const SERVICE_TYPE_RC: u32 = 0;
/// `DAT_QOS_BEST_EFFORT` and every defined QoS bit.
pub const QOS_BEST_EFFORT: u32 = 0;
const QOS_DEFINED: u32 = 0x0f;
/// `DAT_CLOSE_GRACEFUL_FLAG`.
pub const CLOSE_GRACEFUL: u32 = 1;
/// `DAT_CONNECT_MULTIPATH_FLAG`.
pub const CONNECT_MULTIPATH: u32 = 1;
/// RDMA Reads in and out of an EP created without attributes.
const DEFAULT_RDMA_READS: i32 = 4;

/// `DAT_HW_DEFAULT` / `DAT_WATERMARK_INFINITE`.
pub const HW_DEFAULT: i32 = -1;
/// `DAT_VALUE_UNKNOWN`.
pub const VALUE_UNKNOWN: i32 = -2;

/// `DAT_EP_FIELD_*` mask bits.
pub mod field {
    pub const IA_HANDLE: u64 = 0x1;
    pub const EP_STATE: u64 = 0x2;
    pub const LOCAL_IA_ADDRESS: u64 = 0x4;
    pub const LOCAL_PORT_QUAL: u64 = 0x8;
    pub const REMOTE_IA_ADDRESS: u64 = 0x10;
    pub const REMOTE_PORT_QUAL: u64 = 0x20;
    pub const PZ: u64 = 0x40;
    pub const RECV_EVD: u64 = 0x80;
    pub const REQUEST_EVD: u64 = 0x100;
    pub const CONNECT_EVD: u64 = 0x200;
    pub const SRQ: u64 = 0x400;
    pub const SERVICE_TYPE: u64 = 0x1000;
    pub const MAX_MESSAGE_SIZE: u64 = 0x2000;
    pub const MAX_RDMA_SIZE: u64 = 0x4000;
    pub const QOS: u64 = 0x8000;
    pub const RECV_COMPLETION_FLAGS: u64 = 0x10000;
    pub const REQUEST_COMPLETION_FLAGS: u64 = 0x20000;
    pub const MAX_RECV_DTOS: u64 = 0x40000;
    pub const MAX_REQUEST_DTOS: u64 = 0x80000;
    pub const MAX_RECV_IOV: u64 = 0x100000;
    pub const MAX_REQUEST_IOV: u64 = 0x200000;
    pub const MAX_RDMA_READ_IN: u64 = 0x400000;
    pub const MAX_RDMA_READ_OUT: u64 = 0x800000;
    pub const SRQ_SOFT_HW: u64 = 0x1000000;
    pub const MAX_RDMA_READ_IOV: u64 = 0x2000000;
    pub const MAX_RDMA_WRITE_IOV: u64 = 0x4000000;
    pub const NUM_TRANSPORT_ATTR: u64 = 0x8000000;
    pub const TRANSPORT_ATTR: u64 = 0x10000000;
    pub const NUM_PROVIDER_ATTR: u64 = 0x20000000;
    pub const PROVIDER_ATTR: u64 = 0x40000000;
    pub const ALL: u64 = 0x7FFF_F7FF;
}

/// `DAT_EP_ATTR` as the core sees it (no named attributes are supported:
/// their counts read back as 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EpAttr {
    pub service_type: u32,
    pub max_message_size: u64,
    pub max_rdma_size: u64,
    pub qos: u32,
    pub recv_completion_flags: u32,
    pub request_completion_flags: u32,
    pub max_recv_dtos: i32,
    pub max_request_dtos: i32,
    pub max_recv_iov: i32,
    pub max_request_iov: i32,
    pub max_rdma_read_in: i32,
    pub max_rdma_read_out: i32,
    pub srq_soft_hw: i32,
    pub max_rdma_read_iov: i32,
    pub max_rdma_write_iov: i32,
    pub num_transport_attr: i32,
    pub num_provider_attr: i32,
}

/// `DAT_EP_PARAM` as the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpParam {
    pub ia: Handle,
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

/// One local segment (`DAT_LMR_TRIPLET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Segment {
    pub lmr_context: u32,
    pub addr: u64,
    pub len: u64,
}

/// A remote buffer (`DAT_RMR_TRIPLET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RemoteSegment {
    pub rmr_context: u32,
    pub addr: u64,
    pub len: u64,
}

/// The most segments one post may carry (the device's limit).
pub const MAX_IOV: usize = 8;

/// What a posted request was, remembered until its completion.
#[derive(Clone, Copy, Debug)]
struct PostInfo {
    flags: u32,
    /// A bind: the RMR, whose binding becomes valid on success.
    rmr: Option<Handle>,
}

/// The EP configuration a post reads.
struct PostView {
    qp: Option<Arc<dyn QueuePair>>,
    attr: EpAttr,
    pz: Option<u64>,
}

/// The request kind of a post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Send,
    Write(RemoteSegment),
    Read(RemoteSegment),
}

struct Inner {
    pz: Option<Arc<Pz>>,
    recv_evd: Option<Arc<Evd>>,
    req_evd: Option<Arc<Evd>>,
    conn_evd: Option<Arc<Evd>>,
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
    state: AtomicU32,
    inner: Mutex<Inner>,
    req_out: AtomicI32,
    recv_out: AtomicI32,
    req_max: AtomicI32,
    recv_max: AtomicI32,
    req_posts: Mutex<VecDeque<PostInfo>>,
    recv_posts: Mutex<VecDeque<u32>>,
    /// Held from `req_posts.push_back` until the queue pair took (or
    /// refused) the work request: concurrent posters cannot interleave.
    /// Taken before `req_posts` and the queue pair's own lock, never under
    /// them.
    req_order: Mutex<()>,
    /// The same for receives (`recv_posts`).
    recv_order: Mutex<()>,
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
pub fn state_error(state: u32) -> DatError {
    DatError::state(match state {
        UNCONNECTED => Sub::EpUnconnected,
        RESERVED => Sub::EpReserved,
        PASSIVE_CONNECTION_PENDING => Sub::EpPassConnPending,
        ACTIVE_CONNECTION_PENDING => Sub::EpActConnPending,
        TENTATIVE_CONNECTION_PENDING => Sub::EpTentConnPending,
        CONNECTED => Sub::EpConnected,
        DISCONNECT_PENDING => Sub::EpDiscPending,
        DISCONNECTED => Sub::EpDisconnected,
        COMPLETION_PENDING => Sub::EpComplPending,
        _ => Sub::None,
    })
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
fn post_error(e: PostError, argn: u32) -> DatError {
    match e {
        PostError::QueueFull => DatError::resources(Sub::None),
        PostError::TooManySge | PostError::Length => DatError::arg(argn),
        PostError::Protection(f) => key_fault(f, argn),
        PostError::Unsupported => DatError::of(Type::ModelNotSupported),
        PostError::State => DatError::of(Type::InvalidState),
    }
}

/// §3.7 step 6: unknown context or missing right → privileges; another PZ
/// → protection; outside the LMR → invalid parameter.
pub fn key_fault(f: crate::transport::soft::keys::KeyFault, argn: u32) -> DatError {
    use crate::transport::soft::keys::KeyFault;
    match f {
        KeyFault::Key | KeyFault::Rights => DatError::of(Type::PrivilegesViolation),
        KeyFault::Domain => DatError::of(Type::ProtectionViolation),
        KeyFault::Bounds => DatError::arg(argn),
    }
}

fn device_error(e: DeviceError) -> DatError {
    match e {
        DeviceError::Resources | DeviceError::Memory(_) => DatError::resources(Sub::ResourceTep),
        DeviceError::Invalid => DatError::of(Type::InvalidParameter),
        DeviceError::PortInUse => DatError::of(Type::ConnQualInUse),
        DeviceError::NotFound | DeviceError::Busy | DeviceError::State => {
            DatError::of(Type::InvalidState)
        }
    }
}

/// The scatter/gather list of an IOV, on the stack: zero-length segments
/// are left out (their other fields are ignored, §3.6).
pub(crate) fn sgl(iov: &[Segment], buf: &mut [Sge; MAX_IOV]) -> Result<(usize, u64)> {
    let mut n = 0;
    let mut total: u64 = 0;
    for s in iov {
        if s.len == 0 {
            continue;
        }
        let slot = buf.get_mut(n).ok_or(DatError::of(Type::InvalidParameter))?;
        *slot = Sge {
            addr: s.addr,
            len: s.len,
            lkey: s.lmr_context,
        };
        n += 1;
        total = total
            .checked_add(s.len)
            .ok_or(DatError::of(Type::InvalidParameter))?;
    }
    Ok((n, total))
}

impl Ep {
    /// The provider's default attributes.
    pub fn default_attr(ia: &Ia) -> EpAttr {
        let l = &ia.limits;
        EpAttr {
            service_type: SERVICE_TYPE_RC,
            max_message_size: l.max_message_size,
            max_rdma_size: l.max_rdma_size,
            qos: QOS_BEST_EFFORT,
            recv_completion_flags: COMPLETION_EVD_THRESHOLD,
            request_completion_flags: COMPLETION_EVD_THRESHOLD,
            max_recv_dtos: 64,
            max_request_dtos: 64,
            max_recv_iov: l.max_iov_segments_per_dto,
            max_request_iov: l.max_iov_segments_per_dto,
            // The reference providers' IB_RDMA_DEFAULT (rulings: EPC-03
            // defaults): an EP made without attributes can RDMA Read.
            max_rdma_read_in: DEFAULT_RDMA_READS.min(l.max_rdma_read_per_ep_in),
            max_rdma_read_out: DEFAULT_RDMA_READS.min(l.max_rdma_read_per_ep_out),
            srq_soft_hw: 0,
            max_rdma_read_iov: l.max_iov_segments_per_rdma_read,
            max_rdma_write_iov: l.max_iov_segments_per_rdma_write,
            num_transport_attr: 0,
            num_provider_attr: 0,
        }
    }

    /// Checks attribute values against the IA's limits.
    fn check_attr(ia: &Ia, a: &EpAttr, with_srq: bool, argn: u32) -> Result<()> {
        let l = &ia.limits;
        let bad = DatError::arg(argn);
        if a.service_type != SERVICE_TYPE_RC {
            return Err(bad);
        }
        if a.qos & !QOS_DEFINED != 0 {
            return Err(bad);
        }
        if a.qos != QOS_BEST_EFFORT {
            return Err(DatError::of(Type::ModelNotSupported));
        }
        if a.max_message_size > l.max_message_size || a.max_rdma_size > l.max_rdma_size {
            return Err(bad);
        }
        let dto_ok = |v: i32| v >= 0 && v <= l.max_dto_per_ep;
        if !dto_ok(a.max_request_dtos) {
            return Err(bad);
        }
        let srq_default = with_srq && a.max_recv_dtos == HW_DEFAULT;
        if !srq_default && !dto_ok(a.max_recv_dtos) {
            return Err(bad);
        }
        let iov_ok = |v: i32, max: i32| v >= 1 && v <= max;
        if !iov_ok(a.max_request_iov, l.max_iov_segments_per_dto)
            || !iov_ok(a.max_recv_iov, l.max_iov_segments_per_dto)
        {
            return Err(bad);
        }
        let opt_iov = |v: i32, max: i32| v >= 0 && v <= max;
        if !opt_iov(a.max_rdma_read_iov, l.max_iov_segments_per_rdma_read)
            || !opt_iov(a.max_rdma_write_iov, l.max_iov_segments_per_rdma_write)
        {
            return Err(bad);
        }
        if a.max_rdma_read_in < 0
            || a.max_rdma_read_in > l.max_rdma_read_per_ep_in
            || a.max_rdma_read_out < 0
            || a.max_rdma_read_out > l.max_rdma_read_per_ep_out
        {
            return Err(bad);
        }
        if a.recv_completion_flags & COMPLETION_SUPPRESS != 0 {
            return Err(bad);
        }
        if a.num_transport_attr < 0 || a.num_provider_attr < 0 {
            return Err(bad);
        }
        Ok(())
    }

    /// C1–C4 (§3.5): refused only when an UNSIGNALLED receive stream is
    /// involved (rulings C1–C5); every other combination is accepted.
    fn check_sharing(
        recv: Option<&Arc<Evd>>,
        recv_flags: u32,
        req: Option<&Arc<Evd>>,
        req_flags: u32,
        conn: Option<&Arc<Evd>>,
    ) -> Result<()> {
        let bad = Err(DatError::of(Type::InvalidParameter));
        let unsig = |f: u32| f & COMPLETION_UNSIGNALLED != 0;
        if let Some(r) = recv {
            if unsig(recv_flags) {
                if conn.is_some_and(|c| c.handle == r.handle) {
                    return bad;
                }
                if req.is_some_and(|q| q.handle == r.handle) && !unsig(req_flags) {
                    return bad;
                }
            }
            if !r.sharing_ok(recv_flags, true) {
                return bad;
            }
        }
        if let Some(q) = req {
            if !q.sharing_ok(req_flags, false) {
                return bad;
            }
        }
        Ok(())
    }

    /// `dat_ep_create` / `dat_ep_create_with_srq`.
    pub fn create(ia: &Arc<Ia>, args: EpArgs) -> Result<Arc<Ep>> {
        let attr_arg = if args.with_srq { 7 } else { 6 };
        let pz = crate::object::pz_for(ia, args.pz.addr(), !args.with_srq)?;
        let recv = crate::object::evd_for_role(
            ia,
            args.recv_evd.addr(),
            EVD_DTO_FLAG,
            Sub::HandleEvdRecv,
        )?;
        let req = crate::object::evd_for_role(
            ia,
            args.request_evd.addr(),
            EVD_DTO_FLAG,
            Sub::HandleEvdRequest,
        )?;
        let conn = crate::object::evd_for_role(
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
            return Err(DatError::arg(attr_arg));
        }
        if let (Some(s), Some(p)) = (&srq, &pz) {
            if s.pz.handle != p.handle && !ia.provider_attributes.srq_ep_pz_difference_supported {
                return Err(DatError::arg(2));
            }
        }
        let mut attr = args.attr.unwrap_or_else(|| Self::default_attr(ia));
        if srq.is_some() {
            // Ignored for an SRQ EP (§4.2): the SRQ's own limit applies.
            attr.max_recv_iov = ia.limits.max_iov_segments_per_dto;
        }
        Self::check_attr(ia, &attr, srq.is_some(), attr_arg)?;
        if args.attr.is_some() {
            if attr.max_recv_dtos > 0 && recv.is_none() && srq.is_none() {
                return Err(DatError::arg(attr_arg));
            }
            if attr.max_request_dtos > 0 && req.is_none() {
                return Err(DatError::arg(attr_arg));
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
        recv: Option<Arc<Evd>>,
        req: Option<Arc<Evd>>,
        conn: Option<Arc<Evd>>,
        srq: Option<Arc<Srq>>,
    ) -> Arc<Ep> {
        let req_cap = usize::try_from(attr.max_request_dtos.max(1)).unwrap_or(1);
        let recv_cap = usize::try_from(attr.max_recv_dtos.max(1)).unwrap_or(1);
        Arc::new_cyclic(|me| Ep {
            handle,
            ia: ia.clone(),
            state: AtomicU32::new(UNCONNECTED),
            req_out: AtomicI32::new(0),
            recv_out: AtomicI32::new(0),
            req_max: AtomicI32::new(attr.max_request_dtos),
            recv_max: AtomicI32::new(attr.max_recv_dtos),
            req_posts: Mutex::new(VecDeque::with_capacity(req_cap)),
            recv_posts: Mutex::new(VecDeque::with_capacity(recv_cap)),
            req_order: Mutex::new(()),
            recv_order: Mutex::new(()),
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
            .store(TENTATIVE_CONNECTION_PENDING, Ordering::Release);
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
            st.add_use(e.handle);
        }
        if let Some(s) = &i.srq {
            st.add_use(s.handle);
        }
        drop(i);
        self.stream_flags_changed();
    }

    fn drop_uses(i: &Inner, st: &mut ia::IaState) {
        if let Some(p) = &i.pz {
            st.drop_use(p.handle);
        }
        for e in [&i.recv_evd, &i.req_evd, &i.conn_evd].into_iter().flatten() {
            st.drop_use(e.handle);
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
            e.set_stream_flags(self.handle, true, i.attr.recv_completion_flags);
        }
        if let Some(e) = &i.req_evd {
            e.set_stream_flags(self.handle, false, i.attr.request_completion_flags);
        }
    }

    fn clear_stream_flags(&self, i: &Inner) {
        if let Some(e) = &i.recv_evd {
            e.clear_stream_flags(self.handle, true);
        }
        if let Some(e) = &i.req_evd {
            e.clear_stream_flags(self.handle, false);
        }
    }

    fn inner(&self) -> Result<MutexGuard<'_, Inner>> {
        let i = lock(&self.inner)?;
        if i.freed {
            return Err(DatError::handle(Sub::HandleEp));
        }
        Ok(i)
    }

    /// The current state.
    pub fn state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }

    fn set_state(&self, s: u32) {
        self.state.store(s, Ordering::Release);
    }

    /// `dat_ep_query`.
    pub fn query(&self, mask: u64) -> Result<EpParam> {
        if mask & !field::ALL != 0 {
            return Err(DatError::arg(2));
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
            state: self.state(),
            local_addr: &*self.ia.sockaddr as *const SockAddrStorage as usize,
            local_port: i.local_port,
            remote_addr,
            remote_port: i.remote_port,
            pz: i.pz.as_ref().map_or(Handle::NULL, |p| p.handle),
            recv_evd: i.recv_evd.as_ref().map_or(Handle::NULL, |e| e.handle),
            request_evd: i.req_evd.as_ref().map_or(Handle::NULL, |e| e.handle),
            connect_evd: i.conn_evd.as_ref().map_or(Handle::NULL, |e| e.handle),
            srq: i.srq.as_ref().map_or(Handle::NULL, |s| s.handle),
            attr: i.attr,
        })
    }

    /// `dat_ep_modify`: all or nothing.
    pub fn modify(&self, mask: u64, p: &EpParam) -> Result<()> {
        use field::*;
        if mask & !ALL != 0 {
            return Err(DatError::arg(2));
        }
        if mask
            & (IA_HANDLE
                | EP_STATE
                | LOCAL_IA_ADDRESS
                | LOCAL_PORT_QUAL
                | REMOTE_IA_ADDRESS
                | REMOTE_PORT_QUAL
                | SRQ
                | SRQ_SOFT_HW)
            != 0
        {
            return Err(DatError::arg(2));
        }
        if mask == 0 {
            drop(self.inner()?);
            return Ok(());
        }
        let ia = &self.ia;
        let mut st = ia.live_state()?;
        let mut i = self.inner()?;
        let state = self.state();
        let quiescent = matches!(state, UNCONNECTED | TENTATIVE_CONNECTION_PENDING);
        let configurable = matches!(
            state,
            UNCONNECTED | RESERVED | PASSIVE_CONNECTION_PENDING | TENTATIVE_CONNECTION_PENDING
        );
        if mask & PZ != 0 && !quiescent {
            return Err(state_error(state));
        }
        if mask & !(PZ | NUM_TRANSPORT_ATTR | TRANSPORT_ATTR | NUM_PROVIDER_ATTR | PROVIDER_ATTR)
            != 0
            && !configurable
        {
            return Err(state_error(state));
        }
        let pz = if mask & PZ != 0 {
            crate::object::pz_for(ia, p.pz.addr(), true)?.map(|r| r.arc())
        } else {
            i.pz.clone()
        };
        let role = |bit: u64, h: Handle, cur: &Option<Arc<Evd>>, need: u32, sub: Sub| {
            if mask & bit != 0 {
                crate::object::evd_for_role(ia, h.addr(), need, sub).map_err(|_| DatError::arg(3))
            } else {
                Ok(cur.clone())
            }
        };
        let recv = role(
            RECV_EVD,
            p.recv_evd,
            &i.recv_evd,
            EVD_DTO_FLAG,
            Sub::HandleEvdRecv,
        )?;
        let req = role(
            REQUEST_EVD,
            p.request_evd,
            &i.req_evd,
            EVD_DTO_FLAG,
            Sub::HandleEvdRequest,
        )?;
        let conn = role(
            CONNECT_EVD,
            p.connect_evd,
            &i.conn_evd,
            EVD_CONNECTION_FLAG,
            Sub::HandleEvdConn,
        )?;
        let mut a = i.attr;
        let n = &p.attr;
        let set = |bit: u64| mask & bit != 0;
        if set(SERVICE_TYPE) {
            a.service_type = n.service_type;
        }
        if set(MAX_MESSAGE_SIZE) {
            a.max_message_size = n.max_message_size;
        }
        if set(MAX_RDMA_SIZE) {
            a.max_rdma_size = n.max_rdma_size;
        }
        if set(QOS) {
            a.qos = n.qos;
        }
        if set(RECV_COMPLETION_FLAGS) {
            a.recv_completion_flags = n.recv_completion_flags;
        }
        if set(REQUEST_COMPLETION_FLAGS) {
            a.request_completion_flags = n.request_completion_flags;
        }
        if set(MAX_RECV_DTOS) {
            a.max_recv_dtos = n.max_recv_dtos;
        }
        if set(MAX_REQUEST_DTOS) {
            a.max_request_dtos = n.max_request_dtos;
        }
        if set(MAX_RECV_IOV) {
            a.max_recv_iov = n.max_recv_iov;
        }
        if set(MAX_REQUEST_IOV) {
            a.max_request_iov = n.max_request_iov;
        }
        if set(MAX_RDMA_READ_IN) {
            a.max_rdma_read_in = n.max_rdma_read_in;
        }
        if set(MAX_RDMA_READ_OUT) {
            a.max_rdma_read_out = n.max_rdma_read_out;
        }
        if set(MAX_RDMA_READ_IOV) {
            a.max_rdma_read_iov = n.max_rdma_read_iov;
        }
        if set(MAX_RDMA_WRITE_IOV) {
            a.max_rdma_write_iov = n.max_rdma_write_iov;
        }
        if set(NUM_TRANSPORT_ATTR) && n.num_transport_attr != 0 {
            return Err(DatError::arg(3));
        }
        if set(NUM_PROVIDER_ATTR) && n.num_provider_attr != 0 {
            return Err(DatError::arg(3));
        }
        Self::check_attr(ia, &a, i.srq.is_some(), 3)?;
        if set(RECV_COMPLETION_FLAGS) || set(RECV_EVD) || set(REQUEST_EVD) || set(CONNECT_EVD) {
            // Judge sharing without this EP's own current streams.
            self.clear_stream_flags(&i);
            let r = Self::check_sharing(
                recv.as_ref(),
                a.recv_completion_flags,
                req.as_ref(),
                a.request_completion_flags,
                conn.as_ref(),
            );
            if let Err(e) = r {
                drop(i);
                self.stream_flags_changed();
                return Err(e);
            }
        }
        // Apply: move uses, drop a queue pair built for the old configuration.
        Self::drop_uses(&i, &mut st);
        self.clear_stream_flags(&i);
        let structural = set(PZ)
            || set(RECV_EVD)
            || set(REQUEST_EVD)
            || set(MAX_RECV_DTOS)
            || set(MAX_REQUEST_DTOS)
            || set(MAX_RECV_IOV)
            || set(MAX_REQUEST_IOV)
            || set(MAX_RDMA_READ_IN)
            || set(MAX_RDMA_READ_OUT)
            || set(MAX_RDMA_READ_IOV)
            || set(MAX_RDMA_WRITE_IOV);
        let old_qp = if structural && state == UNCONNECTED {
            // Receives posted on the old queue pair complete flushed
            // (§3.3: every post gets its completion): its streams stay
            // attached until the EP is reset or freed.
            i.qp.take().inspect(|qp| {
                let _ = qp.reset();
                i.retired.push(qp.num());
            })
        } else {
            None
        };
        i.pz = pz;
        i.recv_evd = recv;
        i.req_evd = req;
        i.conn_evd = conn;
        i.attr = a;
        self.req_max.store(a.max_request_dtos, Ordering::Release);
        self.recv_max.store(a.max_recv_dtos, Ordering::Release);
        if let Some(p) = &i.pz {
            st.add_use(p.handle);
        }
        for e in [&i.recv_evd, &i.req_evd, &i.conn_evd].into_iter().flatten() {
            st.add_use(e.handle);
        }
        if let Some(s) = &i.srq {
            st.add_use(s.handle);
        }
        if let Some(qp) = &i.qp {
            // A live queue pair keeps feeding its CQs: re-attach its streams.
            self.attach_streams(&i, qp.num());
        }
        drop(i);
        drop(st);
        self.stream_flags_changed();
        drop(old_qp);
        Ok(())
    }

    /// The peer of a CONNECTED EP and the qualifier it was reached on
    /// (`dat_ep_dup_connect`).
    pub fn connected_peer(&self) -> Result<(SocketAddr, u64)> {
        let i = self.inner()?;
        let s = self.state();
        if s != CONNECTED {
            return Err(state_error(s));
        }
        i.remote
            .map(|r| (r, i.remote_port))
            .ok_or(DatError::of(Type::InvalidState))
    }

    /// `dat_ep_get_status`: state, receive idle, request idle.
    pub fn status(&self) -> Result<(u32, bool, bool)> {
        let i = self.inner()?;
        let recv_idle = if i.srq.is_some() {
            i.qp.as_ref().is_none_or(|q| q.recv_outstanding().0 == 0)
                && self.recv_out.load(Ordering::Acquire) <= 0
        } else {
            self.recv_out.load(Ordering::Acquire) <= 0
        };
        Ok((
            self.state(),
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
    fn ensure_qp(&self, i: &mut Inner) -> Result<Arc<dyn QueuePair>> {
        if let Some(q) = &i.qp {
            return Ok(q.clone());
        }
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
            e.attach(num, &me, false, req_depth);
        }
        if let Some(e) = &i.recv_evd {
            e.attach(num, &me, true, recv_depth);
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
        lock_anyway(&self.req_posts).clear();
        lock_anyway(&self.recv_posts).clear();
        self.req_out.store(0, Ordering::Release);
        self.recv_out.store(0, Ordering::Release);
        Some(qp)
    }

    /// Releases a DTO slot (an event carrying it was dequeued).
    pub(crate) fn release(&self, recv: bool) {
        let c = if recv { &self.recv_out } else { &self.req_out };
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some((v - 1).max(0))
        });
    }

    /// Turns a transport completion of this EP into its DAT event, or
    /// `None` when it is not reported (a successful SUPPRESS post). The
    /// bool says whether it is a notification event.
    pub(crate) fn translate(&self, wc: &Wc, recv_stream: bool) -> Option<(Event, bool)> {
        let ok = wc.status == WcStatus::Success;
        let status = dto_status(wc.status);
        if wc.op == WcOp::Recv {
            if !recv_stream {
                return None;
            }
            let srq = self.srq_handle;
            let post_flags = if srq.is_some() {
                0
            } else {
                lock_anyway(&self.recv_posts).pop_front().unwrap_or(0)
            };
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
        if recv_stream {
            return None;
        }
        let info = lock_anyway(&self.req_posts)
            .pop_front()
            .unwrap_or(PostInfo {
                flags: 0,
                rmr: None,
            });
        if let Some(rmr) = info.rmr {
            if let Some(r) = handle::get::<Rmr>(rmr.addr()) {
                r.bind_completed(ok);
            }
        }
        if ok && info.flags & COMPLETION_SUPPRESS != 0 {
            self.release(false);
            return None;
        }
        let notify = !ok || info.flags & COMPLETION_UNSIGNALLED == 0;
        let data = match info.rmr {
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
        let number = if info.rmr.is_some() {
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

    // ───────────────────────────────── posting ─────────────────────────────────

    /// A post on a DISCONNECTED EP: accepted and flushed at once (§3.3 rule 2).
    fn flush_now(&self, recv: bool, cookie: u64, rmr: Option<Handle>) -> Result<()> {
        let evd = {
            let i = lock_anyway(&self.inner);
            if recv {
                i.recv_evd.clone()
            } else {
                i.req_evd.clone()
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

    fn take_slot(&self, recv: bool) -> Result<()> {
        let (c, max) = if recv {
            (&self.recv_out, &self.recv_max)
        } else {
            (&self.req_out, &self.req_max)
        };
        let max = max.load(Ordering::Acquire);
        c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            (v < max).then_some(v + 1)
        })
        .map(|_| ())
        .map_err(|_| DatError::resources(Sub::None))
    }

    /// A request slot. When all are taken, the completions waiting in the
    /// request EVD's CQ are translated first and the slot is tried again:
    /// a successful SUPPRESS post gives its slot back when it completes
    /// (§3.6), and the consumer, who gets no event for it, may never poll
    /// that EVD. (Slots of reported completions stay taken until dequeued.)
    fn take_request_slot(&self) -> Result<()> {
        if self.take_slot(false).is_ok() {
            return Ok(());
        }
        let evd = lock_anyway(&self.inner).req_evd.clone();
        if let Some(evd) = evd {
            evd.fill();
        }
        self.take_slot(false)
    }

    /// `dat_ep_post_send` / `_rdma_write` / `_rdma_read`.
    pub fn post(&self, iov: &[Segment], cookie: u64, req: Request, flags: u32) -> Result<()> {
        let state = self.state();
        let PostView { qp, attr, pz } = self.view()?;
        if state != CONNECTED && state != DISCONNECTED {
            return Err(state_error(state));
        }
        let flags_arg = match req {
            Request::Send => 4,
            _ => 5,
        };
        if flags & !POST_FLAGS != 0 {
            return Err(DatError::arg(flags_arg));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && attr.request_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::arg(flags_arg));
        }
        let max_iov = match req {
            Request::Send => attr.max_request_iov,
            Request::Write(_) => attr.max_rdma_write_iov.max(attr.max_request_iov),
            Request::Read(_) => attr.max_rdma_read_iov.max(1),
        };
        if iov.len() > usize::try_from(max_iov).unwrap_or(0) {
            return Err(DatError::arg(2));
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
                    return Err(DatError::arg(2));
                }
                SendOp::Send {
                    solicited: flags & COMPLETION_SOLICITED_WAIT != 0,
                }
            }
            Request::Write(r) => {
                if total > attr.max_rdma_size {
                    return Err(DatError::arg(2));
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
                    return Err(DatError::arg(4));
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
        if state == DISCONNECTED {
            // Local segments are checked (key, PZ, bounds, rights) even
            // here; on a connected queue pair the transport's post does it.
            let need = if matches!(req, Request::Read(_)) {
                Access::LOCAL_WRITE
            } else {
                Access::LOCAL_READ
            };
            self.check_segments(&buf[..n], need, pz)?;
            return self.flush_now(false, cookie, None);
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
        self.submit(&qp, cookie, flags, None, |qp| {
            qp.post_send(&SendWr {
                wr_id: cookie,
                op,
                sgl,
                signaled: true,
                fence: flags & COMPLETION_BARRIER_FENCE != 0,
            })
            .map(|_| ())
        })
    }

    /// Takes a slot, remembers the post, hands it to the transport; a
    /// queue pair that closed meanwhile flushes it.
    fn submit(
        &self,
        qp: &Arc<dyn QueuePair>,
        cookie: u64,
        flags: u32,
        rmr: Option<Handle>,
        post: impl FnOnce(&Arc<dyn QueuePair>) -> std::result::Result<(), PostError>,
    ) -> Result<()> {
        self.take_request_slot()?;
        // Two threads posting at once would otherwise remember their posts
        // in one order and hand them to the queue pair in the other: each
        // completion would then be translated with the other's flags (a
        // SUPPRESS post reported, the other lost) or RMR.
        let order = lock_anyway(&self.req_order);
        lock_anyway(&self.req_posts).push_back(PostInfo { flags, rmr });
        let posted = post(qp);
        if posted.is_err() {
            // Still ours: nobody else pushed since.
            lock_anyway(&self.req_posts).pop_back();
        }
        drop(order);
        match posted {
            Ok(()) => {
                self.drain_sink();
                Ok(())
            }
            Err(e) => {
                self.release(false);
                self.refused(e, false, cookie, rmr)
            }
        }
    }

    /// The queue pair refused a post. For its state: the EP was freed by
    /// another thread during the post (its handle is dead, as for any
    /// later post); or its connection is going or gone: disconnecting, or
    /// still CONNECTED because the transport's word that the peer left (or
    /// the connection broke) has not reached the EP yet. Such a post is
    /// accepted and flushed, as on a DISCONNECTED EP (§3.3 rule 2).
    fn refused(&self, e: PostError, recv: bool, cookie: u64, rmr: Option<Handle>) -> Result<()> {
        if e == PostError::State {
            if lock_anyway(&self.inner).freed {
                return Err(DatError::handle(Sub::HandleEp));
            }
            let state = self.state();
            if state == CONNECTED || state >= DISCONNECT_PENDING {
                return self.flush_now(recv, cookie, rmr);
            }
        }
        Err(post_error(e, 2))
    }

    /// What a post needs of the EP's configuration, under one short lock.
    fn view(&self) -> Result<PostView> {
        let i = self.inner()?;
        Ok(PostView {
            qp: i.qp.clone(),
            attr: i.attr,
            pz: i.pz.as_ref().map(|p| p.key_id()),
        })
    }

    /// §3.7 step 6 for posts the transport does not see.
    fn check_segments(&self, sgl: &[Sge], need: Access, pz: Option<u64>) -> Result<()> {
        for s in sgl {
            self.ia
                .keys()
                .check_local(s.lkey, s.addr, s.len, need, pz)
                .map_err(|f| key_fault(f, 2))?;
        }
        Ok(())
    }

    /// Completions of a direction whose EVD is NULL are discarded.
    fn drain_sink(&self) {
        if !self.has_sink.load(Ordering::Relaxed) {
            return;
        }
        let sink = lock_anyway(&self.inner).sink.clone();
        if let Some(cq) = sink {
            let mut wcs = [Wc::BLANK; 16];
            loop {
                let n = cq.poll(&mut wcs);
                for wc in &wcs[..n] {
                    if wc.op == WcOp::Recv {
                        lock_anyway(&self.recv_posts).pop_front();
                        self.release(true);
                    } else {
                        lock_anyway(&self.req_posts).pop_front();
                        self.release(false);
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
        let (qp, attr, pz) = {
            let mut i = self.inner()?;
            if i.srq.is_some() {
                return Err(DatError::of(Type::InvalidState));
            }
            let qp = if self.state() == DISCONNECTED {
                None
            } else {
                Some(self.ensure_qp(&mut i)?)
            };
            (qp, i.attr, i.pz.as_ref().map(|p| p.key_id()))
        };
        if flags & !POST_FLAGS != 0
            || flags & (COMPLETION_SUPPRESS | COMPLETION_BARRIER_FENCE | COMPLETION_SOLICITED_WAIT)
                != 0
        {
            return Err(DatError::arg(4));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && attr.recv_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::arg(4));
        }
        if iov.len() > usize::try_from(attr.max_recv_iov).unwrap_or(0) {
            return Err(DatError::arg(2));
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
            return self.flush_now(true, cookie, None);
        };
        self.take_slot(true)?;
        // As in `submit`: remembered in the queue pair's order.
        let order = lock_anyway(&self.recv_order);
        lock_anyway(&self.recv_posts).push_back(flags);
        let posted = qp.post_recv(&RecvWr {
            wr_id: cookie,
            sgl: &buf[..n],
        });
        if posted.is_err() {
            lock_anyway(&self.recv_posts).pop_back();
        }
        drop(order);
        match posted {
            Ok(()) => Ok(()),
            Err(e) => {
                self.release(true);
                self.refused(e, true, cookie, None)
            }
        }
    }

    /// `dat_rmr_bind` through this EP (the RMR layer checked its side).
    pub(crate) fn post_bind(
        &self,
        rmr: &Rmr,
        seg: Segment,
        access: Access,
        cookie: u64,
        flags: u32,
    ) -> Result<u32> {
        let state = self.state();
        let PostView { qp, attr, pz } = self.view()?;
        if state != CONNECTED && state != DISCONNECTED {
            return Err(state_error(state));
        }
        if flags & !POST_FLAGS != 0 || flags & COMPLETION_SOLICITED_WAIT != 0 {
            return Err(DatError::arg(6));
        }
        if flags & COMPLETION_UNSIGNALLED != 0
            && attr.request_completion_flags & COMPLETION_UNSIGNALLED == 0
        {
            return Err(DatError::arg(6));
        }
        if pz != Some(rmr.pz.key_id()) {
            return Err(DatError::of(Type::ProtectionViolation));
        }
        if state == DISCONNECTED {
            self.flush_now(false, cookie, Some(rmr.handle))?;
            return Ok(0);
        }
        let Some(qp) = qp else {
            return Err(state_error(state));
        };
        let mut key = 0;
        self.submit(&qp, cookie, flags, Some(rmr.handle), |qp| {
            qp.post_bind(&BindWr {
                wr_id: cookie,
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

    // ─────────────────────────────── connections ───────────────────────────────

    /// `dat_ep_connect`.
    pub fn connect(
        &self,
        remote: SocketAddr,
        qual: u64,
        timeout_us: u32,
        private_data: &[u8],
        qos: u32,
        flags: u32,
    ) -> Result<()> {
        if timeout_us == 0 {
            return Err(DatError::arg(4));
        }
        if qos & !QOS_DEFINED != 0 {
            return Err(DatError::arg(7));
        }
        if flags & !CONNECT_MULTIPATH != 0 {
            return Err(DatError::arg(8));
        }
        if qos != QOS_BEST_EFFORT || flags & CONNECT_MULTIPATH != 0 {
            return Err(DatError::of(Type::ModelNotSupported));
        }
        let qp = {
            let mut i = self.inner()?;
            let state = self.state();
            if state != UNCONNECTED {
                return Err(state_error(state));
            }
            if i.pz.is_none() || i.conn_evd.is_none() {
                return Err(DatError::state(Sub::EpNotReady));
            }
            let qp = self.ensure_qp(&mut i)?;
            i.remote = Some(remote);
            i.remote_port = qual;
            *lock_anyway(&self.exposed) = Exposed {
                private_data: [0; 256],
                remote: SockAddrStorage::from(remote),
            };
            self.set_state(ACTIVE_CONNECTION_PENDING);
            qp
        };
        let timeout = if timeout_us == u32::MAX {
            Duration::from_secs(365 * 24 * 3600)
        } else {
            Duration::from_micros(u64::from(timeout_us))
        };
        let port = transport::port_of_qualifier(qual);
        if let Err(e) = qp.connect(remote, port, private_data, timeout) {
            let i = lock_anyway(&self.inner);
            if self.state() == ACTIVE_CONNECTION_PENDING {
                self.set_state(UNCONNECTED);
            }
            drop(i);
            return Err(match e {
                DeviceError::Invalid => {
                    DatError::new(Type::InvalidAddress, Sub::AddressUnsupported)
                }
                other => device_error(other),
            });
        }
        // The local port the peer sees as the CR's remote_port_qual.
        if let Some(a) = qp.local_addr() {
            let mut i = lock_anyway(&self.inner);
            if i.local_port == 0 && i.qp.as_ref().is_some_and(|q| q.num() == qp.num()) {
                i.local_port = u64::from(a.port());
            }
        }
        Ok(())
    }

    /// `dat_ep_disconnect`.
    pub fn disconnect(&self, flags: u32) -> Result<()> {
        if flags & !CLOSE_GRACEFUL != 0 {
            return Err(DatError::arg(2));
        }
        let graceful = flags & CLOSE_GRACEFUL != 0;
        let (qp, abort_evd) = {
            let i = self.inner()?;
            let state = self.state();
            match state {
                ACTIVE_CONNECTION_PENDING | COMPLETION_PENDING => {
                    self.set_state(DISCONNECTED);
                    (i.qp.clone(), i.conn_evd.clone())
                }
                CONNECTED => {
                    self.set_state(DISCONNECT_PENDING);
                    (i.qp.clone(), None)
                }
                DISCONNECT_PENDING => {
                    if graceful {
                        return Ok(());
                    }
                    (i.qp.clone(), None)
                }
                DISCONNECTED => return Ok(()),
                s => return Err(state_error(s)),
            }
        };
        let aborting = abort_evd.is_some();
        if let Some(qp) = &qp {
            let _ = qp.disconnect(graceful && !aborting);
        }
        if let Some(evd) = abort_evd {
            evd.post_after_completions(
                Event::new(
                    event::CONNECTION_DISCONNECTED,
                    EventData::Connection {
                        ep: self.handle,
                        private_data_size: 0,
                        private_data: 0,
                    },
                ),
                true,
            );
        }
        Ok(())
    }

    /// `dat_ep_reset`.
    pub fn reset(&self) -> Result<()> {
        let old = {
            let mut i = self.inner()?;
            match self.state() {
                UNCONNECTED => return Ok(()),
                DISCONNECTED => {}
                s => return Err(state_error(s)),
            }
            let old = self.detach_qp(&mut i);
            i.remote = None;
            i.remote_port = 0;
            i.local_port = 0;
            self.set_state(UNCONNECTED);
            old
        };
        drop(old);
        Ok(())
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
                RESERVED | PASSIVE_CONNECTION_PENDING | TENTATIVE_CONNECTION_PENDING
            ) {
                return Err(state_error(state));
            }
            st.remove(self.handle, Sub::HandleEp)?;
            Self::drop_uses(&i, &mut st);
            self.clear_stream_flags(&i);
            i.freed = true;
            let connected = matches!(
                state,
                ACTIVE_CONNECTION_PENDING | COMPLETION_PENDING | CONNECTED | DISCONNECT_PENDING
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

    // ───────────────────────────── passive side ─────────────────────────────

    /// Reserves the EP for an RSP (UNCONNECTED → RESERVED).
    pub(crate) fn reserve(&self, rsp: Handle) -> Result<()> {
        let mut i = self.inner()?;
        let s = self.state();
        if s != UNCONNECTED {
            return Err(state_error(s));
        }
        i.reserved_by = Some(rsp);
        self.set_state(RESERVED);
        Ok(())
    }

    /// The RSP is gone before a request came: back to UNCONNECTED.
    pub(crate) fn unreserve(&self) {
        let mut i = lock_anyway(&self.inner);
        if self.state() == RESERVED {
            i.reserved_by = None;
            self.set_state(UNCONNECTED);
        }
    }

    /// A request arrived at the RSP that reserved the EP.
    pub(crate) fn request_arrived(&self, remote: SocketAddr, remote_port: u64, qual: u64) -> bool {
        let mut i = lock_anyway(&self.inner);
        if i.freed || self.state() != RESERVED {
            return false;
        }
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
        self.set_state(PASSIVE_CONNECTION_PENDING);
        true
    }

    /// A provider-created EP learns its request.
    pub(crate) fn tentative_for(&self, remote: SocketAddr, remote_port: u64, qual: u64) {
        let mut i = lock_anyway(&self.inner);
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
    }

    /// Checks that the EP can accept, builds its queue pair and marks it
    /// COMPLETION_PENDING; the caller then hands the request to the
    /// device. `own` is true for the CR's own EP (RSP, provider PSP).
    pub(crate) fn prepare_accept(
        &self,
        own: bool,
        remote: SocketAddr,
        remote_port: u64,
        qual: u64,
    ) -> Result<Arc<dyn QueuePair>> {
        let mut i = self.inner()?;
        let s = self.state();
        let ok = if own {
            matches!(s, PASSIVE_CONNECTION_PENDING | TENTATIVE_CONNECTION_PENDING)
        } else {
            s == UNCONNECTED
        };
        if !ok {
            return Err(state_error(s));
        }
        if i.pz.is_none() || i.conn_evd.is_none() {
            return Err(DatError::state(Sub::EpNotReady));
        }
        let qp = self.ensure_qp(&mut i)?;
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        i.reserved_by = None;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
        self.set_state(COMPLETION_PENDING);
        Ok(qp)
    }

    /// The peer gave up before the accept reached it.
    pub(crate) fn accept_error(&self) {
        let evd = {
            let i = lock_anyway(&self.inner);
            if self.state() != COMPLETION_PENDING {
                return;
            }
            self.set_state(DISCONNECTED);
            i.conn_evd.clone()
        };
        if let Some(qp) = lock_anyway(&self.inner).qp.clone() {
            let _ = qp.disconnect(false);
        }
        if let Some(evd) = evd {
            evd.post_after_completions(
                Event::new(
                    event::CONNECTION_ACCEPT_COMPLETION_ERROR,
                    EventData::Connection {
                        ep: self.handle,
                        private_data_size: 0,
                        private_data: 0,
                    },
                ),
                true,
            );
        }
    }

    /// The device refused the accept synchronously: undo.
    pub(crate) fn accept_failed(&self, previous: u32) {
        let _i = lock_anyway(&self.inner);
        if self.state() == COMPLETION_PENDING {
            self.set_state(previous);
        }
    }

    /// The CR of the EP was rejected (RSP: back to UNCONNECTED; provider
    /// EP: destroyed).
    pub(crate) fn rejected(&self) {
        let provider = {
            let mut i = lock_anyway(&self.inner);
            i.reserved_by = None;
            i.remote = None;
            i.remote_port = 0;
            i.local_port = 0;
            i.provider_created
        };
        if provider {
            let mut st = self.ia.state();
            let i = lock_anyway(&self.inner);
            if st.remove(self.handle, Sub::HandleEp).is_ok() {
                Self::drop_uses(&i, &mut st);
                self.clear_stream_flags(&i);
            }
            drop(i);
            drop(st);
            self.destroy();
        } else {
            self.set_state(UNCONNECTED);
        }
    }

    // ──────────────────────────── connection events ────────────────────────────

    fn on_cm(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        let (number, pd_len, evd) = {
            let mut i = lock_anyway(&self.inner);
            if i.freed || i.qp.as_ref().map(|q| q.num()) != qp {
                return;
            }
            let s = self.state();
            let active = s == ACTIVE_CONNECTION_PENDING;
            let passive = s == COMPLETION_PENDING;
            let live = matches!(s, CONNECTED | DISCONNECT_PENDING);
            let (next, number, pd_len) = match ev {
                CmEvent::Established { private_data } if active => {
                    let n = private_data.len().min(256);
                    lock_anyway(&self.exposed).private_data[..n]
                        .copy_from_slice(&private_data[..n]);
                    (CONNECTED, event::CONNECTION_ESTABLISHED, n)
                }
                CmEvent::Established { .. } if passive => {
                    (CONNECTED, event::CONNECTION_ESTABLISHED, 0)
                }
                CmEvent::Rejected { private_data } if active => {
                    let number = if private_data == crate::object::sp::NON_PEER_MARK {
                        event::CONNECTION_NON_PEER_REJECTED
                    } else {
                        event::CONNECTION_PEER_REJECTED
                    };
                    (DISCONNECTED, number, 0)
                }
                CmEvent::Refused if active => {
                    (DISCONNECTED, event::CONNECTION_NON_PEER_REJECTED, 0)
                }
                CmEvent::Unreachable if active => (DISCONNECTED, event::CONNECTION_UNREACHABLE, 0),
                CmEvent::TimedOut if active => (DISCONNECTED, event::CONNECTION_TIMED_OUT, 0),
                CmEvent::Disconnected | CmEvent::Broken if active => {
                    (DISCONNECTED, event::CONNECTION_NON_PEER_REJECTED, 0)
                }
                CmEvent::AcceptFailed
                | CmEvent::TimedOut
                | CmEvent::Broken
                | CmEvent::Disconnected
                | CmEvent::Unreachable
                | CmEvent::Refused
                | CmEvent::Rejected { .. }
                    if passive =>
                {
                    (DISCONNECTED, event::CONNECTION_ACCEPT_COMPLETION_ERROR, 0)
                }
                CmEvent::Disconnected if live => (DISCONNECTED, event::CONNECTION_DISCONNECTED, 0),
                CmEvent::Broken if live => (DISCONNECTED, event::CONNECTION_BROKEN, 0),
                _ => return,
            };
            self.set_state(next);
            if next == CONNECTED && i.local_port == 0 {
                if let Some(a) = i.qp.as_ref().and_then(|q| q.local_addr()) {
                    i.local_port = u64::from(a.port());
                }
            }
            (number, pd_len, i.conn_evd.clone())
        };
        self.post_cm(number, pd_len, evd);
    }

    fn post_cm(&self, number: u32, pd_len: usize, evd: Option<Arc<Evd>>) {
        if let Some(evd) = evd {
            let pd_ptr = if pd_len > 0 {
                lock_anyway(&self.exposed).private_data.as_ptr() as usize
            } else {
                0
            };
            let ev = Event::new(
                number,
                EventData::Connection {
                    ep: self.handle,
                    private_data_size: i32::try_from(pd_len).unwrap_or(0),
                    private_data: pd_ptr,
                },
            );
            evd.post_after_completions(ev, true);
        }
    }
}

/// The connection-event handler of an EP's queue pair.
struct EpCm {
    ep: Weak<Ep>,
}

impl CmHandler for EpCm {
    fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        if let Some(ep) = self.ep.upgrade() {
            ep.on_cm(qp, ev);
        }
    }
}

/// Looks up a live EP, `DAT_INVALID_HANDLE/EP` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Ep>> {
    handle::expect::<Ep>(addr, Sub::HandleEp)
}
