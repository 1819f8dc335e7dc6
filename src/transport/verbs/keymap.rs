//! The device's registrations by local key, read on every post (the
//! scatter list's keys are checked before the device sees them): an
//! open-addressed table of sequence-locked entries, so that a lookup takes
//! no lock, writes nothing and calls nothing. Registrations and
//! deregistrations (rare) take the writer's lock. A table that fills up is
//! replaced by one twice its size; the old one stays allocated until the
//! map is dropped (a reader may still be probing it), so the memory kept is
//! less than twice the largest table.
#![allow(unsafe_code)]

use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::sync::lock_anyway;
use crate::transport::api::{Access, PdId};

/// What a registration's key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// The `ibv_mr` address.
    pub mr: usize,
    pub addr: u64,
    pub len: u64,
    pub access: Access,
    pub pd: PdId,
}

const EMPTY: u8 = 0;
const FULL: u8 = 1;
/// A removed entry: probing goes on past it.
const REMOVED: u8 = 2;

#[derive(Default)]
struct Cell {
    /// Odd while the writer changes the cell.
    seq: AtomicU32,
    state: AtomicU8,
    key: AtomicU32,
    mr: AtomicUsize,
    addr: AtomicU64,
    len: AtomicU64,
    access: AtomicU32,
    pd: AtomicU64,
}

struct Table {
    /// `64 - log2(cells)`: the hash's top bits index the cells.
    shift: u32,
    cells: Box<[Cell]>,
}

