//! A deliberately misbehaving iWARP peer, for tests of the target's
//! defences.
//!
//! The peer is a raw non-blocking `TcpStream`. Everything it sends is built
//! here byte by byte (MPA Request, DDP/RDMAP headers, FPDU framing with its
//! own CRC32c), so it can say anything: wrong keys, revisions and lengths,
//! forged STags, wrong MSNs, MOs and queue numbers, lying length fields, bad
//! CRCs, frames cut short. What the target sends back is read with the
//! project's codec (`wire::FpduReader`, `wire::Terminate`), which the
//! conformance tests check against Wireshark independently.
//!
//! The peer usually connects (the target accepts), but can also listen and
//! play the passive side ([`Peer::accept`], [`Peer::read_request`],
//! [`Request::reply_v2`]) for tests of the target as initiator.
//!
//! Every wait here takes a `pump` closure (the test's `Device::progress`
//! call, or a sleep when only the target's progress thread may move it) and
//! a deadline, and calls the pump between non-blocking reads.
//!
//! [`Guarded`] is test memory with inaccessible pages on both sides and
//! canary bytes, to prove the target writes nowhere it was not allowed to.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use udapl::transport::iwarp::wire::{FpduReader, Header, RxEvent, RxNeed};

/// How long any single wait of the peer may take.
pub const WAIT: Duration = Duration::from_secs(5);

// ─────────────────────────────── MPA setup ───────────────────────────────

pub const KEY_REQUEST: [u8; 16] = *b"MPA ID Req Frame";
pub const KEY_REPLY: [u8; 16] = *b"MPA ID Rep Frame";
pub const FLAG_M: u8 = 0x80;
pub const FLAG_C: u8 = 0x40;
pub const FLAG_R: u8 = 0x20;
pub const FLAG_H: u8 = 0x10;

/// The RFC 6581 IRD/ORD word, by hand: `[P2P | Send RTR | IRD][Write RTR |
/// Read RTR | ORD]`.
pub fn ird_ord_word(ird: u16, ord: u16, p2p: bool, rtr_write: bool, rtr_read: bool) -> [u8; 4] {
    let w0 = (ird & 0x3FFF) | if p2p { 0x8000 } else { 0 };
    let w1 =
        (ord & 0x3FFF) | if rtr_write { 0x8000 } else { 0 } | if rtr_read { 0x4000 } else { 0 };
    let [a, b] = w0.to_be_bytes();
    let [c, d] = w1.to_be_bytes();
    [a, b, c, d]
}

/// An MPA setup frame, any field of which may be wrong on purpose.
#[derive(Clone, Debug)]
pub struct Request {
    pub key: [u8; 16],
    pub flags: u8,
    pub revision: u8,
    /// The private data length field; `None`: the true length.
    pub pd_len: Option<u16>,
    /// Bytes after the 20-byte header (IRD/ORD word included).
    pub pd: Vec<u8>,
}

impl Request {
    /// What a well-behaved revision 2 initiator sends: H, IRD/ORD word with
    /// peer-to-peer and the RDMA Write RTR, then `private_data`.
    pub fn v2(ird: u16, ord: u16, private_data: &[u8]) -> Request {
        let mut pd = ird_ord_word(ird, ord, true, true, false).to_vec();
        pd.extend_from_slice(private_data);
        Request {
            key: KEY_REQUEST,
            flags: FLAG_H,
            revision: 2,
            pd_len: None,
            pd,
        }
    }

    /// A revision 1 Request (no IRD/ORD word, no RTR).
    pub fn v1(private_data: &[u8]) -> Request {
        Request {
            key: KEY_REQUEST,
            flags: 0,
            revision: 1,
            pd_len: None,
            pd: private_data.to_vec(),
        }
    }

    /// What a well-behaved revision 2 responder answers a peer-to-peer
    /// Request with: H, an IRD/ORD word with peer-to-peer and the RDMA
    /// Write RTR chosen, then `private_data` (a Reply: the same layout).
    pub fn reply_v2(ird: u16, ord: u16, private_data: &[u8]) -> Request {
        Request {
            key: KEY_REPLY,
            ..Request::v2(ird, ord, private_data)
        }
    }

