//! The 64-bit field masks of `dat_ia_query` and the EP parameters, and the
//! counts with a special meaning.

use crate::*;

/// Field selector of the IA attributes in `dat_ia_query`.
pub type DAT_IA_ATTR_MASK = DAT_UINT64;
/// Bit 0: `adapter_name`.
pub const DAT_IA_FIELD_IA_ADAPTER_NAME: DAT_IA_ATTR_MASK = 0x000000001 as DAT_IA_ATTR_MASK;
/// Bit 1: `vendor_name`.
pub const DAT_IA_FIELD_IA_VENDOR_NAME: DAT_IA_ATTR_MASK = 0x000000002 as DAT_IA_ATTR_MASK;
/// Bit 2: `hardware_version_major`.
pub const DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000004 as DAT_IA_ATTR_MASK;
/// Bit 3: `hardware_version_minor`.
pub const DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000008 as DAT_IA_ATTR_MASK;
/// Bit 4: `firmware_version_major`.
pub const DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000010 as DAT_IA_ATTR_MASK;
/// Bit 5: `firmware_version_minor`.
pub const DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000020 as DAT_IA_ATTR_MASK;
/// Bit 6: `ia_address_ptr`.
pub const DAT_IA_FIELD_IA_ADDRESS_PTR: DAT_IA_ATTR_MASK = 0x000000040 as DAT_IA_ATTR_MASK;
/// Bit 7: `max_eps`.
pub const DAT_IA_FIELD_IA_MAX_EPS: DAT_IA_ATTR_MASK = 0x000000080 as DAT_IA_ATTR_MASK;
/// Bit 8: `max_dto_per_ep`.
pub const DAT_IA_FIELD_IA_MAX_DTO_PER_EP: DAT_IA_ATTR_MASK = 0x000000100 as DAT_IA_ATTR_MASK;
/// Bit 9: `max_rdma_read_per_ep_in`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN: DAT_IA_ATTR_MASK =
    0x000000200 as DAT_IA_ATTR_MASK;
/// Bit 10: `max_rdma_read_per_ep_out`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT: DAT_IA_ATTR_MASK =
    0x000000400 as DAT_IA_ATTR_MASK;
/// Bit 11: `max_evds`.
pub const DAT_IA_FIELD_IA_MAX_EVDS: DAT_IA_ATTR_MASK = 0x000000800 as DAT_IA_ATTR_MASK;
/// Bit 12: `max_evd_qlen`.
pub const DAT_IA_FIELD_IA_MAX_EVD_QLEN: DAT_IA_ATTR_MASK = 0x000001000 as DAT_IA_ATTR_MASK;
/// Bit 13: `max_iov_segments_per_dto`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO: DAT_IA_ATTR_MASK =
    0x000002000 as DAT_IA_ATTR_MASK;
/// Bit 14: `max_lmrs`.
pub const DAT_IA_FIELD_IA_MAX_LMRS: DAT_IA_ATTR_MASK = 0x000004000 as DAT_IA_ATTR_MASK;
/// Bit 15: `max_lmr_block_size`.
pub const DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE: DAT_IA_ATTR_MASK = 0x000008000 as DAT_IA_ATTR_MASK;
/// Bit 16: `max_lmr_virtual_address`.
pub const DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS: DAT_IA_ATTR_MASK =
    0x000010000 as DAT_IA_ATTR_MASK;
/// Bit 17: `max_pzs`.
pub const DAT_IA_FIELD_IA_MAX_PZS: DAT_IA_ATTR_MASK = 0x000020000 as DAT_IA_ATTR_MASK;
/// Bit 18: `max_message_size`.
pub const DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE: DAT_IA_ATTR_MASK = 0x000040000 as DAT_IA_ATTR_MASK;
/// Bit 19: `max_rdma_size`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_SIZE: DAT_IA_ATTR_MASK = 0x000080000 as DAT_IA_ATTR_MASK;
/// Bit 20: `max_rmrs`.
pub const DAT_IA_FIELD_IA_MAX_RMRS: DAT_IA_ATTR_MASK = 0x000100000 as DAT_IA_ATTR_MASK;
/// Bit 21: `max_rmr_target_address`.
pub const DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS: DAT_IA_ATTR_MASK =
    0x000200000 as DAT_IA_ATTR_MASK;
/// Bit 22: `max_srqs`.
pub const DAT_IA_FIELD_IA_MAX_SRQS: DAT_IA_ATTR_MASK = 0x000400000 as DAT_IA_ATTR_MASK;
/// Bit 23: `max_ep_per_srq`.
pub const DAT_IA_FIELD_IA_MAX_EP_PER_SRQ: DAT_IA_ATTR_MASK = 0x000800000 as DAT_IA_ATTR_MASK;
/// Bit 24: `max_recv_per_srq`.
pub const DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ: DAT_IA_ATTR_MASK = 0x001000000 as DAT_IA_ATTR_MASK;
/// Bit 25: `max_iov_segments_per_rdma_read`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ: DAT_IA_ATTR_MASK =
    0x002000000 as DAT_IA_ATTR_MASK;
