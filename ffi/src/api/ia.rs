//! `dat_ia_openv`, `dat_ia_close`, `dat_ia_query`.

use udapl::error::{DatError, Sub};
use udapl::object::{ia, AsyncRequest, Ia, OpenParams};
use udapl::registry::{Opener, ProviderKey};
use udapl::transport::DeviceConfig;

use crate::boundary::{bad_handle, code, entry, guard, invalid_handle, opt_out, out};
use crate::types::*;
use crate::{provider_table, registry_glue};

const RO_AWARE_PREFIX: &[u8] = b"RO_AWARE_";

/// The bytes of a NUL-terminated name shorter than 256 bytes.
fn name_bytes<'a>(name: DAT_NAME_PTR) -> Option<&'a [u8]> {
    if name.is_null() {
        return None;
    }
    // Scan at most 256 bytes: never read past a too-long unterminated name.
    let mut len = 0usize;
    while len < DAT_NAME_MAX_LENGTH {
        // SAFETY: the caller passes a NUL-terminated string; we stop at the
        // NUL or at 256 bytes, whichever comes first.
        if unsafe { *name.add(len) } == 0 {
            break;
        }
        len += 1;
    }
    if len >= DAT_NAME_MAX_LENGTH {
        return None;
    }
    // SAFETY: `len` bytes before the NUL were just read.
    Some(unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) })
}

fn agent_invoker(agent: udapl::object::Agent, evd: udapl::handle::Handle) {
    crate::api::cno::invoke_agent(agent, evd)
}

