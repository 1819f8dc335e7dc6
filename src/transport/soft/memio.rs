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
mod tests;
