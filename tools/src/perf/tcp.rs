//! The `--baseline tcp` side: the same patterns over plain TCP sockets
//! between the same two processes, spun on for `--wait poll|mem` and
//! blocking otherwise, every call within the run's timeout. The pattern per
//! test is in docs/tools.md, "How dat-perf runs a test".

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::proto::{corrupt, corrupt_offset, pattern, Batch, Metric, Mismatch, Params, Test};
use super::Error;

/// A TCP connection with the run's waiting style and timeout.
pub struct Link {
    s: TcpStream,
    spin: bool,
    timeout: Duration,
}

fn lost() -> Error {
    Error("connection lost: the peer closed the TCP baseline connection".into())
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
            Error(format!("connection lost: TCP baseline {what}: {e}"))
        }
        _ => Error(format!("TCP baseline {what}: {e}")),
    }
}

impl Link {
    pub fn new(s: TcpStream, spin: bool, timeout: Duration) -> Result<Link, Error> {
        let setup = || -> std::io::Result<()> {
            s.set_nodelay(true)?;
            s.set_nonblocking(spin)?;
            if !spin {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
            }
            Ok(())
        };
        setup().map_err(|e| io_error("socket options", e))?;
        Ok(Link { s, spin, timeout })
    }

    pub fn connect(to: SocketAddr, spin: bool, timeout: Duration) -> Result<Link, Error> {
        let s = TcpStream::connect_timeout(&to, timeout)
            .map_err(|e| Error(format!("cannot connect the TCP baseline to {to}: {e}")))?;
        Link::new(s, spin, timeout)
    }

    fn timed_out(&self, what: &str) -> Error {
        Error(format!(
            "timed out after {} s waiting for the TCP baseline's {what}",
            self.timeout.as_secs_f64()
        ))
    }

    pub fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), Error> {
        let len = buf.len();
        self.all(len, "read", "data", |s, at| s.read(&mut buf[at..]))
    }

    pub fn write_all(&mut self, buf: &[u8]) -> Result<(), Error> {
        self.all(buf.len(), "write", "room to write", |s, at| {
            s.write(&buf[at..])
        })
    }

    /// Moves `len` bytes with `step` (given the socket and the bytes done
    /// so far), spinning or blocking as the link does, within the timeout.
    fn all(
        &mut self,
        len: usize,
        op: &str,
        waiting_for: &str,
        mut step: impl FnMut(&mut TcpStream, usize) -> std::io::Result<usize>,
    ) -> Result<(), Error> {
        let deadline = Instant::now() + self.timeout;
        let mut at = 0;
        let mut spins = 0u32;
        while at < len {
            match step(&mut self.s, at) {
                Ok(0) => return Err(lost()),
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.spin => {
                    spins = spins.wrapping_add(1);
                    if spins % 1024 == 0 && Instant::now() > deadline {
                        return Err(self.timed_out(waiting_for));
                    }
                    std::hint::spin_loop();
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(self.timed_out(waiting_for))
                }
                Err(e) => return Err(io_error(op, e)),
            }
        }
        Ok(())
    }
}

/// Waits up to `timeout` for a connection on `l`.
pub fn accept(l: &TcpListener, spin: bool, timeout: Duration) -> Result<TcpStream, Error> {
    l.set_nonblocking(true)
        .map_err(|e| io_error("listener", e))?;
    let deadline = Instant::now() + timeout;
    loop {
        match l.accept() {
            Ok((s, _)) => return Ok(s),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) => return Err(io_error("accept", e)),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error(format!(
                "timed out after {} s waiting for the client's TCP baseline connection",
                timeout.as_secs_f64()
            )));
        }
        if spin {
            std::hint::spin_loop();
            continue;
        }
        let mut p = libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, 500) as libc::c_int;
        // SAFETY: one pollfd on our live listening socket, for the call only.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}

/// Buffers of the TCP side (plain memory: no library touches it).
#[derive(Default)]
pub struct Bufs {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl Bufs {
    fn ensure(&mut self, size: usize) {
        if self.src.len() < size {
            self.src.resize(size, 0);
            self.dst.resize(size, 0);
        }
    }
}

fn fill(buf: &mut [u8], i: u64, corrupt_at: Option<u64>) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = pattern(i, k as u64);
    }
    if corrupt_at == Some(i) {
        let k = corrupt_offset(buf.len() as u64) as usize;
        buf[k] = corrupt(buf[k]);
    }
}

fn check(buf: &[u8], i: u64, found: &mut Option<Mismatch>) {
    if found.is_some() {
        return;
    }
    if let Some(k) = buf
        .iter()
        .enumerate()
        .position(|(k, &b)| b != pattern(i, k as u64))
    {
        *found = Some(Mismatch {
            iter: i,
            byte: k as u64,
        });
    }
}

