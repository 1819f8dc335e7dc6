//! The handle table.
//!
//! A DAT handle is the address of a [`Slot`] in one static arena. The first
//! word of every slot is the owning provider's `DAT_PROVIDER *`, so the C
//! macro `DAT_HANDLE_TO_PROVIDER(h)` works on every handle we give out. The
//! objects themselves live in a side table indexed by slot number.
//!
//! Validation is O(1) and takes no global lock: an address is ours only if it
//! lies inside the arena on a slot boundary; then one per-entry read lock
//! tells whether a live object is there. Slot memory is never freed, so a
//! stale or foreign address is never dereferenced into freed memory.
//! Fresh slots are handed out first; freed slots are reused only once the
//! arena has been used up, oldest first, so a stale handle stays invalid for
//! as long as possible.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::error::{DatError, Result, Sub};
use crate::object::{Cno, Evd, Ia, Lmr, Pz, Rmr};

/// Number of slots: the most handles that can be alive at once.
pub const CAPACITY: usize = 1 << 20;
const CHUNK_BITS: usize = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const NCHUNKS: usize = CAPACITY / CHUNK;

/// What a handle points at. 16 bytes, so handles are 16-byte aligned.
#[repr(C, align(16))]
pub struct Slot {
    /// `DAT_PROVIDER *` of the owner (first word, read by C code).
    provider: AtomicUsize,
    /// The consumer context (`DAT_CONTEXT`, 8 bytes).
    context: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
impl Slot {
    const EMPTY: Slot = Slot {
        provider: AtomicUsize::new(0),
        context: AtomicU64::new(0),
    };
}

static SLOTS: [Slot; CAPACITY] = [Slot::EMPTY; CAPACITY];

type Entry = RwLock<Option<Object>>;

#[allow(clippy::declare_interior_mutable_const)]
const NO_CHUNK: OnceLock<Box<[Entry]>> = OnceLock::new();
static OBJECTS: [OnceLock<Box<[Entry]>>; NCHUNKS] = [NO_CHUNK; NCHUNKS];

struct Alloc {
    next_fresh: usize,
    free: VecDeque<u32>,
}

static ALLOC: Mutex<Alloc> = Mutex::new(Alloc {
    next_fresh: 0,
    free: VecDeque::new(),
});

/// A handle value: the address the consumer sees. `Handle::NULL` is 0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct Handle(usize);

impl Handle {
    /// `DAT_HANDLE_NULL`.
    pub const NULL: Handle = Handle(0);

    /// The handle for an address given by the consumer (not validated).
    pub const fn from_addr(addr: usize) -> Handle {
        Handle(addr)
    }

    /// The address.
    pub const fn addr(self) -> usize {
        self.0
    }

