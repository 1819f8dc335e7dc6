//! The raw TCP baselines: the same patterns over plain loopback sockets,
//! busy-polling non-blocking sockets or sleeping in blocking reads.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use super::harness::{blocking, pattern, two};
use super::{LO, R, WAIT};

fn tcp_pair() -> R<(TcpStream, TcpStream)> {
    let l = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let c = TcpStream::connect((LO, port)).map_err(|e| format!("connect: {e}"))?;
    let (s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
    for x in [&c, &s] {
        x.set_nodelay(true).map_err(|e| e.to_string())?;
        x.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
        x.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    }
    Ok((c, s))
}

/// Busy-polling `read_exact` on a non-blocking socket.
pub(crate) fn spin_read(mut s: &TcpStream, buf: &mut [u8]) -> R<()> {
    let end = Instant::now() + WAIT;
    let mut got = 0;
    let mut spins = 0u32;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err("tcp: end of stream".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                spins = spins.wrapping_add(1);
                if spins % 1024 == 0 && Instant::now() > end {
                    return Err("tcp: read timed out".into());
                }
            }
            Err(e) => return Err(format!("tcp read: {e}")),
        }
    }
    Ok(())
}

/// Busy-polling `write_all` on a non-blocking socket.
pub(crate) fn spin_write(mut s: &TcpStream, buf: &[u8]) -> R<()> {
    let end = Instant::now() + WAIT;
    let mut put = 0;
    let mut spins = 0u32;
    while put < buf.len() {
        match s.write(&buf[put..]) {
            Ok(n) => put += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                spins = spins.wrapping_add(1);
                if spins % 1024 == 0 && Instant::now() > end {
                    return Err("tcp: write timed out".into());
                }
            }
            Err(e) => return Err(format!("tcp write: {e}")),
        }
    }
    Ok(())
}

/// Ping-pong over TCP: seconds per round trip.
pub(crate) fn tcp_pingpong(len: usize, warm: usize, iters: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 1);
    two(
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            let mut t0 = Instant::now();
            for i in 0..warm + iters {
                if i == warm {
                    t0 = Instant::now();
                }
                spin_write(&c, &src)?;
                spin_read(&c, &mut rb)?;
                if i == 0 && rb != src {
                    return Err("tcp ping-pong: data mismatch".into());
                }
            }
            Ok(t0.elapsed().as_secs_f64() / iters as f64)
        },
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            for _ in 0..warm + iters {
                spin_read(&s, &mut rb)?;
                spin_write(&s, &rb)?;
            }
            Ok(())
        },
    )
}

/// Streams `count` × `len` bytes one way; bytes per second at the receiver.
pub(crate) fn tcp_stream(len: usize, count: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 2);
    let chunk = len.min(1 << 20);
    two(
        |bar| {
            // The receiver fills a buffer as large as the message, as the
            // RDMA target does (reads of at most 1 MiB at a time).
            let mut rb = vec![0u8; len];
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                let mut at = 0;
                while at < len {
                    let n = (len - at).min(chunk);
                    spin_read(&s, &mut rb[at..at + n])?;
                    at += n;
                }
                if i == 0 && rb != src {
                    return Err("tcp stream: data mismatch".into());
                }
            }
            Ok((len * count) as f64 / t0.elapsed().as_secs_f64())
        },
        |bar| {
            bar.wait();
            for _ in 0..count {
                spin_write(&c, &src)?;
            }
            Ok(())
        },
    )
}

/// `count` messages of `len` bytes, one `write` each; messages per second.
pub(crate) fn tcp_msg_rate(len: usize, count: usize) -> R<f64> {
    let (c, s) = tcp_pair()?;
    let src = pattern(len, 3);
    two(
        |bar| {
            let mut rb = vec![0u8; len];
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                spin_read(&s, &mut rb)?;
                if i == 0 && rb != src {
                    return Err("tcp messages: data mismatch".into());
                }
            }
            Ok(count as f64 / t0.elapsed().as_secs_f64())
        },
        |bar| {
            bar.wait();
            for _ in 0..count {
                spin_write(&c, &src)?;
            }
            Ok(())
        },
    )
}

/// connect + one round trip + close, per second.
pub(crate) fn tcp_conn_rate(count: usize) -> R<f64> {
    let l = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let t0 = Instant::now();
    for _ in 0..count {
        let mut c = TcpStream::connect((LO, port)).map_err(|e| format!("connect: {e}"))?;
        let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
        c.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut b = [0u8; 8];
        c.write_all(b"ping1234").map_err(|e| e.to_string())?;
        s.read_exact(&mut b).map_err(|e| e.to_string())?;
        s.write_all(&b).map_err(|e| e.to_string())?;
        c.read_exact(&mut b).map_err(|e| e.to_string())?;
        if &b != b"ping1234" {
            return Err("tcp connections: data mismatch".into());
        }
    }
    Ok(count as f64 / t0.elapsed().as_secs_f64())
}