/// Opens one of our IAs and writes the OUT parameters.
///
/// # Safety
/// `async_evd` and `ia_out` follow the `dat_ia_openv` contract.
unsafe fn open_builtin(
    name: &[u8],
    ro_aware: bool,
    qlen: DAT_COUNT,
    async_evd: *mut DAT_EVD_HANDLE,
    ia_out: *mut DAT_IA_HANDLE,
    key: &ProviderKey,
    device: DeviceConfig,
) -> DAT_RETURN {
    let r = crate::boundary::run(|| {
        let async_slot = out(async_evd, 3)?;
        let ia_slot = out(ia_out, 4)?;
        let requested = *async_slot as usize;
        let request = match requested {
            0 => AsyncRequest::Create(qlen),
            1 => AsyncRequest::Exists,
            h if bad_handle(h) || !udapl::handle::is_ours(h) => {
                return Err(DatError::handle(Sub::HandleEvdAsync))
            }
            h => AsyncRequest::Existing(udapl::handle::Handle::from_addr(h)),
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let params = OpenParams {
            provider_word: provider_table::for_name(&name),
            name,
            ro_aware,
            dapl_major: key.major,
            dapl_minor: key.minor,
            thread_safe: key.thread_safe,
            device,
            async_evd: request,
        };
        let created = matches!(params.async_evd, AsyncRequest::Create(_));
        let ia = Ia::open(params, Some(agent_invoker))?;
        if created {
            if let Some(h) = ia.async_evd_handle()? {
                *async_slot = h.addr() as DAT_EVD_HANDLE;
            }
        }
        *ia_slot = ia.handle.addr() as DAT_IA_HANDLE;
        Ok(())
    });
    if r.is_err() && !ia_out.is_null() {
        // SAFETY: checked non-NULL; the reference clears it once the provider is reached.
        unsafe { *ia_out = std::ptr::null_mut() };
    }
    code(r)
}

/// The `ia_open_func` slot of our provider tables (the 5-argument illumos
/// form). Opens a built-in IA of that name on the default device.
///
/// # Safety
/// Same contract as `dat_ia_openv`.
pub unsafe extern "C" fn builtin_ia_open(
    name: DAT_NAME_PTR,
    qlen: DAT_COUNT,
    async_evd: *mut DAT_EVD_HANDLE,
    ia_out: *mut DAT_IA_HANDLE,
    ro_aware: DAT_BOOLEAN,
) -> DAT_RETURN {
    guard(|| {
        let Some(n) = name_bytes(name) else {
            return DatError::arg(1).code();
        };
        let key = ProviderKey {
            name: n.to_vec(),
            major: 1,
            minor: 2,
            thread_safe: false,
        };
        // SAFETY: forwarded from our caller.
        unsafe {
            open_builtin(
                n,
                ro_aware != 0,
                qlen,
                async_evd,
                ia_out,
                &key,
                DeviceConfig::default(),
            )
        }
    })
}

/// Opens an instance of the named Interface Adapter.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `async_evd_handle` and
/// `ia_handle` are NULL or point at writable handles.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_PARAMETER` (ARG1 name, ARG2 qlen, ARG3 async
/// pointer), `DAT_INVALID_HANDLE` (IA: NULL `ia_handle`; EVD_ASYNC: bad
/// async EVD), `DAT_PROVIDER_NOT_FOUND`, `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_ia_openv(
    name: DAT_NAME_PTR,
    async_evd_qlen: DAT_COUNT,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_handle: *mut DAT_IA_HANDLE,
    dapl_major: DAT_UINT32,
    dapl_minor: DAT_UINT32,
    thread_safety: DAT_BOOLEAN,
) -> DAT_RETURN {
    guard(|| {
        let Some(full) = name_bytes(name) else {
            return DatError::arg(1).code();
        };
        if ia_handle.is_null() {
            return invalid_handle(Sub::HandleIa);
        }
        let reg = registry_glue::registry();
        let (stripped, ro_aware) = match full.strip_prefix(RO_AWARE_PREFIX) {
            Some(rest) => (rest, true),
            None => (full, false),
        };
        let want = ProviderKey {
            name: stripped.to_vec(),
            major: dapl_major,
            minor: dapl_minor,
            thread_safe: thread_safety != 0,
        };
        let (ticket, opener) = match reg.begin_open(&want) {
            Ok(x) => x,
            Err(e) => return e.code(),
        };
        let rc = match opener {
            // SAFETY: pointers forwarded under the dat_ia_openv contract.
            Opener::Builtin(device) => unsafe {
                open_builtin(
                    stripped,
                    ro_aware,
                    async_evd_qlen,
                    async_evd_handle,
                    ia_handle,
                    &want,
                    device,
                )
            },
            Opener::External { open_fn, .. } => {
                // SAFETY: `open_fn` is the `ia_open_func` a provider registered;
                // the stripped name points into the caller's NUL-terminated string.
                let f: unsafe extern "C" fn(
                    DAT_NAME_PTR,
                    DAT_COUNT,
                    *mut DAT_EVD_HANDLE,
                    *mut DAT_IA_HANDLE,
                    DAT_BOOLEAN,
                ) -> DAT_RETURN = unsafe { std::mem::transmute::<usize, _>(open_fn) };
                let stripped_ptr = name.wrapping_add(full.len() - stripped.len());
                // SAFETY: see above.
                unsafe {
                    f(
                        stripped_ptr,
                        async_evd_qlen,
                        async_evd_handle,
                        ia_handle,
                        u32::from(ro_aware),
                    )
                }
            }
        };
        if rc == DAT_SUCCESS {
            // SAFETY: checked non-NULL above; the provider wrote it.
            let ia = unsafe { *ia_handle } as usize;
            registry_glue::remember(ia, ticket);
        } else {
            reg.release(&ticket);
        }
        rc
    })
}

