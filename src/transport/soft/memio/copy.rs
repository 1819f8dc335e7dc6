//! Copies of application memory: `process_vm_readv` on our own process,
//! or, once that is refused, through a per-thread pipe.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};

use super::{app_ptr, errno, IoError, IoPlan, RawSeg, MAX_CALL_BYTES};

pub(super) const MODE_VM: u8 = 0;
pub(super) const MODE_PIPE: u8 = 1;
/// How copies are made: `process_vm_readv` until it is found refused.
pub(super) static MODE: AtomicU8 = AtomicU8::new(MODE_VM);

/// Copies `len` bytes from `src` to `dst` with one `process_vm_readv` on our
/// own process. Returns the bytes copied (short or `EFAULT` at a fault), or
/// the errno.
pub(super) fn vm_copy(dst: usize, src: usize, len: usize) -> Result<usize, i32> {
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
pub(super) fn pipe_copy(dst: usize, src: usize, len: usize) -> Result<(), IoError> {
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
pub(super) fn copy_raw(dst: usize, src: usize, len: usize) -> Result<(), IoError> {
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
