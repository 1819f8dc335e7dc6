//! The software RDMA NIC's protocol: iWARP (MPA framing over TCP, DDP
//! placement, RDMAP operations), spoken from user space.
//!
//! - [`wire`]: the pure codec — MPA setup frames, FPDU framing with CRC32c,
//!   DDP/RDMAP headers and Terminate messages. No sockets, no threads.
//! - [`conn`]: one established connection's protocol engine, without I/O:
//!   queues, MSNs, read tracking, acknowledgements, RNR, Terminate, flush.
//! - [`setup`]: MPA connection setup without I/O: Request/Reply, IRD/ORD
//!   negotiation, peer-to-peer RTR; produces [`conn::Negotiated`].

pub mod conn;
pub mod setup;
pub mod wire;

/// Memory one work request of a queue pair takes when its queues are full:
/// a send-queue entry, a receive-queue entry and a completion for each.
pub const QUEUE_ENTRY_BYTES: usize = conn::SQ_ENTRY_BYTES
    + conn::RQ_ENTRY_BYTES
    + 2 * std::mem::size_of::<crate::transport::api::Wc>();
