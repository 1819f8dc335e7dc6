//! `dat_ia_query` attribute values: derived here from the transport's
//! device capabilities and the DAT layer's own features; the C layer only
//! copies them into `DAT_IA_ATTR` / `DAT_PROVIDER_ATTR`.

use crate::object::segment::MAX_IOV;
use crate::transport::Capabilities;

/// `DAT_MEM_TYPE` values.
pub const MEM_TYPE_VIRTUAL: u32 = 0;
pub const MEM_TYPE_LMR: u32 = 1;
pub const MEM_TYPE_SHARED_VIRTUAL: u32 = 2;
pub const MEM_TYPE_SO_VIRTUAL: u32 = 3;

/// `DAT_COMPLETION_*_FLAG` bits.
pub const COMPLETION_SUPPRESS: u32 = 0x01;
pub const COMPLETION_SOLICITED_WAIT: u32 = 0x02;
pub const COMPLETION_UNSIGNALLED: u32 = 0x04;
pub const COMPLETION_BARRIER_FENCE: u32 = 0x08;
pub const COMPLETION_EVD_THRESHOLD: u32 = 0x10;

/// `DAT_IOV_CONSUMER`: the consumer owns its IOV again when the post returns.
pub const IOV_CONSUMER: u32 = 0;
/// `DAT_QOS_BEST_EFFORT`.
pub const QOS_BEST_EFFORT: u32 = 0;
/// `DAT_PSP_CREATES_EP_NEVER`, `DAT_PSP_CREATES_EP_IFASKED`.
pub const PSP_CREATES_EP_NEVER: u32 = 0;
pub const PSP_CREATES_EP_IFASKED: u32 = 1;
/// `DAT_PZ_UNIQUE`.
pub const PZ_UNIQUE: u32 = 0;

/// The name this library reports as its provider.
pub const PROVIDER_NAME: &str = "udapl-rs";

/// Capacity limits reported by `dat_ia_query` and enforced by the creators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_eps: i32,
    pub max_dto_per_ep: i32,
    pub max_rdma_read_per_ep_in: i32,
    pub max_rdma_read_per_ep_out: i32,
    pub max_evds: i32,
    pub max_evd_qlen: i32,
    pub max_iov_segments_per_dto: i32,
    pub max_lmrs: i32,
    pub max_lmr_block_size: u64,
    pub max_lmr_virtual_address: u64,
    pub max_pzs: i32,
    pub max_message_size: u64,
    pub max_rdma_size: u64,
    pub max_rmrs: i32,
    pub max_rmr_target_address: u64,
    pub max_srqs: i32,
    pub max_ep_per_srq: i32,
    pub max_recv_per_srq: i32,
    pub max_iov_segments_per_rdma_read: i32,
    pub max_iov_segments_per_rdma_write: i32,
    pub max_rdma_read_in: i32,
    pub max_rdma_read_out: i32,
    /// Not a 1.2 attribute; bounds CNOs per IA.
    pub max_cnos: i32,
}

/// Values of `DAT_IA_ATTR` (the name and address come from the IA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IaAttributes {
    pub vendor_name: &'static str,
    pub hardware_version: (u32, u32),
    pub firmware_version: (u32, u32),
    pub limits: Limits,
    pub max_rdma_read_per_ep_in_guaranteed: bool,
    pub max_rdma_read_per_ep_out_guaranteed: bool,
}

/// Values of `DAT_PROVIDER_ATTR` (the DAT version and thread safety come
/// from the IA's registry entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderAttributes {
    pub provider_name: &'static str,
    pub provider_version: (u32, u32),
    /// The union of the supported `DAT_MEM_TYPE` values.
    pub lmr_mem_types_supported: u32,
    pub iov_ownership_on_return: u32,
    pub dat_qos_supported: u32,
    pub completion_flags_supported: u32,
    pub max_private_data_size: i32,
    pub supports_multipath: bool,
    pub ep_creator: u32,
    pub pz_support: u32,
    pub optimal_buffer_alignment: u32,
    /// Every pair of event streams may share an EVD.
    pub evd_stream_merging_supported: bool,
    pub srq_supported: bool,
    pub srq_watermarks_supported: i32,
    pub srq_ep_pz_difference_supported: bool,
    pub srq_info_supported: i32,
    pub ep_recv_info_supported: i32,
    pub lmr_sync_req: bool,
    pub dto_async_return_guaranteed: bool,
    pub rdma_write_for_rdma_read_req: bool,
}

