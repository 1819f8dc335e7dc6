//! Endpoint entry points: creation (with or without an SRQ), query and
//! modify, connection setup and teardown, posting of data transfers,
//! status, reset and free.
//!
//! Handles of third-party providers are dispatched to them. For this
//! library's own objects the connection layer is not in this build yet: the
//! creators validate their IA and return `DAT_NOT_IMPLEMENTED`, and since no
//! such object of ours can exist, every other handle is
//! `DAT_INVALID_HANDLE` with the subtype of its type.

use udapl::error::Sub;
use udapl::object::{
    absent, connection_layer_pending, evd_for_role, ia, pz_for, EVD_CONNECTION_FLAG, EVD_DTO_FLAG,
};

use crate::boundary::{entry, input, out};
use crate::types::*;

/// Creates an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
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
            let ia = ia::lookup(ia_handle as usize)?;
            pz_for(&ia, pz_handle as usize, true)?;
            evd_for_role(
                &ia,
                recv_evd_handle as usize,
                EVD_DTO_FLAG,
                Sub::HandleEvdRecv,
            )?;
            evd_for_role(
                &ia,
                request_evd_handle as usize,
                EVD_DTO_FLAG,
                Sub::HandleEvdRequest,
            )?;
            evd_for_role(
                &ia,
                connect_evd_handle as usize,
                EVD_CONNECTION_FLAG,
                Sub::HandleEvdConn,
            )?;
            if !ep_attributes.is_null() {
                input(ep_attributes, 6)?;
            }
            out(ep_handle, 7)?;
            connection_layer_pending()
        }
    )
}

/// Creates an endpoint that receives through a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
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
            let ia = ia::lookup(ia_handle as usize)?;
            pz_for(&ia, pz_handle as usize, true)?;
            evd_for_role(
                &ia,
                recv_evd_handle as usize,
                EVD_DTO_FLAG,
                Sub::HandleEvdRecv,
            )?;
            evd_for_role(
                &ia,
                request_evd_handle as usize,
                EVD_DTO_FLAG,
                Sub::HandleEvdRequest,
            )?;
            evd_for_role(
                &ia,
                connect_evd_handle as usize,
                EVD_CONNECTION_FLAG,
                Sub::HandleEvdConn,
            )?;
            // No SRQ of this library can exist yet, so any SRQ handle is invalid.
            let _ = (srq_handle, ep_attributes, ep_handle);
            absent(Sub::HandleSrq)
        }
    )
}

/// Returns endpoint parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (ep_param_mask, ep_param);
            absent(Sub::HandleEp)
        }
    )
}

/// Changes endpoint parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (ep_param_mask, ep_param);
            absent(Sub::HandleEp)
        }
    )
}

/// Requests a connection to a remote service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (
                remote_ia_address,
                remote_conn_qual,
                timeout,
                private_data_size,
                private_data,
                qos,
                connect_flags,
            );
            absent(Sub::HandleEp)
        }
    )
}

/// Connects to the peer of another connected endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (ep_dup_handle, timeout, private_data_size, private_data, qos);
            absent(Sub::HandleEp)
        }
    )
}

/// Disconnects an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
#[no_mangle]
pub unsafe extern "C" fn dat_ep_disconnect(
    ep_handle: DAT_EP_HANDLE,
    close_flags: DAT_CLOSE_FLAGS,
) -> DAT_RETURN {
    entry!(
        ep_handle,
        Sub::HandleEp,
        ep_disconnect_func(ep_handle, close_flags),
        {
            let _ = (close_flags,);
            absent(Sub::HandleEp)
        }
    )
}

/// Posts a send.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (num_segments, local_iov, user_cookie, completion_flags);
            absent(Sub::HandleEp)
        }
    )
}

/// Posts a receive buffer.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (num_segments, local_iov, user_cookie, completion_flags);
            absent(Sub::HandleEp)
        }
    )
}

/// Posts an RDMA Read.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (
                num_segments,
                local_iov,
                user_cookie,
                remote_iov,
                completion_flags,
            );
            absent(Sub::HandleEp)
        }
    )
}

/// Posts an RDMA Write.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (
                num_segments,
                local_iov,
                user_cookie,
                remote_iov,
                completion_flags,
            );
            absent(Sub::HandleEp)
        }
    )
}

/// Returns the endpoint state and whether its queues are idle.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (ep_state, recv_idle, request_idle);
            absent(Sub::HandleEp)
        }
    )
}

/// Destroys an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
#[no_mangle]
pub unsafe extern "C" fn dat_ep_free(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry!(ep_handle, Sub::HandleEp, ep_free_func(ep_handle), {
        absent(Sub::HandleEp)
    })
}

/// Returns a disconnected endpoint to the unconnected state.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
#[no_mangle]
pub unsafe extern "C" fn dat_ep_reset(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry!(ep_handle, Sub::HandleEp, ep_reset_func(ep_handle), {
        absent(Sub::HandleEp)
    })
}

/// Reports receive buffer usage of an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (nbufs_allocated, bufs_alloc_span);
            absent(Sub::HandleEp)
        }
    )
}

/// Sets receive watermarks of an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (EP).
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
            let _ = (soft_high_watermark, hard_high_watermark);
            absent(Sub::HandleEp)
        }
    )
}
