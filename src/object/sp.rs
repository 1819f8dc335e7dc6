//! Service points (PSP, RSP) and connection requests (CR): the passive
//! side of connection setup (semantics-ep.md §2.2–2.6, §2.11).
//!
//! A service point owns a transport listener; a request becomes a CR and a
//! `DAT_CONNECTION_REQUEST_EVENT`, or, when it cannot be taken, a refusal
//! carrying [`NON_PEER_MARK`] (docs/endpoints.md).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::error::{DatError, Input, Result, Sub, Type};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::ep::{self, Ep, NON_PEER_MARK};
use crate::object::event::{self, Event, EventData};
use crate::object::ia::{self, Ia};
use crate::object::{lock_anyway, Evd, Object, EVD_CR_FLAG};
use crate::transport::api::{CmEvent, CmHandler, DeviceError, Listener, QpNum};
use crate::transport::SockAddrStorage;

/// `DAT_PSP_PROVIDER_FLAG`.
pub const PSP_PROVIDER: u32 = 1;

/// Which kind of service point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpKind {
    /// A PSP; `provider` when it creates an EP for each request.
    Psp { provider: bool },
    /// An RSP reserving one EP.
    Rsp,
}

/// `DAT_PSP_PARAM` / `DAT_RSP_PARAM` as the core sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpParams {
    pub ia: Handle,
    pub conn_qual: u64,
    pub evd: Handle,
    /// PSP flags (PSP only).
    pub flags: u32,
    /// The reserved EP (RSP only).
    pub ep: Handle,
}

struct SpState {
    listener: Option<Arc<dyn Listener>>,
    /// RSP: the EP, until its one request arrived.
    ep: Option<Arc<Ep>>,
    used: bool,
    freed: bool,
}

/// A PSP or an RSP.
pub struct Sp {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    pub kind: SpKind,
    /// Known once listening (`dat_psp_create_any` picks it).
    conn_qual: AtomicU64,
    pub evd: Arc<Evd>,
    /// The EP an RSP reserves (for queries after its request arrived).
    pub reserved_ep: Handle,
    state: Mutex<SpState>,
}

/// A PSP handle's object.
#[repr(align(16))]
pub struct Psp {
    pub sp: Arc<Sp>,
}
/// An RSP handle's object.
#[repr(align(16))]
pub struct Rsp {
    pub sp: Arc<Sp>,
}

impl handle::Kind for Psp {
    const TYPE: HandleType = HandleType::Psp;
}
impl handle::Kind for Rsp {
    const TYPE: HandleType = HandleType::Rsp;
}

struct SpCm {
    sp: Weak<Sp>,
}

impl CmHandler for SpCm {
    fn event(&self, _qp: Option<QpNum>, ev: CmEvent<'_>) {
        if let CmEvent::ConnectRequest {
            request,
            remote,
            private_data,
            ..
        } = ev
        {
            if let Some(sp) = self.sp.upgrade() {
                sp.on_request(request, remote, private_data);
            }
        }
    }
}

fn cr_evd(ia: &Ia, evd: Handle) -> Result<Arc<Evd>> {
    crate::object::evd_for_role(ia, evd.addr(), EVD_CR_FLAG, Sub::HandleEvdCr)?
        .ok_or(DatError::handle(Sub::HandleEvdCr))
}

