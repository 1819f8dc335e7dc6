//! The handle table (docs/hot-path.md, "Handles").
//!
//! A DAT handle is the address of a [`Slot`] in one static arena; the
//! slot's first word is the owner's `DAT_PROVIDER *`, so the C macro
//! `DAT_HANDLE_TO_PROVIDER(h)` works on every handle we give out. The slot's
//! `object` word (object pointer | type tag, or 0) is the one source of
//! truth for liveness. A lookup takes no lock: it counts itself in the
//! slot's reader word while it holds the object, and the table's reference
//! to a retired object is released by whoever leaves the slot with no
//! reader (the retirer or the last reader), so a lookup never reaches
//! freed memory and nobody waits. Slot memory is never freed, and a retired
//! slot is reused only after all [`CAPACITY`] slots have been handed out
//! once.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{DatError, Result, Sub};

/// Number of slots: the most handles that can be alive at once.
pub const CAPACITY: usize = 1 << 20;

/// The tag occupies the low four bits of the object word: every object
/// type is aligned to 16 bytes (checked when it is published).
const TAG_MASK: usize = 0xf;
/// Set in the object word of a retired object not released yet (no user
/// space address has its top bit set).
const GONE: usize = 1 << (usize::BITS - 1);
const PTR_MASK: usize = !(TAG_MASK | GONE);

/// Reader word: set once the object is retired; then its last reader
/// releases it.
const RETIRED: usize = 1 << (usize::BITS - 1);
/// Reader word: the object was released (set by the one who did).
const RELEASED: usize = 1 << (usize::BITS - 2);
const COUNT_MASK: usize = !(RETIRED | RELEASED);

/// What a handle points at: a cache line of its own (its reader word is
/// written by every lookup), so handles are 64-byte aligned.
#[repr(C, align(64))]
pub struct Slot {
    /// `DAT_PROVIDER *` of the owner (first word, read by C code).
    provider: AtomicUsize,
    /// The consumer context (`DAT_CONTEXT`, 8 bytes).
    context: AtomicU64,
    /// `object pointer | (type + 1)`, or 0 when no object is live; `| GONE`
    /// once retired until released.
    object: AtomicUsize,
    /// Lookups holding the object, `| RETIRED`, `| RELEASED`.
    readers: AtomicUsize,
    /// Releases the table's reference (`fn(object pointer)`, as `usize`).
    release: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
impl Slot {
    const EMPTY: Slot = Slot {
        provider: AtomicUsize::new(0),
        context: AtomicU64::new(0),
        object: AtomicUsize::new(0),
        readers: AtomicUsize::new(0),
        release: AtomicUsize::new(0),
    };

    /// Counts a lookup in; false (and counted out again) if the object is
    /// retired.
    #[inline]
    fn enter(&'static self) -> bool {
        let old = self.readers.fetch_add(1, Ordering::SeqCst);
        if old & RETIRED != 0 {
            self.leave();
            return false;
        }
        true
    }

    /// Counts a lookup out; the last one out of a retired object releases it.
    #[inline]
    fn leave(&'static self) {
        let old = self.readers.fetch_sub(1, Ordering::SeqCst);
        if old & (RETIRED | RELEASED) == RETIRED && old & COUNT_MASK == 1 {
            self.release_retired();
        }
    }

    /// Releases the retired object if nobody holds it and nobody has
    /// released it: exactly one caller wins the swap.
    #[cold]
    #[inline(never)]
    fn release_retired(&'static self) {
        if self
            .readers
            .compare_exchange(
                RETIRED,
                RETIRED | RELEASED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_err()
        {
            return;
        }
        let word = self.object.load(Ordering::SeqCst);
        let f = self.release.load(Ordering::SeqCst);
        debug_assert!(word & GONE != 0 && f != 0);
        if word & GONE != 0 && f != 0 {
            // SAFETY: `release` was stored by `publish::<T>` for this
            // object's type; the swap above made this the only release of
            // the pointer `publish` made, at a moment nobody held it.
            let f: fn(usize) = unsafe { std::mem::transmute::<usize, fn(usize)>(f) };
            f(word & PTR_MASK);
        }
        self.object.store(0, Ordering::SeqCst);
        self.release.store(0, Ordering::SeqCst);
        // Lookups of the stale handle may still be counted: keep them.
        self.readers
            .fetch_and(!(RETIRED | RELEASED), Ordering::SeqCst);
        give_back(self.index());
    }

    fn index(&'static self) -> usize {
        (self as *const Slot as usize - arena_base()) / std::mem::size_of::<Slot>()
    }
}

/// The table's reference to a `T`, released.
fn release_arc<T: Kind>(p: usize) {
    // SAFETY: `p` is the pointer `publish::<T>` made with `Arc::into_raw`;
    // called once (see `Slot::release_retired`).
    drop(unsafe { Arc::from_raw(p as *const T) });
}

static SLOTS: [Slot; CAPACITY] = [Slot::EMPTY; CAPACITY];

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

impl HandleType {
    /// Every type, indexed by its value.
    pub const ALL: [HandleType; 11] = [
        HandleType::Cr,
        HandleType::Ep,
        HandleType::Evd,
        HandleType::Ia,
        HandleType::Lmr,
        HandleType::Psp,
        HandleType::Pz,
        HandleType::Rmr,
        HandleType::Rsp,
        HandleType::Cno,
        HandleType::Srq,
    ];

