//! What the two dat-perf processes say to each other: the client's
//! [`Params`] and buffer in the connection request's private data, the
//! server's [`Hello`] in the accept's, then 64-byte control messages
//! ([`Ctl`]) as Sends on the same connection. All integers are big-endian.
//! The exchange is described in docs/tools.md, "How dat-perf runs a test".

use clap::ValueEnum;
use serde::Serialize;

pub const MAGIC_PARAMS: u32 = u32::from_be_bytes(*b"DPF1");
pub const MAGIC_CONN: u32 = u32::from_be_bytes(*b"DPFc");
pub const MAGIC_CTL: u32 = u32::from_be_bytes(*b"DPFm");
pub const VERSION: u16 = 2;
pub const PARAMS_LEN: usize = 56;
pub const HELLO_LEN: usize = 32;
pub const CTL_LEN: usize = 64;
/// Largest message size.
pub const MAX_SIZE: u64 = 8 << 20;
/// Largest window (`--depth`).
pub const MAX_DEPTH: u32 = 256;
/// Private data of the connections of the connection-rate test.
pub const CONN_PD_LEN: usize = 8;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// Send/Recv.
    Send,
    /// RDMA Write.
    Write,
    /// RDMA Read.
    Read,
    /// Connection rate: connect, one 8-byte round trip, disconnect.
    Conn,
    /// CPU time of an idle connected pair (both sides) over --duration.
    Idle,
}

/// What a run measures: ping-pong latency (`--lat`) or bandwidth (`--bw`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    Lat,
    Bw,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wait {
    /// dat_evd_dequeue in a loop.
    Poll,
    /// dat_evd_wait.
    Evd,
    /// dat_cno_wait on a CNO attached to the EVD, then dat_evd_dequeue.
    Cno,
    /// The receiver polls the last byte of its buffer in memory (no
    /// library call) until the message landed, then dequeues the
    /// completion that goes with it; request completions are reaped with
    /// dat_evd_dequeue between messages.
    Mem,
}

impl Wait {
    /// Whether the TCP baseline spins on non-blocking sockets (the
    /// polling styles) or blocks.
    pub fn spins(self) -> bool {
        matches!(self, Wait::Poll | Wait::Mem)
    }
}

/// What the target of RDMA Reads (and of --bw RDMA Writes) does during a
/// batch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Peer {
    /// Waits for the batch's END message in the --wait style.
    Wait,
    /// Makes no library call: computes over its own memory until the
    /// client's RDMA Write of the batch's end flag lands.
    Compute,
    /// Sleeps in `dat_evd_wait` until the END message, whatever --wait
    /// says (perftest's server, idle while the client reads it).
    Sleep,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sizes {
    One(u64),
    /// Every power of two from 1 B to 8 MiB.
    All,
    /// Powers of two: bit k set for 2^k bytes (a list or range of -s).
    Set(u32),
}

/// Bits of every size of [`Sizes::All`] (1 B to 8 MiB).
pub const ALL_SIZES: u32 = (1 << 24) - 1;

impl Sizes {
    pub fn list(self) -> Vec<u64> {
        let mask = match self {
            Sizes::One(s) => return vec![s],
            Sizes::All => ALL_SIZES,
            Sizes::Set(m) => m & ALL_SIZES,
        };
        (0..24)
            .filter(|k| mask & (1 << k) != 0)
            .map(|k| 1u64 << k)
            .collect()
    }

