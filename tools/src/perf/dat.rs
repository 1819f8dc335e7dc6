//! The DAT objects dat-perf uses, over the C ABI of the loaded libdat
//! (`crate::sys::Dat`): every call goes through its function pointers.
//! Each wrapper frees its object when dropped; registered memory is
//! released only after its LMR was freed (otherwise it is leaked, so the
//! library can never touch freed memory).

use std::alloc::Layout;
use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::time::Duration;

use crate::sys::Dat;
use dat_abi::*;

use super::Error;

static DAT: OnceLock<Dat> = OnceLock::new();

/// Loads the library once (`$DAT_LIBRARY` or `libdat.so.1`).
pub fn load() -> Result<(), Error> {
    if DAT.get().is_some() {
        return Ok(());
    }
    let dat = Dat::load(&crate::sys::default_library()).map_err(|e| Error(e.0))?;
    let _ = DAT.set(dat);
    Ok(())
}

/// The loaded library.
pub fn d() -> &'static Dat {
    DAT.get().expect("dat::load first")
}

/// `call` failed with `rc`: "dat_ep_connect: DAT_INVALID_PARAMETER (0x...)".
pub fn dat_error(call: &str, rc: DAT_RETURN) -> Error {
    Error(format!("{call} failed: {} ({rc:#010x})", d().strerror(rc)))
}

pub fn check(call: &str, rc: DAT_RETURN) -> Result<(), Error> {
    if rc == DAT_SUCCESS {
        Ok(())
    } else {
        Err(dat_error(call, rc))
    }
}

/// The type part of a DAT_RETURN.
pub fn type_of(rc: DAT_RETURN) -> DAT_RETURN {
    rc & DAT_TYPE_MASK
}

/// Microseconds for a DAT timeout, capped below DAT_TIMEOUT_INFINITE.
pub fn timeout_us(d: Duration) -> DAT_TIMEOUT {
    d.as_micros().min(u128::from(DAT_TIMEOUT_INFINITE - 1)) as DAT_TIMEOUT
}

pub fn event_name(n: DAT_EVENT_NUMBER) -> &'static str {
    match n {
        DAT_DTO_COMPLETION_EVENT => "DAT_DTO_COMPLETION_EVENT",
        DAT_CONNECTION_REQUEST_EVENT => "DAT_CONNECTION_REQUEST_EVENT",
        DAT_CONNECTION_EVENT_ESTABLISHED => "DAT_CONNECTION_EVENT_ESTABLISHED",
        DAT_CONNECTION_EVENT_PEER_REJECTED => "DAT_CONNECTION_EVENT_PEER_REJECTED",
        DAT_CONNECTION_EVENT_NON_PEER_REJECTED => "DAT_CONNECTION_EVENT_NON_PEER_REJECTED",
        DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR => {
            "DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR"
        }
        DAT_CONNECTION_EVENT_DISCONNECTED => "DAT_CONNECTION_EVENT_DISCONNECTED",
        DAT_CONNECTION_EVENT_BROKEN => "DAT_CONNECTION_EVENT_BROKEN",
        DAT_CONNECTION_EVENT_TIMED_OUT => "DAT_CONNECTION_EVENT_TIMED_OUT",
        DAT_CONNECTION_EVENT_UNREACHABLE => "DAT_CONNECTION_EVENT_UNREACHABLE",
        _ => "an unexpected event",
    }
}

pub fn dto_status_name(s: DAT_DTO_COMPLETION_STATUS) -> &'static str {
    match s {
        DAT_DTO_SUCCESS => "DAT_DTO_SUCCESS",
        DAT_DTO_ERR_FLUSHED => "DAT_DTO_ERR_FLUSHED",
        DAT_DTO_ERR_LOCAL_LENGTH => "DAT_DTO_ERR_LOCAL_LENGTH",
        DAT_DTO_ERR_LOCAL_EP => "DAT_DTO_ERR_LOCAL_EP",
        DAT_DTO_ERR_LOCAL_PROTECTION => "DAT_DTO_ERR_LOCAL_PROTECTION",
        DAT_DTO_ERR_BAD_RESPONSE => "DAT_DTO_ERR_BAD_RESPONSE",
        DAT_DTO_ERR_REMOTE_ACCESS => "DAT_DTO_ERR_REMOTE_ACCESS",
        DAT_DTO_ERR_REMOTE_RESPONDER => "DAT_DTO_ERR_REMOTE_RESPONDER",
        DAT_DTO_ERR_TRANSPORT => "DAT_DTO_ERR_TRANSPORT",
        DAT_DTO_ERR_RECEIVER_NOT_READY => "DAT_DTO_ERR_RECEIVER_NOT_READY",
        DAT_DTO_ERR_PARTIAL_PACKET => "DAT_DTO_ERR_PARTIAL_PACKET",
        _ => "an unknown DTO status",
    }
}

