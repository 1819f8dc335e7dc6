//! The rdma-core transport: the transport interface over libibverbs and
//! librdmacm, for RDMA NICs (InfiniBand, RoCE, iWARP) and the kernel's
//! software devices (rxe, siw). The libraries are loaded at run time when
//! the first verbs IA opens ([`lib`]); nothing links against them.

use std::net::SocketAddr;
use std::sync::Arc;

use super::api::Device;
use super::DeviceConfig;
use crate::error::{DatError, Result, Type};

pub mod discover;
#[allow(unsafe_code)]
pub mod lib;
pub mod sys;

/// Opens the RDMA device and port `cfg` names.
pub fn open(cfg: &DeviceConfig) -> Result<(Arc<dyn Device>, SocketAddr)> {
    let _ = cfg;
    Err(DatError::of(Type::ProviderNotFound))
}
