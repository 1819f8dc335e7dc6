//! Transmit: the next FPDU to send (a Read Response, an ack read or the
//! send queue's next segment), and completions once it is written.

use super::*;

impl Conn {
    /// Whether the send queue's next request may start or continue now.
    pub(super) fn sq_ready(&self) -> bool {
        if self.sq_tx == self.sq_tail {
            return false;
        }
        let e = &self.sq[self.sq_tx];
        if e.off > 0 {
            return true;
        }
        if e.fence && self.ord_consumer > 0 {
            return false;
        }
        if matches!(e.op, SendOp::RdmaRead { .. })
            && (self.ord_consumer >= self.consumer_ord || self.ord.len >= self.ord_limit)
        {
            return false;
        }
        true
    }

    /// The next FPDU to send, if any. Call [`Conn::tx_done`] once it has
    /// been written completely, before asking for the next one.
    pub fn next_tx(&mut self, plan: &mut TxPlan) -> bool {
        plan.clear();
        self.last_tx = LastTx::None;
        match self.state {
            ConnState::Broken => return false,
            ConnState::Terminating => {
                if self.term_sent {
                    return false;
                }
                self.term_sent = true;
                let h = Header::new(
                    Ulp::Terminate {
                        msn: self.tx_msn[2],
                        mo: 0,
                    },
                    true,
                );
                self.tx_msn[2] += 1;
                plan.inline[..self.term_len].copy_from_slice(&self.term[..self.term_len]);
                plan.inline_len = self.term_len;
                return self.start(plan, &h, LastTx::Terminate);
            }
            ConnState::Established => {}
        }
        let sq_ready = self.sq_ready();
        let resp_ready = self.ird.len > 0;
        let sq_cur = (self.sq_tx < self.sq_tail).then(|| self.sq[self.sq_tx]);
        let sq_write_mid =
            sq_cur.is_some_and(|e| matches!(e.op, SendOp::RdmaWrite { .. }) && e.off > 0);
        let sq_is_write = sq_cur.is_some_and(|e| matches!(e.op, SendOp::RdmaWrite { .. }));
        let resp_mid = self.ird.iter().next().is_some_and(|r| r.sent > 0);
        let use_resp = if !resp_ready {
            false
        } else if !sq_ready {
            true
        } else if sq_write_mid {
            false
        } else if resp_mid && sq_is_write {
            true
        } else {
            self.resp_turn
        };
        if use_resp {
            self.resp_turn = false;
            return self.tx_response(plan);
        }
        self.resp_turn = true;
        if sq_ready {
            return self.tx_sq(plan);
        }
        if self.ack_pending && self.ord.len < self.ord_limit {
            return self.tx_ack(plan);
        }
        false
    }

    pub(super) fn start(&mut self, plan: &mut TxPlan, h: &Header, last: LastTx) -> bool {
        let len = plan.payload_len() as usize;
        match FpduTx::new(h, len, self.neg.crc) {
            Ok(mut f) => {
                let inline = &plan.inline[..plan.inline_len];
                if f.payload(inline).is_err() {
                    return false;
                }
                plan.fpdu = Some(f);
                self.last_tx = last;
                true
            }
            Err(_) => false,
        }
    }

    pub(super) fn tx_response(&mut self, plan: &mut TxPlan) -> bool {
        let max = wire::max_payload(TAGGED_HDR_LEN, self.neg.max_fpdu) as u64;
        let Some(r) = self.ird.front_mut() else {
            return false;
        };
        let n = (r.size - r.sent).min(max);
        let h = Header::new(
            Ulp::ReadResponse {
                stag: r.sink_stag,
                to: r.sink_to.wrapping_add(r.sent),
            },
            r.sent + n == r.size,
        );
        if n > 0 {
            plan.pieces[0] = Piece {
                addr: r.source_to + r.sent,
                len: n,
            };
            plan.npieces = 1;
        }
        r.sent += n;
        if r.sent == r.size {
            self.ird.pop();
        }
        self.start(plan, &h, LastTx::Other)
    }

    pub(super) fn tx_ack(&mut self, plan: &mut TxPlan) -> bool {
        self.ack_pending = false;
        let msn = self.tx_msn[1];
        self.tx_msn[1] += 1;
        let stag = SINK_TAG_BIT | msn;
        self.ord.push(OrdEntry {
            seq: None,
            covers: self.sq_tx,
            size: 0,
            got: 0,
            stag,
        });
        let h = Header::new(
            Ulp::ReadRequest {
                msn,
                mo: 0,
                req: ReadRequest {
                    sink_stag: stag,
                    sink_to: 0,
                    size: 0,
                    source_stag: 0,
                    source_to: 0,
                },
            },
            true,
        );
        self.start(plan, &h, LastTx::Other)
    }

