//! PZ, LMR and RMR functions.

use udapl::error::{DatError, Input, Sub};
use udapl::object::{lmr, Ep, Ia, Lmr, LmrRequest, Pz, Region, Rmr};

use crate::boundary::{input, out, put};
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// Creates a Protection Zone.
///
/// # Safety
/// `pz_handle` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER` (ARG2),
/// `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_pz_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: *mut DAT_PZ_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        pz_create_func(ia_handle, pz_handle),
        {
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(pz_handle, Input::PzHandle)?;
            slot.set(to_handle(Pz::create(&ia)?.handle));
            Ok(())
        }
    )
}

/// Returns PZ parameters.
///
/// # Safety
/// `pz_param` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (PZ), `DAT_INVALID_PARAMETER` (ARG2, ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_pz_query(
    pz_handle: DAT_PZ_HANDLE,
    pz_param_mask: DAT_PZ_PARAM_MASK,
    pz_param: *mut DAT_PZ_PARAM,
) -> DAT_RETURN {
    entry!(
        pz_handle,
        Sub::HandlePz,
        pz_query_func(pz_handle, pz_param_mask, pz_param),
        {
            let pz = from_handle::<Pz>(pz_handle)?;
            if pz_param_mask & !DAT_PZ_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::PzParamMask));
            }
            if pz_param_mask != 0 {
                put!(
                    out(pz_param, Input::PzParam)?,
                    ia_handle = to_handle(pz.ia.handle)
                );
            }
            Ok(())
        }
    )
}

/// Destroys a PZ nothing uses.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (PZ), `DAT_INVALID_STATE` (PZ_IN_USE).
#[no_mangle]
pub unsafe extern "C" fn dat_pz_free(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN {
    entry!(pz_handle, Sub::HandlePz, pz_free_func(pz_handle), {
        from_handle::<Pz>(pz_handle)?.free()
    })
}

/// Registers memory.
///
/// # Safety
/// `region_description` must be valid for `mem_type` (for shared memory the
/// cookie pointer is NULL or points at 40 readable bytes); OUT pointers are
/// NULL or writable (`lmr_handle` is required).
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, PZ, LMR), `DAT_INVALID_PARAMETER`
/// (ARG2 type, ARG3 address, ARG4 length, ARG6 privileges, ARG7 NULL OUT),
/// `DAT_INVALID_STATE` (memory not shared), `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dat_lmr_create(
    ia_handle: DAT_IA_HANDLE,
    mem_type: DAT_MEM_TYPE,
    region_description: DAT_REGION_DESCRIPTION,
    length: DAT_VLEN,
    pz_handle: DAT_PZ_HANDLE,
    privileges: DAT_MEM_PRIV_FLAGS,
    lmr_handle: *mut DAT_LMR_HANDLE,
    lmr_context: *mut DAT_LMR_CONTEXT,
    rmr_context: *mut DAT_RMR_CONTEXT,
    registered_length: *mut DAT_VLEN,
    registered_address: *mut DAT_VADDR,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        lmr_create_func(
            ia_handle,
            mem_type,
            region_description,
            length,
            pz_handle,
            privileges,
            lmr_handle,
            lmr_context,
            rmr_context,
            registered_length,
            registered_address
        ),
        {
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(lmr_handle, Input::LmrHandle)?;
            let ctx_out = crate::boundary::opt_out(lmr_context, Input::LmrContext)?;
            let rctx_out = crate::boundary::opt_out(rmr_context, Input::RmrContext)?;
            let len_out = crate::boundary::opt_out(registered_length, Input::RegisteredLength)?;
            let addr_out = crate::boundary::opt_out(registered_address, Input::RegisteredAddress)?;
            // SAFETY: the union is read as the member `mem_type` selects; every
            // member is plain data (pointers are only compared and stored).
            let region = unsafe {
                match mem_type {
                    DAT_MEM_TYPE_LMR => Region::Lmr(core_handle(region_description.for_lmr_handle)),
                    DAT_MEM_TYPE_SHARED_VIRTUAL => {
                        let sm = region_description.for_shared_memory;
                        let mut cookie = [0u8; lmr::COOKIE_SIZE];
                        if !sm.shared_memory_id.is_null() {
                            // SAFETY: a non-NULL cookie points at DAT_LMR_COOKIE_SIZE bytes.
                            std::ptr::copy_nonoverlapping(
                                sm.shared_memory_id.cast::<u8>(),
                                cookie.as_mut_ptr(),
                                lmr::COOKIE_SIZE,
                            );
                        }
                        Region::Shared {
                            va: sm.virtual_address as u64,
                            cookie_ptr: sm.shared_memory_id as usize,
                            cookie,
                        }
                    }
                    _ => Region::Va(region_description.for_va as u64),
                }
            };
            let req = LmrRequest {
                mem_type,
                region,
                length,
                pz: core_handle(pz_handle),
                privileges,
            };
            let l = Lmr::create(&ia, req)?;
            // Raw writes in argument order: OUT arguments may alias.
            slot.set(to_handle(l.handle));
            if let Some(p) = ctx_out {
                p.set(l.lmr_context);
            }
            if let Some(p) = rctx_out {
                p.set(l.rmr_context);
            }
            if let Some(p) = len_out {
                p.set(l.registered_size);
            }
            if let Some(p) = addr_out {
                p.set(l.registered_address);
            }
            Ok(())
        }
    )
}

