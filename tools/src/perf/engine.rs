//! The two sides of a run over DAT.
//!
//! Each side has one endpoint, one DTO EVD for both directions (with a CNO
//! for `--wait cno`), a connection EVD, and two registered regions: the
//! data region (sources, then destinations: `pool` bytes each, cut into
//! slots of the message size) and a small control region (control
//! messages, the 8-byte messages of the connection test).
//!
//! The client drives: for every size, batches of iterations (small enough
//! that every wait of the passive side ends within the timeout, and at most
//! one pass over the slots when the target checks what it received or
//! holds what is read), each framed by BEGIN → READY and END → RESULT.
//! Receive discipline on the ordered connection: the server keeps exactly
//! one control receive posted while idle; in a send test it posts the next
//! control receive only after the batch's last data receive, and the
//! client sends END only after its last message completed; the client
//! posts a control receive before each control message that has an answer.
//!
//! `--wait mem`: the receiver of the data polls the last byte of its buffer
//! (`poll_mem`: volatile loads, no library call) for the iteration's tag,
//! then calls the library (the completion that goes with the message, its
//! own request completions). A buffer's last byte is cleared before the
//! buffer is posted or handed to the peer again. `--peer compute`: the
//! target of reads (and of write streams) computes during a batch until
//! the client's end flag (an 8-byte RDMA Write into its flag page) lands.

use std::cell::Cell;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use dat_abi::*;

use super::dat::{ep_attr, event_name, Cno, Dto, Ep, Evd, Ia, Pz, Region, Request, Waiter};
use super::proto::{
    corrupt, corrupt_offset, flag_off, pattern, slots, tag, Batch, Ctl, CtlKind, Mismatch, Mode,
    Params, Peer, RemoteBuf, Test, Transport, Wait, CONN_PD_LEN, CTL_LEN, FLAG_LEN, FLAG_PAGE,
    MAGIC_CONN,
};
use super::stats::Samples;
use super::tcp;
use super::Error;

// Cookies: the kind of DTO in the top byte, the iteration in the rest.
const K_CTL_SEND: u64 = 1;
const K_CTL_RECV: u64 = 2;
const K_SEND: u64 = 3;
const K_RECV: u64 = 4;
const K_WRITE: u64 = 5;
const K_READ: u64 = 6;
const K_FLAG: u64 = 7;
const IDX_MASK: u64 = (1 << 56) - 1;

fn ck(kind: u64, idx: u64) -> u64 {
    kind << 56 | (idx & IDX_MASK)
}
fn kind_of(c: u64) -> u64 {
    c >> 56
}
fn idx_of(c: u64) -> u64 {
    c & IDX_MASK
}
fn kind_name(k: u64) -> &'static str {
    match k {
        K_CTL_SEND => "control Send",
        K_CTL_RECV => "control Recv",
        K_SEND => "Send",
        K_RECV => "Recv",
        K_WRITE => "RDMA Write",
        K_READ => "RDMA Read",
        K_FLAG => "end flag RDMA Write",
        _ => "unknown DTO",
    }
}

// Control region layout.
const CTL_SEND_OFF: u64 = 0;
const CTL_RECV_OFF: u64 = 64;
const CONN_SRC_OFF: u64 = 128;
const CONN_DST_OFF: u64 = 192;
/// The source of the end flag of `--peer compute`.
const FLAG_SRC_OFF: u64 = 256;
const CTL_REGION: u64 = 4096;

/// The first of two mismatches (by iteration).
fn first_of(a: Option<Mismatch>, b: Option<Mismatch>) -> Option<Mismatch> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if (y.iter, y.byte) < (x.iter, x.byte) {
            y
        } else {
            x
        }),
        (x, y) => x.or(y),
    }
}

