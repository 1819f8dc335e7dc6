//! Whether a range of the process's memory can be registered: every byte
//! mapped and readable, writable when write access is granted, and in
//! `MAP_SHARED` mappings for a shared-virtual registration (what pinning
//! checks on RDMA hardware). The cost does not grow with the number of the
//! process's mappings: the `PROCMAP_QUERY` ioctl, or `mincore` and
//! `MADV_POPULATE_*` on older kernels (docs/transport.md, "Application
//! memory access").
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::transport::api::MemoryFault;

/// What a registration needs from the memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// The registration grants local or remote write access.
    pub write: bool,
    /// Shared-virtual registration: every byte must be in a `MAP_SHARED` mapping.
    pub shared: bool,
}

/// Checks that every byte of `[va, va + len)` is mapped, readable, writable
/// if `need.write`, and in `MAP_SHARED` mappings if `need.shared`.
///
/// Callers never pass `len == 0` (an empty range has no bytes to check and is
/// accepted).
pub fn check(va: u64, len: u64, need: Need) -> Result<(), MemoryFault> {
    debug_assert!(len > 0, "memcheck::check of an empty range");
    if len == 0 {
        return Ok(());
    }
    let end = va.checked_add(len).ok_or(MemoryFault::Unmapped)?;
    let state = STRATEGY.load(Ordering::Relaxed);
    if state == FALLBACK {
        return fallback::check(va, end, need);
    }
    match procmap::check(va, end, need) {
        Ok(verdict) => {
            if state == UNKNOWN {
                STRATEGY.store(PROCMAP, Ordering::Relaxed);
            }
            verdict
        }
        Err(errno) => {
            // ENOTTY: no PROCMAP_QUERY (before 6.11). EINVAL: an
            // implementation that rejects the query. Only decided while the
            // ioctl has never worked, so that a later odd error cannot turn
            // it off for good.
            if state == UNKNOWN && (errno == libc::ENOTTY || errno == libc::EINVAL) {
                STRATEGY.store(FALLBACK, Ordering::Relaxed);
            }
            fallback::check(va, end, need)
        }
    }
}

/// Which path [`check`] takes.
const UNKNOWN: u8 = 0;
const PROCMAP: u8 = 1;
const FALLBACK: u8 = 2;
static STRATEGY: AtomicU8 = AtomicU8::new(UNKNOWN);

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `PROCMAP_QUERY` on `/proc/self/maps`.
mod procmap {
    use super::*;

    /// `struct procmap_query` of `include/uapi/linux/fs.h` (Linux 6.11).
    #[repr(C)]
    #[derive(Default)]
    pub(super) struct Query {
        pub size: u64,
        pub query_flags: u64,
        pub query_addr: u64,
        pub vma_start: u64,
        pub vma_end: u64,
        pub vma_flags: u64,
        pub vma_page_size: u64,
        pub vma_offset: u64,
        pub inode: u64,
        pub dev_major: u32,
        pub dev_minor: u32,
        pub vma_name_size: u32,
        pub build_id_size: u32,
        pub vma_name_addr: u64,
        pub build_id_addr: u64,
    }

    pub(super) const QUERY_SIZE: usize = std::mem::size_of::<Query>();
    const _: () = assert!(QUERY_SIZE == 104);

    /// `PROCMAP_QUERY_VMA_*` bits of `vma_flags`.
    pub(super) const VMA_READABLE: u64 = 0x01;
    pub(super) const VMA_WRITABLE: u64 = 0x02;
    pub(super) const VMA_SHARED: u64 = 0x08;

    /// `_IOWR(nr_type, nr, size)` in the generic Linux layout: direction in
    /// bits 30-31 (read 2 | write 1), size in 16-29, type in 8-15, number in
    /// 0-7. Architectures with a 3-bit direction field (powerpc, mips, sparc:
    /// read 2 | write 4 from bit 29) encode read-write the same way.
    pub(super) const fn iowr(nr_type: u8, nr: u8, size: usize) -> u64 {
        (3 << 30) | ((size as u64) << 16) | ((nr_type as u64) << 8) | nr as u64
    }

