//! Connection management over rdma_cm: listeners, accepting and rejecting
//! requests, and what each rdma_cm event means for a queue pair or a
//! listener (handed on from the device's event thread).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use super::qp::QpInner;
use super::VerbsDevice;
use super::{Owner, Request};
use crate::sync::lock_anyway;
use crate::transport::api::*;
use crate::transport::verbs::sys::*;
use crate::transport::verbs::{sockaddr_of, socket_addr_at, Ptr};

/// An rdma_cm event, copied out of rdma_cm's buffer.
pub(super) struct Cm {
    pub token: u64,
    pub kind: rdma_cm_event_type,
    pub status: i32,
    id: Ptr<rdma_cm_id>,
    private_data: Vec<u8>,
    initiator_depth: u8,
    responder_resources: u8,
    remote: Option<SocketAddr>,
    local: Option<SocketAddr>,
}

impl Cm {
    /// Copies what the handlers need of `ev`.
    ///
    /// # Safety
    /// `ev` is an event rdma_get_cm_event returned, not acknowledged yet.
    pub(super) unsafe fn copy(ev: &rdma_cm_event) -> Cm {
        // SAFETY: per the contract, the event, its id and its private
        // data are valid until acknowledged.
        unsafe {
            let conn = ev.param.conn;
            let private_data = if conn.private_data.is_null() || conn.private_data_len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    conn.private_data.cast::<u8>(),
                    usize::from(conn.private_data_len),
                )
                .to_vec()
            };
            let id = ev.id;
            let route = std::ptr::addr_of!((*id).route.addr);
            Cm {
                token: (*id).context as u64,
                kind: ev.event,
                status: ev.status,
                id: Ptr(id),
                private_data,
                initiator_depth: conn.initiator_depth,
                responder_resources: conn.responder_resources,
                remote: socket_addr_at(std::ptr::addr_of!((*route).__bindgen_anon_2.dst_addr)),
                local: socket_addr_at(std::ptr::addr_of!((*route).__bindgen_anon_1.src_addr)),
            }
        }
    }
}

/// A listening rdma_cm id.
pub struct ListenerInner {
    dev: Arc<VerbsDevice>,
    id: Mutex<Option<Ptr<rdma_cm_id>>>,
    port: u16,
    token: u64,
    cm: Arc<dyn CmHandler>,
}

// SAFETY: rdma_cm ids may be used from any thread; state behind a lock.
unsafe impl Send for ListenerInner {}
unsafe impl Sync for ListenerInner {}

pub struct VerbsListener(Arc<ListenerInner>);

impl VerbsListener {
    pub(super) fn create(
        dev: Arc<VerbsDevice>,
        port: u16,
        cm: Arc<dyn CmHandler>,
    ) -> Result<Arc<dyn Listener>, DeviceError> {
        let lib = dev.lib;
        let token = dev.next_id();
        let mut id = std::ptr::null_mut();
        // SAFETY: rdma_cm calls on the device's channel; results checked.
        unsafe {
            if (lib.rdma_create_id)(dev.channel.0, &mut id, token as *mut _, RDMA_PS_TCP) != 0 {
                return Err(DeviceError::Resources);
            }
            let mut sa = sockaddr_of(SocketAddr::new(dev.address().ip(), port));
            if (lib.rdma_bind_addr)(id, sa.as_mut_ptr()) != 0 {
                let e = std::io::Error::last_os_error();
                (lib.rdma_destroy_id)(id);
                return Err(if e.raw_os_error() == Some(libc::EADDRINUSE) {
                    DeviceError::PortInUse
                } else {
                    DeviceError::Invalid
                });
            }
            if (lib.rdma_listen)(id, 128) != 0 {
                (lib.rdma_destroy_id)(id);
                return Err(DeviceError::Resources);
            }
        }
        // SAFETY: the bound id's source address.
        let bound = unsafe {
            socket_addr_at(std::ptr::addr_of!(
                (*id).route.addr.__bindgen_anon_1.src_addr
            ))
        };
        let inner = Arc::new(ListenerInner {
            port: bound.map_or(port, |a| a.port()),
            dev: dev.clone(),
            id: Mutex::new(Some(Ptr(id))),
            token,
            cm,
        });
        dev.events
            .set_owner(token, Owner::Listener(Arc::downgrade(&inner)));
        Ok(Arc::new(VerbsListener(inner)))
    }
}

impl ListenerInner {
    fn close(&self) {
        self.dev.events.remove_owner(self.token);
        if let Some(id) = lock_anyway(&self.id).take() {
            // SAFETY: the listening id, out of the listener; its events
            // are acknowledged.
            unsafe {
                (self.dev.lib.rdma_destroy_id)(id.0);
            }
        }
    }
}

