//! libibverbs and librdmacm, loaded at run time: `dlopen` (`RTLD_NOW |
//! RTLD_LOCAL`) of `libibverbs.so.1` and `librdmacm.so.1` on the first verbs
//! IA, then every function this transport calls resolved by name and
//! version with `dlvsym` (the default version of each symbol, never a
//! hidden compat one). `libdat.so.1` itself has no dependency on rdma-core.
//!
//! rdma-core's static inline calls (posts, polls, notification requests,
//! memory windows) are not in the table: they go through the device's ops
//! table (`ibv_context::ops`) as the inline functions themselves do.
//!
//! `DAT_VERBS_LIBDIR` names a directory to load both libraries from
//! instead of the system's (the tests' stub libraries).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::OnceLock;

use super::sys::*;

macro_rules! functions {
    ($( $lib:ident $ver:literal fn $name:ident ( $($arg:ty),* ) -> $ret:ty; )*) => {
        /// The rdma-core functions this transport calls.
        pub struct Lib {
            $( pub $name: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        /// Every function of [`Lib`]: its library, name and version.
        pub const SYMBOLS: &[(Library, &str, &str)] = &[
            $( (Library::$lib, stringify!($name), $ver), )*
        ];

        impl Lib {
            fn resolve(verbs: Handle, rdmacm: Handle) -> Result<Lib, String> {
                Ok(Lib {
                    $( $name: {
                        let handle = match Library::$lib {
                            Library::Ibverbs => verbs,
                            Library::Rdmacm => rdmacm,
                        };
                        let p = handle.symbol(stringify!($name), $ver)?;
                        // SAFETY: `p` is the address of the function of that
                        // name and version in the library, whose prototype
                        // (rdma-core's headers) is the one declared here.
                        unsafe {
                            std::mem::transmute::<
                                *mut c_void,
                                unsafe extern "C" fn($($arg),*) -> $ret,
                            >(p)
                        }
                    }, )*
                })
            }
        }
    };
}

/// Which of the two libraries a function is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    Ibverbs,
    Rdmacm,
}

impl Library {
    /// The file name (SONAME) loaded.
    pub const fn file(self) -> &'static str {
        match self {
            Library::Ibverbs => "libibverbs.so.1",
            Library::Rdmacm => "librdmacm.so.1",
        }
    }
}

type Cm = rdma_cm_id;
type Ch = rdma_event_channel;

