//! Queue storage whose memory follows use: the rings behind send and
//! receive queues, completion queues and EVDs.
//!
//! A queue's full depth is reserved (address space) when the queue is
//! made, so that posting never allocates; but memory is written, and so
//! committed by the kernel, only as deep as the queue has ever been. A
//! [`SeqRing`] starts with 64 slots and doubles, moving its live entries,
//! when one more would not fit: a queue created with 65,535 entries that
//! never holds more than 100 costs 128 entries of memory. Growing moves at
//! most the live entries, once per doubling, and allocates nothing.

use std::collections::TryReserveError;
use std::ops::{Index, IndexMut};

/// Slots a ring starts with (or its depth, if smaller).
const FIRST: usize = 64;

/// Storage for entries addressed by ever-growing sequence numbers: entry
/// `seq` lives in slot `seq mod size`, where the size is a power of two
/// that grows as needed up to the depth rounded up to one.
#[derive(Debug)]
pub struct SeqRing<T> {
    /// `len` is the current size; the capacity is reserved for the largest.
    slots: Vec<T>,
    max: usize,
    fill: T,
}

impl<T: Copy> SeqRing<T> {
    /// Storage for `depth` live entries (at least one); `fill` is what an
    /// unused slot holds.
    pub fn new(depth: usize, fill: T) -> Result<SeqRing<T>, TryReserveError> {
        let max = depth.max(1).next_power_of_two();
        let mut slots = Vec::new();
        slots.try_reserve_exact(max)?;
        slots.resize(max.min(FIRST), fill);
        Ok(SeqRing { slots, max, fill })
    }

    fn at(&self, seq: u64) -> usize {
        (seq & (self.slots.len() as u64 - 1)) as usize
    }

    /// Makes entry `tail` fit beside the live entries `head..tail` (call
    /// before writing it). Never allocates; false if the ring is at its
    /// largest and full.
    #[inline]
    pub fn make_room(&mut self, head: u64, tail: u64) -> bool {
        if ((tail - head) as usize) < self.slots.len() {
            return true;
        }
        self.grow(head, tail)
    }

    #[cold]
    fn grow(&mut self, head: u64, tail: u64) -> bool {
        let live = tail - head;
        while live as usize >= self.slots.len() {
            let old = self.slots.len();
            if old == self.max {
                return false;
            }
            // Within the reserved capacity: no allocation.
            self.slots.resize(old * 2, self.fill);
            // Each live entry stays in its slot or moves to the same slot
            // of the new upper half, which nothing else uses.
            for seq in head..tail {
                let from = (seq & (old as u64 - 1)) as usize;
                let to = self.at(seq);
                if to != from {
                    self.slots[to] = self.slots[from];
                }
            }
        }
        true
    }

    /// Slots written so far (memory in use, in entries).
    #[cfg(test)]
    pub fn committed(&self) -> usize {
        self.slots.len()
    }
}

impl<T: Copy> Index<u64> for SeqRing<T> {
    type Output = T;
    fn index(&self, seq: u64) -> &T {
        &self.slots[self.at(seq)]
    }
}

impl<T: Copy> IndexMut<u64> for SeqRing<T> {
    fn index_mut(&mut self, seq: u64) -> &mut T {
        let i = self.at(seq);
        &mut self.slots[i]
    }
}

/// A bounded first-in first-out queue on a [`SeqRing`].
#[derive(Debug)]
pub struct Fifo<T> {
    ring: SeqRing<T>,
    head: u64,
    tail: u64,
    depth: usize,
}