impl Sp {
    fn create(
        ia: &Arc<Ia>,
        qual: u64,
        evd: Handle,
        kind: SpKind,
        ep: Option<Arc<Ep>>,
    ) -> Result<(Arc<Sp>, u64)> {
        let evd = cr_evd(ia, evd)?;
        let any = qual == 0 && matches!(kind, SpKind::Psp { .. });
        let port = if any { 0 } else { ia.dev.port_of_service(qual) };
        let mut st = ia.live_state()?;
        let ty = match kind {
            SpKind::Psp { .. } => HandleType::Psp,
            SpKind::Rsp => HandleType::Rsp,
        };
        st.check_limit(ty, i32::MAX, Sub::ResourceTep)?;
        if let Some(ep) = &ep {
            ep.reserve(Handle::NULL)?;
        }
        let res = match handle::reserve(ia.provider_word) {
            Ok(r) => r,
            Err(e) => {
                if let Some(ep) = &ep {
                    ep.unreserve();
                }
                return Err(e);
            }
        };
        let sp = Arc::new(Sp {
            handle: res.handle(),
            ia: ia.clone(),
            kind,
            conn_qual: AtomicU64::new(qual),
            evd: evd.clone(),
            reserved_ep: ep.as_ref().map_or(Handle::NULL, |e| e.handle),
            state: Mutex::new(SpState {
                listener: None,
                ep: ep.clone(),
                used: false,
                freed: false,
            }),
        });
        let cm = Arc::new(SpCm {
            sp: Arc::downgrade(&sp),
        });
        // Requests may arrive before this returns; they wait on the
        // service point's state lock until the listener is stored.
        let mut state = lock_anyway(&sp.state);
        let listener = match ia.dev.listen(port, cm) {
            Ok(l) => l,
            Err(e) => {
                drop(state);
                if let Some(ep) = &ep {
                    ep.unreserve();
                }
                return Err(match e {
                    DeviceError::PortInUse => DatError::of(Type::ConnQualInUse),
                    _ => DatError::resources(Sub::ResourceTep),
                });
            }
        };
        let qual = if any {
            u64::from(listener.port())
        } else {
            qual
        };
        sp.conn_qual.store(qual, Ordering::Release);
        state.listener = Some(listener);
        drop(state);
        st.add_use(evd.handle);
        match kind {
            SpKind::Psp { .. } => {
                let o = Arc::new(Psp { sp: sp.clone() });
                st.insert(sp.handle, Object::Psp(o.clone()));
                res.publish(o);
            }
            SpKind::Rsp => {
                let o = Arc::new(Rsp { sp: sp.clone() });
                st.insert(sp.handle, Object::Rsp(o.clone()));
                res.publish(o);
            }
        }
        Ok((sp, qual))
    }

    /// `dat_psp_create` (`qual` ≠ 0) / `dat_psp_create_any` (`qual` = 0).
    pub fn create_psp(
        ia: &Arc<Ia>,
        qual: u64,
        evd: Handle,
        flags: u32,
        any: bool,
    ) -> Result<(Arc<Sp>, u64)> {
        if flags & !PSP_PROVIDER != 0 {
            return Err(DatError::invalid(Input::PspFlags));
        }
        // Qualifier 0 is "any": only dat_psp_create_any asks for it.
        if !any && ia.dev.port_of_service(qual) == 0 {
            return Err(DatError::invalid(Input::ConnQual));
        }
        let q = if any { 0 } else { qual };
        Self::create(
            ia,
            q,
            evd,
            SpKind::Psp {
                provider: flags & PSP_PROVIDER != 0,
            },
            None,
        )
    }

    /// `dat_rsp_create`.
    pub fn create_rsp(ia: &Arc<Ia>, qual: u64, ep: Handle, evd: Handle) -> Result<Arc<Sp>> {
        let e = ep::lookup(ep.addr())?;
        ia::same_ia(&e.ia, ia, Sub::HandleEp)?;
        if ia.dev.port_of_service(qual) == 0 {
            return Err(DatError::invalid(Input::ConnQual));
        }
        Self::create(ia, qual, evd, SpKind::Rsp, Some(e.arc())).map(|(s, _)| s)
    }

    /// The connection qualifier.
    pub fn qual(&self) -> u64 {
        self.conn_qual.load(Ordering::Acquire)
    }

    /// `dat_psp_query` / `dat_rsp_query`.
    pub fn params(&self) -> SpParams {
        SpParams {
            ia: self.ia.handle,
            conn_qual: self.qual(),
            evd: self.evd.handle,
            flags: match self.kind {
                SpKind::Psp { provider } => u32::from(provider),
                SpKind::Rsp => 0,
            },
            ep: self.reserved_ep,
        }
    }

    /// `dat_psp_free` / `dat_rsp_free`: stops listening; requests not yet
    /// answered stay (their CRs live on); an RSP's unused EP returns to
    /// UNCONNECTED.
    pub fn free(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        let sub = match self.kind {
            SpKind::Psp { .. } => Sub::HandlePsp,
            SpKind::Rsp => Sub::HandleRsp,
        };
        st.remove(self.handle, sub)?;
        st.drop_use(self.evd.handle);
        let (listener, ep) = {
            let mut s = lock_anyway(&self.state);
            s.freed = true;
            (s.listener.take(), s.ep.take())
        };
        drop(st);
        if let Some(ep) = ep {
            ep.unreserve();
        }
        // The port is free when the call returns, even while a CR or the
        // progress thread still holds the listener.
        if let Some(l) = listener {
            l.close();
        }
        Ok(())
    }

    /// IA close.
    pub(crate) fn destroy(&self) {
        let mut s = lock_anyway(&self.state);
        s.freed = true;
        if let Some(l) = s.listener.take() {
            l.close();
        }
        s.ep = None;
    }

    fn on_request(self: &Arc<Self>, request: u64, remote: SocketAddr, private_data: &[u8]) {
        let listener = {
            let s = lock_anyway(&self.state);
            if s.freed {
                // Its listener is gone; the transport closes the request.
                return;
            }
            s.listener.clone()
        };
        if let Some(listener) = listener {
            self.deliver(request, remote, private_data, listener);
        }
    }

