//! The few raw helpers the verbs transport shares: a thread-safe raw
//! pointer wrapper for rdma-core objects, eventfds, and socket addresses
//! as rdma_cm reads and writes them.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::sys;
use crate::transport::SockAddrStorage;

/// A raw rdma-core pointer that may cross threads (rdma-core objects are
/// thread-safe; the holder says why in its own `SAFETY` note).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Ptr<T>(pub *mut T);

// SAFETY: see the type's comment: only rdma-core objects are wrapped.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}

pub(super) fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

pub(super) fn eventfd() -> std::io::Result<OwnedFd> {
    // SAFETY: eventfd has no memory preconditions; the descriptor is owned.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn write_eventfd(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a local buffer.
    let _ = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
}

pub(super) fn drain_eventfd(fd: &OwnedFd) {
    let mut buf = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a local buffer (non-blocking).
    let _ = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
}

pub(super) fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a descriptor rdma-core owns and keeps open.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
}

/// A socket address as rdma_cm takes it.
pub(super) struct RawAddr(SockAddrStorage);

impl RawAddr {
    pub(super) fn as_mut_ptr(&mut self) -> *mut sys::sockaddr {
        self.0.bytes.as_mut_ptr().cast()
    }
}

pub(super) fn sockaddr_of(a: SocketAddr) -> RawAddr {
    RawAddr(SockAddrStorage::from(a))
}

/// The socket address at `p` (a `sockaddr_in` or `sockaddr_in6`).
///
/// # Safety
/// `p` points at a readable `sockaddr_storage`-sized buffer.
pub(super) unsafe fn socket_addr_at(p: *const sys::sockaddr) -> Option<SocketAddr> {
    let mut s = SockAddrStorage { bytes: [0; 32] };
    // SAFETY: per the contract, 28 bytes (a sockaddr_in6) are readable.
    unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), s.bytes.as_mut_ptr(), 28) };
    s.to_socket_addr()
}
