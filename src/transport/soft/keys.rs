//! Memory keys: the contexts that name registered memory (`lmr_context`,
//! `rmr_context`; a NIC's lkey and rkey), and the one check that every use
//! of memory goes through — a local DTO segment, an incoming RDMA access,
//! an LMR sync call.
//!
//! Invariants: a key is `generation << 18 | index`, its generation drawn at
//! random at every registration, and key 0 is never valid; the check takes
//! no lock and writes nothing shared (every entry is a sequence lock,
//! writers are serialised by the table's mutex). Details: docs/transport.md.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{DatError, Result, Sub};
use crate::transport::api::{Access, KeyFault};

/// Bits of a key that select the entry.
pub const INDEX_BITS: u32 = 18;
/// The most registrations (LMRs plus RMRs) one table holds.
pub const CAPACITY: usize = 1 << INDEX_BITS;
/// The bits of a key that name its entry.
pub const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const GEN_MASK: u32 = (1 << (32 - INDEX_BITS)) - 1;
const CHUNK_BITS: u32 = 8;
const CHUNK: usize = 1 << CHUNK_BITS;
const NCHUNKS: usize = CAPACITY / CHUNK;

/// What a check grants: the registered range the key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub addr: u64,
    pub len: u64,
    pub rights: Access,
    /// The protection zone (an opaque non-zero id).
    pub pz: u64,
}

#[derive(Default)]
struct Entry {
    /// Odd while a writer changes the entry.
    seq: AtomicU32,
    lkey: AtomicU32,
    rkey: AtomicU32,
    rights: AtomicU32,
    addr: AtomicU64,
    len: AtomicU64,
    pz: AtomicU64,
}

struct Alloc {
    next_fresh: usize,
    free: VecDeque<u32>,
    /// Generation last used per index (kept so a reuse draws another).
    last_gen: Vec<u16>,
    /// The entry is registered (or reserved as a window).
    in_use: Vec<bool>,
}

/// The keys of one device (IA).
pub struct KeyTable {
    chunks: Box<[OnceLock<Box<[Entry]>>]>,
    writer: Mutex<Alloc>,
}

impl Default for KeyTable {
    fn default() -> Self {
        Self::new()
    }
}

/// Local or remote use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Local,
    Remote,
}

fn index_of(key: u32) -> usize {
    (key & ((1 << INDEX_BITS) - 1)) as usize
}

fn gen_of(key: u32) -> u32 {
    key >> INDEX_BITS
}

impl KeyTable {
    /// An empty table (entries are allocated in chunks as they are used).
    pub fn new() -> KeyTable {
        KeyTable {
            chunks: (0..NCHUNKS).map(|_| OnceLock::new()).collect(),
            writer: Mutex::new(Alloc {
                next_fresh: 0,
                free: VecDeque::new(),
                last_gen: Vec::new(),
                in_use: Vec::new(),
            }),
        }
    }

    fn entry(&self, idx: usize) -> Option<&Entry> {
        self.chunks
            .get(idx >> CHUNK_BITS)?
            .get()
            .map(|c| &c[idx & (CHUNK - 1)])
    }