/// A zeroed event to be filled by the library.
pub fn blank_event() -> DAT_EVENT {
    // SAFETY: DAT_EVENT is plain C data (integers, pointers, unions of
    // them); all-zero is a valid value of each.
    unsafe { std::mem::zeroed() }
}

/// A socket address as the C `sockaddr_in`/`sockaddr_in6` DAT takes.
pub struct SockAddr {
    storage: libc::sockaddr_storage,
}

impl SockAddr {
    pub fn new(a: SocketAddr) -> SockAddr {
        // SAFETY: sockaddr_storage is plain C data; zero is valid.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        match a {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(*v4.ip()).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for
                // sockaddr_in; both are plain C data.
                unsafe {
                    std::ptr::write(
                        (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>(),
                        sin,
                    )
                };
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: v6.ip().octets(),
                    },
                    sin6_scope_id: v6.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe {
                    std::ptr::write(
                        (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>(),
                        sin6,
                    )
                };
            }
        }
        SockAddr { storage }
    }

    pub fn as_ptr(&mut self) -> DAT_IA_ADDRESS_PTR {
        (&mut self.storage as *mut libc::sockaddr_storage).cast()
    }
}

/// Reads a `sockaddr_in`/`sockaddr_in6` the library returned.
///
/// # Safety
/// `p` is null or points at a socket address valid for its family's size.
pub unsafe fn read_sockaddr(p: *const libc::sockaddr) -> Option<SocketAddr> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, points at a sockaddr (caller).
    let family = i32::from(unsafe { (*p).sa_family });
    if family == libc::AF_INET {
        // SAFETY: an AF_INET address is a sockaddr_in (caller); read
        // unaligned in case the library's storage is not aligned.
        let sin = unsafe { std::ptr::read_unaligned(p.cast::<libc::sockaddr_in>()) };
        Some(SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
            u16::from_be(sin.sin_port),
        )))
    } else if family == libc::AF_INET6 {
        // SAFETY: an AF_INET6 address is a sockaddr_in6 (caller).
        let sin6 = unsafe { std::ptr::read_unaligned(p.cast::<libc::sockaddr_in6>()) };
        Some(SocketAddr::V6(SocketAddrV6::new(
            Ipv6Addr::from(sin6.sin6_addr.s6_addr),
            u16::from_be(sin6.sin6_port),
            sin6.sin6_flowinfo,
            sin6.sin6_scope_id,
        )))
    } else {
        None
    }
}

/// An open IA and what dat-perf needs to know about it.
pub struct Ia {
    pub h: DAT_IA_HANDLE,
    pub name: String,
    pub addr: IpAddr,
    pub max_message_size: u64,
    pub max_rdma_size: u64,
    pub max_rdma_read_in: i32,
    pub max_rdma_read_out: i32,
    pub max_private_data: usize,
}