/// Bit 26: `max_iov_segments_per_rdma_write`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE: DAT_IA_ATTR_MASK =
    0x004000000 as DAT_IA_ATTR_MASK;
/// Bit 27: `max_rdma_read_in`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_IN: DAT_IA_ATTR_MASK = 0x008000000 as DAT_IA_ATTR_MASK;
/// Bit 28: `max_rdma_read_out`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT: DAT_IA_ATTR_MASK = 0x010000000 as DAT_IA_ATTR_MASK;
/// Bit 29: `max_rdma_read_per_ep_in_guaranteed`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED: DAT_IA_ATTR_MASK =
    0x020000000 as DAT_IA_ATTR_MASK;
/// Bit 30: `max_rdma_read_per_ep_out_guaranteed`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED: DAT_IA_ATTR_MASK =
    0x040000000 as DAT_IA_ATTR_MASK;
/// Bit 31: `num_transport_attr`.
pub const DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR: DAT_IA_ATTR_MASK = 0x080000000 as DAT_IA_ATTR_MASK;
/// Bit 32: `transport_attr`.
pub const DAT_IA_FIELD_IA_TRANSPORT_ATTR: DAT_IA_ATTR_MASK = 0x100000000 as DAT_IA_ATTR_MASK;
/// Bit 33: `num_vendor_attr`.
pub const DAT_IA_FIELD_IA_NUM_VENDOR_ATTR: DAT_IA_ATTR_MASK = 0x200000000 as DAT_IA_ATTR_MASK;
/// Bit 34: `vendor_attr`.
pub const DAT_IA_FIELD_IA_VENDOR_ATTR: DAT_IA_ATTR_MASK = 0x400000000 as DAT_IA_ATTR_MASK;
/// Bits 0-34: every IA attribute (0x7FFFFFFFF).
pub const DAT_IA_FIELD_ALL: DAT_IA_ATTR_MASK = 0x7FFFFFFFF as DAT_IA_ATTR_MASK;
/// No IA attribute.
pub const DAT_IA_FIELD_NONE: DAT_IA_ATTR_MASK = 0x0 as DAT_IA_ATTR_MASK;
/// Older name of DAT_IA_FIELD_ALL.
pub const DAT_IA_ALL: DAT_IA_ATTR_MASK = DAT_IA_FIELD_ALL;
/// Older name of DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE.
pub const DAT_IA_FIELD_IA_MAX_MTU_SIZE: DAT_IA_ATTR_MASK = DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE;

/// Field selector of the provider attributes in `dat_ia_query`.
pub type DAT_PROVIDER_ATTR_MASK = DAT_UINT64;
/// Bit 0: `provider_name`.
pub const DAT_PROVIDER_FIELD_PROVIDER_NAME: DAT_PROVIDER_ATTR_MASK =
    0x0000001 as DAT_PROVIDER_ATTR_MASK;
/// Bit 1: `provider_version_major`.
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR: DAT_PROVIDER_ATTR_MASK =
    0x0000002 as DAT_PROVIDER_ATTR_MASK;
/// Bit 2: `provider_version_minor`.
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR: DAT_PROVIDER_ATTR_MASK =
    0x0000004 as DAT_PROVIDER_ATTR_MASK;
/// Bit 3: `dapl_version_major`.
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR: DAT_PROVIDER_ATTR_MASK =
    0x0000008 as DAT_PROVIDER_ATTR_MASK;
/// Bit 4: `dapl_version_minor`.
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR: DAT_PROVIDER_ATTR_MASK =
    0x0000010 as DAT_PROVIDER_ATTR_MASK;
/// Bit 5: `lmr_mem_types_supported`.
pub const DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000020 as DAT_PROVIDER_ATTR_MASK;
/// Bit 6: `iov_ownership_on_return`.
pub const DAT_PROVIDER_FIELD_IOV_OWNERSHIP: DAT_PROVIDER_ATTR_MASK =
    0x0000040 as DAT_PROVIDER_ATTR_MASK;
/// Bit 7: `dat_qos_supported`.
pub const DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000080 as DAT_PROVIDER_ATTR_MASK;
/// Bit 8: `completion_flags_supported`.
pub const DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000100 as DAT_PROVIDER_ATTR_MASK;
/// Bit 9: `is_thread_safe`.
pub const DAT_PROVIDER_FIELD_IS_THREAD_SAFE: DAT_PROVIDER_ATTR_MASK =
    0x0000200 as DAT_PROVIDER_ATTR_MASK;
