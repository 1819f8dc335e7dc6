//! Service point entry points: public service points (PSP, on a fixed or
//! any free connection qualifier) and reserved service points (RSP, bound
//! to one endpoint): creation, query and free. Conversion only: the
//! behaviour is in `udapl::object::sp`.

use udapl::error::{DatError, Input, Sub};
use udapl::object::{Ia, Psp, Rsp, Sp};

use crate::boundary::out;
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// `DAT_PSP_FIELD_ALL` / `DAT_RSP_FIELD_ALL`.
const SP_FIELD_ALL: u32 = 0xf;

/// Creates a public service point.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, EVD), `DAT_INVALID_PARAMETER`,
/// `DAT_CONN_QUAL_IN_USE`, `DAT_INSUFFICIENT_RESOURCES`.
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
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(psp_handle, Input::PspHandle)?;
            let (sp, _) =
                Sp::create_psp(&ia, conn_qual, core_handle(evd_handle), psp_flags, false)?;
            slot.set(to_handle(sp.handle));
            Ok(())
        }
    )
}

/// Creates a public service point on a free connection qualifier.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// As `dat_psp_create`; the chosen qualifier is written to `conn_qual`.
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
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let qual_slot = out(conn_qual, Input::ConnQual)?;
            let slot = out(psp_handle, Input::PspHandle)?;
            let (sp, q) = Sp::create_psp(&ia, 0, core_handle(evd_handle), psp_flags, true)?;
            qual_slot.set(q);
            slot.set(to_handle(sp.handle));
            Ok(())
        }
    )
}

/// Returns public service point parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (mask, NULL).
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
            let psp = from_handle::<Psp>(psp_handle)?;
            if psp_param_mask & !SP_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::PspParamMask));
            }
            let slot = out(psp_param, Input::PspParam)?;
            let p = psp.sp.params();
            slot.set(DAT_PSP_PARAM {
                ia_handle: to_handle(p.ia),
                conn_qual: p.conn_qual,
                evd_handle: to_handle(p.evd),
                psp_flags: p.flags,
            });
            Ok(())
        }
    )
}

/// Destroys a public service point.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_psp_free(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN {
    entry!(psp_handle, Sub::HandlePsp, psp_free_func(psp_handle), {
        from_handle::<Psp>(psp_handle)?.sp.free()
    })
}

/// Creates a reserved service point for one endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, EP, EVD), `DAT_INVALID_PARAMETER`,
/// `DAT_INVALID_STATE`, `DAT_CONN_QUAL_IN_USE`.
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
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(rsp_handle, Input::RspHandle)?;
            let sp = Sp::create_rsp(
                &ia,
                conn_qual,
                core_handle(ep_handle),
                core_handle(evd_handle),
            )?;
            slot.set(to_handle(sp.handle));
            Ok(())
        }
    )
}

/// Returns reserved service point parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (mask, NULL).
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
            let rsp = from_handle::<Rsp>(rsp_handle)?;
            if rsp_param_mask & !SP_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::RspParamMask));
            }
            let slot = out(rsp_param, Input::RspParam)?;
            let p = rsp.sp.params();
            slot.set(DAT_RSP_PARAM {
                ia_handle: to_handle(p.ia),
                conn_qual: p.conn_qual,
                evd_handle: to_handle(p.evd),
                ep_handle: to_handle(p.ep),
            });
            Ok(())
        }
    )
}

/// Destroys a reserved service point (an unused endpoint returns to UNCONNECTED).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_rsp_free(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN {
    entry!(rsp_handle, Sub::HandleRsp, rsp_free_func(rsp_handle), {
        from_handle::<Rsp>(rsp_handle)?.sp.free()
    })
}
