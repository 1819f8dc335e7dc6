//! Building the engine from the negotiated parameters, and posting: every
//! work request is checked (SGE count, depth, each local segment against
//! the key table, total length) and copied into a preallocated slot.

use super::*;

impl Conn {
    /// An established connection; every queue is allocated here (its full
    /// depth reserved, its memory written as it fills: [`SeqRing`]).
    pub fn new(cfg: ConnConfig, neg: Negotiated) -> Result<Conn, TryReserveError> {
        let mut cfg = cfg;
        cfg.max_sge = cfg.max_sge.min(MAX_SGE as u32);
        let mut neg = neg;
        neg.max_fpdu = neg.max_fpdu.max(MIN_FPDU);
        // Ack reads need a credit beyond the consumer's reads; without one,
        // fall back to local completion.
        if neg.ack_reads && (neg.ord as u64) < u64::from(cfg.ord) + 1 {
            neg.ack_reads = false;
        }
        let reserve = usize::from(neg.ack_reads);
        let ord_limit = (neg.ord as usize).min(cfg.ord as usize + reserve);
        let consumer_ord = (cfg.ord as usize).min(ord_limit - reserve.min(ord_limit));
        let sq = SeqRing::new(cfg.send_depth as usize, SqEntry::EMPTY)?;
        Ok(Conn {
            sq,
            sq_head: 0,
            sq_tx: 0,
            sq_tail: 0,
            sq_implicit: 0,
            rq: RecvRing::new(cfg.recv_depth as usize)?,
            srq: None,
            srq_cur: None,
            rq_off: 0,
            ord: Ring::new(ord_limit),
            ord_consumer: 0,
            ord_limit,
            consumer_ord,
            ird: Ring::new(cfg.ird as usize + 1),
            ird_limit: (neg.ird as usize).min(cfg.ird as usize + 1),
            tx_msn: [1; 3],
            rx_msn: [1; 3],
            ack_pending: false,
            resp_turn: false,
            last_tx: LastTx::None,
            rx_cur: ReceivingSegment::None,
            rx_seg: None,
            rx_inline: [0; RX_INLINE_MAX],
            bucket: None,
            term: [0; wire::TERMINATE_MAX_LEN],
            term_len: 0,
            term_sent: false,
            state: ConnState::Established,
            cfg,
            neg,
        })
    }

    pub fn state(&self) -> ConnState {
        self.state
    }

    /// Setup consumed the peer's Read RTR, an inbound Read Request with
    /// `msn` ([`super::setup::Established::read_rtr_msn`]), and answered it:
    /// the peer's next Read Request carries `msn + 1`.
    pub fn read_rtr_taken(&mut self, msn: u32) {
        self.rx_msn[1] = msn.wrapping_add(1);
    }

    /// Whether Sends/Writes complete through ack reads on this connection.
    pub fn ack_reads(&self) -> bool {
        self.neg.ack_reads
    }

    /// Receives posted and not yet consumed.
    pub fn recv_outstanding(&self) -> usize {
        self.rq.len()
    }

    /// Takes receives from `srq` instead of the connection's own queue
    /// (call before any traffic).
    pub fn set_srq(&mut self, srq: std::sync::Arc<dyn SharedRecv>) {
        self.srq = Some(srq);
    }

    /// The receive the next Send segment goes into (taking one from the
    /// shared queue when a new message starts).
    pub(super) fn recv_front(&mut self) -> Option<RqEntry> {
        match &self.srq {
            Some(srq) => {
                if self.srq_cur.is_none() {
                    self.srq_cur = srq.take();
                }
                self.srq_cur
            }
            None => self.rq.front().copied(),
        }
    }

    /// Removes the receive being filled.
    pub(super) fn recv_pop(&mut self) -> Option<RqEntry> {
        if self.srq.is_some() {
            self.srq_cur.take()
        } else {
            self.rq.pop()
        }
    }

    /// Send-queue requests not yet retired.
    pub fn send_outstanding(&self) -> usize {
        (self.sq_tail - self.sq_head) as usize
    }

    /// True when all the connection has to send are responses to
    /// zero-length Read Requests (acknowledgements): they may wait a little
    /// for outbound data to travel with.
    pub fn only_acks_due(&self) -> bool {
        self.state == ConnState::Established
            && self.ird.len > 0
            && self.ird.iter().all(|r| r.size == 0)
            && !self.sq_ready()
            && !self.ack_pending
    }

