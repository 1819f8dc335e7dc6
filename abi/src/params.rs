//! The structs and unions of attributes and parameters: named attributes,
//! contexts, triplets, and each object's `*_ATTR` / `*_PARAM`.

use core::ffi::c_char;

use crate::*;

/// A named attribute (name/value strings).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_named_attr {
    pub name: *const c_char,
    pub value: *const c_char,
}
pub type DAT_NAMED_ATTR = dat_named_attr;

/// Consumer context, also the DTO and RMR cookie (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_context {
    pub as_ptr: DAT_PVOID,
    pub as_64: DAT_UINT64,
    pub as_index: DAT_UVERYLONG,
}
pub type DAT_CONTEXT = dat_context;
/// Cookie returned in a DTO completion.
pub type DAT_DTO_COOKIE = DAT_CONTEXT;
/// Cookie returned in an RMR bind completion.
pub type DAT_RMR_COOKIE = DAT_CONTEXT;

/// One local buffer segment. `pad` keeps the 64-bit members aligned.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_lmr_triplet {
    pub lmr_context: DAT_LMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub virtual_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}
pub type DAT_LMR_TRIPLET = dat_lmr_triplet;

/// One remote buffer segment.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_triplet {
    pub rmr_context: DAT_RMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub target_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}
pub type DAT_RMR_TRIPLET = dat_rmr_triplet;

/// Parameters of an RMR (`dat_rmr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub lmr_triplet: DAT_LMR_TRIPLET,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub rmr_context: DAT_RMR_CONTEXT,
}
pub type DAT_RMR_PARAM = dat_rmr_param;

/// Attributes of an interface adapter (`dat_ia_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ia_attr {
    pub adapter_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub vendor_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub hardware_version_major: DAT_UINT32,
    pub hardware_version_minor: DAT_UINT32,
    pub firmware_version_major: DAT_UINT32,
    pub firmware_version_minor: DAT_UINT32,
    pub ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub max_eps: DAT_COUNT,
    pub max_dto_per_ep: DAT_COUNT,
    pub max_rdma_read_per_ep_in: DAT_COUNT,
    pub max_rdma_read_per_ep_out: DAT_COUNT,
    pub max_evds: DAT_COUNT,
    pub max_evd_qlen: DAT_COUNT,
    pub max_iov_segments_per_dto: DAT_COUNT,
    pub max_lmrs: DAT_COUNT,
    pub max_lmr_block_size: DAT_VLEN,
    pub max_lmr_virtual_address: DAT_VADDR,
    pub max_pzs: DAT_COUNT,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
    pub max_rmrs: DAT_COUNT,
    pub max_rmr_target_address: DAT_VADDR,
    pub max_srqs: DAT_COUNT,
    pub max_ep_per_srq: DAT_COUNT,
    pub max_recv_per_srq: DAT_COUNT,
    pub max_iov_segments_per_rdma_read: DAT_COUNT,
    pub max_iov_segments_per_rdma_write: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub max_rdma_read_per_ep_in_guaranteed: DAT_BOOLEAN,
    pub max_rdma_read_per_ep_out_guaranteed: DAT_BOOLEAN,
    pub num_transport_attr: DAT_COUNT,
    pub transport_attr: *mut DAT_NAMED_ATTR,
    pub num_vendor_attr: DAT_COUNT,
    pub vendor_attr: *mut DAT_NAMED_ATTR,
}
pub type DAT_IA_ATTR = dat_ia_attr;

/// Attributes of a provider (`dat_ia_query`). The 6x6 merging matrix is
/// indexed in DAT_EVD_FLAGS order: software, CR, DTO, connection, RMR
/// bind, async. (The 1.2 header declares its elements `const`; the layout
/// is the same.)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider_attr {
    pub provider_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub provider_version_major: DAT_UINT32,
    pub provider_version_minor: DAT_UINT32,
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub lmr_mem_types_supported: DAT_MEM_TYPE,
    pub iov_ownership_on_return: DAT_IOV_OWNERSHIP,
    pub dat_qos_supported: DAT_QOS,
    pub completion_flags_supported: DAT_COMPLETION_FLAGS,
    pub is_thread_safe: DAT_BOOLEAN,
    pub max_private_data_size: DAT_COUNT,
    pub supports_multipath: DAT_BOOLEAN,
    pub ep_creator: DAT_EP_CREATOR_FOR_PSP,
    pub pz_support: DAT_PZ_SUPPORT,
    pub optimal_buffer_alignment: DAT_UINT32,
    pub evd_stream_merging_supported: [[DAT_BOOLEAN; 6]; 6],
    pub srq_supported: DAT_BOOLEAN,
    pub srq_watermarks_supported: DAT_COUNT,
    pub srq_ep_pz_difference_supported: DAT_BOOLEAN,
    pub srq_info_supported: DAT_COUNT,
    pub ep_recv_info_supported: DAT_COUNT,
    pub lmr_sync_req: DAT_BOOLEAN,
    pub dto_async_return_guaranteed: DAT_BOOLEAN,
    pub rdma_write_for_rdma_read_req: DAT_BOOLEAN,
    pub num_provider_specific_attr: DAT_COUNT,
    pub provider_specific_attr: *mut DAT_NAMED_ATTR,
}
pub type DAT_PROVIDER_ATTR = dat_provider_attr;