impl Ia {
    pub fn open(name: &str) -> Result<Ia, Error> {
        let cname = CString::new(name).map_err(|_| Error(format!("bad IA name {name:?}")))?;
        let mut async_evd: DAT_EVD_HANDLE = DAT_HANDLE_NULL;
        let mut h: DAT_IA_HANDLE = DAT_HANDLE_NULL;
        // SAFETY: a NUL-terminated name and pointers to live locals; the
        // library only reads the name.
        let rc = unsafe {
            (d().dat_ia_openv)(
                cname.as_ptr().cast_mut(),
                8,
                &mut async_evd,
                &mut h,
                DAT_VERSION_MAJOR,
                DAT_VERSION_MINOR,
                DAT_FALSE,
            )
        };
        if rc != DAT_SUCCESS {
            return Err(Error(format!(
                "cannot open IA {name}: {} ({rc:#010x})",
                d().strerror(rc)
            )));
        }
        let mut ia = Ia {
            h,
            name: name.to_string(),
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            max_message_size: 0,
            max_rdma_size: 0,
            max_rdma_read_in: 0,
            max_rdma_read_out: 0,
            max_private_data: 0,
        };
        // SAFETY: plain C data, zero is valid; filled by dat_ia_query.
        let mut attr: DAT_IA_ATTR = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut pattr: DAT_PROVIDER_ATTR = unsafe { std::mem::zeroed() };
        let mut evd: DAT_EVD_HANDLE = DAT_HANDLE_NULL;
        // SAFETY: out-parameters point at live locals.
        check("dat_ia_query", unsafe {
            (d().dat_ia_query)(
                h,
                &mut evd,
                DAT_IA_FIELD_ALL,
                &mut attr,
                DAT_PROVIDER_FIELD_ALL,
                &mut pattr,
            )
        })?;
        // SAFETY: the library returns its IA's socket address (or NULL);
        // it stays valid while the IA is open.
        ia.addr = unsafe { read_sockaddr(attr.ia_address_ptr) }
            .map(|a| a.ip())
            .ok_or_else(|| Error(format!("IA {name} has no IPv4/IPv6 address")))?;
        ia.max_message_size = attr.max_message_size;
        ia.max_rdma_size = attr.max_rdma_size;
        ia.max_rdma_read_in = attr.max_rdma_read_per_ep_in.max(0);
        ia.max_rdma_read_out = attr.max_rdma_read_per_ep_out.max(0);
        ia.max_private_data = usize::try_from(pattr.max_private_data_size).unwrap_or(0);
        Ok(ia)
    }
}

impl Drop for Ia {
    fn drop(&mut self) {
        // SAFETY: our handle; an abrupt close frees whatever is left.
        unsafe { (d().dat_ia_close)(self.h, DAT_CLOSE_ABRUPT_FLAG) };
    }
}

pub struct Cno {
    pub h: DAT_CNO_HANDLE,
}

impl Cno {
    pub fn create(ia: &Ia) -> Result<Cno, Error> {
        let mut h = DAT_HANDLE_NULL;
        let agent = DAT_OS_WAIT_PROXY_AGENT {
            instance_data: std::ptr::null_mut(),
            proxy_agent_func: None,
        };
        // SAFETY: a live IA handle, the null agent, an out-pointer to a local.
        check("dat_cno_create", unsafe {
            (d().dat_cno_create)(ia.h, agent, &mut h)
        })?;
        Ok(Cno { h })
    }
}

impl Drop for Cno {
    fn drop(&mut self) {
        // SAFETY: our handle (refused while EVDs use it: the IA close frees it).
        unsafe { (d().dat_cno_free)(self.h) };
    }
}

pub struct Evd {
    pub h: DAT_EVD_HANDLE,
}

impl Evd {
    pub fn create(
        ia: &Ia,
        qlen: i32,
        flags: DAT_EVD_FLAGS,
        cno: Option<&Cno>,
    ) -> Result<Evd, Error> {
        let mut h = DAT_HANDLE_NULL;
        // SAFETY: live handles, an out-pointer to a local.
        check("dat_evd_create", unsafe {
            (d().dat_evd_create)(
                ia.h,
                qlen,
                cno.map_or(DAT_HANDLE_NULL, |c| c.h),
                flags,
                &mut h,
            )
        })?;
        Ok(Evd { h })
    }

    /// One event if there is one.
    pub fn dequeue(&self) -> Result<Option<DAT_EVENT>, Error> {
        let mut ev = blank_event();
        // SAFETY: our handle; the event is a live local the library fills.
        let rc = unsafe { (d().dat_evd_dequeue)(self.h, &mut ev) };
        if rc == DAT_SUCCESS {
            Ok(Some(ev))
        } else if type_of(rc) == DAT_QUEUE_EMPTY {
            Ok(None)
        } else {
            Err(dat_error("dat_evd_dequeue", rc))
        }
    }

    /// dat_evd_wait for one event; None when `timeout` passed.
    pub fn wait(&self, timeout: Duration) -> Result<Option<DAT_EVENT>, Error> {
        let mut ev = blank_event();
        let mut nmore = 0;
        // SAFETY: our handle; event and count are live locals.
        let rc = unsafe { (d().dat_evd_wait)(self.h, timeout_us(timeout), 1, &mut ev, &mut nmore) };
        if rc == DAT_SUCCESS {
            Ok(Some(ev))
        } else if type_of(rc) == DAT_TIMEOUT_EXPIRED {
            Ok(None)
        } else {
            Err(dat_error("dat_evd_wait", rc))
        }
    }

