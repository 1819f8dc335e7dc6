//! EP attributes: defaults, checks against the IA's limits, completion-EVD
//! sharing rules and `dat_ep_modify`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::Handle;
use crate::object::attr::{COMPLETION_EVD_THRESHOLD, COMPLETION_SUPPRESS, COMPLETION_UNSIGNALLED};
use crate::object::ia::Ia;
use crate::object::{EVD_CONNECTION_FLAG, EVD_DTO_FLAG};

use super::{evd_for_role, state_error, Ep, EpEvd, EpParam, EpState, WorkQueue};

/// `DAT_SERVICE_TYPE_RC`.
pub const SERVICE_TYPE_RC: u32 = 0;
/// `DAT_QOS_BEST_EFFORT` and every defined QoS bit.
pub const QOS_BEST_EFFORT: u32 = 0;
pub(super) const QOS_DEFINED: u32 = 0x0f;
/// RDMA Reads in and out of an EP created without attributes.
const DEFAULT_RDMA_READS: i32 = 4;

/// `DAT_HW_DEFAULT` / `DAT_WATERMARK_INFINITE`.
pub const HW_DEFAULT: i32 = -1;

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
    pub(super) fn check_attr(ia: &Ia, a: &EpAttr, with_srq: bool, input: Input) -> Result<()> {
        let l = &ia.limits;
        let bad = DatError::invalid(input);
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
    pub(super) fn check_sharing(
        recv: Option<&Arc<dyn EpEvd>>,
        recv_flags: u32,
        req: Option<&Arc<dyn EpEvd>>,
        req_flags: u32,
        conn: Option<&Arc<dyn EpEvd>>,
    ) -> Result<()> {
        let bad = Err(DatError::of(Type::InvalidParameter));
        let unsig = |f: u32| f & COMPLETION_UNSIGNALLED != 0;
        if let Some(r) = recv {
            if unsig(recv_flags) {
                if conn.is_some_and(|c| c.handle() == r.handle()) {
                    return bad;
                }
                if req.is_some_and(|q| q.handle() == r.handle()) && !unsig(req_flags) {
                    return bad;
                }
            }
            if !r.sharing_ok(recv_flags, WorkQueue::Receive) {
                return bad;
            }
        }
        if let Some(q) = req {
            if !q.sharing_ok(req_flags, WorkQueue::Request) {
                return bad;
            }
        }
        Ok(())
    }

    /// `dat_ep_modify`: all or nothing.
    pub fn modify(&self, mask: u64, p: &EpParam) -> Result<()> {
        use field::*;
        if mask & !ALL != 0 {
            return Err(DatError::invalid(Input::EpParamMask));
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
            return Err(DatError::invalid(Input::EpParamMask));
        }
        if mask == 0 {
            drop(self.inner()?);
            return Ok(());
        }
        let ia = &self.ia;
        let mut st = ia.live_state()?;
        let mut i = self.inner()?;
        let state = self.state();
        let quiescent = matches!(
            state,
            EpState::Unconnected | EpState::TentativeConnectionPending
        );
        let configurable = matches!(
            state,
            EpState::Unconnected
                | EpState::Reserved
                | EpState::PassiveConnectionPending
                | EpState::TentativeConnectionPending
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
        let role = |bit: u64, h: Handle, cur: &Option<Arc<dyn EpEvd>>, need: u32, sub: Sub| {
            if mask & bit != 0 {
                evd_for_role(ia, h.addr(), need, sub).map_err(|_| DatError::invalid(Input::EpParam))
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
            return Err(DatError::invalid(Input::EpParam));
        }
        if set(NUM_PROVIDER_ATTR) && n.num_provider_attr != 0 {
            return Err(DatError::invalid(Input::EpParam));
        }
        Self::check_attr(ia, &a, i.srq.is_some(), Input::EpParam)?;
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
        let old_qp = if structural && state == EpState::Unconnected {
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
            st.add_use(e.handle());
        }
        if let Some(s) = &i.srq {
            st.add_use(s.handle);
        }
        Self::feed_srq(&i);
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
}