/// Attributes of an endpoint.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ep_attr {
    pub service_type: DAT_SERVICE_TYPE,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
    pub qos: DAT_QOS,
    pub recv_completion_flags: DAT_COMPLETION_FLAGS,
    pub request_completion_flags: DAT_COMPLETION_FLAGS,
    pub max_recv_dtos: DAT_COUNT,
    pub max_request_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub max_request_iov: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub srq_soft_hw: DAT_COUNT,
    pub max_rdma_read_iov: DAT_COUNT,
    pub max_rdma_write_iov: DAT_COUNT,
    pub ep_transport_specific_count: DAT_COUNT,
    pub ep_transport_specific: *mut DAT_NAMED_ATTR,
    pub ep_provider_specific_count: DAT_COUNT,
    pub ep_provider_specific: *mut DAT_NAMED_ATTR,
}
pub type DAT_EP_ATTR = dat_ep_attr;

/// Parameters of an endpoint (`dat_ep_query` / `dat_ep_modify`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ep_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub ep_state: DAT_EP_STATE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub local_port_qual: DAT_PORT_QUAL,
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub pz_handle: DAT_PZ_HANDLE,
    pub recv_evd_handle: DAT_EVD_HANDLE,
    pub request_evd_handle: DAT_EVD_HANDLE,
    pub connect_evd_handle: DAT_EVD_HANDLE,
    pub srq_handle: DAT_SRQ_HANDLE,
    pub ep_attr: DAT_EP_ATTR,
}
pub type DAT_EP_PARAM = dat_ep_param;

/// Parameters of an event dispatcher (`dat_evd_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_evd_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub evd_qlen: DAT_COUNT,
    pub evd_state: DAT_EVD_STATE,
    pub cno_handle: DAT_CNO_HANDLE,
    pub evd_flags: DAT_EVD_FLAGS,
}
pub type DAT_EVD_PARAM = dat_evd_param;

/// Shared-memory region description (udapl only).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_shared_memory {
    pub virtual_address: DAT_PVOID,
    pub shared_memory_id: DAT_LMR_COOKIE,
}
pub type DAT_SHARED_MEMORY = dat_shared_memory;

/// What an LMR is created from; passed by value to `dat_lmr_create`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_region_description {
    pub for_va: DAT_PVOID,
    pub for_lmr_handle: DAT_LMR_HANDLE,
    pub for_shared_memory: DAT_SHARED_MEMORY,
}
pub type DAT_REGION_DESCRIPTION = dat_region_description;

/// Parameters of an LMR (`dat_lmr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_lmr_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub mem_type: DAT_MEM_TYPE,
    pub region_desc: DAT_REGION_DESCRIPTION,
    pub length: DAT_VLEN,
    pub pz_handle: DAT_PZ_HANDLE,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub lmr_context: DAT_LMR_CONTEXT,
    pub rmr_context: DAT_RMR_CONTEXT,
    pub registered_size: DAT_VLEN,
    pub registered_address: DAT_VADDR,
}
pub type DAT_LMR_PARAM = dat_lmr_param;

/// OS wait proxy agent of a CNO; passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_os_wait_proxy_agent {
    pub instance_data: DAT_PVOID,
    pub proxy_agent_func: DAT_AGENT_FUNC,
}
pub type DAT_OS_WAIT_PROXY_AGENT = dat_os_wait_proxy_agent;

/// Parameters of a CNO (`dat_cno_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cno_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub agent: DAT_OS_WAIT_PROXY_AGENT,
}
pub type DAT_CNO_PARAM = dat_cno_param;

/// Attributes of a shared receive queue (`dat_srq_create`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_srq_attr {
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
}
pub type DAT_SRQ_ATTR = dat_srq_attr;

/// Parameters of a shared receive queue (`dat_srq_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_srq_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub srq_state: DAT_SRQ_STATE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
    pub available_dto_count: DAT_COUNT,
    pub outstanding_dto_count: DAT_COUNT,
}
pub type DAT_SRQ_PARAM = dat_srq_param;

/// Parameters of a protection zone (`dat_pz_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_pz_param {
    pub ia_handle: DAT_IA_HANDLE,
}
pub type DAT_PZ_PARAM = dat_pz_param;

/// Parameters of a public service point (`dat_psp_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_psp_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub psp_flags: DAT_PSP_FLAGS,
}
pub type DAT_PSP_PARAM = dat_psp_param;

/// Parameters of a reserved service point (`dat_rsp_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rsp_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub ep_handle: DAT_EP_HANDLE,
}
pub type DAT_RSP_PARAM = dat_rsp_param;

/// Parameters of a connection request (`dat_cr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cr_param {
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
    pub local_ep_handle: DAT_EP_HANDLE,
}
pub type DAT_CR_PARAM = dat_cr_param;

/// Registry key of an IA: name, DAPL version, thread safety.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider_info {
    pub ia_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub is_thread_safe: DAT_BOOLEAN,
}
pub type DAT_PROVIDER_INFO = dat_provider_info;
