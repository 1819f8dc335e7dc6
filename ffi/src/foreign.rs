//! Handles of third-party providers (loaded through dat.conf): dispatched
//! through the `DAT_PROVIDER *` in their first word, as the reference libdat
//! does, but only if that word can be read without faulting
//! (`process_vm_readv`, or a private pipe where seccomp refuses it) and
//! names a registered provider table; anything else is `DAT_INVALID_HANDLE`.
//! Blocks where that succeeded are cached and read directly until
//! [`forget_pages`] (docs/hot-path.md, "Third-party providers").
//!
//! Residual assumption of the cache: memory of a provider that once held a
//! valid handle stays mapped while that provider is registered and loaded.
//! The registry calls [`forget_pages`] after every change of its snapshot
//! and before every `dlclose`.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use dat_abi::DAT_PROVIDER;
use udapl::registry::Registry;

const WORD: usize = std::mem::size_of::<usize>();
/// The unit the cache remembers: the smallest page size Linux uses.
const BLOCK: usize = 4096;
/// Slots of the direct-mapped block cache.
const SLOTS: usize = 256;

/// Remembered blocks (0: empty). Slot of a block: its block number mod SLOTS.
static BLOCKS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Bumped by every [`forget_pages`]; lets [`remember`] detect a clear it raced with.
static EPOCH: AtomicUsize = AtomicUsize::new(0);

const MODE_VM: u8 = 0;
const MODE_PIPE: u8 = 1;
/// How [`read_word`] reads: `process_vm_readv` until it is found unavailable.
static MODE: AtomicU8 = AtomicU8::new(MODE_VM);

fn slot(block: usize) -> &'static AtomicUsize {
    &BLOCKS[(block / BLOCK) % SLOTS]
}

/// The word at `addr` if its block is remembered (and the word lies in it).
fn read_cached(addr: usize) -> Option<usize> {
    let block = addr & !(BLOCK - 1);
    if block == 0 || addr % WORD != 0 || slot(block).load(Ordering::Acquire) != block {
        return None;
    }
    // SAFETY: `addr` is word-aligned, so the word lies inside its block, and
    // a handle's first word on this block was read without fault and named a
    // registered provider since the last forget_pages. By the module's
    // residual assumption the block is still mapped and readable. The read is
    // volatile: the memory belongs to another library and may change.
    Some(unsafe { std::ptr::read_volatile(addr as *const usize) })
}

/// Remembers the block of `addr` (whose first word was read and named a
/// registered table) if no [`forget_pages`] ran since `epoch` was read
/// (before the read and the check).
fn remember(addr: usize, epoch: usize) {
    let block = addr & !(BLOCK - 1);
    if block == 0 || addr % WORD != 0 {
        return;
    }
    let s = slot(block);
    s.store(block, Ordering::SeqCst);
    // A forget_pages bumps EPOCH before clearing: either it clears after our
    // store, or we see its bump here and undo the store ourselves.
    if EPOCH.load(Ordering::SeqCst) != epoch {
        s.store(0, Ordering::SeqCst);
    }
}

/// Forgets every remembered block (the provider snapshot changed).
pub(crate) fn forget_pages() {
    EPOCH.fetch_add(1, Ordering::SeqCst);
    for s in &BLOCKS {
        s.store(0, Ordering::SeqCst);
    }
}

/// Outcome of one `process_vm_readv` read.
enum VmRead {
    Word(usize),
    /// The word (or part of it) is not readable.
    Unreadable,
    /// The syscall itself is unavailable (errno).
    Unavailable(i32),
}

fn read_vm(addr: usize) -> VmRead {
    let mut word: usize = 0;
    let local = libc::iovec {
        iov_base: (&mut word as *mut usize).cast(),
        iov_len: WORD,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: WORD,
    };
    // SAFETY: the kernel copies from our own address space and reports
    // EFAULT for an unmapped source instead of faulting; `local` is valid.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == WORD as isize {
        return VmRead::Word(word);
    }
    if n >= 0 {
        // A partial copy: the word runs into an unreadable page.
        return VmRead::Unreadable;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EFAULT) => VmRead::Unreadable,
        e => VmRead::Unavailable(e.unwrap_or(0)),
    }
}

