//! The 72 `dat_*` entry points, looked up by name in a libdat.so.1 loaded
//! at run time (this library's or any other): the tools are ordinary uDAPL
//! consumers and call nothing else. Generated from `ffi/src/api/*.rs`
//! signatures (names and parameter types exactly as the C header has them).
#![allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity)]

use core::ffi::c_char;

use dat_abi::*;

/// Why the library could not be used.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

macro_rules! dat_api {
    ($($name:ident: fn($($p:ident: $t:ty),*) -> $r:ty;)*) => {
        /// A loaded libdat and its entry points.
        pub struct Dat {
            /// Where it was loaded from (as given to the loader).
            pub path: String,
            _lib: libloading::Library,
            $(pub $name: unsafe extern "C" fn($($p: $t),*) -> $r,)*
        }

        impl Dat {
            /// Loads `path` (a file name searched the usual way, or a path)
            /// and resolves every entry point.
            pub fn load(path: &str) -> Result<Dat, LoadError> {
                // SAFETY: loading a shared library runs its initialisers;
                // libdat's are those of a Rust cdylib (none with effects).
                let lib = unsafe { libloading::Library::new(path) }
                    .map_err(|e| LoadError(format!("cannot load {path}: {e}")))?;
                $(
                    // SAFETY: the symbol is a DAT 1.2 entry point with this
                    // exact C signature (udat.h).
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($t),*) -> $r>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )
                        .map_err(|e| LoadError(format!("{path}: {e}")))?
                    };
                )*
                Ok(Dat { path: path.to_string(), _lib: lib, $($name,)* })
            }
        }
    };
}