    /// dat_evd_wait without a deadline (a server waiting for a client).
    pub fn wait_forever(&self) -> Result<DAT_EVENT, Error> {
        let mut ev = blank_event();
        let mut nmore = 0;
        // SAFETY: as in `wait`.
        let rc =
            unsafe { (d().dat_evd_wait)(self.h, DAT_TIMEOUT_INFINITE, 1, &mut ev, &mut nmore) };
        check("dat_evd_wait", rc)?;
        Ok(ev)
    }
}

impl Drop for Evd {
    fn drop(&mut self) {
        // SAFETY: our handle (refused while in use: the IA close frees it).
        unsafe { (d().dat_evd_free)(self.h) };
    }
}

pub struct Pz {
    pub h: DAT_PZ_HANDLE,
}

impl Pz {
    pub fn create(ia: &Ia) -> Result<Pz, Error> {
        let mut h = DAT_HANDLE_NULL;
        // SAFETY: a live IA handle, an out-pointer to a local.
        check("dat_pz_create", unsafe {
            (d().dat_pz_create)(ia.h, &mut h)
        })?;
        Ok(Pz { h })
    }
}

impl Drop for Pz {
    fn drop(&mut self) {
        // SAFETY: our handle.
        unsafe { (d().dat_pz_free)(self.h) };
    }
}

/// Page-aligned memory we own, registered as an LMR with every right.
/// The library and the peer read and write it: Rust code touches it only
/// through raw pointers (`unsafe` accessors), never through references.
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    layout: Layout,
    lmr: DAT_LMR_HANDLE,
    pub lmr_ctx: DAT_LMR_CONTEXT,
    pub rmr_ctx: DAT_RMR_CONTEXT,
}

impl Region {
    pub fn new(ia: &Ia, pz: &Pz, len: u64) -> Result<Region, Error> {
        let len = usize::try_from(len.max(1)).map_err(|_| Error("buffer too large".into()))?;
        let layout = Layout::from_size_align(len, 4096)
            .map_err(|_| Error(format!("cannot lay out a buffer of {len} bytes")))?;
        // SAFETY: the layout's size is non-zero.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(p).ok_or_else(|| Error(format!("out of memory ({len} bytes)")))?;
        let mut r = Region {
            base,
            len,
            layout,
            lmr: DAT_HANDLE_NULL,
            lmr_ctx: 0,
            rmr_ctx: 0,
        };
        let desc = DAT_REGION_DESCRIPTION {
            for_va: base.as_ptr().cast(),
        };
        let (mut rlen, mut raddr) = (0, 0);
        // SAFETY: the region is `len` bytes we own and keep allocated until
        // the LMR is freed (Drop); out-pointers point at live fields/locals.
        let rc = unsafe {
            (d().dat_lmr_create)(
                ia.h,
                DAT_MEM_TYPE_VIRTUAL,
                desc,
                len as DAT_VLEN,
                pz.h,
                DAT_MEM_PRIV_ALL_FLAG,
                &mut r.lmr,
                &mut r.lmr_ctx,
                &mut r.rmr_ctx,
                &mut rlen,
                &mut raddr,
            )
        };
        if rc != DAT_SUCCESS {
            r.lmr = DAT_HANDLE_NULL;
            return Err(dat_error("dat_lmr_create", rc));
        }
        Ok(r)
    }

    pub fn addr(&self, off: u64) -> u64 {
        self.base.as_ptr() as u64 + off
    }

    /// The local segment [off, off + len).
    pub fn triplet(&self, off: u64, len: u64) -> DAT_LMR_TRIPLET {
        debug_assert!(off + len <= self.len as u64);
        DAT_LMR_TRIPLET {
            lmr_context: self.lmr_ctx,
            pad: 0,
            virtual_address: self.addr(off),
            segment_length: len,
        }
    }

    fn ptr(&self, off: u64, len: u64) -> *mut u8 {
        assert!(
            off.checked_add(len).is_some_and(|e| e <= self.len as u64),
            "region access out of bounds"
        );
        // SAFETY: within the allocation (checked above).
        unsafe { self.base.as_ptr().add(off as usize) }
    }