/// The client's data phase of one batch: seconds, first mismatch.
pub fn client_batch(
    link: &mut Link,
    bufs: &mut Bufs,
    p: &Params,
    b: Batch,
    corrupt_at: Option<u64>,
    times: &mut Vec<u64>,
) -> Result<(f64, Option<Mismatch>), Error> {
    let Batch { size, first, count } = b;
    let n = size as usize;
    bufs.ensure(n);
    let mut found = None;
    let start = Instant::now();
    match (p.test, p.mode) {
        (Test::Send | Test::Write, Metric::Lat) => {
            for j in 0..count {
                let i = first + j;
                if p.verify {
                    fill(&mut bufs.src[..n], i, corrupt_at);
                }
                let t0 = Instant::now();
                link.write_all(&bufs.src[..n])?;
                link.read_exact(&mut bufs.dst[..n])?;
                times.push(t0.elapsed().as_nanos() as u64 / 2);
                if p.verify {
                    check(&bufs.dst[..n], i, &mut found);
                }
            }
        }
        (Test::Read, Metric::Lat) => {
            for j in 0..count {
                let i = first + j;
                let t0 = Instant::now();
                link.write_all(&i.to_be_bytes())?;
                link.read_exact(&mut bufs.dst[..n])?;
                times.push(t0.elapsed().as_nanos() as u64);
                if p.verify {
                    check(&bufs.dst[..n], i, &mut found);
                }
            }
        }
        (Test::Send | Test::Write, Metric::Bw) => {
            for j in 0..count {
                if p.verify {
                    fill(&mut bufs.src[..n], first + j, corrupt_at);
                }
                link.write_all(&bufs.src[..n])?;
            }
            let mut ack = [0u8; 1];
            link.read_exact(&mut ack)?;
        }
        (Test::Read, Metric::Bw) => {
            link.write_all(b"g")?;
            for j in 0..count {
                link.read_exact(&mut bufs.dst[..n])?;
                if p.verify {
                    check(&bufs.dst[..n], first + j, &mut found);
                }
            }
        }
        (Test::Conn | Test::Idle, _) => unreachable!("conn and idle have their own loops"),
    }
    Ok((start.elapsed().as_secs_f64(), found))
}

/// The server's side of one batch: first mismatch it saw.
pub fn server_batch(
    link: &mut Link,
    bufs: &mut Bufs,
    p: &Params,
    b: Batch,
    corrupt_at: Option<u64>,
) -> Result<Option<Mismatch>, Error> {
    let Batch { size, first, count } = b;
    let n = size as usize;
    bufs.ensure(n);
    let mut found = None;
    match (p.test, p.mode) {
        (Test::Send | Test::Write, Metric::Lat) => {
            for j in 0..count {
                let i = first + j;
                link.read_exact(&mut bufs.dst[..n])?;
                if p.verify {
                    check(&bufs.dst[..n], i, &mut found);
                    fill(&mut bufs.src[..n], i, corrupt_at);
                    link.write_all(&bufs.src[..n])?;
                } else {
                    link.write_all(&bufs.dst[..n])?;
                }
            }
        }
        (Test::Read, Metric::Lat) => {
            let mut req = [0u8; 8];
            for j in 0..count {
                let i = first + j;
                link.read_exact(&mut req)?;
                if p.verify {
                    fill(&mut bufs.src[..n], i, corrupt_at);
                }
                link.write_all(&bufs.src[..n])?;
            }
        }
        (Test::Send | Test::Write, Metric::Bw) => {
            for j in 0..count {
                link.read_exact(&mut bufs.dst[..n])?;
                if p.verify {
                    check(&bufs.dst[..n], first + j, &mut found);
                }
            }
            link.write_all(b"k")?;
        }
        (Test::Read, Metric::Bw) => {
            let mut go = [0u8; 1];
            link.read_exact(&mut go)?;
            for j in 0..count {
                if p.verify {
                    fill(&mut bufs.src[..n], first + j, corrupt_at);
                }
                link.write_all(&bufs.src[..n])?;
            }
        }
        (Test::Conn | Test::Idle, _) => unreachable!("conn and idle have their own loops"),
    }
    Ok(found)
}

/// Connection rate, client: connect, 8-byte round trip, close.
pub fn client_conns(
    to: SocketAddr,
    p: &Params,
    timeout: Duration,
    b: Batch,
    corrupt_at: Option<u64>,
    times: &mut Vec<u64>,
) -> Result<(f64, Option<Mismatch>), Error> {
    let Batch { first, count, .. } = b;
    let mut found = None;
    let mut out = [0u8; 8];
    let mut back = [0u8; 8];
    let start = Instant::now();
    for j in 0..count {
        let i = first + j;
        if p.verify {
            fill(&mut out, i, corrupt_at);
        }
        let t0 = Instant::now();
        let mut l = Link::connect(to, false, timeout)?;
        l.write_all(&out)?;
        l.read_exact(&mut back)?;
        drop(l);
        times.push(t0.elapsed().as_nanos() as u64);
        if p.verify {
            check(&back, i, &mut found);
        }
    }
    Ok((start.elapsed().as_secs_f64(), found))
}

/// Connection rate, server: accept, answer the 8 bytes, close.
pub fn server_conns(
    l: &TcpListener,
    p: &Params,
    timeout: Duration,
    b: Batch,
    corrupt_at: Option<u64>,
) -> Result<Option<Mismatch>, Error> {
    let Batch { first, count, .. } = b;
    let mut found = None;
    let mut buf = [0u8; 8];
    let mut out = [0u8; 8];
    for j in 0..count {
        let i = first + j;
        let s = accept(l, false, timeout)?;
        let mut link = Link::new(s, false, timeout)?;
        link.read_exact(&mut buf)?;
        if p.verify {
            check(&buf, i, &mut found);
            fill(&mut out, i, corrupt_at);
            link.write_all(&out)?;
        } else {
            link.write_all(&buf)?;
        }
    }
    Ok(found)
}
