//! The transport interface: a narrow reliable-connection queue-pair model,
//! like a verbs RC QP plus a connection manager. The DAT object layer drives
//! it; a transport never sees DAT objects, handles or events.
//!
//! ```text
//!   object layer (EP, PSP/RSP/CR, LMR/RMR, EVD)
//!        │  Device / QueuePair / Listener calls        ▲ Completion / CmEvent
//!        ▼                                             │ through the sinks
//!   transport: tcp (software, sockets) · shm (same host) · verbs (rdma-core)
//! ```
//!
//! Shape of the interface (the endpoint layer that uses it comes with
//! connections):
//! - [`Device`]: an opened adapter. Registers memory ([`MemKey`]s that the
//!   remote side names in RDMA operations), creates queue pairs and
//!   listeners, reports its address and limits.
//! - [`QueuePair`]: connect / accept / reject / disconnect, and post
//!   send / recv / RDMA read / RDMA write work requests. Every posted request
//!   completes exactly once, through the QP's [`CompletionSink`], in posting
//!   order per queue; a disconnect flushes what is outstanding.
//! - [`Listener`]: receives connection requests for one port qualifier and
//!   reports them through a [`CmSink`].
//!
//! Transports report asynchronously; the object layer turns completions and
//! connection events into DAT events on the right EVDs.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::error::{DatError, Result, Sub};

pub mod memcheck;
pub mod memio;
mod sys;

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
    max_sge: 64,
    max_sge_rd: 64,
    max_sge_wr: 64,
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
    max_private_data: 256,
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

/// A key naming registered memory on a device (lkey/rkey).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemKey(pub u32);

/// Access rights of a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access {
    pub local_write: bool,
    pub remote_read: bool,
    pub remote_write: bool,
}

/// One scatter/gather element: registered memory named by its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    pub key: MemKey,
    pub addr: u64,
    pub len: u64,
}

/// A work request posted on a queue pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkRequest {
    Send {
        sgl: Vec<Sge>,
        signaled: bool,
        solicited: bool,
    },
    Recv {
        sgl: Vec<Sge>,
    },
    RdmaWrite {
        sgl: Vec<Sge>,
        remote_key: MemKey,
        remote_addr: u64,
        signaled: bool,
    },
    RdmaRead {
        sgl: Vec<Sge>,
        remote_key: MemKey,
        remote_addr: u64,
        signaled: bool,
    },
}

/// Completion status of a work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    Success,
    Flushed,
    LocalLength,
    LocalProtection,
    RemoteAccess,
    Transport,
    ReceiverNotReady,
}

/// The completion of one work request, identified by the id given at post time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub bytes: u64,
}

/// Connection manager events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmEvent {
    /// A connection request arrived on a listener.
    Request {
        id: u64,
        remote: SocketAddr,
        private_data: Vec<u8>,
    },
    Established {
        private_data: Vec<u8>,
    },
    Rejected {
        by_peer: bool,
    },
    Unreachable,
    TimedOut,
    Disconnected,
    Broken,
}

/// Receives completions of a queue pair.
pub trait CompletionSink: Send + Sync {
    fn send_complete(&self, c: Completion);
    fn recv_complete(&self, c: Completion);
}

/// Receives connection manager events.
pub trait CmSink: Send + Sync {
    fn event(&self, e: CmEvent);
}

/// An opened adapter.
pub trait Device: Send + Sync {
    /// The address peers connect to.
    fn address(&self) -> SocketAddr;
    /// Makes `[addr, addr + len)` accessible to the transport.
    fn register(&self, addr: u64, len: u64, access: Access) -> Result<MemKey>;
    /// Revokes a registration.
    fn deregister(&self, key: MemKey);
    /// A new, unconnected queue pair.
    fn create_qp(
        &self,
        completions: std::sync::Arc<dyn CompletionSink>,
        cm: std::sync::Arc<dyn CmSink>,
    ) -> Result<Box<dyn QueuePair>>;
    /// Starts listening on a port qualifier.
    fn listen(&self, port: u64, cm: std::sync::Arc<dyn CmSink>) -> Result<Box<dyn Listener>>;
}

/// A reliable-connection queue pair.
pub trait QueuePair: Send + Sync {
    fn connect(
        &self,
        remote: SocketAddr,
        port: u64,
        private_data: &[u8],
        timeout_us: u32,
    ) -> Result<()>;
    /// Accepts the request `id` of a listener on this QP.
    fn accept(&self, id: u64, private_data: &[u8]) -> Result<()>;
    fn disconnect(&self, graceful: bool) -> Result<()>;
    fn post(&self, wr_id: u64, wr: WorkRequest) -> Result<()>;
}

/// A listening port qualifier.
pub trait Listener: Send + Sync {
    fn reject(&self, id: u64) -> Result<()>;
}
