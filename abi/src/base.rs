//! Version, scalar base types (the Linux branch of the platform header),
//! handles, addresses and the other generic DAT types.

use core::ffi::{c_char, c_int, c_ulonglong, c_void};

use crate::*;

/// DAT major version this header describes.
pub const DAT_VERSION_MAJOR: DAT_UINT32 = 1;
/// DAT minor version this header describes.
pub const DAT_VERSION_MINOR: DAT_UINT32 = 2;
/// Thread-safety level that `dat_ia_open` asks for. Like the 1.2 reference
/// header, this is always DAT_FALSE (defined without an `#ifndef` guard).
pub const DAT_THREADSAFE: DAT_BOOLEAN = DAT_FALSE;

/// Buffer alignment the hardware prefers (the header only defines it when
/// the application has not already done so).
/// cbindgen:ignore
pub const DAT_OPTIMAL_ALIGNMENT: usize = 256;

// ===========================================================================
// Scalar base types (Linux branch of the platform header)
// ===========================================================================

/// Unsigned 32-bit integer in host order.
pub type DAT_UINT32 = u32;
/// Unsigned 64-bit integer in host order.
pub type DAT_UINT64 = u64;
/// The longest unsigned integer type of the compiler.
pub type DAT_UVERYLONG = c_ulonglong;
/// Untyped pointer.
pub type DAT_PVOID = *mut c_void;
/// Signed count (a C `int`).
pub type DAT_COUNT = c_int;
/// Physical address.
pub type DAT_PADDR = DAT_UINT64;
/// The operating system's socket address header.
pub type DAT_SOCK_ADDR = libc::sockaddr;
/// The operating system's IPv6 socket address.
pub type DAT_SOCK_ADDR6 = libc::sockaddr_in6;

/// IPv4 address family (the system's `AF_INET`).
/// cbindgen:ignore
pub const DAT_AF_INET: c_int = libc::AF_INET;
/// IPv6 address family (the system's `AF_INET6`: 10 on Linux).
/// cbindgen:ignore
pub const DAT_AF_INET6: c_int = libc::AF_INET6;

// ===========================================================================
// Generic DAT types
// ===========================================================================

/// Name of an interface adapter or attribute. `const DAT_NAME_PTR` in a
/// prototype is `char *const`, i.e. the same type for the caller.
pub type DAT_NAME_PTR = *mut c_char;
/// Size of every name array, terminating NUL included.
pub const DAT_NAME_MAX_LENGTH: usize = 256;

/// Result of every DAT call: class (bits 31-30), type (29-16), subtype (15-0).
pub type DAT_RETURN = DAT_UINT32;
/// Timeout in microseconds.
pub type DAT_TIMEOUT = DAT_UINT32;
/// Wait forever.
pub const DAT_TIMEOUT_INFINITE: DAT_TIMEOUT = !0 as DAT_TIMEOUT;

/// Opaque handle of any DAT object.
pub type DAT_HANDLE = DAT_PVOID;
/// Connection request handle.
pub type DAT_CR_HANDLE = DAT_HANDLE;
/// Endpoint handle.
pub type DAT_EP_HANDLE = DAT_HANDLE;
/// Event dispatcher handle.
pub type DAT_EVD_HANDLE = DAT_HANDLE;
/// Interface adapter handle.
pub type DAT_IA_HANDLE = DAT_HANDLE;
/// Local memory region handle.
pub type DAT_LMR_HANDLE = DAT_HANDLE;
/// Public service point handle.
pub type DAT_PSP_HANDLE = DAT_HANDLE;
/// Protection zone handle.
pub type DAT_PZ_HANDLE = DAT_HANDLE;
/// Remote memory region handle.
pub type DAT_RMR_HANDLE = DAT_HANDLE;
/// Reserved service point handle.
pub type DAT_RSP_HANDLE = DAT_HANDLE;
/// Shared receive queue handle.
pub type DAT_SRQ_HANDLE = DAT_HANDLE;
/// Consumer notification object handle.
pub type DAT_CNO_HANDLE = DAT_HANDLE;

/// The null handle (`((DAT_HANDLE)NULL)` in C).
/// cbindgen:ignore
pub const DAT_HANDLE_NULL: DAT_HANDLE = core::ptr::null_mut();
/// Sentinel a consumer may store in `*async_evd_handle` before
/// `dat_ia_open`: "an async EVD already exists, do not create one".
/// cbindgen:ignore
pub const DAT_EVD_ASYNC_EXISTS: DAT_EVD_HANDLE = 1usize as DAT_EVD_HANDLE;
/// Sentinel `dat_ia_query` may return as the async EVD: "this IA instance
/// has no async EVD of its own".
/// cbindgen:ignore
pub const DAT_EVD_OUT_OF_SCOPE: DAT_EVD_HANDLE = 2usize as DAT_EVD_HANDLE;

/// Address of an interface adapter (really a `sockaddr_in` or
/// `sockaddr_in6`, selected by `sa_family`; the caller owns the storage).
pub type DAT_IA_ADDRESS_PTR = *mut DAT_SOCK_ADDR;
/// Connection qualifier (port).
pub type DAT_CONN_QUAL = DAT_UINT64;
/// Port qualifier.
pub type DAT_PORT_QUAL = DAT_UINT64;
/// Local memory region context.
pub type DAT_LMR_CONTEXT = DAT_UINT32;
/// Remote memory region context.
pub type DAT_RMR_CONTEXT = DAT_UINT32;
/// Length of a buffer or region.
pub type DAT_VLEN = DAT_UINT64;
/// Virtual address (64-bit on every platform).
pub type DAT_VADDR = DAT_UINT64;

/// Size in bytes of a shared-memory LMR cookie.
pub const DAT_LMR_COOKIE_SIZE: usize = 40;
/// Pointer to a `DAT_LMR_COOKIE_SIZE`-byte cookie. In C this is
/// `char (*)[DAT_LMR_COOKIE_SIZE]` (written by hand in the header); the
/// representation is the same plain pointer.
/// cbindgen:ignore
pub type DAT_LMR_COOKIE = *mut c_char;

/// Proxy agent function of a CNO: `(instance_data, evd_handle)`.
pub type DAT_AGENT_FUNC =
    Option<unsafe extern "C" fn(instance_data: DAT_PVOID, evd_handle: DAT_EVD_HANDLE)>;
