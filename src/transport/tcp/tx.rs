//! Transmit: FPDUs ready together are planned as a batch; small ones share
//! a `sendmsg`, a large one goes alone (it starts a TCP segment).

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{
    socket::write_small,
    state::{EstablishedConn, Inner, IwarpQp, Phase, PumpStatus, TxBatch, TxCur, TX_BATCH},
};
use crate::transport::soft::memio::{self, IoError, IoPlan, RawSeg};

impl TxCur {
    pub(super) fn total(&self) -> u64 {
        (self.head_len + self.trailer_len) as u64 + self.payload
    }

    /// Its bytes not yet written.
    pub(super) fn plan(&self) -> Option<IoPlan<'_>> {
        let mut p = IoPlan::send(
            &self.head[..self.head_len],
            &self.segs[..self.nsegs],
            0,
            self.payload,
            &self.trailer[..self.trailer_len],
        )?;
        p.advance(self.sent as usize);
        Some(p)
    }
}

/// Bytes one step sends before it lets the receive side and the caller
/// have their turn.
pub(super) const TX_BUDGET: usize = 512 * 1024;

/// FPDUs up to this size share `sendmsg` calls (and so TCP segments).
pub(super) const TX_SMALL: u64 = 4096;
/// Bytes after which no more FPDUs are planned into a batch.
pub(super) const TX_BATCH_BYTES: u64 = 256 * 1024;

impl TxBatch {
    pub(super) fn busy(&self) -> bool {
        self.done < self.n
    }
}

impl IwarpQp {
    /// Sends a [`Nudge`] (at an FPDU boundary of the stream) and sets the
    /// next one.
    pub(super) fn nudge(up: &mut EstablishedConn) {
        let Some(n) = up.nudge.as_mut() else {
            return;
        };
        if !up.tx.busy() && write_small(&up.stream, &n.bytes) {
            tracing::debug!("nothing back from the peer yet: zero-length RDMA Write sent");
            n.left -= 1;
        }
        n.gap *= 2;
        n.at = Instant::now() + n.gap;
        if n.left == 0 {
            up.nudge = None;
        }
    }

    /// Plans the engine's next FPDU into `cur`. False: nothing to send.
    pub(super) fn plan_fpdu(up: &mut EstablishedConn, cur: &mut TxCur) -> Result<bool, ()> {
        if !up.conn.next_tx(&mut up.txplan) {
            return Ok(false);
        }
        let h = up.txplan.head();
        let i = up.txplan.inline();
        cur.head[..h.len()].copy_from_slice(h);
        cur.head[h.len()..h.len() + i.len()].copy_from_slice(i);
        cur.head_len = h.len() + i.len();
        cur.payload = 0;
        for (k, p) in up.txplan.pieces().iter().enumerate() {
            cur.segs[k] = RawSeg {
                addr: p.addr,
                len: p.len,
            };
            cur.payload += p.len;
        }
        cur.nsegs = up.txplan.pieces().len();
        if up.crc {
            let plan = &mut up.txplan;
            let mut bad = false;
            memio::digest_segs(&cur.segs[..cur.nsegs], 0, cur.payload, |b| {
                bad |= plan.payload(b).is_err();
            })
            .map_err(|_| ())?;
            if bad {
                return Err(());
            }
        } else if cur.payload > 0 {
            up.txplan
                .payload_crc(cur.payload as usize, 0)
                .map_err(|_| ())?;
        }
        let t = up.txplan.trailer().map_err(|_| ())?;
        cur.trailer[..t.len()].copy_from_slice(t);
        cur.trailer_len = t.len();
        cur.sent = 0;
        cur.token = up.conn.tx_token();
        Ok(true)
    }

