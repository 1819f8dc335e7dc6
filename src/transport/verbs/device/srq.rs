//! A verbs shared receive queue.

use std::sync::Arc;

use super::qp::{checked_sge_list, post_result, recv_sge_count, Sges};
use super::VerbsDevice;
use crate::transport::api::*;
use crate::transport::verbs::ring::Ring;
use crate::transport::verbs::sys::*;
use crate::transport::verbs::{Ptr, MAX_SGE};

pub struct VerbsSrq {
    dev: Arc<VerbsDevice>,
    pd: PdId,
    pub(super) srq: Ptr<ibv_srq>,
    ring: Arc<Ring>,
}

// SAFETY: an rdma-core object usable from any thread.
unsafe impl Send for VerbsSrq {}
unsafe impl Sync for VerbsSrq {}

/// The least depth of an SRQ on a device that cannot resize SRQs (as for
/// CQs, cq.rs).
const UNRESIZABLE_SRQ_DEPTH: u32 = 4096;

impl VerbsSrq {
    pub(super) fn create(
        dev: Arc<VerbsDevice>,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<Arc<dyn SharedReceiveQueue>, DeviceError> {
        let caps = *dev.capabilities();
        let pd_id = pd;
        let pd = dev.pd(pd).ok_or(DeviceError::NotFound)?;
        // SAFETY: all-zero is a valid init attr; `pd` is live.
        let (srq, actual) = unsafe {
            let mut a: ibv_srq_init_attr = std::mem::zeroed();
            // The DAT layer keeps the SRQ's limit itself and grows the
            // device's SRQ only when asked for more: where the device
            // cannot grow one (siw), it is made deep from the start.
            let floor = if dev.srq_resizable {
                1
            } else {
                UNRESIZABLE_SRQ_DEPTH
            };
            a.attr.max_wr = depth.max(floor).clamp(1, caps.max_srq_wr.max(1));
            a.attr.max_sge = max_sge.clamp(1, caps.max_sge.max(1));
            let srq = (dev.lib.ibv_create_srq)(pd, &mut a);
            if srq.is_null() {
                return Err(DeviceError::Resources);
            }
            (srq, a.attr.max_wr)
        };
        let ring = Arc::new(Ring::new(
            (dev.next_id() & 0x7fff_ffff) as u32,
            actual,
            false,
        ));
        dev.add_ring(ring.clone());
        let me = Arc::new(VerbsSrq {
            dev: dev.clone(),
            pd: pd_id,
            srq: Ptr(srq),
            ring,
        });
        crate::sync::lock_anyway(&dev.srq_ptrs).insert(Arc::as_ptr(&me) as usize, Ptr(srq));
        Ok(me)
    }
}

impl SharedReceiveQueue for VerbsSrq {
    fn post_recv(&self, wr: &RecvWr<'_>) -> Result<(), PostError> {
        if wr.sgl.len() > MAX_SGE {
            return Err(PostError::TooManySge);
        }
        let mut sges = Sges::new();
        let total = checked_sge_list(&self.dev, wr.sgl, Access::LOCAL_WRITE, self.pd, &mut sges)?;
        let n = recv_sge_count(wr.sgl, self.dev.iwarp, &mut sges);
        self.ring
            .post(wr.wr_id, wr.ctx, total, WcOp::Recv, true, |wr_id| {
                // SAFETY: all-zero is a valid work request; it points at the
                // stack's sge array for the call; the op is the device's.
                unsafe {
                    let mut w: ibv_recv_wr = std::mem::zeroed();
                    w.wr_id = wr_id;
                    w.sg_list = sges.as_mut_ptr();
                    w.num_sge = n as i32;
                    let mut bad = std::ptr::null_mut();
                    let rc = match (*(*self.srq.0).context).ops.post_srq_recv {
                        Some(f) => f(self.srq.0, &mut w, &mut bad),
                        None => libc::ENOSYS,
                    };
                    post_result(rc)
                }
            })
            .unwrap_or(Err(PostError::QueueFull))
    }

    fn outstanding(&self) -> u32 {
        self.ring.outstanding()
    }

    fn depth(&self) -> u32 {
        self.ring.depth()
    }

    fn resize(&self, depth: u32) -> Result<(), DeviceError> {
        if depth <= self.ring.depth() {
            return Ok(());
        }
        // SAFETY: all-zero is a valid attr; a live SRQ.
        let rc = unsafe {
            let mut a: ibv_srq_attr = std::mem::zeroed();
            a.max_wr = depth;
            (self.dev.lib.ibv_modify_srq)(self.srq.0, &mut a, IBV_SRQ_MAX_WR as i32)
        };
        if rc != 0 {
            return Err(DeviceError::Resources);
        }
        self.ring.grow(depth);
        Ok(())
    }
}

impl Drop for VerbsSrq {
    fn drop(&mut self) {
        crate::sync::lock_anyway(&self.dev.srq_ptrs).remove(&(self as *const VerbsSrq as usize));
        self.dev.remove_ring(self.ring.id);
        // SAFETY: no queue pair uses it any more (each holds it alive).
        unsafe {
            (self.dev.lib.ibv_destroy_srq)(self.srq.0);
        }
    }
}
