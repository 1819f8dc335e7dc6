//! The server's side of a session: answering control messages, serving
//! each batch (receiving, checking what was written or sent, the idle and
//! connection tests) until FINISH.

use super::*;

impl Session<'_> {
    /// Serves control messages until FINISH; then waits for the client's
    /// disconnection.
    pub fn serve(&mut self, cr: &Evd, listener: Option<&TcpListener>) -> Result<(), Error> {
        loop {
            let c = self.wait_ctl("the client's next request")?;
            match c.kind {
                CtlKind::Begin => {
                    let b = Batch {
                        size: c.size,
                        first: c.first,
                        count: c.count,
                    };
                    if b.size == 0 || b.size > self.p.sizes.max() || b.count == 0 {
                        return Err(Error(format!("protocol error: bad batch {b:?}")));
                    }
                    if self.p.test == Test::Idle {
                        self.serve_idle(c)?;
                        continue;
                    }
                    let mut found = self.serve_batch(c.transport, b, cr, listener)?;
                    let w = if self.sleeps(c.transport) {
                        self.w_passive()
                    } else {
                        self.w()
                    };
                    let end = self.wait_ctl_by(&w, "the client's END")?;
                    if end.kind != CtlKind::End {
                        return Err(Error(format!(
                            "protocol error: expected END, got {:?}",
                            end.kind
                        )));
                    }
                    if c.transport == Transport::Dat
                        && self.p.test == Test::Write
                        && self.p.mode == Metric::Bw
                    {
                        found = first_of(found, self.check_written(b, self.mem()));
                    }
                    found = first_of(found, end.mismatch);
                    self.post_ctl_recv()?;
                    self.send_ctl(Ctl {
                        kind: CtlKind::Result,
                        mismatch: found,
                        ..c
                    })?;
                    if let Some(m) = found {
                        // Let the RESULT reach the client before we go.
                        self.flush_ctl()?;
                        let _ = self.w().conn_event("the client's disconnection");
                        return Err(Error(m.to_string()));
                    }
                }
                CtlKind::Finish => {
                    self.send_ctl(Ctl::new(CtlKind::Bye))?;
                    let ev = self.w().conn_event("the client's disconnection")?;
                    return match ev.event_number {
                        DAT_CONNECTION_EVENT_DISCONNECTED | DAT_CONNECTION_EVENT_BROKEN => Ok(()),
                        n => Err(Error(format!(
                            "waiting for the client's disconnection: got {}",
                            event_name(n)
                        ))),
                    };
                }
                k => return Err(Error(format!("protocol error: unexpected {k:?}"))),
            }
        }
    }

    /// The idle test, server: READY, the idle period, END → RESULT with
    /// our figures.
    fn serve_idle(&self, begin: Ctl) -> Result<(), Error> {
        self.post_ctl_recv()?;
        self.send_ctl(Ctl::new(CtlKind::Ready))?;
        let cpu = self.idle_period(Duration::from_millis(begin.count))?;
        let end = self.wait_ctl("the client's END")?;
        if end.kind != CtlKind::End {
            return Err(Error(format!(
                "protocol error: expected END, got {:?}",
                end.kind
            )));
        }
        self.post_ctl_recv()?;
        self.send_ctl(Ctl {
            kind: CtlKind::Result,
            cpu_ns: cpu.cpu_ns,
            wall_ns: cpu.wall_ns,
            ..begin
        })
    }

    /// The server's side of one batch, up to READY and the data phase.
    fn serve_batch(
        &mut self,
        transport: Transport,
        b: Batch,
        cr: &Evd,
        listener: Option<&TcpListener>,
    ) -> Result<Option<Mismatch>, Error> {
        let Batch { size, first, count } = b;
        let n = slots(size, self.p.depth);
        if transport == Transport::Tcp {
            self.post_ctl_recv()?;
            self.send_ctl(Ctl::new(CtlKind::Ready))?;
            let p = self.p;
            let corrupt_at = self.corrupt_at;
            if p.test == Test::Conn {
                let l = listener.ok_or_else(|| Error("no TCP baseline listener".into()))?;
                return tcp::server_conns(l, &p, self.timeout, b, corrupt_at);
            }
            let link = self
                .tcp
                .as_mut()
                .ok_or_else(|| Error("protocol error: no TCP baseline connection".into()))?;
            return tcp::server_batch(link, &mut self.tcp_bufs, &p, b, corrupt_at);
        }
        match (self.p.test, self.p.mode) {
            (Test::Send, _) => self.serve_send(b),
            (Test::Write, Metric::Lat) => {
                // SAFETY: the client writes into our destination only
                // after READY; its previous batch's writes all arrived.
                unsafe { self.data.set(self.dst_off(0, size) + size - 1, 0) };
                self.post_ctl_recv()?;
                self.send_ctl(Ctl::new(CtlKind::Ready))?;
                let (_, found) = self.write_pingpong(b, false, &mut Vec::new())?;
                Ok(found)
            }
            (Test::Write, Metric::Bw) => {
                let compute = self.computes(transport);
                let poll = self.mem() && !compute && !self.sleeps(transport);
                if poll {
                    if count > n {
                        return Err(Error(format!(
                            "protocol error: polled batch of {count} over {n} slots"
                        )));
                    }
                    for j in 0..count {
                        // SAFETY: the client writes into our destinations
                        // only after READY; its previous batch's writes
                        // all arrived (it sent END after they completed).
                        unsafe {
                            self.data
                                .set(self.dst_off((first + j) % n, size) + size - 1, 0)
                        };
                    }
                }
                self.ready(compute)?;
                if compute {
                    self.compute_until_flag()?;
                    return Ok(None);
                }
                let mut found = None;
                if poll {
                    // The receiver waits for each message: its last byte.
                    for j in 0..count {
                        let i = first + j;
                        let last = self.dst_off(i % n, size) + size - 1;
                        let v = self.poll_mem(last, 0, "the client's RDMA Write")?;
                        if v != tag(i) && found.is_none() {
                            found = Some(Mismatch {
                                iter: i,
                                byte: size - 1,
                            });
                        }
                    }
                }
                Ok(found)
            }
            (Test::Read, _) => {
                let mem = self.mem();
                if self.p.verify || mem {
                    if count > n {
                        return Err(Error(format!(
                            "protocol error: checked batch of {count} over {n} slots"
                        )));
                    }
                    for j in 0..count {
                        let i = first + j;
                        // SAFETY: the client reads our sources only after
                        // READY; its previous batch's reads completed.
                        unsafe {
                            self.put_payload(&self.data, self.src_off(i % n, size), size, i, mem)
                        };
                    }
                }
                let compute = self.computes(transport);
                self.ready(compute)?;
                if compute {
                    self.compute_until_flag()?;
                }
                Ok(None)
            }
            (Test::Idle, _) => unreachable!("idle has its own exchange"),
            (Test::Conn, _) => {
                self.post_ctl_recv()?;
                self.send_ctl(Ctl::new(CtlKind::Ready))?;
                self.serve_conns(b, cr)
            }
        }
    }

    /// READY for a batch the client runs against our memory; with
    /// `compute` the end flag is cleared first.
    fn ready(&self, compute: bool) -> Result<(), Error> {
        if compute {
            // SAFETY: the client writes the flag only after READY; its
            // previous one landed before its END.
            unsafe { self.data.set(self.flag_byte(), 0) };
        }
        self.post_ctl_recv()?;
        self.send_ctl(Ctl::new(CtlKind::Ready))
    }

    /// With -c after an RDMA Write bandwidth batch: what landed in the
    /// slots (`tagged`: without the last byte, checked while polling).
    fn check_written(&self, b: Batch, tagged: bool) -> Option<Mismatch> {
        let n = slots(b.size, self.p.depth);
        let mut found = None;
        for j in 0..b.count.min(n) {
            let i = b.first + j;
            let off = self.dst_off(i % n, b.size);
            // SAFETY: the client sent END after all its writes completed,
            // and writes nothing until our RESULT.
            unsafe {
                if tagged {
                    let v = self.data.load_volatile(off + b.size - 1);
                    self.check_tagged(off, b.size, i, v, &mut found);
                } else {
                    self.check_payload(&self.data, off, b.size, i, false, &mut found);
                }
            };
        }
        found
    }

    /// Send/Recv, server side: receives posted ahead, the control receive
    /// after the batch's last; --lat answers each message. With mem each
    /// message's last byte is polled before its completion is dequeued.
    fn serve_send(&self, b: Batch) -> Result<Option<Mismatch>, Error> {
        let Batch { size, first, count } = b;
        let n = slots(size, self.p.depth);
        let lat = self.p.mode == Metric::Lat;
        let mem = self.mem();
        let ahead = if lat {
            2
        } else if self.p.verify || mem {
            (2 * u64::from(self.p.depth)).min(n)
        } else {
            2 * u64::from(self.p.depth)
        };
        let ep = self.ep();
        let mut posted = 0u64;
        let mut ctl_posted = false;
        let mut post_next = |posted: &mut u64| -> Result<(), Error> {
            if *posted < count {
                let i = first + *posted;
                if mem {
                    // SAFETY: slot i % n's previous receive (at least
                    // `ahead` <= n receives ago) completed and was checked.
                    unsafe { self.data.set(self.dst_off(i % n, size) + size - 1, 0) };
                }
                ep.post_recv(
                    self.data.triplet(self.dst_off(i % n, size), size),
                    ck(K_RECV, *posted),
                )?;
                *posted += 1;
            } else if !ctl_posted {
                self.post_ctl_recv()?;
                ctl_posted = true;
            }
            Ok(())
        };
        while posted < count.min(ahead) {
            post_next(&mut posted)?;
        }
        if posted == count {
            post_next(&mut posted)?;
        }
        self.send_ctl(Ctl::new(CtlKind::Ready))?;
        let mut found = None;
        let mut received = 0u64;
        let ring = self.ring(size);
        let mut sends = 0u64;
        while received < count {
            let next = first + received;
            if mem {
                let off = self.dst_off(next % n, size);
                let v = self.poll_mem(off + size - 1, 0, "the client's message")?;
                // SAFETY: the message landed (its last byte is there); its
                // receive is ours until we post the slot again.
                unsafe { self.check_tagged(off, size, next, v, &mut found) };
            }
            let d = loop {
                let d = self.next("the client's message")?;
                match kind_of(d.cookie) {
                    K_RECV => break d,
                    K_SEND => sends = left(received, d),
                    _ => return Err(unexpected(d, "the client's message")),
                }
            };
            let i = first + idx_of(d.cookie);
            if i != next {
                return Err(Error(format!(
                    "receive completions out of order: got #{}, expected #{received}",
                    idx_of(d.cookie)
                )));
            }
            if d.len != size {
                return Err(Error(format!("received {} bytes, expected {size}", d.len)));
            }
            if !mem {
                // SAFETY: the receive into this destination slot completed.
                unsafe {
                    self.check_payload(
                        &self.data,
                        self.dst_off(i % n, size),
                        size,
                        i,
                        false,
                        &mut found,
                    )
                };
            }
            received += 1;
            post_next(&mut posted)?;
            if lat {
                // (`sends`: outstanding of the i - first Sends posted.)
                let j = i - first;
                if mem {
                    self.reap(
                        K_SEND,
                        &mut sends,
                        Window {
                            posted: j,
                            count,
                            ring,
                        },
                        "a Send's completion",
                    )?;
                }
                while sends >= ring {
                    let d = self.next_of(K_SEND, "a Send's completion")?;
                    sends = left(j, d);
                }
                let s = i % ring;
                // SAFETY: the Send from source slot s (iteration i - ring)
                // completed: fewer than `ring` in flight, completed in order.
                unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, mem) };
                ep.post_send_flags(
                    self.data.triplet(self.src_off(s, size), size),
                    ck(K_SEND, j),
                    self.req_flags(j, count, ring),
                )?;
                sends += 1;
            }
        }
        while sends > 0 {
            let d = self.next_of(K_SEND, "a Send's completion")?;
            sends = left(count, d);
        }
        Ok(found)
    }

    /// Connection rate, server side.
    fn serve_conns(&self, b: Batch, cr: &Evd) -> Result<Option<Mismatch>, Error> {
        let attr = ep_attr(64, 2, 2, 0);
        let w2 = self.w2();
        let mut found = None;
        for j in 0..b.count {
            let i = b.first + j;
            let ev = self.wait_request(cr)?;
            let req = Request::from_event(&ev)?;
            if req.private.len() < 4 || req.private[..4] != MAGIC_CONN.to_be_bytes() {
                req.reject();
                return Err(Error(
                    "a connection request that is not the client's arrived during the connection test".into(),
                ));
            }
            let ep = Ep::create(self.ia, &self.pz, &self.dto2, &self.conn2, &attr)?;
            ep.post_recv(self.ctl.triplet(CONN_DST_OFF, 8), ck(K_RECV, j))?;
            req.accept(&ep, &[])?;
            let ev = w2.conn_event("a connection of the connection test")?;
            if ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED {
                return Err(Error(format!(
                    "accepting connection {i}: {}",
                    event_name(ev.event_number)
                )));
            }
            let d = w2.next("the connection test's message")?;
            if kind_of(d.cookie) != K_RECV {
                return Err(unexpected(d, "the connection test's message"));
            }
            // SAFETY: the receive completed.
            unsafe { self.check_payload(&self.ctl, CONN_DST_OFF, 8, i, false, &mut found) };
            // SAFETY: the previous connection's Send completed (or was
            // flushed) and its endpoint is freed.
            unsafe { self.put_payload(&self.ctl, CONN_SRC_OFF, 8, i, false) };
            if !self.p.verify {
                let mut v = [0u8; 8];
                // SAFETY: the receive completed; the source is unused.
                unsafe {
                    self.ctl.read_bytes(CONN_DST_OFF, &mut v);
                    self.ctl.write_bytes(CONN_SRC_OFF, &v);
                }
            }
            ep.post_send(self.ctl.triplet(CONN_SRC_OFF, 8), ck(K_SEND, j))?;
            // The answer completes, or is flushed when the client has its
            // answer and disconnects first; then the disconnection.
            let ev = w2.next_event("the answer's completion")?;
            if ev.event_number != DAT_DTO_COMPLETION_EVENT {
                return Err(Error(format!(
                    "connection {i}: expected the answer's completion, got {}",
                    event_name(ev.event_number)
                )));
            }
            let ev = w2.conn_event("a disconnection of the connection test")?;
            if !matches!(
                ev.event_number,
                DAT_CONNECTION_EVENT_DISCONNECTED | DAT_CONNECTION_EVENT_BROKEN
            ) {
                return Err(Error(format!(
                    "connection {i}: expected its disconnection, got {}",
                    event_name(ev.event_number)
                )));
            }
            drop(ep);
        }
        Ok(found)
    }

    /// A connection request on `cr`, watching the main connection.
    fn wait_request(&self, cr: &Evd) -> Result<DAT_EVENT, Error> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error(format!(
                    "timed out after {} s waiting for a connection of the connection test",
                    self.timeout.as_secs_f64()
                )));
            }
            if let Some(ev) = cr.wait(left.min(Duration::from_millis(500)))? {
                if ev.event_number != DAT_CONNECTION_REQUEST_EVENT {
                    return Err(Error(format!(
                        "waiting for a connection request: got {}",
                        event_name(ev.event_number)
                    )));
                }
                return Ok(ev);
            }
            self.w().check_conn()?;
        }
    }
}
