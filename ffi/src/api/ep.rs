//! Endpoint entry points: creation (with or without an SRQ), query and
//! modify, connection setup and teardown, posting of data transfers,
//! status, reset and free. Conversion only: the behaviour is in
//! `udapl::object::ep`.

use std::net::SocketAddr;

use udapl::error::{DatError, Input, Sub, Type};
use udapl::handle::Handle;
use udapl::object::ep::{EpArgs, EpAttr, EpParam, RemoteSegment, Request, Segment, MAX_IOV};
use udapl::object::{Ep, Ia};
use udapl::transport::SockAddrStorage;

use crate::boundary::{input, opt_out, out};
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// The consumer's IOV, copied onto the stack (the array is application
/// memory: read element by element, never borrowed).
/// Errors name `num_segments` and `local_iov`, the parameters of every
/// post that takes one.
pub(crate) fn read_iov(
    num: DAT_COUNT,
    iov: *const DAT_LMR_TRIPLET,
    out: &mut Iov,
) -> udapl::Result<&[Segment]> {
    let n = usize::try_from(num).map_err(|_| DatError::invalid(Input::NumSegments))?;
    if n > MAX_IOV {
        return Err(DatError::invalid(Input::NumSegments));
    }
    if n > 0 && (iov.is_null() || (iov as usize) % std::mem::align_of::<DAT_LMR_TRIPLET>() != 0) {
        return Err(DatError::invalid(Input::LocalIov));
    }
    for (i, s) in out.segs.iter_mut().enumerate().take(n) {
        // SAFETY: the consumer passes `num` readable triplets at `iov`
        // (checked non-NULL and aligned); each is copied out by value.
        let t = unsafe { iov.add(i).read() };
        s.write(Segment {
            lmr_context: t.lmr_context,
            addr: t.virtual_address,
            len: t.segment_length,
        });
    }
    // SAFETY: the first `n` (at most MAX_IOV) entries were written above.
    Ok(unsafe { std::slice::from_raw_parts(out.segs.as_ptr().cast::<Segment>(), n) })
}

/// Room for the segments of a post, copied from the consumer's list by
/// [`read_iov`] (only those are written: nothing is initialised, nothing
/// moved on the post path).
pub(crate) struct Iov {
    segs: [std::mem::MaybeUninit<Segment>; MAX_IOV],
}

impl Iov {
    pub(crate) const fn new() -> Iov {
        Iov {
            segs: [const { std::mem::MaybeUninit::uninit() }; MAX_IOV],
        }
    }
}

/// Private data copied from the consumer (size checked against `max`).
pub(crate) fn read_private_data(
    size: DAT_COUNT,
    data: *const std::ffi::c_void,
    max: i32,
    size_input: Input,
    ptr_input: Input,
) -> udapl::Result<([u8; 256], usize)> {
    let mut buf = [0u8; 256];
    if size < 0 || size > max {
        return Err(DatError::invalid(size_input));
    }
    let n = usize::try_from(size).map_err(|_| DatError::invalid(size_input))?;
    if n > buf.len() {
        return Err(DatError::invalid(size_input));
    }
    if n > 0 {
        if data.is_null() {
            return Err(DatError::invalid(ptr_input));
        }
        // SAFETY: the consumer passes `size` readable bytes at `data`; they
        // are copied into our buffer, no reference to its memory is made.
        unsafe { std::ptr::copy_nonoverlapping(data as *const u8, buf.as_mut_ptr(), n) };
    }
    Ok((buf, n))
}