    const fn tag(self) -> usize {
        self as usize + 1
    }
}

/// An object type that can stand behind a handle. The table's reference is
/// released on whichever thread leaves the retired object last (often
/// inside another call), so its destructor must not take locks.
pub trait Kind: Send + Sync + 'static {
    /// Its `DAT_HANDLE_TYPE`.
    const TYPE: HandleType;
}

#[inline]
fn arena_base() -> usize {
    SLOTS.as_ptr() as usize
}

/// The slot of an address, if the address is a slot of the arena.
#[inline]
fn slot_of(addr: usize) -> Option<&'static Slot> {
    let off = addr.checked_sub(arena_base())?;
    if off % std::mem::size_of::<Slot>() != 0 {
        return None;
    }
    SLOTS.get(off / std::mem::size_of::<Slot>())
}

/// True if `addr` lies in our arena on a slot boundary (live or not).
#[inline]
pub fn is_ours(addr: usize) -> bool {
    slot_of(addr).is_some()
}

/// The type of the live object at `addr`: one load, no lock, no write.
#[inline]
pub fn type_of(addr: usize) -> Option<HandleType> {
    let word = slot_of(addr)?.object.load(Ordering::Acquire);
    let tag = word & TAG_MASK;
    (tag != 0 && word & GONE == 0).then(|| HandleType::ALL[tag - 1])
}

/// True if `h` names a live object.
#[inline]
pub fn is_live(h: Handle) -> bool {
    type_of(h.addr()).is_some()
}

/// A live object borrowed from the table: valid while this value lives
/// (it is counted in its slot). Not `Send`: drop it before blocking for
/// long (a retired object is released when its last reader leaves); take
/// [`Ref::arc`] to keep the object beyond the call.
pub struct Ref<T: Kind> {
    ptr: NonNull<T>,
    slot: &'static Slot,
    _own: PhantomData<(Arc<T>, *const ())>,
}

impl<T: Kind> Drop for Ref<T> {
    #[inline]
    fn drop(&mut self) {
        self.slot.leave();
    }
}