/// Returns LMR parameters.
///
/// # Safety
/// `lmr_param` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (LMR), `DAT_INVALID_PARAMETER` (ARG2, ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_lmr_query(
    lmr_handle: DAT_LMR_HANDLE,
    lmr_param_mask: DAT_LMR_PARAM_MASK,
    lmr_param: *mut DAT_LMR_PARAM,
) -> DAT_RETURN {
    entry!(
        lmr_handle,
        Sub::HandleLmr,
        lmr_query_func(lmr_handle, lmr_param_mask, lmr_param),
        {
            let l = from_handle::<Lmr>(lmr_handle)?;
            if lmr_param_mask & !DAT_LMR_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::LmrParamMask));
            }
            if lmr_param_mask == 0 {
                return Ok(());
            }
            let p = out(lmr_param, Input::LmrParam)?;
            put!(p, ia_handle = to_handle(l.ia.handle));
            put!(p, mem_type = l.mem_type);
            let region_desc = match l.region {
                Region::Va(va) => DAT_REGION_DESCRIPTION {
                    for_va: va as DAT_PVOID,
                },
                Region::Lmr(h) => DAT_REGION_DESCRIPTION {
                    for_lmr_handle: to_handle(h),
                },
                Region::Shared { va, cookie_ptr, .. } => DAT_REGION_DESCRIPTION {
                    for_shared_memory: DAT_SHARED_MEMORY {
                        virtual_address: va as DAT_PVOID,
                        shared_memory_id: cookie_ptr as DAT_LMR_COOKIE,
                    },
                },
            };
            put!(p, region_desc = region_desc);
            put!(p, length = l.length);
            put!(p, pz_handle = to_handle(l.pz.handle));
            put!(p, mem_priv = l.privileges);
            put!(p, lmr_context = l.lmr_context);
            put!(p, rmr_context = l.rmr_context);
            put!(p, registered_size = l.registered_size);
            put!(p, registered_address = l.registered_address);
            Ok(())
        }
    )
}

/// Deregisters an LMR (the memory itself is untouched).
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (LMR), `DAT_INVALID_STATE` (LMR_IN_USE).
#[no_mangle]
pub unsafe extern "C" fn dat_lmr_free(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN {
    entry!(lmr_handle, Sub::HandleLmr, lmr_free_func(lmr_handle), {
        from_handle::<Lmr>(lmr_handle)?.free()
    })
}

/// Checks the triplet array: `local_segments` if NULL (or misaligned) with a
/// non-zero count, `num_segments` if the count is beyond any sane number of
/// segments. Returns
/// how many there are.
fn segment_count(p: *const DAT_LMR_TRIPLET, num: DAT_VLEN) -> udapl::Result<usize> {
    if num == 0 {
        return Ok(0);
    }
    if p.is_null() || (p as usize) % std::mem::align_of::<DAT_LMR_TRIPLET>() != 0 {
        return Err(DatError::invalid(Input::LocalSegments));
    }
    usize::try_from(num)
        .ok()
        .filter(|n| *n <= 1 << 24)
        .ok_or(DatError::invalid(Input::NumSegments))
}

/// Both sync calls: every segment inside a live LMR of the IA (the lock-free
/// key check), then a fence (memory is cache-coherent here). Triplets are
/// read one by one, by value.
fn sync(ia_handle: DAT_IA_HANDLE, p: *const DAT_LMR_TRIPLET, n: DAT_VLEN) -> udapl::Result<()> {
    let ia = from_handle::<Ia>(ia_handle)?;
    let n = segment_count(p, n)?;
    ia.sync_segments((0..n).map(|i| {
        // SAFETY: the caller passes `n` readable triplets; each is copied.
        let t = unsafe { p.add(i).read() };
        (t.lmr_context, t.virtual_address, t.segment_length)
    }))
}

/// Makes local writes visible to a later incoming RDMA Read.
///
/// # Safety
/// `local_segments` points at `num_segments` triplets (or NULL with 0).
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER`.
#[no_mangle]
pub unsafe extern "C" fn dat_lmr_sync_rdma_read(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        lmr_sync_rdma_read_func(ia_handle, local_segments, num_segments),
        { sync(ia_handle, local_segments, num_segments) }
    )
}

/// Makes a completed incoming RDMA Write visible to local reads.
///
/// # Safety
/// `local_segments` points at `num_segments` triplets (or NULL with 0).
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER`.
#[no_mangle]
pub unsafe extern "C" fn dat_lmr_sync_rdma_write(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        lmr_sync_rdma_write_func(ia_handle, local_segments, num_segments),
        { sync(ia_handle, local_segments, num_segments) }
    )
}