/// A `struct sockaddr_in`/`sockaddr_in6` of the consumer.
pub(crate) fn read_sockaddr(p: DAT_IA_ADDRESS_PTR, input: Input) -> udapl::Result<SocketAddr> {
    if p.is_null() {
        return Err(DatError::invalid(input));
    }
    let unsupported = DatError::new(Type::InvalidAddress, Sub::AddressUnsupported);
    let b = p as *const u8;
    // SAFETY: a socket address starts with its 2-byte family; the consumer
    // passes a valid address. Read byte-wise (no alignment assumed).
    let family = unsafe { u16::from_ne_bytes([b.read(), b.add(1).read()]) };
    let len = SockAddrStorage::len_of_family(family).ok_or(unsupported)?;
    let mut sa = SockAddrStorage { bytes: [0; 32] };
    // SAFETY: a sockaddr of that family is `len` readable bytes; they are
    // copied into our storage, no reference to the consumer's memory is made.
    unsafe { std::ptr::copy_nonoverlapping(b, sa.bytes.as_mut_ptr(), len) };
    sa.to_socket_addr().ok_or(unsupported)
}

fn attr_from_c(a: &DAT_EP_ATTR) -> EpAttr {
    EpAttr {
        service_type: a.service_type,
        max_message_size: a.max_message_size,
        max_rdma_size: a.max_rdma_size,
        qos: a.qos,
        recv_completion_flags: a.recv_completion_flags,
        request_completion_flags: a.request_completion_flags,
        max_recv_dtos: a.max_recv_dtos,
        max_request_dtos: a.max_request_dtos,
        max_recv_iov: a.max_recv_iov,
        max_request_iov: a.max_request_iov,
        max_rdma_read_in: a.max_rdma_read_in,
        max_rdma_read_out: a.max_rdma_read_out,
        srq_soft_hw: a.srq_soft_hw,
        max_rdma_read_iov: a.max_rdma_read_iov,
        max_rdma_write_iov: a.max_rdma_write_iov,
        num_transport_attr: a.ep_transport_specific_count,
        num_provider_attr: a.ep_provider_specific_count,
    }
}

fn attr_to_c(a: &EpAttr) -> DAT_EP_ATTR {
    DAT_EP_ATTR {
        service_type: a.service_type,
        max_message_size: a.max_message_size,
        max_rdma_size: a.max_rdma_size,
        qos: a.qos,
        recv_completion_flags: a.recv_completion_flags,
        request_completion_flags: a.request_completion_flags,
        max_recv_dtos: a.max_recv_dtos,
        max_request_dtos: a.max_request_dtos,
        max_recv_iov: a.max_recv_iov,
        max_request_iov: a.max_request_iov,
        max_rdma_read_in: a.max_rdma_read_in,
        max_rdma_read_out: a.max_rdma_read_out,
        srq_soft_hw: a.srq_soft_hw,
        max_rdma_read_iov: a.max_rdma_read_iov,
        max_rdma_write_iov: a.max_rdma_write_iov,
        ep_transport_specific_count: 0,
        ep_transport_specific: std::ptr::null_mut(),
        ep_provider_specific_count: 0,
        ep_provider_specific: std::ptr::null_mut(),
    }
}

#[allow(clippy::too_many_arguments)]
fn create(
    ia_handle: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    recv: DAT_EVD_HANDLE,
    req: DAT_EVD_HANDLE,
    conn: DAT_EVD_HANDLE,
    srq: Option<DAT_SRQ_HANDLE>,
    attr: *const DAT_EP_ATTR,
    ep_out: *mut DAT_EP_HANDLE,
) -> udapl::Result<()> {
    let with_srq = srq.is_some();
    let ia = from_handle::<Ia>(ia_handle)?.arc();
    let slot = out(ep_out, Input::EpHandle)?;
    let attr = if attr.is_null() {
        None
    } else {
        Some(attr_from_c(&input(attr, Input::EpAttributes)?))
    };
    let ep = Ep::create(
        &ia,
        EpArgs {
            pz: core_handle(pz),
            recv_evd: core_handle(recv),
            request_evd: core_handle(req),
            connect_evd: core_handle(conn),
            srq: srq.map_or(Handle::NULL, core_handle),
            with_srq,
            attr,
        },
    )?;
    slot.set(to_handle(ep.handle));
    Ok(())
}