fn count(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl Limits {
    /// The DAT limits of a device.
    pub fn from_capabilities(c: &Capabilities) -> Limits {
        Limits {
            max_eps: count(c.max_qp),
            max_dto_per_ep: count(c.max_qp_wr),
            max_rdma_read_per_ep_in: count(c.max_ird),
            max_rdma_read_per_ep_out: count(c.max_ord),
            max_evds: count(c.max_cq),
            max_evd_qlen: count(c.max_cqe),
            // No more than a post's scatter list holds (segment.rs).
            max_iov_segments_per_dto: count(c.max_sge.min(MAX_IOV as u32)),
            max_lmrs: count(c.max_mr),
            max_lmr_block_size: c.max_mr_size,
            max_lmr_virtual_address: c.max_va,
            max_pzs: count(c.max_pd),
            max_message_size: c.max_msg_size,
            max_rdma_size: c.max_rdma_size,
            max_rmrs: count(c.max_mw),
            max_rmr_target_address: c.max_va,
            max_srqs: count(c.max_srq),
            max_ep_per_srq: count(c.max_qp_per_srq),
            max_recv_per_srq: count(c.max_srq_wr),
            max_iov_segments_per_rdma_read: count(c.max_sge_rd.min(MAX_IOV as u32)),
            max_iov_segments_per_rdma_write: count(c.max_sge_wr.min(MAX_IOV as u32)),
            max_rdma_read_in: count(c.max_ird_total),
            max_rdma_read_out: count(c.max_ord_total),
            // CNOs exist only in the DAT layer.
            max_cnos: 65_536,
        }
    }
}

impl IaAttributes {
    /// The IA attributes of a device.
    pub fn of(c: &Capabilities) -> IaAttributes {
        IaAttributes {
            vendor_name: c.vendor,
            hardware_version: c.hw_version,
            firmware_version: c.fw_version,
            limits: Limits::from_capabilities(c),
            max_rdma_read_per_ep_in_guaranteed: true,
            max_rdma_read_per_ep_out_guaranteed: true,
        }
    }
}

impl ProviderAttributes {
    /// The provider attributes over a device.
    pub fn of(c: &Capabilities) -> ProviderAttributes {
        let mut completion = COMPLETION_SUPPRESS | COMPLETION_EVD_THRESHOLD;
        if c.solicited_events {
            completion |= COMPLETION_SOLICITED_WAIT;
        }
        if c.unsignalled {
            completion |= COMPLETION_UNSIGNALLED;
        }
        if c.fence {
            completion |= COMPLETION_BARRIER_FENCE;
        }
        ProviderAttributes {
            provider_name: PROVIDER_NAME,
            provider_version: (1, 0),
            lmr_mem_types_supported: MEM_TYPE_VIRTUAL | MEM_TYPE_LMR | MEM_TYPE_SHARED_VIRTUAL,
            iov_ownership_on_return: IOV_CONSUMER,
            dat_qos_supported: QOS_BEST_EFFORT,
            completion_flags_supported: completion,
            max_private_data_size: count(c.max_private_data),
            supports_multipath: c.multipath,
            ep_creator: PSP_CREATES_EP_IFASKED,
            pz_support: PZ_UNIQUE,
            optimal_buffer_alignment: c.buffer_alignment,
            evd_stream_merging_supported: true,
            srq_supported: c.max_srq > 0,
            srq_watermarks_supported: 0,
            srq_ep_pz_difference_supported: false,
            srq_info_supported: 1,
            ep_recv_info_supported: 1,
            lmr_sync_req: false,
            dto_async_return_guaranteed: false,
            rdma_write_for_rdma_read_req: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::SOFTWARE_CAPABILITIES;

    #[test]
    fn mem_types_are_the_union_of_the_three() {
        let p = ProviderAttributes::of(&SOFTWARE_CAPABILITIES);
        assert_eq!(p.lmr_mem_types_supported, 3);
        assert_ne!(p.lmr_mem_types_supported & MEM_TYPE_LMR, 0);
    }

    #[test]
    fn completion_flags_follow_the_device() {
        let mut c = SOFTWARE_CAPABILITIES;
        assert_eq!(ProviderAttributes::of(&c).completion_flags_supported, 0x1f);
        c.fence = false;
        c.solicited_events = false;
        assert_eq!(ProviderAttributes::of(&c).completion_flags_supported, 0x15);
    }

    /// PRV_18 over rxe (32 SGEs): the IA and EP limits stop at what a post
    /// carries, so that posting the reported maximum works.
    #[test]
    fn iov_limits_stop_at_what_a_post_holds() {
        let mut c = SOFTWARE_CAPABILITIES;
        c.max_sge = 32;
        c.max_sge_rd = 32;
        c.max_sge_wr = 30;
        let l = Limits::from_capabilities(&c);
        assert_eq!(l.max_iov_segments_per_dto, MAX_IOV as i32);
        assert_eq!(l.max_iov_segments_per_rdma_read, MAX_IOV as i32);
        assert_eq!(l.max_iov_segments_per_rdma_write, MAX_IOV as i32);
        c.max_sge_rd = 1;
        assert_eq!(
            Limits::from_capabilities(&c).max_iov_segments_per_rdma_read,
            1
        );
    }
}
