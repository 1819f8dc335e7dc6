//! Moving bytes between sockets and application memory, and copying
//! application memory, without ever faulting on it.
//!
//! Application memory is what the consumer registered, named by raw `u64`
//! addresses and lengths ([`RawSeg`]). It is never turned into a Rust
//! reference or slice: the application may change it under us, unmap it, or
//! alias it. It moves only through `iovec`s handed to the kernel, which
//! reports an unusable address as `EFAULT` instead of raising a signal:
//! - sockets: `sendmsg` / `recvmsg` with an iovec array built from an
//!   [`IoPlan`] (a local header, a byte range of a scatter list, a local
//!   trailer): [`send_plan`], [`recv_plan`];
//! - copies: `process_vm_readv` on our own pid, which reads its "remote"
//!   side and writes its "local" side with the kernel's user-copy routines,
//!   so both an unreadable source and an unwritable destination are
//!   `EFAULT`: [`read_app`], [`write_app`], [`copy_app`], [`read_segs`],
//!   [`write_segs`], [`digest_app`], [`digest_segs`]. One syscall serves
//!   every direction (`process_vm_writev` would add nothing).
//!
//! No call allocates: iovec arrays are built on the stack, [`IOV_CHUNK`]
//! entries at a time, and longer lists are handled by looping.
//!
//! # Errors
//!
//! One error type, [`IoError`]: `WouldBlock` (`EAGAIN`), `Fault`
//! (`EFAULT`: some byte of application memory is not accessible as
//! needed), `Closed` (end of stream on receive, `EPIPE` / `ECONNRESET`),
//! `Other(errno)`. Copies only return `Fault` and `Other`.
//!
//! Socket calls follow `readv`/`writev` semantics: an error is returned
//! only if nothing was transferred by the call; after a partial transfer the
//! call returns the count, and the condition (if it persists) is reported by
//! the next call, which the caller makes after advancing the plan by the
//! count ([`IoPlan::advance`]). `EINTR` is retried.
//!
//! # A fault in the middle of a transfer
//!
//! Measured on Linux 6.18 over Unix stream and TCP sockets, with a
//! `PROT_NONE` page in the middle of the memory:
//! - `recvmsg` returns `EFAULT`, or a short count covering the socket
//!   buffers it copied completely before the one that faulted. The stream
//!   is consumed exactly up to the returned count, but destination bytes
//!   *past* the count, up to the bad page, may already hold stream data.
//! - `sendmsg` returns a short count, exactly the bytes the peer receives
//!   (possibly fewer than those before the bad page), and `EFAULT` when
//!   retried from there; `EFAULT` at once if nothing could be queued.
//!
//! What the caller must assume (the kernel does not document the above):
//! counts returned as `Ok` are exact on both sides, and the bytes they cover
//! were transferred correctly. After [`IoError::Fault`] from
//! [`recv_plan`] the position of the byte stream is unknown and application
//! memory of the whole plan may have been written: the connection must be
//! terminated (for the transport a fault is a fatal protection error). After
//! `Fault` from [`send_plan`] the peer has received what earlier `Ok` counts
//! said, nothing more.
//!
//! # The `process_vm_readv` fallback
//!
//! Where `process_vm_readv` is refused (a seccomp filter answering `EPERM`
//! or `ENOSYS`), the first refusal switches the process for good to copies
//! through a pipe: `write` the source into a private non-blocking pipe, and
//! `read` it into the destination, 64 KiB at a time. `write` fails with
//! `EFAULT` (or comes back short) where the source is not readable, `read`
//! where the destination is not writable; both honour page protections as
//! `process_vm_readv` does (`/proc/self/mem` would not: it writes through
//! read-only mappings). After a fault the bytes left in the pipe are
//! drained, or the pipe is dropped if they cannot be. Each thread has its
//! own pipe (no lock), made on first use and remade in a forked child. Any
//! other failure of `process_vm_readv` (`ENOMEM`) uses the pipe for that
//! copy only.
//!
//! # Contract
//!
//! These are safe functions taking raw addresses: a `RawSeg` must name
//! application memory, checked by [`crate::transport::soft::keys`] before every use, never
//! memory that Rust code holds a reference to. Header and trailer slices
//! are our own memory and are borrowed normally. A 64-bit address space is
//! assumed (on a 32-bit target an address beyond it is passed to the kernel
//! as one that faults).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU8, Ordering};

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

/// Why a transfer or copy failed. See the module documentation for when a
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

/// The bytes of a transfer: a local header, bytes `[off, off + len)` of a
/// scatter list of application memory, a local trailer, in this order.
///
/// A plan made by [`IoPlan::send`] is only read; one made by
/// [`IoPlan::recv`] borrows its header and trailer mutably and may be
/// received into. After a partial transfer, [`IoPlan::advance`] drops the
/// bytes transferred.
pub struct IoPlan<'a> {
    head: *mut u8,
    head_len: usize,
    /// The list from the segment holding the next application byte.
    segs: &'a [RawSeg],
    /// Bytes of `segs[0]` already behind us.
    off: u64,
    /// Application bytes left.
    len: u64,
    tail: *mut u8,
    tail_len: usize,
    writable: bool,
    _local: PhantomData<&'a mut [u8]>,
}

impl<'a> IoPlan<'a> {
    fn new(
        head: (*mut u8, usize),
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        tail: (*mut u8, usize),
        writable: bool,
    ) -> Option<IoPlan<'a>> {
        let end = off.checked_add(len)?;
        let mut total: u64 = 0;
        for s in segs {
            total = total.checked_add(s.len)?;
        }
        if end > total {
            return None;
        }
        let mut plan = IoPlan {
            head: head.0,
            head_len: head.1,
            segs,
            off,
            len,
            tail: tail.0,
            tail_len: tail.1,
            writable,
            _local: PhantomData,
        };
        plan.skip_spent_segs();
        Some(plan)
    }

    /// A plan to send: `header`, bytes `[off, off + len)` of `segs`,
    /// `trailer`. `None` if the range is not inside the list.
    pub fn send(
        header: &'a [u8],
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        trailer: &'a [u8],
    ) -> Option<IoPlan<'a>> {
        Self::new(
            (header.as_ptr().cast_mut(), header.len()),
            segs,
            off,
            len,
            (trailer.as_ptr().cast_mut(), trailer.len()),
            false,
        )
    }

    /// A plan to receive into: `header`, bytes `[off, off + len)` of `segs`,
    /// `trailer`. `None` if the range is not inside the list.
    pub fn recv(
        header: &'a mut [u8],
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        trailer: &'a mut [u8],
    ) -> Option<IoPlan<'a>> {
        Self::new(
            (header.as_mut_ptr(), header.len()),
            segs,
            off,
            len,
            (trailer.as_mut_ptr(), trailer.len()),
            true,
        )
    }

    /// Bytes of the plan not yet transferred.
    pub fn len(&self) -> u64 {
        self.head_len as u64 + self.len + self.tail_len as u64
    }

    /// Whether every byte has been transferred.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the first `n` bytes (transferred). Panics if `n` exceeds
    /// [`IoPlan::len`].
    pub fn advance(&mut self, n: usize) {
        let mut n = n as u64;
        assert!(n <= self.len(), "IoPlan advanced past its end");
        let h = n.min(self.head_len as u64) as usize;
        self.head = self.head.wrapping_add(h);
        self.head_len -= h;
        n -= h as u64;
        let a = n.min(self.len);
        self.off += a;
        self.len -= a;
        n -= a;
        self.skip_spent_segs();
        let t = n as usize;
        self.tail = self.tail.wrapping_add(t);
        self.tail_len -= t;
    }

    /// Drops leading segments that are wholly behind `off`, and the whole
    /// list once no application byte is left.
    fn skip_spent_segs(&mut self) {
        if self.len == 0 {
            self.segs = &[];
            self.off = 0;
            return;
        }
        while let Some(s) = self.segs.first() {
            if self.off < s.len {
                break;
            }
            self.off -= s.len;
            self.segs = &self.segs[1..];
        }
    }

    /// Fills `iov` with the plan's next bytes, skipping empty parts: at most
    /// `iov.len()` entries and [`MAX_CALL_BYTES`] bytes. Returns the entries
    /// and bytes filled; fewer bytes than [`IoPlan::len`] when the array or
    /// the byte limit ran out.
    #[cfg(test)]
    fn fill(&self, iov: &mut [libc::iovec]) -> (usize, usize) {
        let len = iov.len();
        // SAFETY: `MaybeUninit<iovec>` has the layout of `iovec`, and
        // `fill_uninit` only stores initialised values, so `iov` stays
        // initialised.
        let iov = unsafe {
            std::slice::from_raw_parts_mut(iov.as_mut_ptr().cast::<MaybeUninit<libc::iovec>>(), len)
        };
        self.fill_uninit(iov)
    }

    /// [`IoPlan::fill`] into possibly uninitialised entries: the first
    /// `count` returned are initialised.
    fn fill_uninit(&self, iov: &mut [MaybeUninit<libc::iovec>]) -> (usize, usize) {
        let mut count = 0;
        let mut bytes = 0usize;
        let mut push = |base: *mut libc::c_void, len: usize| -> bool {
            if len == 0 {
                return true;
            }
            if count == iov.len() || bytes == MAX_CALL_BYTES {
                return false;
            }
            let take = len.min(MAX_CALL_BYTES - bytes);
            iov[count].write(libc::iovec {
                iov_base: base,
                iov_len: take,
            });
            count += 1;
            bytes += take;
            take == len
        };
        if !push(self.head.cast(), self.head_len) {
            return (count, bytes);
        }
        let mut off = self.off;
        let mut left = self.len;
        for s in self.segs {
            if left == 0 {
                break;
            }
            let n = (s.len - off).min(left);
            let base = app_ptr(s.addr.wrapping_add(off));
            // n ≤ the plan's length; more than fits a call is cut by push.
            if !push(base, usize::try_from(n).unwrap_or(usize::MAX)) {
                return (count, bytes);
            }
            left -= n;
            off = 0;
        }
        push(self.tail.cast(), self.tail_len);
        (count, bytes)
    }
}

