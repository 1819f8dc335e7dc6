//! The TCP driver's socket calls: non-blocking connect, socket options,
//! the `MSG_PEEK` look at an FPDU boundary. The only `unsafe` of the TCP
//! driver is here (data into application memory goes through `memio`).
#![allow(unsafe_code)]

use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

use super::options::DeviceOptions;

pub(super) fn write_small(stream: &TcpStream, mut bytes: &[u8]) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while !bytes.is_empty() {
        match (&*stream).write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if Instant::now() > until {
                    return false;
                }
                std::thread::yield_now();
            }
            Err(_) => return false,
        }
    }
    true
}

/// A non-blocking TCP connect already under way.
pub(super) fn start_connect(to: SocketAddr) -> std::io::Result<TcpStream> {
    // SAFETY: plain socket calls on a descriptor we own; the sockaddr
    // structures are fully initialised and live across the call.
    unsafe {
        let (family, storage, len) = sockaddr_of(to);
        let fd = libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let r = libc::connect(fd, (&raw const storage).cast(), len);
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(e);
            }
        }
        Ok(stream)
    }
}

pub(super) fn sockaddr_of(to: SocketAddr) -> (i32, libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match to {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in.
            unsafe { std::ptr::write((&raw mut st).cast(), sin) };
            (
                libc::AF_INET,
                st,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in6.
            unsafe { std::ptr::write((&raw mut st).cast(), sin6) };
            (
                libc::AF_INET6,
                st,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// Whether a connecting socket finished (`Some(Ok)`), failed, or not yet.
pub(super) fn connect_done(stream: &TcpStream) -> Option<std::io::Result<()>> {
    let mut fds = [nix::poll::PollFd::new(
        stream.as_fd(),
        nix::poll::PollFlags::POLLOUT,
    )];
    match nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO) {
        Ok(1) => Some(match stream.take_error() {
            Ok(None) => Ok(()),
            Ok(Some(e)) | Err(e) => Err(e),
        }),
        _ => None,
    }
}

/// Keepalive and user timeout from the device options, so that a silent
/// peer breaks the connection.
pub(super) fn tune_socket(stream: &TcpStream, o: &DeviceOptions) -> std::io::Result<()> {
    let secs = |d: Duration| d.as_secs().clamp(1, i32::MAX as u64) as libc::c_int;
    let ms = |d: Duration| d.as_millis().clamp(1, i32::MAX as u128) as libc::c_uint;
    setsockopt_int(stream, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPIDLE,
        secs(o.keepalive_idle),
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPINTVL,
        secs(o.keepalive_interval),
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_KEEPCNT,
        o.keepalive_count.clamp(1, 127) as libc::c_int,
    )?;
    setsockopt_int(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_USER_TIMEOUT,
        ms(o.user_timeout) as libc::c_int,
    )
}

pub(super) fn setsockopt_int(
    stream: &TcpStream,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: `v` lives across the call and its size is passed; the
    // descriptor is owned by `stream`.
    let r = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The connection's TCP maximum segment size: the FPDU size of `fpdu=mss`.
pub(super) fn tcp_mss(stream: &TcpStream) -> Option<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for writes and `len` is its size.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0 && v > 0).then_some(v as usize)
}

pub(super) fn set_linger_zero(stream: &TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid descriptor and a linger structure of the right size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const l).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Peeks (`MSG_PEEK | MSG_DONTWAIT`) at the bytes that have arrived, into
/// `buf`; `Ok(0)` at end of stream.
pub(super) fn peek(stream: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: `buf` is our own buffer, valid for writes of its length.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
