//! The shared receive queue: one ring of receives its queue pairs'
//! connections take from.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use super::state::{DeviceShared, IwarpQp};
use crate::sync::lock_anyway as lock;
use crate::transport::api::{DeviceError, PostError, RecvWr, SharedReceiveQueue};
use crate::transport::iwarp::conn::{RecvRing, RqEntry, SharedRecv};

/// A shared receive queue of an [`IwarpDevice`](super::IwarpDevice): one ring of receives that
/// the connections of its queue pairs take from, oldest first.
pub struct IwarpSrq {
    pub(super) dev: Weak<DeviceShared>,
    pub(super) pd: u64,
    pub(super) max_sge: u32,
    pub(super) ring: Mutex<RecvRing>,
    /// Queue pairs using it (to retry a Send that found it empty).
    pub(super) qps: Mutex<Vec<Weak<IwarpQp>>>,
}

impl std::fmt::Debug for IwarpSrq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IwarpSrq").field("pd", &self.pd).finish()
    }
}

impl SharedRecv for IwarpSrq {
    fn take(&self) -> Option<RqEntry> {
        lock(&self.ring).pop()
    }
}

impl SharedReceiveQueue for IwarpSrq {
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        let dev = self.dev.upgrade().ok_or(PostError::State)?;
        let e = RqEntry::check(wr, self.max_sge as usize, self.pd, &dev.keys)?;
        if !lock(&self.ring).push(e) {
            return Err(PostError::QueueFull);
        }
        // A Send that found the queue empty is waiting: let it land now
        // (rare: the common post neither collects nor allocates).
        let any_waiting = lock(&self.qps)
            .iter()
            .filter_map(Weak::upgrade)
            .any(|q| q.rnr_waiting.load(Ordering::Acquire));
        if !any_waiting {
            return Ok(());
        }
        let waiting: Vec<Arc<IwarpQp>> = lock(&self.qps)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|q| q.rnr_waiting.load(Ordering::Acquire))
            .collect();
        for q in waiting {
            q.run(q.hold(), true);
        }
        Ok(())
    }

    fn outstanding(&self) -> u32 {
        lock(&self.ring).len() as u32
    }

    fn depth(&self) -> u32 {
        lock(&self.ring).capacity() as u32
    }

    fn resize(&self, depth: u32) -> Result<(), DeviceError> {
        let dev = self.dev.upgrade().ok_or(DeviceError::NotFound)?;
        if depth == 0 || depth > dev.caps.max_srq_wr {
            return Err(DeviceError::Invalid);
        }
        if lock(&self.ring).resize(depth as usize) {
            Ok(())
        } else {
            Err(DeviceError::Invalid)
        }
    }
}
