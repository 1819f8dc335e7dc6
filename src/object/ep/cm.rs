//! Connection management of an EP: connect, disconnect, reset, the passive
//! side's reserve/accept/reject glue and the transport's connection events.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::Handle;
use crate::object::event::{self, Event, EventData};
use crate::object::lock_anyway;
use crate::transport::api::{CmEvent, CmHandler, DeviceError, QpNum, QueuePair};
use crate::transport::SockAddrStorage;

use super::attr::{QOS_BEST_EFFORT, QOS_DEFINED};
use super::{device_error, state_error, Ep, EpEvd, EpState, Exposed};

/// The private data of a refusal that is not the consumer's: the active
/// side reports `NON_PEER_REJECTED` for it (docs/endpoints.md).
pub const NON_PEER_MARK: &[u8] = crate::transport::api::REFUSAL_MARK;

/// Whether a rejection's private data is [`NON_PEER_MARK`]: exactly, or
/// followed by zeros where the wire carries no length (InfiniBand's CM
/// delivers the whole REJ private data field).
pub(crate) fn is_non_peer_mark(private_data: &[u8]) -> bool {
    private_data
        .strip_prefix(NON_PEER_MARK)
        .is_some_and(|rest| rest.iter().all(|b| *b == 0))
}

/// `DAT_CLOSE_GRACEFUL_FLAG`.
pub const CLOSE_GRACEFUL: u32 = 1;
/// `DAT_CONNECT_MULTIPATH_FLAG`.
pub const CONNECT_MULTIPATH: u32 = 1;

impl Ep {
    /// `dat_ep_connect`.
    pub fn connect(
        &self,
        remote: SocketAddr,
        qual: u64,
        timeout_us: u32,
        private_data: &[u8],
        qos: u32,
        flags: u32,
    ) -> Result<()> {
        if timeout_us == 0 {
            return Err(DatError::invalid(Input::Timeout));
        }
        if qos & !QOS_DEFINED != 0 {
            return Err(DatError::invalid(Input::Qos));
        }
        if flags & !CONNECT_MULTIPATH != 0 {
            return Err(DatError::invalid(Input::ConnectFlags));
        }
        if qos != QOS_BEST_EFFORT || flags & CONNECT_MULTIPATH != 0 {
            return Err(DatError::of(Type::ModelNotSupported));
        }
        let qp = {
            let mut i = self.inner()?;
            let state = self.state();
            if state != EpState::Unconnected {
                return Err(state_error(state));
            }
            if i.pz.is_none() || i.conn_evd.is_none() {
                return Err(DatError::state(Sub::EpNotReady));
            }
            let qp = self.ensure_qp(&mut i)?;
            i.remote = Some(remote);
            i.remote_port = qual;
            *lock_anyway(&self.exposed) = Exposed {
                private_data: [0; 256],
                remote: SockAddrStorage::from(remote),
            };
            self.set_state(EpState::ActiveConnectionPending);
            qp
        };
        let timeout = if timeout_us == u32::MAX {
            Duration::from_secs(365 * 24 * 3600)
        } else {
            Duration::from_micros(u64::from(timeout_us))
        };
        let port = self.ia.dev.port_of_service(qual);
        if let Err(e) = qp.connect(remote, port, private_data, timeout) {
            let i = lock_anyway(&self.inner);
            if self.state() == EpState::ActiveConnectionPending {
                self.set_state(EpState::Unconnected);
            }
            drop(i);
            return Err(match e {
                DeviceError::Invalid => {
                    DatError::new(Type::InvalidAddress, Sub::AddressUnsupported)
                }
                other => device_error(other),
            });
        }
        // The local port the peer sees as the CR's remote_port_qual.
        if let Some(a) = qp.local_addr() {
            let mut i = lock_anyway(&self.inner);
            if i.local_port == 0 && i.qp.as_ref().is_some_and(|q| q.num() == qp.num()) {
                i.local_port = u64::from(a.port());
            }
        }
        Ok(())
    }

    /// `dat_ep_disconnect`.
    pub fn disconnect(&self, flags: u32) -> Result<()> {
        if flags & !CLOSE_GRACEFUL != 0 {
            return Err(DatError::invalid(Input::CloseFlags));
        }
        let graceful = flags & CLOSE_GRACEFUL != 0;
        let (qp, abort_evd) = {
            let i = self.inner()?;
            let state = self.state();
            match state {
                EpState::ActiveConnectionPending | EpState::CompletionPending => {
                    self.set_state(EpState::Disconnected);
                    (i.qp.clone(), i.conn_evd.clone())
                }
                EpState::Connected => {
                    self.set_state(EpState::DisconnectPending);
                    (i.qp.clone(), None)
                }
                EpState::DisconnectPending => {
                    if graceful {
                        return Ok(());
                    }
                    (i.qp.clone(), None)
                }
                EpState::Disconnected => return Ok(()),
                s => return Err(state_error(s)),
            }
        };
        let aborting = abort_evd.is_some();
        if let Some(qp) = &qp {
            let _ = qp.disconnect(graceful && !aborting);
        }
        if let Some(evd) = abort_evd {
            evd.post_after_completions(
                Event::new(
                    event::CONNECTION_DISCONNECTED,
                    EventData::Connection {
                        ep: self.handle,
                        private_data_size: 0,
                        private_data: 0,
                    },
                ),
                true,
            );
        }
        Ok(())
    }