impl fmt::Debug for IoPlan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoPlan")
            .field("header", &self.head_len)
            .field("segs", &self.segs)
            .field("off", &self.off)
            .field("len", &self.len)
            .field("trailer", &self.tail_len)
            .field("writable", &self.writable)
            .finish()
    }
}

/// One `sendmsg` or `recvmsg` of `iov`, `EINTR` retried.
fn msg_call(fd: i32, iov: &mut [libc::iovec], flags: i32, send: bool) -> Result<usize, IoError> {
    // SAFETY: an all-zero msghdr (no address, no control data) is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = iov.len() as _;
    loop {
        let n = if send {
            // SAFETY: `msg` names `iov`, whose entries are our own readable
            // buffers or application memory; the kernel only reads through
            // them and reports an unreadable one as EFAULT.
            unsafe { libc::sendmsg(fd, &msg, flags) }
        } else {
            // SAFETY: `msg` names `iov`, whose entries are our own buffers
            // borrowed mutably by a receive plan, or application memory; the
            // kernel writes through them and reports an unwritable one as
            // EFAULT. No address or control buffer is given.
            unsafe { libc::recvmsg(fd, &mut msg, flags) }
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(IoError::from_errno(e)),
        }
    }
}

/// Sends the plan's bytes on a stream socket with `sendmsg`, as `writev`
/// would: [`IOV_CHUNK`] iovecs per call, looping while each call takes
/// everything it was given. Returns the bytes sent (less than
/// [`IoPlan::len`] when the socket took fewer), or an error if none were.
///
/// `MSG_NOSIGNAL` is always added (a closed connection is
/// [`IoError::Closed`], not `SIGPIPE`); the caller may pass `MSG_DONTWAIT`
/// and `MSG_MORE`. Calls before the last one of a long plan carry
/// `MSG_MORE`. An empty plan sends nothing and returns 0.
pub fn send_plan(fd: BorrowedFd<'_>, plan: &IoPlan<'_>, flags: i32) -> Result<usize, IoError> {
    let fd = fd.as_raw_fd();
    let mut rest = plan.shallow();
    let mut done = 0;
    let mut chunk = [const { MaybeUninit::<libc::iovec>::uninit() }; IOV_CHUNK];
    loop {
        let (count, bytes) = rest.fill_uninit(&mut chunk);
        if bytes == 0 {
            return Ok(done);
        }
        // SAFETY: fill_uninit initialised the first `count` entries, and
        // `MaybeUninit<iovec>` has the layout of `iovec`.
        let iov = unsafe { std::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast(), count) };
        let more = if (bytes as u64) < rest.len() {
            libc::MSG_MORE
        } else {
            0
        };
        match msg_call(
            fd,
            &mut iov[..count],
            flags | more | libc::MSG_NOSIGNAL,
            true,
        ) {
            Ok(n) => {
                done += n;
                rest.advance(n);
                if n < bytes || rest.is_empty() {
                    return Ok(done);
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => return Ok(done),
        }
    }
}

/// Sends several plans back to back as one stream (several FPDUs in one
/// `sendmsg` where they fit [`IOV_CHUNK`] entries), as [`send_plan`] does
/// for one. The list is a fixed-size array partly used: every entry must
/// be `Some` (`EINVAL` otherwise). Returns the bytes sent in all, or an
/// error if none were.
pub fn send_plans(
    fd: BorrowedFd<'_>,
    plans: &[Option<IoPlan<'_>>],
    flags: i32,
) -> Result<usize, IoError> {
    if plans.iter().any(Option::is_none) {
        return Err(IoError::Other(libc::EINVAL));
    }
    send_plans_with(
        fd,
        plans.len(),
        |i| match &plans[i] {
            Some(p) => p.shallow(),
            None => unreachable!("checked above"),
        },
        flags,
    )
}

fn send_plans_with<'a>(
    fd: BorrowedFd<'_>,
    nplans: usize,
    plan: impl Fn(usize) -> IoPlan<'a>,
    flags: i32,
) -> Result<usize, IoError> {
    let fd = fd.as_raw_fd();
    let mut at = 0;
    if nplans == 0 {
        return Ok(0);
    }
    let mut rest = plan(0);
    let mut done = 0;
    let mut chunk = [const { MaybeUninit::<libc::iovec>::uninit() }; IOV_CHUNK];
    loop {
        // Fill from the current plan on, as far as the array goes.
        let mut count = 0;
        let mut bytes = 0usize;
        let whole;
        let mut i = at;
        loop {
            let p = if i == at { rest.shallow() } else { plan(i) };
            let (c, b) = p.fill_uninit(&mut chunk[count..]);
            count += c;
            bytes += b;
            if (b as u64) < p.len() {
                whole = false;
                break;
            }
            i += 1;
            if i == nplans || count == IOV_CHUNK || bytes >= MAX_CALL_BYTES / 2 {
                whole = i == nplans;
                break;
            }
        }
        if bytes == 0 {
            return Ok(done);
        }
        // SAFETY: fill_uninit initialised the first `count` entries, and
        // `MaybeUninit<iovec>` has the layout of `iovec`.
        let iov = unsafe { std::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast(), count) };
        // A call that ends the last plan ends an FPDU: MSG_EOR keeps the
        // kernel from appending later bytes to its segment, so the next
        // FPDU starts a segment of its own (RFC 5044's FPDU alignment,
        // which Wireshark's dissector relies on), even when the socket is
        // backed up.
        let more = if whole { libc::MSG_EOR } else { libc::MSG_MORE };
        match msg_call(fd, iov, flags | more | libc::MSG_NOSIGNAL, true) {
            Ok(n) => {
                done += n;
                // Step over what went out.
                let mut left = n as u64;
                while left > 0 {
                    let l = rest.len();
                    if left < l {
                        rest.advance(left as usize);
                        left = 0;
                    } else {
                        left -= l;
                        at += 1;
                        if at == nplans {
                            return Ok(done);
                        }
                        rest = plan(at);
                    }
                }
                while rest.is_empty() {
                    at += 1;
                    if at == nplans {
                        return Ok(done);
                    }
                    rest = plan(at);
                }
                if n < bytes {
                    return Ok(done);
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => return Ok(done),
        }
    }
}

/// Receives from a stream socket into the plan with `recvmsg`, as `readv`
/// would: [`IOV_CHUNK`] iovecs per call, looping while each call fills
/// everything it was given. Returns the bytes received (less than
/// [`IoPlan::len`] when fewer were there), or an error if none were:
/// [`IoError::Closed`] at end of stream.
///
/// With a blocking socket only the first call waits; later ones add
/// `MSG_DONTWAIT`, unless the caller passed `MSG_WAITALL`. With `MSG_PEEK`
/// only one call is made. An empty plan receives nothing and returns 0
/// (end of stream cannot be seen with it).
///
/// See the module documentation for what a [`IoError::Fault`] leaves
/// behind: the connection must be terminated.
///
/// Panics if the plan was made by [`IoPlan::send`] (its local parts may
/// not be written).
pub fn recv_plan(fd: BorrowedFd<'_>, plan: &IoPlan<'_>, flags: i32) -> Result<usize, IoError> {
    assert!(plan.writable, "recv_plan needs a plan made by IoPlan::recv");
    let fd = fd.as_raw_fd();
    let mut rest = plan.shallow();
    let mut done = 0;
    let mut chunk = [const { MaybeUninit::<libc::iovec>::uninit() }; IOV_CHUNK];
    loop {
        let (count, bytes) = rest.fill_uninit(&mut chunk);
        if bytes == 0 {
            return Ok(done);
        }
        // SAFETY: fill_uninit initialised the first `count` entries, and
        // `MaybeUninit<iovec>` has the layout of `iovec`.
        let iov = unsafe { std::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast(), count) };
        let f = if done > 0 && flags & libc::MSG_WAITALL == 0 {
            flags | libc::MSG_DONTWAIT
        } else {
            flags
        };
        match msg_call(fd, iov, f, false) {
            Ok(0) if done == 0 => return Err(IoError::Closed),
            Ok(n) => {
                done += n;
                rest.advance(n);
                if n < bytes || rest.is_empty() || flags & libc::MSG_PEEK != 0 {
                    return Ok(done);
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => return Ok(done),
        }
    }
}

/// The iovecs of one `recvmsg` gathered from several receive plans and a
/// discard buffer (bytes received there are dropped), built on the stack:
/// at most [`IOV_CHUNK`] entries. The discard buffer is named only at
/// [`RecvGather::recv`], so its owner may be used meanwhile; bytes added
/// with [`RecvGather::discard`] go to its start (consecutive ones share an
/// entry while they fit).
pub struct RecvGather {
    iov: [libc::iovec; IOV_CHUNK],
    n: usize,
    /// The last entry is a discard one (to extend).
    last_discard: bool,
    /// Bit `i`: entry `i` names the discard buffer (its base is set by
    /// `recv`).
    discards: u64,
    /// Bytes of the discard buffer one entry may name.
    discard_cap: usize,
}

// One bit per entry in `RecvGather::discards`.
const _: () = assert!(IOV_CHUNK <= 64);

impl RecvGather {
    /// An empty gather whose discard entries name at most `discard_cap`
    /// bytes each.
    pub fn new(discard_cap: usize) -> RecvGather {
        RecvGather {
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; IOV_CHUNK],
            n: 0,
            last_discard: false,
            discards: 0,
            discard_cap,
        }
    }

    /// Entries used.
    pub fn entries(&self) -> usize {
        self.n
    }

    /// Receives `len` more bytes into the discard buffer. Panics if no
    /// entry is left.
    pub fn discard(&mut self, len: usize) {
        if len == 0 {
            return;
        }
        if self.last_discard && self.iov[self.n - 1].iov_len + len <= self.discard_cap {
            self.iov[self.n - 1].iov_len += len;
        } else {
            self.iov[self.n] = libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: len,
            };
            self.discards |= 1 << self.n;
            self.n += 1;
            self.last_discard = true;
        }
    }

    /// Receives the bytes of `plan` (made by [`IoPlan::recv`]) next, in as
    /// many entries as are left; returns how many bytes that is.
    pub fn add(&mut self, plan: &IoPlan<'_>) -> usize {
        assert!(plan.writable, "RecvGather needs plans made by IoPlan::recv");
        // SAFETY: `MaybeUninit<iovec>` has the layout of `iovec`, and
        // `fill_uninit` only stores initialised values, so the entries stay
        // initialised.
        let free = unsafe {
            std::slice::from_raw_parts_mut(
                self.iov[self.n..]
                    .as_mut_ptr()
                    .cast::<MaybeUninit<libc::iovec>>(),
                IOV_CHUNK - self.n,
            )
        };
        let (count, bytes) = plan.fill_uninit(free);
        self.n += count;
        self.last_discard = false;
        bytes
    }

    /// One `recvmsg` of every entry (`EINTR` retried), discard entries
    /// into `discard`. Same contract as [`recv_plan`]: an error only if
    /// nothing was received; after [`IoError::Fault`], or fewer bytes than
    /// asked for, what the plans' memory holds is unknown and the
    /// connection must end.
    pub fn recv(
        &mut self,
        fd: BorrowedFd<'_>,
        discard: &mut [u8],
        flags: i32,
    ) -> Result<usize, IoError> {
        if discard.len() < self.discard_cap {
            return Err(IoError::Other(libc::EINVAL));
        }
        let base = discard.as_mut_ptr().cast::<libc::c_void>();
        let mut d = self.discards;
        while d != 0 {
            self.iov[d.trailing_zeros() as usize].iov_base = base;
            d &= d - 1;
        }
        let n = self.n;
        msg_call(fd.as_raw_fd(), &mut self.iov[..n], flags, false)
    }
}

impl<'a> IoPlan<'a> {
    /// A copy of the cursor for a send or receive loop to advance; the
    /// original keeps the borrows.
    fn shallow(&self) -> IoPlan<'a> {
        IoPlan {
            head: self.head,
            head_len: self.head_len,
            segs: self.segs,
            off: self.off,
            len: self.len,
            tail: self.tail,
            tail_len: self.tail_len,
            writable: self.writable,
            _local: PhantomData,
        }
    }
}

