//! `dat_ia_openv`, `dat_ia_close`, `dat_ia_query`.

use udapl::error::{DatError, Input, Sub};
use udapl::object::{ia, AsyncRequest, Evd, Ia, OpenParams};
use udapl::registry::{Opener, ProviderKey};
use udapl::transport::DeviceConfig;

use super::{cno::*, cr::*, ep::*, evd::*, mem::*, misc::*, sp::*, srq::*};
use crate::boundary::{
    bad_handle, c_name, code, error_code, guard, invalid_handle, opt_out, out, put, Out,
};
use crate::entry::entry;
use crate::handles::{address, core_handle, from_handle, to_handle};
use crate::{provider_table, registry_glue};
use dat_abi::*;

const RO_AWARE_PREFIX: &[u8] = b"RO_AWARE_";

/// A copy of a NUL-terminated name shorter than 256 bytes.
fn name_bytes(name: DAT_NAME_PTR) -> Option<Vec<u8>> {
    if name.is_null() {
        return None;
    }
    // Scan at most 256 bytes: never read past a too-long unterminated name.
    let mut bytes = Vec::new();
    while bytes.len() < DAT_NAME_MAX_LENGTH {
        // SAFETY: the caller passes a NUL-terminated string; we stop at the
        // NUL or at 256 bytes, whichever comes first, copying byte by byte.
        let c = unsafe { name.add(bytes.len()).read() };
        if c == 0 {
            return Some(bytes);
        }
        bytes.push(c as u8);
    }
    None
}

fn agent_invoker(agent: udapl::object::Agent, evd: udapl::handle::Handle) {
    invoke_agent(agent, evd)
}

/// Our `DAT_PROVIDER` slots: every one is an exported entry point, and
/// opening goes through `builtin_ia_open`. [`provider_table::for_name`]
/// adds the IA name.
const ENTRY_POINTS: DAT_PROVIDER = DAT_PROVIDER {
    device_name: std::ptr::null(),
    extension: std::ptr::null_mut(),
    ia_open_func: Some(builtin_ia_open),
    ia_query_func: Some(dat_ia_query),
    ia_close_func: Some(dat_ia_close),
    set_consumer_context_func: Some(dat_set_consumer_context),
    get_consumer_context_func: Some(dat_get_consumer_context),
    get_handle_type_func: Some(dat_get_handle_type),
    cno_create_func: Some(dat_cno_create),
    cno_modify_agent_func: Some(dat_cno_modify_agent),
    cno_query_func: Some(dat_cno_query),
    cno_free_func: Some(dat_cno_free),
    cno_wait_func: Some(dat_cno_wait),
    cr_query_func: Some(dat_cr_query),
    cr_accept_func: Some(dat_cr_accept),
    cr_reject_func: Some(dat_cr_reject),
    cr_handoff_func: Some(dat_cr_handoff),
    evd_create_func: Some(dat_evd_create),
    evd_query_func: Some(dat_evd_query),
    evd_modify_cno_func: Some(dat_evd_modify_cno),
    evd_enable_func: Some(dat_evd_enable),
    evd_disable_func: Some(dat_evd_disable),
    evd_wait_func: Some(dat_evd_wait),
    evd_resize_func: Some(dat_evd_resize),
    evd_post_se_func: Some(dat_evd_post_se),
    evd_dequeue_func: Some(dat_evd_dequeue),
    evd_free_func: Some(dat_evd_free),
    ep_create_func: Some(dat_ep_create),
    ep_query_func: Some(dat_ep_query),
    ep_modify_func: Some(dat_ep_modify),
    ep_connect_func: Some(dat_ep_connect),
    ep_dup_connect_func: Some(dat_ep_dup_connect),
    ep_disconnect_func: Some(dat_ep_disconnect),
    ep_post_send_func: Some(dat_ep_post_send),
    ep_post_recv_func: Some(dat_ep_post_recv),
    ep_post_rdma_read_func: Some(dat_ep_post_rdma_read),
    ep_post_rdma_write_func: Some(dat_ep_post_rdma_write),
    ep_get_status_func: Some(dat_ep_get_status),
    ep_free_func: Some(dat_ep_free),
    lmr_create_func: Some(dat_lmr_create),
    lmr_query_func: Some(dat_lmr_query),
    lmr_free_func: Some(dat_lmr_free),
    rmr_create_func: Some(dat_rmr_create),
    rmr_query_func: Some(dat_rmr_query),
    rmr_bind_func: Some(dat_rmr_bind),
    rmr_free_func: Some(dat_rmr_free),
    psp_create_func: Some(dat_psp_create),
    psp_query_func: Some(dat_psp_query),
    psp_free_func: Some(dat_psp_free),
    rsp_create_func: Some(dat_rsp_create),
    rsp_query_func: Some(dat_rsp_query),
    rsp_free_func: Some(dat_rsp_free),
    pz_create_func: Some(dat_pz_create),
    pz_query_func: Some(dat_pz_query),
    pz_free_func: Some(dat_pz_free),
    psp_create_any_func: Some(dat_psp_create_any),
    ep_reset_func: Some(dat_ep_reset),
    evd_set_unwaitable_func: Some(dat_evd_set_unwaitable),
    evd_clear_unwaitable_func: Some(dat_evd_clear_unwaitable),
    lmr_sync_rdma_read_func: Some(dat_lmr_sync_rdma_read),
    lmr_sync_rdma_write_func: Some(dat_lmr_sync_rdma_write),
    ep_create_with_srq_func: Some(dat_ep_create_with_srq),
    ep_recv_query_func: Some(dat_ep_recv_query),
    ep_set_watermark_func: Some(dat_ep_set_watermark),
    srq_create_func: Some(dat_srq_create),
    srq_free_func: Some(dat_srq_free),
    srq_post_recv_func: Some(dat_srq_post_recv),
    srq_query_func: Some(dat_srq_query),
    srq_resize_func: Some(dat_srq_resize),
    srq_set_lw_func: Some(dat_srq_set_lw),
};