/// The fallback's pipe: both ends non-blocking and close-on-exec, owned by
/// the process that made it.
struct Pipe {
    pid: libc::pid_t,
    r: libc::c_int,
    w: libc::c_int,
}

impl Pipe {
    fn new() -> Option<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            tracing::error!(
                "cannot create the pipe to check foreign handles: {}",
                std::io::Error::last_os_error()
            );
            return None;
        }
        Some(Pipe {
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            r: fds[0],
            w: fds[1],
        })
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

static PIPE: Mutex<Option<Pipe>> = Mutex::new(None);

/// Reads the word at `addr` through the pipe. Kept out of line: valgrind's
/// suppression of the unreadable `write(buf)` names this function.
#[inline(never)]
fn read_pipe(addr: usize) -> Option<usize> {
    let mut guard = PIPE.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    if guard.as_ref().is_none_or(|p| p.pid != pid) {
        // None yet, or inherited through fork (shared with the parent).
        *guard = None;
        *guard = Pipe::new();
    }
    let p = guard.as_ref()?;
    let n = loop {
        // SAFETY: write reads at most WORD bytes at `addr` in the kernel and
        // fails with EFAULT, without faulting, where they are not readable.
        let n = unsafe { libc::write(p.w, addr as *const libc::c_void, WORD) };
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break n;
        }
    };
    if n <= 0 {
        return None;
    }
    let mut word: usize = 0;
    // SAFETY: reads back the `n` ≤ WORD bytes just written into `word`.
    let m = unsafe { libc::read(p.r, (&mut word as *mut usize).cast(), n as usize) };
    if m != n {
        // Bytes left in the pipe would corrupt the next read: start afresh.
        *guard = None;
        return None;
    }
    (n == WORD as isize).then_some(word)
}

/// Reads one word at `addr` without faulting.
fn read_word(addr: usize) -> Option<usize> {
    if MODE.load(Ordering::Relaxed) == MODE_VM {
        match read_vm(addr) {
            VmRead::Word(w) => return Some(w),
            VmRead::Unreadable => return None,
            VmRead::Unavailable(errno) => {
                if MODE.swap(MODE_PIPE, Ordering::Relaxed) == MODE_VM {
                    tracing::debug!(
                        errno,
                        "process_vm_readv unavailable; checking foreign handles through a pipe"
                    );
                }
            }
        }
    }
    read_pipe(addr)
}