    /// The most work requests the send queue holds.
    pub(super) fn send_depth(&self) -> usize {
        (self.cfg.send_depth as usize).max(1)
    }

    /// Asks for an acknowledgement of everything transmitted so far, even
    /// if unsignalled (a graceful close waits for the send queue to retire).
    pub fn request_ack(&mut self) {
        if self.neg.ack_reads && self.sq_head < self.sq_tx {
            self.ack_pending = true;
        }
    }

    pub(super) fn check_sgl(
        &self,
        sgl: &[Sge],
        need: Access,
        keys: &KeyTable,
    ) -> Result<([Sge; MAX_SGE], u64), PostError> {
        if sgl.len() > self.cfg.max_sge as usize {
            return Err(PostError::TooManySge);
        }
        let mut sges = [NO_SGE; MAX_SGE];
        let mut total = 0u64;
        for (i, s) in sgl.iter().enumerate() {
            if s.len > 0 {
                keys.check_local(s.lkey, s.addr, s.len, need, Some(self.cfg.pd))
                    .map_err(PostError::Protection)?;
            }
            total = total.saturating_add(s.len);
            sges[i] = *s;
        }
        if total > MAX_MSG {
            return Err(PostError::Length);
        }
        Ok((sges, total))
    }

    /// Queues a Send, RDMA Write or RDMA Read (the scatter list is copied).
    pub fn post_send(&mut self, wr: &SendWr<'_>, keys: &KeyTable) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.send_outstanding() >= self.send_depth() {
            return Err(PostError::QueueFull);
        }
        let need = match wr.op {
            SendOp::RdmaRead { .. } => Access::LOCAL_WRITE,
            _ => Access::LOCAL_READ,
        };
        let (sges, len) = self.check_sgl(wr.sgl, need, keys)?;
        if matches!(wr.op, SendOp::RdmaRead { .. }) && self.consumer_ord == 0 {
            return Err(PostError::Unsupported);
        }
        let i = self.sq_tail;
        self.sq.make_room(self.sq_head, i);
        self.sq[i] = SqEntry {
            wr_id: wr.wr_id,
            ctx: wr.ctx,
            op: wr.op,
            sges,
            nsge: wr.sgl.len(),
            len,
            signaled: wr.signaled,
            fence: wr.fence,
            off: 0,
            msn: 0,
            state: Slot::Queued,
            bind: false,
        };
        self.sq_tail += 1;
        Ok(())
    }

    /// Queues the completion of a memory-window bind the caller has
    /// applied (`status`: how it went), in send-queue order.
    pub fn post_bind(
        &mut self,
        wr_id: u64,
        ctx: u64,
        signaled: bool,
        status: WcStatus,
        sink: &mut impl FnMut(Wc),
    ) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.send_outstanding() >= self.send_depth() {
            return Err(PostError::QueueFull);
        }
        let i = self.sq_tail;
        self.sq.make_room(self.sq_head, i);
        self.sq[i] = SqEntry {
            wr_id,
            ctx,
            signaled,
            state: Slot::Done(status),
            bind: true,
            ..SqEntry::EMPTY
        };
        self.sq_tail += 1;
        self.skip_binds();
        self.retire(sink);
        Ok(())
    }

    /// Moves the transmit point past binds (nothing to send for them).
    pub(super) fn skip_binds(&mut self) {
        while self.sq_tx < self.sq_tail && self.sq[self.sq_tx].bind {
            self.sq_tx += 1;
        }
    }

    /// Queues a receive (the scatter list is copied).
    pub fn post_recv(&mut self, wr: &RecvWr<'_>, keys: &KeyTable) -> Result<(), PostError> {
        if self.state != ConnState::Established {
            return Err(PostError::State);
        }
        if self.rq.len() == self.rq.capacity() {
            return Err(PostError::QueueFull);
        }
        let (sges, len) = self.check_sgl(wr.sgl, Access::LOCAL_WRITE, keys)?;
        self.rq.push(RqEntry {
            wr_id: wr.wr_id,
            ctx: wr.ctx,
            sges,
            nsge: wr.sgl.len(),
            len,
        });
        Ok(())
    }

    // ───────────────────────────── transmit ─────────────────────────────
}
