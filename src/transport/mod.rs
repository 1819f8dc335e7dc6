//! Transports: how the DAT layer reaches a network.
//!
//! - [`verbs`]: the queue-pair interface every transport implements
//!   (verbs + rdma_cm shaped: devices, protection domains, memory
//!   registrations and windows, completion queues, shared receive queues,
//!   queue pairs, listeners, progress).
//! - [`Capabilities`]: what a device can do; the DAT layer derives every
//!   `dat_ia_query` attribute from it.
//! - [`memcheck`]: whether memory can be registered (mapped, readable,
//!   writable, shared), without reading `/proc/self/maps`.
//! - Addressing: the IA address of a device configuration, the Linux
//!   `sockaddr` layout, and the DAT connection qualifier → TCP port map.
//!
//! ```text
//!   DAT object layer (EP, PSP/RSP/CR, LMR/RMR, EVD)
//!        │  Device / QueuePair / Listener calls      ▲ polled completions,
//!        ▼                                           │ connection events
//!   transport: iWARP over TCP (software) · shm (same host) · rdma-core verbs
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::error::{DatError, Result, Sub};

pub mod iwarp;
pub mod memcheck;
pub mod memio;
mod sys;
pub mod verbs;

/// What a device can do, in transport terms (like verbs' device
/// attributes). The DAT layer derives every `dat_ia_query` attribute from
/// these; a transport fills them in for its devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Vendor name reported to consumers.
    pub vendor: &'static str,
    /// Hardware and firmware versions (major, minor).
    pub hw_version: (u32, u32),
    pub fw_version: (u32, u32),
    /// Queue pairs per device.
    pub max_qp: u32,
    /// Work requests per queue (send or receive).
    pub max_qp_wr: u32,
    /// Scatter/gather elements per send or receive work request.
    pub max_sge: u32,
    /// Scatter/gather elements per RDMA read and per RDMA write.
    pub max_sge_rd: u32,
    pub max_sge_wr: u32,
    /// Completion queues per device, entries per completion queue.
    pub max_cq: u32,
    pub max_cqe: u32,
    /// Memory regions, their largest size, the highest registrable address.
    pub max_mr: u32,
    pub max_mr_size: u64,
    pub max_va: u64,
    /// Protection domains.
    pub max_pd: u32,
    /// Largest message (send) and RDMA transfer.
    pub max_msg_size: u64,
    pub max_rdma_size: u64,
    /// Memory windows.
    pub max_mw: u32,
    /// Shared receive queues, receives per SRQ, queue pairs per SRQ.
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_qp_per_srq: u32,
    /// Inbound (IRD) and outbound (ORD) RDMA reads in flight per queue pair,
    /// and for the whole device.
    pub max_ird: u32,
    pub max_ord: u32,
    pub max_ird_total: u32,
    pub max_ord_total: u32,
    /// Connection private data, bytes.
    pub max_private_data: u32,
    /// Completion features.
    pub solicited_events: bool,
    pub unsignalled: bool,
    pub fence: bool,
    /// Shared receive queues exist.
    pub srq: bool,
    /// Several paths per connection.
    pub multipath: bool,
    /// Best buffer alignment, bytes.
    pub buffer_alignment: u32,
}

/// The software transports (TCP, shared memory): limits are those of the
/// host, bounded to keep queue allocations sane.
pub const SOFTWARE_CAPABILITIES: Capabilities = Capabilities {
    vendor: "udapl-rs software RDMA",
    hw_version: (1, 0),
    fw_version: (1, 0),
    max_qp: 65_536,
    max_qp_wr: 16_384,
    // The iWARP engine's work requests carry up to 8 elements.
    max_sge: 8,
    max_sge_rd: 8,
    max_sge_wr: 8,
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
    max_srq_wr: 65_536,
    max_qp_per_srq: 65_536,
    max_ird: 64,
    max_ord: 64,
    max_ird_total: 65_536,
    max_ord_total: 65_536,
    // 256 bytes on the wire less the MPA IRD/ORD word.
    max_private_data: 252,
    solicited_events: true,
    unsignalled: true,
    fence: true,
    srq: true,
    multipath: false,
    buffer_alignment: 64,
};

/// Which transport an IA uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// Software RC over TCP sockets (works everywhere).
    #[default]
    Tcp,
    /// Software RC over shared memory (peers on the same host).
    Shm,
    /// rdma-core verbs (RDMA NICs).
    Verbs,
}

