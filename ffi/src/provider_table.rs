//! Our own `DAT_PROVIDER` tables. Every handle we give out starts with a
//! pointer to one of them, so C code can use `DAT_HANDLE_TO_PROVIDER` and
//! the upper-case redirection macros on our handles. The slots are our own
//! exported entry points; `device_name` is the IA name the table serves.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

use crate::api::*;
use dat_abi::*;

/// The table for IA name `name` (created once per name, never freed).
pub(crate) fn for_name(name: &str) -> usize {
    static TABLES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    let map = tables.get_or_insert_with(HashMap::new);
    if let Some(&t) = map.get(name) {
        return t;
    }
    let device_name = CString::new(name.replace('\0', "")).unwrap_or_default();
    let table: &'static DAT_PROVIDER = Box::leak(Box::new(table(device_name.into_raw())));
    let addr = table as *const DAT_PROVIDER as usize;
    map.insert(name.to_owned(), addr);
    addr
}

fn table(device_name: *const libc::c_char) -> DAT_PROVIDER {
    DAT_PROVIDER {
        device_name,
        extension: std::ptr::null_mut(),
        ia_open_func: Some(crate::api::ia::builtin_ia_open),
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
    }
}
