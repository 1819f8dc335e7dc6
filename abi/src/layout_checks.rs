//! Compile-time checks of every struct and union against the documented
//! x86-64 Linux (LP64, SysV) size, alignment and field offsets.

use crate::*;
use core::mem::{align_of, offset_of, size_of};

/// `layout!(Type, size, align; field => offset, ...)` asserts the size,
/// the alignment and every listed field offset at compile time.
macro_rules! layout {
    ($t:ty, $size:expr, $align:expr; $($field:ident => $off:expr),* $(,)?) => {
        const _: () = {
            assert!(size_of::<$t>() == $size);
            assert!(align_of::<$t>() == $align);
            $( assert!(offset_of!($t, $field) == $off); )*
        };
    };
}

// Scalars.
const _: () = {
    assert!(size_of::<DAT_UINT32>() == 4);
    assert!(size_of::<DAT_UINT64>() == 8);
    assert!(size_of::<DAT_UVERYLONG>() == 8);
    assert!(size_of::<DAT_COUNT>() == 4);
    assert!(size_of::<DAT_PVOID>() == 8);
    assert!(size_of::<DAT_HANDLE>() == 8);
    assert!(size_of::<DAT_SOCK_ADDR>() == 16);
    assert!(size_of::<DAT_SOCK_ADDR6>() == 28);
    assert!(size_of::<DAT_LMR_COOKIE>() == 8);
    assert!(size_of::<DAT_AGENT_FUNC>() == 8);
    assert!(size_of::<DAT_IA_OPEN_FUNC>() == 8);
    assert!(DAT_TIMEOUT_INFINITE == 0xFFFF_FFFF);
    assert!(DAT_WATERMARK_INFINITE == -1);
    assert!(DAT_HW_DEFAULT == -1);
    assert!(DAT_VALUE_UNKNOWN == -2);
    assert!(DAT_IA_FIELD_ALL == 0x7_FFFF_FFFF);
    assert!(DAT_PROVIDER_FIELD_ALL == 0x3FF_FFFF);
    assert!(DAT_EP_FIELD_ALL == 0x7FFF_F7FF);
    assert!(DAT_EP_FIELD_EP_ATTR_ALL == 0x7FFF_F000);
    assert!(DAT_MEM_PRIV_READ_FLAG == 0x03);
    assert!(DAT_MEM_PRIV_WRITE_FLAG == 0x30);
    assert!(DAT_CLASS_ERROR == 0x8000_0000);
    assert!(DAT_INVALID_RO_COOKIE == 102);
    assert!(DAT_AF_INET == 2);
    assert!(DAT_AF_INET6 == 10);
};

layout!(DAT_NAMED_ATTR, 16, 8; name => 0, value => 8);
layout!(DAT_CONTEXT, 8, 8; as_ptr => 0, as_64 => 0, as_index => 0);
layout!(DAT_LMR_TRIPLET, 24, 8;
    lmr_context => 0, pad => 4, virtual_address => 8, segment_length => 16);
layout!(DAT_RMR_TRIPLET, 24, 8;
    rmr_context => 0, pad => 4, target_address => 8, segment_length => 16);
layout!(DAT_RMR_PARAM, 48, 8;
    ia_handle => 0, pz_handle => 8, lmr_triplet => 16, mem_priv => 40, rmr_context => 44);