    pub fn with_flags(mut self, add: u8) -> Request {
        self.flags |= add;
        self
    }

    /// The frame's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let len = self.pd_len.unwrap_or(self.pd.len() as u16);
        let mut b = Vec::with_capacity(20 + self.pd.len());
        b.extend_from_slice(&self.key);
        b.push(self.flags);
        b.push(self.revision);
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&self.pd);
        b
    }
}

/// An MPA Reply (or, for a peer on the passive side, Request) as
/// received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub flags: u8,
    pub revision: u8,
    /// The whole private data (IRD/ORD word included when H is set).
    pub pd: Vec<u8>,
}

impl Reply {
    /// (IRD, ORD, peer-to-peer, Write RTR, Read RTR) of the IRD/ORD word.
    pub fn ird_ord(&self) -> Option<(u16, u16, bool, bool, bool)> {
        if self.flags & FLAG_H == 0 || self.pd.len() < 4 {
            return None;
        }
        let w0 = u16::from_be_bytes([self.pd[0], self.pd[1]]);
        let w1 = u16::from_be_bytes([self.pd[2], self.pd[3]]);
        Some((
            w0 & 0x3FFF,
            w1 & 0x3FFF,
            w0 & 0x8000 != 0,
            w1 & 0x8000 != 0,
            w1 & 0x4000 != 0,
        ))
    }

    /// The consumer's private data (after the IRD/ORD word).
    pub fn private_data(&self) -> &[u8] {
        if self.flags & FLAG_H != 0 {
            &self.pd[4.min(self.pd.len())..]
        } else {
            &self.pd
        }
    }
}

// ─────────────────────────── DDP / RDMAP, by hand ───────────────────────────

pub const OP_WRITE: u8 = 0;
pub const OP_READ_REQUEST: u8 = 1;
pub const OP_READ_RESPONSE: u8 = 2;
pub const OP_SEND: u8 = 3;
pub const OP_TERMINATE: u8 = 7;

fn control(tagged: bool, last: bool, opcode: u8) -> [u8; 2] {
    let mut c0 = 0x01; // DDP version 1
    if tagged {
        c0 |= 0x80;
    }
    if last {
        c0 |= 0x40;
    }
    [c0, 0x40 | (opcode & 0x0F)] // RDMAP version 1
}

/// A tagged header (RDMA Write, Read Response): 14 bytes.
pub fn tagged(opcode: u8, last: bool, stag: u32, to: u64) -> Vec<u8> {
    let mut h = control(true, last, opcode).to_vec();
    h.extend_from_slice(&stag.to_be_bytes());
    h.extend_from_slice(&to.to_be_bytes());
    h
}

/// An untagged header (Send, Read Request, Terminate): 18 bytes, any queue
/// number.
pub fn untagged(opcode: u8, last: bool, qn: u32, msn: u32, mo: u32) -> Vec<u8> {
    let mut h = control(false, last, opcode).to_vec();
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&qn.to_be_bytes());
    h.extend_from_slice(&msn.to_be_bytes());
    h.extend_from_slice(&mo.to_be_bytes());
    h
}

/// A Send segment's header (queue 0).
pub fn send(last: bool, msn: u32, mo: u32) -> Vec<u8> {
    untagged(OP_SEND, last, 0, msn, mo)
}

/// An RDMA Write segment's header.
pub fn write(last: bool, stag: u32, to: u64) -> Vec<u8> {
    tagged(OP_WRITE, last, stag, to)
}

/// A whole RDMA Read Request ULPDU (queue 1, 46 bytes).
pub fn read_request(msn: u32, sink: (u32, u64), size: u32, source: (u32, u64)) -> Vec<u8> {
    let mut h = untagged(OP_READ_REQUEST, true, 1, msn, 0);
    h.extend_from_slice(&sink.0.to_be_bytes());
    h.extend_from_slice(&sink.1.to_be_bytes());
    h.extend_from_slice(&size.to_be_bytes());
    h.extend_from_slice(&source.0.to_be_bytes());
    h.extend_from_slice(&source.1.to_be_bytes());
    h
}

