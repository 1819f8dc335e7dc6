//! Connection management of a queue pair: setup frames read with
//! `MSG_PEEK` and consumed exactly up to what `setup` took (FPDU bytes
//! behind them stay in the socket), the engine built when setup ends, and
//! the connection phases one step moves through (connecting, accepting,
//! up, draining).

use std::io::{ErrorKind, Read};
use std::net::Shutdown;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{
    setup_read::{peek_feed, SetupRead},
    socket::{connect_done, set_linger_zero, tcp_mss, tune_socket, write_small},
    state::{
        EstablishedConn, Inner, IwarpQp, Nudge, OwnedCmEvent, PayloadDest, Phase, PumpStatus, Sock,
        DRAIN_TIMEOUT, LOOKAHEAD, NUDGES, NUDGE_FIRST, PEEK_MAX, SCRATCH,
    },
};
use crate::transport::api::{Wc, WcOp, WcStatus};
use crate::transport::iwarp::conn::{Conn, ConnConfig, ConnState, RxPlan, SharedRecv, TxPlan};
use crate::transport::iwarp::setup::{InitiatorEvent, ResponderEvent};
use crate::transport::iwarp::wire::FpduReader;

impl IwarpQp {
    /// Setup finished: build the engine, replay early receives.
    pub(super) fn go_up(
        &self,
        inner: &mut Inner,
        stream: Sock,
        est: crate::transport::iwarp::setup::Established,
        initiator: bool,
    ) -> Option<OwnedCmEvent> {
        if !est.tx.is_empty() && !write_small(&stream, &est.tx) {
            inner.phase = Phase::Closed;
            self.flush_pre_recv(inner);
            return Some(OwnedCmEvent::Broken);
        }
        let Some(dev) = self.dev.upgrade() else {
            inner.phase = Phase::Closed;
            return None;
        };
        self.overrun.store(false, Ordering::Release);
        let mut negotiated = est.negotiated;
        let mss = tcp_mss(&stream);
        if dev.opts.fpdu_mss {
            if let Some(mss) = mss {
                negotiated.max_fpdu = negotiated.max_fpdu.min(mss);
            }
        }
        // (Ethernet's when the kernel does not say.)
        let segment = mss.unwrap_or(1448) as u64;
        let crc = negotiated.crc;
        let hold_tx = est.hold_tx_until_first_rx;
        let conn = Conn::new(
            ConnConfig {
                send_depth: self.cfg.send_depth,
                recv_depth: self.cfg.recv_depth,
                max_sge: self.cfg.max_send_sge.max(self.cfg.max_recv_sge),
                ord: self.cfg.ord,
                ird: self.cfg.ird,
                qp: self.num,
                pd: self.cfg.pd.0,
            },
            negotiated,
        );
        let Ok(mut conn) = conn else {
            tracing::warn!(qp = self.num, "no memory for the queues: connection broken");
            inner.phase = Phase::Closed;
            self.flush_pre_recv(inner);
            return Some(OwnedCmEvent::Broken);
        };
        if let Some(srq) = &self.srq {
            let shared: Arc<dyn SharedRecv> = srq.clone();
            conn.set_srq(shared);
        }
        if let Some(msn) = est.read_rtr_msn {
            conn.read_rtr_taken(msn);
        }
        let mut sink = self.sink();
        while let Some(e) = inner.pre_recv.pop() {
            // Checked again: the registration may have gone meanwhile.
            if conn.post_recv(&e.as_wr(), &dev.keys).is_err() {
                sink(Wc {
                    wr_id: e.wr_id(),
                    ctx: e.ctx(),
                    implicit: 0,
                    status: WcStatus::LocalProtection,
                    op: WcOp::Recv,
                    byte_len: 0,
                    qp: self.num,
                    solicited: false,
                });
            }
        }
        inner.phase = Phase::Up(Box::new(EstablishedConn {
            stream,
            conn,
            crc,
            txplan: TxPlan::new(),
            tx: Box::default(),
            reader: FpduReader::new(crc),
            rxplan: RxPlan::new(),
            rx: PayloadDest::None,
            not_ready: None,
            closing: None,
            peek: [0; PEEK_MAX],
            peek_len: PEEK_MAX,
            scratch: [0; SCRATCH],
            tail: [0; 3 + 4 + LOOKAHEAD],
            rx_wcs: Vec::with_capacity((self.cfg.send_depth + self.cfg.recv_depth) as usize + 16),
            hold_tx,
            segment,
            nudge: initiator
                .then(|| crate::transport::iwarp::setup::rtr_write(crc).ok())
                .flatten()
                .map(|bytes| {
                    Box::new(Nudge {
                        at: Instant::now() + NUDGE_FIRST,
                        gap: NUDGE_FIRST,
                        left: NUDGES,
                        bytes,
                    })
                }),
        }));
        Some(OwnedCmEvent::Established(est.private_data))
    }
}