    /// `dat_ep_reset`.
    pub fn reset(&self) -> Result<()> {
        let old = {
            let mut i = self.inner()?;
            match self.state() {
                EpState::Unconnected => return Ok(()),
                EpState::Disconnected => {}
                s => return Err(state_error(s)),
            }
            let old = self.detach_qp(&mut i);
            i.remote = None;
            i.remote_port = 0;
            i.local_port = 0;
            self.set_state(EpState::Unconnected);
            old
        };
        drop(old);
        Ok(())
    }

    // ───────────────────────────── passive side ─────────────────────────────

    /// Reserves the EP for an RSP (UNCONNECTED → RESERVED).
    pub(crate) fn reserve(&self, rsp: Handle) -> Result<()> {
        let mut i = self.inner()?;
        let s = self.state();
        if s != EpState::Unconnected {
            return Err(state_error(s));
        }
        i.reserved_by = Some(rsp);
        self.set_state(EpState::Reserved);
        Ok(())
    }

    /// The RSP is gone before a request came: back to UNCONNECTED.
    pub(crate) fn unreserve(&self) {
        let mut i = lock_anyway(&self.inner);
        if self.state() == EpState::Reserved {
            i.reserved_by = None;
            self.set_state(EpState::Unconnected);
        }
    }

    /// A request arrived at the RSP that reserved the EP.
    pub(crate) fn request_arrived(&self, remote: SocketAddr, remote_port: u64, qual: u64) -> bool {
        let mut i = lock_anyway(&self.inner);
        if i.freed || self.state() != EpState::Reserved {
            return false;
        }
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
        self.set_state(EpState::PassiveConnectionPending);
        true
    }

    /// A provider-created EP learns its request.
    pub(crate) fn tentative_for(&self, remote: SocketAddr, remote_port: u64, qual: u64) {
        let mut i = lock_anyway(&self.inner);
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
    }

    /// Checks that the EP can accept, builds its queue pair and marks it
    /// COMPLETION_PENDING; the caller then hands the request to the
    /// device. `own` is true for the CR's own EP (RSP, provider PSP).
    pub(crate) fn prepare_accept(
        &self,
        own: bool,
        remote: SocketAddr,
        remote_port: u64,
        qual: u64,
    ) -> Result<Arc<dyn QueuePair>> {
        let mut i = self.inner()?;
        let s = self.state();
        let ok = if own {
            matches!(
                s,
                EpState::PassiveConnectionPending | EpState::TentativeConnectionPending
            )
        } else {
            s == EpState::Unconnected
        };
        if !ok {
            return Err(state_error(s));
        }
        if i.pz.is_none() || i.conn_evd.is_none() {
            return Err(DatError::state(Sub::EpNotReady));
        }
        let qp = self.ensure_qp(&mut i)?;
        i.remote = Some(remote);
        i.remote_port = remote_port;
        i.local_port = qual;
        i.reserved_by = None;
        lock_anyway(&self.exposed).remote = SockAddrStorage::from(remote);
        self.set_state(EpState::CompletionPending);
        Ok(qp)
    }

    /// The peer gave up before the accept reached it.
    pub(crate) fn accept_error(&self) {
        let evd = {
            let i = lock_anyway(&self.inner);
            if self.state() != EpState::CompletionPending {
                return;
            }
            self.set_state(EpState::Disconnected);
            i.conn_evd.clone()
        };
        if let Some(qp) = lock_anyway(&self.inner).qp.clone() {
            let _ = qp.disconnect(false);
        }
        if let Some(evd) = evd {
            evd.post_after_completions(
                Event::new(
                    event::CONNECTION_ACCEPT_COMPLETION_ERROR,
                    EventData::Connection {
                        ep: self.handle,
                        private_data_size: 0,
                        private_data: 0,
                    },
                ),
                true,
            );
        }
    }

    /// The device refused the accept synchronously: undo.
    pub(crate) fn accept_failed(&self, previous: EpState) {
        let _i = lock_anyway(&self.inner);
        if self.state() == EpState::CompletionPending {
            self.set_state(previous);
        }
    }

    /// The CR of the EP was rejected (RSP: back to UNCONNECTED; provider
    /// EP: destroyed).
    pub(crate) fn rejected(&self) {
        let provider = {
            let mut i = lock_anyway(&self.inner);
            i.reserved_by = None;
            i.remote = None;
            i.remote_port = 0;
            i.local_port = 0;
            i.provider_created
        };
        if provider {
            let mut st = self.ia.state();
            let i = lock_anyway(&self.inner);
            if st.remove(self.handle, Sub::HandleEp).is_ok() {
                Self::drop_uses(&i, &mut st);
                self.clear_stream_flags(&i);
            }
            drop(i);
            drop(st);
            self.destroy();
        } else {
            self.set_state(EpState::Unconnected);
        }
    }