impl<T: Kind> Deref for Ref<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the pointer came from `Arc::into_raw` of a live object,
        // read while this lookup is counted in the slot; the table's
        // reference is released only when nobody is counted, so the object
        // outlives this value.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Kind> Ref<T> {
    /// A counted reference to the object, to keep it beyond this call.
    pub fn arc(&self) -> Arc<T> {
        let p = self.ptr.as_ptr().cast_const();
        // SAFETY: `p` is the `Arc::into_raw` pointer of an object kept alive
        // by this counted lookup (see `deref`); adding a strong count and
        // rebuilding an `Arc` from it gives an independent owner.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}

/// The live object at `addr` if it has type `T`.
#[inline]
pub fn get<T: Kind>(addr: usize) -> Option<Ref<T>> {
    let slot = slot_of(addr)?;
    if !slot.enter() {
        return None;
    }
    let word = slot.object.load(Ordering::SeqCst);
    let ptr = NonNull::new((word & PTR_MASK) as *mut T);
    match ptr {
        Some(ptr) if word & (TAG_MASK | GONE) == T::TYPE.tag() => Some(Ref {
            ptr,
            slot,
            _own: PhantomData,
        }),
        _ => {
            slot.leave();
            None
        }
    }
}

/// The live object at `addr` if it has type `T`, else `DAT_INVALID_HANDLE/sub`.
#[inline]
pub fn expect<T: Kind>(addr: usize, sub: Sub) -> Result<Ref<T>> {
    get::<T>(addr).ok_or(DatError::handle(sub))
}

/// The consumer context of a live handle.
#[inline]
pub fn context(addr: usize) -> Option<u64> {
    let slot = slot_of(addr)?;
    let v = slot.context.load(Ordering::Acquire);
    live_word(slot.object.load(Ordering::Acquire)).then_some(v)
}

/// Sets the consumer context of a live handle; false if it is not live.
#[inline]
pub fn set_context(addr: usize, value: u64) -> bool {
    let Some(slot) = slot_of(addr) else {
        return false;
    };
    if !live_word(slot.object.load(Ordering::Acquire)) {
        return false;
    }
    slot.context.store(value, Ordering::Release);
    true
}

/// An object word naming a live object.
#[inline]
fn live_word(word: usize) -> bool {
    word != 0 && word & GONE == 0
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
    pub fn publish<T: Kind>(mut self, obj: Arc<T>) -> Handle {
        const { assert!(std::mem::align_of::<T>() > TAG_MASK) };
        let p = Arc::into_raw(obj) as usize;
        debug_assert_eq!(p & (TAG_MASK | GONE), 0);
        let slot = &SLOTS[self.idx];
        slot.release
            .store(release_arc::<T> as fn(usize) as usize, Ordering::SeqCst);
        slot.object.store(p | T::TYPE.tag(), Ordering::SeqCst);
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
        let mut a = crate::sync::lock_anyway(&ALLOC);
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
    SLOTS[idx].provider.store(provider_word, Ordering::Release);
    SLOTS[idx].context.store(0, Ordering::Release);
    Ok(Reservation {
        idx,
        published: false,
    })
}

fn give_back(idx: usize) {
    let mut a = crate::sync::lock_anyway(&ALLOC);
    // idx < CAPACITY = 2^20, so it fits in u32.
    a.free.push_back(idx as u32);
}

/// Makes `h` dead if it names a live `T`; later lookups fail. Returns false
/// if it was not live (already retired, or another type): exactly one of
/// several racing retirements wins. The table's reference to the object is
/// released now if no lookup holds it, else by the last one to leave. The
/// slot keeps its provider word, so a stale handle still dispatches to us
/// and gets `DAT_INVALID_HANDLE`.
pub fn retire<T: Kind>(h: Handle) -> bool {
    let Some(slot) = slot_of(h.addr()) else {
        return false;
    };
    let mut word = slot.object.load(Ordering::SeqCst);
    loop {
        if word & (TAG_MASK | GONE) != T::TYPE.tag() {
            return false;
        }
        match slot
            .object
            .compare_exchange(word, word | GONE, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => break,
            Err(now) => word = now,
        }
    }
    let old = slot.readers.fetch_or(RETIRED, Ordering::SeqCst);
    if old & COUNT_MASK == 0 {
        slot.release_retired();
    }
    true
}

/// The provider word of one of our slots (for tests and diagnostics).
pub fn provider_word(addr: usize) -> Option<usize> {
    slot_of(addr).map(|s| s.provider.load(Ordering::Acquire))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(16))]
    struct Thing(u32);
    impl Kind for Thing {
        const TYPE: HandleType = HandleType::Pz;
    }
    #[repr(align(16))]
    struct Other;
    impl Kind for Other {
        const TYPE: HandleType = HandleType::Cno;
    }

    #[test]
    fn slots_are_64_bytes_and_aligned() {
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(arena_base() % 64, 0);
    }

    #[test]
    fn foreign_and_misaligned_addresses_are_not_ours() {
        assert!(!is_ours(0));
        assert!(!is_ours(0x1000));
        assert!(!is_ours(arena_base() + 8));
        assert!(is_ours(arena_base()));
        assert!(!is_ours(arena_base() + CAPACITY * 64));
        assert!(!is_ours(arena_base() + 32));
        assert!(type_of(arena_base() + 8).is_none());
        assert!(get::<Thing>(arena_base() + 16).is_none());
    }

    #[test]
    fn reservation_dropped_is_not_live() {
        let r = reserve(0x1234).expect("slot");
        let h = r.handle();
        assert_eq!(provider_word(h.addr()), Some(0x1234));
        drop(r);
        assert!(type_of(h.addr()).is_none());
        assert!(context(h.addr()).is_none());
        assert!(!set_context(h.addr(), 5));
    }

    #[test]
    fn publish_lookup_retire() {
        let obj = Arc::new(Thing(7));
        let h = reserve(1).expect("slot").publish(obj.clone());
        assert_eq!(type_of(h.addr()), Some(HandleType::Pz));
        assert_eq!(get::<Thing>(h.addr()).map(|r| r.0), Some(7));
        assert!(get::<Other>(h.addr()).is_none(), "wrong type");
        assert!(set_context(h.addr(), 99));
        assert_eq!(context(h.addr()), Some(99));
        let kept = get::<Thing>(h.addr()).expect("live").arc();
        assert!(!retire::<Other>(h), "wrong type cannot retire");
        assert!(retire::<Thing>(h));
        assert!(!retire::<Thing>(h), "second retire loses");
        assert!(get::<Thing>(h.addr()).is_none());
        assert!(context(h.addr()).is_none());
        assert_eq!(kept.0, 7);
        assert_eq!(provider_word(h.addr()), Some(1));
    }

    #[test]
    fn racing_retirements_have_one_winner() {
        for _ in 0..200 {
            let h = reserve(1).expect("slot").publish(Arc::new(Thing(1)));
            let wins: usize = std::thread::scope(|s| {
                let a = s.spawn(|| usize::from(retire::<Thing>(h)));
                let b = s.spawn(|| usize::from(retire::<Thing>(h)));
                a.join().unwrap_or(0) + b.join().unwrap_or(0)
            });
            assert_eq!(wins, 1);
        }
    }

    /// Counts its drops in a counter the test keeps.
    #[repr(align(16))]
    struct Counted(Arc<AtomicUsize>);
    impl Kind for Counted {
        const TYPE: HandleType = HandleType::Rsp;
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The table's reference goes at the retirement when nobody holds the
    /// object, else when the last lookup holding it lets go; exactly once.
    #[test]
    fn a_retired_object_is_released_by_its_last_reader() {
        let drops = Arc::new(AtomicUsize::new(0));
        let h = reserve(1)
            .expect("slot")
            .publish(Arc::new(Counted(drops.clone())));
        assert!(retire::<Counted>(h));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "nobody held it");

        let h = reserve(1)
            .expect("slot")
            .publish(Arc::new(Counted(drops.clone())));
        let a = get::<Counted>(h.addr()).expect("live");
        let b = get::<Counted>(h.addr()).expect("live");
        assert!(retire::<Counted>(h));
        assert!(get::<Counted>(h.addr()).is_none(), "retired");
        assert!(type_of(h.addr()).is_none() && context(h.addr()).is_none());
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "still held");
        assert!(Arc::ptr_eq(&b.0, &drops));
        drop(b);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2,
            "the last reader released it"
        );
        assert!(!retire::<Counted>(h));
        assert!(get::<Counted>(h.addr()).is_none());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    /// Readers and a retirement racing: the object is released exactly
    /// once, and never while a reader holds it.
    #[test]
    fn racing_readers_never_see_a_released_object() {
        for _ in 0..200 {
            let drops = Arc::new(AtomicUsize::new(0));
            let h = reserve(1)
                .expect("slot")
                .publish(Arc::new(Counted(drops.clone())));
            std::thread::scope(|s| {
                for _ in 0..3 {
                    let drops = drops.clone();
                    s.spawn(move || {
                        for _ in 0..500 {
                            if let Some(r) = get::<Counted>(h.addr()) {
                                assert_eq!(drops.load(Ordering::SeqCst), 0);
                                assert!(Arc::ptr_eq(&r.0, &drops));
                            }
                        }
                    });
                }
                retire::<Counted>(h);
            });
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn lookups_racing_a_retirement_see_live_memory() {
        for _ in 0..100 {
            let h = reserve(1).expect("slot").publish(Arc::new(Thing(42)));
            std::thread::scope(|s| {
                let reader = s.spawn(|| {
                    let mut seen = 0u32;
                    for _ in 0..2000 {
                        if let Some(r) = get::<Thing>(h.addr()) {
                            assert_eq!(r.0, 42);
                            seen += 1;
                        }
                    }
                    seen
                });
                retire::<Thing>(h);
                let _ = reader.join();
            });
        }
    }
}