    /// `PROCMAP_QUERY`: `_IOWR('f', 17, struct procmap_query)`.
    pub(super) const PROCMAP_QUERY: u64 = iowr(b'f', 17, QUERY_SIZE);

    /// The cached descriptor: `pid << 32 | fd`, 0 when none. A descriptor
    /// of `/proc/self/maps` keeps describing the address space of the process
    /// that opened it, so a forked child opens its own.
    static FD: AtomicU64 = AtomicU64::new(0);
    /// Device and inode of the cached descriptor, to recognise it in a
    /// forked child before closing it.
    static DEV: AtomicU64 = AtomicU64::new(0);
    static INO: AtomicU64 = AtomicU64::new(0);

    fn file_id(fd: i32) -> Option<(u64, u64)> {
        // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a writable `stat`; fstat on a bad fd only fails.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        Some((st.st_dev, st.st_ino))
    }

    /// This process's descriptor of `/proc/self/maps`, opened on first use.
    fn maps_fd() -> Result<i32, i32> {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        loop {
            let cur = FD.load(Ordering::Acquire);
            if (cur >> 32) as u32 == pid {
                return Ok(cur as u32 as i32);
            }
            // SAFETY: a NUL-terminated path and plain flags.
            let fd = unsafe {
                libc::open(
                    c"/proc/self/maps".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(errno());
            }
            let new = u64::from(pid) << 32 | u64::from(fd as u32);
            if FD
                .compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // Another thread installed one first.
                // SAFETY: `fd` was opened above and is not shared.
                unsafe { libc::close(fd) };
                continue;
            }
            if cur >> 32 != 0 {
                // Inherited from the parent. Closed only if that number still
                // names the same file: the child may have closed and reused it.
                let old = cur as u32 as i32;
                let recorded = (DEV.load(Ordering::Acquire), INO.load(Ordering::Acquire));
                if file_id(old) == Some(recorded) {
                    // SAFETY: `old` is the parent's descriptor of its maps
                    // file, unused in this process (its pid does not match).
                    unsafe { libc::close(old) };
                }
            }
            if let Some((dev, ino)) = file_id(fd) {
                DEV.store(dev, Ordering::Release);
                INO.store(ino, Ordering::Release);
            }
            return Ok(fd);
        }
    }