impl Table {
    fn new(cells: usize) -> Table {
        let cells = cells.next_power_of_two().max(16);
        Table {
            shift: 64 - cells.trailing_zeros(),
            cells: (0..cells).map(|_| Cell::default()).collect(),
        }
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        ((u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.cells.len() - 1
    }
}

struct Writer {
    /// Every table made, the current one last (boxed: `cur` points at
    /// them, so they must not move when the vector grows).
    #[allow(clippy::vec_box)]
    tables: Vec<Box<Table>>,
    /// Cells FULL or REMOVED in the current table.
    used: usize,
}

pub(super) struct KeyMap {
    cur: AtomicPtr<Table>,
    w: Mutex<Writer>,
}

// SAFETY: the table pointer names a `Table` owned by `w.tables`, which
// lives as long as the map; every cell is atomics.
unsafe impl Send for KeyMap {}
unsafe impl Sync for KeyMap {}

impl Default for KeyMap {
    fn default() -> KeyMap {
        let mut t = Box::new(Table::new(64));
        let p: *mut Table = &mut *t;
        KeyMap {
            cur: AtomicPtr::new(p),
            w: Mutex::new(Writer {
                tables: vec![t],
                used: 0,
            }),
        }
    }
}

impl KeyMap {
    /// The registration `key` names, if any.
    #[inline]
    pub fn get(&self, key: u32) -> Option<Entry> {
        // SAFETY: the pointer names a table in `w.tables`, never freed
        // before the map (see the module's text).
        let t = unsafe { &*self.cur.load(Ordering::Acquire) };
        let mask = t.mask();
        let mut i = t.home(key);
        for _ in 0..=mask {
            let c = &t.cells[i];
            loop {
                let s1 = c.seq.load(Ordering::Acquire);
                if s1 & 1 != 0 {
                    std::hint::spin_loop();
                    continue;
                }
                let state = c.state.load(Ordering::Relaxed);
                let k = c.key.load(Ordering::Relaxed);
                let e = Entry {
                    mr: c.mr.load(Ordering::Relaxed),
                    addr: c.addr.load(Ordering::Relaxed),
                    len: c.len.load(Ordering::Relaxed),
                    access: Access::from_bits(c.access.load(Ordering::Relaxed)),
                    pd: PdId(c.pd.load(Ordering::Relaxed)),
                };
                fence(Ordering::Acquire);
                if c.seq.load(Ordering::Relaxed) != s1 {
                    continue;
                }
                match state {
                    EMPTY => return None,
                    FULL if k == key => return Some(e),
                    _ => break,
                }
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Adds (or replaces) the registration of `key`.
    pub fn insert(&self, key: u32, e: Entry) {
        let mut w = lock_anyway(&self.w);
        if (w.used + 1) * 4 > cells_of(&w) * 3 {
            self.rebuild(&mut w);
        }
        let t = current(&w);
        let mask = t.mask();
        let mut i = t.home(key);
        let mut free = None;
        for _ in 0..=mask {
            let c = &t.cells[i];
            match c.state.load(Ordering::Relaxed) {
                EMPTY => {
                    free.get_or_insert(i);
                    break;
                }
                FULL if c.key.load(Ordering::Relaxed) == key => {
                    write(c, FULL, key, e);
                    return;
                }
                REMOVED => {
                    free.get_or_insert(i);
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
        let i = free.expect("a table never fills: it is rebuilt at three quarters");
        let fresh = t.cells[i].state.load(Ordering::Relaxed) == EMPTY;
        write(&t.cells[i], FULL, key, e);
        if fresh {
            w.used += 1;
        }
    }

    /// Removes the registration of `key`; what it was.
    pub fn remove(&self, key: u32) -> Option<Entry> {
        let w = lock_anyway(&self.w);
        let e = self.get(key)?;
        let t = current(&w);
        let mask = t.mask();
        let mut i = t.home(key);
        for _ in 0..=mask {
            let c = &t.cells[i];
            match c.state.load(Ordering::Relaxed) {
                EMPTY => break,
                FULL if c.key.load(Ordering::Relaxed) == key => {
                    write(c, REMOVED, 0, e);
                    return Some(e);
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// A new current table with what is live, twice the size if more than
    /// half the cells hold registrations (else as large: removed cells go).
    fn rebuild(&self, w: &mut Writer) {
        let old = current(w);
        let live: Vec<(u32, Entry)> = old
            .cells
            .iter()
            .filter(|c| c.state.load(Ordering::Relaxed) == FULL)
            .map(|c| {
                (
                    c.key.load(Ordering::Relaxed),
                    Entry {
                        mr: c.mr.load(Ordering::Relaxed),
                        addr: c.addr.load(Ordering::Relaxed),
                        len: c.len.load(Ordering::Relaxed),
                        access: Access::from_bits(c.access.load(Ordering::Relaxed)),
                        pd: PdId(c.pd.load(Ordering::Relaxed)),
                    },
                )
            })
            .collect();
        let mut cells = old.cells.len();
        if live.len() * 2 > cells {
            cells *= 2;
        }
        let mut t = Box::new(Table::new(cells));
        for (k, e) in &live {
            let mask = t.mask();
            let mut i = t.home(*k);
            while t.cells[i].state.load(Ordering::Relaxed) != EMPTY {
                i = (i + 1) & mask;
            }
            write(&t.cells[i], FULL, *k, *e);
        }
        let p: *mut Table = &mut *t;
        w.tables.push(t);
        w.used = live.len();
        self.cur.store(p, Ordering::Release);
    }
}

fn current(w: &Writer) -> &Table {
    w.tables.last().expect("a map has a table")
}

fn cells_of(w: &Writer) -> usize {
    current(w).cells.len()
}

/// Writes a cell under its sequence (the writer's lock held).
fn write(c: &Cell, state: u8, key: u32, e: Entry) {
    let s = c.seq.load(Ordering::Relaxed);
    c.seq.store(s.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    c.state.store(state, Ordering::Relaxed);
    c.key.store(key, Ordering::Relaxed);
    c.mr.store(e.mr, Ordering::Relaxed);
    c.addr.store(e.addr, Ordering::Relaxed);
    c.len.store(e.len, Ordering::Relaxed);
    c.access.store(e.access.bits(), Ordering::Relaxed);
    c.pd.store(e.pd.0, Ordering::Relaxed);
    c.seq.store(s.wrapping_add(2), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> Entry {
        Entry {
            mr: n as usize * 16,
            addr: n * 4096,
            len: 4096,
            access: Access::LOCAL_WRITE,
            pd: PdId(n % 3 + 1),
        }
    }

    #[test]
    fn keys_are_found_until_removed_across_growth() {
        let m = KeyMap::default();
        assert_eq!(m.get(0), None);
        // rxe-like keys (index << 8 | key) and key 0, which verbs allows.
        let keys: Vec<u32> = (0..1000u32).map(|i| (i << 8) | (i & 0xff)).collect();
        for (n, &k) in keys.iter().enumerate() {
            m.insert(k, entry(n as u64));
        }
        for (n, &k) in keys.iter().enumerate() {
            assert_eq!(m.get(k), Some(entry(n as u64)), "key {k:#x}");
        }
        assert_eq!(m.get(0xdead_beef), None);
        for &k in keys.iter().step_by(2) {
            assert!(m.remove(k).is_some());
            assert!(m.remove(k).is_none(), "removed twice");
        }
        for (n, &k) in keys.iter().enumerate() {
            let want = (n % 2 == 1).then(|| entry(n as u64));
            assert_eq!(m.get(k), want);
        }
        // Removed cells are reused; a replaced key keeps one entry.
        for round in 0..5 {
            for &k in keys.iter().step_by(2) {
                m.insert(k, entry(u64::from(k) + round));
                assert_eq!(m.get(k), Some(entry(u64::from(k) + round)));
                m.remove(k);
            }
        }
        m.insert(keys[1], entry(7));
        assert_eq!(m.get(keys[1]), Some(entry(7)));
        let tables = lock_anyway(&m.w).tables.len();
        assert!(tables <= 8, "{tables} tables");
    }

    /// Readers racing a writer see a key's old or new entry, or none,
    /// never a torn one.
    #[test]
    fn readers_never_see_a_torn_entry() {
        let m = KeyMap::default();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        for k in 0..64u32 {
                            if let Some(e) = m.get(k) {
                                assert_eq!(e.addr, e.len * 2, "torn entry for {k}");
                                assert_eq!(e.mr as u64, e.len);
                            }
                        }
                    }
                });
            }
            for v in 1..20_000u64 {
                let k = (v % 64) as u32;
                m.insert(
                    k,
                    Entry {
                        mr: v as usize,
                        addr: v * 2,
                        len: v,
                        access: Access::LOCAL_READ,
                        pd: PdId(1),
                    },
                );
                if v % 3 == 0 {
                    m.remove(k);
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}