    /// A request for this service point (arrived, or handed off from
    /// another one): a CR and `DAT_CONNECTION_REQUEST_EVENT`, or a
    /// non-peer refusal through `listener` when it cannot be taken.
    fn deliver(
        self: &Arc<Self>,
        request: u64,
        remote: SocketAddr,
        private_data: &[u8],
        listener: Arc<dyn Listener>,
    ) {
        let refuse = || {
            let _ = listener.reject(request, NON_PEER_MARK);
        };
        // An RSP takes one request.
        let rsp_ep = match self.kind {
            SpKind::Rsp => {
                let mut s = lock_anyway(&self.state);
                match s.ep.clone() {
                    Some(ep) if !s.used && !s.freed => {
                        s.used = true;
                        Some(ep)
                    }
                    _ => {
                        drop(s);
                        refuse();
                        return;
                    }
                }
            }
            SpKind::Psp { .. } => None,
        };
        if !self.evd.has_room() {
            if rsp_ep.is_some() {
                lock_anyway(&self.state).used = false;
            }
            refuse();
            return;
        }
        let remote_port = u64::from(remote.port());
        let ep = match (self.kind, rsp_ep) {
            (SpKind::Rsp, Some(ep)) => {
                if !ep.request_arrived(remote, remote_port, self.qual()) {
                    refuse();
                    return;
                }
                Some(ep)
            }
            (SpKind::Psp { provider: true }, _) => match Ep::create_for_request(&self.ia) {
                Ok(ep) => {
                    ep.tentative_for(remote, remote_port, self.qual());
                    Some(ep)
                }
                Err(_) => {
                    refuse();
                    return;
                }
            },
            _ => None,
        };
        let cr = match Cr::create(
            self,
            request,
            remote,
            private_data,
            listener.clone(),
            ep.clone(),
        ) {
            Ok(cr) => cr,
            Err(_) => {
                refuse();
                if let Some(ep) = ep {
                    ep.rejected();
                }
                return;
            }
        };
        let sp_handle = match self.kind {
            SpKind::Rsp => Handle::NULL,
            SpKind::Psp { .. } => self.handle,
        };
        let ev = Event::new(
            event::CONNECTION_REQUEST,
            EventData::ConnectionRequest {
                sp: sp_handle,
                local_addr: &*self.ia.sockaddr as *const SockAddrStorage as usize,
                conn_qual: self.qual(),
                cr: cr.handle,
            },
        );
        self.evd.post_provider_event(ev, true);
    }
}

/// `DAT_CR_PARAM` as the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrParams {
    /// `struct sockaddr *` of the requesting IA (valid while the CR lives).
    pub remote_addr: usize,
    pub remote_port: u64,
    pub private_data_size: i32,
    /// Valid while the CR lives; 0 when there is none.
    pub private_data: usize,
    pub local_ep: Handle,
}

/// A connection request waiting for the consumer's answer.
#[repr(align(16))]
pub struct Cr {
    pub handle: Handle,
    pub ia: Arc<Ia>,
    request: u64,
    remote: SocketAddr,
    remote_sa: Box<SockAddrStorage>,
    private_data: Box<[u8]>,
    /// Taken when the request is answered (the listener's port is freed
    /// with its service point, not with the CR's memory).
    listener: Mutex<Option<Arc<dyn Listener>>>,
    /// The CR's own EP (RSP, provider PSP).
    ep: Option<Arc<Ep>>,
    conn_qual: u64,
}

impl handle::Kind for Cr {
    const TYPE: HandleType = HandleType::Cr;
}

impl Cr {
    fn create(
        sp: &Sp,
        request: u64,
        remote: SocketAddr,
        private_data: &[u8],
        listener: Arc<dyn Listener>,
        ep: Option<Arc<Ep>>,
    ) -> Result<Arc<Cr>> {
        let ia = &sp.ia;
        let mut st = ia.live_state()?;
        let res = handle::reserve(ia.provider_word)?;
        let cr = Arc::new(Cr {
            handle: res.handle(),
            ia: ia.clone(),
            request,
            remote,
            remote_sa: Box::new(SockAddrStorage::from(remote)),
            private_data: private_data.into(),
            listener: Mutex::new(Some(listener)),
            ep,
            conn_qual: sp.qual(),
        });
        st.insert(cr.handle, Object::Cr(cr.clone()));
        res.publish(cr.clone());
        Ok(cr)
    }