/// Bit 10: `max_private_data_size`.
pub const DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE: DAT_PROVIDER_ATTR_MASK =
    0x0000400 as DAT_PROVIDER_ATTR_MASK;
/// Bit 11: `supports_multipath`.
pub const DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH: DAT_PROVIDER_ATTR_MASK =
    0x0000800 as DAT_PROVIDER_ATTR_MASK;
/// Bit 12: `ep_creator`.
pub const DAT_PROVIDER_FIELD_EP_CREATOR: DAT_PROVIDER_ATTR_MASK =
    0x0001000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 13: `pz_support`.
pub const DAT_PROVIDER_FIELD_PZ_SUPPORT: DAT_PROVIDER_ATTR_MASK =
    0x0002000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 14: `optimal_buffer_alignment`.
pub const DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT: DAT_PROVIDER_ATTR_MASK =
    0x0004000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 15: `evd_stream_merging_supported`.
pub const DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0008000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 16: `srq_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0010000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 17: `srq_watermarks_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0020000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 18: `srq_ep_pz_difference_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0040000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 19: `srq_info_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0080000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 20: `ep_recv_info_supported`.
pub const DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0100000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 21: `lmr_sync_req`.
pub const DAT_PROVIDER_FIELD_LMR_SYNC_REQ: DAT_PROVIDER_ATTR_MASK =
    0x0200000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 22: `dto_async_return_guaranteed`.
pub const DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED: DAT_PROVIDER_ATTR_MASK =
    0x0400000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 23: `rdma_write_for_rdma_read_req`.
pub const DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ: DAT_PROVIDER_ATTR_MASK =
    0x0800000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 24: `num_provider_specific_attr`.
pub const DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR: DAT_PROVIDER_ATTR_MASK =
    0x1000000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 25: `provider_specific_attr`.
pub const DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR: DAT_PROVIDER_ATTR_MASK =
    0x2000000 as DAT_PROVIDER_ATTR_MASK;
/// Bits 0-25: every provider attribute (0x3FFFFFF).
pub const DAT_PROVIDER_FIELD_ALL: DAT_PROVIDER_ATTR_MASK = 0x3FFFFFF as DAT_PROVIDER_ATTR_MASK;
/// No provider attribute.
pub const DAT_PROVIDER_FIELD_NONE: DAT_PROVIDER_ATTR_MASK = 0x0 as DAT_PROVIDER_ATTR_MASK;

/// Field selector of `dat_ep_query` / `dat_ep_modify`.
pub type DAT_EP_PARAM_MASK = DAT_UINT64;
/// Bit 0: `ia_handle`.
pub const DAT_EP_FIELD_IA_HANDLE: DAT_EP_PARAM_MASK = 0x00000001 as DAT_EP_PARAM_MASK;
/// Bit 1: `ep_state`.
pub const DAT_EP_FIELD_EP_STATE: DAT_EP_PARAM_MASK = 0x00000002 as DAT_EP_PARAM_MASK;
/// Bit 2: `local_ia_address_ptr`.
pub const DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR: DAT_EP_PARAM_MASK = 0x00000004 as DAT_EP_PARAM_MASK;
/// Bit 3: `local_port_qual`.
pub const DAT_EP_FIELD_LOCAL_PORT_QUAL: DAT_EP_PARAM_MASK = 0x00000008 as DAT_EP_PARAM_MASK;
/// Bit 4: `remote_ia_address_ptr`.
pub const DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR: DAT_EP_PARAM_MASK = 0x00000010 as DAT_EP_PARAM_MASK;
/// Bit 5: `remote_port_qual`.
pub const DAT_EP_FIELD_REMOTE_PORT_QUAL: DAT_EP_PARAM_MASK = 0x00000020 as DAT_EP_PARAM_MASK;
/// Bit 6: `pz_handle`.
pub const DAT_EP_FIELD_PZ_HANDLE: DAT_EP_PARAM_MASK = 0x00000040 as DAT_EP_PARAM_MASK;
/// Bit 7: `recv_evd_handle`.
pub const DAT_EP_FIELD_RECV_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000080 as DAT_EP_PARAM_MASK;
/// Bit 8: `request_evd_handle`.
pub const DAT_EP_FIELD_REQUEST_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000100 as DAT_EP_PARAM_MASK;
/// Bit 9: `connect_evd_handle`.
pub const DAT_EP_FIELD_CONNECT_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000200 as DAT_EP_PARAM_MASK;
/// Bit 10: `srq_handle`. (Bit 11 is unused.)
pub const DAT_EP_FIELD_SRQ_HANDLE: DAT_EP_PARAM_MASK = 0x00000400 as DAT_EP_PARAM_MASK;
/// Bit 12: `ep_attr.service_type`.
pub const DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE: DAT_EP_PARAM_MASK = 0x00001000 as DAT_EP_PARAM_MASK;
/// Bit 13: `ep_attr.max_message_size`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE: DAT_EP_PARAM_MASK =
    0x00002000 as DAT_EP_PARAM_MASK;