    // ──────────────────────────── connection events ────────────────────────────

    fn on_cm(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        let (number, pd_len, evd) = {
            let mut i = lock_anyway(&self.inner);
            if i.freed || i.qp.as_ref().map(|q| q.num()) != qp {
                return;
            }
            let s = self.state();
            let active = s == EpState::ActiveConnectionPending;
            let passive = s == EpState::CompletionPending;
            let live = matches!(s, EpState::Connected | EpState::DisconnectPending);
            let (next, number, pd_len) = match ev {
                CmEvent::Established { private_data } if active => {
                    let n = private_data.len().min(256);
                    lock_anyway(&self.exposed).private_data[..n]
                        .copy_from_slice(&private_data[..n]);
                    (EpState::Connected, event::CONNECTION_ESTABLISHED, n)
                }
                CmEvent::Established { .. } if passive => {
                    (EpState::Connected, event::CONNECTION_ESTABLISHED, 0)
                }
                CmEvent::Rejected { private_data } if active => {
                    let number = if is_non_peer_mark(private_data) {
                        event::CONNECTION_NON_PEER_REJECTED
                    } else {
                        event::CONNECTION_PEER_REJECTED
                    };
                    (EpState::Disconnected, number, 0)
                }
                CmEvent::Refused if active => (
                    EpState::Disconnected,
                    event::CONNECTION_NON_PEER_REJECTED,
                    0,
                ),
                CmEvent::Unreachable if active => {
                    (EpState::Disconnected, event::CONNECTION_UNREACHABLE, 0)
                }
                CmEvent::TimedOut if active => {
                    (EpState::Disconnected, event::CONNECTION_TIMED_OUT, 0)
                }
                CmEvent::Disconnected | CmEvent::Broken if active => (
                    EpState::Disconnected,
                    event::CONNECTION_NON_PEER_REJECTED,
                    0,
                ),
                CmEvent::AcceptFailed
                | CmEvent::TimedOut
                | CmEvent::Broken
                | CmEvent::Disconnected
                | CmEvent::Unreachable
                | CmEvent::Refused
                | CmEvent::Rejected { .. }
                    if passive =>
                {
                    (
                        EpState::Disconnected,
                        event::CONNECTION_ACCEPT_COMPLETION_ERROR,
                        0,
                    )
                }
                CmEvent::Disconnected if live => {
                    (EpState::Disconnected, event::CONNECTION_DISCONNECTED, 0)
                }
                CmEvent::Broken if live => (EpState::Disconnected, event::CONNECTION_BROKEN, 0),
                _ => return,
            };
            self.set_state(next);
            if next == EpState::Connected && i.local_port == 0 {
                if let Some(a) = i.qp.as_ref().and_then(|q| q.local_addr()) {
                    i.local_port = u64::from(a.port());
                }
            }
            (number, pd_len, i.conn_evd.clone())
        };
        self.post_cm(number, pd_len, evd);
    }

    fn post_cm(&self, number: u32, pd_len: usize, evd: Option<Arc<dyn EpEvd>>) {
        if let Some(evd) = evd {
            let pd_ptr = if pd_len > 0 {
                lock_anyway(&self.exposed).private_data.as_ptr() as usize
            } else {
                0
            };
            let ev = Event::new(
                number,
                EventData::Connection {
                    ep: self.handle,
                    private_data_size: i32::try_from(pd_len).unwrap_or(0),
                    private_data: pd_ptr,
                },
            );
            evd.post_after_completions(ev, true);
        }
    }
}

/// The connection-event handler of an EP's queue pair.
pub(super) struct EpCm {
    pub(super) ep: Weak<Ep>,
}

impl CmHandler for EpCm {
    fn event(&self, qp: Option<QpNum>, ev: CmEvent<'_>) {
        if let Some(ep) = self.ep.upgrade() {
            ep.on_cm(qp, ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PSC_12/RSC_08 over InfiniBand: the refusal's mark arrives padded to
    /// the REJ's 148 bytes and must still read as a non-peer rejection.
    #[test]
    fn non_peer_mark_exact_or_zero_padded() {
        assert!(is_non_peer_mark(NON_PEER_MARK));
        let mut padded = NON_PEER_MARK.to_vec();
        padded.resize(148, 0);
        assert!(is_non_peer_mark(&padded));
        padded[100] = 1;
        assert!(!is_non_peer_mark(&padded));
        assert!(!is_non_peer_mark(&[]));
        assert!(!is_non_peer_mark(&[0u8; 148]));
        assert!(!is_non_peer_mark(&NON_PEER_MARK[..4]));
    }
}