    /// Writes FPDUs until the engine has none or the socket is full. The
    /// FPDUs ready at once (a Send, the ack read behind it, the response
    /// to the peer's ack read) leave in one `sendmsg`, so in one segment.
    pub(super) fn pump_tx(&self, up: &mut EstablishedConn) -> Result<bool, PumpStatus> {
        if up.hold_tx {
            return Ok(false);
        }
        // Acknowledgements left by a step go now (or wait for socket space).
        self.acks_left.store(false, Ordering::Relaxed);
        let mut any = false;
        let mut sink = self.sink();
        // A bounded amount per call, like the receive side: a long stream
        // does not keep the caller (or the acknowledgements it should
        // read) waiting; the rest goes at the next step.
        let mut budget = TX_BUDGET;
        self.tx_more.store(false, Ordering::Relaxed);
        loop {
            if up.tx.done == up.tx.n {
                if budget == 0 {
                    self.tx_more.store(true, Ordering::Relaxed);
                    return Ok(any);
                }
                up.tx.done = 0;
                up.tx.n = 0;
                let mut bytes = 0u64;
                while up.tx.n < TX_BATCH && bytes < TX_BATCH_BYTES {
                    let mut cur = std::mem::take(&mut up.tx.fpdus[up.tx.n]);
                    let planned = Self::plan_fpdu(up, &mut cur);
                    let total = cur.total();
                    up.tx.fpdus[up.tx.n] = cur;
                    if !planned.map_err(|()| PumpStatus::Broken)? {
                        break;
                    }
                    bytes += total;
                    up.tx.n += 1;
                }
                if up.tx.n == 0 {
                    return Ok(any);
                }
            }
            let r = {
                let b = &up.tx;
                // What fits in one TCP segment leaves in one call (a
                // ping-pong's read response, Send and ack read wake the
                // peer once, not three times); beyond that, small FPDUs
                // leave together, and a large one starts a call, and so a
                // TCP segment, of its own (RFC 5044's alignment, which
                // dissectors rely on to find FPDUs spanning segments);
                // small ones behind it join it (a message's last piece and
                // its ack read).
                let first = &b.fpdus[b.done];
                let all = (b.done..b.n).map(|i| b.fpdus[i].total()).sum::<u64>() - first.sent;
                let mut end = b.n;
                if all > up.segment {
                    end = b.done + 1;
                    let mut bytes = if first.total() <= TX_SMALL {
                        first.total() - first.sent
                    } else {
                        0
                    };
                    while end < b.n && bytes + b.fpdus[end].total() <= TX_SMALL {
                        bytes += b.fpdus[end].total();
                        end += 1;
                    }
                }
                let plans: [Option<IoPlan<'_>>; TX_BATCH] = std::array::from_fn(|k| {
                    let i = b.done + k;
                    (i < end).then(|| b.fpdus[i].plan()).flatten()
                });
                let mut list = [const { None::<IoPlan<'_>> }; TX_BATCH];
                let mut count = 0;
                for p in plans.into_iter().flatten() {
                    list[count] = Some(p);
                    count += 1;
                }
                if count != end - b.done {
                    return Err(PumpStatus::Broken);
                }
                memio::send_plans(up.stream.as_fd(), &list[..count], libc::MSG_DONTWAIT)
            };
            match r {
                Ok(n) => {
                    any |= n > 0;
                    budget = budget.saturating_sub(n);
                    let mut left = n as u64;
                    while left > 0 && up.tx.done < up.tx.n {
                        let cur = &mut up.tx.fpdus[up.tx.done];
                        let take = left.min(cur.total() - cur.sent);
                        cur.sent += take;
                        left -= take;
                        if cur.sent == cur.total() {
                            let t = cur.token;
                            up.tx.done += 1;
                            up.conn.tx_written(t, &mut sink);
                        }
                    }
                    if left == 0 && up.tx.done < up.tx.n && up.tx.fpdus[up.tx.done].sent > 0 {
                        // The socket took part of an FPDU: it is full.
                        return Ok(any);
                    }
                }
                Err(IoError::WouldBlock) => return Ok(any),
                Err(IoError::Closed) => return Err(PumpStatus::PeerClosed),
                Err(_) => return Err(PumpStatus::Broken),
            }
        }
    }
}

impl IwarpQp {
    /// Records whether output waits for socket space (read by the
    /// progress thread without the lock).
    pub(super) fn note_tx(&self, inner: &Inner) {
        let (blocked, sock) = match &inner.phase {
            Phase::Up(up) => (
                up.tx.busy() || self.tx_more.load(Ordering::Relaxed),
                Some(&up.stream),
            ),
            Phase::Connecting { tcp_up, stream, .. } => (!tcp_up, Some(stream)),
            _ => (false, None),
        };
        if blocked || self.rx_more.load(Ordering::Relaxed) {
            // A poll would move data: a consumer holding completions
            // still polls (CompletionQueue::busy).
            self.send_cq.mark_busy();
            self.recv_cq.mark_busy();
        }
        if self.tx_blocked.load(Ordering::Relaxed) != blocked {
            self.tx_blocked.store(blocked, Ordering::Relaxed);
            if let Some(sock) = sock {
                // A thread sleeping on the completion queues wakes when the
                // socket takes more and pushes its own bytes; the progress
                // thread does it if nobody sleeps there.
                for cq in &sock.cqs {
                    cq.watch_output(sock.stream.as_fd(), u64::from(self.num), blocked);
                }
            }
        }
        self.watch(inner);
    }
}
