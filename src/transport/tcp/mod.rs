//! The TCP driver: the iWARP protocol ([`super::iwarp`]) over kernel TCP
//! sockets, behind the transport interface: [`IwarpDevice`] with its
//! [`IwarpQp`], [`IwarpListener`] and [`IwarpSrq`].
//!
//! - Sockets, listeners and pending requests are run by the background
//!   progress thread on every arrival and deadline (a queue pair's input
//!   only while no application thread drives its completion queues).
//! - All `unsafe` of the driver is in `socket` (socket calls); application
//!   memory moves only through [`crate::transport::soft::memio`].
//! - Objects made before a `fork()` are the parent's in the child: they
//!   refuse work and their closing leaves shared kernel state alone.
//!
//! Modules depend one way, bottom up: `socket` and `setup_read`; `state`
//! (the queue pair's and the device's shared state); `tx`, `rx`; `cm`;
//! `drive`; `qp`; `srq`, `listener`; `device`.
//!
//! docs/transport.md describes the data path, RNR and overruns.

pub mod capabilities;
mod cm;
pub mod device;
mod drive;
pub mod listener;
pub mod options;
mod ports;
pub mod qp;
mod rx;
mod setup_read;
mod socket;
pub mod srq;
mod state;
#[cfg(test)]
mod tests;
mod tx;

pub use device::{IwarpDevice, DEFAULT_RNR_TIMEOUT};
pub use listener::IwarpListener;
pub use options::DeviceOptions;
pub use srq::IwarpSrq;
pub use state::DeviceShared;
pub use state::IwarpQp;