    pub fn max(self) -> u64 {
        self.list().into_iter().max().unwrap_or(1)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Amount {
    Iters(u64),
    DurationMs(u32),
}

/// Everything both sides must agree on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub test: Test,
    pub mode: Metric,
    pub sizes: Sizes,
    pub amount: Amount,
    pub depth: u32,
    pub wait: Wait,
    pub peer: Peer,
    pub verify: bool,
    pub baseline: bool,
    /// Latency tests: one Send or RDMA Write in this many asks for a
    /// completion, the others are posted with
    /// `DAT_COMPLETION_SUPPRESS_FLAG` (perftest's `--cq-mod`; 1: every one).
    pub cq_mod: u32,
}

/// A registered buffer the peer may access.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteBuf {
    pub rmr: u32,
    pub addr: u64,
    pub len: u64,
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn get32(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}
fn get64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

const F_VERIFY: u8 = 1;
const F_BASELINE: u8 = 2;
const F_ALL: u8 = 4;
const F_DURATION: u8 = 8;
const F_SET: u8 = 16;
const F_COMPUTE: u8 = 32;
const F_SLEEP: u8 = 64;

fn test_code(t: Test) -> u8 {
    match t {
        Test::Send => 1,
        Test::Write => 2,
        Test::Read => 3,
        Test::Conn => 4,
        Test::Idle => 5,
    }
}

impl Params {
    /// The connection request's private data.
    pub fn encode(&self, buf: RemoteBuf) -> [u8; PARAMS_LEN] {
        let mut b = [0u8; PARAMS_LEN];
        put32(&mut b, 0, MAGIC_PARAMS);
        put16(&mut b, 4, VERSION);
        b[6] = test_code(self.test);
        b[7] = match self.mode {
            Metric::Lat => 1,
            Metric::Bw => 2,
        };
        b[8] = match self.wait {
            Wait::Poll => 1,
            Wait::Evd => 2,
            Wait::Cno => 3,
            Wait::Mem => 4,
        };
        let mut f = 0;
        match self.peer {
            Peer::Wait => {}
            Peer::Compute => f |= F_COMPUTE,
            Peer::Sleep => f |= F_SLEEP,
        }
        if self.verify {
            f |= F_VERIFY;
        }
        if self.baseline {
            f |= F_BASELINE;
        }
        let size = match self.sizes {
            Sizes::All => {
                f |= F_ALL;
                0
            }
            Sizes::One(s) => s,
            Sizes::Set(m) => {
                f |= F_SET;
                put32(&mut b, 36, m);
                0
            }
        };
        let amount = match self.amount {
            Amount::Iters(n) => n,
            Amount::DurationMs(ms) => {
                f |= F_DURATION;
                u64::from(ms)
            }
        };
        b[9] = f;
        put16(&mut b, 10, u16::try_from(self.cq_mod).unwrap_or(u16::MAX));
        put32(&mut b, 12, self.depth);
        put64(&mut b, 16, size);
        put64(&mut b, 24, amount);
        put32(&mut b, 32, buf.rmr);
        put64(&mut b, 40, buf.addr);
        put64(&mut b, 48, buf.len);
        b
    }

    /// Decodes a connection request's private data.
    pub fn decode(b: &[u8]) -> Result<(Params, RemoteBuf), String> {
        if b.len() < PARAMS_LEN || get32(b, 0) != MAGIC_PARAMS {
            return Err(format!(
                "not a dat-perf client ({} bytes of private data without its mark)",
                b.len()
            ));
        }
        if get16(b, 4) != VERSION {
            return Err(format!(
                "the client speaks dat-perf protocol version {}, this server {}",
                get16(b, 4),
                VERSION
            ));
        }
        let test = match b[6] {
            1 => Test::Send,
            2 => Test::Write,
            3 => Test::Read,
            4 => Test::Conn,
            5 => Test::Idle,
            x => return Err(format!("unknown test {x}")),
        };
        let mode = match b[7] {
            1 => Metric::Lat,
            2 => Metric::Bw,
            x => return Err(format!("unknown mode {x}")),
        };
        let wait = match b[8] {
            1 => Wait::Poll,
            2 => Wait::Evd,
            3 => Wait::Cno,
            4 => Wait::Mem,
            x => return Err(format!("unknown wait style {x}")),
        };
        let f = b[9];
        let depth = get32(b, 12);
        let size = get64(b, 16);
        let amount = get64(b, 24);
        let sizes = if f & F_ALL != 0 {
            Sizes::All
        } else if f & F_SET != 0 {
            let m = get32(b, 36);
            if m == 0 || m & !ALL_SIZES != 0 {
                return Err(format!("size set {m:#x} out of range"));
            }
            Sizes::Set(m)
        } else if (1..=MAX_SIZE).contains(&size) {
            Sizes::One(size)
        } else {
            return Err(format!("size {size} out of range"));
        };
        let amount = if f & F_DURATION != 0 {
            Amount::DurationMs(u32::try_from(amount).map_err(|_| "duration out of range")?)
        } else {
            Amount::Iters(amount)
        };
        if amount == Amount::Iters(0) || amount == Amount::DurationMs(0) {
            return Err("no iterations".into());
        }
        if depth == 0 || depth > MAX_DEPTH {
            return Err(format!("depth {depth} out of range"));
        }
        let p = Params {
            test,
            mode,
            sizes,
            amount,
            depth,
            wait,
            peer: if f & F_COMPUTE != 0 {
                Peer::Compute
            } else if f & F_SLEEP != 0 {
                Peer::Sleep
            } else {
                Peer::Wait
            },
            verify: f & F_VERIFY != 0,
            baseline: f & F_BASELINE != 0,
            // (0 from a client that does not say: every request signalled.)
            cq_mod: u32::from(get16(b, 10)).max(1),
        };
        let buf = RemoteBuf {
            rmr: get32(b, 32),
            addr: get64(b, 40),
            len: get64(b, 48),
        };
        Ok((p, buf))
    }