    /// Writes `f(k)` into byte `off + k` for k in 0..len.
    ///
    /// # Safety
    /// No DTO of ours uses these bytes and the peer cannot access them now
    /// (the protocol's phase says so).
    pub unsafe fn fill(&self, off: u64, len: u64, f: impl Fn(u64) -> u8) {
        let p = self.ptr(off, len);
        for k in 0..len {
            // SAFETY: in bounds (ptr checked); no concurrent access (caller).
            unsafe { p.add(k as usize).write(f(k)) };
        }
    }

    /// The first k in 0..len where byte `off + k` differs from `f(k)`.
    ///
    /// # Safety
    /// As for [`Region::fill`]: the bytes are quiescent (their receive or
    /// read completed, or the peer's write is known to have landed and it
    /// writes no more until we answer).
    pub unsafe fn find_diff(&self, off: u64, len: u64, f: impl Fn(u64) -> u8) -> Option<u64> {
        let p = self.ptr(off, len);
        // SAFETY: in bounds; no concurrent access (caller).
        (0..len).find(|&k| unsafe { p.add(k as usize).read() } != f(k))
    }

    /// Writes one byte.
    ///
    /// # Safety
    /// As for [`Region::fill`].
    pub unsafe fn set(&self, off: u64, v: u8) {
        // SAFETY: in bounds; no concurrent access (caller).
        unsafe { self.ptr(off, 1).write(v) }
    }

    /// Reads one byte the peer may be writing right now (RDMA Write
    /// ping-pong's last byte): a volatile load, no reference made.
    pub fn load_volatile(&self, off: u64) -> u8 {
        let p = self.ptr(off, 1);
        // SAFETY: in bounds, always allocated and initialised (zeroed); a
        // single-byte volatile load cannot tear.
        unsafe { p.read_volatile() }
    }

    /// Copies `src` into the region.
    ///
    /// # Safety
    /// As for [`Region::fill`].
    pub unsafe fn write_bytes(&self, off: u64, src: &[u8]) {
        let p = self.ptr(off, src.len() as u64);
        // SAFETY: in bounds, no overlap with a Rust slice, quiescent (caller).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) }
    }

    /// Copies bytes out of the region.
    ///
    /// # Safety
    /// As for [`Region::find_diff`].
    pub unsafe fn read_bytes(&self, off: u64, dst: &mut [u8]) {
        let p = self.ptr(off, dst.len() as u64);
        // SAFETY: in bounds, quiescent (caller).
        unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if !self.lmr.is_null() {
            // SAFETY: our LMR handle.
            let rc = unsafe { (d().dat_lmr_free)(self.lmr) };
            if rc != DAT_SUCCESS {
                // Still registered (in use?): the library may touch the
                // memory until its IA is closed, so it is never freed.
                return;
            }
        }
        // SAFETY: allocated in `new` with this layout, no longer registered.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), self.layout) };
    }
}

/// Endpoint attributes for a window of `depth` operations.
pub fn ep_attr(max_size: u64, recv_dtos: i32, request_dtos: i32, reads: i32) -> DAT_EP_ATTR {
    DAT_EP_ATTR {
        service_type: DAT_SERVICE_TYPE_RC,
        max_message_size: max_size,
        max_rdma_size: max_size,
        qos: DAT_QOS_BEST_EFFORT,
        recv_completion_flags: DAT_COMPLETION_DEFAULT_FLAG,
        request_completion_flags: DAT_COMPLETION_DEFAULT_FLAG,
        max_recv_dtos: recv_dtos,
        max_request_dtos: request_dtos,
        max_recv_iov: 1,
        max_request_iov: 1,
        max_rdma_read_in: reads,
        max_rdma_read_out: reads,
        srq_soft_hw: 0,
        max_rdma_read_iov: 1,
        max_rdma_write_iov: 1,
        ep_transport_specific_count: 0,
        ep_transport_specific: std::ptr::null_mut(),
        ep_provider_specific_count: 0,
        ep_provider_specific: std::ptr::null_mut(),
    }
}

pub struct Ep {
    pub h: DAT_EP_HANDLE,
}

pub fn cookie(v: u64) -> DAT_DTO_COOKIE {
    DAT_DTO_COOKIE { as_64: v }
}