fn post(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *const DAT_LMR_TRIPLET,
    cookie: DAT_DTO_COOKIE,
    remote: Option<*const DAT_RMR_TRIPLET>,
    read: bool,
    flags: DAT_COMPLETION_FLAGS,
) -> udapl::Result<()> {
    let ep = from_handle::<Ep>(ep_handle)?;
    let mut room = Iov::new();
    let iov = read_iov(num_segments, local_iov, &mut room)?;
    // SAFETY: reading a union's 64-bit view; every bit pattern is valid.
    let cookie = unsafe { cookie.as_64 };
    let req = match remote {
        None => Request::Send,
        Some(r) => {
            let r = input(r, Input::RemoteIov)?;
            let r = RemoteSegment {
                rmr_context: r.rmr_context,
                addr: r.target_address,
                len: r.segment_length,
            };
            if read {
                Request::Read(r)
            } else {
                Request::Write(r)
            }
        }
    };
    ep.post(iov, cookie, req, flags)
}

/// Creates an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, PZ, EVDs), `DAT_INVALID_PARAMETER`,
/// `DAT_MODEL_NOT_SUPPORTED`, `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    ep_attributes: *const DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        ep_create_func(
            ia_handle,
            pz_handle,
            recv_evd_handle,
            request_evd_handle,
            connect_evd_handle,
            ep_attributes,
            ep_handle
        ),
        {
            create(
                ia_handle,
                pz_handle,
                recv_evd_handle,
                request_evd_handle,
                connect_evd_handle,
                None,
                ep_attributes,
                ep_handle,
            )
        }
    )
}

/// Creates an endpoint that receives through a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_ep_create`, plus `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dat_ep_create_with_srq(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    srq_handle: DAT_SRQ_HANDLE,
    ep_attributes: *const DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        ep_create_with_srq_func(
            ia_handle,
            pz_handle,
            recv_evd_handle,
            request_evd_handle,
            connect_evd_handle,
            srq_handle,
            ep_attributes,
            ep_handle
        ),
        {
            create(
                ia_handle,
                pz_handle,
                recv_evd_handle,
                request_evd_handle,
                connect_evd_handle,
                Some(srq_handle),
                ep_attributes,
                ep_handle,
            )
        }
    )
}

/// Returns endpoint parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (mask, NULL).
#[no_mangle]
pub unsafe extern "C" fn dat_ep_query(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: DAT_EP_PARAM_MASK,
    ep_param: *mut DAT_EP_PARAM,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_query_func(ep_handle, ep_param_mask, ep_param),
        {
            let ep = from_handle::<Ep>(ep_handle)?;
            let p = ep.query(ep_param_mask)?;
            let slot = out(ep_param, Input::EpParam)?;
            slot.set(DAT_EP_PARAM {
                ia_handle: to_handle(p.ia),
                ep_state: p.state,
                local_ia_address_ptr: p.local_addr as DAT_IA_ADDRESS_PTR,
                local_port_qual: p.local_port,
                remote_ia_address_ptr: p.remote_addr as DAT_IA_ADDRESS_PTR,
                remote_port_qual: p.remote_port,
                pz_handle: to_handle(p.pz),
                recv_evd_handle: to_handle(p.recv_evd),
                request_evd_handle: to_handle(p.request_evd),
                connect_evd_handle: to_handle(p.connect_evd),
                srq_handle: to_handle(p.srq),
                ep_attr: attr_to_c(&p.attr),
            });
            Ok(())
        }
    )
}

/// Changes endpoint parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`, `DAT_INVALID_STATE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_modify(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: DAT_EP_PARAM_MASK,
    ep_param: *const DAT_EP_PARAM,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_modify_func(ep_handle, ep_param_mask, ep_param),
        {
            let ep = from_handle::<Ep>(ep_handle)?;
            if ep_param_mask == 0 {
                return ep.modify(0, &empty_param());
            }
            let p = input(ep_param, Input::EpParam)?;
            let param = EpParam {
                ia: core_handle(p.ia_handle),
                state: p.ep_state,
                local_addr: 0,
                local_port: p.local_port_qual,
                remote_addr: 0,
                remote_port: p.remote_port_qual,
                pz: core_handle(p.pz_handle),
                recv_evd: core_handle(p.recv_evd_handle),
                request_evd: core_handle(p.request_evd_handle),
                connect_evd: core_handle(p.connect_evd_handle),
                srq: core_handle(p.srq_handle),
                attr: attr_from_c(&p.ep_attr),
            };
            ep.modify(ep_param_mask, &param)
        }
    )
}