layout!(DAT_IA_ATTR, 688, 8;
    adapter_name => 0,
    vendor_name => 256,
    hardware_version_major => 512,
    hardware_version_minor => 516,
    firmware_version_major => 520,
    firmware_version_minor => 524,
    ia_address_ptr => 528,
    max_eps => 536,
    max_dto_per_ep => 540,
    max_rdma_read_per_ep_in => 544,
    max_rdma_read_per_ep_out => 548,
    max_evds => 552,
    max_evd_qlen => 556,
    max_iov_segments_per_dto => 560,
    max_lmrs => 564,
    max_lmr_block_size => 568,
    max_lmr_virtual_address => 576,
    max_pzs => 584,
    max_message_size => 592,
    max_rdma_size => 600,
    max_rmrs => 608,
    max_rmr_target_address => 616,
    max_srqs => 624,
    max_ep_per_srq => 628,
    max_recv_per_srq => 632,
    max_iov_segments_per_rdma_read => 636,
    max_iov_segments_per_rdma_write => 640,
    max_rdma_read_in => 644,
    max_rdma_read_out => 648,
    max_rdma_read_per_ep_in_guaranteed => 652,
    max_rdma_read_per_ep_out_guaranteed => 656,
    num_transport_attr => 660,
    transport_attr => 664,
    num_vendor_attr => 672,
    vendor_attr => 680,
);
layout!(DAT_PROVIDER_ATTR, 504, 8;
    provider_name => 0,
    provider_version_major => 256,
    provider_version_minor => 260,
    dapl_version_major => 264,
    dapl_version_minor => 268,
    lmr_mem_types_supported => 272,
    iov_ownership_on_return => 276,
    dat_qos_supported => 280,
    completion_flags_supported => 284,
    is_thread_safe => 288,
    max_private_data_size => 292,
    supports_multipath => 296,
    ep_creator => 300,
    pz_support => 304,
    optimal_buffer_alignment => 308,
    evd_stream_merging_supported => 312,
    srq_supported => 456,
    srq_watermarks_supported => 460,
    srq_ep_pz_difference_supported => 464,
    srq_info_supported => 468,
    ep_recv_info_supported => 472,
    lmr_sync_req => 476,
    dto_async_return_guaranteed => 480,
    rdma_write_for_rdma_read_req => 484,
    num_provider_specific_attr => 488,
    provider_specific_attr => 496,
);
layout!(DAT_EP_ATTR, 104, 8;
    service_type => 0,
    max_message_size => 8,
    max_rdma_size => 16,
    qos => 24,
    recv_completion_flags => 28,
    request_completion_flags => 32,
    max_recv_dtos => 36,
    max_request_dtos => 40,
    max_recv_iov => 44,
    max_request_iov => 48,
    max_rdma_read_in => 52,
    max_rdma_read_out => 56,
    srq_soft_hw => 60,
    max_rdma_read_iov => 64,
    max_rdma_write_iov => 68,
    ep_transport_specific_count => 72,
    ep_transport_specific => 80,
    ep_provider_specific_count => 88,
    ep_provider_specific => 96,
);
layout!(DAT_EP_PARAM, 192, 8;
    ia_handle => 0,
    ep_state => 8,
    local_ia_address_ptr => 16,
    local_port_qual => 24,
    remote_ia_address_ptr => 32,
    remote_port_qual => 40,
    pz_handle => 48,
    recv_evd_handle => 56,
    request_evd_handle => 64,
    connect_evd_handle => 72,
    srq_handle => 80,
    ep_attr => 88,
);
layout!(DAT_EVD_PARAM, 32, 8;
    ia_handle => 0, evd_qlen => 8, evd_state => 12, cno_handle => 16, evd_flags => 24);
layout!(DAT_LMR_PARAM, 80, 8;
    ia_handle => 0,
    mem_type => 8,
    region_desc => 16,
    length => 32,
    pz_handle => 40,
    mem_priv => 48,
    lmr_context => 52,
    rmr_context => 56,
    registered_size => 64,
    registered_address => 72,
);
layout!(DAT_SHARED_MEMORY, 16, 8; virtual_address => 0, shared_memory_id => 8);
layout!(DAT_REGION_DESCRIPTION, 16, 8;
    for_va => 0, for_lmr_handle => 0, for_shared_memory => 0);
layout!(DAT_OS_WAIT_PROXY_AGENT, 16, 8; instance_data => 0, proxy_agent_func => 8);
layout!(DAT_CNO_PARAM, 24, 8; ia_handle => 0, agent => 8);
layout!(DAT_SRQ_ATTR, 12, 4; max_recv_dtos => 0, max_recv_iov => 4, low_watermark => 8);
layout!(DAT_SRQ_PARAM, 48, 8;
    ia_handle => 0,
    srq_state => 8,
    pz_handle => 16,
    max_recv_dtos => 24,
    max_recv_iov => 28,
    low_watermark => 32,
    available_dto_count => 36,
    outstanding_dto_count => 40,
);
layout!(DAT_PZ_PARAM, 8, 8; ia_handle => 0);
layout!(DAT_PSP_PARAM, 32, 8;
    ia_handle => 0, conn_qual => 8, evd_handle => 16, psp_flags => 24);
layout!(DAT_RSP_PARAM, 32, 8;
    ia_handle => 0, conn_qual => 8, evd_handle => 16, ep_handle => 24);