/// `DAT_PERF_CORRUPT=N`: the iteration whose payload this side corrupts.
pub fn corrupt_from_env() -> Option<u64> {
    std::env::var("DAT_PERF_CORRUPT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
}

/// Iterations of the untimed warm-up batch before each size's run.
pub const WARMUP: u64 = 16;
/// Iteration numbers of the warm-up batch start here (so that
/// `DAT_PERF_CORRUPT=N` names a timed iteration).
pub const WARMUP_FIRST: u64 = 1 << 40;

/// Where a size's run goes: over DAT or the TCP baseline.
pub struct Target {
    pub transport: Transport,
    /// The server's IA address and qualifier (DAT connections of conn).
    pub server: SocketAddr,
    pub qual: u64,
    /// The server's TCP baseline listener.
    pub tcp: Option<SocketAddr>,
}

/// How long a batch should take, so that the passive side's waits stay
/// far within the timeout.
fn batch_target(timeout: Duration) -> f64 {
    (timeout.as_secs_f64() / 4.0).min(0.25)
}

/// Cuts a size's run into batches.
pub struct Plan {
    amount: super::proto::Amount,
    cap: u64,
    target: f64,
    done: u64,
    secs: f64,
    /// The last batch's iterations.
    last: u64,
    started: Instant,
}

impl Plan {
    pub fn new(amount: super::proto::Amount, cap: u64, timeout: Duration) -> Plan {
        Plan {
            amount,
            cap: cap.max(1),
            target: batch_target(timeout),
            done: 0,
            secs: 0.0,
            last: 0,
            started: Instant::now(),
        }
    }

    pub fn next(&self) -> Option<u64> {
        let remaining = match self.amount {
            super::proto::Amount::Iters(n) => n - self.done,
            super::proto::Amount::DurationMs(ms) => {
                if self.done > 0 && self.started.elapsed().as_secs_f64() * 1000.0 >= f64::from(ms) {
                    return None;
                }
                u64::MAX
            }
        };
        if remaining == 0 {
            return None;
        }
        // 16 first, then what fits the target time, growing at most
        // fourfold from one batch to the next (an optimistic first
        // estimate must not make one batch outlast the peer's timeout).
        let want = if self.done == 0 {
            16
        } else {
            let per = (self.secs / self.done as f64).max(1e-9);
            ((self.target / per) as u64).clamp(1, 4 * self.last.max(4))
        };
        Some(want.min(remaining).min(self.cap).min(1 << 24))
    }

    pub fn done(&mut self, count: u64, secs: f64) {
        self.last = count;
        self.done += count;
        self.secs += secs;
    }
}

/// One side's DAT objects for one connection. Field order is drop order:
/// the endpoint first, then memory, then EVDs and the CNO.
pub struct Session<'a> {
    pub ep: Option<Ep>,
    data: Region,
    ctl: Region,
    pz: Pz,
    dto: Evd,
    conn: Evd,
    dto2: Evd,
    conn2: Evd,
    cno: Option<Cno>,
    pub ia: &'a Ia,
    pub p: Params,
    /// Bytes of each half of the data region.
    pool: u64,
    /// The peer's data region.
    pub peer: RemoteBuf,
    pub timeout: Duration,
    /// RDMA Reads this side's endpoint allows in and out.
    pub reads: i32,
    /// Reads in flight the client may have (its own and the server's limit).
    pub read_window: u64,
    ctl_pending: Cell<bool>,
    ctl_early: Cell<Option<Dto>>,
    corrupt_at: Option<u64>,
    pub tcp: Option<tcp::Link>,
    pub tcp_bufs: tcp::Bufs,
}

impl<'a> Session<'a> {
    pub fn new(ia: &'a Ia, p: Params, timeout: Duration) -> Result<Session<'a>, Error> {
        let depth = p.depth as i32;
        let recv_dtos = 2 * depth + 4;
        let request_dtos = depth + 4;
        let cno = if p.wait == Wait::Cno {
            Some(Cno::create(ia)?)
        } else {
            None
        };
        let pz = Pz::create(ia)?;
        let dto = Evd::create(
            ia,
            recv_dtos + request_dtos + 8,
            DAT_EVD_DTO_FLAG,
            cno.as_ref(),
        )?;
        let conn = Evd::create(ia, 8, DAT_EVD_CONNECTION_FLAG, None)?;
        let dto2 = Evd::create(ia, 16, DAT_EVD_DTO_FLAG, cno.as_ref())?;
        let conn2 = Evd::create(ia, 8, DAT_EVD_CONNECTION_FLAG, None)?;
        let pool = super::proto::pool_len(&p);
        let data = Region::new(ia, &pz, 2 * pool + FLAG_PAGE)?;
        let ctl = Region::new(ia, &pz, CTL_REGION)?;
        let reads = (p.depth as i32)
            .min(ia.max_rdma_read_in)
            .min(ia.max_rdma_read_out);
        if p.test == Test::Read && reads < 1 {
            return Err(Error(format!(
                "IA {} allows no RDMA Reads (max_rdma_read_per_ep_in/out)",
                ia.name
            )));
        }
        Ok(Session {
            ep: None,
            data,
            ctl,
            pz,
            dto,
            conn,
            dto2,
            conn2,
            cno,
            ia,
            p,
            pool,
            peer: RemoteBuf::default(),
            timeout,
            reads: reads.max(0),
            read_window: reads.max(1) as u64,
            ctl_pending: Cell::new(false),
            ctl_early: Cell::new(None),
            corrupt_at: if p.verify { corrupt_from_env() } else { None },
            tcp: None,
            tcp_bufs: tcp::Bufs::default(),
        })
    }

    /// This side's data region as the peer sees it.
    pub fn local_buf(&self) -> RemoteBuf {
        RemoteBuf {
            rmr: self.data.rmr_ctx,
            addr: self.data.addr(0),
            len: self.pool,
        }
    }

    pub fn create_ep(&mut self) -> Result<(), Error> {
        let depth = self.p.depth as i32;
        let max = self.p.sizes.max().max(CTL_LEN as u64);
        let attr = ep_attr(max, 2 * depth + 4, depth + 4, self.reads);
        self.ep = Some(Ep::create(self.ia, &self.pz, &self.dto, &self.conn, &attr)?);
        Ok(())
    }

    pub fn ep(&self) -> &Ep {
        self.ep.as_ref().expect("endpoint created")
    }

    pub fn w(&self) -> Waiter<'_> {
        Waiter {
            dto: &self.dto,
            conn: &self.conn,
            cno: self.cno.as_ref(),
            wait: self.p.wait,
            timeout: self.timeout,
        }
    }

