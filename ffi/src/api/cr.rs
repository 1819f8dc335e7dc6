//! Connection request entry points: query, accept, reject and hand-off of
//! the requests a service point delivers. Conversion only: the behaviour
//! is in `udapl::object::sp`.

use udapl::error::{DatError, Input, Sub};
use udapl::object::Cr;

use crate::api::ep::read_private_data;
use crate::boundary::out;
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// `DAT_CR_FIELD_ALL`.
const CR_FIELD_ALL: u32 = 0x1f;

/// Returns connection request parameters.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (mask, NULL).
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
            let cr = from_handle::<Cr>(cr_handle)?;
            if cr_param_mask & !CR_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::CrParamMask));
            }
            let slot = out(cr_param, Input::CrParam)?;
            let p = cr.params();
            slot.set(DAT_CR_PARAM {
                remote_ia_address_ptr: p.remote_addr as DAT_IA_ADDRESS_PTR,
                remote_port_qual: p.remote_port,
                private_data_size: p.private_data_size,
                private_data: p.private_data as DAT_PVOID,
                local_ep_handle: to_handle(p.local_ep),
            });
            Ok(())
        }
    )
}

/// Accepts a connection request on an endpoint.
///
/// # Safety
/// Pointer arguments are NULL or valid for the call.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (CR, EP), `DAT_INVALID_PARAMETER`, `DAT_INVALID_STATE`.
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
            let cr = from_handle::<Cr>(cr_handle)?;
            let max = cr.ia.provider_attributes.max_private_data_size;
            let (pd, n) = read_private_data(
                private_data_size,
                private_data,
                max,
                Input::PrivateDataSize,
                Input::PrivateData,
            )?;
            cr.accept(core_handle(ep_handle), &pd[..n])
        }
    )
}

/// Rejects a connection request (the peer sees `PEER_REJECTED`).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_cr_reject(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN {
    entry!(cr_handle, Sub::HandleCr, cr_reject_func(cr_handle), {
        from_handle::<Cr>(cr_handle)?.reject()
    })
}

/// Hands a connection request to the service point on another qualifier.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER`.
#[no_mangle]
pub unsafe extern "C" fn dat_cr_handoff(
    cr_handle: DAT_CR_HANDLE,
    handoff: DAT_CONN_QUAL,
) -> DAT_RETURN {
    entry!(
        cr_handle,
        Sub::HandleCr,
        cr_handoff_func(cr_handle, handoff),
        { from_handle::<Cr>(cr_handle)?.handoff(handoff) }
    )
}