impl Drop for ListenerInner {
    fn drop(&mut self) {
        self.close();
    }
}

impl Listener for VerbsListener {
    fn port(&self) -> u16 {
        self.0.port
    }

    fn reject(&self, request: u64, private_data: &[u8]) -> Result<(), DeviceError> {
        let dev = &self.0.dev;
        let r = lock_anyway(&dev.events.requests)
            .remove(&request)
            .ok_or(DeviceError::NotFound)?;
        let len = private_data.len().min(255) as u8;
        // SAFETY: the request's id (out of the table); rejecting then
        // destroying it is what rdma_cm expects of a refused request.
        unsafe {
            (dev.lib.rdma_reject)(r.id.0, private_data.as_ptr().cast(), len);
            (dev.lib.rdma_destroy_id)(r.id.0);
        }
        Ok(())
    }

    fn close(&self) {
        self.0.close();
    }
}

/// Accepts `request` on the queue pair numbered `qp`.
pub(super) fn accept(
    dev: &Arc<VerbsDevice>,
    request: u64,
    qp: u32,
    private_data: &[u8],
) -> Result<(), DeviceError> {
    let q = dev.events.qp(qp).ok_or(DeviceError::NotFound)?;
    if q.state() != QpState::Idle {
        return Err(DeviceError::State);
    }
    let r = lock_anyway(&dev.events.requests)
        .remove(&request)
        .ok_or(DeviceError::NotFound)?;
    let id = r.id.0;
    // SAFETY: the request's id; from now on its events name the queue pair.
    unsafe {
        (*id).context = q.token as *mut _;
    }
    q.set_id(Some(id));
    q.set_state(QpState::Connecting);
    let fail = |e: DeviceError| {
        q.set_id(None);
        q.set_state(QpState::Idle);
        // SAFETY: the id is out of the queue pair again.
        unsafe {
            (dev.lib.rdma_reject)(id, std::ptr::null(), 0);
            (dev.lib.rdma_destroy_id)(id);
        }
        Err(e)
    };
    if let Err(e) = q.to_rts(id) {
        return fail(e);
    }
    // A connection request's values are the passive side's (rdma_cm
    // turns them around): its responder resources are the peer's
    // initiator depth, its initiator depth the peer's responder
    // resources. They were taken the other way, which only showed with
    // unequal sides: a client reading with max_rdma_read_out 1 from a
    // server with max_rdma_read_in 1 got an initiator depth of 0 on
    // InfiniBand/RoCE, and its RDMA Read never left (EGS_03, EDI_05).
    let ird = q.ird().min(r.responder_resources);
    let ord = q.ord().min(r.initiator_depth);
    let mut p = q.conn_param(private_data, ird, ord);
    // SAFETY: the parameters point at `private_data` for the call.
    if unsafe { (dev.lib.rdma_accept)(id, &mut p) } != 0 {
        return fail(DeviceError::State);
    }
    Ok(())
}

/// Hands an rdma_cm event on to whom its id belongs.
pub(super) fn dispatch(dev: &Arc<VerbsDevice>, owner: Option<Owner>, ev: Cm) {
    match owner {
        Some(Owner::Listener(l)) => {
            if let Some(l) = l.upgrade() {
                listener_event(dev, &l, ev);
            } else if ev.kind == RDMA_CM_EVENT_CONNECT_REQUEST {
                refuse(dev, ev.id.0);
            }
        }
        Some(Owner::Qp(q)) => {
            if let Some(q) = q.upgrade() {
                qp_event(&q, ev);
            }
        }
        None if ev.kind == RDMA_CM_EVENT_CONNECT_REQUEST => refuse(dev, ev.id.0),
        None => {}
    }
}

fn refuse(dev: &VerbsDevice, id: *mut rdma_cm_id) {
    // SAFETY: a new request's id nobody owns.
    unsafe {
        (dev.lib.rdma_reject)(id, std::ptr::null(), 0);
        (dev.lib.rdma_destroy_id)(id);
    }
}

fn listener_event(dev: &Arc<VerbsDevice>, l: &ListenerInner, ev: Cm) {
    if ev.kind != RDMA_CM_EVENT_CONNECT_REQUEST {
        return;
    }
    let request = dev.next_id();
    let id = ev.id.0;
    // SAFETY: the request's new id: its events name the request from now.
    unsafe {
        (*id).context = request as *mut _;
    }
    lock_anyway(&dev.events.requests).insert(
        request,
        Request {
            id: ev.id,
            initiator_depth: ev.initiator_depth,
            responder_resources: ev.responder_resources,
        },
    );
    let unspecified = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0);
    l.cm.event(
        None,
        CmEvent::ConnectRequest {
            request,
            remote: ev.remote.unwrap_or(unspecified),
            local: ev.local.unwrap_or(unspecified),
            port: l.port,
            private_data: &ev.private_data,
        },
    );
}