    fn w2(&self) -> Waiter<'_> {
        Waiter {
            dto: &self.dto2,
            conn: &self.conn2,
            cno: self.cno.as_ref(),
            wait: self.p.wait,
            timeout: self.timeout,
        }
    }

    /// The next DTO completion of the data phase. A control Send's
    /// completion is noted; a control message that arrives early (the
    /// peer's END before our last completion) is kept for `wait_ctl`.
    fn next(&self, what: &str) -> Result<Dto, Error> {
        loop {
            let d = self.w().next(what)?;
            if !self.set_aside(d)? {
                return Ok(d);
            }
        }
    }

    fn try_next(&self, what: &str) -> Result<Option<Dto>, Error> {
        loop {
            match self.w().try_next(what)? {
                Some(d) if self.set_aside(d)? => {}
                other => return Ok(other),
            }
        }
    }

    /// Takes care of control completions; true if `d` was one.
    fn set_aside(&self, d: Dto) -> Result<bool, Error> {
        match kind_of(d.cookie) {
            K_CTL_SEND => self.ctl_pending.set(false),
            K_CTL_RECV => {
                if self.ctl_early.get().is_some() {
                    return Err(Error("protocol error: two control messages at once".into()));
                }
                self.ctl_early.set(Some(d));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The next completion, which must be of `kind`.
    fn next_of(&self, kind: u64, what: &str) -> Result<Dto, Error> {
        let d = self.next(what)?;
        if kind_of(d.cookie) != kind {
            return Err(unexpected(d, what));
        }
        Ok(d)
    }

    /// Waits for the completion of the control Send in flight, if any.
    pub fn flush_ctl(&self) -> Result<(), Error> {
        while self.ctl_pending.get() {
            let d = self.w().next("a control message's completion")?;
            if !self.set_aside(d)? {
                return Err(unexpected(d, "a control message's completion"));
            }
        }
        Ok(())
    }

    pub fn post_ctl_recv(&self) -> Result<(), Error> {
        self.ep().post_recv(
            self.ctl.triplet(CTL_RECV_OFF, CTL_LEN as u64),
            ck(K_CTL_RECV, 0),
        )
    }

    pub fn send_ctl(&self, c: Ctl) -> Result<(), Error> {
        self.flush_ctl()?;
        // SAFETY: the control Send buffer's previous Send completed
        // (flush_ctl); the peer has no access to it (a Send source).
        unsafe { self.ctl.write_bytes(CTL_SEND_OFF, &c.encode()) };
        self.ep().post_send(
            self.ctl.triplet(CTL_SEND_OFF, CTL_LEN as u64),
            ck(K_CTL_SEND, 0),
        )?;
        self.ctl_pending.set(true);
        Ok(())
    }

    /// Waits for a control message (its receive must be posted).
    pub fn wait_ctl(&self, what: &str) -> Result<Ctl, Error> {
        let d = match self.ctl_early.take() {
            Some(d) => d,
            None => loop {
                let d = self.w().next(what)?;
                match kind_of(d.cookie) {
                    K_CTL_SEND => self.ctl_pending.set(false),
                    K_CTL_RECV => break d,
                    _ => return Err(unexpected(d, what)),
                }
            },
        };
        let mut b = [0u8; CTL_LEN];
        // SAFETY: the control receive completed: the buffer is ours again.
        unsafe { self.ctl.read_bytes(CTL_RECV_OFF, &mut b) };
        Ctl::decode(&b[..(d.len as usize).min(CTL_LEN)]).map_err(Error)
    }

    /// Sends `c` and waits for the answer of kind `expect`.
    fn exchange(&self, c: Ctl, expect: CtlKind, what: &str) -> Result<Ctl, Error> {
        self.post_ctl_recv()?;
        self.send_ctl(c)?;
        let r = self.wait_ctl(what)?;
        if r.kind != expect {
            return Err(Error(format!(
                "protocol error: expected {what}, got {:?}",
                r.kind
            )));
        }
        Ok(r)
    }

    fn src_off(&self, slot: u64, size: u64) -> u64 {
        slot * size
    }

    fn dst_off(&self, slot: u64, size: u64) -> u64 {
        self.pool + slot * size
    }

    fn remote(&self, addr: u64, len: u64) -> DAT_RMR_TRIPLET {
        DAT_RMR_TRIPLET {
            rmr_context: self.peer.rmr,
            pad: 0,
            target_address: addr,
            segment_length: len,
        }
    }

    fn peer_src(&self, slot: u64, size: u64) -> DAT_RMR_TRIPLET {
        self.remote(self.peer.addr + slot * size, size)
    }

    fn peer_dst(&self, slot: u64, size: u64) -> DAT_RMR_TRIPLET {
        self.remote(self.peer.addr + self.peer.len + slot * size, size)
    }

    /// Writes iteration `i`'s payload at `off` (its last byte the tag when
    /// `tagged`), corrupted when `DAT_PERF_CORRUPT` names `i`.
    ///
    /// # Safety
    /// The bytes are quiescent: no DTO of ours in flight on them and the
    /// peer has no reason to touch them now.
    unsafe fn put_payload(&self, region: &Region, off: u64, size: u64, i: u64, tagged: bool) {
        let body = if tagged { size - 1 } else { size };
        if self.p.verify {
            // SAFETY: quiescent (caller).
            unsafe { region.fill(off, body, |k| pattern(i, k)) };
        }
        if tagged {
            // SAFETY: as above.
            unsafe { region.set(off + size - 1, tag(i)) };
        }
        if self.corrupt_at == Some(i) {
            let k = corrupt_offset(size);
            let good = if tagged && k == size - 1 {
                tag(i)
            } else {
                pattern(i, k)
            };
            // SAFETY: as above.
            unsafe { region.set(off + k, corrupt(good)) };
        }
    }

    /// Checks iteration `i`'s payload (without the tag byte when `tagged`).
    ///
    /// # Safety
    /// As for [`Session::put_payload`]: the bytes arrived and nobody
    /// writes them now.
    unsafe fn check_payload(
        &self,
        region: &Region,
        off: u64,
        size: u64,
        i: u64,
        tagged: bool,
        found: &mut Option<Mismatch>,
    ) {
        if !self.p.verify || found.is_some() {
            return;
        }
        let body = if tagged { size - 1 } else { size };
        // SAFETY: quiescent (caller).
        if let Some(k) = unsafe { region.find_diff(off, body, |k| pattern(i, k)) } {
            *found = Some(Mismatch { iter: i, byte: k });
        }
    }

    /// `--wait mem`.
    fn mem(&self) -> bool {
        self.p.wait == Wait::Mem
    }

    /// `--wait mem`: spins on the byte at `off` of the data region until it
    /// differs from `prev`, with volatile loads and no library call (the
    /// clock is read every 4096 loads for the deadline); returns it.
    fn poll_mem(&self, off: u64, prev: u8, what: &str) -> Result<u8, Error> {
        let deadline = Instant::now() + self.timeout;
        let mut spins = 0u32;
        loop {
            let v = self.data.load_volatile(off);
            if v != prev {
                // What the peer wrote before the last byte is visible too.
                fence(Ordering::Acquire);
                return Ok(v);
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 && Instant::now() > deadline {
                // Only now the library: is the connection gone?
                self.w().check_conn()?;
                return Err(Error(format!(
                    "timed out after {} s polling memory for {what}",
                    self.timeout.as_secs_f64()
                )));
            }
            std::hint::spin_loop();
        }
    }

    /// Iteration `i`'s tagged message at `off`, whose last byte `v` was
    /// seen: the tag, then (with -c) the rest.
    ///
    /// # Safety
    /// As for [`Session::check_payload`]: the message landed and nobody
    /// writes the slot now.
    unsafe fn check_tagged(
        &self,
        off: u64,
        size: u64,
        i: u64,
        v: u8,
        found: &mut Option<Mismatch>,
    ) {
        if v != tag(i) {
            if found.is_none() {
                *found = Some(Mismatch {
                    iter: i,
                    byte: size - 1,
                });
            }
        } else {
            // SAFETY: as the caller says.
            unsafe { self.check_payload(&self.data, off, size, i, true, found) };
        }
    }

    /// `--wait mem`: reaps the request completions (of `kind`) that are
    /// already there, without waiting; counts them off `n`.
    fn reap(&self, kind: u64, n: &mut u64, what: &str) -> Result<(), Error> {
        while *n > 0 {
            match self.try_next(what)? {
                Some(d) if kind_of(d.cookie) == kind => *n -= 1,
                Some(d) => return Err(unexpected(d, what)),
                None => break,
            }
        }
        Ok(())
    }

    /// The last byte of the end flag in our flag page.
    fn flag_byte(&self) -> u64 {
        flag_off(self.pool) + FLAG_LEN - 1
    }

    /// `--peer compute`: whether this batch's target computes.
    fn computes(&self, transport: Transport) -> bool {
        transport == Transport::Dat
            && self.p.peer == Peer::Compute
            && (self.p.test == Test::Read
                || (self.p.test == Test::Write && self.p.mode == Mode::Bw))
    }

    /// `--peer compute`, server: a busy compute loop over memory of our
    /// own, with no library call, until the client's end flag lands.
    fn compute_until_flag(&self) -> Result<(), Error> {
        let flag = self.flag_byte();
        let deadline = Instant::now() + self.timeout;
        let mut scratch = vec![0u64; 512];
        let mut acc = 0x9E37_79B9_7F4A_7C15u64;
        let mut rounds = 0u32;
        loop {
            for w in scratch.iter_mut() {
                acc = (acc.rotate_left(7) ^ *w).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                *w = acc;
            }
            std::hint::black_box(&scratch);
            if self.data.load_volatile(flag) != 0 {
                fence(Ordering::Acquire);
                return Ok(());
            }
            rounds = rounds.wrapping_add(1);
            if rounds % 256 == 0 && Instant::now() > deadline {
                self.w().check_conn()?;
                return Err(Error(format!(
                    "timed out after {} s computing until the client's end flag",
                    self.timeout.as_secs_f64()
                )));
            }
        }
    }

    /// `--peer compute`, client: the end flag into the server's flag page,
    /// after the batch's last operation completed; waits for its completion.
    fn post_end_flag(&self) -> Result<(), Error> {
        // SAFETY: the previous end flag's write completed (waited for
        // below); the peer has no access to our control region.
        unsafe { self.ctl.fill(FLAG_SRC_OFF, FLAG_LEN, |_| 0xFF) };
        self.ep().post_write(
            self.ctl.triplet(FLAG_SRC_OFF, FLAG_LEN),
            self.remote(self.peer.addr + flag_off(self.peer.len), FLAG_LEN),
            ck(K_FLAG, 0),
        )?;
        self.next_of(K_FLAG, "the end flag's completion")?;
        Ok(())
    }

    /// The idle test's period on this side: events that may come (control
    /// completions) are set aside; anything else is an error.
    fn idle_period(&self, d: Duration) -> Result<Cpu, Error> {
        let what = "nothing (the idle period)";
        let (c0, t0) = (cpu_ns(), Instant::now());
        let until = t0 + d;
        while let Some(ev) = self.w().event_until(until)? {
            let dto = self.w().dto(&ev, what)?;
            if !self.set_aside(dto)? {
                return Err(unexpected(dto, what));
            }
        }
        Ok(Cpu {
            cpu_ns: cpu_ns().saturating_sub(c0),
            wall_ns: t0.elapsed().as_nanos() as u64,
        })
    }

    // ---- the client --------------------------------------------------

    /// Connects to the server with our parameters; the server's answer.
    pub fn connect(
        &mut self,
        to: SocketAddr,
        qual: u64,
        host: &str,
    ) -> Result<super::proto::Hello, Error> {
        let pd = self.p.encode(self.local_buf());
        if self.ia.max_private_data < pd.len() {
            return Err(Error(format!(
                "IA {} carries {} bytes of private data, dat-perf needs {}",
                self.ia.name,
                self.ia.max_private_data,
                pd.len()
            )));
        }
        self.create_ep()?;
        let shown = if host == to.ip().to_string() {
            host.to_string()
        } else {
            format!("{host} ({})", to.ip())
        };
        let fail =
            |why: String| Error(format!("cannot connect to {shown} qualifier {qual}: {why}"));
        self.ep()
            .connect(to, qual, self.timeout, &pd)
            .map_err(|e| fail(e.0))?;
        let ev = self.w().connect_event("the connection to the server")?;
        match ev.event_number {
            DAT_CONNECTION_EVENT_ESTABLISHED => {}
            DAT_CONNECTION_EVENT_NON_PEER_REJECTED => {
                return Err(fail(
                    "refused (DAT_CONNECTION_EVENT_NON_PEER_REJECTED): is a dat-perf server listening there?"
                        .into(),
                ))
            }
            DAT_CONNECTION_EVENT_TIMED_OUT => {
                return Err(fail(format!(
                    "no answer within {} s (DAT_CONNECTION_EVENT_TIMED_OUT): is the host up? (--timeout)",
                    self.timeout.as_secs_f64()
                )))
            }
            DAT_CONNECTION_EVENT_UNREACHABLE => {
                return Err(fail(
                    "unreachable (DAT_CONNECTION_EVENT_UNREACHABLE): no route to the host, or it does not answer"
                        .into(),
                ))
            }
            n => return Err(fail(format!("{} ({n:#x})", event_name(n)))),
        }
        let hello =
            super::proto::Hello::decode(&super::dat::event_private_data(&ev)).map_err(Error)?;
        if let super::proto::Hello::Ok { buf, read_in, .. } = &hello {
            self.peer = *buf;
            self.read_window = (self.reads.max(1) as u64).min(u64::from(*read_in).max(1));
        }
        Ok(hello)
    }

    /// Graceful end of a connection we started: disconnect, wait for it.
    pub fn disconnect(&self) -> Result<(), Error> {
        self.ep().disconnect(true)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            // Completions flushed by the disconnect are drained on the way.
            while self.w().dto.dequeue()?.is_some() {}
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error("timed out waiting for the disconnection".into()));
            }
            if let Some(ev) = self.conn.wait(left.min(Duration::from_millis(100)))? {
                return match ev.event_number {
                    DAT_CONNECTION_EVENT_DISCONNECTED | DAT_CONNECTION_EVENT_BROKEN => Ok(()),
                    n => Err(Error(format!(
                        "waiting for the disconnection: got {}",
                        event_name(n)
                    ))),
                };
            }
        }
    }

    /// Source slots a ping-pong cycles through: a side waits for an old
    /// Send's or Write's completion (its acknowledgement may come late)
    /// only when all of them are in flight, not before every answer.
    fn ring(&self, size: u64) -> u64 {
        (u64::from(self.p.depth) + 2)
            .min(slots(size, self.p.depth))
            .max(1)
    }

    /// The batch cap of the client's plan: one pass over the slots when
    /// the server checks or serves slot contents, or polls them (mem).
    fn cap(&self, size: u64) -> u64 {
        let n = slots(size, self.p.depth);
        let per_slot =
            self.p.test == Test::Read || (self.p.test == Test::Write && self.p.mode == Mode::Bw);
        if (self.p.verify || self.mem()) && per_slot {
            n
        } else {
            u64::MAX
        }
    }

    /// One size's run over DAT or TCP; `progress` is told iterations done.
    /// An untimed warm-up batch (up to [`WARMUP`] iterations, numbered
    /// from [`WARMUP_FIRST`]; none for conn) comes first.
    pub fn run_size(
        &mut self,
        size: u64,
        to: &Target,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Samples, Error> {
        let cap = if to.transport == Transport::Dat {
            self.cap(size)
        } else {
            u64::MAX
        };
        if self.p.test != Test::Conn {
            let mut warm = WARMUP.min(cap);
            if let super::proto::Amount::Iters(n) = self.p.amount {
                warm = warm.min(n);
            }
            let b = Batch {
                size,
                first: WARMUP_FIRST,
                count: warm,
            };
            self.batch(to, b, &mut Vec::new())?;
        }
        let mut plan = Plan::new(self.p.amount, cap, self.timeout);
        let mut s = Samples::default();
        while let Some(count) = plan.next() {
            let b = Batch {
                size,
                first: s.iters,
                count,
            };
            let secs = self.batch(to, b, &mut s.times_ns)?;
            s.iters += count;
            s.secs += secs;
            plan.done(count, secs);
            progress(s.iters);
        }
        Ok(s)
    }

    /// One batch: BEGIN → READY, the data phase, END → RESULT; its
    /// seconds, or the first data mismatch either side saw.
    fn batch(&mut self, to: &Target, b: Batch, times: &mut Vec<u64>) -> Result<f64, Error> {
        let Batch { size, first, count } = b;
        if to.transport == Transport::Dat && self.p.test == Test::Write && self.p.mode == Mode::Lat
        {
            // SAFETY: the server writes into our destination only after
            // BEGIN; our previous batch's writes all arrived.
            unsafe { self.data.set(self.dst_off(0, size) + size - 1, 0) };
        }
        let begin = Ctl {
            transport: to.transport,
            size,
            first,
            count,
            ..Ctl::new(CtlKind::Begin)
        };
        self.exchange(begin, CtlKind::Ready, "the server's READY")?;
        let (secs, found) = match (to.transport, self.p.test) {
            (Transport::Dat, Test::Conn) => self.client_conns(to.server, to.qual, b, times)?,
            (Transport::Dat, _) => {
                let r = self.client_batch(b, times)?;
                if self.computes(to.transport) {
                    self.post_end_flag()?;
                }
                r
            }
            (Transport::Tcp, Test::Conn) => tcp::client_conns(
                to.tcp
                    .ok_or_else(|| Error("no TCP baseline address".into()))?,
                &self.p,
                self.timeout,
                b,
                self.corrupt_at,
                times,
            )?,
            (Transport::Tcp, _) => {
                let p = self.p;
                let corrupt_at = self.corrupt_at;
                let link = self
                    .tcp
                    .as_mut()
                    .ok_or_else(|| Error("no TCP baseline connection".into()))?;
                tcp::client_batch(link, &mut self.tcp_bufs, &p, b, corrupt_at, times)?
            }
        };
        let end = Ctl {
            kind: CtlKind::End,
            mismatch: found,
            ..begin
        };
        let res = self.exchange(end, CtlKind::Result, "the server's RESULT")?;
        if let Some(m) = first_of(found, res.mismatch) {
            return Err(Error(m.to_string()));
        }
        Ok(secs)
    }

    /// The idle test: BEGIN → READY, both sides idle for the duration, END
    /// → RESULT with the server's figures; (client, server).
    pub fn idle(&self) -> Result<(Cpu, Cpu), Error> {
        let ms = match self.p.amount {
            super::proto::Amount::DurationMs(ms) => ms,
            super::proto::Amount::Iters(_) => {
                return Err(Error("-t idle lasts --duration SECS".into()))
            }
        };
        let begin = Ctl {
            size: 8,
            count: u64::from(ms),
            ..Ctl::new(CtlKind::Begin)
        };
        self.exchange(begin, CtlKind::Ready, "the server's READY")?;
        let ours = self.idle_period(Duration::from_millis(u64::from(ms)))?;
        let end = Ctl {
            kind: CtlKind::End,
            ..begin
        };
        let res = self.exchange(end, CtlKind::Result, "the server's RESULT")?;
        Ok((
            ours,
            Cpu {
                cpu_ns: res.cpu_ns,
                wall_ns: res.wall_ns,
            },
        ))
    }

    /// Ends the session: FINISH → BYE, then a graceful disconnect.
    pub fn finish(&self) -> Result<(), Error> {
        self.exchange(Ctl::new(CtlKind::Finish), CtlKind::Bye, "the server's BYE")?;
        self.disconnect()
    }

    /// The client's data phase of one batch over DAT.
    fn client_batch(
        &self,
        b: Batch,
        times: &mut Vec<u64>,
    ) -> Result<(f64, Option<Mismatch>), Error> {
        match (self.p.test, self.p.mode) {
            (Test::Send, Mode::Lat) => self.send_pingpong_client(b, times),
            (Test::Write, Mode::Lat) => self.write_pingpong(b, true, times),
            (Test::Read, Mode::Lat) => self.read_lat(b, times),
            (Test::Send | Test::Write | Test::Read, Mode::Bw) => self.windowed(b, times),
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
            while sends >= ring {
                self.next_of(K_SEND, "a Send's completion")?;
                sends -= 1;
            }
            // SAFETY: the Send that used source slot s (iteration i - ring)
            // completed: fewer than `ring` Sends are in flight and they
            // complete in order.
            unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, mem) };
            let t0 = Instant::now();
            ep.post_send(
                self.data.triplet(self.src_off(s, size), size),
                ck(K_SEND, j),
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
                    K_SEND => sends -= 1,
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
                self.reap(K_SEND, &mut sends, "a Send's completion")?;
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
            self.next_of(K_SEND, "a Send's completion")?;
            sends -= 1;
        }
        Ok((secs, found))
    }

    /// Spins until the byte at `off` of the data region differs from
    /// `prev`, dequeuing the EVD in the loop (RDMA Write completions:
    /// `writes` is decremented); returns the new value.
    fn spin_byte(&self, off: u64, prev: u8, writes: &mut u64) -> Result<u8, Error> {
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
                *writes -= 1;
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
    fn write_pingpong(
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
        let arrive = |prev: u8, writes: &mut u64| {
            if mem {
                self.poll_mem(last, prev, "the peer's RDMA Write")
            } else {
                self.spin_byte(last, prev, writes)
            }
        };
        let start = Instant::now();
        for j in 0..count {
            let i = first + j;
            if !active {
                prev = arrive(prev, &mut writes)?;
                // SAFETY: the peer's write of iteration i landed (its last
                // byte is there) and it writes nothing more until we answer.
                unsafe { self.check_tagged(self.dst_off(0, size), size, i, prev, &mut found) };
                if mem {
                    self.reap(K_WRITE, &mut writes, "an RDMA Write's completion")?;
                }
            }
            let s = i % ring;
            while writes >= ring {
                self.next_of(K_WRITE, "an RDMA Write's completion")?;
                writes -= 1;
            }
            // SAFETY: the write from source slot s (iteration i - ring)
            // completed: fewer than `ring` writes are in flight and they
            // complete in order.
            unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, true) };
            let t0 = Instant::now();
            ep.post_write(
                self.data.triplet(self.src_off(s, size), size),
                self.peer_dst(0, size),
                ck(K_WRITE, j),
            )?;
            writes += 1;
            if active {
                prev = arrive(prev, &mut writes)?;
                times.push(t0.elapsed().as_nanos() as u64 / 2);
                // SAFETY: as above.
                unsafe { self.check_tagged(self.dst_off(0, size), size, i, prev, &mut found) };
                if mem {
                    self.reap(K_WRITE, &mut writes, "an RDMA Write's completion")?;
                }
            }
        }
        // The run ends with the last round trip; the trailing completions
        // (acknowledged later) are not part of it.
        let secs = start.elapsed().as_secs_f64();
        while writes > 0 {
            self.next_of(K_WRITE, "an RDMA Write's completion")?;
            writes -= 1;
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
    fn client_conns(
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

    // ---- the server --------------------------------------------------

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
                    let end = self.wait_ctl("the client's END")?;
                    if end.kind != CtlKind::End {
                        return Err(Error(format!(
                            "protocol error: expected END, got {:?}",
                            end.kind
                        )));
                    }
                    if c.transport == Transport::Dat
                        && self.p.test == Test::Write
                        && self.p.mode == Mode::Bw
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
            (Test::Write, Mode::Lat) => {
                // SAFETY: the client writes into our destination only
                // after READY; its previous batch's writes all arrived.
                unsafe { self.data.set(self.dst_off(0, size) + size - 1, 0) };
                self.post_ctl_recv()?;
                self.send_ctl(Ctl::new(CtlKind::Ready))?;
                let (_, found) = self.write_pingpong(b, false, &mut Vec::new())?;
                Ok(found)
            }
            (Test::Write, Mode::Bw) => {
                let compute = self.computes(transport);
                let poll = self.mem() && !compute;
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
        let lat = self.p.mode == Mode::Lat;
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
                    K_SEND => sends -= 1,
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
                if mem {
                    self.reap(K_SEND, &mut sends, "a Send's completion")?;
                }
                while sends >= ring {
                    self.next_of(K_SEND, "a Send's completion")?;
                    sends -= 1;
                }
                let s = i % ring;
                // SAFETY: the Send from source slot s (iteration i - ring)
                // completed: fewer than `ring` in flight, completed in order.
                unsafe { self.put_payload(&self.data, self.src_off(s, size), size, i, mem) };
                ep.post_send(
                    self.data.triplet(self.src_off(s, size), size),
                    ck(K_SEND, i - first),
                )?;
                sends += 1;
            }
        }
        while sends > 0 {
            self.next_of(K_SEND, "a Send's completion")?;
            sends -= 1;
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

/// CPU time (user + system) and wall time of one side's idle period.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

/// CPU time of this process, every thread (getrusage RUSAGE_SELF), in
/// nanoseconds.
pub fn cpu_ns() -> u64 {
    // SAFETY: plain C data; zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: an out-pointer to a live local.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn unexpected(d: Dto, what: &str) -> Error {
    Error(format!(
        "waiting for {what}: unexpected {} completion",
        kind_name(kind_of(d.cookie))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::proto::Amount;

    #[test]
    fn batches_grow_gradually_and_respect_caps() {
        let mut p = Plan::new(Amount::Iters(1000), 100, Duration::from_secs(10));
        assert_eq!(p.next(), Some(16));
        p.done(16, 0.0016); // 100 us each: 2500 would fill 0.25 s
        assert_eq!(p.next(), Some(64));
        p.done(64, 0.0064);
        assert_eq!(p.next(), Some(100)); // the cap
        p.done(100, 0.01);
        let mut left = 1000 - 180;
        while let Some(n) = p.next() {
            assert!(n <= 100);
            left -= n;
            p.done(n, n as f64 * 1e-4);
        }
        assert_eq!(left, 0);
        // A short timeout makes short batches.
        let mut q = Plan::new(Amount::Iters(u64::MAX), u64::MAX, Duration::from_millis(40));
        q.done(16, 0.0016);
        q.last = 1 << 20;
        assert_eq!(q.next(), Some(100)); // 10 ms of 100 us iterations
        assert_eq!(first_of(None, None), None);
        let m = |iter, byte| Some(Mismatch { iter, byte });
        assert_eq!(first_of(m(5, 1), m(3, 9)), m(3, 9));
        assert_eq!(first_of(m(5, 1), None), m(5, 1));
        assert_eq!(kind_of(ck(K_READ, 7)), K_READ);
        assert_eq!(idx_of(ck(K_READ, 7)), 7);
    }
}