/// `[header][payload]`.
pub fn ulpdu(header: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut u = header.to_vec();
    u.extend_from_slice(payload);
    u
}

/// CRC32c (Castagnoli) as MPA sends it: the value's little-endian bytes.
pub fn crc_bytes(covered: &[u8]) -> [u8; 4] {
    crc32c::crc32c(covered).to_le_bytes()
}

/// An FPDU: `[length][ULPDU][pad][CRC]` (CRC zero when `crc` is off).
pub fn fpdu(ulpdu: &[u8], crc: bool) -> Vec<u8> {
    fpdu_with_len(ulpdu.len() as u16, ulpdu, crc)
}

/// An FPDU whose length field says `len_field` whatever the ULPDU is; pad
/// and CRC follow the bytes actually sent.
pub fn fpdu_with_len(len_field: u16, ulpdu: &[u8], crc: bool) -> Vec<u8> {
    let mut f = len_field.to_be_bytes().to_vec();
    f.extend_from_slice(ulpdu);
    while f.len() % 4 != 0 {
        f.push(0);
    }
    let c = if crc { crc_bytes(&f) } else { [0; 4] };
    f.extend_from_slice(&c);
    f
}

// ─────────────────────────────── the peer ───────────────────────────────

/// One FPDU the target sent: its decoded header and payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    pub header: Header,
    pub payload: Vec<u8>,
}

/// What a read from the target found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    Fpdu(Got),
    /// End of stream (FIN).
    Eof,
    /// The connection was reset.
    Reset,
}

/// The misbehaving peer's end of one TCP connection.
pub struct Peer {
    pub sock: TcpStream,
    /// FPDUs in both directions carry CRC32c.
    pub crc: bool,
    inbox: Vec<u8>,
    reader: FpduReader,
    /// The header and payload so far of an FPDU a wait that gave up
    /// ([`Peer::next_before`]) left partly received.
    header: Option<Header>,
    payload: Vec<u8>,
}

impl Peer {
    /// Opens a TCP connection to `addr` (nothing sent yet).
    pub fn connect(addr: SocketAddr) -> Peer {
        let sock = TcpStream::connect_timeout(&addr, WAIT).expect("peer: TCP connect");
        Peer::on(sock)
    }

    /// The passive side: waits (calling `pump`) for the target to open a
    /// TCP connection to `listener` (nothing received yet).
    pub fn accept(listener: &TcpListener, pump: &mut dyn FnMut()) -> Peer {
        listener.set_nonblocking(true).expect("nonblocking");
        let end = Instant::now() + WAIT;
        loop {
            match listener.accept() {
                Ok((sock, _)) => {
                    sock.set_nonblocking(false).expect("blocking");
                    return Peer::on(sock);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    assert!(
                        Instant::now() < end,
                        "peer: deadline waiting for a connection"
                    );
                    pump();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("peer: accept failed: {e}"),
            }
        }
    }

    fn on(sock: TcpStream) -> Peer {
        sock.set_nodelay(true).expect("nodelay");
        sock.set_nonblocking(true).expect("nonblocking");
        Peer {
            sock,
            crc: false,
            inbox: Vec::new(),
            reader: FpduReader::new(false),
            header: None,
            payload: Vec::new(),
        }
    }

    /// Writes `bytes` in one `write()` if the socket takes them (small
    /// frames travel in one segment, as peers expect).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let end = Instant::now() + WAIT;
        let mut at = 0;
        while at < bytes.len() {
            match self.sock.write(&bytes[at..]) {
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    assert!(Instant::now() < end, "peer: write deadline");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("peer: write failed: {e}"),
            }
        }
    }

    /// Sends one FPDU around `ulpdu`, with this connection's CRC setting.
    pub fn send_fpdu(&mut self, ulpdu: &[u8]) {
        let f = fpdu(ulpdu, self.crc);
        self.send_raw(&f);
    }

    /// Closes the sending direction (a FIN), keeps reading.
    pub fn shutdown_write(&self) {
        self.sock.shutdown(Shutdown::Write).expect("shutdown");
    }