fn empty_param() -> EpParam {
    EpParam {
        ia: Handle::NULL,
        state: 0,
        local_addr: 0,
        local_port: 0,
        remote_addr: 0,
        remote_port: 0,
        pz: Handle::NULL,
        recv_evd: Handle::NULL,
        request_evd: Handle::NULL,
        connect_evd: Handle::NULL,
        srq: Handle::NULL,
        attr: EpAttr::default(),
    }
}

/// Requests a connection to a remote service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`,
/// `DAT_INVALID_ADDRESS`, `DAT_INVALID_STATE`, `DAT_MODEL_NOT_SUPPORTED`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dat_ep_connect(
    ep_handle: DAT_EP_HANDLE,
    remote_ia_address: DAT_IA_ADDRESS_PTR,
    remote_conn_qual: DAT_CONN_QUAL,
    timeout: DAT_TIMEOUT,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
    qos: DAT_QOS,
    connect_flags: DAT_CONNECT_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_connect_func(
            ep_handle,
            remote_ia_address,
            remote_conn_qual,
            timeout,
            private_data_size,
            private_data,
            qos,
            connect_flags
        ),
        {
            let ep = from_handle::<Ep>(ep_handle)?;
            let max = ep.ia.provider_attributes.max_private_data_size;
            let (pd, n) = read_private_data(
                private_data_size,
                private_data,
                max,
                Input::PrivateDataSize,
                Input::PrivateData,
            )?;
            let remote = read_sockaddr(remote_ia_address, Input::RemoteIaAddress)?;
            ep.connect(
                remote,
                remote_conn_qual,
                timeout,
                &pd[..n],
                qos,
                connect_flags,
            )
        }
    )
}

/// Connects to the same remote service point as a connected endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_ep_connect`; `DAT_INVALID_HANDLE`/`DAT_INVALID_STATE` for the
/// duplicated endpoint.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_dup_connect(
    ep_handle: DAT_EP_HANDLE,
    ep_dup_handle: DAT_EP_HANDLE,
    timeout: DAT_TIMEOUT,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
    qos: DAT_QOS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_dup_connect_func(
            ep_handle,
            ep_dup_handle,
            timeout,
            private_data_size,
            private_data,
            qos
        ),
        {
            let ep = from_handle::<Ep>(ep_handle)?;
            let dup = from_handle::<Ep>(ep_dup_handle)?;
            let max = ep.ia.provider_attributes.max_private_data_size;
            let (pd, n) = read_private_data(
                private_data_size,
                private_data,
                max,
                Input::PrivateDataSize,
                Input::PrivateData,
            )?;
            let (remote, qual) = dup.connected_peer()?;
            ep.connect(remote, qual, timeout, &pd[..n], qos, 0)
        }
    )
}

/// Disconnects (gracefully or abruptly) or aborts a connection setup.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`, `DAT_INVALID_STATE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_disconnect(
    ep_handle: DAT_EP_HANDLE,
    close_flags: DAT_CLOSE_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_disconnect_func(ep_handle, close_flags),
        { from_handle::<Ep>(ep_handle)?.disconnect(close_flags) }
    )
}

/// Posts a Send.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`, `DAT_INVALID_STATE`,
/// `DAT_PRIVILEGES_VIOLATION`, `DAT_PROTECTION_VIOLATION`, `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_send(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_post_send_func(
            ep_handle,
            num_segments,
            local_iov,
            user_cookie,
            completion_flags
        ),
        {
            post(
                ep_handle,
                num_segments,
                local_iov,
                user_cookie,
                None,
                false,
                completion_flags,
            )
        }
    )
}

