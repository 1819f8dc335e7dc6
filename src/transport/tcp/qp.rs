//! The `QueuePair` verbs of [`IwarpQp`]: posting, binding windows,
//! connecting, disconnecting (its state is in `state`).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{
    socket::{set_linger_zero, start_connect},
    state::{IwarpQp, OwnedCmEvent, Phase, Sock, DRAIN_TIMEOUT, MAX_FPDU},
};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{
    Access, BindWr, DeviceError, PostError, QpNum, QpState, QueuePair, RecvWr, SendWr, WcStatus,
};
use crate::transport::iwarp::conn::RqEntry;
use crate::transport::iwarp::setup::{Initiator, InitiatorConfig, MAX_PD_IN, REPLY_TIMEOUT};
use crate::transport::soft::progress;

impl QueuePair for IwarpQp {
    fn num(&self) -> QpNum {
        self.num
    }

    fn state(&self) -> QpState {
        match self.look().phase {
            Phase::Idle => QpState::Idle,
            Phase::Connecting { .. } | Phase::Accepting { .. } => QpState::Connecting,
            Phase::Up(ref up) if up.closing.is_some() => QpState::Disconnecting,
            Phase::Up(_) => QpState::Connected,
            Phase::Draining { .. } | Phase::Closed => QpState::Closed,
        }
    }