    /// Iterations-or-duration as people read it.
    pub fn amount_text(&self) -> String {
        amount_text(self.amount, self.test)
    }
}

fn amount_text(a: Amount, t: Test) -> String {
    match a {
        Amount::Iters(n) if t == Test::Conn => format!("{n} connections"),
        Amount::Iters(n) => format!("{n} iterations"),
        Amount::DurationMs(ms) => format!("{} s", ms as f64 / 1000.0),
    }
}

fn test_name(t: Test) -> &'static str {
    match t {
        Test::Send => "send",
        Test::Write => "write",
        Test::Read => "read",
        Test::Conn => "conn",
        Test::Idle => "idle",
    }
}

pub fn mode_name(m: Metric) -> &'static str {
    match m {
        Metric::Lat => "lat",
        Metric::Bw => "bw",
    }
}

pub fn wait_name(w: Wait) -> &'static str {
    match w {
        Wait::Poll => "poll",
        Wait::Evd => "evd",
        Wait::Cno => "cno",
        Wait::Mem => "mem",
    }
}

pub fn peer_name(p: Peer) -> &'static str {
    match p {
        Peer::Wait => "wait",
        Peer::Compute => "compute",
        Peer::Sleep => "sleep",
    }
}

impl std::fmt::Display for Test {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(test_name(*self))
    }
}