/// Posts a receive.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_ep_post_send`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_recv(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_post_recv_func(
            ep_handle,
            num_segments,
            local_iov,
            user_cookie,
            completion_flags
        ),
        {
            let ep = from_handle::<Ep>(ep_handle)?;
            let mut room = Iov::new();
            let iov = read_iov(num_segments, local_iov, &mut room)?;
            // SAFETY: the union's 64-bit view; every bit pattern is valid.
            let cookie = unsafe { user_cookie.as_64 };
            ep.post_recv(iov, cookie, completion_flags)
        }
    )
}

/// Posts an RDMA Read.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_ep_post_send`, plus `DAT_LENGTH_ERROR`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_rdma_read(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_post_rdma_read_func(
            ep_handle,
            num_segments,
            local_iov,
            user_cookie,
            remote_iov,
            completion_flags
        ),
        {
            post(
                ep_handle,
                num_segments,
                local_iov,
                user_cookie,
                Some(remote_iov),
                true,
                completion_flags,
            )
        }
    )
}

/// Posts an RDMA Write.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_ep_post_send`, plus `DAT_LENGTH_ERROR`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_rdma_write(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_post_rdma_write_func(
            ep_handle,
            num_segments,
            local_iov,
            user_cookie,
            remote_iov,
            completion_flags
        ),
        {
            post(
                ep_handle,
                num_segments,
                local_iov,
                user_cookie,
                Some(remote_iov),
                false,
                completion_flags,
            )
        }
    )
}

/// Returns the state and whether DTOs are outstanding.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call (NULL outputs are skipped).
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_get_status(
    ep_handle: DAT_EP_HANDLE,
    ep_state: *mut DAT_EP_STATE,
    recv_idle: *mut DAT_BOOLEAN,
    request_idle: *mut DAT_BOOLEAN,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_get_status_func(ep_handle, ep_state, recv_idle, request_idle),
        {
            let (state, r, q) = from_handle::<Ep>(ep_handle)?.status()?;
            if let Some(s) = opt_out(ep_state, Input::EpState)? {
                s.set(state);
            }
            if let Some(s) = opt_out(recv_idle, Input::RecvIdle)? {
                s.set(DAT_BOOLEAN::from(r));
            }
            if let Some(s) = opt_out(request_idle, Input::RequestIdle)? {
                s.set(DAT_BOOLEAN::from(q));
            }
            Ok(())
        }
    )
}

/// Destroys an endpoint (aborting any connection).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_STATE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_free(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry!(ep_handle, Sub::HandleEp, ep_free_func(ep_handle), {
        from_handle::<Ep>(ep_handle)?.free()
    })
}

/// Returns a disconnected endpoint to UNCONNECTED.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_STATE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_reset(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry!(ep_handle, Sub::HandleEp, ep_reset_func(ep_handle), {
        from_handle::<Ep>(ep_handle)?.reset()
    })
}

/// Receive buffers allocated to the endpoint and their span.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_recv_query(
    ep_handle: DAT_EP_HANDLE,
    nbufs_allocated: *mut DAT_COUNT,
    bufs_alloc_span: *mut DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_recv_query_func(ep_handle, nbufs_allocated, bufs_alloc_span),
        {
            let (n, span) = from_handle::<Ep>(ep_handle)?.recv_query()?;
            if let Some(s) = opt_out(nbufs_allocated, Input::NbufsAllocated)? {
                s.set(n);
            }
            if let Some(s) = opt_out(bufs_alloc_span, Input::BufsAllocSpan)? {
                s.set(span);
            }
            Ok(())
        }
    )
}

/// Endpoint watermarks: 1.2 has no event for them (rulings: watermarks).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_MODEL_NOT_SUPPORTED`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_ep_set_watermark(
    ep_handle: DAT_EP_HANDLE,
    soft_high_watermark: DAT_COUNT,
    hard_high_watermark: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_set_watermark_func(ep_handle, soft_high_watermark, hard_high_watermark),
        {
            from_handle::<Ep>(ep_handle)?.query(0)?;
            Err(DatError::of(Type::ModelNotSupported))
        }
    )
}