    fn post_send(&self, wr: &SendWr<'_>) -> Result<(), PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let mut inner = self.hold();
        let Phase::Up(up) = &mut inner.phase else {
            return Err(PostError::State);
        };
        if up.closing.is_some() {
            return Err(PostError::State);
        }
        // The engine checks against the larger of the two queues' limits.
        if wr.sgl.len() > self.cfg.max_send_sge as usize {
            return Err(PostError::TooManySge);
        }
        up.conn.post_send(wr, &dev.keys)?;
        // Write what the socket takes now; the rest goes out on progress.
        let _ = self.pump_tx(up);
        self.note_tx(&inner);
        Ok(())
    }

    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        if self.srq.is_some() {
            return Err(PostError::Unsupported);
        }
        let mut inner = self.hold();
        match &mut inner.phase {
            Phase::Up(_) if wr.sgl.len() > self.cfg.max_recv_sge as usize => {
                Err(PostError::TooManySge)
            }
            Phase::Up(up) => {
                up.conn.post_recv(wr, &dev.keys)?;
                if up.not_ready.is_some() {
                    // A Send waits for this receive: place it now, and
                    // what arrived behind it (unread while it waited).
                    self.run(inner, true);
                }
                Ok(())
            }
            Phase::Idle | Phase::Connecting { .. } | Phase::Accepting { .. } => {
                let e =
                    RqEntry::check(wr, self.cfg.max_recv_sge as usize, self.cfg.pd.0, &dev.keys)?;
                if inner.pre_recv.len() >= self.cfg.recv_depth as usize || !inner.pre_recv.push(e) {
                    return Err(PostError::QueueFull);
                }
                Ok(())
            }
            Phase::Draining { .. } | Phase::Closed => Err(PostError::State),
        }
    }

    /// Binds (or, with a zero length, unbinds) a window at once and queues
    /// its completion in send-queue order. The registration must be in
    /// the queue pair's protection domain, cover the range, and allow
    /// local write when remote write is granted.
    fn post_bind(&self, wr: &BindWr) -> Result<u32, PostError> {
        if progress::inherited(self.gen) {
            return Err(PostError::State);
        }
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let idx = u32::try_from(wr.window.0).map_err(|_| PostError::Unsupported)?;
        let mut inner = self.hold();
        let Phase::Up(up) = &mut inner.phase else {
            return Err(PostError::State);
        };
        let mut windows = lock(&dev.windows);
        let Some(w) = windows.get_mut(&idx).filter(|w| w.0 == self.cfg.pd.0) else {
            return Err(PostError::Protection(
                crate::transport::api::KeyFault::Domain,
            ));
        };
        let rkey = if wr.len == 0 {
            dev.keys.revoke_remote(idx);
            w.1 = None;
            0
        } else {
            let mut need = Access::LOCAL_READ;
            if wr.access.contains(Access::REMOTE_WRITE) {
                need = need.union(Access::LOCAL_WRITE);
            }
            dev.keys
                .check_local(wr.lkey, wr.addr, wr.len, need, Some(self.cfg.pd.0))
                .map_err(PostError::Protection)?;
            let remote = wr
                .access
                .intersection(Access::REMOTE_READ.union(Access::REMOTE_WRITE));
            let k = dev
                .keys
                .grant_remote(idx, wr.addr, wr.len, remote)
                .map_err(|_| PostError::Unsupported)?;
            w.1 = Some(wr.lkey & crate::transport::soft::keys::INDEX_MASK);
            k
        };
        drop(windows);
        let mut sink = self.sink();
        up.conn
            .post_bind(wr.wr_id, wr.ctx, wr.signaled, WcStatus::Success, &mut sink)?;
        Ok(rkey)
    }

    fn connect(
        &self,
        remote: SocketAddr,
        port: u16,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<(), DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let mut inner = self.hold();
        if !matches!(inner.phase, Phase::Idle) {
            return Err(DeviceError::State);
        }
        let opts = self.dev.upgrade().map(|d| d.opts).unwrap_or_default();
        let init = Initiator::new(InitiatorConfig {
            private_data: private_data.to_vec(),
            crc_requested: opts.crc,
            ird: self.cfg.ird,
            ord: self.cfg.ord,
            ack_reads_wanted: !opts.local_completion,
            max_pd_in: MAX_PD_IN,
            max_fpdu: MAX_FPDU,
        })
        .map_err(|_| DeviceError::Invalid)?;
        let to = SocketAddr::new(remote.ip(), port);
        let timeout = if timeout.is_zero() {
            REPLY_TIMEOUT
        } else {
            timeout
        };
        match start_connect(to) {
            Ok(stream) => {
                self.tx_blocked.store(true, Ordering::Relaxed);
                let stream = Sock::new(stream, self)?;
                let deadline = Instant::now() + timeout;
                stream.wake_at(deadline);
                inner.phase = Phase::Connecting {
                    stream,
                    init: Box::new(init),
                    tcp_up: false,
                    deadline,
                };
                Ok(())
            }
            Err(e) => {
                drop(inner);
                // Refused at once (ECONNREFUSED), no route, bad address: all
                // unreachable; a refusal after EINPROGRESS comes via progress.
                let ev = match e.raw_os_error() {
                    Some(libc::ETIMEDOUT) => OwnedCmEvent::TimedOut,
                    Some(libc::ECONNREFUSED) => OwnedCmEvent::Refused,
                    _ => OwnedCmEvent::Unreachable,
                };
                self.cm_event(ev);
                Ok(())
            }
        }
    }

    fn disconnect(&self, graceful: bool) -> Result<(), DeviceError> {
        if progress::inherited(self.gen) {
            return Err(DeviceError::State);
        }
        let mut inner = self.hold();
        let ev = match std::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Up(mut up) if graceful => {
                // Queued work finishes first (bounded by DRAIN_TIMEOUT);
                // the step that sees the send queue empty closes.
                if up.closing.is_none() {
                    let deadline = Instant::now() + DRAIN_TIMEOUT;
                    up.closing = Some(deadline);
                    up.conn.request_ack();
                    up.stream.wake_at(deadline);
                }
                inner.phase = Phase::Up(up);
                let (_, ev) = self.step(&mut inner, true, false);
                self.note_tx(&inner);
                ev
            }
            Phase::Up(mut up) => {
                // Acknowledgements left for the next step are owed for
                // what already arrived (a NIC would have sent them on
                // receipt): they go before the reset.
                if up.conn.only_acks_due() {
                    let _ = self.pump_tx(&mut up);
                }
                let mut sink = self.sink();
                up.conn.flush(&mut sink);
                set_linger_zero(&up.stream);
                Some(OwnedCmEvent::Disconnected)
            }
            Phase::Connecting { .. } | Phase::Accepting { .. } => {
                self.flush_pre_recv(&mut inner);
                Some(OwnedCmEvent::Disconnected)
            }
            Phase::Idle => {
                inner.phase = Phase::Idle;
                return Err(DeviceError::State);
            }
            p @ (Phase::Draining { .. } | Phase::Closed) => {
                inner.phase = p;
                None
            }
        };
        drop(inner);
        if let Some(ev) = ev {
            self.cm_event(ev);
        }
        Ok(())
    }

    fn reset(&self) -> Result<(), DeviceError> {
        let mut inner = self.hold();
        match inner.phase {
            Phase::Closed | Phase::Draining { .. } | Phase::Idle => {
                self.flush_pre_recv(&mut inner);
                inner.phase = Phase::Idle;
                Ok(())
            }
            _ => Err(DeviceError::State),
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        match &self.look().phase {
            Phase::Up(up) => up.stream.stream.local_addr().ok(),
            Phase::Connecting { stream, .. } => stream.stream.local_addr().ok(),
            _ => None,
        }
    }

    fn recv_outstanding(&self) -> (u32, u32) {
        let inner = self.look();
        let n = match &inner.phase {
            Phase::Up(up) => up.conn.recv_outstanding(),
            _ => inner.pre_recv.len(),
        };
        (n as u32, self.cfg.recv_depth)
    }
}

impl Drop for IwarpQp {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.upgrade() {
            lock(&dev.qps).remove(&self.num);
        }
    }
}
