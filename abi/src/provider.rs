//! The provider interface: one function-pointer type per entry point and
//! the `DAT_PROVIDER` table a provider library fills in.

use core::ffi::c_char;

use crate::*;

/// Slot 2 of DAT_PROVIDER. Five arguments: the fifth (a Solaris
/// `boolean_t`, 4 bytes) tells the provider the consumer is
/// relaxed-ordering aware. Always pass all five.
pub type DAT_IA_OPEN_FUNC = Option<
    unsafe extern "C" fn(
        name: DAT_NAME_PTR,
        async_evd_qlen: DAT_COUNT,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_handle: *mut DAT_IA_HANDLE,
        ro_aware_client: DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
/// Same shape as `dat_ia_openv`; declared for completeness, used by no slot.
pub type DAT_IA_OPENV_FUNC = Option<
    unsafe extern "C" fn(
        name: DAT_NAME_PTR,
        async_evd_qlen: DAT_COUNT,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_handle: *mut DAT_IA_HANDLE,
        dapl_major: DAT_UINT32,
        dapl_minor: DAT_UINT32,
        thread_safety: DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
pub type DAT_IA_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_attr_mask: DAT_IA_ATTR_MASK,
        ia_attr: *mut DAT_IA_ATTR,
        provider_attr_mask: DAT_PROVIDER_ATTR_MASK,
        provider_attr: *mut DAT_PROVIDER_ATTR,
    ) -> DAT_RETURN,
>;
pub type DAT_IA_CLOSE_FUNC = Option<
    unsafe extern "C" fn(ia_handle: DAT_IA_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN,
>;
pub type DAT_SET_CONSUMER_CONTEXT_FUNC =
    Option<unsafe extern "C" fn(dat_handle: DAT_HANDLE, context: DAT_CONTEXT) -> DAT_RETURN>;
pub type DAT_GET_CONSUMER_CONTEXT_FUNC =
    Option<unsafe extern "C" fn(dat_handle: DAT_HANDLE, context: *mut DAT_CONTEXT) -> DAT_RETURN>;
pub type DAT_GET_HANDLE_TYPE_FUNC = Option<
    unsafe extern "C" fn(dat_handle: DAT_HANDLE, handle_type: *mut DAT_HANDLE_TYPE) -> DAT_RETURN,
>;

pub type DAT_CNO_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        agent: DAT_OS_WAIT_PROXY_AGENT,
        cno_handle: *mut DAT_CNO_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_CNO_MODIFY_AGENT_FUNC = Option<
    unsafe extern "C" fn(cno_handle: DAT_CNO_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT) -> DAT_RETURN,
>;
pub type DAT_CNO_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        cno_handle: DAT_CNO_HANDLE,
        cno_param_mask: DAT_CNO_PARAM_MASK,
        cno_param: *mut DAT_CNO_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_CNO_FREE_FUNC = Option<unsafe extern "C" fn(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN>;
pub type DAT_CNO_WAIT_FUNC = Option<
    unsafe extern "C" fn(
        cno_handle: DAT_CNO_HANDLE,
        timeout: DAT_TIMEOUT,
        evd_handle: *mut DAT_EVD_HANDLE,
    ) -> DAT_RETURN,
>;

pub type DAT_CR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        cr_handle: DAT_CR_HANDLE,
        cr_param_mask: DAT_CR_PARAM_MASK,
        cr_param: *mut DAT_CR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_CR_ACCEPT_FUNC = Option<
    unsafe extern "C" fn(
        cr_handle: DAT_CR_HANDLE,
        ep_handle: DAT_EP_HANDLE,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
    ) -> DAT_RETURN,
>;
pub type DAT_CR_REJECT_FUNC = Option<unsafe extern "C" fn(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN>;
pub type DAT_CR_HANDOFF_FUNC =
    Option<unsafe extern "C" fn(cr_handle: DAT_CR_HANDLE, handoff: DAT_CONN_QUAL) -> DAT_RETURN>;

pub type DAT_EVD_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        evd_min_qlen: DAT_COUNT,
        cno_handle: DAT_CNO_HANDLE,
        evd_flags: DAT_EVD_FLAGS,
        evd_handle: *mut DAT_EVD_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        evd_handle: DAT_EVD_HANDLE,
        evd_param_mask: DAT_EVD_PARAM_MASK,
        evd_param: *mut DAT_EVD_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_MODIFY_CNO_FUNC = Option<
    unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN,
>;
pub type DAT_EVD_ENABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_DISABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_WAIT_FUNC = Option<
    unsafe extern "C" fn(
        evd_handle: DAT_EVD_HANDLE,
        timeout: DAT_TIMEOUT,
        threshold: DAT_COUNT,
        event: *mut DAT_EVENT,
        nmore: *mut DAT_COUNT,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_RESIZE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, evd_min_qlen: DAT_COUNT) -> DAT_RETURN>;
pub type DAT_EVD_POST_SE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, event: *const DAT_EVENT) -> DAT_RETURN>;
pub type DAT_EVD_DEQUEUE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, event: *mut DAT_EVENT) -> DAT_RETURN>;
pub type DAT_EVD_FREE_FUNC = Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_SET_UNWAITABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_CLEAR_UNWAITABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        recv_evd_handle: DAT_EVD_HANDLE,
        request_evd_handle: DAT_EVD_HANDLE,
        connect_evd_handle: DAT_EVD_HANDLE,
        ep_attributes: *const DAT_EP_ATTR,
        ep_handle: *mut DAT_EP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_CREATE_WITH_SRQ_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        recv_evd_handle: DAT_EVD_HANDLE,
        request_evd_handle: DAT_EVD_HANDLE,
        connect_evd_handle: DAT_EVD_HANDLE,
        srq_handle: DAT_SRQ_HANDLE,
        ep_attributes: *const DAT_EP_ATTR,
        ep_handle: *mut DAT_EP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_param_mask: DAT_EP_PARAM_MASK,
        ep_param: *mut DAT_EP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_MODIFY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_param_mask: DAT_EP_PARAM_MASK,
        ep_param: *const DAT_EP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_CONNECT_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        remote_ia_address: DAT_IA_ADDRESS_PTR,
        remote_conn_qual: DAT_CONN_QUAL,
        timeout: DAT_TIMEOUT,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
        qos: DAT_QOS,
        connect_flags: DAT_CONNECT_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_DUP_CONNECT_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_dup_handle: DAT_EP_HANDLE,
        timeout: DAT_TIMEOUT,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
        qos: DAT_QOS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_DISCONNECT_FUNC = Option<
    unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN,
>;
pub type DAT_EP_POST_SEND_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RECV_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RDMA_READ_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        remote_iov: *const DAT_RMR_TRIPLET,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RDMA_WRITE_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        remote_iov: *const DAT_RMR_TRIPLET,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_GET_STATUS_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_state: *mut DAT_EP_STATE,
        recv_idle: *mut DAT_BOOLEAN,
        request_idle: *mut DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_FREE_FUNC = Option<unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN>;
pub type DAT_EP_RESET_FUNC = Option<unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN>;
pub type DAT_EP_RECV_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        nbufs_allocated: *mut DAT_COUNT,
        bufs_alloc_span: *mut DAT_COUNT,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_SET_WATERMARK_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        soft_high_watermark: DAT_COUNT,
        hard_high_watermark: DAT_COUNT,
    ) -> DAT_RETURN,
>;

pub type DAT_LMR_CREATE_FUNC = Option<
    unsafe extern "C" fn(
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
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        lmr_handle: DAT_LMR_HANDLE,
        lmr_param_mask: DAT_LMR_PARAM_MASK,
        lmr_param: *mut DAT_LMR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_FREE_FUNC = Option<unsafe extern "C" fn(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN>;
pub type DAT_LMR_SYNC_RDMA_READ_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        local_segments: *const DAT_LMR_TRIPLET,
        num_segments: DAT_VLEN,
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_SYNC_RDMA_WRITE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        local_segments: *const DAT_LMR_TRIPLET,
        num_segments: DAT_VLEN,
    ) -> DAT_RETURN,
>;

pub type DAT_RMR_CREATE_FUNC = Option<
    unsafe extern "C" fn(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE) -> DAT_RETURN,
>;
pub type DAT_RMR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        rmr_handle: DAT_RMR_HANDLE,
        rmr_param_mask: DAT_RMR_PARAM_MASK,
        rmr_param: *mut DAT_RMR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_RMR_BIND_FUNC = Option<
    unsafe extern "C" fn(
        rmr_handle: DAT_RMR_HANDLE,
        lmr_triplet: *const DAT_LMR_TRIPLET,
        mem_priv: DAT_MEM_PRIV_FLAGS,
        ep_handle: DAT_EP_HANDLE,
        user_cookie: DAT_RMR_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
        rmr_context: *mut DAT_RMR_CONTEXT,
    ) -> DAT_RETURN,
>;
pub type DAT_RMR_FREE_FUNC = Option<unsafe extern "C" fn(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN>;

pub type DAT_PSP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: DAT_CONN_QUAL,
        evd_handle: DAT_EVD_HANDLE,
        psp_flags: DAT_PSP_FLAGS,
        psp_handle: *mut DAT_PSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_CREATE_ANY_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: *mut DAT_CONN_QUAL,
        evd_handle: DAT_EVD_HANDLE,
        psp_flags: DAT_PSP_FLAGS,
        psp_handle: *mut DAT_PSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        psp_handle: DAT_PSP_HANDLE,
        psp_param_mask: DAT_PSP_PARAM_MASK,
        psp_param: *mut DAT_PSP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_FREE_FUNC = Option<unsafe extern "C" fn(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN>;

pub type DAT_RSP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: DAT_CONN_QUAL,
        ep_handle: DAT_EP_HANDLE,
        evd_handle: DAT_EVD_HANDLE,
        rsp_handle: *mut DAT_RSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_RSP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        rsp_handle: DAT_RSP_HANDLE,
        rsp_param_mask: DAT_RSP_PARAM_MASK,
        rsp_param: *mut DAT_RSP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_RSP_FREE_FUNC = Option<unsafe extern "C" fn(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN>;

pub type DAT_PZ_CREATE_FUNC = Option<
    unsafe extern "C" fn(ia_handle: DAT_IA_HANDLE, pz_handle: *mut DAT_PZ_HANDLE) -> DAT_RETURN,
>;
pub type DAT_PZ_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        pz_handle: DAT_PZ_HANDLE,
        pz_param_mask: DAT_PZ_PARAM_MASK,
        pz_param: *mut DAT_PZ_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_PZ_FREE_FUNC = Option<unsafe extern "C" fn(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN>;

pub type DAT_SRQ_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        srq_attr: *mut DAT_SRQ_ATTR,
        srq_handle: *mut DAT_SRQ_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_FREE_FUNC = Option<unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN>;
pub type DAT_SRQ_POST_RECV_FUNC = Option<
    unsafe extern "C" fn(
        srq_handle: DAT_SRQ_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        srq_handle: DAT_SRQ_HANDLE,
        srq_param_mask: DAT_SRQ_PARAM_MASK,
        srq_param: *mut DAT_SRQ_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_RESIZE_FUNC = Option<
    unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE, srq_max_recv_dto: DAT_COUNT) -> DAT_RETURN,
>;
pub type DAT_SRQ_SET_LW_FUNC = Option<
    unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE, low_watermark: DAT_COUNT) -> DAT_RETURN,
>;

/// The provider's function table. The first word of every object a DAT
/// handle points to is a pointer to one of these (see
/// DAT_HANDLE_TO_PROVIDER); `device_name` must equal the IA name.
/// 70 pointer-sized members, 560 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider {
    pub device_name: *const c_char,
    pub extension: DAT_PVOID,

    pub ia_open_func: DAT_IA_OPEN_FUNC,
    pub ia_query_func: DAT_IA_QUERY_FUNC,
    pub ia_close_func: DAT_IA_CLOSE_FUNC,

    pub set_consumer_context_func: DAT_SET_CONSUMER_CONTEXT_FUNC,
    pub get_consumer_context_func: DAT_GET_CONSUMER_CONTEXT_FUNC,
    pub get_handle_type_func: DAT_GET_HANDLE_TYPE_FUNC,

    pub cno_create_func: DAT_CNO_CREATE_FUNC,
    pub cno_modify_agent_func: DAT_CNO_MODIFY_AGENT_FUNC,
    pub cno_query_func: DAT_CNO_QUERY_FUNC,
    pub cno_free_func: DAT_CNO_FREE_FUNC,
    pub cno_wait_func: DAT_CNO_WAIT_FUNC,

    pub cr_query_func: DAT_CR_QUERY_FUNC,
    pub cr_accept_func: DAT_CR_ACCEPT_FUNC,
    pub cr_reject_func: DAT_CR_REJECT_FUNC,
    pub cr_handoff_func: DAT_CR_HANDOFF_FUNC,

    pub evd_create_func: DAT_EVD_CREATE_FUNC,
    pub evd_query_func: DAT_EVD_QUERY_FUNC,

    pub evd_modify_cno_func: DAT_EVD_MODIFY_CNO_FUNC,
    pub evd_enable_func: DAT_EVD_ENABLE_FUNC,
    pub evd_disable_func: DAT_EVD_DISABLE_FUNC,
    pub evd_wait_func: DAT_EVD_WAIT_FUNC,

    pub evd_resize_func: DAT_EVD_RESIZE_FUNC,
    pub evd_post_se_func: DAT_EVD_POST_SE_FUNC,
    pub evd_dequeue_func: DAT_EVD_DEQUEUE_FUNC,
    pub evd_free_func: DAT_EVD_FREE_FUNC,

    pub ep_create_func: DAT_EP_CREATE_FUNC,
    pub ep_query_func: DAT_EP_QUERY_FUNC,
    pub ep_modify_func: DAT_EP_MODIFY_FUNC,
    pub ep_connect_func: DAT_EP_CONNECT_FUNC,
    pub ep_dup_connect_func: DAT_EP_DUP_CONNECT_FUNC,
    pub ep_disconnect_func: DAT_EP_DISCONNECT_FUNC,
    pub ep_post_send_func: DAT_EP_POST_SEND_FUNC,
    pub ep_post_recv_func: DAT_EP_POST_RECV_FUNC,
    pub ep_post_rdma_read_func: DAT_EP_POST_RDMA_READ_FUNC,
    pub ep_post_rdma_write_func: DAT_EP_POST_RDMA_WRITE_FUNC,
    pub ep_get_status_func: DAT_EP_GET_STATUS_FUNC,
    pub ep_free_func: DAT_EP_FREE_FUNC,

    pub lmr_create_func: DAT_LMR_CREATE_FUNC,
    pub lmr_query_func: DAT_LMR_QUERY_FUNC,
    pub lmr_free_func: DAT_LMR_FREE_FUNC,

    pub rmr_create_func: DAT_RMR_CREATE_FUNC,
    pub rmr_query_func: DAT_RMR_QUERY_FUNC,
    pub rmr_bind_func: DAT_RMR_BIND_FUNC,
    pub rmr_free_func: DAT_RMR_FREE_FUNC,

    pub psp_create_func: DAT_PSP_CREATE_FUNC,
    pub psp_query_func: DAT_PSP_QUERY_FUNC,
    pub psp_free_func: DAT_PSP_FREE_FUNC,

    pub rsp_create_func: DAT_RSP_CREATE_FUNC,
    pub rsp_query_func: DAT_RSP_QUERY_FUNC,
    pub rsp_free_func: DAT_RSP_FREE_FUNC,

    pub pz_create_func: DAT_PZ_CREATE_FUNC,
    pub pz_query_func: DAT_PZ_QUERY_FUNC,
    pub pz_free_func: DAT_PZ_FREE_FUNC,

    // Added in DAT 1.1.
    pub psp_create_any_func: DAT_PSP_CREATE_ANY_FUNC,
    pub ep_reset_func: DAT_EP_RESET_FUNC,

    // Added in uDAT 1.1.
    pub evd_set_unwaitable_func: DAT_EVD_SET_UNWAITABLE_FUNC,
    pub evd_clear_unwaitable_func: DAT_EVD_CLEAR_UNWAITABLE_FUNC,

    // Added in DAT 1.2.
    pub lmr_sync_rdma_read_func: DAT_LMR_SYNC_RDMA_READ_FUNC,
    pub lmr_sync_rdma_write_func: DAT_LMR_SYNC_RDMA_WRITE_FUNC,

    pub ep_create_with_srq_func: DAT_EP_CREATE_WITH_SRQ_FUNC,
    pub ep_recv_query_func: DAT_EP_RECV_QUERY_FUNC,
    pub ep_set_watermark_func: DAT_EP_SET_WATERMARK_FUNC,
    pub srq_create_func: DAT_SRQ_CREATE_FUNC,
    pub srq_free_func: DAT_SRQ_FREE_FUNC,
    pub srq_post_recv_func: DAT_SRQ_POST_RECV_FUNC,
    pub srq_query_func: DAT_SRQ_QUERY_FUNC,
    pub srq_resize_func: DAT_SRQ_RESIZE_FUNC,
    pub srq_set_lw_func: DAT_SRQ_SET_LW_FUNC,
}
pub type DAT_PROVIDER = dat_provider;

/// `dat_provider_init(provider_info, instance_data)`, exported by a
/// provider library and called after it is loaded.
pub type DAT_PROVIDER_INIT_FUNC = Option<
    unsafe extern "C" fn(provider_info: *const DAT_PROVIDER_INFO, instance_data: *const c_char),
>;
/// `dat_provider_fini(provider_info)`, called before the library is unloaded.
pub type DAT_PROVIDER_FINI_FUNC =
    Option<unsafe extern "C" fn(provider_info: *const DAT_PROVIDER_INFO)>;

/// Symbol name of the provider init entry point, NUL-terminated (for dlsym).
/// cbindgen:ignore
pub const DAT_PROVIDER_INIT_FUNC_STR: &[u8] = b"dat_provider_init\0";
/// Symbol name of the provider fini entry point, NUL-terminated (for dlsym).
/// cbindgen:ignore
pub const DAT_PROVIDER_FINI_FUNC_STR: &[u8] = b"dat_provider_fini\0";