    /// Forgets a cached descriptor that no longer names our maps file (the
    /// application closed it, perhaps reusing the number). Not closed: the
    /// number is not ours any more.
    fn forget(fd: i32) {
        let cur = FD.load(Ordering::Acquire);
        if cur as u32 as i32 == fd {
            let _ = FD.compare_exchange(cur, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The VMA covering `addr`: `Ok(None)` if there is none, `Err(errno)` if
    /// the query failed.
    pub(super) fn query(fd: i32, addr: u64) -> Result<Option<Query>, i32> {
        let mut q = Query {
            size: QUERY_SIZE as u64,
            query_addr: addr,
            ..Query::default()
        };
        // SAFETY: PROCMAP_QUERY reads and writes one `struct procmap_query`,
        // which `q` is (layout checked above); no name or build-id buffers
        // are requested (sizes and addresses zero).
        let r = unsafe { libc::ioctl(fd, PROCMAP_QUERY as _, &mut q as *mut Query) };
        if r == 0 {
            Ok(Some(q))
        } else {
            match errno() {
                libc::ENOENT => Ok(None),
                e => Err(e),
            }
        }
    }

    /// The verdict for `[va, end)`, or the errno when the ioctl cannot give
    /// one (unsupported kernel, no `/proc`).
    pub(super) fn check(va: u64, end: u64, need: Need) -> Result<Result<(), MemoryFault>, i32> {
        let fd = maps_fd()?;
        let mut worst: Option<MemoryFault> = None;
        let mut addr = va;
        while addr < end {
            let q = match query(fd, addr) {
                Ok(Some(q)) => q,
                Ok(None) => return Ok(Err(MemoryFault::Unmapped)),
                Err(e) => {
                    if e == libc::EBADF
                        || (e == libc::ENOTTY && STRATEGY.load(Ordering::Relaxed) == PROCMAP)
                    {
                        forget(fd);
                    }
                    return Err(e);
                }
            };
            if q.vma_start > addr || q.vma_end <= addr {
                // Not the covering VMA: not an answer we understand.
                return Err(libc::EINVAL);
            }
            let fault = if q.vma_flags & VMA_READABLE == 0 {
                Some(MemoryFault::NotReadable)
            } else if need.write && q.vma_flags & VMA_WRITABLE == 0 {
                Some(MemoryFault::NotWritable)
            } else if need.shared && q.vma_flags & VMA_SHARED == 0 {
                Some(MemoryFault::NotShared)
            } else {
                None
            };
            worst = match (worst, fault) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            addr = q.vma_end;
        }
        Ok(worst.map_or(Ok(()), Err))
    }
}

/// `mincore` + `MADV_POPULATE_*`, and `/proc/self/maps` for shared ranges.
mod fallback {
    use super::*;

    /// Pages whose residency one `mincore` call reports (the buffer is on
    /// the stack).
    const CHUNK_PAGES: usize = 4096;

    /// Whether the kernel knows `MADV_POPULATE_READ`/`_WRITE`.
    static POPULATE: AtomicU8 = AtomicU8::new(UNKNOWN);
    const YES: u8 = 1;
    const NO: u8 = 2;

    fn page_size() -> u64 {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as u64
        } else {
            4096
        }
    }

    pub(super) fn check(va: u64, end: u64, need: Need) -> Result<(), MemoryFault> {
        let page = page_size();
        let start = va & !(page - 1);
        let stop = end.checked_add(page - 1).ok_or(MemoryFault::Unmapped)? & !(page - 1);
        let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(stop - start)) else {
            return Err(MemoryFault::Unmapped);
        };
        mapped(start, len, page as usize)?;
        if populate_supported(start) {
            populated(start, len, need.write)?;
        }
        if need.shared {
            let maps =
                std::fs::read_to_string("/proc/self/maps").map_err(|_| MemoryFault::Unmapped)?;
            match mapping_in(&maps, va, end - va) {
                Some(Mapping::Shared) => {}
                Some(Mapping::Private) => return Err(MemoryFault::NotShared),
                None => return Err(MemoryFault::Unmapped),
            }
        }
        Ok(())
    }

    /// `mincore` over the page-aligned `[start, start + len)`: `ENOMEM` means
    /// a hole.
    fn mapped(start: usize, len: usize, page: usize) -> Result<(), MemoryFault> {
        let mut vec = [0u8; CHUNK_PAGES];
        let mut at = start;
        let mut left = len;
        while left > 0 {
            let n = left.min(CHUNK_PAGES * page);
            // SAFETY: mincore writes one byte per page of the n bytes, at
            // most CHUNK_PAGES, into `vec`; it does not touch the range.
            let r = unsafe { libc::mincore(at as *mut libc::c_void, n, vec.as_mut_ptr()) };
            if r != 0 {
                match errno() {
                    libc::EAGAIN | libc::EINTR => continue,
                    _ => return Err(MemoryFault::Unmapped),
                }
            }
            at += n;
            left -= n;
        }
        Ok(())
    }

    /// `madvise` of a zero-length range validates the advice and does
    /// nothing else: `EINVAL` before Linux 5.14, 0 after.
    fn populate_supported(start: usize) -> bool {
        match POPULATE.load(Ordering::Relaxed) {
            YES => true,
            NO => false,
            _ => {
                // SAFETY: a zero-length madvise touches no memory.
                let r = unsafe {
                    libc::madvise(start as *mut libc::c_void, 0, libc::MADV_POPULATE_READ)
                };
                let ok = r == 0;
                POPULATE.store(if ok { YES } else { NO }, Ordering::Relaxed);
                ok
            }
        }
    }

    fn populate(start: usize, len: usize, advice: i32) -> Result<(), i32> {
        for _ in 0..16 {
            // SAFETY: MADV_POPULATE_* faults pages in as an access would,
            // without changing their contents; it fails instead of raising
            // a signal on a page that cannot be accessed.
            if unsafe { libc::madvise(start as *mut libc::c_void, len, advice) } == 0 {
                return Ok(());
            }
            match errno() {
                libc::EINTR | libc::EAGAIN => continue,
                e => return Err(e),
            }
        }
        Err(libc::EAGAIN)
    }

    /// Faults the range in for reading or writing. The kernel answers
    /// `ENOMEM` for a hole, `EINVAL` for missing permission, `EFAULT` where
    /// an access would raise `SIGBUS`; which permission is missing is found
    /// by populating for reading.
    fn populated(start: usize, len: usize, write: bool) -> Result<(), MemoryFault> {
        let advice = if write {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        match populate(start, len, advice) {
            Ok(()) => Ok(()),
            Err(libc::ENOMEM) => Err(MemoryFault::Unmapped),
            Err(_) if !write => Err(MemoryFault::NotReadable),
            Err(_) => match populate(start, len, libc::MADV_POPULATE_READ) {
                Ok(()) => Err(MemoryFault::NotWritable),
                Err(libc::ENOMEM) => Err(MemoryFault::Unmapped),
                Err(_) => Err(MemoryFault::NotReadable),
            },
        }
    }
}

/// How a fully mapped range is backed, read from `/proc/self/maps` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mapping {
    /// At least part of it is private (anonymous or file `MAP_PRIVATE`).
    Private,
    /// Every byte is in a `MAP_SHARED` mapping.
    Shared,
}

/// How `[va, va + len)` is mapped according to `maps`, or `None` if any byte
/// of it is not mapped.
fn mapping_in(maps: &str, va: u64, len: u64) -> Option<Mapping> {
    let end = va.checked_add(len)?;
    let mut cursor = va;
    let mut shared = true;
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if hi <= cursor {
            continue;
        }
        if lo > cursor {
            return None;
        }
        shared &= perms.as_bytes().get(3) == Some(&b's');
        cursor = hi;
        if cursor >= end {
            return Some(if shared {
                Mapping::Shared
            } else {
                Mapping::Private
            });
        }
    }
    None
}

