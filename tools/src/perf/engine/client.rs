//! The client's side of a session: the data phase of each batch over DAT
//! (ping-pong, RDMA Read latency, windowed streams) and the connection test.

use super::*;

impl Session<'_> {
    /// The client's data phase of one batch over DAT.
    pub(super) fn client_batch(
        &self,
        b: Batch,
        times: &mut Vec<u64>,
    ) -> Result<(f64, Option<Mismatch>), Error> {
        match (self.p.test, self.p.mode) {
            (Test::Send, Metric::Lat) => self.send_pingpong_client(b, times),
            (Test::Write, Metric::Lat) => self.write_pingpong(b, true, times),
            (Test::Read, Metric::Lat) => self.read_lat(b, times),
            (Test::Send | Test::Write | Test::Read, Metric::Bw) => self.windowed(b, times),
            (Test::Conn | Test::Idle, _) => unreachable!("conn and idle have their own loops"),
        }
    }

    fn send_pingpong_client(
        &self,
        b: Batch,
        times: &mut Vec<u64>,
    ) -> Result<(f64, Option<Mismatch>), Error> {
        let Batch { size, first, count } = b;
        let ep = self.ep();
        let mem = self.mem();
        let mut found = None;
        let ring = self.ring(size);
        let mut sends = 0u64;
        let start = Instant::now();
        for j in 0..count {
            let i = first + j;
            let r = i % 2;
            let s = i % ring;
            let last = self.dst_off(r, size) + size - 1;
            if mem {
                // SAFETY: the receive into slot r (iteration i - 2)
                // completed and was dequeued; nothing is posted on it.
                unsafe { self.data.set(last, 0) };
            }
            ep.post_recv(
                self.data.triplet(self.dst_off(r, size), size),
                ck(K_RECV, j),
            )?;
            // (`sends`: outstanding of the j Sends posted so far.)
            while sends >= ring {
                let d = self.next_of(K_SEND, "a Send's completion")?;
                sends = left(j, d);
            }
            // SAFETY: the Send that used source slot s (iteration i - ring)
            // completed: fewer than `ring` Sends are in flight and they
            // complete in order.
            unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, mem) };
            let flags = self.req_flags(j, count, ring);
            let t0 = Instant::now();
            ep.post_send_flags(
                self.data.triplet(self.src_off(s, size), size),
                ck(K_SEND, j),
                flags,
            )?;
            sends += 1;
            if mem {
                let v = self.poll_mem(last, 0, "the server's answer")?;
                times.push(t0.elapsed().as_nanos() as u64 / 2);
                // SAFETY: the answer landed (its last byte is there); its
                // receive is ours until we post the slot again.
                unsafe { self.check_tagged(self.dst_off(r, size), size, i, v, &mut found) };
            }
            // With mem the answer is there: the receive completion that
            // goes with it (dequeued as poll does).
            loop {
                let d = self.next("the server's answer")?;
                match kind_of(d.cookie) {
                    K_SEND => sends = left(j + 1, d),
                    K_RECV => {
                        if d.len != size {
                            return Err(Error(format!(
                                "received {} bytes, expected {size}",
                                d.len
                            )));
                        }
                        break;
                    }
                    _ => return Err(unexpected(d, "the server's answer")),
                }
            }
            if mem {
                self.reap(
                    K_SEND,
                    &mut sends,
                    Window {
                        posted: j + 1,
                        count,
                        ring,
                    },
                    "a Send's completion",
                )?;
                continue;
            }
            times.push(t0.elapsed().as_nanos() as u64 / 2);
            // SAFETY: the receive into destination slot r completed.
            unsafe {
                self.check_payload(
                    &self.data,
                    self.dst_off(r, size),
                    size,
                    i,
                    false,
                    &mut found,
                )
            };
        }
        // The run ends with the last round trip; the trailing completions
        // (acknowledged later) are not part of it.
        let secs = start.elapsed().as_secs_f64();
        while sends > 0 {
            let d = self.next_of(K_SEND, "a Send's completion")?;
            sends = left(count, d);
        }
        Ok((secs, found))
    }

    /// Spins until the byte at `off` of the data region differs from
    /// `prev`, dequeuing the EVD in the loop (RDMA Write completions:
    /// `writes` is decremented); returns the new value.
    fn spin_byte(&self, off: u64, prev: u8, writes: &mut u64, posted: u64) -> Result<u8, Error> {
        let deadline = Instant::now() + self.timeout;
        let mut spins = 0u32;
        loop {
            let v = self.data.load_volatile(off);
            if v != prev {
                // What the peer wrote before the last byte is visible too.
                fence(Ordering::Acquire);
                return Ok(v);
            }
            if let Some(d) = self.try_next("an RDMA Write's completion")? {
                if kind_of(d.cookie) != K_WRITE {
                    return Err(unexpected(d, "an RDMA Write's completion"));
                }
                *writes = left(posted, d);
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 {
                self.w().check_conn()?;
                if Instant::now() > deadline {
                    return Err(Error(format!(
                        "timed out after {} s waiting for the peer's RDMA Write",
                        self.timeout.as_secs_f64()
                    )));
                }
            }
            std::hint::spin_loop();
        }
    }

    /// RDMA Write ping-pong: each side polls the last byte of its
    /// destination slot 0 for the iteration's tag; `active` writes first.
    /// poll/evd/cno dequeue in the polling loop (as ib_write_lat does);
    /// mem only loads, and reaps its writes' completions afterwards.
    pub(super) fn write_pingpong(
        &self,
        b: Batch,
        active: bool,
        times: &mut Vec<u64>,
    ) -> Result<(f64, Option<Mismatch>), Error> {
        let Batch { size, first, count } = b;
        let ep = self.ep();
        let mem = self.mem();
        let last = self.dst_off(0, size) + size - 1;
        // The passive side cleared the byte before its READY, and the
        // peer's first write may land (the library places data on
        // arrival) before this line runs: it starts from the 0 it wrote.
        let mut prev = if active {
            self.data.load_volatile(last)
        } else {
            0
        };
        let mut found: Option<Mismatch> = None;
        let ring = self.ring(size);
        let mut writes = 0u64;
        // The last byte of the peer's next write.
        let arrive = |prev: u8, writes: &mut u64, posted: u64| {
            if mem {
                self.poll_mem(last, prev, "the peer's RDMA Write")
            } else {
                self.spin_byte(last, prev, writes, posted)
            }
        };
        let start = Instant::now();
        for j in 0..count {
            let i = first + j;
            // (`writes`: outstanding of the j writes posted so far.)
            if !active {
                prev = arrive(prev, &mut writes, j)?;
                // SAFETY: the peer's write of iteration i landed (its last
                // byte is there) and it writes nothing more until we answer.
                unsafe { self.check_tagged(self.dst_off(0, size), size, i, prev, &mut found) };
                if mem {
                    self.reap(
                        K_WRITE,
                        &mut writes,
                        Window {
                            posted: j,
                            count,
                            ring,
                        },
                        "an RDMA Write's completion",
                    )?;
                }
            }
            let s = i % ring;
            while writes >= ring {
                let d = self.next_of(K_WRITE, "an RDMA Write's completion")?;
                writes = left(j, d);
            }
            // SAFETY: the write from source slot s (iteration i - ring)
            // completed: fewer than `ring` writes are in flight and they
            // complete in order.
            unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, true) };
            let flags = self.req_flags(j, count, ring);
            let t0 = Instant::now();
            ep.post_write_flags(
                self.data.triplet(self.src_off(s, size), size),
                self.peer_dst(0, size),
                ck(K_WRITE, j),
                flags,
            )?;
            writes += 1;
            if active {
                prev = arrive(prev, &mut writes, j + 1)?;
                times.push(t0.elapsed().as_nanos() as u64 / 2);
                // SAFETY: as above.
                unsafe { self.check_tagged(self.dst_off(0, size), size, i, prev, &mut found) };
                if mem {
                    self.reap(
                        K_WRITE,
                        &mut writes,
                        Window {
                            posted: j + 1,
                            count,
                            ring,
                        },
                        "an RDMA Write's completion",
                    )?;
                }
            }
        }
        // The run ends with the last round trip; the trailing completions
        // (acknowledged later) are not part of it.
        let secs = start.elapsed().as_secs_f64();
        while writes > 0 {
            let d = self.next_of(K_WRITE, "an RDMA Write's completion")?;
            writes = left(count, d);
        }
        Ok((secs, found))
    }

    fn read_lat(&self, b: Batch, times: &mut Vec<u64>) -> Result<(f64, Option<Mismatch>), Error> {
        let Batch { size, first, count } = b;
        let n = slots(size, self.p.depth);
        let ep = self.ep();
        let mem = self.mem();
        let mut found = None;
        let start = Instant::now();
        for j in 0..count {
            let i = first + j;
            // Each iteration its own slot when the server wrote them (-c,
            // or the tags of mem): a batch is at most one pass (cap).
            let s = if self.p.verify || mem { i % n } else { 0 };
            let last = self.dst_off(s, size) + size - 1;
            if mem {
                // SAFETY: the previous read into slot s completed.
                unsafe { self.data.set(last, 0) };
            }
            let t0 = Instant::now();
            ep.post_read(
                self.data.triplet(self.dst_off(s, size), size),
                self.peer_src(s, size),
                ck(K_READ, j),
            )?;
            if mem {
                let v = self.poll_mem(last, 0, "an RDMA Read's data")?;
                times.push(t0.elapsed().as_nanos() as u64);
                // SAFETY: the read's data landed (its last byte is there);
                // nothing else targets slot s.
                unsafe { self.check_tagged(self.dst_off(s, size), size, i, v, &mut found) };
            }
            let d = self.next_of(K_READ, "an RDMA Read's completion")?;
            if !mem {
                times.push(t0.elapsed().as_nanos() as u64);
            }
            if d.len != size {
                return Err(Error(format!(
                    "an RDMA Read moved {} bytes, expected {size}",
                    d.len
                )));
            }
            if mem {
                continue;
            }
            // SAFETY: the read into destination slot s completed.
            unsafe {
                self.check_payload(
                    &self.data,
                    self.dst_off(s, size),
                    size,
                    i,
                    false,
                    &mut found,
                )
            };
        }
        Ok((start.elapsed().as_secs_f64(), found))
    }

    /// Bandwidth: `depth` Sends, RDMA Writes or RDMA Reads in flight.
    fn windowed(&self, b: Batch, times: &mut Vec<u64>) -> Result<(f64, Option<Mismatch>), Error> {
        let Batch { size, first, count } = b;
        let test = self.p.test;
        let mem = self.mem();
        let n = slots(size, self.p.depth);
        let mut w = u64::from(self.p.depth);
        if test == Test::Read {
            w = w.min(self.read_window);
        }
        if self.p.verify || mem {
            // A slot is rewritten (or its tag cleared) only once its
            // previous operation completed.
            w = w.min(n);
        }
        let ep = self.ep();
        let kind = match test {
            Test::Send => K_SEND,
            Test::Write => K_WRITE,
            _ => K_READ,
        };
        let what = match test {
            Test::Send => "a Send's completion",
            Test::Write => "an RDMA Write's completion",
            _ => "an RDMA Read's completion",
        };
        let mut posted_at = vec![Instant::now(); w as usize];
        let mut found = None;
        let (mut posted, mut done) = (0u64, 0u64);
        let start = Instant::now();
        while done < count {
            while posted < count && posted - done < w {
                let i = first + posted;
                let s = i % n;
                let src = self.data.triplet(self.src_off(s, size), size);
                if test != Test::Read {
                    // SAFETY: slot s's previous operation (iteration i - n)
                    // completed: with -c or mem the window is at most n;
                    // otherwise the payload is not rewritten (put_payload
                    // writes nothing unless -c or tagged).
                    unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, mem) };
                } else if mem {
                    // SAFETY: the previous read into slot s (iteration
                    // i - n) completed: the window is at most n.
                    unsafe { self.data.set(self.dst_off(s, size) + size - 1, 0) };
                }
                posted_at[(posted % w) as usize] = Instant::now();
                match test {
                    Test::Send => ep.post_send(src, ck(K_SEND, posted))?,
                    Test::Write => {
                        ep.post_write(src, self.peer_dst(s, size), ck(K_WRITE, posted))?
                    }
                    _ => ep.post_read(
                        self.data.triplet(self.dst_off(s, size), size),
                        self.peer_src(s, size),
                        ck(K_READ, posted),
                    )?,
                }
                posted += 1;
            }
            if mem && test == Test::Read {
                // The oldest read's data, then its completion.
                let i = first + done;
                let off = self.dst_off(i % n, size);
                let v = self.poll_mem(off + size - 1, 0, "an RDMA Read's data")?;
                times.push(posted_at[(done % w) as usize].elapsed().as_nanos() as u64);
                // SAFETY: the read's data landed (its last byte is there);
                // no other read in flight targets slot i % n (window <= n).
                unsafe { self.check_tagged(off, size, i, v, &mut found) };
            }
            let d = self.next_of(kind, what)?;
            if idx_of(d.cookie) != done & IDX_MASK {
                return Err(Error(format!(
                    "completions out of order: got #{}, expected #{done}",
                    idx_of(d.cookie)
                )));
            }
            if !(mem && test == Test::Read) {
                times.push(posted_at[(done % w) as usize].elapsed().as_nanos() as u64);
            }
            if test == Test::Read && d.len != size {
                return Err(Error(format!(
                    "an RDMA Read moved {} bytes, expected {size}",
                    d.len
                )));
            }
            if test == Test::Read && !mem {
                let i = first + done;
                // SAFETY: the read into destination slot i % n completed;
                // with -c no other read in flight targets that slot.
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
            done += 1;
        }
        Ok((start.elapsed().as_secs_f64(), found))
    }

    /// Connection rate: connect, 8-byte round trip, disconnect, free.
    pub(super) fn client_conns(
        &self,
        server: SocketAddr,
        qual: u64,
        b: Batch,
        times: &mut Vec<u64>,
    ) -> Result<(f64, Option<Mismatch>), Error> {
        let attr = ep_attr(64, 2, 2, 0);
        let w2 = self.w2();
        let mut found = None;
        let start = Instant::now();
        for j in 0..b.count {
            let i = b.first + j;
            let t0 = Instant::now();
            let ep = Ep::create(self.ia, &self.pz, &self.dto2, &self.conn2, &attr)?;
            ep.post_recv(self.ctl.triplet(CONN_DST_OFF, 8), ck(K_RECV, j))?;
            // SAFETY: the previous connection's Send completed and its
            // endpoint was freed: nobody uses the 8-byte source.
            unsafe { self.put_payload(&self.ctl, CONN_SRC_OFF, 8, i, false) };
            let mut pd = [0u8; CONN_PD_LEN];
            pd[..4].copy_from_slice(&MAGIC_CONN.to_be_bytes());
            pd[4..].copy_from_slice(&(i as u32).to_be_bytes());
            ep.connect(server, qual, self.timeout, &pd)?;
            let ev = w2.conn_event("a connection of the connection test")?;
            if ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED {
                return Err(Error(format!(
                    "connection {i} of the connection test failed: {}",
                    event_name(ev.event_number)
                )));
            }
            ep.post_send(self.ctl.triplet(CONN_SRC_OFF, 8), ck(K_SEND, j))?;
            let (mut got_send, mut got_recv) = (false, false);
            while !(got_send && got_recv) {
                let d = w2.next("the connection test's round trip")?;
                match kind_of(d.cookie) {
                    K_SEND => got_send = true,
                    K_RECV => got_recv = true,
                    _ => return Err(unexpected(d, "the connection test's round trip")),
                }
            }
            // SAFETY: the receive completed.
            unsafe { self.check_payload(&self.ctl, CONN_DST_OFF, 8, i, false, &mut found) };
            ep.disconnect(true)?;
            let ev = w2.conn_event("a disconnection of the connection test")?;
            if ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED {
                return Err(Error(format!(
                    "disconnecting connection {i}: got {}",
                    event_name(ev.event_number)
                )));
            }
            drop(ep);
            times.push(t0.elapsed().as_nanos() as u64);
        }
        Ok((start.elapsed().as_secs_f64(), found))
    }
}
