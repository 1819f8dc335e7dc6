//! memcheck's tests: both strategies over mappings of every kind.

use super::*;

const RW: Need = Need {
    write: true,
    shared: false,
};
const RO: Need = Need {
    write: false,
    shared: false,
};
const SHARED: Need = Need {
    write: false,
    shared: true,
};
const SHARED_RW: Need = Need {
    write: true,
    shared: true,
};

/// Both strategies on the same range; the ioctl one is skipped (with a
/// note) on kernels without `PROCMAP_QUERY`.
fn both(va: u64, len: u64, need: Need) -> Result<(), MemoryFault> {
    let end = va.checked_add(len);
    let fb = match end {
        Some(end) => fallback::check(va, end, need),
        None => Err(MemoryFault::Unmapped),
    };
    if let Some(end) = end {
        match procmap::check(va, end, need) {
            Ok(pm) => assert_eq!(pm, fb, "procmap vs fallback at {va:#x}+{len:#x} {need:?}"),
            Err(e) => eprintln!("PROCMAP_QUERY unavailable (errno {e}); fallback only"),
        }
    }
    assert_eq!(
        check(va, len, need),
        fb,
        "check at {va:#x}+{len:#x} {need:?}"
    );
    fb
}

fn page() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

/// An anonymous mapping of `pages` pages, unmapped on drop.
struct Map {
    at: u64,
    len: usize,
}

impl Map {
    fn new(pages: u64, flags: i32) -> Map {
        let len = (pages * page()) as usize;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Map { at: p as u64, len }
    }
    fn private(pages: u64) -> Map {
        Map::new(pages, libc::MAP_PRIVATE)
    }
    fn page(&self, i: u64) -> u64 {
        self.at + i * page()
    }
    fn protect(&self, first: u64, pages: u64, prot: i32) {
        // SAFETY: the pages belong to this test's own mapping.
        let r = unsafe {
            libc::mprotect(
                self.page(first) as *mut libc::c_void,
                (pages * page()) as usize,
                prot,
            )
        };
        assert_eq!(r, 0);
    }
    fn unmap(&self, first: u64, pages: u64) {
        // SAFETY: the pages belong to this test's own mapping.
        let r = unsafe {
            libc::munmap(
                self.page(first) as *mut libc::c_void,
                (pages * page()) as usize,
            )
        };
        assert_eq!(r, 0);
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmaps what `new` mapped (holes already unmapped are fine).
        unsafe { libc::munmap(self.at as *mut libc::c_void, self.len) };
    }
}

#[test]
fn ioctl_number_and_layout() {
    // _IOWR('f', 17, 104 bytes): 3 << 30 | 104 << 16 | 0x66 << 8 | 17.
    assert_eq!(procmap::PROCMAP_QUERY, 0xC068_6611);
    assert_eq!(procmap::QUERY_SIZE, 104);
    assert_eq!(std::mem::offset_of!(procmap::Query, vma_flags), 40);
    assert_eq!(std::mem::offset_of!(procmap::Query, dev_major), 72);
    assert_eq!(std::mem::offset_of!(procmap::Query, vma_name_addr), 88);
    // Known numbers of the same encoding: PAGEMAP_SCAN is
    // _IOWR('f', 16, struct pm_scan_arg) with a 96-byte argument.
    assert_eq!(procmap::iowr(b'f', 16, 96), 0xC060_6610);
}

#[test]
fn heap_buffer() {
    let v = vec![7u8; 4096];
    let a = v.as_ptr() as u64;
    assert_eq!(both(a, 4096, RO), Ok(()));
    assert_eq!(both(a, 4096, RW), Ok(()));
    assert_eq!(both(a + 1, 17, RW), Ok(()));
    assert!(v.iter().all(|&b| b == 7), "contents unchanged");
    assert_eq!(both(a, 4096, SHARED), Err(MemoryFault::NotShared));
}

#[test]
fn read_only_neighbour() {
    let m = Map::private(2);
    m.protect(1, 1, libc::PROT_READ);
    let mid = m.page(1) - 8;
    assert_eq!(both(mid, 16, RW), Err(MemoryFault::NotWritable));
    assert_eq!(both(mid, 16, RO), Ok(()));
    assert_eq!(both(m.page(0), 8, RW), Ok(()));
}

#[test]
fn hole_is_unmapped() {
    let m = Map::private(3);
    m.unmap(1, 1);
    assert_eq!(both(m.page(0), 3 * page(), RO), Err(MemoryFault::Unmapped));
    assert_eq!(both(m.page(0) + 8, page(), RW), Err(MemoryFault::Unmapped));
    assert_eq!(both(m.page(1), 1, RO), Err(MemoryFault::Unmapped));
    assert_eq!(both(m.page(2), page(), RW), Ok(()));
    // A hole beats any other fault in the range.
    m.protect(0, 1, libc::PROT_READ);
    assert_eq!(both(m.page(0), 3 * page(), RW), Err(MemoryFault::Unmapped));
}