impl Ep {
    pub fn create(
        ia: &Ia,
        pz: &Pz,
        dto: &Evd,
        conn: &Evd,
        attr: &DAT_EP_ATTR,
    ) -> Result<Ep, Error> {
        let mut h = DAT_HANDLE_NULL;
        // SAFETY: live handles; the attributes are read during the call.
        check("dat_ep_create", unsafe {
            (d().dat_ep_create)(ia.h, pz.h, dto.h, dto.h, conn.h, attr, &mut h)
        })?;
        Ok(Ep { h })
    }

    pub fn post_recv(&self, seg: DAT_LMR_TRIPLET, ck: u64) -> Result<(), Error> {
        let mut seg = seg;
        // SAFETY: the segment lies in a registered Region that outlives the
        // endpoint's use of it (regions are dropped after the endpoint is
        // freed or the connection is gone); the triplet itself is copied.
        check("dat_ep_post_recv", unsafe {
            (d().dat_ep_post_recv)(self.h, 1, &mut seg, cookie(ck), DAT_COMPLETION_DEFAULT_FLAG)
        })
    }

    pub fn post_send(&self, seg: DAT_LMR_TRIPLET, ck: u64) -> Result<(), Error> {
        self.post_send_flags(seg, ck, DAT_COMPLETION_DEFAULT_FLAG)
    }

    /// A Send with these completion flags (`completion_flags`).
    pub fn post_send_flags(
        &self,
        seg: DAT_LMR_TRIPLET,
        ck: u64,
        flags: DAT_COMPLETION_FLAGS,
    ) -> Result<(), Error> {
        let mut seg = seg;
        // SAFETY: as in post_recv.
        check("dat_ep_post_send", unsafe {
            (d().dat_ep_post_send)(self.h, 1, &mut seg, cookie(ck), flags)
        })
    }

    pub fn post_write(
        &self,
        seg: DAT_LMR_TRIPLET,
        remote: DAT_RMR_TRIPLET,
        ck: u64,
    ) -> Result<(), Error> {
        self.post_write_flags(seg, remote, ck, DAT_COMPLETION_DEFAULT_FLAG)
    }

    /// An RDMA Write with these completion flags.
    pub fn post_write_flags(
        &self,
        seg: DAT_LMR_TRIPLET,
        remote: DAT_RMR_TRIPLET,
        ck: u64,
        flags: DAT_COMPLETION_FLAGS,
    ) -> Result<(), Error> {
        let mut seg = seg;
        // SAFETY: as in post_recv; the remote triplet is read during the call.
        check("dat_ep_post_rdma_write", unsafe {
            (d().dat_ep_post_rdma_write)(self.h, 1, &mut seg, cookie(ck), &remote, flags)
        })
    }

    pub fn post_read(
        &self,
        seg: DAT_LMR_TRIPLET,
        remote: DAT_RMR_TRIPLET,
        ck: u64,
    ) -> Result<(), Error> {
        let mut seg = seg;
        // SAFETY: as in post_write.
        check("dat_ep_post_rdma_read", unsafe {
            (d().dat_ep_post_rdma_read)(
                self.h,
                1,
                &mut seg,
                cookie(ck),
                &remote,
                DAT_COMPLETION_DEFAULT_FLAG,
            )
        })
    }

    pub fn connect(
        &self,
        to: SocketAddr,
        qual: u64,
        timeout: Duration,
        private: &[u8],
    ) -> Result<(), Error> {
        let mut a = SockAddr::new(to);
        // SAFETY: a live EP; the address and private data are read during
        // the call (the library copies the private data).
        check("dat_ep_connect", unsafe {
            (d().dat_ep_connect)(
                self.h,
                a.as_ptr(),
                qual,
                timeout_us(timeout),
                private.len() as DAT_COUNT,
                private.as_ptr().cast_mut().cast(),
                DAT_QOS_BEST_EFFORT,
                DAT_CONNECT_DEFAULT_FLAG,
            )
        })
    }

    pub fn disconnect(&self, graceful: bool) -> Result<(), Error> {
        let flags = if graceful {
            DAT_CLOSE_GRACEFUL_FLAG
        } else {
            DAT_CLOSE_ABRUPT_FLAG
        };
        // SAFETY: our handle.
        check("dat_ep_disconnect", unsafe {
            (d().dat_ep_disconnect)(self.h, flags)
        })
    }
}