    fn entry_or_create(&self, idx: usize) -> &Entry {
        let chunk = self.chunks[idx >> CHUNK_BITS]
            .get_or_init(|| (0..CHUNK).map(|_| Entry::default()).collect());
        &chunk[idx & (CHUNK - 1)]
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Alloc> {
        crate::sync::lock_anyway(&self.writer)
    }

    /// A fresh random generation for `idx`, different from `avoid`.
    fn draw(avoid: u32) -> Result<u32> {
        loop {
            let mut b = [0u8; 4];
            getrandom::fill(&mut b).map_err(|_| DatError::resources(Sub::ResourceMemory))?;
            let g = u32::from_ne_bytes(b) & GEN_MASK;
            if g != 0 && g != avoid {
                return Ok(g);
            }
        }
    }

    fn write(&self, e: &Entry, f: impl FnOnce(&Entry)) {
        e.seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
        f(e);
        e.seq.fetch_add(1, Ordering::Release);
    }

    /// Registers `region`. Returns the entry's index and its local key; a
    /// remote key is added with [`KeyTable::grant_remote`].
    pub fn register(&self, region: Region) -> Result<(u32, u32)> {
        self.allocate(region, true)
    }

    /// Reserves an entry with no key (a memory window, before any bind).
    pub fn reserve_window(&self, pz: u64) -> Result<u32> {
        let region = Region {
            addr: 0,
            len: 0,
            rights: Access::NONE,
            pz,
        };
        self.allocate(region, false).map(|(idx, _)| idx)
    }

    fn allocate(&self, region: Region, local: bool) -> Result<(u32, u32)> {
        let mut a = self.lock();
        let idx = if a.next_fresh < CAPACITY {
            a.next_fresh += 1;
            a.last_gen.push(0);
            a.in_use.push(false);
            a.next_fresh - 1
        } else {
            a.free
                .pop_front()
                .ok_or(DatError::resources(Sub::ResourceMemoryRegion))? as usize
        };
        let gen = match Self::draw(u32::from(a.last_gen[idx])) {
            Ok(g) => g,
            Err(e) => {
                a.free.push_back(idx as u32);
                return Err(e);
            }
        };
        a.last_gen[idx] = gen as u16;
        a.in_use[idx] = true;
        let lkey = if local {
            gen << INDEX_BITS | idx as u32
        } else {
            0
        };
        let e = self.entry_or_create(idx);
        self.write(e, |e| {
            e.addr.store(region.addr, Ordering::Relaxed);
            e.len.store(region.len, Ordering::Relaxed);
            e.rights.store(region.rights.bits(), Ordering::Relaxed);
            e.pz.store(region.pz, Ordering::Relaxed);
            e.rkey.store(0, Ordering::Relaxed);
            e.lkey.store(lkey, Ordering::Relaxed);
        });
        Ok((idx as u32, lkey))
    }

    /// Gives entry `idx` a new remote key with `rights` over `[addr, addr+len)`
    /// (a registration's rmr_context, or an RMR bind). The previous remote
    /// key of the entry stops working.
    pub fn grant_remote(&self, idx: u32, addr: u64, len: u64, rights: Access) -> Result<u32> {
        let mut a = self.lock();
        let idx = idx as usize;
        let e = self
            .entry(idx)
            .ok_or(DatError::of(crate::error::Type::InternalError))?;
        let old = gen_of(e.rkey.load(Ordering::Relaxed))
            .max(u32::from(a.last_gen.get(idx).copied().unwrap_or(0)));
        let gen = Self::draw(old)?;
        if let Some(g) = a.last_gen.get_mut(idx) {
            *g = gen as u16;
        }
        let rkey = gen << INDEX_BITS | idx as u32;
        self.write(e, |e| {
            e.addr.store(addr, Ordering::Relaxed);
            e.len.store(len, Ordering::Relaxed);
            e.rights.store(rights.bits(), Ordering::Relaxed);
            e.rkey.store(rkey, Ordering::Relaxed);
        });
        Ok(rkey)
    }

    /// Withdraws the remote key of entry `idx` (an RMR unbind).
    pub fn revoke_remote(&self, idx: u32) {
        let _a = self.lock();
        if let Some(e) = self.entry(idx as usize) {
            self.write(e, |e| e.rkey.store(0, Ordering::Relaxed));
        }
    }

    /// Frees entry `idx`: both of its keys stop working at once.
    pub fn deregister(&self, idx: u32) {
        let mut a = self.lock();
        let i = idx as usize;
        if !a.in_use.get(i).copied().unwrap_or(false) {
            return;
        }
        a.in_use[i] = false;
        if let Some(e) = self.entry(i) {
            self.write(e, |e| {
                e.lkey.store(0, Ordering::Relaxed);
                e.rkey.store(0, Ordering::Relaxed);
                e.rights.store(0, Ordering::Relaxed);
            });
        }
        a.free.push_back(idx);
    }

    /// A consistent copy of an entry: its (local, remote) keys and region.
    fn read(e: &Entry) -> (u32, u32, Region) {
        loop {
            let s1 = e.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let v = (
                e.lkey.load(Ordering::Relaxed),
                e.rkey.load(Ordering::Relaxed),
                Region {
                    addr: e.addr.load(Ordering::Relaxed),
                    len: e.len.load(Ordering::Relaxed),
                    rights: Access::from_bits(e.rights.load(Ordering::Relaxed)),
                    pz: e.pz.load(Ordering::Relaxed),
                },
            );
            fence(Ordering::Acquire);
            if e.seq.load(Ordering::Relaxed) == s1 {
                return v;
            }
        }
    }

    #[cfg(test)]
    fn snapshot(&self, idx: u32) -> (u32, Region) {
        let (_, rkey, r) = Self::read(self.entry(idx as usize).expect("entry"));
        (rkey, r)
    }

    fn check(
        &self,
        side: Side,
        key: u32,
        addr: u64,
        len: u64,
        need: Access,
        pz: Option<u64>,
    ) -> std::result::Result<Region, KeyFault> {
        if key == 0 {
            return Err(KeyFault::Key);
        }
        let e = self.entry(index_of(key)).ok_or(KeyFault::Key)?;
        let (lkey, rkey, r) = Self::read(e);
        let k = match side {
            Side::Local => lkey,
            Side::Remote => rkey,
        };
        if k != key {
            return Err(KeyFault::Key);
        }
        if pz.is_some_and(|p| p != r.pz) {
            return Err(KeyFault::Domain);
        }
        let end = addr.checked_add(len).ok_or(KeyFault::Bounds)?;
        if addr < r.addr || end > r.addr.saturating_add(r.len) {
            return Err(KeyFault::Bounds);
        }
        if !r.rights.contains(need) {
            return Err(KeyFault::Rights);
        }
        Ok(r)
    }

    /// Checks a local use: `key` is a live local key, `[addr, addr+len)` is
    /// inside its registration, which grants `need` and (when given) is in
    /// protection zone `pz`.
    pub fn check_local(
        &self,
        key: u32,
        addr: u64,
        len: u64,
        need: Access,
        pz: Option<u64>,
    ) -> std::result::Result<Region, KeyFault> {
        self.check(Side::Local, key, addr, len, need, pz)
    }

    /// Checks a remote access the same way, against remote keys.
    pub fn check_remote(
        &self,
        key: u32,
        addr: u64,
        len: u64,
        need: Access,
        pz: Option<u64>,
    ) -> std::result::Result<Region, KeyFault> {
        self.check(Side::Remote, key, addr, len, need, pz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: Access = Access::LOCAL_READ.union(Access::LOCAL_WRITE);

    fn region(addr: u64, len: u64, rights: Access) -> Region {
        Region {
            addr,
            len,
            rights,
            pz: 7,
        }
    }

    #[test]
    fn local_key_checks_range_rights_and_zone() {
        let t = KeyTable::new();
        let (_, k) = t.register(region(0x1000, 0x100, RW)).expect("reg");
        assert_ne!(k, 0);
        assert!(t.check_local(k, 0x1000, 0x100, RW, Some(7)).is_ok());
        assert!(t
            .check_local(k, 0x10ff, 1, Access::LOCAL_READ, None)
            .is_ok());
        assert_eq!(t.check_local(k, 0x10ff, 2, RW, None), Err(KeyFault::Bounds));
        assert_eq!(t.check_local(k, 0xfff, 1, RW, None), Err(KeyFault::Bounds));
        assert_eq!(
            t.check_local(k, u64::MAX, 2, RW, None),
            Err(KeyFault::Bounds)
        );
        assert_eq!(
            t.check_local(k, 0x1000, 1, RW, Some(8)),
            Err(KeyFault::Domain)
        );
        assert_eq!(
            t.check_local(k, 0x1000, 1, Access::REMOTE_READ, None),
            Err(KeyFault::Rights)
        );
        assert_eq!(
            t.check_remote(k, 0x1000, 1, Access::NONE, None),
            Err(KeyFault::Key),
            "a local key is not a remote key"
        );
    }

    #[test]
    fn forged_and_stale_keys_fail() {
        let t = KeyTable::new();
        let (idx, k) = t.register(region(0x1000, 0x100, RW)).expect("reg");
        let forged = k ^ (1 << INDEX_BITS);
        assert_eq!(
            t.check_local(forged, 0x1000, 1, RW, None),
            Err(KeyFault::Key)
        );
        assert_eq!(t.check_local(0, 0x1000, 1, RW, None), Err(KeyFault::Key));
        assert_eq!(
            t.check_local(k + 1, 0x1000, 1, RW, None),
            Err(KeyFault::Key),
            "an index never used"
        );
        t.deregister(idx);
        assert_eq!(t.check_local(k, 0x1000, 1, RW, None), Err(KeyFault::Key));
    }

    #[test]
    fn keys_are_not_sequential() {
        let t = KeyTable::new();
        let keys: Vec<u32> = (0..64)
            .map(|i| t.register(region(i * 4096, 4096, RW)).expect("reg").1)
            .collect();
        let gens: std::collections::HashSet<u32> = keys.iter().map(|k| gen_of(*k)).collect();
        assert!(gens.len() > 32, "generations look random: {gens:?}");
    }

    #[test]
    fn remote_keys_and_windows() {
        let t = KeyTable::new();
        let (idx, lk) = t
            .register(region(0x1000, 0x1000, RW.union(Access::REMOTE_READ)))
            .expect("reg");
        let rk = t
            .grant_remote(idx, 0x1000, 0x1000, RW.union(Access::REMOTE_READ))
            .expect("grant");
        assert_ne!(rk, lk);
        assert!(t
            .check_remote(rk, 0x1800, 8, Access::REMOTE_READ, Some(7))
            .is_ok());
        assert_eq!(
            t.check_remote(rk, 0x1800, 8, Access::REMOTE_WRITE, None),
            Err(KeyFault::Rights)
        );
        let w = t.reserve_window(7).expect("window");
        let wk = t
            .grant_remote(w, 0x1100, 0x10, Access::REMOTE_WRITE)
            .expect("bind");
        assert!(t
            .check_remote(wk, 0x1100, 0x10, Access::REMOTE_WRITE, None)
            .is_ok());
        assert_eq!(
            t.check_local(wk, 0x1100, 1, Access::NONE, None),
            Err(KeyFault::Key)
        );
        let wk2 = t
            .grant_remote(w, 0x1100, 0x10, Access::REMOTE_WRITE)
            .expect("rebind");
        assert_ne!(wk, wk2);
        assert_eq!(
            t.check_remote(wk, 0x1100, 1, Access::NONE, None),
            Err(KeyFault::Key),
            "rebinding invalidates the old key"
        );
        t.revoke_remote(w);
        assert_eq!(
            t.check_remote(wk2, 0x1100, 1, Access::NONE, None),
            Err(KeyFault::Key)
        );
        t.deregister(w);
        t.deregister(idx);
        assert_eq!(
            t.check_remote(rk, 0x1800, 8, Access::NONE, None),
            Err(KeyFault::Key)
        );
    }

    #[test]
    fn readers_never_see_a_torn_entry() {
        let t = KeyTable::new();
        let (idx, _) = t.register(region(0, 0, RW)).expect("reg");
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                let mut last = 0;
                for i in 1..3000u64 {
                    last = t
                        .grant_remote(idx, i << 20, i << 20, Access::REMOTE_READ)
                        .expect("grant");
                }
                last
            });
            for _ in 0..30000 {
                let (_, r) = t.snapshot(idx);
                assert_eq!(r.addr, r.len, "torn read");
            }
            let last = w.join().expect("writer");
            let i = 2999u64;
            assert!(t
                .check_remote(last, i << 20, i << 20, Access::REMOTE_READ, None)
                .is_ok());
        });
    }
}
