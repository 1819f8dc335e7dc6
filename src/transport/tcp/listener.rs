//! A listening port: takes TCP connections and hands them to the device as
//! pending connection requests (their MPA Request is read by the device).

use std::net::{Shutdown, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::{
    socket::{tune_socket, write_small},
    state::{DeviceShared, Pending, MAX_FPDU},
};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{CmHandler, DeviceError, Listener};
use crate::transport::iwarp::setup::{Responder, ResponderConfig, MAX_PD_IN, REQUEST_TIMEOUT};
use crate::transport::soft::progress::{self, Reg, Run, Source};

/// A listening port of an [`IwarpDevice`](super::IwarpDevice).
pub struct IwarpListener {
    /// Watched by the progress thread (dropped before the sockets).
    pub(super) regs: Mutex<Vec<Reg>>,
    pub(super) dev: Weak<DeviceShared>,
    /// The device's address, then loopback if that is another address;
    /// emptied by [`Listener::close`].
    pub(super) socks: Mutex<Vec<TcpListener>>,
    pub(super) port: u16,
    pub(super) cm: Arc<dyn CmHandler>,
}

impl IwarpListener {
    pub(super) fn progress(&self) -> bool {
        let Some(dev) = self.dev.upgrade() else {
            return false;
        };
        let mut any = false;
        let socks = lock(&self.socks);
        for (s, _) in socks
            .iter()
            .flat_map(|l| std::iter::from_fn(|| l.accept().ok()))
        {
            any = true;
            if s.set_nonblocking(true).is_err()
                || s.set_nodelay(true).is_err()
                || tune_socket(&s, &dev.opts).is_err()
            {
                continue;
            }
            let id = dev.next_req.fetch_add(1, Ordering::Relaxed);
            let src: Weak<dyn Source> = dev.me.clone();
            let Ok(reg) = progress::register(s.as_fd(), src) else {
                continue;
            };
            let deadline = Instant::now() + REQUEST_TIMEOUT;
            reg.schedule(deadline);
            lock(&dev.pending).insert(
                id,
                Pending {
                    reg: Some(reg),
                    stream: s,
                    resp: Responder::new(ResponderConfig {
                        crc_requested: dev.opts.crc,
                        max_pd_in: MAX_PD_IN,
                        max_fpdu: MAX_FPDU,
                    }),
                    deadline,
                    reported: false,
                    cm: self.cm.clone(),
                    port: self.port,
                },
            );
        }
        any
    }
}

impl Drop for IwarpListener {
    /// Requests that arrived on this listener and were never answered go
    /// with it (their connections are closed).
    fn drop(&mut self) {
        if let Some(dev) = self.dev.upgrade() {
            let me = Arc::as_ptr(&self.cm) as *const ();
            lock(&dev.pending)
                .retain(|_, p| !(p.port == self.port && Arc::as_ptr(&p.cm) as *const () == me));
        }
    }
}

impl Source for IwarpListener {
    fn run(&self) -> Run {
        self.progress();
        if let Some(dev) = self.dev.upgrade() {
            dev.progress_pending();
        }
        Run::default()
    }
}

impl Listener for IwarpListener {
    fn port(&self) -> u16 {
        self.port
    }

    fn reject(&self, request: u64, private_data: &[u8]) -> Result<(), DeviceError> {
        let dev = self.dev.upgrade().ok_or(DeviceError::NotFound)?;
        let mut p = lock(&dev.pending);
        let pend = p.get_mut(&request).ok_or(DeviceError::NotFound)?;
        let reply = pend.resp.reject(private_data).map_err(|e| {
            if e.is_invalid_parameter() {
                DeviceError::Invalid
            } else {
                DeviceError::State
            }
        })?;
        if let Some(pend) = p.remove(&request) {
            write_small(&pend.stream, &reply);
            let _ = pend.stream.shutdown(Shutdown::Write);
        }
        Ok(())
    }

    fn close(&self) {
        // Registrations go before the sockets they watch.
        drop(std::mem::take(&mut *lock(&self.regs)));
        drop(std::mem::take(&mut *lock(&self.socks)));
    }
}