layout!(DAT_CR_PARAM, 40, 8;
    remote_ia_address_ptr => 0,
    remote_port_qual => 8,
    private_data_size => 16,
    private_data => 24,
    local_ep_handle => 32,
);
layout!(DAT_PROVIDER_INFO, 268, 4;
    ia_name => 0, dapl_version_major => 256, dapl_version_minor => 260, is_thread_safe => 264);
layout!(DAT_DTO_COMPLETION_EVENT_DATA, 32, 8;
    ep_handle => 0, user_cookie => 8, status => 16, transfered_length => 24);
layout!(DAT_RMR_BIND_COMPLETION_EVENT_DATA, 24, 8;
    rmr_handle => 0, user_cookie => 8, status => 16);
layout!(DAT_SP_HANDLE, 8, 8; rsp_handle => 0, psp_handle => 0);
layout!(DAT_CR_ARRIVAL_EVENT_DATA, 32, 8;
    sp_handle => 0, local_ia_address_ptr => 8, conn_qual => 16, cr_handle => 24);
layout!(DAT_CONNECTION_EVENT_DATA, 24, 8;
    ep_handle => 0, private_data_size => 8, private_data => 16);
layout!(DAT_ASYNCH_ERROR_EVENT_DATA, 16, 8; dat_handle => 0, reason => 8);
layout!(DAT_SOFTWARE_EVENT_DATA, 8, 8; pointer => 0);
layout!(DAT_EVENT_DATA, 32, 8;
    dto_completion_event_data => 0,
    rmr_completion_event_data => 0,
    cr_arrival_event_data => 0,
    connect_event_data => 0,
    asynch_error_event_data => 0,
    software_event_data => 0,
);
layout!(DAT_EVENT, 48, 8; event_number => 0, evd_handle => 8, event_data => 16);
layout!(DAT_PROVIDER, 560, 8;
    device_name => 0,
    extension => 8,
    ia_open_func => 16,
    ia_query_func => 24,
    ia_close_func => 32,
    set_consumer_context_func => 40,
    get_consumer_context_func => 48,
    get_handle_type_func => 56,
    cno_create_func => 64,
    cno_modify_agent_func => 72,
    cno_query_func => 80,
    cno_free_func => 88,
    cno_wait_func => 96,
    cr_query_func => 104,
    cr_accept_func => 112,
    cr_reject_func => 120,
    cr_handoff_func => 128,
    evd_create_func => 136,
    evd_query_func => 144,
    evd_modify_cno_func => 152,
    evd_enable_func => 160,
    evd_disable_func => 168,
    evd_wait_func => 176,
    evd_resize_func => 184,
    evd_post_se_func => 192,
    evd_dequeue_func => 200,
    evd_free_func => 208,
    ep_create_func => 216,
    ep_query_func => 224,
    ep_modify_func => 232,
    ep_connect_func => 240,
    ep_dup_connect_func => 248,
    ep_disconnect_func => 256,
    ep_post_send_func => 264,
    ep_post_recv_func => 272,
    ep_post_rdma_read_func => 280,
    ep_post_rdma_write_func => 288,
    ep_get_status_func => 296,
    ep_free_func => 304,
    lmr_create_func => 312,
    lmr_query_func => 320,
    lmr_free_func => 328,
    rmr_create_func => 336,
    rmr_query_func => 344,
    rmr_bind_func => 352,
    rmr_free_func => 360,
    psp_create_func => 368,
    psp_query_func => 376,
    psp_free_func => 384,
    rsp_create_func => 392,
    rsp_query_func => 400,
    rsp_free_func => 408,
    pz_create_func => 416,
    pz_query_func => 424,
    pz_free_func => 432,
    psp_create_any_func => 440,
    ep_reset_func => 448,
    evd_set_unwaitable_func => 456,
    evd_clear_unwaitable_func => 464,
    lmr_sync_rdma_read_func => 472,
    lmr_sync_rdma_write_func => 480,
    ep_create_with_srq_func => 488,
    ep_recv_query_func => 496,
    ep_set_watermark_func => 504,
    srq_create_func => 512,
    srq_free_func => 520,
    srq_post_recv_func => 528,
    srq_query_func => 536,
    srq_resize_func => 544,
    srq_set_lw_func => 552,
);