/// Creates an unbound RMR in a PZ.
///
/// # Safety
/// `rmr_handle` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (PZ), `DAT_INVALID_PARAMETER` (ARG2),
/// `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_create(
    pz_handle: DAT_PZ_HANDLE,
    rmr_handle: *mut DAT_RMR_HANDLE,
) -> DAT_RETURN {
    entry!(
        pz_handle,
        Sub::HandlePz,
        rmr_create_func(pz_handle, rmr_handle),
        {
            let pz = from_handle::<Pz>(pz_handle)?.arc();
            let slot = out(rmr_handle, Input::RmrHandle)?;
            slot.set(to_handle(Rmr::create(&pz)?.handle));
            Ok(())
        }
    )
}

/// Returns RMR parameters; unbound fields read as zero.
///
/// # Safety
/// `rmr_param` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (RMR), `DAT_INVALID_PARAMETER` (ARG2, ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_query(
    rmr_handle: DAT_RMR_HANDLE,
    rmr_param_mask: DAT_RMR_PARAM_MASK,
    rmr_param: *mut DAT_RMR_PARAM,
) -> DAT_RETURN {
    entry!(
        rmr_handle,
        Sub::HandleRmr,
        rmr_query_func(rmr_handle, rmr_param_mask, rmr_param),
        {
            let r = from_handle::<Rmr>(rmr_handle)?;
            if rmr_param_mask & !DAT_RMR_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::RmrParamMask));
            }
            if rmr_param_mask == 0 {
                return Ok(());
            }
            let p = out(rmr_param, Input::RmrParam)?;
            let v = r.params()?;
            put!(p, ia_handle = to_handle(v.ia));
            put!(p, pz_handle = to_handle(v.pz));
            put!(
                p,
                lmr_triplet = DAT_LMR_TRIPLET {
                    lmr_context: v.lmr_context,
                    pad: 0,
                    virtual_address: v.virtual_address,
                    segment_length: v.length,
                }
            );
            put!(p, mem_priv = v.privileges);
            put!(p, rmr_context = v.rmr_context);
            Ok(())
        }
    )
}

/// Binds an RMR to an LMR range through an endpoint.
///
/// # Safety
/// Pointers are NULL or valid; handles are validated.
///
/// # Returns
/// `DAT_INVALID_HANDLE` (RMR; EP: no endpoint of this library exists yet).
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_bind(
    rmr_handle: DAT_RMR_HANDLE,
    lmr_triplet: *const DAT_LMR_TRIPLET,
    mem_priv: DAT_MEM_PRIV_FLAGS,
    ep_handle: DAT_EP_HANDLE,
    user_cookie: DAT_RMR_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
    rmr_context: *mut DAT_RMR_CONTEXT,
) -> DAT_RETURN {
    entry!(
        rmr_handle,
        Sub::HandleRmr,
        rmr_bind_func(
            rmr_handle,
            lmr_triplet,
            mem_priv,
            ep_handle,
            user_cookie,
            completion_flags,
            rmr_context
        ),
        {
            let rmr = from_handle::<Rmr>(rmr_handle)?;
            let t = input(lmr_triplet, Input::LmrTriplet)?;
            let ep = from_handle::<Ep>(ep_handle)?;
            let slot = out(rmr_context, Input::RmrContext)?;
            // SAFETY: the union's 64-bit view; every bit pattern is valid.
            let cookie = unsafe { user_cookie.as_64 };
            let seg = udapl::object::ep::Segment {
                lmr_context: t.lmr_context,
                addr: t.virtual_address,
                len: t.segment_length,
            };
            let key = rmr.bind(seg, mem_priv, &*ep, cookie, completion_flags)?;
            slot.set(key);
            Ok(())
        }
    )
}

/// Destroys an RMR, unbinding it first.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (RMR).
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_free(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN {
    entry!(rmr_handle, Sub::HandleRmr, rmr_free_func(rmr_handle), {
        from_handle::<Rmr>(rmr_handle)?.free()
    })
}