/// Bit 14: `ep_attr.max_rdma_size`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE: DAT_EP_PARAM_MASK = 0x00004000 as DAT_EP_PARAM_MASK;
/// Bit 15: `ep_attr.qos`.
pub const DAT_EP_FIELD_EP_ATTR_QOS: DAT_EP_PARAM_MASK = 0x00008000 as DAT_EP_PARAM_MASK;
/// Bit 16: `ep_attr.recv_completion_flags`.
pub const DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS: DAT_EP_PARAM_MASK =
    0x00010000 as DAT_EP_PARAM_MASK;
/// Bit 17: `ep_attr.request_completion_flags`.
pub const DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS: DAT_EP_PARAM_MASK =
    0x00020000 as DAT_EP_PARAM_MASK;
/// Bit 18: `ep_attr.max_recv_dtos`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS: DAT_EP_PARAM_MASK = 0x00040000 as DAT_EP_PARAM_MASK;
/// Bit 19: `ep_attr.max_request_dtos`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS: DAT_EP_PARAM_MASK =
    0x00080000 as DAT_EP_PARAM_MASK;
/// Bit 20: `ep_attr.max_recv_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV: DAT_EP_PARAM_MASK = 0x00100000 as DAT_EP_PARAM_MASK;
/// Bit 21: `ep_attr.max_request_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV: DAT_EP_PARAM_MASK = 0x00200000 as DAT_EP_PARAM_MASK;
/// Bit 22: `ep_attr.max_rdma_read_in`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN: DAT_EP_PARAM_MASK =
    0x00400000 as DAT_EP_PARAM_MASK;
/// Bit 23: `ep_attr.max_rdma_read_out`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT: DAT_EP_PARAM_MASK =
    0x00800000 as DAT_EP_PARAM_MASK;
/// Bit 24: `ep_attr.srq_soft_hw`.
pub const DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW: DAT_EP_PARAM_MASK = 0x01000000 as DAT_EP_PARAM_MASK;
/// Bit 25: `ep_attr.max_rdma_read_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV: DAT_EP_PARAM_MASK =
    0x02000000 as DAT_EP_PARAM_MASK;
/// Bit 26: `ep_attr.max_rdma_write_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV: DAT_EP_PARAM_MASK =
    0x04000000 as DAT_EP_PARAM_MASK;
/// Bit 27: `ep_attr.ep_transport_specific_count`.
pub const DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR: DAT_EP_PARAM_MASK =
    0x08000000 as DAT_EP_PARAM_MASK;
/// Bit 28: `ep_attr.ep_transport_specific`.
pub const DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR: DAT_EP_PARAM_MASK =
    0x10000000 as DAT_EP_PARAM_MASK;
/// Bit 29: `ep_attr.ep_provider_specific_count`.
pub const DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR: DAT_EP_PARAM_MASK =
    0x20000000 as DAT_EP_PARAM_MASK;
/// Bit 30: `ep_attr.ep_provider_specific`.
pub const DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR: DAT_EP_PARAM_MASK =
    0x40000000 as DAT_EP_PARAM_MASK;
/// Bits 12-30: every `ep_attr` field (0x7FFFF000).
pub const DAT_EP_FIELD_EP_ATTR_ALL: DAT_EP_PARAM_MASK = 0x7FFFF000 as DAT_EP_PARAM_MASK;
/// Bits 0-10 and 12-30: every EP parameter (0x7FFFF7FF).
pub const DAT_EP_FIELD_ALL: DAT_EP_PARAM_MASK = 0x7FFFF7FF as DAT_EP_PARAM_MASK;

// ===========================================================================
// Counts with special meaning
// ===========================================================================

/// No watermark / unlimited (-1).
pub const DAT_WATERMARK_INFINITE: DAT_COUNT = !0 as DAT_COUNT;
/// Let the hardware choose (-1).
pub const DAT_HW_DEFAULT: DAT_COUNT = DAT_WATERMARK_INFINITE;
/// Default SRQ low watermark.
pub const DAT_SRQ_LW_DEFAULT: DAT_COUNT = 0x0;
/// The value is not known (-2).
pub const DAT_VALUE_UNKNOWN: DAT_COUNT = (!0 as DAT_COUNT) - 1;