impl TransportKind {
    /// Parses `tcp`, `shm` or `verbs`.
    pub fn parse(s: &str) -> Option<TransportKind> {
        match s {
            "tcp" => Some(TransportKind::Tcp),
            "shm" => Some(TransportKind::Shm),
            "verbs" => Some(TransportKind::Verbs),
            _ => None,
        }
    }

    /// The capabilities of this transport's devices.
    pub fn capabilities(self) -> &'static Capabilities {
        // Every transport of this build is a software one; the verbs
        // transport will report its device's attributes.
        &SOFTWARE_CAPABILITIES
    }
}

/// How the built-in provider opens a device: from dat.conf instance data.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeviceConfig {
    pub transport: TransportKind,
    /// Network interface whose address is the IA address; `None`: loopback.
    pub netdev: Option<String>,
    /// RDMA port number (verbs).
    pub port: u32,
}

/// The IA address for a device configuration.
pub fn resolve_address(cfg: &DeviceConfig) -> Result<SocketAddr> {
    if cfg.transport == TransportKind::Verbs && !sys::has_rdma_devices() {
        return Err(DatError::resources(Sub::ResourceDevice));
    }
    let ip = match &cfg.netdev {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(name) => sys::interface_address(name).ok_or_else(|| {
            tracing::warn!(netdev = %name, "network interface not found or has no address");
            DatError::resources(Sub::ResourceDevice)
        })?,
    };
    Ok(SocketAddr::new(ip, 0))
}

/// A `struct sockaddr_in` / `sockaddr_in6` in the Linux layout, 8-aligned,
/// big enough for either (the pointee of `DAT_IA_ADDRESS_PTR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct SockAddrStorage {
    pub bytes: [u8; 32],
}

/// `AF_INET` / `AF_INET6` on Linux.
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;

impl From<SocketAddr> for SockAddrStorage {
    fn from(a: SocketAddr) -> Self {
        let mut b = [0u8; 32];
        b[2..4].copy_from_slice(&a.port().to_be_bytes());
        match a {
            SocketAddr::V4(v4) => {
                b[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
                b[4..8].copy_from_slice(&v4.ip().octets());
            }
            SocketAddr::V6(v6) => {
                b[0..2].copy_from_slice(&AF_INET6.to_ne_bytes());
                b[4..8].copy_from_slice(&v6.flowinfo().to_be_bytes());
                b[8..24].copy_from_slice(&v6.ip().octets());
                b[24..28].copy_from_slice(&v6.scope_id().to_ne_bytes());
            }
        }
        SockAddrStorage { bytes: b }
    }
}

/// The TCP port of a DAT connection qualifier: a qualifier that fits in 16
/// bits is the port; a larger one maps to `q % 32001 + 33534`, as OFED's
/// dapl rdma_cm provider does, so that peers running real dapl over iWARP
/// find each other. (Two large qualifiers can share a port.)
pub fn port_of_qualifier(q: u64) -> u16 {
    match u16::try_from(q) {
        Ok(p) => p,
        // q % 32001 < 32001, so the sum is below 65535.
        Err(_) => (q % 32_001 + 33_534) as u16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_map_to_ports_as_ofed_dapl() {
        assert_eq!(port_of_qualifier(0), 0);
        assert_eq!(port_of_qualifier(4791), 4791);
        assert_eq!(port_of_qualifier(65_535), 65_535);
        assert_eq!(port_of_qualifier(65_536), (65_536 % 32_001 + 33_534) as u16);
        assert_eq!(
            port_of_qualifier(u64::MAX),
            (u64::MAX % 32_001 + 33_534) as u16
        );
        for q in [70_000u64, 1 << 40, 123_456_789] {
            let p = port_of_qualifier(q);
            assert!((33_534..65_535).contains(&p));
        }
    }

    #[test]
    fn sockaddr_layout_is_linux() {
        let a: SocketAddr = "10.1.2.3:4791".parse().expect("addr");
        let s = SockAddrStorage::from(a);
        assert_eq!(&s.bytes[0..2], &AF_INET.to_ne_bytes());
        assert_eq!(&s.bytes[2..4], &4791u16.to_be_bytes());
        assert_eq!(&s.bytes[4..8], &[10, 1, 2, 3]);
    }
}
