//! The TCP transport's capabilities: its engine's and MPA's limits, and
//! queue depths sized from the host's memory (rulings: transport limits).

use crate::transport::iwarp::{conn, setup, QUEUE_ENTRY_BYTES};
use crate::transport::Capabilities;

/// The TCP transport's capabilities with the smallest queue limits it ever
/// offers (what the DAT-era hardware offered, rulings: transport limits);
/// [`software_capabilities`] sizes the queues from the host's memory.
pub const SOFTWARE_CAPABILITIES: Capabilities = Capabilities {
    vendor: "udapl-rs software RDMA",
    hw_version: (1, 0),
    fw_version: (1, 0),
    max_qp: 65_536,
    max_qp_wr: MIN_QUEUE_WR,
    // The iWARP engine's work requests carry up to this many elements.
    max_sge: conn::MAX_SGE as u32,
    max_sge_rd: conn::MAX_SGE as u32,
    max_sge_wr: conn::MAX_SGE as u32,
    max_cq: 65_536,
    max_cqe: 1 << 24,
    max_mr: 262_144,
    max_mr_size: 1 << 40,
    max_va: (1 << 47) - 1,
    max_pd: 65_536,
    max_msg_size: 1 << 31,
    max_rdma_size: 1 << 31,
    max_mw: 262_144,
    max_srq: 4_096,
    max_srq_wr: MIN_QUEUE_WR,
    max_qp_per_srq: 65_536,
    max_ird: 64,
    max_ord: 64,
    max_ird_total: 65_536,
    max_ord_total: 65_536,
    // MPA's private data less the IRD/ORD word of enhanced setup.
    max_private_data: setup::CONSUMER_PD_MAX_ENHANCED as u32,
    solicited_events: true,
    unsignalled: true,
    fence: true,
    multipath: false,
    buffer_alignment: 64,
};

/// The fewest work requests a software queue offers.
pub const MIN_QUEUE_WR: u32 = 65_536;
/// The most, however large the host.
pub const MAX_QUEUE_WR: u32 = 1 << 20;

/// The TCP transport's capabilities on this host: a queue may be as deep
/// as lets one queue pair with full send and receive queues (their entries
/// and completions, [`QUEUE_ENTRY_BYTES`] each) use 1/64 of physical
/// memory, between [`MIN_QUEUE_WR`] and [`MAX_QUEUE_WR`]. A queue's memory
/// is written only as deep as it has been used ([`crate::ring`]), so a deep
/// queue costs what it holds.
pub fn software_capabilities() -> &'static Capabilities {
    static CAPS: std::sync::OnceLock<Capabilities> = std::sync::OnceLock::new();
    CAPS.get_or_init(|| {
        // Physical memory, from /proc/meminfo's MemTotal (kB); the least
        // depth when it cannot be read.
        let mem = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024);
        let depth = queue_depth_for(mem);
        Capabilities {
            max_qp_wr: depth,
            max_srq_wr: depth,
            ..SOFTWARE_CAPABILITIES
        }
    })
}

/// [`software_capabilities`]' queue depth for `mem` bytes of memory.
pub fn queue_depth_for(mem: u64) -> u32 {
    let depth = mem / 64 / QUEUE_ENTRY_BYTES as u64;
    u32::try_from(depth)
        .unwrap_or(u32::MAX)
        .clamp(MIN_QUEUE_WR, MAX_QUEUE_WR)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rulings, transport limits: DAT-era benchmarks ask for 50,000
    /// outstanding requests per queue, more than 16,384.
    #[test]
    fn queue_limits_come_from_memory_and_are_at_least_the_hardware_s() {
        assert_eq!(queue_depth_for(0), MIN_QUEUE_WR);
        assert_eq!(queue_depth_for(1 << 30), MIN_QUEUE_WR, "a 1 GiB guest");
        let d = queue_depth_for(24 << 30);
        assert!(d > 500_000 && d < MAX_QUEUE_WR, "24 GiB: {d}");
        assert_eq!(queue_depth_for(1 << 40), MAX_QUEUE_WR);
        let c = software_capabilities();
        assert!(c.max_qp_wr >= 65_535 && c.max_srq_wr == c.max_qp_wr);
    }

    #[test]
    fn private_data_is_mpa_s_less_the_ird_ord_word() {
        assert_eq!(SOFTWARE_CAPABILITIES.max_private_data, 252);
    }
}
