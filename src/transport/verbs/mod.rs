//! The rdma-core transport: the transport interface over libibverbs and
//! librdmacm, for RDMA NICs (InfiniBand, RoCE, iWARP) and the kernel's
//! software devices (rxe, siw). The libraries are loaded at run time when
//! the first verbs IA opens ([`lib`]); nothing links against them.
//!
//! An IA is one device port, found by binding an rdma_cm id to the
//! address of the network interface bound to it ([`device`]); the event
//! thread ([`events`]) serves rdma_cm and the device's asynchronous events;
//! posts and polls go straight to the device's ops table ([`qp`], [`cq`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use super::api::{CompletionQueue, Device, SharedReceiveQueue};
use super::DeviceConfig;
use crate::error::{DatError, Result, Type};
use crate::sync::lock_anyway;

#[allow(unsafe_code)]
mod device;
pub mod discover;
mod keymap;
#[allow(unsafe_code)]
pub mod lib;
#[allow(unsafe_code)]
mod raw;
mod ring;
pub mod sys;

pub use device::VerbsDevice;
use raw::{
    drain_eventfd, errno, eventfd, set_nonblocking, sockaddr_of, socket_addr_at, write_eventfd, Ptr,
};

/// Scatter/gather elements per work request this transport passes (the
/// array lives on the stack of a post).
pub(crate) const MAX_SGE: usize = 32;

/// Opens the RDMA device and port `cfg` names. Whatever prevents it (no
/// rdma-core, no such device, no address) fails with
/// `DAT_PROVIDER_NOT_FOUND` and one warning line saying why.
pub fn open(cfg: &DeviceConfig) -> Result<(Arc<dyn Device>, SocketAddr)> {
    let fail = |why: String| {
        tracing::warn!("transport=verbs: {why}");
        DatError::of(Type::ProviderNotFound)
    };
    let lib = lib::get().map_err(|e| {
        // Said once: the answer is the same for the life of the process.
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            DatError::of(Type::ProviderNotFound)
        } else {
            fail(format!("rdma-core is not available: {e}"))
        }
    })?;
    let netdev = match (&cfg.netdev, &cfg.device) {
        (Some(n), _) => n.clone(),
        (None, Some(d)) => {
            let port = u8::try_from(cfg.port).unwrap_or(1).max(1);
            discover::netdev_of(&discover::sysfs_root(), d, port).ok_or_else(|| {
                fail(format!(
                    "RDMA device {d} port {port}: no network interface is bound to it"
                ))
            })?
        }
        (None, None) => return Err(fail("neither netdev= nor device= is given".into())),
    };
    let address = super::pick_address(&crate::sys::interface_addresses(), &netdev, cfg.family)
        .ok_or_else(|| fail(format!("network interface {netdev} has no address")))?;
    let dev = VerbsDevice::open(lib, address, &netdev, cfg.device.as_deref()).map_err(fail)?;
    if cfg.device.is_some() && cfg.port != 0 && u32::from(dev.port) != cfg.port {
        return Err(fail(format!(
            "{netdev} is on port {} of its RDMA device, not port {}",
            dev.port, cfg.port
        )));
    }
    Ok((dev, address))
}

fn addr_of<T: ?Sized>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a).cast::<()>() as usize
}

fn lookup<T>(m: &Mutex<HashMap<usize, Ptr<T>>>, key: usize) -> Option<*mut T> {
    lock_anyway(m).get(&key).map(|p| p.0)
}

/// The verbs CQ behind an interface CQ of `dev`.
fn cq_ptr(dev: &VerbsDevice, cq: &Arc<dyn CompletionQueue>) -> Option<*mut sys::ibv_cq> {
    lookup(&dev.cq_ptrs, addr_of(cq))
}

/// The verbs SRQ behind an interface SRQ of `dev`.
fn srq_ptr(dev: &VerbsDevice, srq: &Arc<dyn SharedReceiveQueue>) -> Option<*mut sys::ibv_srq> {
    lookup(&dev.srq_ptrs, addr_of(srq))
}