    /// True for `DAT_HANDLE_NULL`.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }
}

/// `DAT_HANDLE_TYPE` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[repr(u32)]
pub enum HandleType {
    Cr = 0,
    Ep = 1,
    Evd = 2,
    Ia = 3,
    Lmr = 4,
    Psp = 5,
    Pz = 6,
    Rmr = 7,
    Rsp = 8,
    Cno = 9,
    Srq = 10,
}

/// A live object behind a handle.
#[derive(Clone)]
pub enum Object {
    Ia(Arc<Ia>),
    Pz(Arc<Pz>),
    Evd(Arc<Evd>),
    Cno(Arc<Cno>),
    Lmr(Arc<Lmr>),
    Rmr(Arc<Rmr>),
}

impl Object {
    /// Its `DAT_HANDLE_TYPE`.
    pub fn handle_type(&self) -> HandleType {
        match self {
            Object::Ia(_) => HandleType::Ia,
            Object::Pz(_) => HandleType::Pz,
            Object::Evd(_) => HandleType::Evd,
            Object::Cno(_) => HandleType::Cno,
            Object::Lmr(_) => HandleType::Lmr,
            Object::Rmr(_) => HandleType::Rmr,
        }
    }
}

/// Objects that can be looked up by their own type.
pub trait Kind: Sized {
    /// The object, if `o` is one of these.
    fn from_object(o: Object) -> Option<Arc<Self>>;
}

macro_rules! kind {
    ($t:ident) => {
        impl Kind for $t {
            fn from_object(o: Object) -> Option<Arc<Self>> {
                match o {
                    Object::$t(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}
kind!(Ia);
kind!(Pz);
kind!(Evd);
kind!(Cno);
kind!(Lmr);
kind!(Rmr);

fn arena_base() -> usize {
    SLOTS.as_ptr() as usize
}

/// The slot index of an address, if the address is a slot of the arena.
fn index_of(addr: usize) -> Option<usize> {
    let off = addr.checked_sub(arena_base())?;
    if off % std::mem::size_of::<Slot>() != 0 {
        return None;
    }
    let idx = off / std::mem::size_of::<Slot>();
    (idx < CAPACITY).then_some(idx)
}

fn entry(idx: usize) -> Option<&'static Entry> {
    OBJECTS[idx >> CHUNK_BITS]
        .get()
        .map(|chunk| &chunk[idx & (CHUNK - 1)])
}

fn entry_or_create(idx: usize) -> &'static Entry {
    let chunk = OBJECTS[idx >> CHUNK_BITS].get_or_init(|| {
        (0..CHUNK)
            .map(|_| RwLock::new(None))
            .collect::<Vec<_>>()
            .into_boxed_slice()
    });
    &chunk[idx & (CHUNK - 1)]
}

/// True if `addr` lies in our arena on a slot boundary (live or not).
pub fn is_ours(addr: usize) -> bool {
    index_of(addr).is_some()
}

/// The live object at `addr`, of any type.
pub fn lookup(addr: usize) -> Option<Object> {
    let e = entry(index_of(addr)?)?;
    let guard = e.read().unwrap_or_else(|p| p.into_inner());
    guard.clone()
}

/// The live object at `addr` if it has type `T`.
pub fn get<T: Kind>(addr: usize) -> Option<Arc<T>> {
    lookup(addr).and_then(T::from_object)
}

/// The live object at `addr` if it has type `T`, else `DAT_INVALID_HANDLE/sub`.
pub fn expect<T: Kind>(addr: usize, sub: Sub) -> Result<Arc<T>> {
    get::<T>(addr).ok_or(DatError::handle(sub))
}

/// The consumer context of a live handle.
pub fn context(addr: usize) -> Option<u64> {
    let idx = index_of(addr)?;
    let e = entry(idx)?;
    let guard = e.read().unwrap_or_else(|p| p.into_inner());
    guard
        .as_ref()
        .map(|_| SLOTS[idx].context.load(Ordering::Acquire))
}

/// Sets the consumer context of a live handle; false if it is not live.
pub fn set_context(addr: usize, value: u64) -> bool {
    let Some(idx) = index_of(addr) else {
        return false;
    };
    let Some(e) = entry(idx) else {
        return false;
    };
    let guard = e.read().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        return false;
    }
    SLOTS[idx].context.store(value, Ordering::Release);
    true
}

/// A slot taken for an object that is being built. Its handle is known
/// before the object exists, so the object can record its own handle.
/// Dropping the reservation without publishing gives the slot back.
pub struct Reservation {
    idx: usize,
    published: bool,
}

impl Reservation {
    /// The handle the object will have.
    pub fn handle(&self) -> Handle {
        Handle(&SLOTS[self.idx] as *const Slot as usize)
    }

    /// Makes the object reachable through its handle.
    pub fn publish(mut self, obj: Object) -> Handle {
        let e = entry_or_create(self.idx);
        *e.write().unwrap_or_else(|p| p.into_inner()) = Some(obj);
        self.published = true;
        self.handle()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.published {
            give_back(self.idx);
        }
    }
}

/// Takes a slot whose first word will read `provider_word`.
pub fn reserve(provider_word: usize) -> Result<Reservation> {
    let idx = {
        let mut a = ALLOC.lock().unwrap_or_else(|p| p.into_inner());
        if a.next_fresh < CAPACITY {
            a.next_fresh += 1;
            a.next_fresh - 1
        } else {
            match a.free.pop_front() {
                Some(i) => i as usize,
                None => return Err(DatError::resources(Sub::ResourceMemory)),
            }
        }
    };
    // Make sure the side-table chunk exists before the handle is visible.
    entry_or_create(idx);
    SLOTS[idx].provider.store(provider_word, Ordering::Release);
    SLOTS[idx].context.store(0, Ordering::Release);
    Ok(Reservation {
        idx,
        published: false,
    })
}

fn give_back(idx: usize) {
    let mut a = ALLOC.lock().unwrap_or_else(|p| p.into_inner());
    // idx < CAPACITY = 2^20, so it fits in u32.
    a.free.push_back(idx as u32);
}

/// Removes the object behind `h`; later lookups fail. Returns it if it was live.
/// The slot keeps its provider word, so a stale handle still dispatches to us
/// and gets `DAT_INVALID_HANDLE`.
pub fn retire(h: Handle) -> Option<Object> {
    let idx = index_of(h.addr())?;
    let e = entry(idx)?;
    let old = e.write().unwrap_or_else(|p| p.into_inner()).take();
    if old.is_some() {
        give_back(idx);
    }
    old
}

/// The provider word of one of our slots (for tests and diagnostics).
pub fn provider_word(addr: usize) -> Option<usize> {
    index_of(addr).map(|i| SLOTS[i].provider.load(Ordering::Acquire))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_16_bytes_and_aligned() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        assert_eq!(arena_base() % 16, 0);
    }

    #[test]
    fn foreign_and_misaligned_addresses_are_not_ours() {
        assert!(!is_ours(0));
        assert!(!is_ours(0x1000));
        assert!(!is_ours(arena_base() + 8));
        assert!(is_ours(arena_base()));
        assert!(!is_ours(arena_base() + CAPACITY * 16));
        assert!(lookup(arena_base() + 8).is_none());
    }

    #[test]
    fn reservation_dropped_is_not_live() {
        let r = reserve(0x1234).expect("slot");
        let h = r.handle();
        assert_eq!(provider_word(h.addr()), Some(0x1234));
        drop(r);
        assert!(lookup(h.addr()).is_none());
        assert!(context(h.addr()).is_none());
        assert!(!set_context(h.addr(), 5));
    }
}