#[test]
fn prot_none_is_not_readable() {
    let m = Map::private(2);
    m.protect(1, 1, libc::PROT_NONE);
    assert_eq!(both(m.page(1), 8, RO), Err(MemoryFault::NotReadable));
    assert_eq!(
        both(m.page(0), 2 * page(), RW),
        Err(MemoryFault::NotReadable)
    );
    assert_eq!(both(m.page(0), page(), RW), Ok(()));
    // Not readable is reported before not writable.
    m.protect(0, 1, libc::PROT_READ);
    assert_eq!(
        both(m.page(0), 2 * page(), RW),
        Err(MemoryFault::NotReadable)
    );
}

#[test]
fn shared_and_private() {
    let s = Map::new(2, libc::MAP_SHARED);
    let p = Map::private(1);
    assert_eq!(both(s.page(0), 2 * page(), SHARED), Ok(()));
    assert_eq!(both(s.page(0) + 3, 100, SHARED_RW), Ok(()));
    assert_eq!(both(p.page(0), page(), SHARED), Err(MemoryFault::NotShared));
    s.protect(1, 1, libc::PROT_READ);
    assert_eq!(
        both(s.page(0), 2 * page(), SHARED_RW),
        Err(MemoryFault::NotWritable)
    );
    assert_eq!(both(s.page(0), 2 * page(), SHARED), Ok(()));
}

#[test]
fn wrap_and_kernel_half() {
    assert_eq!(both(u64::MAX - 10, 100, RO), Err(MemoryFault::Unmapped));
    assert_eq!(both(u64::MAX, 1, RO), Err(MemoryFault::Unmapped));
    assert_eq!(
        both(u64::MAX - page() + 1, page() - 1, RO),
        Err(MemoryFault::Unmapped)
    );
    assert_eq!(both(1 << 63, 4096, RW), Err(MemoryFault::Unmapped));
    assert_eq!(both(0, 4096, RO), Err(MemoryFault::Unmapped));
}

#[test]
#[should_panic(expected = "empty range")]
#[cfg(debug_assertions)]
fn zero_length_is_a_caller_bug() {
    let v = [0u8; 8];
    let _ = check(v.as_ptr() as u64, 0, RO);
}

/// 20,000 extra VMAs (every other page of a 20,000-page mapping made
/// read-only): results stay right.
#[test]
fn many_mappings() {
    let pages = 20_000;
    let m = Map::private(pages);
    for i in (1..pages).step_by(2) {
        m.protect(i, 1, libc::PROT_READ);
    }
    let p = page();
    assert_eq!(both(m.page(100), p, RW), Ok(()));
    assert_eq!(both(m.page(101), p, RO), Ok(()));
    assert_eq!(both(m.page(101), p, RW), Err(MemoryFault::NotWritable));
    assert_eq!(both(m.page(1000), 200 * p, RO), Ok(()));
    assert_eq!(
        both(m.page(1000), 200 * p, RW),
        Err(MemoryFault::NotWritable)
    );
    m.unmap(15_001, 1);
    assert_eq!(both(m.page(15_000), 3 * p, RO), Err(MemoryFault::Unmapped));
    assert_eq!(
        both(m.page(19_998), 2 * p, SHARED),
        Err(MemoryFault::NotShared)
    );
    let s = Map::new(1, libc::MAP_SHARED);
    assert_eq!(both(s.page(0), p, SHARED_RW), Ok(()));
}

/// A child's cached descriptor describes the child: a mapping the child
/// makes after fork is seen by it, one it unmaps is not.
#[test]
fn fork_reopens() {
    let m = Map::private(1);
    let a = m.page(0);
    assert_eq!(check(a, 8, RW), Ok(()));
    // SAFETY: the child only makes syscalls and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: unmapping the child's copy of the test mapping.
        unsafe { libc::munmap(a as *mut libc::c_void, page() as usize) };
        let code = match check(a, 8, RW) {
            Err(MemoryFault::Unmapped) => 0,
            _ => 1,
        };
        // SAFETY: leaves the child without running the parent's test harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert_eq!(check(a, 8, RW), Ok(()));
}

const MAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0
3000-4000 rw-s 00000000 00:05 12 /dev/zero (deleted)
4000-5000 rw-s 00000000 00:05 13 /dev/shm/x
8000-9000 r--p 00000000 00:00 0
";

#[test]
fn maps_text() {
    assert_eq!(mapping_in(MAPS, 0x1000, 0x10), Some(Mapping::Private));
    assert_eq!(mapping_in(MAPS, 0x2ff0, 0x20), Some(Mapping::Private));
    assert_eq!(mapping_in(MAPS, 0x3000, 0x2000), Some(Mapping::Shared));
    assert_eq!(mapping_in(MAPS, 0x4800, 0x1000), None);
    assert_eq!(mapping_in(MAPS, 0x500, 0x10), None);
    assert_eq!(mapping_in(MAPS, 0x8000, 0x1000), Some(Mapping::Private));
    assert_eq!(mapping_in(MAPS, u64::MAX, 2), None);
}