// ---------------------------------------------------------------------------
// Copies

const MODE_VM: u8 = 0;
const MODE_PIPE: u8 = 1;
/// How copies are made: `process_vm_readv` until it is found refused.
static MODE: AtomicU8 = AtomicU8::new(MODE_VM);

/// Copies `len` bytes from `src` to `dst` with one `process_vm_readv` on our
/// own process. Returns the bytes copied (short or `EFAULT` at a fault), or
/// the errno.
fn vm_copy(dst: usize, src: usize, len: usize) -> Result<usize, i32> {
    let local = libc::iovec {
        iov_base: dst as *mut libc::c_void,
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: src as *mut libc::c_void,
        iov_len: len,
    };
    loop {
        // SAFETY: the kernel reads `remote` and writes `local`, both in our
        // own address space, with its user-copy routines: an address that is
        // not readable (source) or writable (destination) is EFAULT or a
        // short count, never a signal. `dst` is application memory or a
        // buffer our caller borrows mutably; nothing else is touched.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        match errno() {
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Bytes moved through the pipe per `write` + `read`: a default pipe's
/// capacity.
const PIPE_CHUNK: usize = 64 * 1024;

/// A private non-blocking, close-on-exec pipe, owned by the process that
/// made it.
struct Pipe {
    pid: libc::pid_t,
    r: i32,
    w: i32,
}

impl Pipe {
    fn new() -> Result<Pipe, IoError> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(IoError::Other(errno()));
        }
        Ok(Pipe {
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            r: fds[0],
            w: fds[1],
        })
    }

    /// Reads and discards `n` bytes left in the pipe. False if they could
    /// not all be read (the pipe is then out of step).
    fn drain(&self, mut n: usize) -> bool {
        let mut scratch = [0u8; 4096];
        while n > 0 {
            let want = n.min(scratch.len());
            // SAFETY: reads at most `want` bytes into our own stack buffer.
            let r = unsafe { libc::read(self.r, scratch.as_mut_ptr().cast(), want) };
            if r > 0 {
                n -= r as usize;
            } else if r < 0 && errno() == libc::EINTR {
                continue;
            } else {
                return false;
            }
        }
        true
    }

    /// Copies `len` bytes from `src` to `dst` through the pipe, which is
    /// empty before and after. `Err((e, in_step))`: `in_step` false when the
    /// pipe may hold stray bytes and must be dropped.
    fn copy(&self, dst: usize, src: usize, len: usize) -> Result<(), (IoError, bool)> {
        let mut done = 0;
        while done < len {
            let want = (len - done).min(PIPE_CHUNK);
            let from = src.wrapping_add(done) as *const libc::c_void;
            // SAFETY: the kernel reads `want` bytes at `from` (application
            // memory or a buffer our caller borrows) with its user-copy
            // routines: an unreadable byte ends the write short or with
            // EFAULT, and is never committed to the pipe.
            let w = unsafe { libc::write(self.w, from, want) };
            if w < 0 {
                match errno() {
                    libc::EINTR => continue,
                    libc::EFAULT => return Err((IoError::Fault, true)),
                    // EAGAIN: the pipe was not empty, so out of step.
                    e => return Err((IoError::Other(e), false)),
                }
            }
            let w = w as usize;
            if w == 0 {
                return Err((IoError::Other(libc::EIO), false));
            }
            let mut got = 0;
            while got < w {
                let to = dst.wrapping_add(done + got) as *mut libc::c_void;
                // SAFETY: the kernel writes at most `w - got` bytes at `to`
                // (application memory or a buffer our caller borrows
                // mutably) with its user-copy routines: an unwritable byte
                // ends the read short or with EFAULT; bytes not accounted
                // for stay in the pipe.
                let r = unsafe { libc::read(self.r, to, w - got) };
                if r > 0 {
                    got += r as usize;
                    continue;
                }
                let e = if r == 0 { libc::EIO } else { errno() };
                if e == libc::EINTR {
                    continue;
                }
                let in_step = self.drain(w - got);
                let err = match e {
                    libc::EFAULT => IoError::Fault,
                    e => IoError::Other(e),
                };
                return Err((err, in_step && e == libc::EFAULT));
            }
            done += w;
        }
        Ok(())
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: the descriptors were made by pipe2 and are closed once (in
        // a forked child this closes the child's copies only).
        unsafe {
            libc::close(self.r);
            libc::close(self.w);
        }
    }
}

thread_local! {
    /// This thread's pipe for the fallback.
    static PIPE: RefCell<Option<Pipe>> = const { RefCell::new(None) };
}

/// Copies through this thread's pipe (made on first use, remade after a
/// fork or when out of step). Kept out of line so that a valgrind
/// suppression can name it (memcheck reports the unaddressable buffer of a
/// write that the kernel answers with EFAULT).
#[inline(never)]
fn pipe_copy(dst: usize, src: usize, len: usize) -> Result<(), IoError> {
    let with_pipe = |slot: &mut Option<Pipe>| -> Result<(), IoError> {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        if slot.as_ref().is_none_or(|p| p.pid != pid) {
            // None yet, or inherited through fork and shared with the
            // parent: dropping it closes this process's copies only.
            *slot = None;
            *slot = Some(Pipe::new()?);
        }
        let pipe = slot.as_ref().expect("pipe made above");
        match pipe.copy(dst, src, len) {
            Ok(()) => Ok(()),
            Err((e, in_step)) => {
                if !in_step {
                    *slot = None;
                }
                Err(e)
            }
        }
    };
    match PIPE.try_with(|cell| with_pipe(&mut cell.borrow_mut())) {
        Ok(r) => r,
        // The thread is exiting: a pipe for this copy only.
        Err(_) => with_pipe(&mut None),
    }
}

/// Copies `len` bytes from `src` to `dst` (each application memory or a
/// buffer of our caller's) without faulting.
fn copy_raw(dst: usize, src: usize, len: usize) -> Result<(), IoError> {
    let mut done = 0;
    while done < len {
        let want = (len - done).min(MAX_CALL_BYTES);
        let (d, s) = (dst.wrapping_add(done), src.wrapping_add(done));
        if MODE.load(Ordering::Relaxed) == MODE_VM {
            match vm_copy(d, s, want) {
                Ok(0) => return Err(IoError::Fault),
                Ok(n) => {
                    // Short: the next call starts at the fault and reports it.
                    done += n;
                    continue;
                }
                Err(libc::EFAULT) => return Err(IoError::Fault),
                Err(e) => {
                    if (e == libc::EPERM || e == libc::ENOSYS)
                        && MODE.swap(MODE_PIPE, Ordering::Relaxed) == MODE_VM
                    {
                        tracing::debug!(
                            errno = e,
                            "process_vm_readv refused; copying application memory through a pipe"
                        );
                    }
                }
            }
        }
        pipe_copy(d, s, want)?;
        done += want;
    }
    Ok(())
}

fn checked_len(addr: u64, len: u64) -> Result<usize, IoError> {
    addr.checked_add(len).ok_or(IoError::Fault)?;
    usize::try_from(len).map_err(|_| IoError::Fault)
}

/// Copies `dst.len()` bytes of application memory at `addr` into `dst`.
pub fn read_app(addr: u64, dst: &mut [u8]) -> Result<(), IoError> {
    if dst.is_empty() {
        return Ok(());
    }
    checked_len(addr, dst.len() as u64)?;
    copy_raw(dst.as_mut_ptr() as usize, app_ptr(addr) as usize, dst.len())
}

/// Copies `src` into application memory at `addr`.
pub fn write_app(src: &[u8], addr: u64) -> Result<(), IoError> {
    if src.is_empty() {
        return Ok(());
    }
    checked_len(addr, src.len() as u64)?;
    copy_raw(app_ptr(addr) as usize, src.as_ptr() as usize, src.len())
}

/// Copies `len` bytes of application memory from `src` to `dst`. The
/// ranges should not overlap: if they do, the destination's contents are
/// unspecified (as with hardware), but nothing faults.
pub fn copy_app(dst: u64, src: u64, len: u64) -> Result<(), IoError> {
    if len == 0 {
        return Ok(());
    }
    checked_len(dst, len)?;
    let n = checked_len(src, len)?;
    copy_raw(app_ptr(dst) as usize, app_ptr(src) as usize, n)
}

/// The pieces of bytes `[off, off + len)` of a scatter list, as
/// (address, length); `None` if the range is not inside the list.
fn pieces(segs: &[RawSeg], off: u64, len: u64) -> Option<impl Iterator<Item = (u64, u64)> + '_> {
    let plan = IoPlan::send(&[], segs, off, len, &[])?;
    let (segs, mut off, mut left) = (plan.segs, plan.off, plan.len);
    Some(segs.iter().map_while(move |s| {
        if left == 0 {
            return None;
        }
        let n = (s.len - off).min(left);
        let piece = (s.addr.wrapping_add(off), n);
        left -= n;
        off = 0;
        Some(piece)
    }))
}