/// The parameters of `dat_ia_openv`; the 5-argument `ia_open_func` of a
/// provider table has the same first four.
const IA_OPEN_PARAMS: [&str; 7] = [
    "name",
    "async_evd_qlen",
    "async_evd_handle",
    "ia_handle",
    "dapl_major",
    "dapl_minor",
    "thread_safety",
];

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
        let async_slot = out(async_evd, Input::AsyncEvdHandle)?;
        let ia_slot = out(ia_out, Input::IaHandle)?;
        // SAFETY: checked non-NULL and aligned; an IN/OUT handle read by value.
        let requested = unsafe { async_slot.as_ptr().read() };
        let request = match address(requested) {
            0 => AsyncRequest::Create(qlen),
            1 => AsyncRequest::Exists,
            h if bad_handle(h) || !udapl::handle::is_ours(h) => {
                return Err(DatError::handle(Sub::HandleEvdAsync))
            }
            _ => AsyncRequest::Existing(core_handle(requested)),
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let params = OpenParams {
            provider_word: provider_table::for_name(&name, &ENTRY_POINTS),
            name,
            ro_aware,
            dapl_major: key.major,
            dapl_minor: key.minor,
            thread_safe: key.thread_safe,
            device,
            async_evd: request,
        };
        let created = matches!(params.async_evd, AsyncRequest::Create(_));
        let ia = Ia::open::<Evd>(params, Some(agent_invoker))?;
        if created {
            if let Some(h) = ia.async_evd_handle() {
                async_slot.set(to_handle(h));
            }
        }
        ia_slot.set(to_handle(ia.handle));
        Ok(())
    });
    if r.is_err() && !ia_out.is_null() {
        // SAFETY: checked non-NULL; the reference clears it once the provider is reached.
        unsafe { ia_out.write(std::ptr::null_mut()) };
    }
    code(r, &IA_OPEN_PARAMS)
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
            return error_code(DatError::invalid(Input::Name), &IA_OPEN_PARAMS);
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
                &n,
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
            return error_code(DatError::invalid(Input::Name), &IA_OPEN_PARAMS);
        };
        if ia_handle.is_null() {
            return invalid_handle(Sub::HandleIa);
        }
        let reg = registry_glue::registry();
        let (stripped, ro_aware) = match full.as_slice().strip_prefix(RO_AWARE_PREFIX) {
            Some(rest) => (rest, true),
            None => (full.as_slice(), false),
        };
        let want = ProviderKey {
            name: stripped.to_vec(),
            major: dapl_major,
            minor: dapl_minor,
            thread_safe: thread_safety != 0,
        };
        let (ticket, opener) = match reg.begin_open(&want) {
            Ok(x) => x,
            Err(e) => return error_code(e, &IA_OPEN_PARAMS),
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
            let ia = address(unsafe { ia_handle.read() });
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
        let h = address(ia_handle);
        if bad_handle(h) {
            return invalid_handle(Sub::HandleIa);
        }
        if !udapl::handle::is_ours(h) {
            let registry = registry_glue::existing();
            let rc = match registry.and_then(|reg| crate::foreign::provider(reg, h)) {
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
                _ => return Err(DatError::invalid(Input::IaFlags)),
            };
            ia.close(graceful)
        });
        if r.is_ok() {
            // (What the IA held of its device went with the IA's lookup
            // above: the last reader of a retired object releases it.)
            registry_glue::forget(h);
        }
        code(r, &["ia_handle", "ia_flags"])
    })
}

