//! Socket transfers of [`IoPlan`]s: `sendmsg`/`recvmsg` with `readv`/
//! `writev` semantics (an error only when nothing moved; `EINTR` retried),
//! [`IOV_CHUNK`] iovecs per call on the stack.

use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::{errno, IoError, IoPlan, IOV_CHUNK, MAX_CALL_BYTES};

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
/// See the `memio` documentation for what a [`IoError::Fault`] leaves
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