    pub(super) fn tx_sq(&mut self, plan: &mut TxPlan) -> bool {
        let seq = self.sq_tx;
        let i = seq;
        let e = self.sq[i];
        match e.op {
            SendOp::RdmaRead { remote_addr, rkey } => {
                let msn = self.tx_msn[1];
                self.tx_msn[1] += 1;
                let stag = SINK_TAG_BIT | msn;
                self.ord.push(OrdEntry {
                    seq: Some(seq),
                    covers: seq,
                    size: e.len,
                    got: 0,
                    stag,
                });
                self.ord_consumer += 1;
                // The response acknowledges everything before the read.
                self.ack_pending = false;
                let s = &mut self.sq[i];
                s.msn = msn;
                s.state = Slot::Sent;
                self.sq_tx += 1;
                self.skip_binds();
                let h = Header::new(
                    Ulp::ReadRequest {
                        msn,
                        mo: 0,
                        req: ReadRequest {
                            sink_stag: stag,
                            sink_to: 0,
                            size: e.len as u32,
                            source_stag: rkey,
                            source_to: remote_addr,
                        },
                    },
                    true,
                );
                self.start(plan, &h, LastTx::Other)
            }
            SendOp::Send { .. } | SendOp::RdmaWrite { .. } => {
                let (hl, msn) = match e.op {
                    SendOp::Send { .. } if e.off == 0 => {
                        let m = self.tx_msn[0];
                        self.tx_msn[0] += 1;
                        (UNTAGGED_HDR_LEN, m)
                    }
                    SendOp::Send { .. } => (UNTAGGED_HDR_LEN, e.msn),
                    _ => (TAGGED_HDR_LEN, 0),
                };
                let max = wire::max_payload(hl, self.neg.max_fpdu) as u64;
                let n = (e.len - e.off).min(max);
                let last = e.off + n == e.len;
                let ulp = match e.op {
                    SendOp::Send { solicited } => Ulp::Send {
                        msn,
                        mo: e.off as u32,
                        solicited,
                        invalidate: None,
                    },
                    SendOp::RdmaWrite { remote_addr, rkey } => Ulp::RdmaWrite {
                        stag: rkey,
                        to: remote_addr.wrapping_add(e.off),
                    },
                    SendOp::RdmaRead { .. } => unreachable!("handled above"),
                };
                plan.npieces = piece_iter(&e.sges[..e.nsge], e.off, n, &mut plan.pieces);
                let s = &mut self.sq[i];
                s.msn = msn;
                s.off += n;
                let mut done = LastTx::Other;
                if last {
                    s.state = Slot::Sent;
                    self.sq_tx += 1;
                    self.skip_binds();
                    if self.neg.ack_reads {
                        if e.signaled {
                            self.ack_pending = true;
                        }
                    } else {
                        done = LastTx::Complete(seq);
                    }
                }
                self.start(plan, &Header::new(ulp, last), done)
            }
        }
    }

    /// The last plan from [`Conn::next_tx`] has been written completely.
    pub fn tx_done(&mut self, sink: &mut impl FnMut(Wc)) {
        let t = self.tx_token();
        self.tx_written(t, sink);
    }

    /// Takes the token of the last plan from [`Conn::next_tx`], so that
    /// another can be planned before this one is written.
    pub fn tx_token(&mut self) -> TxToken {
        TxToken(std::mem::replace(&mut self.last_tx, LastTx::None))
    }

    /// The plan `t` names has been written completely (plans are written
    /// in the order they were planned).
    pub fn tx_written(&mut self, t: TxToken, sink: &mut impl FnMut(Wc)) {
        match t.0 {
            LastTx::Complete(seq) => {
                let i = seq;
                if self.sq[i].state == Slot::Sent {
                    self.sq[i].state = Slot::Done(WcStatus::Success);
                }
                self.retire(sink);
            }
            LastTx::Terminate => {
                if self.state == ConnState::Terminating {
                    self.state = ConnState::Broken;
                }
            }
            LastTx::Other | LastTx::None => {}
        }
    }

    /// Emits the completions of finished send-queue requests, oldest first.
    pub(super) fn retire(&mut self, sink: &mut impl FnMut(Wc)) {
        while self.sq_head < self.sq_tail {
            let e = self.sq[self.sq_head];
            let Slot::Done(status) = e.state else {
                break;
            };
            self.sq_head += 1;
            if e.signaled || status != WcStatus::Success {
                sink(Wc {
                    wr_id: e.wr_id,
                    ctx: e.ctx,
                    implicit: std::mem::take(&mut self.sq_implicit),
                    status,
                    op: e.wc_op(),
                    byte_len: if status == WcStatus::Success {
                        e.len
                    } else {
                        0
                    },
                    qp: self.cfg.qp,
                    solicited: false,
                });
            } else {
                self.sq_implicit += 1;
            }
        }
    }

    // ───────────────────────────── receive ─────────────────────────────
}