fn qp_event(q: &Arc<QpInner>, ev: Cm) {
    let lib = q.dev.lib;
    let num = Some(q.num());
    let id = ev.id.0;
    if q.id() != Some(id) {
        return; // an earlier connection's id
    }
    let failed = |q: &QpInner, e: CmEvent<'_>| {
        let was = q.state();
        q.to_error();
        q.set_state(QpState::Closed);
        if was == QpState::Connected {
            // Already reported established (InfiniBand, active side: the
            // REP came and our RTU went, but the passive side, which
            // aborted before the RTU reached it, answers with a REJ): the
            // connection is lost, not refused (EDI_10, 4 runs in 12).
            q.cm.event(num, CmEvent::Broken);
        } else {
            q.cm.event(num, e);
        }
    };
    match ev.kind {
        RDMA_CM_EVENT_ADDR_RESOLVED => {
            let ms = q.connect_timeout();
            // SAFETY: the connection's live id.
            if unsafe { (lib.rdma_resolve_route)(id, ms) } != 0 {
                failed(q, CmEvent::Unreachable);
            }
        }
        RDMA_CM_EVENT_ROUTE_RESOLVED => {
            let Some((pd, _)) = q.take_connecting() else {
                return;
            };
            let mut p = q.conn_param(&pd, q.ird(), q.ord());
            // SAFETY: the parameters point at `pd` for the call.
            if unsafe { (lib.rdma_connect)(id, &mut p) } != 0 {
                // iWARP connects its TCP connection in the call: a port
                // nobody listens on refuses it there.
                let e = if crate::transport::verbs::errno().raw_os_error()
                    == Some(libc::ECONNREFUSED)
                {
                    CmEvent::Refused
                } else {
                    CmEvent::Unreachable
                };
                failed(q, e);
            }
        }
        RDMA_CM_EVENT_CONNECT_RESPONSE => {
            // InfiniBand/RoCE, active side: the queue pair is ours to move.
            // SAFETY: the connection's live id.
            if q.to_rts(id).is_err() || unsafe { (lib.rdma_establish)(id) } != 0 {
                // SAFETY: as above.
                unsafe {
                    (lib.rdma_reject)(id, std::ptr::null(), 0);
                }
                failed(q, CmEvent::Broken);
                return;
            }
            q.set_state(QpState::Connected);
            q.cm.event(
                num,
                CmEvent::Established {
                    private_data: &ev.private_data,
                },
            );
        }
        RDMA_CM_EVENT_ESTABLISHED => {
            q.set_state(QpState::Connected);
            q.cm.event(
                num,
                CmEvent::Established {
                    private_data: &ev.private_data,
                },
            );
        }
        RDMA_CM_EVENT_ADDR_ERROR | RDMA_CM_EVENT_ROUTE_ERROR => failed(q, CmEvent::Unreachable),
        RDMA_CM_EVENT_UNREACHABLE => {
            let e = if ev.status == -libc::ETIMEDOUT {
                CmEvent::TimedOut
            } else {
                CmEvent::Unreachable
            };
            failed(q, e)
        }
        RDMA_CM_EVENT_REJECTED => {
            // Nobody listens: InfiniBand's CM rejects with reason 8
            // (invalid service id); on iWARP the TCP connection is refused
            // (ECONNREFUSED). A consumer's rejection is IB reason 28, or
            // on iWARP an MPA reject, which rdma_cm reports as ECONNRESET.
            let refused =
                !q.dev.iwarp && ev.status == 8 || q.dev.iwarp && ev.status == -libc::ECONNREFUSED;
            if refused {
                failed(q, CmEvent::Refused)
            } else {
                failed(
                    q,
                    CmEvent::Rejected {
                        private_data: &ev.private_data,
                    },
                )
            }
        }
        RDMA_CM_EVENT_CONNECT_ERROR => {
            let passive = q.take_connecting().is_none() && q.state() == QpState::Connecting;
            failed(
                q,
                if passive {
                    CmEvent::AcceptFailed
                } else {
                    CmEvent::Unreachable
                },
            )
        }
        RDMA_CM_EVENT_DISCONNECTED => {
            let was = q.state();
            if was == QpState::Connected {
                // The peer disconnected: answering completes its
                // disconnect (an InfiniBand DREP) at once, instead of
                // when its request times out.
                // SAFETY: the connection's live id.
                unsafe {
                    (lib.rdma_disconnect)(id);
                }
            }
            q.to_error();
            q.set_state(QpState::Closed);
            if was != QpState::Closed {
                q.cm.event(num, CmEvent::Disconnected);
            }
        }
        RDMA_CM_EVENT_DEVICE_REMOVAL => q.broke(),
        _ => {}
    }
}