/// The provider table of a foreign handle, if it names one registered in
/// `reg`.
pub(crate) fn provider(reg: &Registry, addr: usize) -> Option<&'static DAT_PROVIDER> {
    let table = match read_cached(addr) {
        Some(t) => t,
        None => {
            let epoch = EPOCH.load(Ordering::SeqCst);
            let t = read_word(addr)?;
            if t == 0 || !reg.knows_provider(t) {
                return None;
            }
            remember(addr, epoch);
            t
        }
    };
    if table == 0 || !reg.knows_provider(table) {
        return None;
    }
    // SAFETY: `table` was registered with dat_registry_add_provider and stays
    // valid while the provider's library is loaded (it is while it has entries).
    Some(unsafe { &*(table as *const DAT_PROVIDER) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialises the tests that use the process-wide cache or mode.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh anonymous mapping of `pages` pages (address, length).
    fn map(pages: usize) -> (usize, usize) {
        let len = pages * BLOCK;
        // SAFETY: a new private anonymous mapping; no existing memory involved.
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
        (p as usize, len)
    }

    fn unmap(addr: usize, len: usize) {
        // SAFETY: unmaps a mapping made by `map` that nothing refers to.
        assert_eq!(unsafe { libc::munmap(addr as *mut libc::c_void, len) }, 0);
    }

    fn vm(addr: usize) -> Option<usize> {
        match read_vm(addr) {
            VmRead::Word(w) => Some(w),
            VmRead::Unreadable => None,
            VmRead::Unavailable(e) => panic!("process_vm_readv unavailable: {e}"),
        }
    }

    #[test]
    fn readers_read_readable_words() {
        let x: usize = 0xdead_beef;
        let a = &x as *const usize as usize;
        assert_eq!(vm(a), Some(0xdead_beef));
        assert_eq!(read_pipe(a), Some(0xdead_beef));
        assert_eq!(read_word(a), Some(0xdead_beef));
    }

    #[test]
    fn readers_refuse_unreadable_and_straddling_words() {
        let (a, len) = map(2);
        // SAFETY: `a` is a fresh readable and writable mapping of two pages.
        unsafe { *((a + BLOCK - WORD) as *mut usize) = 42 };
        // The second page becomes unreadable but stays reserved, so no other
        // thread's mapping can land there during the test.
        // SAFETY: changes the protection of our own fresh mapping.
        let rc =
            unsafe { libc::mprotect((a + BLOCK) as *mut libc::c_void, BLOCK, libc::PROT_NONE) };
        assert_eq!(rc, 0);
        for read in [vm, read_pipe, read_word] {
            // Never mapped (below mmap_min_addr).
            assert_eq!(read(8), None);
            assert_eq!(read(a + BLOCK), None);
            assert_eq!(read(a + BLOCK - WORD), Some(42));
            // Four bytes readable, four not.
            assert_eq!(read(a + BLOCK - 4), None);
        }
        // The pipe is still in step after the partial write.
        assert_eq!(read_pipe(a + BLOCK - WORD), Some(42));
        unmap(a, len);
    }

    #[test]
    fn page_cache_remembers_and_forgets() {
        let _s = serial();
        let (a, len) = map(1);
        // SAFETY: `a` is a fresh readable and writable mapping.
        unsafe { *((a + 64) as *mut usize) = 7 };
        assert_eq!(read_cached(a + 64), None);
        remember(a + 64, EPOCH.load(Ordering::SeqCst));
        // Any aligned word of the block is now read directly.
        assert_eq!(read_cached(a + 64), Some(7));
        assert_eq!(read_cached(a + 128), Some(0));
        // Not a misaligned one, and not another block.
        assert_eq!(read_cached(a + 68), None);
        assert_eq!(read_cached(a + BLOCK + 64), None);
        forget_pages();
        assert_eq!(read_cached(a + 64), None);
        // A remember that raced with a forget_pages undoes itself.
        let stale = EPOCH.load(Ordering::SeqCst);
        forget_pages();
        remember(a + 64, stale);
        assert_eq!(read_cached(a + 64), None);
        // The zero block is never taken for a remembered one.
        remember(64, EPOCH.load(Ordering::SeqCst));
        assert_eq!(read_cached(64), None);
        unmap(a, len);
    }

    /// Another block mapping to the same slot replaces the first.
    #[test]
    fn page_cache_is_direct_mapped() {
        let _s = serial();
        let (a, len) = map(SLOTS + 1);
        let b = a + SLOTS * BLOCK;
        let epoch = EPOCH.load(Ordering::SeqCst);
        remember(a, epoch);
        assert_eq!(read_cached(a), Some(0));
        remember(b, epoch);
        assert_eq!(read_cached(b), Some(0));
        assert_eq!(read_cached(a), None);
        forget_pages();
        unmap(a, len);
    }

    /// With `process_vm_readv` refused by seccomp (on one thread only, so the
    /// rest of the test binary is unaffected) the reader switches to the pipe.
    #[test]
    fn refused_process_vm_readv_falls_back_to_the_pipe() {
        let _s = serial();
        let t = std::thread::spawn(|| {
            let filter = [
                libc::sock_filter {
                    code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                    jt: 0,
                    jf: 0,
                    k: 0, // seccomp_data.nr
                },
                libc::sock_filter {
                    code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 1,
                    k: libc::SYS_process_vm_readv as u32,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ALLOW,
                },
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            // SAFETY: prctl with the documented arguments; the filter applies
            // to this thread only (no TSYNC) and `prog` outlives the call.
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
            let x: usize = 0x1234_5678;
            let a = &x as *const usize as usize;
            assert!(matches!(read_vm(a), VmRead::Unavailable(libc::EPERM)));
            MODE.store(MODE_VM, Ordering::Relaxed);
            assert_eq!(read_word(a), Some(0x1234_5678));
            assert_eq!(MODE.load(Ordering::Relaxed), MODE_PIPE);
            assert_eq!(read_word(8), None);
            assert_eq!(read_word(a), Some(0x1234_5678));
        });
        let r = t.join();
        MODE.store(MODE_VM, Ordering::Relaxed);
        r.expect("seccomp thread");
    }
}
