//! The work requests a queue has outstanding, by slot: a work request is
//! posted with its slot as the verbs work request id, and its completion
//! finds there what verbs does not say (the consumer's cookie, the length
//! of a send, the operation of a flushed request).
//!
//! A verbs work request id is `ring id << 32 | slot`; the device keeps its
//! rings by id (lock-free lookup on the poll path).

use std::sync::Mutex;

use crate::sync::lock_anyway;
use crate::transport::api::WcOp;

#[derive(Clone, Copy)]
struct Slot {
    cookie: u64,
    len: u64,
    op: WcOp,
}

pub(super) struct Ring {
    pub id: u32,
    inner: Mutex<Inner>,
}

struct Inner {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

/// What a completion's slot held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Done {
    pub cookie: u64,
    pub len: u64,
    pub op: WcOp,
}

impl Ring {
    /// A ring of `depth` slots (allocated here, never on the post path).
    pub fn new(id: u32, depth: u32) -> Ring {
        let depth = depth.max(1);
        Ring {
            id,
            inner: Mutex::new(Inner {
                slots: vec![
                    Slot {
                        cookie: 0,
                        len: 0,
                        op: WcOp::Send,
                    };
                    depth as usize
                ],
                free: (0..depth).rev().collect(),
            }),
        }
    }

    /// The verbs work request id of `slot`.
    pub fn wr_id(&self, slot: u32) -> u64 {
        u64::from(self.id) << 32 | u64::from(slot)
    }

    /// Takes a slot for a work request and runs `post` with its verbs id,
    /// under the ring's lock (so posts keep their order); the slot is
    /// given back if `post` fails. `None`: no free slot.
    pub fn post<E>(
        &self,
        cookie: u64,
        len: u64,
        op: WcOp,
        post: impl FnOnce(u64) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        let mut g = lock_anyway(&self.inner);
        let slot = g.free.pop()?;
        g.slots[slot as usize] = Slot { cookie, len, op };
        let r = post(self.wr_id(slot));
        if r.is_err() {
            g.free.push(slot);
        }
        Some(r)
    }

    /// The completion of the work request in `slot` (from its verbs id):
    /// frees the slot.
    pub fn complete(&self, wr_id: u64) -> Option<Done> {
        let slot = (wr_id & 0xffff_ffff) as u32;
        let mut g = lock_anyway(&self.inner);
        let s = *g.slots.get(slot as usize)?;
        g.free.push(slot);
        Some(Done {
            cookie: s.cookie,
            len: s.len,
            op: s.op,
        })
    }

    /// Work requests outstanding.
    pub fn outstanding(&self) -> u32 {
        let g = lock_anyway(&self.inner);
        (g.slots.len() - g.free.len()) as u32
    }

    pub fn depth(&self) -> u32 {
        lock_anyway(&self.inner).slots.len() as u32
    }

    /// Grows to `depth` slots (never shrinks: slots in use stay put).
    pub fn grow(&self, depth: u32) {
        let mut g = lock_anyway(&self.inner);
        let old = g.slots.len() as u32;
        if depth > old {
            g.slots.resize(
                depth as usize,
                Slot {
                    cookie: 0,
                    len: 0,
                    op: WcOp::Send,
                },
            );
            g.free.extend((old..depth).rev());
        }
    }

    /// Forgets every outstanding request (the queue was reset).
    #[cfg(test)]
    pub fn clear(&self) {
        let mut g = lock_anyway(&self.inner);
        let n = g.slots.len() as u32;
        g.free = (0..n).rev().collect();
    }
}

/// The ring id of a verbs work request id.
pub(super) fn ring_of(wr_id: u64) -> u32 {
    (wr_id >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_carry_cookie_length_and_op_and_come_back() {
        let r = Ring::new(7, 2);
        let mut ids = Vec::new();
        for c in [10u64, 11] {
            assert!(r
                .post(c, c * 100, WcOp::RdmaRead, |id| {
                    ids.push(id);
                    Ok::<_, ()>(())
                })
                .is_some());
        }
        assert!(r.post(12, 0, WcOp::Send, |_| Ok::<_, ()>(())).is_none());
        assert_eq!(r.outstanding(), 2);
        assert_eq!(ring_of(ids[1]), 7);
        assert_eq!(
            r.complete(ids[1]),
            Some(Done {
                cookie: 11,
                len: 1100,
                op: WcOp::RdmaRead
            })
        );
        assert_eq!(r.post(13, 0, WcOp::Send, |_| Err(())), Some(Err(())));
        assert_eq!(r.outstanding(), 1);
        r.grow(4);
        assert_eq!((r.depth(), r.outstanding()), (4, 1));
        r.clear();
        assert_eq!(r.outstanding(), 0);
    }
}
