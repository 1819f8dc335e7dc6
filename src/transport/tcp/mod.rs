//! The TCP driver: the iWARP protocol ([`super::iwarp`]) over kernel TCP
//! sockets, behind the transport interface: [`IwarpDevice`] with its
//! [`IwarpQp`], [`IwarpListener`] and [`IwarpSrq`].
//!
//! Invariants: all `unsafe` of the driver is in `socket` (socket calls);
//! application memory moves only through [`crate::transport::soft::memio`];
//! objects made before a `fork()` refuse work in the child. Modules depend
//! one way, bottom up: `socket` and `setup_read`; `state`; `tx`, `rx`; `cm`;
//! `drive`; `qp`; `srq`, `listener`; `device`. docs/transport.md describes
//! the data path, progress, RNR and overruns.

pub mod capabilities;
mod cm;
pub mod device;
mod drive;
pub mod listener;
pub mod options;
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