fn sizes_text(s: Sizes) -> String {
    match s {
        Sizes::All => "all (-a)".into(),
        Sizes::One(n) => size_text(n),
        Sizes::Set(_) => s
            .list()
            .into_iter()
            .map(size_text)
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// "8 B", "4 KiB", "1 MiB", "1000 B".
pub fn size_text(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The options a server was given explicitly (None: adopt the client's).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explicit {
    pub test: Option<Test>,
    pub mode: Option<Metric>,
    pub sizes: Option<Sizes>,
    pub amount: Option<Amount>,
    pub depth: Option<u32>,
    pub wait: Option<Wait>,
    pub peer: Option<Peer>,
    pub verify: Option<bool>,
    pub baseline: Option<bool>,
    pub cq_mod: Option<u32>,
}

/// The parameters the server was given explicitly and the client asks
/// otherwise: "test: client write, server send; size: ...". None: none.
pub fn mismatches(client: &Params, server: &Explicit) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let mut diff = |name: &str, c: String, s: String| {
        if c != s {
            out.push(format!("{name}: client {c}, server {s}"));
        }
    };
    if let Some(t) = server.test {
        diff("test", client.test.to_string(), t.to_string());
    }
    let conn = matches!(client.test, Test::Conn | Test::Idle);
    if let (Some(m), false) = (server.mode, conn) {
        diff("mode", mode_name(client.mode).into(), mode_name(m).into());
    }
    if let (Some(s), false) = (server.sizes, conn) {
        diff("size", sizes_text(client.sizes), sizes_text(s));
    }
    if let Some(a) = server.amount {
        diff(
            "iterations",
            amount_text(client.amount, client.test),
            amount_text(a, client.test),
        );
    }
    if let Some(d) = server.depth {
        diff("depth", client.depth.to_string(), d.to_string());
    }
    if let Some(m) = server.cq_mod {
        diff("cq-mod", client.cq_mod.to_string(), m.to_string());
    }
    if let Some(w) = server.wait {
        diff("wait", wait_name(client.wait).into(), wait_name(w).into());
    }
    if let Some(p) = server.peer {
        diff("peer", peer_name(client.peer).into(), peer_name(p).into());
    }
    if server.verify == Some(true) && !client.verify {
        out.push("check: client without -c, server -c".into());
    }
    if server.baseline == Some(true) && !client.baseline {
        out.push("baseline: client none, server tcp".into());
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// The server's answer, in the accept's private data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hello {
    Ok {
        buf: RemoteBuf,
        /// TCP port of the baseline listener (0: none).
        tcp_port: u16,
        /// Inbound RDMA Reads the server's endpoint allows.
        read_in: u16,
    },
    Mismatch(String),
    /// The server cannot run this (e.g. a size beyond its IA's limits).
    Refused(String),
}

impl Hello {
    /// Encodes into at most `max` bytes (the text is cut to fit).
    pub fn encode(&self, max: usize) -> Vec<u8> {
        let mut b = vec![0u8; 8];
        put32(&mut b, 0, MAGIC_PARAMS);
        put16(&mut b, 4, VERSION);
        match self {
            Hello::Ok {
                buf,
                tcp_port,
                read_in,
            } => {
                b.resize(HELLO_LEN, 0);
                b[6] = 0;
                put16(&mut b, 8, *tcp_port);
                put16(&mut b, 10, *read_in);
                put32(&mut b, 12, buf.rmr);
                put64(&mut b, 16, buf.addr);
                put64(&mut b, 24, buf.len);
            }
            Hello::Mismatch(text) | Hello::Refused(text) => {
                b[6] = if matches!(self, Hello::Mismatch(_)) {
                    1
                } else {
                    2
                };
                let room = max.saturating_sub(8);
                let mut t = text.as_bytes();
                if t.len() > room {
                    // Cut at a character boundary.
                    let mut n = room;
                    while n > 0 && !text.is_char_boundary(n) {
                        n -= 1;
                    }
                    t = &t[..n];
                }
                b.extend_from_slice(t);
            }
        }
        b
    }

    pub fn decode(b: &[u8]) -> Result<Hello, String> {
        if b.len() < 8 || get32(b, 0) != MAGIC_PARAMS {
            return Err(format!(
                "the server's answer is not dat-perf's ({} bytes of private data)",
                b.len()
            ));
        }
        if get16(b, 4) != VERSION {
            return Err(format!(
                "the server speaks dat-perf protocol version {}, this client {}",
                get16(b, 4),
                VERSION
            ));
        }
        match b[6] {
            0 if b.len() >= HELLO_LEN => Ok(Hello::Ok {
                tcp_port: get16(b, 8),
                read_in: get16(b, 10),
                buf: RemoteBuf {
                    rmr: get32(b, 12),
                    addr: get64(b, 16),
                    len: get64(b, 24),
                },
            }),
            1 => Ok(Hello::Mismatch(
                String::from_utf8_lossy(&b[8..]).into_owned(),
            )),
            2 => Ok(Hello::Refused(
                String::from_utf8_lossy(&b[8..]).into_owned(),
            )),
            x => Err(format!("the server's answer has unknown status {x}")),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CtlKind {
    Begin = 1,
    Ready = 2,
    End = 3,
    Result = 4,
    Finish = 5,
    Bye = 6,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Dat = 0,
    Tcp = 1,
}

/// A data mismatch: iteration and byte.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub iter: u64,
    pub byte: u64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data mismatch at iteration {}, byte {}",
            self.iter, self.byte
        )
    }
}

/// One batch of iterations of one size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub size: u64,
    /// Index of the batch's first iteration within the size's run.
    pub first: u64,
    pub count: u64,
}

/// A control message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ctl {
    pub kind: CtlKind,
    pub transport: Transport,
    pub size: u64,
    /// First iteration of the batch (its index within the size's run).
    pub first: u64,
    pub count: u64,
    /// END / RESULT: the first data mismatch the sender of the message knows of.
    pub mismatch: Option<Mismatch>,
    /// RESULT of -t idle: the server's CPU time (user + system, all its
    /// threads) and wall time over its idle period, in nanoseconds.
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

impl Ctl {
    pub fn new(kind: CtlKind) -> Ctl {
        Ctl {
            kind,
            transport: Transport::Dat,
            size: 0,
            first: 0,
            count: 0,
            mismatch: None,
            cpu_ns: 0,
            wall_ns: 0,
        }
    }

    pub fn encode(&self) -> [u8; CTL_LEN] {
        let mut b = [0u8; CTL_LEN];
        put32(&mut b, 0, MAGIC_CTL);
        b[4] = self.kind as u8;
        b[5] = self.transport as u8;
        b[6] = u8::from(self.mismatch.is_some());
        put64(&mut b, 8, self.size);
        put64(&mut b, 16, self.first);
        put64(&mut b, 24, self.count);
        if let Some(m) = self.mismatch {
            put64(&mut b, 32, m.iter);
            put64(&mut b, 40, m.byte);
        }
        put64(&mut b, 48, self.cpu_ns);
        put64(&mut b, 56, self.wall_ns);
        b
    }

    pub fn decode(b: &[u8]) -> Result<Ctl, String> {
        if b.len() < CTL_LEN || get32(b, 0) != MAGIC_CTL {
            return Err(format!(
                "malformed control message ({} bytes, no mark)",
                b.len()
            ));
        }
        let kind = match b[4] {
            1 => CtlKind::Begin,
            2 => CtlKind::Ready,
            3 => CtlKind::End,
            4 => CtlKind::Result,
            5 => CtlKind::Finish,
            6 => CtlKind::Bye,
            x => return Err(format!("unknown control message {x}")),
        };
        let transport = match b[5] {
            0 => Transport::Dat,
            1 => Transport::Tcp,
            x => return Err(format!("unknown transport {x}")),
        };
        Ok(Ctl {
            kind,
            transport,
            size: get64(b, 8),
            first: get64(b, 16),
            count: get64(b, 24),
            mismatch: (b[6] != 0).then(|| Mismatch {
                iter: get64(b, 32),
                byte: get64(b, 40),
            }),
            cpu_ns: get64(b, 48),
            wall_ns: get64(b, 56),
        })
    }
}

/// Byte `k` of iteration `i`'s payload.
#[inline]
pub fn pattern(i: u64, k: u64) -> u8 {
    let x = k.wrapping_mul(131) ^ (k >> 9) ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    (x ^ (x >> 11)) as u8
}

/// The last byte of a message of iteration `i` that its receiver polls in
/// memory (RDMA Write ping-pong, `--wait mem`): never 0, and different
/// from the previous iteration's.
#[inline]
pub fn tag(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

/// What `DAT_PERF_CORRUPT=N` does to a byte: never the byte itself, and
/// for a tag never 0 (a cleared buffer) nor the tag of the iteration
/// before or after (the receiver must see a change, and a wrong one).
#[inline]
pub fn corrupt(b: u8) -> u8 {
    if b == 0x5A {
        0xA5
    } else {
        b ^ 0x5A
    }
}

/// The byte `DAT_PERF_CORRUPT` changes in a message of `size` bytes.
pub fn corrupt_offset(size: u64) -> u64 {
    size / 2
}

/// Bytes of each side's data pool (sources and destinations each).
pub const POOL_BYTES: u64 = 16 << 20;

/// Buffer slots of `size` bytes in the pool: bandwidth windows and checked
/// batches cycle through them.
pub fn slots(size: u64, depth: u32) -> u64 {
    (POOL_BYTES / size.max(1)).clamp(1, (2 * u64::from(depth)).max(256))
}

/// The pool a side needs for these parameters (per half: sources or
/// destinations).
pub fn pool_len(p: &Params) -> u64 {
    if matches!(p.test, Test::Conn | Test::Idle) {
        return 4096;
    }
    p.sizes
        .list()
        .into_iter()
        .map(|s| slots(s, p.depth) * s)
        .max()
        .unwrap_or(4096)
        .max(4096)
}

/// A side's data region is its sources (`pool` bytes), its destinations
/// (`pool` bytes), then this page: the end-of-batch flag of
/// `--peer compute` at its start.
pub const FLAG_PAGE: u64 = 4096;
/// Bytes of the end-of-batch flag (the server polls the last).
pub const FLAG_LEN: u64 = 8;

/// Offset of the flag page in a data region whose halves are `pool` bytes.
pub fn flag_off(pool: u64) -> u64 {
    2 * pool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            test: Test::Write,
            mode: Metric::Bw,
            sizes: Sizes::One(4096),
            amount: Amount::DurationMs(1500),
            depth: 8,
            wait: Wait::Cno,
            peer: Peer::Wait,
            verify: true,
            baseline: true,
            cq_mod: 7,
        }
    }

    #[test]
    fn params_round_trip() {
        let buf = RemoteBuf {
            rmr: 0xdead_beef,
            addr: 0x7f00_1234_5000,
            len: 1 << 20,
        };
        let p = params();
        let b = p.encode(buf);
        assert_eq!(Params::decode(&b), Ok((p, buf)));
        // A client that does not say (bytes 10-11 zero) signals every request.
        let mut old = b;
        old[10..12].fill(0);
        assert_eq!(Params::decode(&old).map(|(q, _)| q.cq_mod), Ok(1));
        let all = Params {
            sizes: Sizes::All,
            amount: Amount::Iters(7),
            ..p
        };
        assert_eq!(Params::decode(&all.encode(buf)), Ok((all, buf)));
        let set = Params {
            test: Test::Read,
            sizes: Sizes::Set(1 << 3 | 1 << 16),
            wait: Wait::Mem,
            peer: Peer::Compute,
            ..p
        };
        assert_eq!(Params::decode(&set.encode(buf)), Ok((set, buf)));
        assert_eq!(set.sizes.list(), vec![8, 64 << 10]);
        assert_eq!(set.sizes.max(), 64 << 10);
        let idle = Params {
            test: Test::Idle,
            sizes: Sizes::One(8),
            amount: Amount::DurationMs(5000),
            ..p
        };
        assert_eq!(Params::decode(&idle.encode(buf)), Ok((idle, buf)));
        assert!(Params::decode(&b[..20]).is_err());
        let mut bad = b;
        bad[0] = b'X';
        assert!(Params::decode(&bad).is_err());
    }

    #[test]
    fn hello_and_ctl_round_trip() {
        let h = Hello::Ok {
            buf: RemoteBuf {
                rmr: 5,
                addr: 6,
                len: 7,
            },
            tcp_port: 40000,
            read_in: 16,
        };
        assert_eq!(Hello::decode(&h.encode(64)), Ok(h));
        let m = Hello::Mismatch("size: client 4 KiB, server 1 KiB".into());
        assert_eq!(Hello::decode(&m.encode(252)), Ok(m));
        let long = Hello::Mismatch("é".repeat(100));
        let e = long.encode(64);
        assert!(e.len() <= 64);
        assert!(matches!(Hello::decode(&e), Ok(Hello::Mismatch(t)) if t.chars().all(|c| c == 'é')));

        let c = Ctl {
            kind: CtlKind::Result,
            transport: Transport::Tcp,
            size: 4096,
            first: 10,
            count: 20,
            mismatch: Some(Mismatch {
                iter: 12,
                byte: 2048,
            }),
            cpu_ns: 12_345_678,
            wall_ns: 5_000_000_000,
        };
        assert_eq!(Ctl::decode(&c.encode()), Ok(c));
        assert_eq!(
            c.mismatch.unwrap().to_string(),
            "data mismatch at iteration 12, byte 2048"
        );
    }

    #[test]
    fn explicit_server_options_are_checked() {
        let p = params();
        assert_eq!(mismatches(&p, &Explicit::default()), None);
        let same = Explicit {
            test: Some(Test::Write),
            sizes: Some(Sizes::One(4096)),
            verify: Some(true),
            ..Explicit::default()
        };
        assert_eq!(mismatches(&p, &same), None);
        let compute = Explicit {
            peer: Some(Peer::Compute),
            wait: Some(Wait::Mem),
            ..Explicit::default()
        };
        assert_eq!(
            mismatches(&p, &compute).as_deref(),
            Some("wait: client cno, server mem; peer: client wait, server compute")
        );
        let other = Explicit {
            test: Some(Test::Send),
            sizes: Some(Sizes::One(1024)),
            amount: Some(Amount::Iters(10)),
            ..Explicit::default()
        };
        assert_eq!(
            mismatches(&p, &other).as_deref(),
            Some("test: client write, server send; size: client 4 KiB, server 1 KiB; iterations: client 1.5 s, server 10 iterations")
        );
    }

    #[test]
    fn tags_and_patterns() {
        for i in 0..1000u64 {
            assert_ne!(tag(i), 0);
            assert_ne!(tag(i), tag(i + 1));
            assert_ne!(corrupt(tag(i)), tag(i));
            assert_ne!(corrupt(tag(i)), tag(i + 1));
            assert_ne!(corrupt(tag(i + 1)), tag(i));
            assert_ne!(corrupt(tag(i)), 0);
        }
        let differs = (0..4096u64)
            .filter(|&k| pattern(1, k) != pattern(2, k))
            .count();
        assert!(differs > 4000, "{differs}");
        assert_eq!(slots(1, 16), 256);
        assert_eq!(slots(8 << 20, 16), 2);
        assert_eq!(size_text(4096), "4 KiB");
        assert_eq!(size_text(1000), "1000 B");
    }
}
