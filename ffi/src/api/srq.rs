//! Shared receive queue entry points: creation, free, posting receives,
//! query, resize and the low watermark. Conversion only: the behaviour is
//! in `udapl::object::srq`.

use udapl::error::{Input, Sub};
use udapl::object::{Ia, Srq};

use crate::api::ep::read_iov;
use crate::boundary::{input, out};
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// Creates a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, PZ), `DAT_INVALID_PARAMETER`,
/// `DAT_INSUFFICIENT_RESOURCES`.
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
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let a = input(srq_attr as *const DAT_SRQ_ATTR, Input::SrqAttr)?;
            let slot = out(srq_handle, Input::SrqHandle)?;
            let s = Srq::create(
                &ia,
                core_handle(pz_handle),
                a.max_recv_dtos,
                a.max_recv_iov,
                a.low_watermark,
            )?;
            slot.set(to_handle(s.handle));
            Ok(())
        }
    )
}

/// Destroys a shared receive queue no endpoint uses.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_STATE` (in use).
#[no_mangle]
pub unsafe extern "C" fn dat_srq_free(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN {
    entry!(srq_handle, Sub::HandleSrq, srq_free_func(srq_handle), {
        from_handle::<Srq>(srq_handle)?.free()
    })
}

/// Posts a receive buffer to a shared receive queue.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`,
/// `DAT_PRIVILEGES_VIOLATION`, `DAT_PROTECTION_VIOLATION`, `DAT_INSUFFICIENT_RESOURCES`.
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
            let s = from_handle::<Srq>(srq_handle)?;
            let mut room = super::ep::Iov::new();
            let iov = read_iov(num_segments, local_iov, &mut room)?;
            // SAFETY: the union's 64-bit view; every bit pattern is valid.
            let cookie = unsafe { user_cookie.as_64 };
            s.post_recv(iov, cookie)
        }
    )
}

/// Returns shared receive queue parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (mask, NULL).
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
            let s = from_handle::<Srq>(srq_handle)?;
            let p = s.query(u64::from(srq_param_mask))?;
            let slot = out(srq_param, Input::SrqParam)?;
            slot.set(DAT_SRQ_PARAM {
                ia_handle: to_handle(p.ia),
                srq_state: p.state,
                pz_handle: to_handle(p.pz),
                max_recv_dtos: p.max_recv_dtos,
                max_recv_iov: p.max_recv_iov,
                low_watermark: p.low_watermark,
                available_dto_count: p.available,
                outstanding_dto_count: p.outstanding,
            });
            Ok(())
        }
    )
}

/// Changes the capacity of a shared receive queue.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`, `DAT_INVALID_STATE`.
#[no_mangle]
pub unsafe extern "C" fn dat_srq_resize(
    srq_handle: DAT_SRQ_HANDLE,
    srq_max_recv_dto: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_resize_func(srq_handle, srq_max_recv_dto),
        { from_handle::<Srq>(srq_handle)?.resize(srq_max_recv_dto) }
    )
}

/// The low watermark: 1.2 has no event for it (rulings: watermarks).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_MODEL_NOT_SUPPORTED`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_srq_set_lw(
    srq_handle: DAT_SRQ_HANDLE,
    low_watermark: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        srq_handle,
        Sub::HandleSrq,
        srq_set_lw_func(srq_handle, low_watermark),
        { from_handle::<Srq>(srq_handle)?.set_lw(low_watermark) }
    )
}