impl<T: Copy> Fifo<T> {
    /// A queue of at most `depth` entries.
    pub fn new(depth: usize, fill: T) -> Result<Fifo<T>, TryReserveError> {
        Ok(Fifo {
            ring: SeqRing::new(depth, fill)?,
            head: 0,
            tail: 0,
            depth,
        })
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// The most it holds.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Queues `v`; false when full.
    pub fn push_back(&mut self, v: T) -> bool {
        if self.len() >= self.depth || !self.ring.make_room(self.head, self.tail) {
            return false;
        }
        self.ring[self.tail] = v;
        self.tail += 1;
        true
    }

    /// The oldest entry.
    pub fn front(&self) -> Option<&T> {
        (!self.is_empty()).then(|| &self.ring[self.head])
    }

    /// Removes the oldest entry.
    pub fn pop_front(&mut self) -> Option<T> {
        let v = *self.front()?;
        self.head += 1;
        Some(v)
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.head = self.tail;
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (self.head..self.tail).map(move |s| &self.ring[s])
    }

    /// Changes the depth: in place when the storage reserved at creation
    /// allows it, else into new storage (allocates: not for a data path).
    /// Fails if fewer than the queued entries would fit.
    pub fn resize(&mut self, depth: usize) -> Result<(), ResizeError> {
        if depth < self.len() {
            return Err(ResizeError::TooSmall);
        }
        if depth.max(1).next_power_of_two() <= self.ring.max {
            self.depth = depth;
            return Ok(());
        }
        let mut ring = SeqRing::new(depth, self.ring.fill).map_err(|_| ResizeError::Memory)?;
        let mut tail = 0;
        for s in self.head..self.tail {
            ring.make_room(0, tail);
            ring[tail] = self.ring[s];
            tail += 1;
        }
        *self = Fifo {
            ring,
            head: 0,
            tail,
            depth,
        };
        Ok(())
    }

    /// Entries' memory in use.
    #[cfg(test)]
    pub fn committed(&self) -> usize {
        self.ring.committed()
    }
}

/// Why [`Fifo::resize`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeError {
    /// More entries are queued than the new depth holds.
    TooSmall,
    /// No memory for the larger storage.
    Memory,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deep_ring_writes_only_as_deep_as_it_was_used() {
        let mut f = Fifo::new(65_535, 0u64).expect("ring");
        assert_eq!(f.committed(), 64);
        // A steady stream with at most 100 queued, a million times over.
        let (mut next, mut want) = (0u64, 0u64);
        for _ in 0..10_000 {
            while f.len() < 100 {
                assert!(f.push_back(next));
                next += 1;
            }
            while f.len() > 37 {
                assert_eq!(f.pop_front(), Some(want));
                want += 1;
            }
        }
        assert_eq!(f.committed(), 128, "the high-water mark, rounded up");
        // Filled to its depth: every slot, in order.
        while f.len() < 65_535 {
            assert!(f.push_back(next));
            next += 1;
        }
        assert!(!f.push_back(next), "full at its depth");
        assert_eq!(f.committed(), 65_536);
        while let Some(v) = f.pop_front() {
            assert_eq!(v, want);
            want += 1;
        }
        assert_eq!(want, next);
    }

    #[test]
    fn growing_keeps_the_order_at_any_offset() {
        for start in [0u64, 1, 63, 64, 65, 1_000_003] {
            let mut r = SeqRing::new(1_000, u64::MAX).expect("ring");
            let head = start;
            for (k, seq) in (head..head + 900).enumerate() {
                assert!(r.make_room(head, seq), "{start} {k}");
                r[seq] = seq;
            }
            for seq in head..head + 900 {
                assert_eq!(r[seq], seq, "start {start}");
            }
            assert_eq!(r.committed(), 1024);
            assert!(!r.make_room(head, head + 1024), "at its largest and full");
        }
    }

    #[test]
    fn resize_in_place_or_into_new_storage() {
        let mut f = Fifo::new(10, 0u32).expect("ring");
        for v in 0..10 {
            assert!(f.push_back(v));
        }
        assert_eq!(f.resize(9), Err(ResizeError::TooSmall));
        f.resize(16).expect("in place");
        assert!(f.push_back(10));
        f.resize(1000).expect("new storage");
        assert!(f.push_back(11));
        assert_eq!(
            f.iter().copied().collect::<Vec<_>>(),
            (0..12).collect::<Vec<_>>()
        );
        assert_eq!(f.depth(), 1000);
    }
}
