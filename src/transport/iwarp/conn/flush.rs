//! Errors and teardown: Terminates sent and received, receiver-not-ready
//! expiry, and the flush that completes every request exactly once.

use super::*;

impl Conn {
    /// A Terminate arrived: the Sends and Writes before the request it names
    /// succeeded, that request completes with the error, the rest is flushed.
    pub(super) fn terminated(&mut self, n: usize, sink: &mut impl FnMut(Wc)) -> Fault {
        self.state = ConnState::Broken;
        let body = &self.rx_inline[..n];
        let (error, off) = match Terminate::decode(body) {
            Ok((t, _)) => (t.error, t.offending().and_then(Result::ok)),
            Err(_) => (TermError::RdmapOperation(RdmapOperation::Unspecified), None),
        };
        let target = off.and_then(|h| {
            (self.sq_head..self.sq_tx).find(|&seq| {
                let e = &self.sq[seq];
                if matches!(e.state, Slot::Done(_)) {
                    return false;
                }
                match (h.ulp, e.op) {
                    (Ulp::Send { msn, .. }, SendOp::Send { .. }) => e.msn == msn,
                    (Ulp::ReadRequest { msn, .. }, SendOp::RdmaRead { .. }) => e.msn == msn,
                    (Ulp::RdmaWrite { stag, to }, SendOp::RdmaWrite { remote_addr, rkey }) => {
                        // Offsets are sent as `remote_addr + off` modulo 2⁶⁴.
                        stag == rkey && to.wrapping_sub(remote_addr) <= e.len
                    }
                    _ => false,
                }
            })
        });
        if let Some(seq) = target {
            // The peer processed the stream in order up to the request it
            // names: the Sends and Writes before it were placed.
            self.acknowledge(seq);
            let i = seq;
            self.sq[i].state = Slot::Done(status_of(error));
        }
        tracing::debug!(qp = self.cfg.qp, ?error, "Terminate received");
        self.flush(sink);
        Fault::Terminated(error)
    }

    /// The peer broke the protocol: queue a Terminate naming the segment
    /// under reception, flush, and report the error.
    pub(super) fn fail(&mut self, error: TermError, sink: &mut impl FnMut(Wc)) -> Fault {
        let mut hdr = [0u8; MAX_HDR_LEN];
        let t = match self.rx_seg {
            Some(seg) => {
                let n = seg.header.encode(&mut hdr);
                let ddp = if n == TAGGED_HDR_LEN {
                    &hdr[..TAGGED_HDR_LEN]
                } else {
                    &hdr[..UNTAGGED_HDR_LEN]
                };
                let rdmap = (n > UNTAGGED_HDR_LEN)
                    .then(|| &hdr[UNTAGGED_HDR_LEN..UNTAGGED_HDR_LEN + READ_REQUEST_LEN]);
                Terminate::with_segment(error, seg.ulpdu_len, ddp, rdmap)
            }
            None => Terminate::new(error),
        };
        self.term_len = t
            .encode(&mut self.term)
            .unwrap_or_else(|_| Terminate::new(error).encode(&mut self.term).unwrap_or(0));
        self.term_sent = false;
        tracing::debug!(
            qp = self.cfg.qp,
            ?error,
            "Terminate sent (the peer broke a rule)"
        );
        self.flush(sink);
        self.state = ConnState::Terminating;
        Fault::Protocol(error)
    }

    /// The FPDU reader refused what arrived (framing, header fields, CRC:
    /// [`wire::FpduError::term`]): queue the Terminate with `error`, naming
    /// `seg` when its header had been read, and flush.
    pub fn refuse(
        &mut self,
        error: TermError,
        seg: Option<Segment>,
        sink: &mut impl FnMut(Wc),
    ) -> Fault {
        if self.state != ConnState::Established {
            return Fault::Closed;
        }
        self.rx_seg = seg;
        self.fail(error, sink)
    }

    /// The receiver-not-ready time ran out for the Send last refused with
    /// [`RxAction::NotReady`]: queue the Terminate (DDP untagged buffer
    /// error, no buffer) and flush.
    pub fn rnr_expired(&mut self, sink: &mut impl FnMut(Wc)) -> Fault {
        if self.state != ConnState::Established {
            return Fault::Closed;
        }
        self.fail(
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
            sink,
        )
    }

    /// Completes every outstanding request with [`WcStatus::Flushed`]: the
    /// send queue in posting order, then the receive queue. Idempotent;
    /// the engine is broken afterwards.
    pub fn flush(&mut self, sink: &mut impl FnMut(Wc)) {
        if self.state == ConnState::Established {
            self.state = ConnState::Broken;
        }
        for seq in self.sq_head..self.sq_tail {
            let i = seq;
            if !matches!(self.sq[i].state, Slot::Done(_)) {
                self.sq[i].state = Slot::Done(WcStatus::Flushed);
            }
        }
        self.sq_tx = self.sq_tail;
        self.retire(sink);
        // A shared queue's receive taken by this connection is flushed with
        // it; the ones still in the shared queue stay there.
        if let Some(r) = self.srq_cur.take() {
            sink(Wc {
                wr_id: r.wr_id,
                ctx: r.ctx,
                implicit: 0,
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.cfg.qp,
                solicited: false,
            });
        }
        while let Some(r) = self.rq.pop() {
            sink(Wc {
                wr_id: r.wr_id,
                ctx: r.ctx,
                implicit: 0,
                status: WcStatus::Flushed,
                op: WcOp::Recv,
                byte_len: 0,
                qp: self.cfg.qp,
                solicited: false,
            });
        }
        self.rq_off = 0;
        self.ord.clear();
        self.ord_consumer = 0;
        self.ird.clear();
        self.ack_pending = false;
        self.rx_cur = ReceivingSegment::None;
    }
}