/// Closes an IA, gracefully (only if no consumer object is left) or abruptly
/// (destroying everything under it).
///
/// # Safety
/// `ia_handle` is any value; it is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER` (ARG2
/// flags), `DAT_INVALID_STATE` (IA_IN_USE on a graceful close).
#[no_mangle]
pub unsafe extern "C" fn dat_ia_close(
    ia_handle: DAT_IA_HANDLE,
    ia_flags: DAT_CLOSE_FLAGS,
) -> DAT_RETURN {
    guard(|| {
        let h = ia_handle as usize;
        if bad_handle(h) {
            return invalid_handle(Sub::HandleIa);
        }
        if !udapl::handle::is_ours(h) {
            let rc = match crate::foreign::provider(h) {
                // SAFETY: a registered provider's close slot.
                Some(p) => match p.ia_close_func {
                    Some(f) => unsafe { f(ia_handle, ia_flags) },
                    None => invalid_handle(Sub::HandleIa),
                },
                None => invalid_handle(Sub::HandleIa),
            };
            if rc == DAT_SUCCESS {
                registry_glue::forget(h);
            }
            return rc;
        }
        let r = crate::boundary::run(|| {
            let ia = ia::lookup(h)?;
            let graceful = match ia_flags {
                DAT_CLOSE_ABRUPT_FLAG => false,
                DAT_CLOSE_GRACEFUL_FLAG => true,
                _ => return Err(DatError::arg(2)),
            };
            ia.close(graceful)
        });
        if r.is_ok() {
            registry_glue::forget(h);
        }
        code(r)
    })
}

fn copy_name(dst: &mut [libc::c_char; DAT_NAME_MAX_LENGTH], src: &str) {
    dst.fill(0);
    for (d, s) in dst
        .iter_mut()
        .zip(src.bytes().take(DAT_NAME_MAX_LENGTH - 1))
    {
        *d = s as libc::c_char;
    }
}

/// The provider name reported in `DAT_PROVIDER_ATTR`.
pub(crate) const PROVIDER_NAME: &str = "udapl-rs";

fn fill_ia_attr(ia: &Ia, a: &mut DAT_IA_ATTR) {
    let l = ia.limits;
    copy_name(&mut a.adapter_name, &ia.name);
    copy_name(&mut a.vendor_name, "udapl-rs software RDMA");
    a.hardware_version_major = 1;
    a.hardware_version_minor = 0;
    a.firmware_version_major = 1;
    a.firmware_version_minor = 0;
    a.ia_address_ptr = ia.sockaddr.bytes.as_ptr() as DAT_IA_ADDRESS_PTR;
    a.max_eps = l.max_eps;
    a.max_dto_per_ep = l.max_dto_per_ep;
    a.max_rdma_read_per_ep_in = l.max_rdma_read_per_ep_in;
    a.max_rdma_read_per_ep_out = l.max_rdma_read_per_ep_out;
    a.max_evds = l.max_evds;
    a.max_evd_qlen = l.max_evd_qlen;
    a.max_iov_segments_per_dto = l.max_iov_segments_per_dto;
    a.max_lmrs = l.max_lmrs;
    a.max_lmr_block_size = l.max_lmr_block_size;
    a.max_lmr_virtual_address = l.max_lmr_virtual_address;
    a.max_pzs = l.max_pzs;
    a.max_message_size = l.max_message_size;
    a.max_rdma_size = l.max_rdma_size;
    a.max_rmrs = l.max_rmrs;
    a.max_rmr_target_address = l.max_rmr_target_address;
    a.max_srqs = l.max_srqs;
    a.max_ep_per_srq = l.max_ep_per_srq;
    a.max_recv_per_srq = l.max_recv_per_srq;
    a.max_iov_segments_per_rdma_read = l.max_iov_segments_per_rdma_read;
    a.max_iov_segments_per_rdma_write = l.max_iov_segments_per_rdma_write;
    a.max_rdma_read_in = l.max_rdma_read_in;
    a.max_rdma_read_out = l.max_rdma_read_out;
    a.max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
    a.max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
    a.num_transport_attr = 0;
    a.transport_attr = std::ptr::null_mut();
    a.num_vendor_attr = 0;
    a.vendor_attr = std::ptr::null_mut();
}