fn c_bool(b: bool) -> DAT_BOOLEAN {
    if b {
        DAT_TRUE
    } else {
        DAT_FALSE
    }
}

/// Converts the core's IA attributes (`fields` of `a` are written in place).
fn fill_ia_attr(ia: &Ia, a: &Out<DAT_IA_ATTR>) {
    let v = &ia.attributes;
    let l = &v.limits;
    put!(a, adapter_name = c_name(ia.name.as_bytes()));
    put!(a, vendor_name = c_name(v.vendor_name.as_bytes()));
    put!(a, hardware_version_major = v.hardware_version.0);
    put!(a, hardware_version_minor = v.hardware_version.1);
    put!(a, firmware_version_major = v.firmware_version.0);
    put!(a, firmware_version_minor = v.firmware_version.1);
    put!(
        a,
        ia_address_ptr = ia.sockaddr.bytes.as_ptr() as DAT_IA_ADDRESS_PTR
    );
    put!(a, max_eps = l.max_eps);
    put!(a, max_dto_per_ep = l.max_dto_per_ep);
    put!(a, max_rdma_read_per_ep_in = l.max_rdma_read_per_ep_in);
    put!(a, max_rdma_read_per_ep_out = l.max_rdma_read_per_ep_out);
    put!(a, max_evds = l.max_evds);
    put!(a, max_evd_qlen = l.max_evd_qlen);
    put!(a, max_iov_segments_per_dto = l.max_iov_segments_per_dto);
    put!(a, max_lmrs = l.max_lmrs);
    put!(a, max_lmr_block_size = l.max_lmr_block_size);
    put!(a, max_lmr_virtual_address = l.max_lmr_virtual_address);
    put!(a, max_pzs = l.max_pzs);
    put!(a, max_message_size = l.max_message_size);
    put!(a, max_rdma_size = l.max_rdma_size);
    put!(a, max_rmrs = l.max_rmrs);
    put!(a, max_rmr_target_address = l.max_rmr_target_address);
    put!(a, max_srqs = l.max_srqs);
    put!(a, max_ep_per_srq = l.max_ep_per_srq);
    put!(a, max_recv_per_srq = l.max_recv_per_srq);
    put!(
        a,
        max_iov_segments_per_rdma_read = l.max_iov_segments_per_rdma_read
    );
    put!(
        a,
        max_iov_segments_per_rdma_write = l.max_iov_segments_per_rdma_write
    );
    put!(a, max_rdma_read_in = l.max_rdma_read_in);
    put!(a, max_rdma_read_out = l.max_rdma_read_out);
    put!(
        a,
        max_rdma_read_per_ep_in_guaranteed = c_bool(v.max_rdma_read_per_ep_in_guaranteed)
    );
    put!(
        a,
        max_rdma_read_per_ep_out_guaranteed = c_bool(v.max_rdma_read_per_ep_out_guaranteed)
    );
    put!(a, num_transport_attr = 0);
    put!(a, transport_attr = std::ptr::null_mut());
    put!(a, num_vendor_attr = 0);
    put!(a, vendor_attr = std::ptr::null_mut());
}