    /// Reads what is available into the inbox; `Some` at end of stream or
    /// reset.
    fn fill(&mut self) -> Option<Incoming> {
        let mut buf = [0u8; 4096];
        loop {
            match self.sock.read(&mut buf) {
                Ok(0) => return Some(Incoming::Eof),
                Ok(n) => self.inbox.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(Incoming::Reset),
                Err(e) => panic!("peer: read failed: {e}"),
            }
        }
    }

    /// Whether nothing at all has arrived (checked without waiting).
    pub fn nothing_arrived(&mut self) -> bool {
        self.fill().is_none() && self.inbox.is_empty()
    }

    /// Waits for `n` bytes (setup frames); `Err` with how the stream ended
    /// if it ended first.
    fn take(&mut self, n: usize, pump: &mut dyn FnMut()) -> Result<Vec<u8>, Incoming> {
        let end = Instant::now() + WAIT;
        loop {
            if self.inbox.len() >= n {
                return Ok(self.inbox.drain(..n).collect());
            }
            if let Some(closed) = self.fill() {
                if self.inbox.len() >= n {
                    return Ok(self.inbox.drain(..n).collect());
                }
                return Err(closed);
            }
            assert!(Instant::now() < end, "peer: deadline waiting for {n} bytes");
            pump();
        }
    }

    /// Reads the MPA Reply (hand-parsed); `Err` if the stream ended first.
    /// Bytes after it stay in the inbox for the FPDU reader.
    pub fn read_reply(&mut self, pump: &mut dyn FnMut()) -> Result<Reply, Incoming> {
        self.read_frame(&KEY_REPLY, pump)
    }

    /// The passive side: reads the target's MPA Request (hand-parsed, into
    /// the same fields as a Reply); `Err` if the stream ended first.
    pub fn read_request(&mut self, pump: &mut dyn FnMut()) -> Result<Reply, Incoming> {
        self.read_frame(&KEY_REQUEST, pump)
    }

    fn read_frame(&mut self, key: &[u8; 16], pump: &mut dyn FnMut()) -> Result<Reply, Incoming> {
        let h = self.take(20, pump)?;
        assert_eq!(
            &h[..16],
            key,
            "peer: the target's frame is {}",
            String::from_utf8_lossy(key)
        );
        let len = u16::from_be_bytes([h[18], h[19]]) as usize;
        let pd = self.take(len, pump)?;
        Ok(Reply {
            flags: h[16],
            revision: h[17],
            pd,
        })
    }

    /// From now on FPDUs carry CRC32c both ways (C was negotiated).
    pub fn set_crc(&mut self, on: bool) {
        self.crc = on;
        self.reader = FpduReader::new(on);
    }

    /// The next FPDU the target sends, or how the stream ended. A framing
    /// or CRC error in what the target sends fails the test.
    pub fn next(&mut self, pump: &mut dyn FnMut()) -> Incoming {
        self.next_before(Instant::now() + WAIT, pump)
            .unwrap_or_else(|| panic!("peer: deadline waiting for an FPDU"))
    }

    /// Like [`Peer::next`], but `None` if no FPDU is complete at `end` (a
    /// part of one already received is kept for the next call).
    pub fn next_before(&mut self, end: Instant, pump: &mut dyn FnMut()) -> Option<Incoming> {
        loop {
            while !self.inbox.is_empty() {
                let was_payload = matches!(self.reader.need(), RxNeed::Payload(_));
                let fed = self
                    .reader
                    .feed(&self.inbox)
                    .expect("peer: the target's FPDU is well formed");
                if was_payload {
                    self.payload.extend_from_slice(&self.inbox[..fed.consumed]);
                }
                self.inbox.drain(..fed.consumed);
                match fed.event {
                    Some(RxEvent::Segment(s)) => self.header = Some(s.header),
                    Some(RxEvent::Done) => {
                        let header = self.header.take().expect("peer: header before Done");
                        let payload = std::mem::take(&mut self.payload);
                        return Some(Incoming::Fpdu(Got { header, payload }));
                    }
                    None => {}
                }
            }
            if let Some(closed) = self.fill() {
                if self.inbox.is_empty() {
                    assert!(
                        self.header.is_none() && matches!(self.reader.need(), RxNeed::Header(4)),
                        "peer: the target's stream ended inside an FPDU"
                    );
                    return Some(closed);
                }
                // Bytes arrived with the end: parse them first, then report
                // the end (the next call reads it again).
                continue;
            }
            if Instant::now() >= end {
                return None;
            }
            pump();
        }
    }