    /// `dat_cr_query`.
    pub fn params(&self) -> CrParams {
        CrParams {
            remote_addr: &*self.remote_sa as *const SockAddrStorage as usize,
            remote_port: u64::from(self.remote.port()),
            private_data_size: i32::try_from(self.private_data.len()).unwrap_or(0),
            private_data: if self.private_data.is_empty() {
                0
            } else {
                self.private_data.as_ptr() as usize
            },
            local_ep: self.ep.as_ref().map_or(Handle::NULL, |e| e.handle),
        }
    }

    fn retire(&self) -> Result<()> {
        let mut st = self.ia.live_state()?;
        st.remove(self.handle, Sub::HandleCr)
    }

    fn take_listener(&self) -> Option<Arc<dyn Listener>> {
        lock_anyway(&self.listener).take()
    }

    /// `dat_cr_accept`. Every failure leaves the CR, the EP and the peer
    /// as they were.
    pub fn accept(&self, ep: Handle, private_data: &[u8]) -> Result<()> {
        let max = usize::try_from(self.ia.provider_attributes.max_private_data_size).unwrap_or(0);
        if private_data.len() > max {
            return Err(DatError::invalid(Input::PrivateDataSize));
        }
        let (ep, own) = match (&self.ep, ep.is_null()) {
            (Some(own), true) => (own.clone(), true),
            (Some(_), false) => return Err(DatError::handle(Sub::HandleEp)),
            (None, true) => return Err(DatError::handle(Sub::HandleEp)),
            (None, false) => {
                let e = ep::lookup(ep.addr())?;
                ia::same_ia(&e.ia, &self.ia, Sub::HandleEp)?;
                (e.arc(), false)
            }
        };
        if !handle::is_live(self.handle) {
            return Err(DatError::handle(Sub::HandleCr));
        }
        let previous = ep.state();
        let qp = ep.prepare_accept(
            own,
            self.remote,
            u64::from(self.remote.port()),
            self.conn_qual,
        )?;
        match self.ia.dev.accept(self.request, qp.as_ref(), private_data) {
            Ok(()) => {
                let _ = self.retire();
                self.take_listener();
                Ok(())
            }
            Err(DeviceError::NotFound) => {
                // The peer gave up meanwhile: the accept completes with an error.
                let _ = self.retire();
                self.take_listener();
                ep.accept_error();
                Ok(())
            }
            Err(e) => {
                ep.accept_failed(previous);
                Err(match e {
                    DeviceError::Invalid => DatError::of(Type::InvalidParameter),
                    _ => DatError::resources(Sub::ResourceTep),
                })
            }
        }
    }

    /// `dat_cr_reject`: the peer sees `PEER_REJECTED`.
    pub fn reject(&self) -> Result<()> {
        self.retire()?;
        if let Some(l) = self.take_listener() {
            let _ = l.reject(self.request, &[]);
        }
        if let Some(ep) = &self.ep {
            ep.rejected();
        }
        Ok(())
    }

    /// `dat_cr_handoff`: the request goes to the service point listening on
    /// `qual` on this IA; a failure keeps the CR (ruling E18).
    pub fn handoff(&self, qual: u64) -> Result<()> {
        if self.ep.is_some() {
            return Err(DatError::of(Type::InvalidState));
        }
        let target = {
            let st = self.ia.live_state()?;
            st.objects.values().find_map(|o| match o {
                Object::Psp(p) if p.sp.qual() == qual => Some(p.sp.clone()),
                Object::Rsp(r) if r.sp.qual() == qual => Some(r.sp.clone()),
                _ => None,
            })
        };
        let Some(target) = target else {
            return Err(DatError::invalid(Input::Handoff));
        };
        if !target.evd.has_room() {
            return Err(DatError::resources(Sub::None));
        }
        self.retire()?;
        if let Some(l) = self.take_listener() {
            target.deliver(self.request, self.remote, &self.private_data, l);
        }
        Ok(())
    }

    /// IA close: the request is refused.
    pub(crate) fn destroy(&self) {
        if let Some(l) = self.take_listener() {
            let _ = l.reject(self.request, NON_PEER_MARK);
        }
    }
}

/// Looks up a live PSP.
pub fn lookup_psp(addr: usize) -> Result<Ref<Psp>> {
    handle::expect::<Psp>(addr, Sub::HandlePsp)
}

/// Looks up a live RSP.
pub fn lookup_rsp(addr: usize) -> Result<Ref<Rsp>> {
    handle::expect::<Rsp>(addr, Sub::HandleRsp)
}

/// Looks up a live CR.
pub fn lookup_cr(addr: usize) -> Result<Ref<Cr>> {
    handle::expect::<Cr>(addr, Sub::HandleCr)
}
