//! Shared receive queue entry points: creation, free, posting receives,
//! query, resize and the low watermark.
//!
//! Handles of third-party providers are dispatched to them. For this
//! library's own objects the connection layer is not in this build yet: the
//! creators validate their IA and return `DAT_NOT_IMPLEMENTED`, and since no
//! such object of ours can exist, every other handle is
//! `DAT_INVALID_HANDLE` with the subtype of its type.

use udapl::error::Sub;
use udapl::object::{absent, connection_layer_pending, ia, pz_for};

use crate::boundary::{entry, input, out};
use crate::types::*;

/// Creates a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
#[no_mangle]
pub unsafe extern "C" fn dat_srq_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    srq_attr: *mut DAT_SRQ_ATTR,
    srq_handle: *mut DAT_SRQ_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        srq_create_func(ia_handle, pz_handle, srq_attr, srq_handle),
        {
            let ia = ia::lookup(ia_handle as usize)?;
            pz_for(&ia, pz_handle as usize, false)?;
            input(srq_attr as *const DAT_SRQ_ATTR, 3)?;
            out(srq_handle, 4)?;
            connection_layer_pending()
        }
    )
}

/// Destroys a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_free(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN {
    entry!(srq_handle, Sub::HandleSrq, srq_free_func(srq_handle), {
        absent(Sub::HandleSrq)
    })
}

/// Posts a receive buffer to a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_post_recv(
    srq_handle: DAT_SRQ_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_post_recv_func(srq_handle, num_segments, local_iov, user_cookie),
        {
            let _ = (num_segments, local_iov, user_cookie);
            absent(Sub::HandleSrq)
        }
    )
}

/// Returns shared receive queue parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_query(
    srq_handle: DAT_SRQ_HANDLE,
    srq_param_mask: DAT_SRQ_PARAM_MASK,
    srq_param: *mut DAT_SRQ_PARAM,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_query_func(srq_handle, srq_param_mask, srq_param),
        {
            let _ = (srq_param_mask, srq_param);
            absent(Sub::HandleSrq)
        }
    )
}

/// Changes the capacity of a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_resize(
    srq_handle: DAT_SRQ_HANDLE,
    srq_max_recv_dto: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_resize_func(srq_handle, srq_max_recv_dto),
        {
            let _ = (srq_max_recv_dto,);
            absent(Sub::HandleSrq)
        }
    )
}

/// Sets the low watermark of a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (SRQ).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_set_lw(
    srq_handle: DAT_SRQ_HANDLE,
    low_watermark: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_set_lw_func(srq_handle, low_watermark),
        {
            let _ = (low_watermark,);
            absent(Sub::HandleSrq)
        }
    )
}