dat_api! {
    dat_cno_create: fn(ia_handle: DAT_IA_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT, cno_handle: *mut DAT_CNO_HANDLE) -> DAT_RETURN;
    dat_cno_free: fn(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN;
    dat_cno_modify_agent: fn(cno_handle: DAT_CNO_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT) -> DAT_RETURN;
    dat_cno_query: fn(cno_handle: DAT_CNO_HANDLE, cno_param_mask: DAT_CNO_PARAM_MASK, cno_param: *mut DAT_CNO_PARAM) -> DAT_RETURN;
    dat_cno_wait: fn(cno_handle: DAT_CNO_HANDLE, timeout: DAT_TIMEOUT, evd_handle: *mut DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_cr_accept: fn(cr_handle: DAT_CR_HANDLE, ep_handle: DAT_EP_HANDLE, private_data_size: DAT_COUNT, private_data: DAT_PVOID) -> DAT_RETURN;
    dat_cr_handoff: fn(cr_handle: DAT_CR_HANDLE, handoff: DAT_CONN_QUAL) -> DAT_RETURN;
    dat_cr_query: fn(cr_handle: DAT_CR_HANDLE, cr_param_mask: DAT_CR_PARAM_MASK, cr_param: *mut DAT_CR_PARAM) -> DAT_RETURN;
    dat_cr_reject: fn(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN;
    dat_ep_connect: fn(ep_handle: DAT_EP_HANDLE, remote_ia_address: DAT_IA_ADDRESS_PTR, remote_conn_qual: DAT_CONN_QUAL, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, qos: DAT_QOS, connect_flags: DAT_CONNECT_FLAGS) -> DAT_RETURN;
    dat_ep_create: fn(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, recv_evd_handle: DAT_EVD_HANDLE, request_evd_handle: DAT_EVD_HANDLE, connect_evd_handle: DAT_EVD_HANDLE, ep_attributes: *const DAT_EP_ATTR, ep_handle: *mut DAT_EP_HANDLE) -> DAT_RETURN;
    dat_ep_create_with_srq: fn(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, recv_evd_handle: DAT_EVD_HANDLE, request_evd_handle: DAT_EVD_HANDLE, connect_evd_handle: DAT_EVD_HANDLE, srq_handle: DAT_SRQ_HANDLE, ep_attributes: *const DAT_EP_ATTR, ep_handle: *mut DAT_EP_HANDLE) -> DAT_RETURN;
    dat_ep_disconnect: fn(ep_handle: DAT_EP_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN;
    dat_ep_dup_connect: fn(ep_handle: DAT_EP_HANDLE, ep_dup_handle: DAT_EP_HANDLE, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, qos: DAT_QOS) -> DAT_RETURN;
    dat_ep_free: fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN;
    dat_ep_get_status: fn(ep_handle: DAT_EP_HANDLE, ep_state: *mut DAT_EP_STATE, recv_idle: *mut DAT_BOOLEAN, request_idle: *mut DAT_BOOLEAN) -> DAT_RETURN;
    dat_ep_modify: fn(ep_handle: DAT_EP_HANDLE, ep_param_mask: DAT_EP_PARAM_MASK, ep_param: *const DAT_EP_PARAM) -> DAT_RETURN;
    dat_ep_post_rdma_read: fn(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, remote_iov: *const DAT_RMR_TRIPLET, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    dat_ep_post_rdma_write: fn(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, remote_iov: *const DAT_RMR_TRIPLET, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    dat_ep_post_recv: fn(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    dat_ep_post_send: fn(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    dat_ep_query: fn(ep_handle: DAT_EP_HANDLE, ep_param_mask: DAT_EP_PARAM_MASK, ep_param: *mut DAT_EP_PARAM) -> DAT_RETURN;
    dat_ep_recv_query: fn(ep_handle: DAT_EP_HANDLE, nbufs_allocated: *mut DAT_COUNT, bufs_alloc_span: *mut DAT_COUNT) -> DAT_RETURN;
    dat_ep_reset: fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN;
    dat_ep_set_watermark: fn(ep_handle: DAT_EP_HANDLE, soft_high_watermark: DAT_COUNT, hard_high_watermark: DAT_COUNT) -> DAT_RETURN;
    dat_evd_clear_unwaitable: fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_create: fn(ia_handle: DAT_IA_HANDLE, evd_min_qlen: DAT_COUNT, cno_handle: DAT_CNO_HANDLE, evd_flags: DAT_EVD_FLAGS, evd_handle: *mut DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_dequeue: fn(evd_handle: DAT_EVD_HANDLE, event: *mut DAT_EVENT) -> DAT_RETURN;
    dat_evd_disable: fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_enable: fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_free: fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_modify_cno: fn(evd_handle: DAT_EVD_HANDLE, cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN;
    dat_evd_post_se: fn(evd_handle: DAT_EVD_HANDLE, event: *const DAT_EVENT) -> DAT_RETURN;
    dat_evd_query: fn(evd_handle: DAT_EVD_HANDLE, evd_param_mask: DAT_EVD_PARAM_MASK, evd_param: *mut DAT_EVD_PARAM) -> DAT_RETURN;
    dat_evd_resize: fn(evd_handle: DAT_EVD_HANDLE, evd_min_qlen: DAT_COUNT) -> DAT_RETURN;
    dat_evd_set_unwaitable: fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    dat_evd_wait: fn(evd_handle: DAT_EVD_HANDLE, timeout: DAT_TIMEOUT, threshold: DAT_COUNT, event: *mut DAT_EVENT, nmore: *mut DAT_COUNT) -> DAT_RETURN;
    dat_get_consumer_context: fn(dat_handle: DAT_HANDLE, context: *mut DAT_CONTEXT) -> DAT_RETURN;
    dat_get_handle_type: fn(dat_handle: DAT_HANDLE, handle_type: *mut DAT_HANDLE_TYPE) -> DAT_RETURN;
    dat_ia_close: fn(ia_handle: DAT_IA_HANDLE, ia_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN;
    dat_ia_openv: fn(name: DAT_NAME_PTR, async_evd_qlen: DAT_COUNT, async_evd_handle: *mut DAT_EVD_HANDLE, ia_handle: *mut DAT_IA_HANDLE, dapl_major: DAT_UINT32, dapl_minor: DAT_UINT32, thread_safety: DAT_BOOLEAN) -> DAT_RETURN;
    dat_ia_query: fn(ia_handle: DAT_IA_HANDLE, async_evd_handle: *mut DAT_EVD_HANDLE, ia_attr_mask: DAT_IA_ATTR_MASK, ia_attributes: *mut DAT_IA_ATTR, provider_attr_mask: DAT_PROVIDER_ATTR_MASK, provider_attributes: *mut DAT_PROVIDER_ATTR) -> DAT_RETURN;
    dat_lmr_create: fn(ia_handle: DAT_IA_HANDLE, mem_type: DAT_MEM_TYPE, region_description: DAT_REGION_DESCRIPTION, length: DAT_VLEN, pz_handle: DAT_PZ_HANDLE, privileges: DAT_MEM_PRIV_FLAGS, lmr_handle: *mut DAT_LMR_HANDLE, lmr_context: *mut DAT_LMR_CONTEXT, rmr_context: *mut DAT_RMR_CONTEXT, registered_length: *mut DAT_VLEN, registered_address: *mut DAT_VADDR) -> DAT_RETURN;
    dat_lmr_free: fn(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN;
    dat_lmr_query: fn(lmr_handle: DAT_LMR_HANDLE, lmr_param_mask: DAT_LMR_PARAM_MASK, lmr_param: *mut DAT_LMR_PARAM) -> DAT_RETURN;
    dat_lmr_sync_rdma_read: fn(ia_handle: DAT_IA_HANDLE, local_segments: *const DAT_LMR_TRIPLET, num_segments: DAT_VLEN) -> DAT_RETURN;
    dat_lmr_sync_rdma_write: fn(ia_handle: DAT_IA_HANDLE, local_segments: *const DAT_LMR_TRIPLET, num_segments: DAT_VLEN) -> DAT_RETURN;
    dat_psp_create: fn(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE) -> DAT_RETURN;
    dat_psp_create_any: fn(ia_handle: DAT_IA_HANDLE, conn_qual: *mut DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE) -> DAT_RETURN;
    dat_psp_free: fn(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN;
    dat_psp_query: fn(psp_handle: DAT_PSP_HANDLE, psp_param_mask: DAT_PSP_PARAM_MASK, psp_param: *mut DAT_PSP_PARAM) -> DAT_RETURN;
    dat_pz_create: fn(ia_handle: DAT_IA_HANDLE, pz_handle: *mut DAT_PZ_HANDLE) -> DAT_RETURN;
    dat_pz_free: fn(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN;
    dat_pz_query: fn(pz_handle: DAT_PZ_HANDLE, pz_param_mask: DAT_PZ_PARAM_MASK, pz_param: *mut DAT_PZ_PARAM) -> DAT_RETURN;
    dat_registry_add_provider: fn(provider: *mut DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO) -> DAT_RETURN;
    dat_registry_list_providers: fn(max_to_return: DAT_COUNT, entries_returned: *mut DAT_COUNT, dat_provider_list: *mut *mut DAT_PROVIDER_INFO) -> DAT_RETURN;
    dat_registry_remove_provider: fn(provider: *mut DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO) -> DAT_RETURN;
    dat_rmr_bind: fn(rmr_handle: DAT_RMR_HANDLE, lmr_triplet: *const DAT_LMR_TRIPLET, mem_priv: DAT_MEM_PRIV_FLAGS, ep_handle: DAT_EP_HANDLE, user_cookie: DAT_RMR_COOKIE, completion_flags: DAT_COMPLETION_FLAGS, rmr_context: *mut DAT_RMR_CONTEXT) -> DAT_RETURN;
    dat_rmr_create: fn(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE) -> DAT_RETURN;
    dat_rmr_free: fn(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN;
    dat_rmr_query: fn(rmr_handle: DAT_RMR_HANDLE, rmr_param_mask: DAT_RMR_PARAM_MASK, rmr_param: *mut DAT_RMR_PARAM) -> DAT_RETURN;
    dat_rsp_create: fn(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, ep_handle: DAT_EP_HANDLE, evd_handle: DAT_EVD_HANDLE, rsp_handle: *mut DAT_RSP_HANDLE) -> DAT_RETURN;
    dat_rsp_free: fn(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN;
    dat_rsp_query: fn(rsp_handle: DAT_RSP_HANDLE, rsp_param_mask: DAT_RSP_PARAM_MASK, rsp_param: *mut DAT_RSP_PARAM) -> DAT_RETURN;
    dat_set_consumer_context: fn(dat_handle: DAT_HANDLE, context: DAT_CONTEXT) -> DAT_RETURN;
    dat_srq_create: fn(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, srq_attr: *mut DAT_SRQ_ATTR, srq_handle: *mut DAT_SRQ_HANDLE) -> DAT_RETURN;
    dat_srq_free: fn(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN;
    dat_srq_post_recv: fn(srq_handle: DAT_SRQ_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE) -> DAT_RETURN;
    dat_srq_query: fn(srq_handle: DAT_SRQ_HANDLE, srq_param_mask: DAT_SRQ_PARAM_MASK, srq_param: *mut DAT_SRQ_PARAM) -> DAT_RETURN;
    dat_srq_resize: fn(srq_handle: DAT_SRQ_HANDLE, srq_max_recv_dto: DAT_COUNT) -> DAT_RETURN;
    dat_srq_set_lw: fn(srq_handle: DAT_SRQ_HANDLE, low_watermark: DAT_COUNT) -> DAT_RETURN;
    dat_strerror: fn(value: DAT_RETURN, major_message: *mut *const c_char, minor_message: *mut *const c_char) -> DAT_RETURN;
}

impl Dat {
    /// `dat_strerror`'s text for `code`: "major" or "major: minor".
    pub fn strerror(&self, code: DAT_RETURN) -> String {
        let (mut major, mut minor): (*const c_char, *const c_char) =
            (std::ptr::null(), std::ptr::null());
        // SAFETY: both out-parameters point at live locals.
        let r = unsafe { (self.dat_strerror)(code, &mut major, &mut minor) };
        if r != DAT_SUCCESS || major.is_null() {
            return format!("DAT error {code:#010x}");
        }
        let text = |p: *const c_char| {
            // SAFETY: dat_strerror returns NUL-terminated static strings.
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        };
        let major = text(major);
        let minor = if minor.is_null() {
            String::new()
        } else {
            text(minor)
        };
        if minor.is_empty() || minor == major {
            major
        } else {
            format!("{major}: {minor}")
        }
    }
}

/// The library the tools load: `$DAT_LIBRARY` if set, else `libdat.so.1`
/// found the usual way (the tools' run path names the library installed
/// beside them).
pub fn default_library() -> String {
    std::env::var("DAT_LIBRARY")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "libdat.so.1".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built() -> Option<Dat> {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../build/lib/libdat.so.1");
        std::path::Path::new(p)
            .exists()
            .then(|| Dat::load(p).expect("load"))
    }

    #[test]
    fn loads_every_entry_point_and_names_errors() {
        let Some(d) = built() else {
            eprintln!("build/lib/libdat.so.1 not built (make lib): skipped");
            return;
        };
        assert_eq!(d.strerror(DAT_SUCCESS), "DAT_SUCCESS");
        assert!(d
            .strerror(DAT_INVALID_HANDLE)
            .starts_with("DAT_INVALID_HANDLE"));
    }

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let e = Dat::load("/nonexistent/libdat.so.1").err().expect("error");
        assert!(e.0.contains("/nonexistent/libdat.so.1"), "{e}");
    }
}