impl Drop for Ep {
    fn drop(&mut self) {
        // SAFETY: our handle; freeing a connected EP disconnects it
        // abruptly and flushes what is posted.
        unsafe { (d().dat_ep_free)(self.h) };
    }
}

pub struct Psp {
    pub h: DAT_PSP_HANDLE,
}

impl Psp {
    /// A service point on any free qualifier (dat_psp_create_any); the
    /// qualifier it got.
    pub fn create_any(ia: &Ia, cr: &Evd) -> Result<(Psp, u64), Error> {
        let mut h = DAT_HANDLE_NULL;
        let mut qual: DAT_CONN_QUAL = 0;
        // SAFETY: live handles, out-pointers to locals.
        check("dat_psp_create_any", unsafe {
            (d().dat_psp_create_any)(ia.h, &mut qual, cr.h, DAT_PSP_CONSUMER_FLAG, &mut h)
        })?;
        Ok((Psp { h }, qual))
    }

    pub fn create(ia: &Ia, qual: u64, cr: &Evd) -> Result<Psp, Error> {
        let mut h = DAT_HANDLE_NULL;
        // SAFETY: live handles, an out-pointer to a local.
        let rc = unsafe { (d().dat_psp_create)(ia.h, qual, cr.h, DAT_PSP_CONSUMER_FLAG, &mut h) };
        if type_of(rc) == DAT_CONN_QUAL_IN_USE {
            return Err(Error(format!(
                "qualifier {qual} is in use (another server?): {}",
                d().strerror(rc)
            )));
        }
        check("dat_psp_create", rc)?;
        Ok(Psp { h })
    }
}

impl Drop for Psp {
    fn drop(&mut self) {
        // SAFETY: our handle.
        unsafe { (d().dat_psp_free)(self.h) };
    }
}

/// A connection request: its handle and private data (copied).
pub struct Request {
    pub h: DAT_CR_HANDLE,
    pub private: Vec<u8>,
    pub peer: Option<SocketAddr>,
}

impl Request {
    pub fn from_event(ev: &DAT_EVENT) -> Result<Request, Error> {
        // SAFETY: a DAT_CONNECTION_REQUEST_EVENT carries cr_arrival data.
        let h = unsafe { ev.event_data.cr_arrival_event_data.cr_handle };
        // SAFETY: plain C data, zero is valid.
        let mut p: DAT_CR_PARAM = unsafe { std::mem::zeroed() };
        // SAFETY: a live CR handle, an out-pointer to a local.
        check("dat_cr_query", unsafe {
            (d().dat_cr_query)(h, DAT_CR_FIELD_ALL, &mut p)
        })?;
        let n = usize::try_from(p.private_data_size).unwrap_or(0);
        let private = if n == 0 || p.private_data.is_null() {
            Vec::new()
        } else {
            // SAFETY: the library's copy of the private data, n bytes, valid
            // while the CR is pending.
            unsafe { std::slice::from_raw_parts(p.private_data.cast::<u8>(), n) }.to_vec()
        };
        // SAFETY: the remote address the library keeps with the CR (or NULL).
        let peer = unsafe { read_sockaddr(p.remote_ia_address_ptr) };
        Ok(Request { h, private, peer })
    }

    pub fn accept(self, ep: &Ep, private: &[u8]) -> Result<(), Error> {
        // SAFETY: a pending CR, a live EP; the private data is copied.
        check("dat_cr_accept", unsafe {
            (d().dat_cr_accept)(
                self.h,
                ep.h,
                private.len() as DAT_COUNT,
                private.as_ptr().cast_mut().cast(),
            )
        })
    }

    pub fn reject(self) {
        // SAFETY: a pending CR.
        unsafe { (d().dat_cr_reject)(self.h) };
    }
}

/// The private data of a connection event (the acceptor's, on the active side).
pub fn event_private_data(ev: &DAT_EVENT) -> Vec<u8> {
    // SAFETY: connection events carry connect_event_data.
    let c = unsafe { ev.event_data.connect_event_data };
    let n = usize::try_from(c.private_data_size).unwrap_or(0);
    if n == 0 || c.private_data.is_null() {
        return Vec::new();
    }
    // SAFETY: n bytes the library owns while the event is the latest one.
    unsafe { std::slice::from_raw_parts(c.private_data.cast::<u8>(), n) }.to_vec()
}