impl IwarpQp {
    /// Runs the connection once: writes what is queued, reads and places
    /// what arrived, and writes what that produced (responses and
    /// acknowledgements go at once, as a NIC's would); returns whether
    /// anything happened and the event to report. `thorough`: see
    /// [`IwarpQp::pump_rx`].
    pub(super) fn step(
        &self,
        inner: &mut Inner,
        thorough: bool,
        defer_acks: bool,
    ) -> (bool, Option<OwnedCmEvent>) {
        // Read only where a deadline matters (not on every poll).
        let now = Instant::now;
        match std::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Idle => {
                inner.phase = Phase::Idle;
                (false, None)
            }
            Phase::Closed => (false, None),
            Phase::Connecting {
                stream,
                mut init,
                mut tcp_up,
                deadline,
            } => {
                if !tcp_up {
                    match connect_done(&stream) {
                        None => {}
                        Some(Ok(())) => {
                            let _ = stream.set_nodelay(true);
                            if let Some(dev) = self.dev.upgrade() {
                                let _ = tune_socket(&stream, &dev.opts);
                            }
                            if !write_small(&stream, init.request()) {
                                self.flush_pre_recv(inner);
                                return (true, Some(OwnedCmEvent::Broken));
                            }
                            tcp_up = true;
                        }
                        Some(Err(e)) => {
                            self.flush_pre_recv(inner);
                            let ev = match e.raw_os_error() {
                                Some(libc::ETIMEDOUT) => OwnedCmEvent::TimedOut,
                                Some(libc::ECONNREFUSED) => OwnedCmEvent::Refused,
                                _ => OwnedCmEvent::Unreachable,
                            };
                            return (true, Some(ev));
                        }
                    }
                }
                if tcp_up {
                    match peek_feed(&stream, |b| init.feed(b)) {
                        SetupRead::Event(InitiatorEvent::Established(est)) => {
                            let ev = self.go_up(inner, stream, est, true);
                            return (true, ev);
                        }
                        SetupRead::Event(InitiatorEvent::Rejected { private_data }) => {
                            self.flush_pre_recv(inner);
                            return (true, Some(OwnedCmEvent::Rejected(private_data)));
                        }
                        SetupRead::Failed => {
                            self.flush_pre_recv(inner);
                            return (true, Some(OwnedCmEvent::Broken));
                        }
                        SetupRead::Nothing | SetupRead::Progress => {}
                    }
                }
                if now() >= deadline {
                    self.flush_pre_recv(inner);
                    return (true, Some(OwnedCmEvent::TimedOut));
                }
                inner.phase = Phase::Connecting {
                    stream,
                    init,
                    tcp_up,
                    deadline,
                };
                (false, None)
            }
            Phase::Accepting {
                stream,
                mut resp,
                deadline,
            } => match peek_feed(&stream, |b| resp.feed(b)) {
                SetupRead::Event(ResponderEvent::Established(est)) => {
                    let ev = self.go_up(inner, stream, est, false);
                    (true, ev)
                }
                SetupRead::Event(_) | SetupRead::Failed => {
                    self.flush_pre_recv(inner);
                    (true, Some(OwnedCmEvent::AcceptFailed))
                }
                SetupRead::Nothing | SetupRead::Progress if now() >= deadline => {
                    self.flush_pre_recv(inner);
                    (true, Some(OwnedCmEvent::AcceptFailed))
                }
                SetupRead::Nothing | SetupRead::Progress => {
                    inner.phase = Phase::Accepting {
                        stream,
                        resp,
                        deadline,
                    };
                    (false, None)
                }
            },
            Phase::Draining { stream, deadline } => {
                let mut buf = [0u8; 4096];
                loop {
                    match (&*stream).read(&mut buf) {
                        Ok(0) => return (true, None),
                        Ok(_) => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock && now() < deadline => {
                            inner.phase = Phase::Draining { stream, deadline };
                            return (false, None);
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => return (true, None),
                    }
                }
            }
            Phase::Up(mut up) => {
                let mut any = false;
                let mut out = PumpStatus::Ok;
                if up.nudge.as_ref().is_some_and(|n| now() >= n.at) {
                    Self::nudge(&mut up);
                }
                match self.pump_tx(&mut up) {
                    Ok(a) => any |= a,
                    Err(o) => out = o,
                }
                if matches!(out, PumpStatus::Ok) {
                    let (a, o) = self.pump_rx(&mut up, thorough);
                    any |= a;
                    out = o;
                    // Responses, acknowledgements and Terminates the
                    // receive side queued. An application spinning on the
                    // queues, whose step just placed a message, will most
                    // likely answer it: its post carries the
                    // acknowledgements (a ping-pong wakes the peer once per
                    // message, not twice); its next step sends them if not.
                    // (Whether the queue is still spun on is read now: the
                    // check that ends driving sends what was left before.)
                    let wait = defer_acks
                        && a
                        && matches!(out, PumpStatus::Ok)
                        && up.closing.is_none()
                        && up.conn.only_acks_due()
                        && self.spun();
                    self.acks_left.store(wait, Ordering::Relaxed);

                    if !wait {
                        match self.pump_tx(&mut up) {
                            Ok(a) => any |= a,
                            Err(o) => match out {
                                PumpStatus::Ok => out = o,
                                PumpStatus::Terminated => out = PumpStatus::Broken,
                                _ => {}
                            },
                        }
                    }
                }
                if matches!(out, PumpStatus::Ok)
                    && (up.conn.state() == ConnState::Broken
                        || self.overrun.load(Ordering::Acquire))
                {
                    out = PumpStatus::Broken;
                }
                let mut sink = self.sink();
                match out {
                    PumpStatus::Ok if up.closing.is_some() => {
                        let done = up.conn.send_outstanding() == 0;
                        if done || up.closing.is_some_and(|t| now() >= t) {
                            up.conn.flush(&mut sink);
                            let _ = up.stream.shutdown(Shutdown::Write);
                            up.stream.wake_at(now() + DRAIN_TIMEOUT);
                            inner.phase = Phase::Draining {
                                stream: up.stream,
                                deadline: now() + DRAIN_TIMEOUT,
                            };
                            (true, Some(OwnedCmEvent::Disconnected))
                        } else {
                            up.conn.request_ack();
                            inner.phase = Phase::Up(up);
                            (any, None)
                        }
                    }
                    PumpStatus::Ok => {
                        inner.phase = Phase::Up(up);
                        (any, None)
                    }
                    PumpStatus::PeerClosed => {
                        up.conn.flush(&mut sink);
                        (true, Some(OwnedCmEvent::Disconnected))
                    }
                    PumpStatus::Broken => {
                        up.conn.flush(&mut sink);
                        set_linger_zero(&up.stream);
                        (true, Some(OwnedCmEvent::Broken))
                    }
                    PumpStatus::Terminated => {
                        up.conn.flush(&mut sink);
                        if !up.tx.busy() {
                            // The Terminate is out: close gracefully so the
                            // peer reads it before the end of stream.
                            let _ = up.stream.shutdown(Shutdown::Write);
                            up.stream.wake_at(now() + DRAIN_TIMEOUT);
                            inner.phase = Phase::Draining {
                                stream: up.stream,
                                deadline: now() + DRAIN_TIMEOUT,
                            };
                        } else {
                            set_linger_zero(&up.stream);
                        }
                        (true, Some(OwnedCmEvent::Broken))
                    }
                }
            }
        }
    }
}