/// Copies bytes `[off, off + dst.len())` of a scatter list of application
/// memory into `dst`. `Other(EINVAL)` if the range is not inside the list.
pub fn read_segs(segs: &[RawSeg], off: u64, dst: &mut [u8]) -> Result<(), IoError> {
    let mut at = 0usize;
    for (addr, n) in pieces(segs, off, dst.len() as u64).ok_or(IoError::Other(libc::EINVAL))? {
        let n = n as usize;
        read_app(addr, &mut dst[at..at + n])?;
        at += n;
    }
    Ok(())
}

/// Copies `src` into bytes `[off, off + src.len())` of a scatter list of
/// application memory. `Other(EINVAL)` if the range is not inside the list.
pub fn write_segs(src: &[u8], segs: &[RawSeg], off: u64) -> Result<(), IoError> {
    let mut at = 0usize;
    for (addr, n) in pieces(segs, off, src.len() as u64).ok_or(IoError::Other(libc::EINVAL))? {
        let n = n as usize;
        write_app(&src[at..at + n], addr)?;
        at += n;
    }
    Ok(())
}

/// Bytes of application memory copied to the stack per step of
/// [`digest_app`].
pub const DIGEST_CHUNK: usize = 16 * 1024;

/// Feeds `len` bytes of application memory at `addr` to `update` (a CRC32c
/// update, say), [`DIGEST_CHUNK`] bytes at a time through a stack buffer.
/// On a fault, `update` has seen a prefix of the bytes.
pub fn digest_app(addr: u64, len: u64, mut update: impl FnMut(&[u8])) -> Result<(), IoError> {
    checked_len(addr, len)?;
    let mut buf = [0u8; DIGEST_CHUNK];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(DIGEST_CHUNK as u64) as usize;
        read_app(addr + done, &mut buf[..n])?;
        update(&buf[..n]);
        done += n as u64;
    }
    Ok(())
}