/// Anonymous test memory whose pages other tests make unreadable,
/// read-only or unmapped (registered memory the application changes).
#[cfg(test)]
pub(crate) struct TestPages {
    at: u64,
    len: usize,
}

#[cfg(test)]
impl TestPages {
    /// The page size.
    pub(crate) fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page size")
    }

    /// `pages` fresh read-write pages, unmapped on drop.
    pub(crate) fn map(pages: usize) -> TestPages {
        let len = pages * Self::page_size();
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
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
        TestPages { at: p as u64, len }
    }

    /// The address of the first page.
    pub(crate) fn addr(&self) -> u64 {
        self.at
    }

    fn page_ptr(&self, page: usize) -> *mut libc::c_void {
        assert!(
            (page + 1) * Self::page_size() <= self.len,
            "page {page} not mapped here"
        );
        (self.at as usize + page * Self::page_size()) as *mut libc::c_void
    }

    /// Gives page `page` the protection `prot` (`libc::PROT_*`).
    pub(crate) fn protect(&self, page: usize, prot: i32) {
        let p = self.page_ptr(page);
        // SAFETY: the page belongs to this mapping, which no Rust reference
        // points into.
        assert_eq!(unsafe { libc::mprotect(p, Self::page_size(), prot) }, 0);
    }

    /// Unmaps page `page`.
    pub(crate) fn unmap(&self, page: usize) {
        let p = self.page_ptr(page);
        // SAFETY: as for `protect`; unmapping it again on drop is harmless.
        assert_eq!(unsafe { libc::munmap(p, Self::page_size()) }, 0);
    }
}

#[cfg(test)]
impl Drop for TestPages {
    fn drop(&mut self) {
        // SAFETY: the mapping made by `map` (pages already unmapped are
        // skipped by the kernel).
        unsafe { libc::munmap(self.at as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests;
