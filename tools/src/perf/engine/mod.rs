//! The two sides of a run over DAT: each has one endpoint, one DTO EVD for
//! both directions (with a CNO for `--wait cno`), a connection EVD, a data
//! region and a control region. The client drives batches framed by
//! BEGIN → READY and END → RESULT.
//!
//! Invariant: on the ordered connection every control message lands in a
//! control receive (the posting discipline is in docs/tools.md, "How
//! dat-perf runs a test", with `--wait mem` and `--peer compute`).

use std::cell::Cell;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use dat_abi::*;

use super::dat::{ep_attr, event_name, Cno, Ep, Evd, Ia, Pz, Region, Request};
use super::proto::{
    corrupt, corrupt_offset, flag_off, pattern, slots, tag, Batch, Ctl, CtlKind, Metric, Mismatch,
    Params, Peer, RemoteBuf, Test, Transport, Wait, CONN_PD_LEN, CTL_LEN, FLAG_LEN, FLAG_PAGE,
    MAGIC_CONN,
};
use super::stats::Samples;
use super::tcp;
use super::waiter::{DtoCompletion, Waiter};
use super::Error;

mod client;
mod server;

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
/// A batch's requests so far, for `Session::reap`: `posted` of `count`,
/// their source slots reused every `ring`.
#[derive(Clone, Copy)]
struct Window {
    posted: u64,
    count: u64,
    ring: u64,
}

/// Of the batch's first `posted` requests, how many are outstanding once
/// the completion `d` (of one of them) arrived: requests complete in
/// order, so every earlier one (suppressed or not) is done too.
fn left(posted: u64, d: DtoCompletion) -> u64 {
    posted.saturating_sub(idx_of(d.cookie) + 1)
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
    ctl_early: Cell<Option<DtoCompletion>>,
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
    fn next(&self, what: &str) -> Result<DtoCompletion, Error> {
        loop {
            let d = self.w().next(what)?;
            if !self.set_aside(d)? {
                return Ok(d);
            }
        }
    }

    fn try_next(&self, what: &str) -> Result<Option<DtoCompletion>, Error> {
        loop {
            match self.w().try_next(what)? {
                Some(d) if self.set_aside(d)? => {}
                other => return Ok(other),
            }
        }
    }

    /// Takes care of control completions; true if `d` was one.
    fn set_aside(&self, d: DtoCompletion) -> Result<bool, Error> {
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
    fn next_of(&self, kind: u64, what: &str) -> Result<DtoCompletion, Error> {
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

    /// A waiter that sleeps in `dat_evd_wait` where `--wait` spins
    /// (`--peer sleep`).
    pub fn w_passive(&self) -> Waiter<'_> {
        let mut w = self.w();
        if matches!(w.wait, Wait::Poll | Wait::Mem) {
            w.wait = Wait::Evd;
        }
        w
    }

    /// Waits for a control message (its receive must be posted).
    pub fn wait_ctl(&self, what: &str) -> Result<Ctl, Error> {
        self.wait_ctl_by(&self.w(), what)
    }

    /// As [`Session::wait_ctl`], waiting with `w`.
    pub fn wait_ctl_by(&self, w: &Waiter<'_>, what: &str) -> Result<Ctl, Error> {
        let d = match self.ctl_early.take() {
            Some(d) => d,
            None => loop {
                let d = w.next(what)?;
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
    /// already there, without waiting; `n` becomes what is outstanding of
    /// the batch's first `posted` requests.
    /// Only while one of the outstanding requests asked for its
    /// completion (`req_flags`): perftest, too, polls its send CQ only
    /// after a signalled post.
    fn reap(&self, kind: u64, n: &mut u64, w: Window, what: &str) -> Result<(), Error> {
        while *n > 0 && self.signalled_outstanding(*n, w) {
            match self.try_next(what)? {
                Some(d) if kind_of(d.cookie) == kind => *n = left(w.posted, d),
                Some(d) => return Err(unexpected(d, what)),
                None => break,
            }
        }
        Ok(())
    }

    /// Latency tests: the completion flags of the batch's request `j` (of
    /// `count`). perftest's selective signalling: one in `--cq-mod` asks
    /// for its completion, and at least one in `ring` (the source slots,
    /// reused once their request completed) and the batch's last; the
    /// others are suppressed. A completion then stands for every earlier
    /// request of its queue too (`left`).
    fn req_flags(&self, j: u64, count: u64, ring: u64) -> DAT_COMPLETION_FLAGS {
        if self.signalled(j, count, ring) {
            DAT_COMPLETION_DEFAULT_FLAG
        } else {
            DAT_COMPLETION_SUPPRESS_FLAG
        }
    }

    fn signal_every(&self, ring: u64) -> u64 {
        u64::from(self.p.cq_mod).min(ring).max(1)
    }

    /// Whether the batch's request `j` asks for its completion.
    fn signalled(&self, j: u64, count: u64, ring: u64) -> bool {
        (j + 1) % self.signal_every(ring) == 0 || j + 1 == count
    }

    /// Whether one of the last `n` of the `w.posted` requests asked for
    /// its completion.
    fn signalled_outstanding(&self, n: u64, w: Window) -> bool {
        let m = self.signal_every(w.ring);
        let first = w.posted.saturating_sub(n);
        (n > 0 && w.posted == w.count) || w.posted / m > first / m
    }

    /// The last byte of the end flag in our flag page.
    fn flag_byte(&self) -> u64 {
        flag_off(self.pool) + FLAG_LEN - 1
    }

    /// `--peer compute`: whether this batch's target computes.
    fn computes(&self, transport: Transport) -> bool {
        self.target_is(Peer::Compute, transport)
    }

    /// `--peer sleep` and this batch is one that the client runs against
    /// our memory.
    fn sleeps(&self, transport: Transport) -> bool {
        self.target_is(Peer::Sleep, transport)
    }

    fn target_is(&self, peer: Peer, transport: Transport) -> bool {
        transport == Transport::Dat
            && self.p.peer == peer
            && (self.p.test == Test::Read
                || (self.p.test == Test::Write && self.p.mode == Metric::Bw))
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
            self.p.test == Test::Read || (self.p.test == Test::Write && self.p.mode == Metric::Bw);
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
        if to.transport == Transport::Dat
            && self.p.test == Test::Write
            && self.p.mode == Metric::Lat
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

fn unexpected(d: DtoCompletion, what: &str) -> Error {
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