/// Feeds bytes `[off, off + len)` of a scatter list of application memory
/// to `update`, in order. `Other(EINVAL)` if the range is not inside the
/// list.
pub fn digest_segs(
    segs: &[RawSeg],
    off: u64,
    len: u64,
    mut update: impl FnMut(&[u8]),
) -> Result<(), IoError> {
    for (addr, n) in pieces(segs, off, len).ok_or(IoError::Other(libc::EINVAL))? {
        digest_app(addr, n, &mut update)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::net::UnixStream;

    const PAGE: usize = 4096;

    const EMPTY_IOV: libc::iovec = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };

    /// An anonymous private mapping standing in for application memory.
    struct Map {
        base: u64,
        len: usize,
    }

    impl Map {
        fn new(pages: usize) -> Map {
            let len = pages * PAGE;
            // SAFETY: a new private anonymous mapping; no existing memory
            // is involved.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            Map {
                base: p as u64,
                len,
            }
        }

        fn at(&self, off: usize) -> u64 {
            self.base + off as u64
        }

        /// Changes the protection of page `page` (it stays reserved, so no
        /// other thread's mapping lands there).
        fn protect(&self, page: usize, prot: i32) {
            // SAFETY: changes the protection of a page of our own mapping,
            // which no reference points into.
            let rc = unsafe { libc::mprotect(app_ptr(self.at(page * PAGE)), PAGE, prot) };
            assert_eq!(rc, 0);
        }
    }

    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: unmaps our own mapping, which nothing refers to.
            unsafe { libc::munmap(app_ptr(self.base), self.len) };
        }
    }

    /// Never mapped: below `vm.mmap_min_addr`.
    const UNMAPPED: u64 = 4096;

    fn pattern(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    /// Writes a pattern over the scatter range and returns it.
    fn fill_segs(segs: &[RawSeg], off: u64, len: usize, seed: u32) -> Vec<u8> {
        let data = pattern(len, seed);
        write_segs(&data, segs, off).unwrap();
        data
    }

    fn read_back(segs: &[RawSeg], off: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        read_segs(segs, off, &mut v).unwrap();
        v
    }

    fn unix_pair() -> (OwnedFd, OwnedFd) {
        let (a, b) = UnixStream::pair().unwrap();
        (a.into(), b.into())
    }

    fn tcp_pair() -> (OwnedFd, OwnedFd) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        a.set_nodelay(true).unwrap();
        (a.into(), b.into())
    }

    fn pairs() -> [(&'static str, (OwnedFd, OwnedFd)); 2] {
        [("unix", unix_pair()), ("tcp", tcp_pair())]
    }

    fn set_nonblocking(fd: BorrowedFd<'_>) {
        // SAFETY: fcntl on a descriptor we own, with plain flags.
        unsafe {
            let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            assert_eq!(
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK),
                0
            );
        }
    }

    /// Small socket buffers, so that an 8 MiB transfer cannot move in one
    /// call on either side, whatever the scheduling.
    fn small_buffers(fd: BorrowedFd<'_>) {
        let size: libc::c_int = 64 * 1024;
        for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
            // SAFETY: setsockopt on a socket we own, with an int option value.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            assert_eq!(r, 0);
        }
    }

    fn wait_for(fd: BorrowedFd<'_>, events: i16) {
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events,
            revents: 0,
        };
        // SAFETY: polls one pollfd of our own.
        let rc = unsafe { libc::poll(&mut p, 1, 10_000) };
        assert_eq!(rc, 1, "socket not ready within 10 s");
    }

    /// Receives until the plan is full.
    fn recv_all(fd: BorrowedFd<'_>, plan: &mut IoPlan<'_>) {
        while !plan.is_empty() {
            match recv_plan(fd, plan, 0) {
                Ok(n) => plan.advance(n),
                Err(IoError::WouldBlock) => wait_for(fd, libc::POLLIN),
                Err(e) => panic!("recv_plan: {e:?}"),
            }
        }
    }

    /// Reads whatever is queued on a non-blocking socket.
    fn drain(fd: &OwnedFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            // SAFETY: reads into our own stack buffer.
            let n = unsafe {
                libc::recv(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n <= 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
    }

    #[test]
    fn plan_fill_covers_the_range_and_splits_segments_at_offsets() {
        let segs = [
            RawSeg {
                addr: 1000,
                len: 100,
            },
            RawSeg { addr: 5000, len: 0 },
            RawSeg {
                addr: 8000,
                len: 5000,
            },
            RawSeg {
                addr: 20000,
                len: 3000,
            },
        ];
        let head = [1u8; 18];
        let tail = [2u8; 6];
        let plan = IoPlan::send(&head, &segs, 50, 6050, &tail).unwrap();
        assert_eq!(plan.len(), 18 + 6050 + 6);
        let mut iov = [EMPTY_IOV; 8];
        let (n, bytes) = plan.fill(&mut iov);
        let got: Vec<(usize, usize)> = iov[..n]
            .iter()
            .map(|v| (v.iov_base as usize, v.iov_len))
            .collect();
        assert_eq!(
            got,
            [
                (head.as_ptr() as usize, 18),
                (1050, 50),
                (8000, 5000),
                (20000, 1000),
                (tail.as_ptr() as usize, 6)
            ]
        );
        assert_eq!(bytes, 18 + 6050 + 6);

        // Too few entries: a prefix.
        let mut small = [EMPTY_IOV; 2];
        assert_eq!(plan.fill(&mut small), (2, 68));

        // Advancing into the middle of a segment, then into the trailer.
        let mut plan = plan;
        plan.advance(18 + 60);
        let (n, bytes) = plan.fill(&mut iov);
        assert_eq!((iov[0].iov_base as usize, iov[0].iov_len), (8010, 4990));
        assert_eq!((n, bytes), (3, 4990 + 1000 + 6));
        plan.advance(4990 + 1000 + 2);
        let (n, bytes) = plan.fill(&mut iov);
        assert_eq!((n, bytes), (1, 4));
        assert_eq!(iov[0].iov_base as usize, tail.as_ptr() as usize + 2);
        plan.advance(4);
        assert!(plan.is_empty());
        assert_eq!(plan.fill(&mut iov), (0, 0));
    }

    #[test]
    fn plan_rejects_ranges_outside_the_list() {
        let segs = [RawSeg { addr: 0, len: 10 }, RawSeg { addr: 0, len: 5 }];
        assert!(IoPlan::send(&[], &segs, 0, 15, &[]).is_some());
        assert!(IoPlan::send(&[], &segs, 15, 0, &[]).is_some());
        assert!(IoPlan::send(&[], &segs, 10, 6, &[]).is_none());
        assert!(IoPlan::send(&[], &segs, 16, 0, &[]).is_none());
        assert!(IoPlan::send(&[], &segs, u64::MAX, 2, &[]).is_none());
        let huge = [
            RawSeg {
                addr: 0,
                len: u64::MAX,
            },
            RawSeg { addr: 0, len: 2 },
        ];
        assert!(IoPlan::send(&[], &huge, 0, 1, &[]).is_none());
        let mut buf = [0u8; 4];
        assert!(IoPlan::recv(&mut [], &segs, 14, 2, &mut buf).is_none());
    }

    #[test]
    fn plan_fill_caps_the_bytes_of_one_call() {
        let segs = [RawSeg {
            addr: 1 << 40,
            len: 3 << 30,
        }];
        let plan = IoPlan::send(&[], &segs, 0, 3 << 30, &[]).unwrap();
        let mut iov = [EMPTY_IOV; 4];
        assert_eq!(plan.fill(&mut iov), (1, MAX_CALL_BYTES));
    }

    /// Header, three application segments with the range starting and
    /// ending inside segments, trailer; received into a differently split
    /// list.
    #[test]
    fn send_and_recv_header_three_segments_trailer_over_unix_and_tcp() {
        for (kind, (a, b)) in pairs() {
            let src = Map::new(4);
            let dst = Map::new(4);
            let src_segs = [
                RawSeg {
                    addr: src.at(10),
                    len: 100,
                },
                RawSeg {
                    addr: src.at(PAGE - 30),
                    len: 5000,
                },
                RawSeg {
                    addr: src.at(3 * PAGE),
                    len: 3000,
                },
            ];
            let body = fill_segs(&src_segs, 50, 6050, 1);
            let header: Vec<u8> = (0..18).collect();
            let trailer = [0, 0, 0xde, 0xad, 0xbe, 0xef];
            let plan = IoPlan::send(&header, &src_segs, 50, 6050, &trailer).unwrap();
            assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(18 + 6050 + 6), "{kind}");

            let dst_segs = [
                RawSeg {
                    addr: dst.at(0),
                    len: 7,
                },
                RawSeg {
                    addr: dst.at(2 * PAGE - 3),
                    len: 6000,
                },
                RawSeg {
                    addr: dst.at(PAGE),
                    len: 100,
                },
            ];
            let mut h = [0u8; 18];
            let mut t = [0u8; 6];
            let mut plan = IoPlan::recv(&mut h, &dst_segs, 2, 6050, &mut t).unwrap();
            recv_all(b.as_fd(), &mut plan);
            assert_eq!(h[..], header[..], "{kind}");
            assert_eq!(t, trailer, "{kind}");
            assert_eq!(read_back(&dst_segs, 2, 6050), body, "{kind}");
        }
    }

    /// 8 MiB through non-blocking sockets: both sides see partial
    /// transfers and resume from the returned counts.
    #[test]
    fn large_nonblocking_transfer_resumes_partial_transfers() {
        const LEN: usize = 8 << 20;
        for (kind, (a, b)) in pairs() {
            set_nonblocking(a.as_fd());
            set_nonblocking(b.as_fd());
            small_buffers(a.as_fd());
            small_buffers(b.as_fd());
            let src = Map::new(LEN / PAGE + 1);
            let dst = Map::new(LEN / PAGE + 1);
            let src_segs = [
                RawSeg {
                    addr: src.at(3),
                    len: 1_000_003,
                },
                RawSeg {
                    addr: src.at(1_000_006),
                    len: 4_000_000,
                },
                RawSeg {
                    addr: src.at(5_000_006),
                    len: (LEN - 5_000_003) as u64,
                },
            ];
            let body = fill_segs(&src_segs, 0, LEN, 2);
            let dst_segs = [
                RawSeg {
                    addr: dst.at(1),
                    len: 3_333_333,
                },
                RawSeg {
                    addr: dst.at(3_333_334),
                    len: (LEN - 3_333_333) as u64,
                },
            ];
            let header = *b"FPDU-HEADER-18BYTE";
            let trailer = *b"CRC32c";
            let sender = std::thread::spawn(move || {
                let mut plan = IoPlan::send(&header, &src_segs, 0, LEN as u64, &trailer).unwrap();
                let mut partial = 0;
                while !plan.is_empty() {
                    match send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT) {
                        Ok(n) => {
                            if (n as u64) < plan.len() {
                                partial += 1;
                            }
                            plan.advance(n);
                        }
                        Err(IoError::WouldBlock) => wait_for(a.as_fd(), libc::POLLOUT),
                        Err(e) => panic!("send_plan: {e:?}"),
                    }
                }
                drop(src);
                partial
            });
            let mut h = [0u8; 18];
            let mut t = [0u8; 6];
            let mut plan = IoPlan::recv(&mut h, &dst_segs, 0, LEN as u64, &mut t).unwrap();
            let mut partial = 0;
            while !plan.is_empty() {
                match recv_plan(b.as_fd(), &plan, 0) {
                    Ok(n) => {
                        if (n as u64) < plan.len() {
                            partial += 1;
                        }
                        plan.advance(n);
                    }
                    Err(IoError::WouldBlock) => wait_for(b.as_fd(), libc::POLLIN),
                    Err(e) => panic!("recv_plan: {e:?}"),
                }
            }
            let sent_partial = sender.join().unwrap();
            assert!(sent_partial > 0, "{kind}: no partial send");
            assert!(partial > 0, "{kind}: no partial receive");
            assert_eq!(h, header, "{kind}");
            assert_eq!(t, trailer, "{kind}");
            assert!(read_back(&dst_segs, 0, LEN) == body, "{kind}: body differs");
        }
    }

    /// A receive running into a `PROT_NONE` page: `Fault` (possibly after
    /// short counts), the counts returned are exact, the process survives.
    #[test]
    fn recv_into_guard_page_is_a_fault() {
        for (kind, (a, b)) in pairs() {
            // Two writes: on a Unix socket two buffers, of which the first
            // fits before the guard page.
            let data = pattern(3 * PAGE, 3);
            (&UnixOrTcp(&a)).write_all(&data[..100]).unwrap();
            (&UnixOrTcp(&a)).write_all(&data[100..]).unwrap();
            let dst = Map::new(3);
            dst.protect(1, libc::PROT_NONE);
            let segs = [RawSeg {
                addr: dst.at(PAGE - 200),
                len: 2 * PAGE as u64,
            }];
            let mut h = [0u8; 10];
            let mut plan = IoPlan::recv(&mut h, &segs, 0, 2 * PAGE as u64, &mut []).unwrap();
            let mut got = 0;
            let fault = loop {
                match recv_plan(b.as_fd(), &plan, 0) {
                    Ok(n) => {
                        assert!(n > 0 && got + n <= 210, "{kind}: {n} bytes past the guard");
                        got += n;
                        plan.advance(n);
                    }
                    Err(e) => break e,
                }
            };
            assert_eq!(fault, IoError::Fault, "{kind}");
            let head = got.min(10);
            assert_eq!(h[..head], data[..head], "{kind}");
            if got > 10 {
                let mut v = vec![0u8; got - 10];
                read_app(dst.at(PAGE - 200), &mut v).unwrap();
                assert_eq!(v[..], data[10..got], "{kind}");
            }
        }
    }

    /// `Write` for a borrowed socket descriptor, to feed tests.
    struct UnixOrTcp<'a>(&'a OwnedFd);

    impl Write for &UnixOrTcp<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            // SAFETY: sends from our own slice.
            let n = unsafe {
                libc::send(
                    self.0.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A send running into a `PROT_NONE` page: short counts that are
    /// exactly what the peer gets, then `Fault`. A source that was never
    /// mapped: `Fault` at once, nothing sent.
    #[test]
    fn send_from_guard_or_unmapped_page_is_a_fault() {
        for (kind, (a, b)) in pairs() {
            set_nonblocking(a.as_fd());
            let src = Map::new(41);
            src.protect(40, libc::PROT_NONE);
            let segs = [RawSeg {
                addr: src.at(0),
                len: 41 * PAGE as u64,
            }];
            let body = fill_segs(&segs, 0, 40 * PAGE, 4);
            let header = [7u8; 18];
            let mut plan = IoPlan::send(&header, &segs, 0, 41 * PAGE as u64, &[]).unwrap();
            let mut received = Vec::new();
            let mut sent = 0;
            let fault = loop {
                match send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT) {
                    Ok(n) => {
                        sent += n;
                        plan.advance(n);
                    }
                    Err(IoError::WouldBlock) => received.extend(drain(&b)),
                    Err(e) => break e,
                }
            };
            assert_eq!(fault, IoError::Fault, "{kind}");
            assert!(sent <= 18 + 40 * PAGE, "{kind}");
            std::thread::sleep(std::time::Duration::from_millis(20));
            received.extend(drain(&b));
            assert_eq!(received.len(), sent, "{kind}");
            let mut expected = header.to_vec();
            expected.extend_from_slice(&body);
            assert!(received[..] == expected[..sent], "{kind}: wrong bytes");

            let bad = [RawSeg {
                addr: UNMAPPED,
                len: 100,
            }];
            let plan = IoPlan::send(&header, &bad, 0, 100, &[]).unwrap();
            assert_eq!(
                send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT),
                Err(IoError::Fault),
                "{kind}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(drain(&b).is_empty(), "{kind}");
        }
    }

    #[test]
    fn zero_length_segments_and_empty_plans() {
        let (a, b) = unix_pair();
        let src = Map::new(1);
        let dst = Map::new(1);
        let segs = [
            RawSeg {
                addr: UNMAPPED,
                len: 0,
            },
            RawSeg {
                addr: src.at(0),
                len: 10,
            },
            RawSeg { addr: 0, len: 0 },
            RawSeg { addr: 8, len: 0 },
            RawSeg {
                addr: src.at(100),
                len: 5,
            },
            RawSeg { addr: 0, len: 0 },
        ];
        let body = fill_segs(&segs, 0, 15, 5);
        let plan = IoPlan::send(&[], &segs, 0, 15, &[]).unwrap();
        let mut iov = [EMPTY_IOV; 8];
        assert_eq!(plan.fill(&mut iov), (2, 15));
        assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(15));
        let dsegs = [
            RawSeg { addr: 0, len: 0 },
            RawSeg {
                addr: dst.at(0),
                len: 15,
            },
            RawSeg {
                addr: UNMAPPED,
                len: 0,
            },
        ];
        let plan = IoPlan::recv(&mut [], &dsegs, 0, 15, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(15));
        assert_eq!(read_back(&dsegs, 0, 15), body);

        // Empty plans make no system call: Ok(0) even with nothing to read
        // on a blocking socket, and with only bogus empty segments.
        let empty = IoPlan::send(&[], &segs[2..4], 0, 0, &[]).unwrap();
        assert!(empty.is_empty());
        assert_eq!(send_plan(a.as_fd(), &empty, 0), Ok(0));
        let empty = IoPlan::recv(&mut [], &[], 0, 0, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &empty, 0), Ok(0));
        // An empty application range between local parts.
        let mut h = [0u8; 3];
        let plan = IoPlan::send(b"abc", &segs, 15, 0, &[]).unwrap();
        assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(3));
        let plan = IoPlan::recv(&mut h, &segs, 15, 0, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(3));
        assert_eq!(&h, b"abc");
    }

    /// 200 segments need four iovec chunks on each side.
    #[test]
    fn more_segments_than_one_iovec_chunk() {
        for (kind, (a, b)) in pairs() {
            let src = Map::new(32);
            let dst = Map::new(32);
            let mut src_segs = Vec::new();
            let mut dst_segs = Vec::new();
            let (mut s, mut d, mut total) = (0usize, 0usize, 0u64);
            for i in 0..200usize {
                let sl = 1 + (i * 37) % 300;
                src_segs.push(RawSeg {
                    addr: src.at(s),
                    len: sl as u64,
                });
                s += sl + 16;
                total += sl as u64;
            }
            let mut left = total + 2;
            for i in 0..200usize {
                let dl = if i == 199 {
                    left as usize
                } else {
                    1 + (i * 53) % 250
                };
                dst_segs.push(RawSeg {
                    addr: dst.at(d),
                    len: dl as u64,
                });
                d += dl + 8;
                left -= dl as u64;
            }
            let body = fill_segs(&src_segs, 0, total as usize, 6);
            let plan = IoPlan::send(b"H", &src_segs, 0, total, b"T").unwrap();
            assert_eq!(
                send_plan(a.as_fd(), &plan, 0),
                Ok(total as usize + 2),
                "{kind}"
            );
            let mut h = [0u8; 1];
            let mut t = [0u8; 1];
            let mut plan = IoPlan::recv(&mut h, &dst_segs, 2, total, &mut t).unwrap();
            recv_all(b.as_fd(), &mut plan);
            assert_eq!((&h, &t), (b"H", b"T"), "{kind}");
            assert_eq!(read_back(&dst_segs, 2, total as usize), body, "{kind}");
        }
    }

    #[test]
    fn end_of_stream_and_broken_pipe_are_closed() {
        let (a, b) = unix_pair();
        let dst = Map::new(1);
        let segs = [RawSeg {
            addr: dst.at(0),
            len: 100,
        }];
        (&UnixOrTcp(&a)).write_all(b"xyz").unwrap();
        drop(a);
        let plan = IoPlan::recv(&mut [], &segs, 0, 100, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(3));
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));
        let plan = IoPlan::send(b"late", &[], 0, 0, &[]).unwrap();
        // No SIGPIPE (it would kill the test binary): EPIPE.
        assert_eq!(send_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));

        let (a, b) = tcp_pair();
        drop(a);
        let plan = IoPlan::recv(&mut [], &segs, 0, 100, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));
    }

    #[test]
    fn nothing_to_transfer_on_a_nonblocking_socket_is_would_block() {
        let (a, b) = unix_pair();
        set_nonblocking(b.as_fd());
        let mut h = [0u8; 4];
        let plan = IoPlan::recv(&mut h, &[], 0, 0, &mut []).unwrap();
        assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::WouldBlock));
        let big = vec![0u8; 1 << 20];
        let plan = IoPlan::send(&big, &[], 0, 0, &[]).unwrap();
        let first = send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT).unwrap();
        assert!(first < big.len());
        let mut plan = plan;
        plan.advance(first);
        assert_eq!(
            send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT),
            Err(IoError::WouldBlock)
        );
    }

    #[test]
    #[should_panic(expected = "IoPlan::recv")]
    fn recv_into_a_send_plan_panics() {
        let (_a, b) = unix_pair();
        let plan = IoPlan::send(b"abc", &[], 0, 0, &[]).unwrap();
        let _ = recv_plan(b.as_fd(), &plan, 0);
    }

    /// The copy cases, run through the active copier and through the pipe.
    fn check_copies(copy: fn(usize, usize, usize) -> Result<(), IoError>) {
        // Pages: 0-1 data, 2 no access, 3 spare, 4 read-only, 5-7 target.
        let m = Map::new(8);
        m.protect(2, libc::PROT_NONE);
        m.protect(4, libc::PROT_READ);
        let data = pattern(2 * PAGE, 7);
        let (a, g, ro, w) = (m.at(0), m.at(2 * PAGE), m.at(4 * PAGE), m.at(5 * PAGE));
        // Local to application and back, across a page boundary.
        copy(a as usize + 100, data.as_ptr() as usize, 5000).unwrap();
        let mut back = vec![0u8; 5000];
        copy(back.as_mut_ptr() as usize, a as usize + 100, 5000).unwrap();
        assert_eq!(back[..], data[..5000]);
        // Application to application.
        copy(w as usize, a as usize + 100, 4000).unwrap();
        let mut back = vec![0u8; 4000];
        copy(back.as_mut_ptr() as usize, w as usize, 4000).unwrap();
        assert_eq!(back[..], data[..4000]);
        // Faults: unreadable source, unwritable destination (no access,
        // read-only), a range running into the guard page, never mapped.
        let mut buf = vec![0u8; 8192];
        let b = buf.as_mut_ptr() as usize;
        assert_eq!(copy(b, g as usize, 10), Err(IoError::Fault));
        assert_eq!(copy(g as usize, b, 10), Err(IoError::Fault));
        assert_eq!(copy(ro as usize, b, 10), Err(IoError::Fault));
        assert_eq!(copy(b, g as usize - 100, 200), Err(IoError::Fault));
        assert_eq!(copy(g as usize - 100, b, 200), Err(IoError::Fault));
        assert_eq!(
            copy(w as usize, g as usize - 8000, 8192),
            Err(IoError::Fault)
        );
        assert_eq!(copy(b, UNMAPPED as usize, 10), Err(IoError::Fault));
        assert_eq!(copy(b, usize::MAX - 3, 10), Err(IoError::Fault));
        // Still correct afterwards (the pipe is in step).
        let mut back = vec![0u8; 300];
        copy(back.as_mut_ptr() as usize, a as usize + 100, 300).unwrap();
        assert_eq!(back[..], data[..300]);
        // Bytes before a fault in the destination were written; the rest of
        // the chunk left no trace in the next copy.
        copy(g as usize - 100, data.as_ptr() as usize, 300).unwrap_err();
        copy(back.as_mut_ptr() as usize, a as usize + 100, 300).unwrap();
        assert_eq!(back[..], data[..300]);
        // More than one pipe chunk.
        let big = Map::new(64);
        let data = pattern(200_000, 8);
        copy(big.at(5) as usize, data.as_ptr() as usize, data.len()).unwrap();
        let mut back = vec![0u8; data.len()];
        copy(back.as_mut_ptr() as usize, big.at(5) as usize, data.len()).unwrap();
        assert!(back == data);
    }

    #[test]
    fn copies_through_process_vm_readv_and_faults() {
        let vm = |d, s, n| match vm_copy(d, s, n) {
            Ok(k) if k == n => Ok(()),
            Ok(_) | Err(libc::EFAULT) => Err(IoError::Fault),
            Err(e) => panic!("process_vm_readv unavailable: {e}"),
        };
        check_copies(vm);
        check_copies(copy_raw);
    }

    #[test]
    fn copies_through_the_pipe_and_faults() {
        check_copies(pipe_copy);
    }

    #[test]
    fn read_write_copy_app_and_scatter_copies() {
        let m = Map::new(4);
        m.protect(3, libc::PROT_NONE);
        write_app(b"hello, world", m.at(10)).unwrap();
        let mut buf = [0u8; 12];
        read_app(m.at(10), &mut buf).unwrap();
        assert_eq!(&buf, b"hello, world");
        copy_app(m.at(PAGE), m.at(10), 12).unwrap();
        read_app(m.at(PAGE), &mut buf).unwrap();
        assert_eq!(&buf, b"hello, world");
        assert_eq!(read_app(m.at(3 * PAGE), &mut buf), Err(IoError::Fault));
        assert_eq!(write_app(&buf, m.at(3 * PAGE - 4)), Err(IoError::Fault));
        assert_eq!(copy_app(m.at(3 * PAGE), m.at(0), 1), Err(IoError::Fault));
        assert_eq!(copy_app(m.at(0), u64::MAX - 1, 4), Err(IoError::Fault));
        // Empty copies touch nothing.
        assert_eq!(read_app(UNMAPPED, &mut []), Ok(()));
        assert_eq!(write_app(&[], UNMAPPED), Ok(()));
        assert_eq!(copy_app(UNMAPPED, UNMAPPED, 0), Ok(()));

        let segs = [
            RawSeg {
                addr: m.at(100),
                len: 5,
            },
            RawSeg {
                addr: m.at(2 * PAGE),
                len: 0,
            },
            RawSeg {
                addr: m.at(2 * PAGE),
                len: 10,
            },
        ];
        write_segs(b"abcdefghij", &segs, 3).unwrap();
        let mut out = [0u8; 15];
        read_segs(&segs, 0, &mut out).unwrap();
        assert_eq!(&out[3..13], b"abcdefghij");
        assert_eq!(
            read_segs(&segs, 1, &mut out),
            Err(IoError::Other(libc::EINVAL))
        );
        assert_eq!(
            write_segs(&out, &segs, 1),
            Err(IoError::Other(libc::EINVAL))
        );
        let bad = [
            segs[0],
            RawSeg {
                addr: m.at(3 * PAGE),
                len: 10,
            },
        ];
        assert_eq!(read_segs(&bad, 0, &mut out), Err(IoError::Fault));
    }

    #[test]
    fn digest_sees_application_bytes_in_order() {
        let m = Map::new(16);
        m.protect(15, libc::PROT_NONE);
        let segs = [
            RawSeg {
                addr: m.at(7),
                len: 40_000,
            },
            RawSeg {
                addr: m.at(50_000),
                len: 3,
            },
            RawSeg {
                addr: m.at(51_000),
                len: 9_000,
            },
        ];
        let data = fill_segs(&segs, 0, 49_003, 9);
        let mut seen = Vec::new();
        let mut calls = 0;
        digest_app(m.at(7), 40_000, |b| {
            assert!(b.len() <= DIGEST_CHUNK);
            calls += 1;
            seen.extend_from_slice(b);
        })
        .unwrap();
        assert_eq!(calls, 3);
        assert!(seen[..] == data[..40_000]);
        seen.clear();
        digest_segs(&segs, 39_990, 5_000, |b| seen.extend_from_slice(b)).unwrap();
        assert!(seen[..] == data[39_990..44_990]);
        assert_eq!(
            digest_segs(&segs, 49_000, 10, |_| {}),
            Err(IoError::Other(libc::EINVAL))
        );
        assert_eq!(
            digest_app(m.at(15 * PAGE - 10), 20, |_| {}),
            Err(IoError::Fault)
        );
        assert_eq!(digest_app(u64::MAX, 2, |_| {}), Err(IoError::Fault));
    }

    /// With `process_vm_readv` refused by seccomp on one thread (the rest of
    /// the test binary is unaffected), copies switch to the pipe for good
    /// and still report faults.
    #[test]
    fn refused_process_vm_readv_switches_to_the_pipe() {
        let t = std::thread::spawn(|| {
            let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
            let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
            let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
            let ret = (libc::BPF_RET | libc::BPF_K) as u16;
            let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
            let filter = [
                op(ld, 0, 0, 0), // seccomp_data.nr
                op(jeq, 2, 0, libc::SYS_process_vm_readv as u32),
                op(jeq, 1, 0, libc::SYS_process_vm_writev as u32),
                op(ret, 0, 0, libc::SECCOMP_RET_ALLOW),
                op(ret, 0, 0, deny),
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            // SAFETY: prctl with the documented arguments; the filter
            // applies to this thread only (no TSYNC) and `prog` outlives the
            // call.
            unsafe {
                assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
                assert_eq!(
                    libc::prctl(
                        libc::PR_SET_SECCOMP,
                        libc::SECCOMP_MODE_FILTER,
                        &prog as *const libc::sock_fprog,
                    ),
                    0
                );
            }
            let m = Map::new(2);
            m.protect(1, libc::PROT_NONE);
            let mut x = [0u8; 8];
            assert_eq!(
                vm_copy(x.as_mut_ptr() as usize, m.at(0) as usize, 8),
                Err(libc::EPERM)
            );
            MODE.store(MODE_VM, Ordering::Relaxed);
            write_app(b"fallback", m.at(0)).unwrap();
            assert_eq!(MODE.load(Ordering::Relaxed), MODE_PIPE);
            read_app(m.at(0), &mut x).unwrap();
            assert_eq!(&x, b"fallback");
            assert_eq!(read_app(m.at(PAGE), &mut x), Err(IoError::Fault));
            assert_eq!(write_app(&x, m.at(PAGE - 4)), Err(IoError::Fault));
            copy_app(m.at(100), m.at(0), 8).unwrap();
            let mut seen = Vec::new();
            digest_app(m.at(100), 8, |b| seen.extend_from_slice(b)).unwrap();
            assert_eq!(&seen, b"fallback");
            check_copies(copy_raw);
        });
        let r = t.join();
        MODE.store(MODE_VM, Ordering::Relaxed);
        r.expect("seccomp thread");
    }

    #[test]
    fn io_errors_map_to_errnos() {
        assert_eq!(IoError::from_errno(libc::EAGAIN), IoError::WouldBlock);
        assert_eq!(IoError::from_errno(libc::EFAULT), IoError::Fault);
        assert_eq!(IoError::from_errno(libc::EPIPE), IoError::Closed);
        assert_eq!(IoError::from_errno(libc::ECONNRESET), IoError::Closed);
        assert_eq!(
            IoError::from_errno(libc::EBADF),
            IoError::Other(libc::EBADF)
        );
        let e: std::io::Error = IoError::WouldBlock.into();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        let e: std::io::Error = IoError::Fault.into();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
    }
}
