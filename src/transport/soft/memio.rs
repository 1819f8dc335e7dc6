//! Moving bytes between sockets and application memory, and copying it,
//! without faulting: application memory ([`RawSeg`]) is never made into a
//! Rust reference and moves only through iovecs the kernel checks, so a bad
//! address is [`IoError::Fault`] (`EFAULT`). After `Fault` from a receive
//! the stream position is unknown (the connection must be terminated);
//! after one from a send the peer has what earlier `Ok` counts said. No call
//! allocates. Details: docs/transport.md, "Application memory access".
#![allow(unsafe_code)]

mod copy;
mod plan;
mod stream;

pub use copy::{
    copy_app, digest_app, digest_segs, read_app, read_segs, write_app, write_segs, DIGEST_CHUNK,
};
pub use plan::IoPlan;
pub use stream::{recv_plan, send_plan, send_plans, RecvGather};

use std::fmt;

/// Entries of the iovec arrays built on the stack per system call.
pub const IOV_CHUNK: usize = 64;

/// Most bytes one system call is asked to move: far below the kernel's
/// per-call limit (`MAX_RW_COUNT`, just under 2 GiB), so lengths always fit
/// `ssize_t`.
pub const MAX_CALL_BYTES: usize = 1 << 30;

/// A range of application memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawSeg {
    pub addr: u64,
    pub len: u64,
}

/// Why a transfer or copy failed. See the `stream` module for when a
/// partial transfer is reported instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoError {
    /// The socket is non-blocking and nothing could be transferred
    /// (`EAGAIN`).
    WouldBlock,
    /// Application memory is not accessible as needed (`EFAULT`).
    Fault,
    /// End of stream on receive, or the connection is gone (`EPIPE`,
    /// `ECONNRESET`).
    Closed,
    /// Any other error, by errno.
    Other(i32),
}

impl IoError {
    /// The error for a failed system call's errno.
    pub fn from_errno(errno: i32) -> IoError {
        match errno {
            libc::EAGAIN => IoError::WouldBlock,
            libc::EFAULT => IoError::Fault,
            libc::EPIPE | libc::ECONNRESET => IoError::Closed,
            e => IoError::Other(e),
        }
    }

    /// An errno for the error: `Closed` is `ECONNRESET`.
    pub fn errno(self) -> i32 {
        match self {
            IoError::WouldBlock => libc::EAGAIN,
            IoError::Fault => libc::EFAULT,
            IoError::Closed => libc::ECONNRESET,
            IoError::Other(e) => e,
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::WouldBlock => f.write_str("operation would block"),
            IoError::Fault => f.write_str("application memory not accessible"),
            IoError::Closed => f.write_str("connection closed"),
            IoError::Other(e) => write!(f, "{}", std::io::Error::from_raw_os_error(*e)),
        }
    }
}

impl std::error::Error for IoError {}

impl From<IoError> for std::io::Error {
    fn from(e: IoError) -> Self {
        std::io::Error::from_raw_os_error(e.errno())
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// An address for the kernel: one beyond a 64-bit address space cannot be
/// ours, and becomes one that faults.
fn app_ptr(addr: u64) -> *mut libc::c_void {
    usize::try_from(addr).unwrap_or(usize::MAX) as *mut libc::c_void
}

#[cfg(test)]
mod tests;