functions! {
    Ibverbs "IBVERBS_1.1" fn ibv_get_device_list(*mut c_int) -> *mut *mut ibv_device;
    Ibverbs "IBVERBS_1.1" fn ibv_free_device_list(*mut *mut ibv_device) -> ();
    Ibverbs "IBVERBS_1.1" fn ibv_get_device_name(*mut ibv_device) -> *const c_char;
    Ibverbs "IBVERBS_1.1" fn ibv_open_device(*mut ibv_device) -> *mut ibv_context;
    Ibverbs "IBVERBS_1.1" fn ibv_close_device(*mut ibv_context) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_query_device(*mut ibv_context, *mut ibv_device_attr) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_query_port(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_alloc_pd(*mut ibv_context) -> *mut ibv_pd;
    Ibverbs "IBVERBS_1.1" fn ibv_dealloc_pd(*mut ibv_pd) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_reg_mr(*mut ibv_pd, *mut c_void, usize, c_int) -> *mut ibv_mr;
    Ibverbs "IBVERBS_1.1" fn ibv_dereg_mr(*mut ibv_mr) -> c_int;
    Ibverbs "IBVERBS_1.0" fn ibv_create_comp_channel(*mut ibv_context) -> *mut ibv_comp_channel;
    Ibverbs "IBVERBS_1.0" fn ibv_destroy_comp_channel(*mut ibv_comp_channel) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_create_cq(*mut ibv_context, c_int, *mut c_void, *mut ibv_comp_channel, c_int) -> *mut ibv_cq;
    Ibverbs "IBVERBS_1.1" fn ibv_resize_cq(*mut ibv_cq, c_int) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_destroy_cq(*mut ibv_cq) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_get_cq_event(*mut ibv_comp_channel, *mut *mut ibv_cq, *mut *mut c_void) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_ack_cq_events(*mut ibv_cq, c_uint) -> ();
    Ibverbs "IBVERBS_1.1" fn ibv_create_srq(*mut ibv_pd, *mut ibv_srq_init_attr) -> *mut ibv_srq;
    Ibverbs "IBVERBS_1.1" fn ibv_modify_srq(*mut ibv_srq, *mut ibv_srq_attr, c_int) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_destroy_srq(*mut ibv_srq) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_create_qp(*mut ibv_pd, *mut ibv_qp_init_attr) -> *mut ibv_qp;
    Ibverbs "IBVERBS_1.1" fn ibv_modify_qp(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_destroy_qp(*mut ibv_qp) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_get_async_event(*mut ibv_context, *mut ibv_async_event) -> c_int;
    Ibverbs "IBVERBS_1.1" fn ibv_ack_async_event(*mut ibv_async_event) -> ();
    Rdmacm "RDMACM_1.0" fn rdma_create_event_channel() -> *mut Ch;
    Rdmacm "RDMACM_1.0" fn rdma_destroy_event_channel(*mut Ch) -> ();
    Rdmacm "RDMACM_1.0" fn rdma_create_id(*mut Ch, *mut *mut Cm, *mut c_void, rdma_port_space) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_destroy_id(*mut Cm) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_bind_addr(*mut Cm, *mut sockaddr) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_resolve_addr(*mut Cm, *mut sockaddr, *mut sockaddr, c_int) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_resolve_route(*mut Cm, c_int) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_connect(*mut Cm, *mut rdma_conn_param) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_listen(*mut Cm, c_int) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_accept(*mut Cm, *mut rdma_conn_param) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_reject(*mut Cm, *const c_void, u8) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_disconnect(*mut Cm) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_get_cm_event(*mut Ch, *mut *mut rdma_cm_event) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_ack_cm_event(*mut rdma_cm_event) -> c_int;
    Rdmacm "RDMACM_1.0" fn rdma_event_str(rdma_cm_event_type) -> *const c_char;
    Rdmacm "RDMACM_1.0" fn rdma_set_option(*mut Cm, c_int, c_int, *mut c_void, usize) -> c_int;
    Rdmacm "RDMACM_1.2" fn rdma_init_qp_attr(*mut Cm, *mut ibv_qp_attr, *mut c_int) -> c_int;
    Rdmacm "RDMACM_1.2" fn rdma_establish(*mut Cm) -> c_int;
}

/// A `dlopen` handle, never closed (rdma-core's providers do not support
/// being unloaded).
#[derive(Clone, Copy)]
struct Handle(*mut c_void);

impl Handle {
    fn open(dir: Option<&str>, lib: Library) -> Result<Handle, String> {
        let path = match dir {
            Some(d) => format!("{d}/{}", lib.file()),
            None => lib.file().to_owned(),
        };
        let c = CString::new(path.clone()).map_err(|_| format!("{path}: bad file name"))?;
        // SAFETY: `c` is a NUL-terminated path; dlopen has no other
        // precondition.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(dl_error().unwrap_or_else(|| format!("{path}: cannot be loaded")));
        }
        Ok(Handle(h))
    }

    fn symbol(self, name: &str, version: &str) -> Result<*mut c_void, String> {
        let n = CString::new(name).map_err(|_| name.to_owned())?;
        let v = CString::new(version).map_err(|_| version.to_owned())?;
        // SAFETY: `self.0` is a live dlopen handle, `n` and `v` are
        // NUL-terminated.
        let p = unsafe { libc::dlvsym(self.0, n.as_ptr(), v.as_ptr()) };
        if p.is_null() {
            Err(format!("no {name}@{version}"))
        } else {
            Ok(p)
        }
    }
}

fn dl_error() -> Option<String> {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until
    // the next dl call of this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        (!e.is_null()).then(|| CStr::from_ptr(e).to_string_lossy().into_owned())
    }
}

// SAFETY: the table holds plain function pointers into libraries that stay
// loaded for the life of the process.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

/// The loaded libraries, loaded on the first call; why they could not be
/// loaded otherwise (the same answer for the life of the process).
pub fn get() -> Result<&'static Lib, &'static str> {
    LIB.get_or_init(load).as_ref().map_err(String::as_str)
}

fn load() -> Result<Lib, String> {
    let dir = std::env::var("DAT_VERBS_LIBDIR").ok();
    let verbs = Handle::open(dir.as_deref(), Library::Ibverbs)?;
    let rdmacm = Handle::open(dir.as_deref(), Library::Rdmacm)?;
    Lib::resolve(verbs, rdmacm).map_err(|e| {
        format!(
            "{} / {}: {e} (rdma-core too old?)",
            Library::Ibverbs.file(),
            Library::Rdmacm.file()
        )
    })
}
