//! Receive: a segment header checked (keys before any byte moves) and where
//! its payload goes; completions when the segment is done.

use super::*;

impl Conn {
    /// Payload buffer for [`RxAction::Inline`].
    pub fn rx_inline(&mut self) -> &mut [u8] {
        &mut self.rx_inline
    }

    /// A segment header arrived (from the FPDU reader). Checks it and says
    /// where its payload goes. On [`RxAction::NotReady`] nothing changed:
    /// call again with the same segment later.
    pub fn rx_header(
        &mut self,
        seg: &Segment,
        keys: &KeyTable,
        plan: &mut RxPlan,
        sink: &mut impl FnMut(Wc),
    ) -> Result<RxAction, Fault> {
        plan.npieces = 0;
        self.rx_cur = ReceivingSegment::None;
        if self.state != ConnState::Established {
            return Err(Fault::Closed);
        }
        self.rx_seg = Some(*seg);
        let len = seg.payload_len as u64;
        let h = seg.header;
        match h.ulp {
            Ulp::Send {
                msn, mo, solicited, ..
            } => {
                if msn != self.rx_msn[0] {
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
                }
                let Some(r) = self.recv_front() else {
                    return Ok(RxAction::NotReady);
                };
                if u64::from(mo) != self.rq_off {
                    return Err(self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMo), sink));
                }
                if u64::from(mo) + len > r.len {
                    // The receive completes in error before the flush.
                    self.recv_pop();
                    sink(Wc {
                        wr_id: r.wr_id,
                        ctx: r.ctx,
                        implicit: 0,
                        status: WcStatus::LocalLength,
                        op: WcOp::Recv,
                        byte_len: self.rq_off,
                        qp: self.cfg.qp,
                        solicited: false,
                    });
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::MessageTooLong), sink)
                    );
                }
                plan.npieces = piece_iter(&r.sges[..r.nsge], u64::from(mo), len, &mut plan.pieces);
                self.rx_cur = ReceivingSegment::Send {
                    len,
                    last: h.last,
                    solicited,
                };
                Ok(RxAction::Place)
            }
            Ulp::RdmaWrite { stag, to } => {
                if len > 0 {
                    if let Err(f) =
                        keys.check_remote(stag, to, len, Access::REMOTE_WRITE, Some(self.cfg.pd))
                    {
                        return Err(self.fail(tagged_protection(f, to, len), sink));
                    }
                    plan.pieces[0] = Piece { addr: to, len };
                    plan.npieces = 1;
                }
                self.rx_cur = ReceivingSegment::Write;
                Ok(RxAction::Place)
            }
            Ulp::ReadRequest { msn, mo, req } => {
                if msn != self.rx_msn[1] {
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
                }
                if mo != 0 || !h.last || len != 0 {
                    return Err(self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMo), sink));
                }
                if self.ird.len >= self.ird_limit {
                    // Queue 1 has IRD buffers: an MSN beyond them is out of range.
                    return Err(
                        self.fail(TermError::DdpUntagged(DdpUntagged::InvalidMsnRange), sink)
                    );
                }
                let size = u64::from(req.size);
                if size > 0 {
                    if let Err(f) = keys.check_remote(
                        req.source_stag,
                        req.source_to,
                        size,
                        Access::REMOTE_READ,
                        Some(self.cfg.pd),
                    ) {
                        return Err(self.fail(protection(f, req.source_to, size), sink));
                    }
                }
                self.rx_cur = ReceivingSegment::ReadRequest(IrdEntry {
                    sink_stag: req.sink_stag,
                    sink_to: req.sink_to,
                    source_to: req.source_to,
                    size,
                    sent: 0,
                });
                Ok(RxAction::Place)
            }
            Ulp::ReadResponse { stag, to } => {
                let Some(o) = self.ord.front_mut().copied() else {
                    return Err(self.fail(
                        TermError::RdmapOperation(RdmapOperation::UnexpectedOpcode),
                        sink,
                    ));
                };
                if stag != o.stag {
                    return Err(self.fail(TermError::DdpTagged(DdpTagged::InvalidStag), sink));
                }
                if o.seq.is_none() {
                    // An ack read's response only says "everything before
                    // it was processed": bytes in it (a peer's bug) are
                    // dropped, not a reason to break the connection.
                    if len > 0 {
                        self.drop_into_bucket(len, plan);
                    }
                    self.rx_cur = ReceivingSegment::ReadResponse { len, last: h.last };
                    return Ok(RxAction::Place);
                }
                if to != o.got || o.got + len > o.size || (h.last && o.got + len != o.size) {
                    return Err(self.fail(TermError::DdpTagged(DdpTagged::BaseOrBounds), sink));
                }
                if let Some(seq) = o.seq {
                    let e = &self.sq[seq];
                    plan.npieces = piece_iter(&e.sges[..e.nsge], to, len, &mut plan.pieces);
                }
                self.rx_cur = ReceivingSegment::ReadResponse { len, last: h.last };
                Ok(RxAction::Place)
            }
            Ulp::Terminate { .. } => {
                if seg.payload_len > RX_INLINE_MAX {
                    self.state = ConnState::Broken;
                    self.flush(sink);
                    return Err(Fault::Terminated(TermError::RdmapOperation(
                        RdmapOperation::Unspecified,
                    )));
                }
                self.rx_cur = ReceivingSegment::Terminate(seg.payload_len);
                Ok(RxAction::Inline(seg.payload_len))
            }
        }
    }

    /// Plans `len` bytes (at most an FPDU's) into the bucket.
    pub(super) fn drop_into_bucket(&mut self, len: u64, plan: &mut RxPlan) {
        const PIECE: usize = 8192;
        if self.bucket.is_none() {
            tracing::debug!(
                qp = self.cfg.qp,
                len,
                "the peer answered a zero-length Read Request with data: dropped"
            );
        }
        // A piece of its own for each part of the FPDU: with CRC on, the
        // digest is taken from the placed bytes, so none may overwrite
        // another (an FPDU carries at most 64 KiB).
        let b = self
            .bucket
            .get_or_insert_with(|| vec![0u8; PIECE * MAX_SGE].into_boxed_slice());
        let base = b.as_mut_ptr() as u64;
        let mut left = len;
        plan.npieces = 0;
        while left > 0 && plan.npieces < MAX_SGE {
            let take = left.min(PIECE as u64);
            plan.pieces[plan.npieces] = Piece {
                addr: base + (plan.npieces * PIECE) as u64,
                len: take,
            };
            plan.npieces += 1;
            left -= take;
        }
    }

    /// The segment's payload is placed and its FPDU checked (the reader's
    /// `Done`): its effects and completions happen now.
    pub fn rx_done(&mut self, sink: &mut impl FnMut(Wc)) -> Result<(), Fault> {
        if self.state != ConnState::Established {
            return Err(Fault::Closed);
        }
        match std::mem::replace(&mut self.rx_cur, ReceivingSegment::None) {
            ReceivingSegment::None | ReceivingSegment::Write => {}
            ReceivingSegment::Send {
                len,
                last,
                solicited,
            } => {
                self.rq_off += len;
                if last {
                    self.rx_msn[0] = self.rx_msn[0].wrapping_add(1);
                    if let Some(r) = self.recv_pop() {
                        sink(Wc {
                            wr_id: r.wr_id,
                            ctx: r.ctx,
                            implicit: 0,
                            status: WcStatus::Success,
                            op: WcOp::Recv,
                            byte_len: self.rq_off,
                            qp: self.cfg.qp,
                            solicited,
                        });
                    }
                    self.rq_off = 0;
                }
            }
            ReceivingSegment::ReadRequest(e) => {
                self.rx_msn[1] = self.rx_msn[1].wrapping_add(1);
                self.ird.push(e);
            }
            ReceivingSegment::ReadResponse { len, last } => {
                let Some(o) = self.ord.front_mut() else {
                    return Err(Fault::Closed);
                };
                o.got += len;
                if last {
                    let o = self.ord.pop().unwrap_or_default();
                    if let Some(seq) = o.seq {
                        self.ord_consumer -= 1;
                        let i = seq;
                        self.sq[i].state = Slot::Done(WcStatus::Success);
                    }
                    self.acknowledge(o.covers);
                    self.retire(sink);
                }
            }
            ReceivingSegment::Terminate(n) => return Err(self.terminated(n, sink)),
        }
        Ok(())
    }

    /// Sends and Writes before `covers` were processed by the peer.
    pub(super) fn acknowledge(&mut self, covers: u64) {
        for seq in self.sq_head..covers.min(self.sq_tx) {
            let i = seq;
            let e = &mut self.sq[i];
            if e.state == Slot::Sent && !matches!(e.op, SendOp::RdmaRead { .. }) {
                e.state = Slot::Done(WcStatus::Success);
            }
        }
    }
}
