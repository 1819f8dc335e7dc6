//! Service point entry points: public service points (PSP, on a fixed or
//! any free connection qualifier) and reserved service points (RSP, bound
//! to one endpoint): creation, query and free.
//!
//! Handles of third-party providers are dispatched to them. For this
//! library's own objects the connection layer is not in this build yet: the
//! creators validate their IA and return `DAT_NOT_IMPLEMENTED`, and since no
//! such object of ours can exist, every other handle is
//! `DAT_INVALID_HANDLE` with the subtype of its type.

use udapl::error::{DatError, Sub};
use udapl::object::{absent, connection_layer_pending, evd_for_role, ia, EVD_CR_FLAG};

use crate::boundary::{entry, out};
use crate::types::*;

/// Creates a public service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
#[no_mangle]
pub unsafe extern "C" fn dat_psp_create(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: DAT_CONN_QUAL,
    evd_handle: DAT_EVD_HANDLE,
    psp_flags: DAT_PSP_FLAGS,
    psp_handle: *mut DAT_PSP_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        psp_create_func(ia_handle, conn_qual, evd_handle, psp_flags, psp_handle),
        {
            let ia = ia::lookup(ia_handle as usize)?;
            evd_for_role(&ia, evd_handle as usize, EVD_CR_FLAG, Sub::HandleEvdCr)?
                .ok_or(DatError::handle(Sub::HandleEvdCr))?;
            if psp_flags > DAT_PSP_PROVIDER_FLAG {
                return Err(DatError::arg(4));
            }
            out(psp_handle, 5)?;
            let _ = conn_qual;
            connection_layer_pending()
        }
    )
}

/// Creates a public service point on a free connection qualifier.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
#[no_mangle]
pub unsafe extern "C" fn dat_psp_create_any(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: *mut DAT_CONN_QUAL,
    evd_handle: DAT_EVD_HANDLE,
    psp_flags: DAT_PSP_FLAGS,
    psp_handle: *mut DAT_PSP_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        psp_create_any_func(ia_handle, conn_qual, evd_handle, psp_flags, psp_handle),
        {
            let ia = ia::lookup(ia_handle as usize)?;
            out(conn_qual, 2)?;
            evd_for_role(&ia, evd_handle as usize, EVD_CR_FLAG, Sub::HandleEvdCr)?
                .ok_or(DatError::handle(Sub::HandleEvdCr))?;
            if psp_flags > DAT_PSP_PROVIDER_FLAG {
                return Err(DatError::arg(4));
            }
            out(psp_handle, 5)?;
            connection_layer_pending()
        }
    )
}

/// Returns service point parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (PSP).
#[no_mangle]
pub unsafe extern "C" fn dat_psp_query(
    psp_handle: DAT_PSP_HANDLE,
    psp_param_mask: DAT_PSP_PARAM_MASK,
    psp_param: *mut DAT_PSP_PARAM,
) -> DAT_RETURN {
    entry!(
        psp_handle,
        Sub::HandlePsp,
        psp_query_func(psp_handle, psp_param_mask, psp_param),
        {
            let _ = (psp_param_mask, psp_param);
            absent(Sub::HandlePsp)
        }
    )
}

/// Destroys a public service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (PSP).
#[no_mangle]
pub unsafe extern "C" fn dat_psp_free(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN {
    entry!(psp_handle, Sub::HandlePsp, psp_free_func(psp_handle), {
        absent(Sub::HandlePsp)
    })
}

/// Creates a reserved service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (IA); `DAT_NOT_IMPLEMENTED` for this library's IAs until the connection layer lands.
#[no_mangle]
pub unsafe extern "C" fn dat_rsp_create(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: DAT_CONN_QUAL,
    ep_handle: DAT_EP_HANDLE,
    evd_handle: DAT_EVD_HANDLE,
    rsp_handle: *mut DAT_RSP_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        rsp_create_func(ia_handle, conn_qual, ep_handle, evd_handle, rsp_handle),
        {
            ia::lookup(ia_handle as usize)?;
            // No endpoint of this library can exist yet, so any EP is invalid.
            let _ = (conn_qual, ep_handle, evd_handle, rsp_handle);
            absent(Sub::HandleEp)
        }
    )
}

/// Returns reserved service point parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (RSP).
#[no_mangle]
pub unsafe extern "C" fn dat_rsp_query(
    rsp_handle: DAT_RSP_HANDLE,
    rsp_param_mask: DAT_RSP_PARAM_MASK,
    rsp_param: *mut DAT_RSP_PARAM,
) -> DAT_RETURN {
    entry!(
        rsp_handle,
        Sub::HandleRsp,
        rsp_query_func(rsp_handle, rsp_param_mask, rsp_param),
        {
            let _ = (rsp_param_mask, rsp_param);
            absent(Sub::HandleRsp)
        }
    )
}

/// Destroys a reserved service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// The third-party provider's result, or `DAT_INVALID_HANDLE` (RSP).
#[no_mangle]
pub unsafe extern "C" fn dat_rsp_free(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN {
    entry!(rsp_handle, Sub::HandleRsp, rsp_free_func(rsp_handle), {
        absent(Sub::HandleRsp)
    })
}