/// Converts the core's provider attributes.
fn fill_provider_attr(ia: &Ia, p: &Out<DAT_PROVIDER_ATTR>) {
    let v = &ia.provider_attributes;
    put!(p, provider_name = c_name(v.provider_name.as_bytes()));
    put!(p, provider_version_major = v.provider_version.0);
    put!(p, provider_version_minor = v.provider_version.1);
    put!(p, dapl_version_major = ia.dapl_major);
    put!(p, dapl_version_minor = ia.dapl_minor);
    put!(p, lmr_mem_types_supported = v.lmr_mem_types_supported);
    put!(p, iov_ownership_on_return = v.iov_ownership_on_return);
    put!(p, dat_qos_supported = v.dat_qos_supported);
    put!(p, completion_flags_supported = v.completion_flags_supported);
    put!(p, is_thread_safe = c_bool(ia.thread_safe));
    put!(p, max_private_data_size = v.max_private_data_size);
    put!(p, supports_multipath = c_bool(v.supports_multipath));
    put!(p, ep_creator = v.ep_creator);
    put!(p, pz_support = v.pz_support);
    put!(p, optimal_buffer_alignment = v.optimal_buffer_alignment);
    let merging = c_bool(v.evd_stream_merging_supported);
    put!(p, evd_stream_merging_supported = [[merging; 6]; 6]);
    put!(p, srq_supported = c_bool(v.srq_supported));
    put!(p, srq_watermarks_supported = v.srq_watermarks_supported);
    put!(
        p,
        srq_ep_pz_difference_supported = c_bool(v.srq_ep_pz_difference_supported)
    );
    put!(p, srq_info_supported = v.srq_info_supported);
    put!(p, ep_recv_info_supported = v.ep_recv_info_supported);
    put!(p, lmr_sync_req = c_bool(v.lmr_sync_req));
    put!(
        p,
        dto_async_return_guaranteed = c_bool(v.dto_async_return_guaranteed)
    );
    put!(
        p,
        rdma_write_for_rdma_read_req = c_bool(v.rdma_write_for_rdma_read_req)
    );
    let named = named_attrs(ia);
    put!(p, num_provider_specific_attr = named.count);
    put!(p, provider_specific_attr = named.ptr);
}

/// An IA's `DAT_NAMED_ATTR` array, built on the first query and kept in the
/// IA (its strings are the IA's own), so the pointers stay valid until the
/// IA is closed, as the consumer expects.
struct NamedAttrs {
    list: Box<[DAT_NAMED_ATTR]>,
}

// SAFETY: the array only points at the IA's own immutable C strings, which
// live as long as the IA that holds this array; nothing writes through it.
unsafe impl Send for NamedAttrs {}
// SAFETY: as above: shared read-only data.
unsafe impl Sync for NamedAttrs {}

struct NamedView {
    count: DAT_COUNT,
    ptr: *mut DAT_NAMED_ATTR,
}

fn named_attrs(ia: &Ia) -> NamedView {
    let cached = ia.c_cache.get_or_init(|| {
        let list: Box<[DAT_NAMED_ATTR]> = ia
            .named_attributes
            .iter()
            .map(|(n, v)| DAT_NAMED_ATTR {
                name: n.as_ptr(),
                value: v.as_ptr(),
            })
            .collect();
        Box::new(NamedAttrs { list })
    });
    match cached.downcast_ref::<NamedAttrs>() {
        Some(a) if !a.list.is_empty() => NamedView {
            count: DAT_COUNT::try_from(a.list.len()).unwrap_or(0),
            // The consumer receives a non-const pointer (the 1.2 type);
            // writing through it is outside the contract.
            ptr: a.list.as_ptr().cast_mut(),
        },
        _ => NamedView {
            count: 0,
            ptr: std::ptr::null_mut(),
        },
    }
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
            let ia = from_handle::<Ia>(ia_handle)?;
            if ia_attr_mask & !DAT_IA_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::IaAttrMask));
            }
            if provider_attr_mask & !DAT_PROVIDER_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::ProviderAttrMask));
            }
            let ia_out = if ia_attr_mask != 0 {
                Some(out(ia_attributes, Input::IaAttributes)?)
            } else {
                None
            };
            let prov_out = if provider_attr_mask != 0 {
                Some(out(provider_attributes, Input::ProviderAttributes)?)
            } else {
                None
            };
            let async_out = opt_out(async_evd_handle, Input::AsyncEvdHandle)?;
            let async_h = ia.async_evd_handle();
            if let Some(a) = &ia_out {
                fill_ia_attr(&ia, a);
            }
            if let Some(p) = &prov_out {
                fill_provider_attr(&ia, p);
            }
            if let Some(slot) = async_out {
                slot.set(match async_h {
                    Some(h) => to_handle(h),
                    None => DAT_EVD_OUT_OF_SCOPE,
                });
            }
            Ok(())
        }
    )
}
