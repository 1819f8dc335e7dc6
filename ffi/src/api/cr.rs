//! Connection request entry points: query, accept, reject and hand-off of
//! the requests a service point delivers.
//!
//! Handles of third-party providers are dispatched to them. This library
//! delivers no connection requests of its own while the connection layer is
//! not in this build, so every other handle is `DAT_INVALID_HANDLE` (CR).

use udapl::error::Sub;
use udapl::object::absent;

use crate::boundary::entry;
use crate::types::*;

/// Returns connection request parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (CR).
#[no_mangle]
pub unsafe extern "C" fn dat_cr_query(
    cr_handle: DAT_CR_HANDLE,
    cr_param_mask: DAT_CR_PARAM_MASK,
    cr_param: *mut DAT_CR_PARAM,
) -> DAT_RETURN {
    entry!(
        cr_handle,
        Sub::HandleCr,
        cr_query_func(cr_handle, cr_param_mask, cr_param),
        {
            let _ = (cr_param_mask, cr_param);
            absent(Sub::HandleCr)
        }
    )
}

/// Accepts a connection request.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (CR).
#[no_mangle]
pub unsafe extern "C" fn dat_cr_accept(
    cr_handle: DAT_CR_HANDLE,
    ep_handle: DAT_EP_HANDLE,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
) -> DAT_RETURN {
    entry!(
        cr_handle,
        Sub::HandleCr,
        cr_accept_func(cr_handle, ep_handle, private_data_size, private_data),
        {
            let _ = (ep_handle, private_data_size, private_data);
            absent(Sub::HandleCr)
        }
    )
}

/// Rejects a connection request.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (CR).
#[no_mangle]
pub unsafe extern "C" fn dat_cr_reject(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN {
    entry!(cr_handle, Sub::HandleCr, cr_reject_func(cr_handle), {
        absent(Sub::HandleCr)
    })
}

/// Hands a connection request to another service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (CR).
#[no_mangle]
pub unsafe extern "C" fn dat_cr_handoff(
    cr_handle: DAT_CR_HANDLE,
    handoff: DAT_CONN_QUAL,
) -> DAT_RETURN {
    entry!(
        cr_handle,
        Sub::HandleCr,
        cr_handoff_func(cr_handle, handoff),
        {
            let _ = (handoff,);
            absent(Sub::HandleCr)
        }
    )
}