    /// FPDUs up to and including the first Terminate; fails if the stream
    /// ends before one arrives. Returns (FPDUs before it, the Terminate).
    pub fn until_terminate(&mut self, pump: &mut dyn FnMut()) -> (Vec<Got>, Got) {
        let mut before = Vec::new();
        loop {
            match self.next(pump) {
                Incoming::Fpdu(g) if g.header.ulp.opcode() as u8 == OP_TERMINATE => {
                    return (before, g);
                }
                Incoming::Fpdu(g) => before.push(g),
                other => {
                    panic!("peer: stream ended ({other:?}) before a Terminate; got {before:?}")
                }
            }
        }
    }

    /// Asserts the target sends nothing more and closes the connection.
    pub fn expect_closed(&mut self, pump: &mut dyn FnMut()) {
        match self.next(pump) {
            Incoming::Eof | Incoming::Reset => {}
            Incoming::Fpdu(g) => panic!("peer: expected the end of stream, got {g:?}"),
        }
    }

    /// Asserts the target closes the connection without sending a byte (a
    /// refused setup).
    pub fn expect_closed_silently(&mut self, pump: &mut dyn FnMut()) {
        match self.take(1, pump) {
            Err(Incoming::Eof | Incoming::Reset) => {}
            Err(other) => panic!("peer: unexpected {other:?}"),
            Ok(b) => panic!("peer: expected the connection closed, got {b:?}…"),
        }
    }
}

// ─────────────────────────────── guarded memory ───────────────────────────────

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).expect("page size")
}

/// Anonymous memory with a `PROT_NONE` page on each side (any access there
/// kills the test process) and every byte set to a canary value, so that
/// a test can register part of it and prove afterwards that nothing beyond
/// what it allowed was written.
pub struct Guarded {
    base: *mut libc::c_void,
    total: usize,
    data: *mut u8,
    len: usize,
    canary: u8,
}

impl Guarded {
    /// `len` usable bytes (rounded up to pages), all set to `canary`.
    pub fn new(len: usize, canary: u8) -> Guarded {
        let page = page_size();
        let len = len.div_ceil(page).max(1) * page;
        let total = len + 2 * page;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap");
        // SAFETY: both pages lie inside the mapping just made; `data` is
        // the first byte after the leading guard page.
        let data = unsafe {
            let b = base.cast::<u8>();
            assert_eq!(libc::mprotect(base, page, libc::PROT_NONE), 0);
            assert_eq!(
                libc::mprotect(b.add(page + len).cast(), page, libc::PROT_NONE),
                0
            );
            b.add(page)
        };
        // SAFETY: `data..data + len` is mapped read-write and owned here.
        unsafe { std::ptr::write_bytes(data, canary, len) };
        Guarded {
            base,
            total,
            data,
            len,
            canary,
        }
    }

    /// Address of usable byte `off`.
    pub fn addr(&self, off: usize) -> u64 {
        assert!(off <= self.len);
        self.data as u64 + off as u64
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// A copy of the usable bytes (read through a raw pointer: the target
    /// may have written them).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        // SAFETY: `data..data + len` is mapped and readable; `v` is a
        // distinct allocation of the same length.
        unsafe { std::ptr::copy_nonoverlapping(self.data, v.as_mut_ptr(), self.len) };
        v
    }

    /// Asserts every byte outside `[from, to)` still holds the canary.
    pub fn assert_untouched_outside(&self, from: usize, to: usize, what: &str) {
        let s = self.snapshot();
        for (i, &b) in s.iter().enumerate() {
            if i < from || i >= to {
                assert_eq!(
                    b, self.canary,
                    "{what}: byte {i} outside [{from}, {to}) was written"
                );
            }
        }
    }

    /// Asserts no byte was written at all.
    pub fn assert_untouched(&self, what: &str) {
        self.assert_untouched_outside(0, 0, what);
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made.
        unsafe { libc::munmap(self.base, self.total) };
    }
}