fn fill_provider_attr(ia: &Ia, p: &mut DAT_PROVIDER_ATTR) {
    copy_name(&mut p.provider_name, PROVIDER_NAME);
    p.provider_version_major = 1;
    p.provider_version_minor = 0;
    p.dapl_version_major = ia.dapl_major;
    p.dapl_version_minor = ia.dapl_minor;
    // The three memory types (0, 1, 2) are all supported; the field is not
    // a usable bitmask, so it reports the highest one.
    p.lmr_mem_types_supported = DAT_MEM_TYPE_SHARED_VIRTUAL;
    p.iov_ownership_on_return = DAT_IOV_CONSUMER;
    p.dat_qos_supported = DAT_QOS_BEST_EFFORT;
    p.completion_flags_supported = DAT_COMPLETION_SUPPRESS_FLAG
        | DAT_COMPLETION_SOLICITED_WAIT_FLAG
        | DAT_COMPLETION_UNSIGNALLED_FLAG
        | DAT_COMPLETION_BARRIER_FENCE_FLAG
        | DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    p.is_thread_safe = u32::from(ia.thread_safe);
    p.max_private_data_size = 256;
    p.supports_multipath = DAT_FALSE;
    p.ep_creator = DAT_PSP_CREATES_EP_NEVER;
    p.pz_support = DAT_PZ_UNIQUE;
    p.optimal_buffer_alignment = 64;
    for row in p.evd_stream_merging_supported.iter_mut() {
        row.fill(DAT_TRUE);
    }
    p.srq_supported = DAT_FALSE;
    p.srq_watermarks_supported = 0;
    p.srq_ep_pz_difference_supported = DAT_FALSE;
    p.srq_info_supported = 0;
    p.ep_recv_info_supported = 0;
    p.lmr_sync_req = DAT_FALSE;
    p.dto_async_return_guaranteed = DAT_FALSE;
    p.rdma_write_for_rdma_read_req = DAT_FALSE;
    p.num_provider_specific_attr = 0;
    p.provider_specific_attr = std::ptr::null_mut();
}

/// Returns the async EVD, the IA attributes and the provider attributes.
///
/// # Safety
/// OUT pointers are NULL (allowed when their mask is 0; the async pointer is
/// always optional) or point at writable structs.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER` (ARG3 /
/// ARG5 unknown mask bits, ARG4 / ARG6 NULL struct with a non-zero mask).
#[no_mangle]
pub unsafe extern "C" fn dat_ia_query(
    ia_handle: DAT_IA_HANDLE,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_attr_mask: DAT_IA_ATTR_MASK,
    ia_attributes: *mut DAT_IA_ATTR,
    provider_attr_mask: DAT_PROVIDER_ATTR_MASK,
    provider_attributes: *mut DAT_PROVIDER_ATTR,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        ia_query_func(
            ia_handle,
            async_evd_handle,
            ia_attr_mask,
            ia_attributes,
            provider_attr_mask,
            provider_attributes
        ),
        {
            let ia = ia::lookup(ia_handle as usize)?;
            if ia_attr_mask & !DAT_IA_FIELD_ALL != 0 {
                return Err(DatError::arg(3));
            }
            if provider_attr_mask & !DAT_PROVIDER_FIELD_ALL != 0 {
                return Err(DatError::arg(5));
            }
            let ia_out = if ia_attr_mask != 0 {
                Some(out(ia_attributes, 4)?)
            } else {
                None
            };
            let prov_out = if provider_attr_mask != 0 {
                Some(out(provider_attributes, 6)?)
            } else {
                None
            };
            let async_out = opt_out(async_evd_handle, 2)?;
            let async_h = ia.async_evd_handle()?;
            if let Some(a) = ia_out {
                fill_ia_attr(&ia, a);
            }
            if let Some(p) = prov_out {
                fill_provider_attr(&ia, p);
            }
            if let Some(slot) = async_out {
                *slot = match async_h {
                    Some(h) => h.addr() as DAT_EVD_HANDLE,
                    None => DAT_EVD_OUT_OF_SCOPE,
                };
            }
            Ok(())
        }
    )
}
