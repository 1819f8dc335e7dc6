//! The engine's queues: send-queue slots (retired in posting order), the
//! receive ring or a shared receive queue, and the outbound- and
//! inbound-read tables.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// Not (fully) transmitted yet.
    Queued,
    /// Transmitted; waiting for an acknowledgement or a response.
    Sent,
    /// Finished; retires when every older request has.
    Done(WcStatus),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct SqEntry {
    pub(super) wr_id: u64,
    pub(super) ctx: u64,
    pub(super) op: SendOp,
    pub(super) sges: [Sge; MAX_SGE],
    pub(super) nsge: usize,
    pub(super) len: u64,
    pub(super) signaled: bool,
    pub(super) fence: bool,
    /// Bytes planned so far.
    pub(super) off: u64,
    /// Send MSN (queue 0) or Read Request MSN (queue 1), once sent.
    pub(super) msn: u32,
    pub(super) state: Slot,
    /// A memory-window bind: nothing to transmit.
    pub(super) bind: bool,
}

pub(super) const NO_SGE: Sge = Sge {
    addr: 0,
    len: 0,
    lkey: 0,
};

impl SqEntry {
    pub(super) const EMPTY: SqEntry = SqEntry {
        wr_id: 0,
        ctx: 0,
        op: SendOp::Send { solicited: false },
        sges: [NO_SGE; MAX_SGE],
        nsge: 0,
        len: 0,
        signaled: false,
        fence: false,
        off: 0,
        msn: 0,
        state: Slot::Queued,
        bind: false,
    };

    pub(super) fn wc_op(&self) -> WcOp {
        if self.bind {
            return WcOp::Bind;
        }
        match self.op {
            SendOp::Send { .. } => WcOp::Send,
            SendOp::RdmaWrite { .. } => WcOp::RdmaWrite,
            SendOp::RdmaRead { .. } => WcOp::RdmaRead,
        }
    }
}

/// Bytes of a send-queue entry.
pub const SQ_ENTRY_BYTES: usize = std::mem::size_of::<SqEntry>();
/// Bytes of a receive-queue entry.
pub const RQ_ENTRY_BYTES: usize = std::mem::size_of::<RqEntry>();

/// A posted receive (checked, copied out of the consumer's list).
#[derive(Clone, Copy, Debug)]
pub struct RqEntry {
    pub(super) wr_id: u64,
    pub(super) ctx: u64,
    pub(super) sges: [Sge; MAX_SGE],
    pub(super) nsge: usize,
    pub(super) len: u64,
}

impl RqEntry {
    /// Checks a receive's scatter list against `keys` (local write, zone
    /// `pz`) and copies it.
    pub fn check(
        wr: &RecvWr<'_>,
        max_sge: usize,
        pz: u64,
        keys: &KeyTable,
    ) -> Result<RqEntry, PostError> {
        if wr.sgl.len() > max_sge.min(MAX_SGE) {
            return Err(PostError::TooManySge);
        }
        let mut sges = [NO_SGE; MAX_SGE];
        let mut len = 0u64;
        for (k, s) in wr.sgl.iter().enumerate() {
            if s.len > 0 {
                keys.check_local(s.lkey, s.addr, s.len, Access::LOCAL_WRITE, Some(pz))
                    .map_err(PostError::Protection)?;
            }
            sges[k] = *s;
            len = len.checked_add(s.len).ok_or(PostError::Length)?;
        }
        if len > MAX_MSG {
            return Err(PostError::Length);
        }
        Ok(RqEntry {
            wr_id: wr.wr_id,
            ctx: wr.ctx,
            sges,
            nsge: wr.sgl.len(),
            len,
        })
    }

    /// The consumer's id of the receive.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// The poster's word ([`RecvWr::ctx`]).
    pub fn ctx(&self) -> u64 {
        self.ctx
    }

    /// The receive as a work request again (its copied scatter list).
    pub fn as_wr(&self) -> RecvWr<'_> {
        RecvWr {
            wr_id: self.wr_id,
            ctx: self.ctx,
            sgl: &self.sges[..self.nsge],
        }
    }
}

/// Where a connection on a shared receive queue takes its receives.
pub trait SharedRecv: Send + Sync + std::fmt::Debug {
    /// Removes and returns the oldest posted receive.
    fn take(&self) -> Option<RqEntry>;
}

/// A ring of posted receives, the oldest being filled: a queue pair's own
/// receive queue, and the inside of a shared one (memory follows use:
/// [`Fifo`]).
#[derive(Debug)]
pub struct RecvRing {
    pub(super) q: Fifo<RqEntry>,
}

pub(super) const NO_RECV: RqEntry = RqEntry {
    wr_id: 0,
    ctx: 0,
    sges: [NO_SGE; MAX_SGE],
    nsge: 0,
    len: 0,
};

impl RecvRing {
    /// A ring for `depth` receives (at least one).
    pub fn new(depth: usize) -> Result<RecvRing, TryReserveError> {
        Ok(RecvRing {
            q: Fifo::new(depth.max(1), NO_RECV)?,
        })
    }

    /// Receives queued.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// How many it holds.
    pub fn capacity(&self) -> usize {
        self.q.depth()
    }

    /// Changes how many it holds (`false` if the receives queued would
    /// not fit, or there is no memory).
    pub fn resize(&mut self, depth: usize) -> bool {
        self.q.resize(depth.max(1)).is_ok()
    }

    pub(super) fn front(&self) -> Option<&RqEntry> {
        self.q.front()
    }

    /// Queues a receive; false when full.
    pub fn push(&mut self, e: RqEntry) -> bool {
        self.q.push_back(e)
    }

    /// Removes the oldest receive.
    pub fn pop(&mut self) -> Option<RqEntry> {
        self.q.pop_front()
    }
}

/// An outbound Read Request awaiting its response.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OrdEntry {
    /// The consumer's read (send-queue sequence), `None` for an ack read.
    pub(super) seq: Option<u64>,
    /// Every Send/Write with a lower sequence is acknowledged by the response.
    pub(super) covers: u64,
    pub(super) size: u64,
    pub(super) got: u64,
    pub(super) stag: u32,
}

/// An inbound Read Request to answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct IrdEntry {
    pub(super) sink_stag: u32,
    pub(super) sink_to: u64,
    pub(super) source_to: u64,
    pub(super) size: u64,
    pub(super) sent: u64,
}

/// A small fixed ring.
#[derive(Debug)]
pub(super) struct Ring<T> {
    pub(super) slots: Box<[T]>,
    pub(super) head: usize,
    pub(super) len: usize,
}

impl<T: Copy + Default> Ring<T> {
    pub(super) fn new(cap: usize) -> Ring<T> {
        Ring {
            slots: vec![T::default(); cap.max(1)].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }
    pub(super) fn cap(&self) -> usize {
        self.slots.len()
    }
    pub(super) fn push(&mut self, v: T) -> bool {
        if self.len == self.cap() {
            return false;
        }
        let i = (self.head + self.len) % self.cap();
        self.slots[i] = v;
        self.len += 1;
        true
    }
    pub(super) fn front_mut(&mut self) -> Option<&mut T> {
        (self.len > 0).then(|| &mut self.slots[self.head])
    }
    pub(super) fn pop(&mut self) -> Option<T> {
        let v = *self.front_mut()?;
        self.head = (self.head + 1) % self.cap();
        self.len -= 1;
        Some(v)
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(move |i| &self.slots[(self.head + i) % self.cap()])
    }
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }
}
