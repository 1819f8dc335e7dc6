//! Every type and constant of the DAT 1.2 / uDAPL C ABI (`<dat/udat.h>`).
//!
//! This module is the single source of truth for the public C header:
//! `make header` runs cbindgen over it (and over the `dat_*` entry points in
//! `api/`) to produce `include/dat/udat.h`. The few things cbindgen cannot
//! express (function-like macros, pointer-valued macros, the redirection
//! macros) are written by hand in `cbindgen.toml`.
//!
//! Conventions:
//! - Names are the exact C names; struct and union tags are the lower-case C
//!   tags (`struct dat_event`), each followed by its upper-case typedef.
//! - Every C enum is a `u32` alias plus one constant per enumerator: a C
//!   caller or a provider may hand us any 32-bit value, which a Rust `enum`
//!   could not hold soundly.
//! - Layouts are those of x86-64 Linux (LP64, SysV). Every struct and union
//!   is checked against the documented size, alignment and field offsets at
//!   compile time (module `layout_checks` at the end of this file).
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]
#![allow(clippy::upper_case_acronyms)]

use core::ffi::{c_char, c_int, c_ulonglong, c_void};

// ===========================================================================
// Version and configuration
// ===========================================================================

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

// ===========================================================================
// Enumerations (each a u32 plus one constant per enumerator)
// ===========================================================================

/// Boolean (C enum `dat_boolean`).
pub type DAT_BOOLEAN = u32;
pub const DAT_FALSE: DAT_BOOLEAN = 0;
pub const DAT_TRUE: DAT_BOOLEAN = 1;

/// Kind of memory an LMR is created from (C enum `dat_mem_type`).
pub type DAT_MEM_TYPE = u32;
pub const DAT_MEM_TYPE_VIRTUAL: DAT_MEM_TYPE = 0x00;
pub const DAT_MEM_TYPE_LMR: DAT_MEM_TYPE = 0x01;
pub const DAT_MEM_TYPE_SHARED_VIRTUAL: DAT_MEM_TYPE = 0x02;
pub const DAT_MEM_TYPE_SO_VIRTUAL: DAT_MEM_TYPE = 0x03;

/// What `dat_get_handle_type` reports (C enum `dat_handle_type`).
pub type DAT_HANDLE_TYPE = u32;
pub const DAT_HANDLE_TYPE_CR: DAT_HANDLE_TYPE = 0;
pub const DAT_HANDLE_TYPE_EP: DAT_HANDLE_TYPE = 1;
pub const DAT_HANDLE_TYPE_EVD: DAT_HANDLE_TYPE = 2;
pub const DAT_HANDLE_TYPE_IA: DAT_HANDLE_TYPE = 3;
pub const DAT_HANDLE_TYPE_LMR: DAT_HANDLE_TYPE = 4;
pub const DAT_HANDLE_TYPE_PSP: DAT_HANDLE_TYPE = 5;
pub const DAT_HANDLE_TYPE_PZ: DAT_HANDLE_TYPE = 6;
pub const DAT_HANDLE_TYPE_RMR: DAT_HANDLE_TYPE = 7;
pub const DAT_HANDLE_TYPE_RSP: DAT_HANDLE_TYPE = 8;
pub const DAT_HANDLE_TYPE_CNO: DAT_HANDLE_TYPE = 9;
pub const DAT_HANDLE_TYPE_SRQ: DAT_HANDLE_TYPE = 10;

/// EVD state: three independent sub-fields (enabled/disabled,
/// waitable/unwaitable, configuration) (C enum `dat_evd_state`).
pub type DAT_EVD_STATE = u32;
pub const DAT_EVD_STATE_ENABLED: DAT_EVD_STATE = 0x01;
pub const DAT_EVD_STATE_DISABLED: DAT_EVD_STATE = 0x02;
pub const DAT_EVD_STATE_WAITABLE: DAT_EVD_STATE = 0x04;
pub const DAT_EVD_STATE_UNWAITABLE: DAT_EVD_STATE = 0x08;
pub const DAT_EVD_STATE_CONFIG_NOTIFY: DAT_EVD_STATE = 0x10;
pub const DAT_EVD_STATE_CONFIG_SOLICITED: DAT_EVD_STATE = 0x20;
pub const DAT_EVD_STATE_CONFIG_THRESHOLD: DAT_EVD_STATE = 0x30;

/// Field selector of `dat_evd_query` (C enum `dat_evd_param_mask`).
pub type DAT_EVD_PARAM_MASK = u32;
pub const DAT_EVD_FIELD_IA_HANDLE: DAT_EVD_PARAM_MASK = 0x01;
pub const DAT_EVD_FIELD_EVD_QLEN: DAT_EVD_PARAM_MASK = 0x02;
pub const DAT_EVD_FIELD_EVD_STATE: DAT_EVD_PARAM_MASK = 0x04;
pub const DAT_EVD_FIELD_CNO: DAT_EVD_PARAM_MASK = 0x08;
pub const DAT_EVD_FIELD_EVD_FLAGS: DAT_EVD_PARAM_MASK = 0x10;
pub const DAT_EVD_FIELD_ALL: DAT_EVD_PARAM_MASK = 0x1F;

/// Field selector of `dat_cno_query` (C enum `dat_cno_param_mask`).
pub type DAT_CNO_PARAM_MASK = u32;
pub const DAT_CNO_FIELD_IA_HANDLE: DAT_CNO_PARAM_MASK = 0x1;
pub const DAT_CNO_FIELD_AGENT: DAT_CNO_PARAM_MASK = 0x2;
pub const DAT_CNO_FIELD_ALL: DAT_CNO_PARAM_MASK = 0x3;

/// Protection zone sharing model (C enum `dat_pz_support`).
pub type DAT_PZ_SUPPORT = u32;
pub const DAT_PZ_UNIQUE: DAT_PZ_SUPPORT = 0;
pub const DAT_PZ_SAME: DAT_PZ_SUPPORT = 1;
pub const DAT_PZ_SHAREABLE: DAT_PZ_SUPPORT = 2;

/// Completion flags of DTOs and RMR binds (C enum `dat_completion_flags`).
pub type DAT_COMPLETION_FLAGS = u32;
pub const DAT_COMPLETION_DEFAULT_FLAG: DAT_COMPLETION_FLAGS = 0x00;
pub const DAT_COMPLETION_SUPPRESS_FLAG: DAT_COMPLETION_FLAGS = 0x01;
pub const DAT_COMPLETION_SOLICITED_WAIT_FLAG: DAT_COMPLETION_FLAGS = 0x02;
pub const DAT_COMPLETION_UNSIGNALLED_FLAG: DAT_COMPLETION_FLAGS = 0x04;
pub const DAT_COMPLETION_BARRIER_FENCE_FLAG: DAT_COMPLETION_FLAGS = 0x08;
pub const DAT_COMPLETION_EVD_THRESHOLD_FLAG: DAT_COMPLETION_FLAGS = 0x10;

/// Quality of service (C enum `dat_qos`).
pub type DAT_QOS = u32;
pub const DAT_QOS_BEST_EFFORT: DAT_QOS = 0x00;
pub const DAT_QOS_HIGH_THROUGHPUT: DAT_QOS = 0x01;
pub const DAT_QOS_LOW_LATENCY: DAT_QOS = 0x02;
pub const DAT_QOS_ECONOMY: DAT_QOS = 0x04;
pub const DAT_QOS_PREMIUM: DAT_QOS = 0x08;

/// Flags of `dat_ep_connect` (C enum `dat_connect_flags`).
pub type DAT_CONNECT_FLAGS = u32;
pub const DAT_CONNECT_DEFAULT_FLAG: DAT_CONNECT_FLAGS = 0x00;
pub const DAT_CONNECT_MULTIPATH_FLAG: DAT_CONNECT_FLAGS = 0x01;

/// How to close an IA or disconnect an EP (C enum `dat_close_flags`).
pub type DAT_CLOSE_FLAGS = u32;
pub const DAT_CLOSE_ABRUPT_FLAG: DAT_CLOSE_FLAGS = 0x00;
pub const DAT_CLOSE_GRACEFUL_FLAG: DAT_CLOSE_FLAGS = 0x01;
/// Default close mode (abrupt).
pub const DAT_CLOSE_DEFAULT: DAT_CLOSE_FLAGS = DAT_CLOSE_ABRUPT_FLAG;

/// Event streams an EVD accepts (C enum `dat_evd_flags`).
pub type DAT_EVD_FLAGS = u32;
pub const DAT_EVD_SOFTWARE_FLAG: DAT_EVD_FLAGS = 0x001;
pub const DAT_EVD_CR_FLAG: DAT_EVD_FLAGS = 0x010;
pub const DAT_EVD_DTO_FLAG: DAT_EVD_FLAGS = 0x020;
pub const DAT_EVD_CONNECTION_FLAG: DAT_EVD_FLAGS = 0x040;
pub const DAT_EVD_RMR_BIND_FLAG: DAT_EVD_FLAGS = 0x080;
pub const DAT_EVD_ASYNC_FLAG: DAT_EVD_FLAGS = 0x100;
/// All DAT event streams, no software events.
pub const DAT_EVD_DEFAULT_FLAG: DAT_EVD_FLAGS = 0x1F0;

/// Who creates the EP for a PSP connection request (C enum `dat_psp_flags`).
pub type DAT_PSP_FLAGS = u32;
pub const DAT_PSP_CONSUMER_FLAG: DAT_PSP_FLAGS = 0x00;
pub const DAT_PSP_PROVIDER_FLAG: DAT_PSP_FLAGS = 0x01;

/// Memory access privileges (C enum `dat_mem_priv_flags`).
pub type DAT_MEM_PRIV_FLAGS = u32;
pub const DAT_MEM_PRIV_NONE_FLAG: DAT_MEM_PRIV_FLAGS = 0x00;
pub const DAT_MEM_PRIV_LOCAL_READ_FLAG: DAT_MEM_PRIV_FLAGS = 0x01;
pub const DAT_MEM_PRIV_REMOTE_READ_FLAG: DAT_MEM_PRIV_FLAGS = 0x02;
pub const DAT_MEM_PRIV_LOCAL_WRITE_FLAG: DAT_MEM_PRIV_FLAGS = 0x10;
pub const DAT_MEM_PRIV_REMOTE_WRITE_FLAG: DAT_MEM_PRIV_FLAGS = 0x20;
pub const DAT_MEM_PRIV_ALL_FLAG: DAT_MEM_PRIV_FLAGS = 0x33;
/// Relaxed-ordering opt-out (a Sun addition).
pub const DAT_MEM_PRIV_RO_DISABLE_FLAG: DAT_MEM_PRIV_FLAGS = 0x100;
/// DAT 1.0 name: local and remote read.
pub const DAT_MEM_PRIV_READ_FLAG: DAT_MEM_PRIV_FLAGS =
    DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG;
/// DAT 1.0 name: local and remote write.
pub const DAT_MEM_PRIV_WRITE_FLAG: DAT_MEM_PRIV_FLAGS =
    DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG;

/// Field selector of `dat_lmr_query` (C enum `dat_lmr_param_mask`).
pub type DAT_LMR_PARAM_MASK = u32;
pub const DAT_LMR_FIELD_IA_HANDLE: DAT_LMR_PARAM_MASK = 0x001;
pub const DAT_LMR_FIELD_MEM_TYPE: DAT_LMR_PARAM_MASK = 0x002;
pub const DAT_LMR_FIELD_REGION_DESC: DAT_LMR_PARAM_MASK = 0x004;
pub const DAT_LMR_FIELD_LENGTH: DAT_LMR_PARAM_MASK = 0x008;
pub const DAT_LMR_FIELD_PZ_HANDLE: DAT_LMR_PARAM_MASK = 0x010;
pub const DAT_LMR_FIELD_MEM_PRIV: DAT_LMR_PARAM_MASK = 0x020;
pub const DAT_LMR_FIELD_LMR_CONTEXT: DAT_LMR_PARAM_MASK = 0x040;
pub const DAT_LMR_FIELD_RMR_CONTEXT: DAT_LMR_PARAM_MASK = 0x080;
pub const DAT_LMR_FIELD_REGISTERED_SIZE: DAT_LMR_PARAM_MASK = 0x100;
pub const DAT_LMR_FIELD_REGISTERED_ADDRESS: DAT_LMR_PARAM_MASK = 0x200;
pub const DAT_LMR_FIELD_ALL: DAT_LMR_PARAM_MASK = 0x3FF;

/// Field selector of `dat_rmr_query` (C enum `dat_rmr_param_mask`).
pub type DAT_RMR_PARAM_MASK = u32;
pub const DAT_RMR_FIELD_IA_HANDLE: DAT_RMR_PARAM_MASK = 0x01;
pub const DAT_RMR_FIELD_PZ_HANDLE: DAT_RMR_PARAM_MASK = 0x02;
pub const DAT_RMR_FIELD_LMR_TRIPLET: DAT_RMR_PARAM_MASK = 0x04;
pub const DAT_RMR_FIELD_MEM_PRIV: DAT_RMR_PARAM_MASK = 0x08;
pub const DAT_RMR_FIELD_RMR_CONTEXT: DAT_RMR_PARAM_MASK = 0x10;
pub const DAT_RMR_FIELD_ALL: DAT_RMR_PARAM_MASK = 0x1F;

/// Who owns an IOV after a DTO completes (C enum `dat_iov_ownership`).
pub type DAT_IOV_OWNERSHIP = u32;
pub const DAT_IOV_CONSUMER: DAT_IOV_OWNERSHIP = 0x0;
pub const DAT_IOV_PROVIDER_NOMOD: DAT_IOV_OWNERSHIP = 0x1;
pub const DAT_IOV_PROVIDER_MOD: DAT_IOV_OWNERSHIP = 0x2;

/// Whether a PSP creates EPs (C enum `dat_ep_creator_for_psp`).
pub type DAT_EP_CREATOR_FOR_PSP = u32;
pub const DAT_PSP_CREATES_EP_NEVER: DAT_EP_CREATOR_FOR_PSP = 0;
pub const DAT_PSP_CREATES_EP_IFASKED: DAT_EP_CREATOR_FOR_PSP = 1;
pub const DAT_PSP_CREATES_EP_ALWAYS: DAT_EP_CREATOR_FOR_PSP = 2;

/// Transport service of an EP (C enum `dat_service_type`).
pub type DAT_SERVICE_TYPE = u32;
/// Reliable connection.
pub const DAT_SERVICE_TYPE_RC: DAT_SERVICE_TYPE = 0;

/// Endpoint state (C enum `dat_ep_state`).
pub type DAT_EP_STATE = u32;
pub const DAT_EP_STATE_UNCONNECTED: DAT_EP_STATE = 0;
pub const DAT_EP_STATE_UNCONFIGURED_UNCONNECTED: DAT_EP_STATE = 1;
pub const DAT_EP_STATE_RESERVED: DAT_EP_STATE = 2;
pub const DAT_EP_STATE_UNCONFIGURED_RESERVED: DAT_EP_STATE = 3;
pub const DAT_EP_STATE_PASSIVE_CONNECTION_PENDING: DAT_EP_STATE = 4;
pub const DAT_EP_STATE_UNCONFIGURED_PASSIVE: DAT_EP_STATE = 5;
pub const DAT_EP_STATE_ACTIVE_CONNECTION_PENDING: DAT_EP_STATE = 6;
pub const DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING: DAT_EP_STATE = 7;
pub const DAT_EP_STATE_UNCONFIGURED_TENTATIVE: DAT_EP_STATE = 8;
pub const DAT_EP_STATE_CONNECTED: DAT_EP_STATE = 9;
pub const DAT_EP_STATE_DISCONNECT_PENDING: DAT_EP_STATE = 10;
pub const DAT_EP_STATE_DISCONNECTED: DAT_EP_STATE = 11;
pub const DAT_EP_STATE_COMPLETION_PENDING: DAT_EP_STATE = 12;
/// Older name of the disconnected state.
pub const DAT_EP_STATE_ERROR: DAT_EP_STATE = DAT_EP_STATE_DISCONNECTED;

/// Shared receive queue state (C enum `dat_srq_state`).
pub type DAT_SRQ_STATE = u32;
pub const DAT_SRQ_STATE_OPERATIONAL: DAT_SRQ_STATE = 0;
pub const DAT_SRQ_STATE_ERROR: DAT_SRQ_STATE = 1;

/// Field selector of `dat_srq_query` (C enum `dat_srq_param_mask`).
pub type DAT_SRQ_PARAM_MASK = u32;
pub const DAT_SRQ_FIELD_IA_HANDLE: DAT_SRQ_PARAM_MASK = 0x001;
pub const DAT_SRQ_FIELD_SRQ_STATE: DAT_SRQ_PARAM_MASK = 0x002;
pub const DAT_SRQ_FIELD_PZ_HANDLE: DAT_SRQ_PARAM_MASK = 0x004;
pub const DAT_SRQ_FIELD_MAX_RECV_DTO: DAT_SRQ_PARAM_MASK = 0x008;
pub const DAT_SRQ_FIELD_MAX_RECV_IOV: DAT_SRQ_PARAM_MASK = 0x010;
pub const DAT_SRQ_FIELD_LOW_WATERMARK: DAT_SRQ_PARAM_MASK = 0x020;
pub const DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT: DAT_SRQ_PARAM_MASK = 0x040;
pub const DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT: DAT_SRQ_PARAM_MASK = 0x080;
pub const DAT_SRQ_FIELD_ALL: DAT_SRQ_PARAM_MASK = 0x0FF;

/// Field selector of `dat_pz_query` (C enum `dat_pz_param_mask`).
pub type DAT_PZ_PARAM_MASK = u32;
pub const DAT_PZ_FIELD_IA_HANDLE: DAT_PZ_PARAM_MASK = 0x01;
pub const DAT_PZ_FIELD_ALL: DAT_PZ_PARAM_MASK = 0x01;

/// Field selector of `dat_psp_query` (C enum `dat_psp_param_mask`).
pub type DAT_PSP_PARAM_MASK = u32;
pub const DAT_PSP_FIELD_IA_HANDLE: DAT_PSP_PARAM_MASK = 0x01;
pub const DAT_PSP_FIELD_CONN_QUAL: DAT_PSP_PARAM_MASK = 0x02;
pub const DAT_PSP_FIELD_EVD_HANDLE: DAT_PSP_PARAM_MASK = 0x04;
pub const DAT_PSP_FIELD_PSP_FLAGS: DAT_PSP_PARAM_MASK = 0x08;
pub const DAT_PSP_FIELD_ALL: DAT_PSP_PARAM_MASK = 0x0F;

/// Field selector of `dat_rsp_query` (C enum `dat_rsp_param_mask`).
pub type DAT_RSP_PARAM_MASK = u32;
pub const DAT_RSP_FIELD_IA_HANDLE: DAT_RSP_PARAM_MASK = 0x01;
pub const DAT_RSP_FIELD_CONN_QUAL: DAT_RSP_PARAM_MASK = 0x02;
pub const DAT_RSP_FIELD_EVD_HANDLE: DAT_RSP_PARAM_MASK = 0x04;
pub const DAT_RSP_FIELD_EP_HANDLE: DAT_RSP_PARAM_MASK = 0x08;
pub const DAT_RSP_FIELD_ALL: DAT_RSP_PARAM_MASK = 0x0F;

/// Field selector of `dat_cr_query` (C enum `dat_cr_param_mask`).
pub type DAT_CR_PARAM_MASK = u32;
pub const DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR: DAT_CR_PARAM_MASK = 0x01;
pub const DAT_CR_FIELD_REMOTE_PORT_QUAL: DAT_CR_PARAM_MASK = 0x02;
pub const DAT_CR_FIELD_PRIVATE_DATA_SIZE: DAT_CR_PARAM_MASK = 0x04;
pub const DAT_CR_FIELD_PRIVATE_DATA: DAT_CR_PARAM_MASK = 0x08;
pub const DAT_CR_FIELD_LOCAL_EP_HANDLE: DAT_CR_PARAM_MASK = 0x10;
pub const DAT_CR_FIELD_ALL: DAT_CR_PARAM_MASK = 0x1F;

/// Completion status of a DTO or an RMR bind
/// (C enum `dat_dto_completion_status`).
pub type DAT_DTO_COMPLETION_STATUS = u32;
pub const DAT_DTO_SUCCESS: DAT_DTO_COMPLETION_STATUS = 0;
pub const DAT_DTO_ERR_FLUSHED: DAT_DTO_COMPLETION_STATUS = 1;
pub const DAT_DTO_ERR_LOCAL_LENGTH: DAT_DTO_COMPLETION_STATUS = 2;
pub const DAT_DTO_ERR_LOCAL_EP: DAT_DTO_COMPLETION_STATUS = 3;
pub const DAT_DTO_ERR_LOCAL_PROTECTION: DAT_DTO_COMPLETION_STATUS = 4;
pub const DAT_DTO_ERR_BAD_RESPONSE: DAT_DTO_COMPLETION_STATUS = 5;
pub const DAT_DTO_ERR_REMOTE_ACCESS: DAT_DTO_COMPLETION_STATUS = 6;
pub const DAT_DTO_ERR_REMOTE_RESPONDER: DAT_DTO_COMPLETION_STATUS = 7;
pub const DAT_DTO_ERR_TRANSPORT: DAT_DTO_COMPLETION_STATUS = 8;
pub const DAT_DTO_ERR_RECEIVER_NOT_READY: DAT_DTO_COMPLETION_STATUS = 9;
pub const DAT_DTO_ERR_PARTIAL_PACKET: DAT_DTO_COMPLETION_STATUS = 10;
pub const DAT_RMR_OPERATION_FAILED: DAT_DTO_COMPLETION_STATUS = 11;
/// Older name of DAT_DTO_ERR_LOCAL_LENGTH.
pub const DAT_DTO_LENGTH_ERROR: DAT_DTO_COMPLETION_STATUS = DAT_DTO_ERR_LOCAL_LENGTH;
/// Older name of DAT_DTO_ERR_FLUSHED.
pub const DAT_DTO_FAILURE: DAT_DTO_COMPLETION_STATUS = DAT_DTO_ERR_FLUSHED;
/// RMR bind succeeded.
pub const DAT_RMR_BIND_SUCCESS: DAT_DTO_COMPLETION_STATUS = DAT_DTO_SUCCESS;
/// RMR bind failed.
pub const DAT_RMR_BIND_FAILURE: DAT_DTO_COMPLETION_STATUS = DAT_DTO_ERR_FLUSHED;
/// Type of the status of an RMR bind completion (a macro naming
/// DAT_DTO_COMPLETION_STATUS in C).
/// cbindgen:ignore
pub type DAT_RMR_BIND_COMPLETION_STATUS = DAT_DTO_COMPLETION_STATUS;

/// Event numbers (C enum `dat_event_number`).
pub type DAT_EVENT_NUMBER = u32;
pub const DAT_DTO_COMPLETION_EVENT: DAT_EVENT_NUMBER = 0x00001;
pub const DAT_RMR_BIND_COMPLETION_EVENT: DAT_EVENT_NUMBER = 0x01001;
pub const DAT_CONNECTION_REQUEST_EVENT: DAT_EVENT_NUMBER = 0x02001;
pub const DAT_CONNECTION_EVENT_ESTABLISHED: DAT_EVENT_NUMBER = 0x04001;
pub const DAT_CONNECTION_EVENT_PEER_REJECTED: DAT_EVENT_NUMBER = 0x04002;
pub const DAT_CONNECTION_EVENT_NON_PEER_REJECTED: DAT_EVENT_NUMBER = 0x04003;
pub const DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: DAT_EVENT_NUMBER = 0x04004;
pub const DAT_CONNECTION_EVENT_DISCONNECTED: DAT_EVENT_NUMBER = 0x04005;
pub const DAT_CONNECTION_EVENT_BROKEN: DAT_EVENT_NUMBER = 0x04006;
pub const DAT_CONNECTION_EVENT_TIMED_OUT: DAT_EVENT_NUMBER = 0x04007;
pub const DAT_CONNECTION_EVENT_UNREACHABLE: DAT_EVENT_NUMBER = 0x04008;
pub const DAT_ASYNC_ERROR_EVD_OVERFLOW: DAT_EVENT_NUMBER = 0x08001;
pub const DAT_ASYNC_ERROR_IA_CATASTROPHIC: DAT_EVENT_NUMBER = 0x08002;
pub const DAT_ASYNC_ERROR_EP_BROKEN: DAT_EVENT_NUMBER = 0x08003;
pub const DAT_ASYNC_ERROR_TIMED_OUT: DAT_EVENT_NUMBER = 0x08004;
pub const DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: DAT_EVENT_NUMBER = 0x08005;
pub const DAT_SOFTWARE_EVENT: DAT_EVENT_NUMBER = 0x10001;

/// Reasons of an unaffiliated (IA) async error
/// (C enum `ia_async_error_reason`).
pub type DAT_IA_ASYNC_ERROR_REASON = u32;
pub const DAT_IA_CATASTROPHIC_ERROR: DAT_IA_ASYNC_ERROR_REASON = 0;
pub const DAT_IA_OTHER_ERROR: DAT_IA_ASYNC_ERROR_REASON = 1;

/// Reasons of an EP async error (C enum `ep_async_error_reason`).
pub type DAT_EP_ASYNC_ERROR_REASON = u32;
pub const DAT_EP_TRANSFER_TO_ERROR: DAT_EP_ASYNC_ERROR_REASON = 0;
pub const DAT_EP_OTHER_ERROR: DAT_EP_ASYNC_ERROR_REASON = 1;
pub const DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT: DAT_EP_ASYNC_ERROR_REASON = 2;

/// Reasons of an EVD async error (C enum `ep_evd_error_reason`).
pub type DAT_EVD_ASYNC_ERROR_REASON = u32;
pub const DAT_EVD_OVERFLOW_ERROR: DAT_EVD_ASYNC_ERROR_REASON = 0;
pub const DAT_EVD_OTHER_ERROR: DAT_EVD_ASYNC_ERROR_REASON = 1;

/// Reasons of an SRQ async error (C enum `ep_srq_error_reason`).
pub type DAT_SRQ_ASYNC_ERROR_REASON = u32;
pub const DAT_SRQ_TRANSFER_TO_ERROR: DAT_SRQ_ASYNC_ERROR_REASON = 0;
pub const DAT_SRQ_OTHER_ERROR: DAT_SRQ_ASYNC_ERROR_REASON = 1;
pub const DAT_SRQ_LOW_WATERMARK_EVENT: DAT_SRQ_ASYNC_ERROR_REASON = 2;

/// Reasons of an LMR async error (C enum `lmr_async_error_reason`).
pub type DAT_LMR_ASYNC_ERROR_REASON = u32;
pub const DAT_LMR_OTHER_ERROR: DAT_LMR_ASYNC_ERROR_REASON = 0;

/// Reasons of an RMR async error (C enum `rmr_async_error_reason`).
pub type DAT_RMR_ASYNC_ERROR_REASON = u32;
pub const DAT_RMR_OTHER_ERROR: DAT_RMR_ASYNC_ERROR_REASON = 0;

/// Reasons of a PZ async error (C enum `pz_async_error_reason`).
pub type DAT_PZ_ASYNC_ERROR_REASON = u32;
pub const DAT_PZ_OTHER_ERROR: DAT_PZ_ASYNC_ERROR_REASON = 0;

// ===========================================================================
// 64-bit field masks (typed constants, as UINT64_C values in the 1.2 header)
// ===========================================================================

/// Field selector of the IA attributes in `dat_ia_query`.
pub type DAT_IA_ATTR_MASK = DAT_UINT64;
/// Bit 0: `adapter_name`.
pub const DAT_IA_FIELD_IA_ADAPTER_NAME: DAT_IA_ATTR_MASK = 0x000000001 as DAT_IA_ATTR_MASK;
/// Bit 1: `vendor_name`.
pub const DAT_IA_FIELD_IA_VENDOR_NAME: DAT_IA_ATTR_MASK = 0x000000002 as DAT_IA_ATTR_MASK;
/// Bit 2: `hardware_version_major`.
pub const DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000004 as DAT_IA_ATTR_MASK;
/// Bit 3: `hardware_version_minor`.
pub const DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000008 as DAT_IA_ATTR_MASK;
/// Bit 4: `firmware_version_major`.
pub const DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000010 as DAT_IA_ATTR_MASK;
/// Bit 5: `firmware_version_minor`.
pub const DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION: DAT_IA_ATTR_MASK =
    0x000000020 as DAT_IA_ATTR_MASK;
/// Bit 6: `ia_address_ptr`.
pub const DAT_IA_FIELD_IA_ADDRESS_PTR: DAT_IA_ATTR_MASK = 0x000000040 as DAT_IA_ATTR_MASK;
/// Bit 7: `max_eps`.
pub const DAT_IA_FIELD_IA_MAX_EPS: DAT_IA_ATTR_MASK = 0x000000080 as DAT_IA_ATTR_MASK;
/// Bit 8: `max_dto_per_ep`.
pub const DAT_IA_FIELD_IA_MAX_DTO_PER_EP: DAT_IA_ATTR_MASK = 0x000000100 as DAT_IA_ATTR_MASK;
/// Bit 9: `max_rdma_read_per_ep_in`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN: DAT_IA_ATTR_MASK =
    0x000000200 as DAT_IA_ATTR_MASK;
/// Bit 10: `max_rdma_read_per_ep_out`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT: DAT_IA_ATTR_MASK =
    0x000000400 as DAT_IA_ATTR_MASK;
/// Bit 11: `max_evds`.
pub const DAT_IA_FIELD_IA_MAX_EVDS: DAT_IA_ATTR_MASK = 0x000000800 as DAT_IA_ATTR_MASK;
/// Bit 12: `max_evd_qlen`.
pub const DAT_IA_FIELD_IA_MAX_EVD_QLEN: DAT_IA_ATTR_MASK = 0x000001000 as DAT_IA_ATTR_MASK;
/// Bit 13: `max_iov_segments_per_dto`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO: DAT_IA_ATTR_MASK =
    0x000002000 as DAT_IA_ATTR_MASK;
/// Bit 14: `max_lmrs`.
pub const DAT_IA_FIELD_IA_MAX_LMRS: DAT_IA_ATTR_MASK = 0x000004000 as DAT_IA_ATTR_MASK;
/// Bit 15: `max_lmr_block_size`.
pub const DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE: DAT_IA_ATTR_MASK = 0x000008000 as DAT_IA_ATTR_MASK;
/// Bit 16: `max_lmr_virtual_address`.
pub const DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS: DAT_IA_ATTR_MASK =
    0x000010000 as DAT_IA_ATTR_MASK;
/// Bit 17: `max_pzs`.
pub const DAT_IA_FIELD_IA_MAX_PZS: DAT_IA_ATTR_MASK = 0x000020000 as DAT_IA_ATTR_MASK;
/// Bit 18: `max_message_size`.
pub const DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE: DAT_IA_ATTR_MASK = 0x000040000 as DAT_IA_ATTR_MASK;
/// Bit 19: `max_rdma_size`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_SIZE: DAT_IA_ATTR_MASK = 0x000080000 as DAT_IA_ATTR_MASK;
/// Bit 20: `max_rmrs`.
pub const DAT_IA_FIELD_IA_MAX_RMRS: DAT_IA_ATTR_MASK = 0x000100000 as DAT_IA_ATTR_MASK;
/// Bit 21: `max_rmr_target_address`.
pub const DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS: DAT_IA_ATTR_MASK =
    0x000200000 as DAT_IA_ATTR_MASK;
/// Bit 22: `max_srqs`.
pub const DAT_IA_FIELD_IA_MAX_SRQS: DAT_IA_ATTR_MASK = 0x000400000 as DAT_IA_ATTR_MASK;
/// Bit 23: `max_ep_per_srq`.
pub const DAT_IA_FIELD_IA_MAX_EP_PER_SRQ: DAT_IA_ATTR_MASK = 0x000800000 as DAT_IA_ATTR_MASK;
/// Bit 24: `max_recv_per_srq`.
pub const DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ: DAT_IA_ATTR_MASK = 0x001000000 as DAT_IA_ATTR_MASK;
/// Bit 25: `max_iov_segments_per_rdma_read`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ: DAT_IA_ATTR_MASK =
    0x002000000 as DAT_IA_ATTR_MASK;
/// Bit 26: `max_iov_segments_per_rdma_write`.
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE: DAT_IA_ATTR_MASK =
    0x004000000 as DAT_IA_ATTR_MASK;
/// Bit 27: `max_rdma_read_in`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_IN: DAT_IA_ATTR_MASK = 0x008000000 as DAT_IA_ATTR_MASK;
/// Bit 28: `max_rdma_read_out`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT: DAT_IA_ATTR_MASK = 0x010000000 as DAT_IA_ATTR_MASK;
/// Bit 29: `max_rdma_read_per_ep_in_guaranteed`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED: DAT_IA_ATTR_MASK =
    0x020000000 as DAT_IA_ATTR_MASK;
/// Bit 30: `max_rdma_read_per_ep_out_guaranteed`.
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED: DAT_IA_ATTR_MASK =
    0x040000000 as DAT_IA_ATTR_MASK;
/// Bit 31: `num_transport_attr`.
pub const DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR: DAT_IA_ATTR_MASK = 0x080000000 as DAT_IA_ATTR_MASK;
/// Bit 32: `transport_attr`.
pub const DAT_IA_FIELD_IA_TRANSPORT_ATTR: DAT_IA_ATTR_MASK = 0x100000000 as DAT_IA_ATTR_MASK;
/// Bit 33: `num_vendor_attr`.
pub const DAT_IA_FIELD_IA_NUM_VENDOR_ATTR: DAT_IA_ATTR_MASK = 0x200000000 as DAT_IA_ATTR_MASK;
/// Bit 34: `vendor_attr`.
pub const DAT_IA_FIELD_IA_VENDOR_ATTR: DAT_IA_ATTR_MASK = 0x400000000 as DAT_IA_ATTR_MASK;
/// Bits 0-34: every IA attribute (0x7FFFFFFFF).
pub const DAT_IA_FIELD_ALL: DAT_IA_ATTR_MASK = 0x7FFFFFFFF as DAT_IA_ATTR_MASK;
/// No IA attribute.
pub const DAT_IA_FIELD_NONE: DAT_IA_ATTR_MASK = 0x0 as DAT_IA_ATTR_MASK;
/// Older name of DAT_IA_FIELD_ALL.
pub const DAT_IA_ALL: DAT_IA_ATTR_MASK = DAT_IA_FIELD_ALL;
/// Older name of DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE.
pub const DAT_IA_FIELD_IA_MAX_MTU_SIZE: DAT_IA_ATTR_MASK = DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE;

/// Field selector of the provider attributes in `dat_ia_query`.
pub type DAT_PROVIDER_ATTR_MASK = DAT_UINT64;
/// Bit 0: `provider_name`.
pub const DAT_PROVIDER_FIELD_PROVIDER_NAME: DAT_PROVIDER_ATTR_MASK =
    0x0000001 as DAT_PROVIDER_ATTR_MASK;
/// Bit 1: `provider_version_major`.
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR: DAT_PROVIDER_ATTR_MASK =
    0x0000002 as DAT_PROVIDER_ATTR_MASK;
/// Bit 2: `provider_version_minor`.
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR: DAT_PROVIDER_ATTR_MASK =
    0x0000004 as DAT_PROVIDER_ATTR_MASK;
/// Bit 3: `dapl_version_major`.
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR: DAT_PROVIDER_ATTR_MASK =
    0x0000008 as DAT_PROVIDER_ATTR_MASK;
/// Bit 4: `dapl_version_minor`.
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR: DAT_PROVIDER_ATTR_MASK =
    0x0000010 as DAT_PROVIDER_ATTR_MASK;
/// Bit 5: `lmr_mem_types_supported`.
pub const DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000020 as DAT_PROVIDER_ATTR_MASK;
/// Bit 6: `iov_ownership_on_return`.
pub const DAT_PROVIDER_FIELD_IOV_OWNERSHIP: DAT_PROVIDER_ATTR_MASK =
    0x0000040 as DAT_PROVIDER_ATTR_MASK;
/// Bit 7: `dat_qos_supported`.
pub const DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000080 as DAT_PROVIDER_ATTR_MASK;
/// Bit 8: `completion_flags_supported`.
pub const DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0000100 as DAT_PROVIDER_ATTR_MASK;
/// Bit 9: `is_thread_safe`.
pub const DAT_PROVIDER_FIELD_IS_THREAD_SAFE: DAT_PROVIDER_ATTR_MASK =
    0x0000200 as DAT_PROVIDER_ATTR_MASK;
/// Bit 10: `max_private_data_size`.
pub const DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE: DAT_PROVIDER_ATTR_MASK =
    0x0000400 as DAT_PROVIDER_ATTR_MASK;
/// Bit 11: `supports_multipath`.
pub const DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH: DAT_PROVIDER_ATTR_MASK =
    0x0000800 as DAT_PROVIDER_ATTR_MASK;
/// Bit 12: `ep_creator`.
pub const DAT_PROVIDER_FIELD_EP_CREATOR: DAT_PROVIDER_ATTR_MASK =
    0x0001000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 13: `pz_support`.
pub const DAT_PROVIDER_FIELD_PZ_SUPPORT: DAT_PROVIDER_ATTR_MASK =
    0x0002000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 14: `optimal_buffer_alignment`.
pub const DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT: DAT_PROVIDER_ATTR_MASK =
    0x0004000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 15: `evd_stream_merging_supported`.
pub const DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0008000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 16: `srq_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0010000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 17: `srq_watermarks_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0020000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 18: `srq_ep_pz_difference_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0040000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 19: `srq_info_supported`.
pub const DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0080000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 20: `ep_recv_info_supported`.
pub const DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED: DAT_PROVIDER_ATTR_MASK =
    0x0100000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 21: `lmr_sync_req`.
pub const DAT_PROVIDER_FIELD_LMR_SYNC_REQ: DAT_PROVIDER_ATTR_MASK =
    0x0200000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 22: `dto_async_return_guaranteed`.
pub const DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED: DAT_PROVIDER_ATTR_MASK =
    0x0400000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 23: `rdma_write_for_rdma_read_req`.
pub const DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ: DAT_PROVIDER_ATTR_MASK =
    0x0800000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 24: `num_provider_specific_attr`.
pub const DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR: DAT_PROVIDER_ATTR_MASK =
    0x1000000 as DAT_PROVIDER_ATTR_MASK;
/// Bit 25: `provider_specific_attr`.
pub const DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR: DAT_PROVIDER_ATTR_MASK =
    0x2000000 as DAT_PROVIDER_ATTR_MASK;
/// Bits 0-25: every provider attribute (0x3FFFFFF).
pub const DAT_PROVIDER_FIELD_ALL: DAT_PROVIDER_ATTR_MASK = 0x3FFFFFF as DAT_PROVIDER_ATTR_MASK;
/// No provider attribute.
pub const DAT_PROVIDER_FIELD_NONE: DAT_PROVIDER_ATTR_MASK = 0x0 as DAT_PROVIDER_ATTR_MASK;

/// Field selector of `dat_ep_query` / `dat_ep_modify`.
pub type DAT_EP_PARAM_MASK = DAT_UINT64;
/// Bit 0: `ia_handle`.
pub const DAT_EP_FIELD_IA_HANDLE: DAT_EP_PARAM_MASK = 0x00000001 as DAT_EP_PARAM_MASK;
/// Bit 1: `ep_state`.
pub const DAT_EP_FIELD_EP_STATE: DAT_EP_PARAM_MASK = 0x00000002 as DAT_EP_PARAM_MASK;
/// Bit 2: `local_ia_address_ptr`.
pub const DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR: DAT_EP_PARAM_MASK = 0x00000004 as DAT_EP_PARAM_MASK;
/// Bit 3: `local_port_qual`.
pub const DAT_EP_FIELD_LOCAL_PORT_QUAL: DAT_EP_PARAM_MASK = 0x00000008 as DAT_EP_PARAM_MASK;
/// Bit 4: `remote_ia_address_ptr`.
pub const DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR: DAT_EP_PARAM_MASK = 0x00000010 as DAT_EP_PARAM_MASK;
/// Bit 5: `remote_port_qual`.
pub const DAT_EP_FIELD_REMOTE_PORT_QUAL: DAT_EP_PARAM_MASK = 0x00000020 as DAT_EP_PARAM_MASK;
/// Bit 6: `pz_handle`.
pub const DAT_EP_FIELD_PZ_HANDLE: DAT_EP_PARAM_MASK = 0x00000040 as DAT_EP_PARAM_MASK;
/// Bit 7: `recv_evd_handle`.
pub const DAT_EP_FIELD_RECV_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000080 as DAT_EP_PARAM_MASK;
/// Bit 8: `request_evd_handle`.
pub const DAT_EP_FIELD_REQUEST_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000100 as DAT_EP_PARAM_MASK;
/// Bit 9: `connect_evd_handle`.
pub const DAT_EP_FIELD_CONNECT_EVD_HANDLE: DAT_EP_PARAM_MASK = 0x00000200 as DAT_EP_PARAM_MASK;
/// Bit 10: `srq_handle`. (Bit 11 is unused.)
pub const DAT_EP_FIELD_SRQ_HANDLE: DAT_EP_PARAM_MASK = 0x00000400 as DAT_EP_PARAM_MASK;
/// Bit 12: `ep_attr.service_type`.
pub const DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE: DAT_EP_PARAM_MASK = 0x00001000 as DAT_EP_PARAM_MASK;
/// Bit 13: `ep_attr.max_message_size`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE: DAT_EP_PARAM_MASK =
    0x00002000 as DAT_EP_PARAM_MASK;
/// Bit 14: `ep_attr.max_rdma_size`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE: DAT_EP_PARAM_MASK = 0x00004000 as DAT_EP_PARAM_MASK;
/// Bit 15: `ep_attr.qos`.
pub const DAT_EP_FIELD_EP_ATTR_QOS: DAT_EP_PARAM_MASK = 0x00008000 as DAT_EP_PARAM_MASK;
/// Bit 16: `ep_attr.recv_completion_flags`.
pub const DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS: DAT_EP_PARAM_MASK =
    0x00010000 as DAT_EP_PARAM_MASK;
/// Bit 17: `ep_attr.request_completion_flags`.
pub const DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS: DAT_EP_PARAM_MASK =
    0x00020000 as DAT_EP_PARAM_MASK;
/// Bit 18: `ep_attr.max_recv_dtos`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS: DAT_EP_PARAM_MASK = 0x00040000 as DAT_EP_PARAM_MASK;
/// Bit 19: `ep_attr.max_request_dtos`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS: DAT_EP_PARAM_MASK =
    0x00080000 as DAT_EP_PARAM_MASK;
/// Bit 20: `ep_attr.max_recv_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV: DAT_EP_PARAM_MASK = 0x00100000 as DAT_EP_PARAM_MASK;
/// Bit 21: `ep_attr.max_request_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV: DAT_EP_PARAM_MASK = 0x00200000 as DAT_EP_PARAM_MASK;
/// Bit 22: `ep_attr.max_rdma_read_in`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN: DAT_EP_PARAM_MASK =
    0x00400000 as DAT_EP_PARAM_MASK;
/// Bit 23: `ep_attr.max_rdma_read_out`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT: DAT_EP_PARAM_MASK =
    0x00800000 as DAT_EP_PARAM_MASK;
/// Bit 24: `ep_attr.srq_soft_hw`.
pub const DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW: DAT_EP_PARAM_MASK = 0x01000000 as DAT_EP_PARAM_MASK;
/// Bit 25: `ep_attr.max_rdma_read_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV: DAT_EP_PARAM_MASK =
    0x02000000 as DAT_EP_PARAM_MASK;
/// Bit 26: `ep_attr.max_rdma_write_iov`.
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV: DAT_EP_PARAM_MASK =
    0x04000000 as DAT_EP_PARAM_MASK;
/// Bit 27: `ep_attr.ep_transport_specific_count`.
pub const DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR: DAT_EP_PARAM_MASK =
    0x08000000 as DAT_EP_PARAM_MASK;
/// Bit 28: `ep_attr.ep_transport_specific`.
pub const DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR: DAT_EP_PARAM_MASK =
    0x10000000 as DAT_EP_PARAM_MASK;
/// Bit 29: `ep_attr.ep_provider_specific_count`.
pub const DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR: DAT_EP_PARAM_MASK =
    0x20000000 as DAT_EP_PARAM_MASK;
/// Bit 30: `ep_attr.ep_provider_specific`.
pub const DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR: DAT_EP_PARAM_MASK =
    0x40000000 as DAT_EP_PARAM_MASK;
/// Bits 12-30: every `ep_attr` field (0x7FFFF000).
pub const DAT_EP_FIELD_EP_ATTR_ALL: DAT_EP_PARAM_MASK = 0x7FFFF000 as DAT_EP_PARAM_MASK;
/// Bits 0-10 and 12-30: every EP parameter (0x7FFFF7FF).
pub const DAT_EP_FIELD_ALL: DAT_EP_PARAM_MASK = 0x7FFFF7FF as DAT_EP_PARAM_MASK;

// ===========================================================================
// Counts with special meaning
// ===========================================================================

/// No watermark / unlimited (-1).
pub const DAT_WATERMARK_INFINITE: DAT_COUNT = !0 as DAT_COUNT;
/// Let the hardware choose (-1).
pub const DAT_HW_DEFAULT: DAT_COUNT = DAT_WATERMARK_INFINITE;
/// Default SRQ low watermark.
pub const DAT_SRQ_LW_DEFAULT: DAT_COUNT = 0x0;
/// The value is not known (-2).
pub const DAT_VALUE_UNKNOWN: DAT_COUNT = (!0 as DAT_COUNT) - 1;

// ===========================================================================
// DAT_RETURN: classes, types, subtypes
// ===========================================================================

/// Class bit of an error.
pub const DAT_CLASS_ERROR: DAT_UINT32 = 0x80000000u32;
/// Class bit of a warning.
pub const DAT_CLASS_WARNING: DAT_UINT32 = 0x40000000;
/// Class of success (no bit).
pub const DAT_CLASS_SUCCESS: DAT_UINT32 = 0x00000000;
/// Bits 29-16 of a DAT_RETURN: the type (0x3FFF0000).
pub const DAT_TYPE_MASK: DAT_UINT32 = 0x3fff0000;
/// Bits 15-0 of a DAT_RETURN: the subtype (0xFFFF).
pub const DAT_SUBTYPE_MASK: DAT_UINT32 = 0x0000FFFF;

/// Type part of a DAT_RETURN, already shifted into bits 29-16
/// (C enum `dat_return_type`).
pub type DAT_RETURN_TYPE = u32;
/// Success (0).
pub const DAT_SUCCESS: DAT_RETURN_TYPE = 0x00000000;
/// Aborted: the IA was closed or the EVD destroyed (0x00010000).
pub const DAT_ABORT: DAT_RETURN_TYPE = 0x00010000;
/// Connection qualifier already in use (0x00020000).
pub const DAT_CONN_QUAL_IN_USE: DAT_RETURN_TYPE = 0x00020000;
/// Out of resources (0x00030000).
pub const DAT_INSUFFICIENT_RESOURCES: DAT_RETURN_TYPE = 0x00030000;
/// Provider internal error (0x00040000).
pub const DAT_INTERNAL_ERROR: DAT_RETURN_TYPE = 0x00040000;
/// Invalid handle (0x00050000).
pub const DAT_INVALID_HANDLE: DAT_RETURN_TYPE = 0x00050000;
/// Invalid parameter (0x00060000).
pub const DAT_INVALID_PARAMETER: DAT_RETURN_TYPE = 0x00060000;
/// Object in the wrong state (0x00070000).
pub const DAT_INVALID_STATE: DAT_RETURN_TYPE = 0x00070000;
/// Buffer too small (0x00080000).
pub const DAT_LENGTH_ERROR: DAT_RETURN_TYPE = 0x00080000;
/// Model not supported (0x00090000).
pub const DAT_MODEL_NOT_SUPPORTED: DAT_RETURN_TYPE = 0x00090000;
/// IA name or attributes not in the registry (0x000A0000).
pub const DAT_PROVIDER_NOT_FOUND: DAT_RETURN_TYPE = 0x000A0000;
/// Privileges violation (0x000B0000).
pub const DAT_PRIVILEGES_VIOLATION: DAT_RETURN_TYPE = 0x000B0000;
/// Protection violation (0x000C0000).
pub const DAT_PROTECTION_VIOLATION: DAT_RETURN_TYPE = 0x000C0000;
/// Queue empty (0x000D0000).
pub const DAT_QUEUE_EMPTY: DAT_RETURN_TYPE = 0x000D0000;
/// EVD queue full (0x000E0000).
pub const DAT_QUEUE_FULL: DAT_RETURN_TYPE = 0x000E0000;
/// Timed out (0x000F0000).
pub const DAT_TIMEOUT_EXPIRED: DAT_RETURN_TYPE = 0x000F0000;
/// Provider already registered (0x00100000).
pub const DAT_PROVIDER_ALREADY_REGISTERED: DAT_RETURN_TYPE = 0x00100000;
/// Provider in use (0x00110000).
pub const DAT_PROVIDER_IN_USE: DAT_RETURN_TYPE = 0x00110000;
/// Invalid or unreachable address (0x00120000).
pub const DAT_INVALID_ADDRESS: DAT_RETURN_TYPE = 0x00120000;
/// Wait interrupted (0x00130000).
pub const DAT_INTERRUPTED_CALL: DAT_RETURN_TYPE = 0x00130000;
/// No connection qualifier left (0x00140000).
pub const DAT_CONN_QUAL_UNAVAILABLE: DAT_RETURN_TYPE = 0x00140000;
/// Not implemented (0x0FFF0000).
pub const DAT_NOT_IMPLEMENTED: DAT_RETURN_TYPE = 0x0FFF0000;
/// DAT 1.0 name of DAT_PROVIDER_NOT_FOUND.
pub const DAT_NAME_NOT_FOUND: DAT_RETURN_TYPE = DAT_PROVIDER_NOT_FOUND;

/// Subtype part of a DAT_RETURN, bits 15-0 (C enum `dat_return_subtype`).
pub type DAT_RETURN_SUBTYPE = u32;
pub const DAT_NO_SUBTYPE: DAT_RETURN_SUBTYPE = 0;
pub const DAT_SUB_INTERRUPTED: DAT_RETURN_SUBTYPE = 1;
pub const DAT_RESOURCE_MEMORY: DAT_RETURN_SUBTYPE = 2;
pub const DAT_RESOURCE_DEVICE: DAT_RETURN_SUBTYPE = 3;
pub const DAT_RESOURCE_TEP: DAT_RETURN_SUBTYPE = 4;
pub const DAT_RESOURCE_TEVD: DAT_RETURN_SUBTYPE = 5;
pub const DAT_RESOURCE_PROTECTION_DOMAIN: DAT_RETURN_SUBTYPE = 6;
pub const DAT_RESOURCE_MEMORY_REGION: DAT_RETURN_SUBTYPE = 7;
pub const DAT_RESOURCE_ERROR_HANDLER: DAT_RETURN_SUBTYPE = 8;
pub const DAT_RESOURCE_CREDITS: DAT_RETURN_SUBTYPE = 9;
pub const DAT_RESOURCE_SRQ: DAT_RETURN_SUBTYPE = 10;
pub const DAT_INVALID_HANDLE_IA: DAT_RETURN_SUBTYPE = 11;
pub const DAT_INVALID_HANDLE_EP: DAT_RETURN_SUBTYPE = 12;
pub const DAT_INVALID_HANDLE_LMR: DAT_RETURN_SUBTYPE = 13;
pub const DAT_INVALID_HANDLE_RMR: DAT_RETURN_SUBTYPE = 14;
pub const DAT_INVALID_HANDLE_PZ: DAT_RETURN_SUBTYPE = 15;
pub const DAT_INVALID_HANDLE_PSP: DAT_RETURN_SUBTYPE = 16;
pub const DAT_INVALID_HANDLE_RSP: DAT_RETURN_SUBTYPE = 17;
pub const DAT_INVALID_HANDLE_CR: DAT_RETURN_SUBTYPE = 18;
pub const DAT_INVALID_HANDLE_CNO: DAT_RETURN_SUBTYPE = 19;
pub const DAT_INVALID_HANDLE_EVD_CR: DAT_RETURN_SUBTYPE = 20;
pub const DAT_INVALID_HANDLE_EVD_REQUEST: DAT_RETURN_SUBTYPE = 21;
pub const DAT_INVALID_HANDLE_EVD_RECV: DAT_RETURN_SUBTYPE = 22;
pub const DAT_INVALID_HANDLE_EVD_CONN: DAT_RETURN_SUBTYPE = 23;
pub const DAT_INVALID_HANDLE_EVD_ASYNC: DAT_RETURN_SUBTYPE = 24;
pub const DAT_INVALID_HANDLE_SRQ: DAT_RETURN_SUBTYPE = 25;
pub const DAT_INVALID_HANDLE1: DAT_RETURN_SUBTYPE = 26;
pub const DAT_INVALID_HANDLE2: DAT_RETURN_SUBTYPE = 27;
pub const DAT_INVALID_HANDLE3: DAT_RETURN_SUBTYPE = 28;
pub const DAT_INVALID_HANDLE4: DAT_RETURN_SUBTYPE = 29;
pub const DAT_INVALID_HANDLE5: DAT_RETURN_SUBTYPE = 30;
pub const DAT_INVALID_HANDLE6: DAT_RETURN_SUBTYPE = 31;
pub const DAT_INVALID_HANDLE7: DAT_RETURN_SUBTYPE = 32;
pub const DAT_INVALID_HANDLE8: DAT_RETURN_SUBTYPE = 33;
pub const DAT_INVALID_HANDLE9: DAT_RETURN_SUBTYPE = 34;
pub const DAT_INVALID_HANDLE10: DAT_RETURN_SUBTYPE = 35;
pub const DAT_INVALID_ARG1: DAT_RETURN_SUBTYPE = 36;
pub const DAT_INVALID_ARG2: DAT_RETURN_SUBTYPE = 37;
pub const DAT_INVALID_ARG3: DAT_RETURN_SUBTYPE = 38;
pub const DAT_INVALID_ARG4: DAT_RETURN_SUBTYPE = 39;
pub const DAT_INVALID_ARG5: DAT_RETURN_SUBTYPE = 40;
pub const DAT_INVALID_ARG6: DAT_RETURN_SUBTYPE = 41;
pub const DAT_INVALID_ARG7: DAT_RETURN_SUBTYPE = 42;
pub const DAT_INVALID_ARG8: DAT_RETURN_SUBTYPE = 43;
pub const DAT_INVALID_ARG9: DAT_RETURN_SUBTYPE = 44;
pub const DAT_INVALID_ARG10: DAT_RETURN_SUBTYPE = 45;
pub const DAT_INVALID_STATE_EP_UNCONNECTED: DAT_RETURN_SUBTYPE = 46;
pub const DAT_INVALID_STATE_EP_ACTCONNPENDING: DAT_RETURN_SUBTYPE = 47;
pub const DAT_INVALID_STATE_EP_PASSCONNPENDING: DAT_RETURN_SUBTYPE = 48;
pub const DAT_INVALID_STATE_EP_TENTCONNPENDING: DAT_RETURN_SUBTYPE = 49;
pub const DAT_INVALID_STATE_EP_CONNECTED: DAT_RETURN_SUBTYPE = 50;
pub const DAT_INVALID_STATE_EP_DISCONNECTED: DAT_RETURN_SUBTYPE = 51;
pub const DAT_INVALID_STATE_EP_RESERVED: DAT_RETURN_SUBTYPE = 52;
pub const DAT_INVALID_STATE_EP_COMPLPENDING: DAT_RETURN_SUBTYPE = 53;
pub const DAT_INVALID_STATE_EP_DISCPENDING: DAT_RETURN_SUBTYPE = 54;
pub const DAT_INVALID_STATE_EP_PROVIDERCONTROL: DAT_RETURN_SUBTYPE = 55;
pub const DAT_INVALID_STATE_EP_NOTREADY: DAT_RETURN_SUBTYPE = 56;
pub const DAT_INVALID_STATE_EP_RECV_WATERMARK: DAT_RETURN_SUBTYPE = 57;
pub const DAT_INVALID_STATE_EP_PZ: DAT_RETURN_SUBTYPE = 58;
pub const DAT_INVALID_STATE_EP_EVD_REQUEST: DAT_RETURN_SUBTYPE = 59;
pub const DAT_INVALID_STATE_EP_EVD_RECV: DAT_RETURN_SUBTYPE = 60;
pub const DAT_INVALID_STATE_EP_EVD_CONNECT: DAT_RETURN_SUBTYPE = 61;
pub const DAT_INVALID_STATE_EP_UNCONFIGURED: DAT_RETURN_SUBTYPE = 62;
pub const DAT_INVALID_STATE_EP_UNCONFRESERVED: DAT_RETURN_SUBTYPE = 63;
pub const DAT_INVALID_STATE_EP_UNCONFPASSIVE: DAT_RETURN_SUBTYPE = 64;
pub const DAT_INVALID_STATE_EP_UNCONFTENTATIVE: DAT_RETURN_SUBTYPE = 65;
pub const DAT_INVALID_STATE_CNO_IN_USE: DAT_RETURN_SUBTYPE = 66;
pub const DAT_INVALID_STATE_CNO_DEAD: DAT_RETURN_SUBTYPE = 67;
pub const DAT_INVALID_STATE_EVD_OPEN: DAT_RETURN_SUBTYPE = 68;
pub const DAT_INVALID_STATE_EVD_ENABLED: DAT_RETURN_SUBTYPE = 69;
pub const DAT_INVALID_STATE_EVD_DISABLED: DAT_RETURN_SUBTYPE = 70;
pub const DAT_INVALID_STATE_EVD_WAITABLE: DAT_RETURN_SUBTYPE = 71;
pub const DAT_INVALID_STATE_EVD_UNWAITABLE: DAT_RETURN_SUBTYPE = 72;
pub const DAT_INVALID_STATE_EVD_IN_USE: DAT_RETURN_SUBTYPE = 73;
pub const DAT_INVALID_STATE_EVD_CONFIG_NOTIFY: DAT_RETURN_SUBTYPE = 74;
pub const DAT_INVALID_STATE_EVD_CONFIG_SOLICITED: DAT_RETURN_SUBTYPE = 75;
pub const DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD: DAT_RETURN_SUBTYPE = 76;
pub const DAT_INVALID_STATE_EVD_WAITER: DAT_RETURN_SUBTYPE = 77;
pub const DAT_INVALID_STATE_EVD_ASYNC: DAT_RETURN_SUBTYPE = 78;
pub const DAT_INVALID_STATE_IA_IN_USE: DAT_RETURN_SUBTYPE = 79;
pub const DAT_INVALID_STATE_LMR_IN_USE: DAT_RETURN_SUBTYPE = 80;
pub const DAT_INVALID_STATE_LMR_FREE: DAT_RETURN_SUBTYPE = 81;
pub const DAT_INVALID_STATE_PZ_IN_USE: DAT_RETURN_SUBTYPE = 82;
pub const DAT_INVALID_STATE_PZ_FREE: DAT_RETURN_SUBTYPE = 83;
pub const DAT_INVALID_STATE_SRQ_OPERATIONAL: DAT_RETURN_SUBTYPE = 84;
pub const DAT_INVALID_STATE_SRQ_ERROR: DAT_RETURN_SUBTYPE = 85;
pub const DAT_INVALID_STATE_SRQ_IN_USE: DAT_RETURN_SUBTYPE = 86;
pub const DAT_PRIVILEGES_READ: DAT_RETURN_SUBTYPE = 87;
pub const DAT_PRIVILEGES_WRITE: DAT_RETURN_SUBTYPE = 88;
pub const DAT_PRIVILEGES_RDMA_READ: DAT_RETURN_SUBTYPE = 89;
pub const DAT_PRIVILEGES_RDMA_WRITE: DAT_RETURN_SUBTYPE = 90;
pub const DAT_PROTECTION_READ: DAT_RETURN_SUBTYPE = 91;
pub const DAT_PROTECTION_WRITE: DAT_RETURN_SUBTYPE = 92;
pub const DAT_PROTECTION_RDMA_READ: DAT_RETURN_SUBTYPE = 93;
pub const DAT_PROTECTION_RDMA_WRITE: DAT_RETURN_SUBTYPE = 94;
pub const DAT_INVALID_ADDRESS_UNSUPPORTED: DAT_RETURN_SUBTYPE = 95;
pub const DAT_INVALID_ADDRESS_UNREACHABLE: DAT_RETURN_SUBTYPE = 96;
pub const DAT_INVALID_ADDRESS_MALFORMED: DAT_RETURN_SUBTYPE = 97;
pub const DAT_NAME_NOT_REGISTERED: DAT_RETURN_SUBTYPE = 98;
pub const DAT_MAJOR_NOT_FOUND: DAT_RETURN_SUBTYPE = 99;
pub const DAT_MINOR_NOT_FOUND: DAT_RETURN_SUBTYPE = 100;
pub const DAT_THREAD_SAFETY_NOT_FOUND: DAT_RETURN_SUBTYPE = 101;
/// Relaxed-ordering cookie check failed (a Sun addition).
pub const DAT_INVALID_RO_COOKIE: DAT_RETURN_SUBTYPE = 102;

// ===========================================================================
// Structures and unions
// ===========================================================================

/// A named attribute (name/value strings).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_named_attr {
    pub name: *const c_char,
    pub value: *const c_char,
}
pub type DAT_NAMED_ATTR = dat_named_attr;

/// Consumer context, also the DTO and RMR cookie (passed by value).
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_context {
    pub as_ptr: DAT_PVOID,
    pub as_64: DAT_UINT64,
    pub as_index: DAT_UVERYLONG,
}
pub type DAT_CONTEXT = dat_context;
/// Cookie returned in a DTO completion.
pub type DAT_DTO_COOKIE = DAT_CONTEXT;
/// Cookie returned in an RMR bind completion.
pub type DAT_RMR_COOKIE = DAT_CONTEXT;

/// One local buffer segment. `pad` keeps the 64-bit members aligned.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_lmr_triplet {
    pub lmr_context: DAT_LMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub virtual_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}
pub type DAT_LMR_TRIPLET = dat_lmr_triplet;

/// One remote buffer segment.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_triplet {
    pub rmr_context: DAT_RMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub target_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}
pub type DAT_RMR_TRIPLET = dat_rmr_triplet;

/// Parameters of an RMR (`dat_rmr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub lmr_triplet: DAT_LMR_TRIPLET,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub rmr_context: DAT_RMR_CONTEXT,
}
pub type DAT_RMR_PARAM = dat_rmr_param;

/// Attributes of an interface adapter (`dat_ia_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ia_attr {
    pub adapter_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub vendor_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub hardware_version_major: DAT_UINT32,
    pub hardware_version_minor: DAT_UINT32,
    pub firmware_version_major: DAT_UINT32,
    pub firmware_version_minor: DAT_UINT32,
    pub ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub max_eps: DAT_COUNT,
    pub max_dto_per_ep: DAT_COUNT,
    pub max_rdma_read_per_ep_in: DAT_COUNT,
    pub max_rdma_read_per_ep_out: DAT_COUNT,
    pub max_evds: DAT_COUNT,
    pub max_evd_qlen: DAT_COUNT,
    pub max_iov_segments_per_dto: DAT_COUNT,
    pub max_lmrs: DAT_COUNT,
    pub max_lmr_block_size: DAT_VLEN,
    pub max_lmr_virtual_address: DAT_VADDR,
    pub max_pzs: DAT_COUNT,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
    pub max_rmrs: DAT_COUNT,
    pub max_rmr_target_address: DAT_VADDR,
    pub max_srqs: DAT_COUNT,
    pub max_ep_per_srq: DAT_COUNT,
    pub max_recv_per_srq: DAT_COUNT,
    pub max_iov_segments_per_rdma_read: DAT_COUNT,
    pub max_iov_segments_per_rdma_write: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub max_rdma_read_per_ep_in_guaranteed: DAT_BOOLEAN,
    pub max_rdma_read_per_ep_out_guaranteed: DAT_BOOLEAN,
    pub num_transport_attr: DAT_COUNT,
    pub transport_attr: *mut DAT_NAMED_ATTR,
    pub num_vendor_attr: DAT_COUNT,
    pub vendor_attr: *mut DAT_NAMED_ATTR,
}
pub type DAT_IA_ATTR = dat_ia_attr;

/// Attributes of a provider (`dat_ia_query`). The 6x6 merging matrix is
/// indexed in DAT_EVD_FLAGS order: software, CR, DTO, connection, RMR
/// bind, async. (The 1.2 header declares its elements `const`; the layout
/// is the same.)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider_attr {
    pub provider_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub provider_version_major: DAT_UINT32,
    pub provider_version_minor: DAT_UINT32,
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub lmr_mem_types_supported: DAT_MEM_TYPE,
    pub iov_ownership_on_return: DAT_IOV_OWNERSHIP,
    pub dat_qos_supported: DAT_QOS,
    pub completion_flags_supported: DAT_COMPLETION_FLAGS,
    pub is_thread_safe: DAT_BOOLEAN,
    pub max_private_data_size: DAT_COUNT,
    pub supports_multipath: DAT_BOOLEAN,
    pub ep_creator: DAT_EP_CREATOR_FOR_PSP,
    pub pz_support: DAT_PZ_SUPPORT,
    pub optimal_buffer_alignment: DAT_UINT32,
    pub evd_stream_merging_supported: [[DAT_BOOLEAN; 6]; 6],
    pub srq_supported: DAT_BOOLEAN,
    pub srq_watermarks_supported: DAT_COUNT,
    pub srq_ep_pz_difference_supported: DAT_BOOLEAN,
    pub srq_info_supported: DAT_COUNT,
    pub ep_recv_info_supported: DAT_COUNT,
    pub lmr_sync_req: DAT_BOOLEAN,
    pub dto_async_return_guaranteed: DAT_BOOLEAN,
    pub rdma_write_for_rdma_read_req: DAT_BOOLEAN,
    pub num_provider_specific_attr: DAT_COUNT,
    pub provider_specific_attr: *mut DAT_NAMED_ATTR,
}
pub type DAT_PROVIDER_ATTR = dat_provider_attr;

/// Attributes of an endpoint.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ep_attr {
    pub service_type: DAT_SERVICE_TYPE,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
    pub qos: DAT_QOS,
    pub recv_completion_flags: DAT_COMPLETION_FLAGS,
    pub request_completion_flags: DAT_COMPLETION_FLAGS,
    pub max_recv_dtos: DAT_COUNT,
    pub max_request_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub max_request_iov: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub srq_soft_hw: DAT_COUNT,
    pub max_rdma_read_iov: DAT_COUNT,
    pub max_rdma_write_iov: DAT_COUNT,
    pub ep_transport_specific_count: DAT_COUNT,
    pub ep_transport_specific: *mut DAT_NAMED_ATTR,
    pub ep_provider_specific_count: DAT_COUNT,
    pub ep_provider_specific: *mut DAT_NAMED_ATTR,
}
pub type DAT_EP_ATTR = dat_ep_attr;

/// Parameters of an endpoint (`dat_ep_query` / `dat_ep_modify`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_ep_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub ep_state: DAT_EP_STATE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub local_port_qual: DAT_PORT_QUAL,
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub pz_handle: DAT_PZ_HANDLE,
    pub recv_evd_handle: DAT_EVD_HANDLE,
    pub request_evd_handle: DAT_EVD_HANDLE,
    pub connect_evd_handle: DAT_EVD_HANDLE,
    pub srq_handle: DAT_SRQ_HANDLE,
    pub ep_attr: DAT_EP_ATTR,
}
pub type DAT_EP_PARAM = dat_ep_param;

/// Parameters of an event dispatcher (`dat_evd_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_evd_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub evd_qlen: DAT_COUNT,
    pub evd_state: DAT_EVD_STATE,
    pub cno_handle: DAT_CNO_HANDLE,
    pub evd_flags: DAT_EVD_FLAGS,
}
pub type DAT_EVD_PARAM = dat_evd_param;

/// Shared-memory region description (udapl only).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_shared_memory {
    pub virtual_address: DAT_PVOID,
    pub shared_memory_id: DAT_LMR_COOKIE,
}
pub type DAT_SHARED_MEMORY = dat_shared_memory;

/// What an LMR is created from; passed by value to `dat_lmr_create`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_region_description {
    pub for_va: DAT_PVOID,
    pub for_lmr_handle: DAT_LMR_HANDLE,
    pub for_shared_memory: DAT_SHARED_MEMORY,
}
pub type DAT_REGION_DESCRIPTION = dat_region_description;

/// Parameters of an LMR (`dat_lmr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_lmr_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub mem_type: DAT_MEM_TYPE,
    pub region_desc: DAT_REGION_DESCRIPTION,
    pub length: DAT_VLEN,
    pub pz_handle: DAT_PZ_HANDLE,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub lmr_context: DAT_LMR_CONTEXT,
    pub rmr_context: DAT_RMR_CONTEXT,
    pub registered_size: DAT_VLEN,
    pub registered_address: DAT_VADDR,
}
pub type DAT_LMR_PARAM = dat_lmr_param;

/// OS wait proxy agent of a CNO; passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_os_wait_proxy_agent {
    pub instance_data: DAT_PVOID,
    pub proxy_agent_func: DAT_AGENT_FUNC,
}
pub type DAT_OS_WAIT_PROXY_AGENT = dat_os_wait_proxy_agent;

/// Parameters of a CNO (`dat_cno_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cno_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub agent: DAT_OS_WAIT_PROXY_AGENT,
}
pub type DAT_CNO_PARAM = dat_cno_param;

/// Attributes of a shared receive queue (`dat_srq_create`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_srq_attr {
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
}
pub type DAT_SRQ_ATTR = dat_srq_attr;

/// Parameters of a shared receive queue (`dat_srq_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_srq_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub srq_state: DAT_SRQ_STATE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
    pub available_dto_count: DAT_COUNT,
    pub outstanding_dto_count: DAT_COUNT,
}
pub type DAT_SRQ_PARAM = dat_srq_param;

/// Parameters of a protection zone (`dat_pz_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_pz_param {
    pub ia_handle: DAT_IA_HANDLE,
}
pub type DAT_PZ_PARAM = dat_pz_param;

/// Parameters of a public service point (`dat_psp_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_psp_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub psp_flags: DAT_PSP_FLAGS,
}
pub type DAT_PSP_PARAM = dat_psp_param;

/// Parameters of a reserved service point (`dat_rsp_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rsp_param {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub ep_handle: DAT_EP_HANDLE,
}
pub type DAT_RSP_PARAM = dat_rsp_param;

/// Parameters of a connection request (`dat_cr_query`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cr_param {
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
    pub local_ep_handle: DAT_EP_HANDLE,
}
pub type DAT_CR_PARAM = dat_cr_param;

/// Registry key of an IA: name, DAPL version, thread safety.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider_info {
    pub ia_name: [c_char; DAT_NAME_MAX_LENGTH],
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub is_thread_safe: DAT_BOOLEAN,
}
pub type DAT_PROVIDER_INFO = dat_provider_info;

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

/// Data of a DTO completion event (the length field really is spelled
/// `transfered_length`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_dto_completion_event_data {
    pub ep_handle: DAT_EP_HANDLE,
    pub user_cookie: DAT_DTO_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
    pub transfered_length: DAT_VLEN,
}
pub type DAT_DTO_COMPLETION_EVENT_DATA = dat_dto_completion_event_data;

/// Data of an RMR bind completion event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_bind_completion_event_data {
    pub rmr_handle: DAT_RMR_HANDLE,
    pub user_cookie: DAT_RMR_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
}
pub type DAT_RMR_BIND_COMPLETION_EVENT_DATA = dat_rmr_bind_completion_event_data;

/// The service point (PSP or RSP) a connection request arrived on.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_sp_handle {
    pub rsp_handle: DAT_RSP_HANDLE,
    pub psp_handle: DAT_PSP_HANDLE,
}
pub type DAT_SP_HANDLE = dat_sp_handle;

/// Data of a connection request event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cr_arrival_event_data {
    pub sp_handle: DAT_SP_HANDLE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub conn_qual: DAT_CONN_QUAL,
    pub cr_handle: DAT_CR_HANDLE,
}
pub type DAT_CR_ARRIVAL_EVENT_DATA = dat_cr_arrival_event_data;

/// Data of a connection event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_connection_event_data {
    pub ep_handle: DAT_EP_HANDLE,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
}
pub type DAT_CONNECTION_EVENT_DATA = dat_connection_event_data;

/// Data of an asynchronous error event; `reason` holds a value of the
/// object's DAT_*_ASYNC_ERROR_REASON.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_asynch_error_event_data {
    pub dat_handle: DAT_HANDLE,
    pub reason: DAT_COUNT,
}
pub type DAT_ASYNCH_ERROR_EVENT_DATA = dat_asynch_error_event_data;

/// Data of a software event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_software_event_data {
    pub pointer: DAT_PVOID,
}
pub type DAT_SOFTWARE_EVENT_DATA = dat_software_event_data;

/// Event data, selected by the event number.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_event_data {
    pub dto_completion_event_data: DAT_DTO_COMPLETION_EVENT_DATA,
    pub rmr_completion_event_data: DAT_RMR_BIND_COMPLETION_EVENT_DATA,
    pub cr_arrival_event_data: DAT_CR_ARRIVAL_EVENT_DATA,
    pub connect_event_data: DAT_CONNECTION_EVENT_DATA,
    pub asynch_error_event_data: DAT_ASYNCH_ERROR_EVENT_DATA,
    pub software_event_data: DAT_SOFTWARE_EVENT_DATA,
}
pub type DAT_EVENT_DATA = dat_event_data;

/// An event (48 bytes; 4 bytes of padding follow `event_number`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_event {
    pub event_number: DAT_EVENT_NUMBER,
    pub evd_handle: DAT_EVD_HANDLE,
    pub event_data: DAT_EVENT_DATA,
}
pub type DAT_EVENT = dat_event;

// ===========================================================================
// Provider interface: entry-point types and the DAT_PROVIDER table
// ===========================================================================

/// Slot 2 of DAT_PROVIDER. Five arguments: the fifth (a Solaris
/// `boolean_t`, 4 bytes) tells the provider the consumer is
/// relaxed-ordering aware. Always pass all five.
pub type DAT_IA_OPEN_FUNC = Option<
    unsafe extern "C" fn(
        name: DAT_NAME_PTR,
        async_evd_qlen: DAT_COUNT,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_handle: *mut DAT_IA_HANDLE,
        ro_aware_client: DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
/// Same shape as `dat_ia_openv`; declared for completeness, used by no slot.
pub type DAT_IA_OPENV_FUNC = Option<
    unsafe extern "C" fn(
        name: DAT_NAME_PTR,
        async_evd_qlen: DAT_COUNT,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_handle: *mut DAT_IA_HANDLE,
        dapl_major: DAT_UINT32,
        dapl_minor: DAT_UINT32,
        thread_safety: DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
pub type DAT_IA_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        async_evd_handle: *mut DAT_EVD_HANDLE,
        ia_attr_mask: DAT_IA_ATTR_MASK,
        ia_attr: *mut DAT_IA_ATTR,
        provider_attr_mask: DAT_PROVIDER_ATTR_MASK,
        provider_attr: *mut DAT_PROVIDER_ATTR,
    ) -> DAT_RETURN,
>;
pub type DAT_IA_CLOSE_FUNC = Option<
    unsafe extern "C" fn(ia_handle: DAT_IA_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN,
>;
pub type DAT_SET_CONSUMER_CONTEXT_FUNC =
    Option<unsafe extern "C" fn(dat_handle: DAT_HANDLE, context: DAT_CONTEXT) -> DAT_RETURN>;
pub type DAT_GET_CONSUMER_CONTEXT_FUNC =
    Option<unsafe extern "C" fn(dat_handle: DAT_HANDLE, context: *mut DAT_CONTEXT) -> DAT_RETURN>;
pub type DAT_GET_HANDLE_TYPE_FUNC = Option<
    unsafe extern "C" fn(dat_handle: DAT_HANDLE, handle_type: *mut DAT_HANDLE_TYPE) -> DAT_RETURN,
>;

pub type DAT_CNO_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        agent: DAT_OS_WAIT_PROXY_AGENT,
        cno_handle: *mut DAT_CNO_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_CNO_MODIFY_AGENT_FUNC = Option<
    unsafe extern "C" fn(cno_handle: DAT_CNO_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT) -> DAT_RETURN,
>;
pub type DAT_CNO_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        cno_handle: DAT_CNO_HANDLE,
        cno_param_mask: DAT_CNO_PARAM_MASK,
        cno_param: *mut DAT_CNO_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_CNO_FREE_FUNC = Option<unsafe extern "C" fn(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN>;
pub type DAT_CNO_WAIT_FUNC = Option<
    unsafe extern "C" fn(
        cno_handle: DAT_CNO_HANDLE,
        timeout: DAT_TIMEOUT,
        evd_handle: *mut DAT_EVD_HANDLE,
    ) -> DAT_RETURN,
>;

pub type DAT_CR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        cr_handle: DAT_CR_HANDLE,
        cr_param_mask: DAT_CR_PARAM_MASK,
        cr_param: *mut DAT_CR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_CR_ACCEPT_FUNC = Option<
    unsafe extern "C" fn(
        cr_handle: DAT_CR_HANDLE,
        ep_handle: DAT_EP_HANDLE,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
    ) -> DAT_RETURN,
>;
pub type DAT_CR_REJECT_FUNC = Option<unsafe extern "C" fn(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN>;
pub type DAT_CR_HANDOFF_FUNC =
    Option<unsafe extern "C" fn(cr_handle: DAT_CR_HANDLE, handoff: DAT_CONN_QUAL) -> DAT_RETURN>;

pub type DAT_EVD_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        evd_min_qlen: DAT_COUNT,
        cno_handle: DAT_CNO_HANDLE,
        evd_flags: DAT_EVD_FLAGS,
        evd_handle: *mut DAT_EVD_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        evd_handle: DAT_EVD_HANDLE,
        evd_param_mask: DAT_EVD_PARAM_MASK,
        evd_param: *mut DAT_EVD_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_MODIFY_CNO_FUNC = Option<
    unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN,
>;
pub type DAT_EVD_ENABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_DISABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_WAIT_FUNC = Option<
    unsafe extern "C" fn(
        evd_handle: DAT_EVD_HANDLE,
        timeout: DAT_TIMEOUT,
        threshold: DAT_COUNT,
        event: *mut DAT_EVENT,
        nmore: *mut DAT_COUNT,
    ) -> DAT_RETURN,
>;
pub type DAT_EVD_RESIZE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, evd_min_qlen: DAT_COUNT) -> DAT_RETURN>;
pub type DAT_EVD_POST_SE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, event: *const DAT_EVENT) -> DAT_RETURN>;
pub type DAT_EVD_DEQUEUE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE, event: *mut DAT_EVENT) -> DAT_RETURN>;
pub type DAT_EVD_FREE_FUNC = Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_SET_UNWAITABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;
pub type DAT_EVD_CLEAR_UNWAITABLE_FUNC =
    Option<unsafe extern "C" fn(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        recv_evd_handle: DAT_EVD_HANDLE,
        request_evd_handle: DAT_EVD_HANDLE,
        connect_evd_handle: DAT_EVD_HANDLE,
        ep_attributes: *const DAT_EP_ATTR,
        ep_handle: *mut DAT_EP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_CREATE_WITH_SRQ_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        recv_evd_handle: DAT_EVD_HANDLE,
        request_evd_handle: DAT_EVD_HANDLE,
        connect_evd_handle: DAT_EVD_HANDLE,
        srq_handle: DAT_SRQ_HANDLE,
        ep_attributes: *const DAT_EP_ATTR,
        ep_handle: *mut DAT_EP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_param_mask: DAT_EP_PARAM_MASK,
        ep_param: *mut DAT_EP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_MODIFY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_param_mask: DAT_EP_PARAM_MASK,
        ep_param: *const DAT_EP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_CONNECT_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        remote_ia_address: DAT_IA_ADDRESS_PTR,
        remote_conn_qual: DAT_CONN_QUAL,
        timeout: DAT_TIMEOUT,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
        qos: DAT_QOS,
        connect_flags: DAT_CONNECT_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_DUP_CONNECT_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_dup_handle: DAT_EP_HANDLE,
        timeout: DAT_TIMEOUT,
        private_data_size: DAT_COUNT,
        private_data: DAT_PVOID,
        qos: DAT_QOS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_DISCONNECT_FUNC = Option<
    unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN,
>;
pub type DAT_EP_POST_SEND_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RECV_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RDMA_READ_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        remote_iov: *const DAT_RMR_TRIPLET,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_POST_RDMA_WRITE_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
        remote_iov: *const DAT_RMR_TRIPLET,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_GET_STATUS_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        ep_state: *mut DAT_EP_STATE,
        recv_idle: *mut DAT_BOOLEAN,
        request_idle: *mut DAT_BOOLEAN,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_FREE_FUNC = Option<unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN>;
pub type DAT_EP_RESET_FUNC = Option<unsafe extern "C" fn(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN>;
pub type DAT_EP_RECV_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        nbufs_allocated: *mut DAT_COUNT,
        bufs_alloc_span: *mut DAT_COUNT,
    ) -> DAT_RETURN,
>;
pub type DAT_EP_SET_WATERMARK_FUNC = Option<
    unsafe extern "C" fn(
        ep_handle: DAT_EP_HANDLE,
        soft_high_watermark: DAT_COUNT,
        hard_high_watermark: DAT_COUNT,
    ) -> DAT_RETURN,
>;

pub type DAT_LMR_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        mem_type: DAT_MEM_TYPE,
        region_description: DAT_REGION_DESCRIPTION,
        length: DAT_VLEN,
        pz_handle: DAT_PZ_HANDLE,
        privileges: DAT_MEM_PRIV_FLAGS,
        lmr_handle: *mut DAT_LMR_HANDLE,
        lmr_context: *mut DAT_LMR_CONTEXT,
        rmr_context: *mut DAT_RMR_CONTEXT,
        registered_length: *mut DAT_VLEN,
        registered_address: *mut DAT_VADDR,
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        lmr_handle: DAT_LMR_HANDLE,
        lmr_param_mask: DAT_LMR_PARAM_MASK,
        lmr_param: *mut DAT_LMR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_FREE_FUNC = Option<unsafe extern "C" fn(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN>;
pub type DAT_LMR_SYNC_RDMA_READ_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        local_segments: *const DAT_LMR_TRIPLET,
        num_segments: DAT_VLEN,
    ) -> DAT_RETURN,
>;
pub type DAT_LMR_SYNC_RDMA_WRITE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        local_segments: *const DAT_LMR_TRIPLET,
        num_segments: DAT_VLEN,
    ) -> DAT_RETURN,
>;

pub type DAT_RMR_CREATE_FUNC = Option<
    unsafe extern "C" fn(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE) -> DAT_RETURN,
>;
pub type DAT_RMR_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        rmr_handle: DAT_RMR_HANDLE,
        rmr_param_mask: DAT_RMR_PARAM_MASK,
        rmr_param: *mut DAT_RMR_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_RMR_BIND_FUNC = Option<
    unsafe extern "C" fn(
        rmr_handle: DAT_RMR_HANDLE,
        lmr_triplet: *const DAT_LMR_TRIPLET,
        mem_priv: DAT_MEM_PRIV_FLAGS,
        ep_handle: DAT_EP_HANDLE,
        user_cookie: DAT_RMR_COOKIE,
        completion_flags: DAT_COMPLETION_FLAGS,
        rmr_context: *mut DAT_RMR_CONTEXT,
    ) -> DAT_RETURN,
>;
pub type DAT_RMR_FREE_FUNC = Option<unsafe extern "C" fn(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN>;

pub type DAT_PSP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: DAT_CONN_QUAL,
        evd_handle: DAT_EVD_HANDLE,
        psp_flags: DAT_PSP_FLAGS,
        psp_handle: *mut DAT_PSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_CREATE_ANY_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: *mut DAT_CONN_QUAL,
        evd_handle: DAT_EVD_HANDLE,
        psp_flags: DAT_PSP_FLAGS,
        psp_handle: *mut DAT_PSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        psp_handle: DAT_PSP_HANDLE,
        psp_param_mask: DAT_PSP_PARAM_MASK,
        psp_param: *mut DAT_PSP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_PSP_FREE_FUNC = Option<unsafe extern "C" fn(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN>;

pub type DAT_RSP_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        conn_qual: DAT_CONN_QUAL,
        ep_handle: DAT_EP_HANDLE,
        evd_handle: DAT_EVD_HANDLE,
        rsp_handle: *mut DAT_RSP_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_RSP_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        rsp_handle: DAT_RSP_HANDLE,
        rsp_param_mask: DAT_RSP_PARAM_MASK,
        rsp_param: *mut DAT_RSP_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_RSP_FREE_FUNC = Option<unsafe extern "C" fn(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN>;

pub type DAT_PZ_CREATE_FUNC = Option<
    unsafe extern "C" fn(ia_handle: DAT_IA_HANDLE, pz_handle: *mut DAT_PZ_HANDLE) -> DAT_RETURN,
>;
pub type DAT_PZ_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        pz_handle: DAT_PZ_HANDLE,
        pz_param_mask: DAT_PZ_PARAM_MASK,
        pz_param: *mut DAT_PZ_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_PZ_FREE_FUNC = Option<unsafe extern "C" fn(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN>;

pub type DAT_SRQ_CREATE_FUNC = Option<
    unsafe extern "C" fn(
        ia_handle: DAT_IA_HANDLE,
        pz_handle: DAT_PZ_HANDLE,
        srq_attr: *mut DAT_SRQ_ATTR,
        srq_handle: *mut DAT_SRQ_HANDLE,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_FREE_FUNC = Option<unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN>;
pub type DAT_SRQ_POST_RECV_FUNC = Option<
    unsafe extern "C" fn(
        srq_handle: DAT_SRQ_HANDLE,
        num_segments: DAT_COUNT,
        local_iov: *mut DAT_LMR_TRIPLET,
        user_cookie: DAT_DTO_COOKIE,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_QUERY_FUNC = Option<
    unsafe extern "C" fn(
        srq_handle: DAT_SRQ_HANDLE,
        srq_param_mask: DAT_SRQ_PARAM_MASK,
        srq_param: *mut DAT_SRQ_PARAM,
    ) -> DAT_RETURN,
>;
pub type DAT_SRQ_RESIZE_FUNC = Option<
    unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE, srq_max_recv_dto: DAT_COUNT) -> DAT_RETURN,
>;
pub type DAT_SRQ_SET_LW_FUNC = Option<
    unsafe extern "C" fn(srq_handle: DAT_SRQ_HANDLE, low_watermark: DAT_COUNT) -> DAT_RETURN,
>;

/// The provider's function table. The first word of every object a DAT
/// handle points to is a pointer to one of these (see
/// DAT_HANDLE_TO_PROVIDER); `device_name` must equal the IA name.
/// 70 pointer-sized members, 560 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_provider {
    pub device_name: *const c_char,
    pub extension: DAT_PVOID,

    pub ia_open_func: DAT_IA_OPEN_FUNC,
    pub ia_query_func: DAT_IA_QUERY_FUNC,
    pub ia_close_func: DAT_IA_CLOSE_FUNC,

    pub set_consumer_context_func: DAT_SET_CONSUMER_CONTEXT_FUNC,
    pub get_consumer_context_func: DAT_GET_CONSUMER_CONTEXT_FUNC,
    pub get_handle_type_func: DAT_GET_HANDLE_TYPE_FUNC,

    pub cno_create_func: DAT_CNO_CREATE_FUNC,
    pub cno_modify_agent_func: DAT_CNO_MODIFY_AGENT_FUNC,
    pub cno_query_func: DAT_CNO_QUERY_FUNC,
    pub cno_free_func: DAT_CNO_FREE_FUNC,
    pub cno_wait_func: DAT_CNO_WAIT_FUNC,

    pub cr_query_func: DAT_CR_QUERY_FUNC,
    pub cr_accept_func: DAT_CR_ACCEPT_FUNC,
    pub cr_reject_func: DAT_CR_REJECT_FUNC,
    pub cr_handoff_func: DAT_CR_HANDOFF_FUNC,

    pub evd_create_func: DAT_EVD_CREATE_FUNC,
    pub evd_query_func: DAT_EVD_QUERY_FUNC,

    pub evd_modify_cno_func: DAT_EVD_MODIFY_CNO_FUNC,
    pub evd_enable_func: DAT_EVD_ENABLE_FUNC,
    pub evd_disable_func: DAT_EVD_DISABLE_FUNC,
    pub evd_wait_func: DAT_EVD_WAIT_FUNC,

    pub evd_resize_func: DAT_EVD_RESIZE_FUNC,
    pub evd_post_se_func: DAT_EVD_POST_SE_FUNC,
    pub evd_dequeue_func: DAT_EVD_DEQUEUE_FUNC,
    pub evd_free_func: DAT_EVD_FREE_FUNC,

    pub ep_create_func: DAT_EP_CREATE_FUNC,
    pub ep_query_func: DAT_EP_QUERY_FUNC,
    pub ep_modify_func: DAT_EP_MODIFY_FUNC,
    pub ep_connect_func: DAT_EP_CONNECT_FUNC,
    pub ep_dup_connect_func: DAT_EP_DUP_CONNECT_FUNC,
    pub ep_disconnect_func: DAT_EP_DISCONNECT_FUNC,
    pub ep_post_send_func: DAT_EP_POST_SEND_FUNC,
    pub ep_post_recv_func: DAT_EP_POST_RECV_FUNC,
    pub ep_post_rdma_read_func: DAT_EP_POST_RDMA_READ_FUNC,
    pub ep_post_rdma_write_func: DAT_EP_POST_RDMA_WRITE_FUNC,
    pub ep_get_status_func: DAT_EP_GET_STATUS_FUNC,
    pub ep_free_func: DAT_EP_FREE_FUNC,

    pub lmr_create_func: DAT_LMR_CREATE_FUNC,
    pub lmr_query_func: DAT_LMR_QUERY_FUNC,
    pub lmr_free_func: DAT_LMR_FREE_FUNC,

    pub rmr_create_func: DAT_RMR_CREATE_FUNC,
    pub rmr_query_func: DAT_RMR_QUERY_FUNC,
    pub rmr_bind_func: DAT_RMR_BIND_FUNC,
    pub rmr_free_func: DAT_RMR_FREE_FUNC,

    pub psp_create_func: DAT_PSP_CREATE_FUNC,
    pub psp_query_func: DAT_PSP_QUERY_FUNC,
    pub psp_free_func: DAT_PSP_FREE_FUNC,

    pub rsp_create_func: DAT_RSP_CREATE_FUNC,
    pub rsp_query_func: DAT_RSP_QUERY_FUNC,
    pub rsp_free_func: DAT_RSP_FREE_FUNC,

    pub pz_create_func: DAT_PZ_CREATE_FUNC,
    pub pz_query_func: DAT_PZ_QUERY_FUNC,
    pub pz_free_func: DAT_PZ_FREE_FUNC,

    // Added in DAT 1.1.
    pub psp_create_any_func: DAT_PSP_CREATE_ANY_FUNC,
    pub ep_reset_func: DAT_EP_RESET_FUNC,

    // Added in uDAT 1.1.
    pub evd_set_unwaitable_func: DAT_EVD_SET_UNWAITABLE_FUNC,
    pub evd_clear_unwaitable_func: DAT_EVD_CLEAR_UNWAITABLE_FUNC,

    // Added in DAT 1.2.
    pub lmr_sync_rdma_read_func: DAT_LMR_SYNC_RDMA_READ_FUNC,
    pub lmr_sync_rdma_write_func: DAT_LMR_SYNC_RDMA_WRITE_FUNC,

    pub ep_create_with_srq_func: DAT_EP_CREATE_WITH_SRQ_FUNC,
    pub ep_recv_query_func: DAT_EP_RECV_QUERY_FUNC,
    pub ep_set_watermark_func: DAT_EP_SET_WATERMARK_FUNC,
    pub srq_create_func: DAT_SRQ_CREATE_FUNC,
    pub srq_free_func: DAT_SRQ_FREE_FUNC,
    pub srq_post_recv_func: DAT_SRQ_POST_RECV_FUNC,
    pub srq_query_func: DAT_SRQ_QUERY_FUNC,
    pub srq_resize_func: DAT_SRQ_RESIZE_FUNC,
    pub srq_set_lw_func: DAT_SRQ_SET_LW_FUNC,
}
pub type DAT_PROVIDER = dat_provider;

/// `dat_provider_init(provider_info, instance_data)`, exported by a
/// provider library and called after it is loaded.
pub type DAT_PROVIDER_INIT_FUNC = Option<
    unsafe extern "C" fn(provider_info: *const DAT_PROVIDER_INFO, instance_data: *const c_char),
>;
/// `dat_provider_fini(provider_info)`, called before the library is unloaded.
pub type DAT_PROVIDER_FINI_FUNC =
    Option<unsafe extern "C" fn(provider_info: *const DAT_PROVIDER_INFO)>;

/// Symbol name of the provider init entry point, NUL-terminated (for dlsym).
/// cbindgen:ignore
pub const DAT_PROVIDER_INIT_FUNC_STR: &[u8] = b"dat_provider_init\0";
/// Symbol name of the provider fini entry point, NUL-terminated (for dlsym).
/// cbindgen:ignore
pub const DAT_PROVIDER_FINI_FUNC_STR: &[u8] = b"dat_provider_fini\0";

// ===========================================================================
// Compile-time checks against the documented x86-64 layouts
// ===========================================================================

/// cbindgen:ignore
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
mod layout_checks {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    /// `layout!(Type, size, align; field => offset, ...)` asserts the size,
    /// the alignment and every listed field offset at compile time.
    macro_rules! layout {
        ($t:ty, $size:expr, $align:expr; $($field:ident => $off:expr),* $(,)?) => {
            const _: () = {
                assert!(size_of::<$t>() == $size);
                assert!(align_of::<$t>() == $align);
                $( assert!(offset_of!($t, $field) == $off); )*
            };
        };
    }

    // Scalars.
    const _: () = {
        assert!(size_of::<DAT_UINT32>() == 4);
        assert!(size_of::<DAT_UINT64>() == 8);
        assert!(size_of::<DAT_UVERYLONG>() == 8);
        assert!(size_of::<DAT_COUNT>() == 4);
        assert!(size_of::<DAT_PVOID>() == 8);
        assert!(size_of::<DAT_HANDLE>() == 8);
        assert!(size_of::<DAT_SOCK_ADDR>() == 16);
        assert!(size_of::<DAT_SOCK_ADDR6>() == 28);
        assert!(size_of::<DAT_LMR_COOKIE>() == 8);
        assert!(size_of::<DAT_AGENT_FUNC>() == 8);
        assert!(size_of::<DAT_IA_OPEN_FUNC>() == 8);
        assert!(DAT_TIMEOUT_INFINITE == 0xFFFF_FFFF);
        assert!(DAT_WATERMARK_INFINITE == -1);
        assert!(DAT_HW_DEFAULT == -1);
        assert!(DAT_VALUE_UNKNOWN == -2);
        assert!(DAT_IA_FIELD_ALL == 0x7_FFFF_FFFF);
        assert!(DAT_PROVIDER_FIELD_ALL == 0x3FF_FFFF);
        assert!(DAT_EP_FIELD_ALL == 0x7FFF_F7FF);
        assert!(DAT_EP_FIELD_EP_ATTR_ALL == 0x7FFF_F000);
        assert!(DAT_MEM_PRIV_READ_FLAG == 0x03);
        assert!(DAT_MEM_PRIV_WRITE_FLAG == 0x30);
        assert!(DAT_CLASS_ERROR == 0x8000_0000);
        assert!(DAT_INVALID_RO_COOKIE == 102);
        assert!(DAT_AF_INET == 2);
        assert!(DAT_AF_INET6 == 10);
    };

    layout!(DAT_NAMED_ATTR, 16, 8; name => 0, value => 8);
    layout!(DAT_CONTEXT, 8, 8; as_ptr => 0, as_64 => 0, as_index => 0);
    layout!(DAT_LMR_TRIPLET, 24, 8;
        lmr_context => 0, pad => 4, virtual_address => 8, segment_length => 16);
    layout!(DAT_RMR_TRIPLET, 24, 8;
        rmr_context => 0, pad => 4, target_address => 8, segment_length => 16);
    layout!(DAT_RMR_PARAM, 48, 8;
        ia_handle => 0, pz_handle => 8, lmr_triplet => 16, mem_priv => 40, rmr_context => 44);
    layout!(DAT_IA_ATTR, 688, 8;
        adapter_name => 0,
        vendor_name => 256,
        hardware_version_major => 512,
        hardware_version_minor => 516,
        firmware_version_major => 520,
        firmware_version_minor => 524,
        ia_address_ptr => 528,
        max_eps => 536,
        max_dto_per_ep => 540,
        max_rdma_read_per_ep_in => 544,
        max_rdma_read_per_ep_out => 548,
        max_evds => 552,
        max_evd_qlen => 556,
        max_iov_segments_per_dto => 560,
        max_lmrs => 564,
        max_lmr_block_size => 568,
        max_lmr_virtual_address => 576,
        max_pzs => 584,
        max_message_size => 592,
        max_rdma_size => 600,
        max_rmrs => 608,
        max_rmr_target_address => 616,
        max_srqs => 624,
        max_ep_per_srq => 628,
        max_recv_per_srq => 632,
        max_iov_segments_per_rdma_read => 636,
        max_iov_segments_per_rdma_write => 640,
        max_rdma_read_in => 644,
        max_rdma_read_out => 648,
        max_rdma_read_per_ep_in_guaranteed => 652,
        max_rdma_read_per_ep_out_guaranteed => 656,
        num_transport_attr => 660,
        transport_attr => 664,
        num_vendor_attr => 672,
        vendor_attr => 680,
    );
    layout!(DAT_PROVIDER_ATTR, 504, 8;
        provider_name => 0,
        provider_version_major => 256,
        provider_version_minor => 260,
        dapl_version_major => 264,
        dapl_version_minor => 268,
        lmr_mem_types_supported => 272,
        iov_ownership_on_return => 276,
        dat_qos_supported => 280,
        completion_flags_supported => 284,
        is_thread_safe => 288,
        max_private_data_size => 292,
        supports_multipath => 296,
        ep_creator => 300,
        pz_support => 304,
        optimal_buffer_alignment => 308,
        evd_stream_merging_supported => 312,
        srq_supported => 456,
        srq_watermarks_supported => 460,
        srq_ep_pz_difference_supported => 464,
        srq_info_supported => 468,
        ep_recv_info_supported => 472,
        lmr_sync_req => 476,
        dto_async_return_guaranteed => 480,
        rdma_write_for_rdma_read_req => 484,
        num_provider_specific_attr => 488,
        provider_specific_attr => 496,
    );
    layout!(DAT_EP_ATTR, 104, 8;
        service_type => 0,
        max_message_size => 8,
        max_rdma_size => 16,
        qos => 24,
        recv_completion_flags => 28,
        request_completion_flags => 32,
        max_recv_dtos => 36,
        max_request_dtos => 40,
        max_recv_iov => 44,
        max_request_iov => 48,
        max_rdma_read_in => 52,
        max_rdma_read_out => 56,
        srq_soft_hw => 60,
        max_rdma_read_iov => 64,
        max_rdma_write_iov => 68,
        ep_transport_specific_count => 72,
        ep_transport_specific => 80,
        ep_provider_specific_count => 88,
        ep_provider_specific => 96,
    );
    layout!(DAT_EP_PARAM, 192, 8;
        ia_handle => 0,
        ep_state => 8,
        local_ia_address_ptr => 16,
        local_port_qual => 24,
        remote_ia_address_ptr => 32,
        remote_port_qual => 40,
        pz_handle => 48,
        recv_evd_handle => 56,
        request_evd_handle => 64,
        connect_evd_handle => 72,
        srq_handle => 80,
        ep_attr => 88,
    );
    layout!(DAT_EVD_PARAM, 32, 8;
        ia_handle => 0, evd_qlen => 8, evd_state => 12, cno_handle => 16, evd_flags => 24);
    layout!(DAT_LMR_PARAM, 80, 8;
        ia_handle => 0,
        mem_type => 8,
        region_desc => 16,
        length => 32,
        pz_handle => 40,
        mem_priv => 48,
        lmr_context => 52,
        rmr_context => 56,
        registered_size => 64,
        registered_address => 72,
    );
    layout!(DAT_SHARED_MEMORY, 16, 8; virtual_address => 0, shared_memory_id => 8);
    layout!(DAT_REGION_DESCRIPTION, 16, 8;
        for_va => 0, for_lmr_handle => 0, for_shared_memory => 0);
    layout!(DAT_OS_WAIT_PROXY_AGENT, 16, 8; instance_data => 0, proxy_agent_func => 8);
    layout!(DAT_CNO_PARAM, 24, 8; ia_handle => 0, agent => 8);
    layout!(DAT_SRQ_ATTR, 12, 4; max_recv_dtos => 0, max_recv_iov => 4, low_watermark => 8);
    layout!(DAT_SRQ_PARAM, 48, 8;
        ia_handle => 0,
        srq_state => 8,
        pz_handle => 16,
        max_recv_dtos => 24,
        max_recv_iov => 28,
        low_watermark => 32,
        available_dto_count => 36,
        outstanding_dto_count => 40,
    );
    layout!(DAT_PZ_PARAM, 8, 8; ia_handle => 0);
    layout!(DAT_PSP_PARAM, 32, 8;
        ia_handle => 0, conn_qual => 8, evd_handle => 16, psp_flags => 24);
    layout!(DAT_RSP_PARAM, 32, 8;
        ia_handle => 0, conn_qual => 8, evd_handle => 16, ep_handle => 24);
    layout!(DAT_CR_PARAM, 40, 8;
        remote_ia_address_ptr => 0,
        remote_port_qual => 8,
        private_data_size => 16,
        private_data => 24,
        local_ep_handle => 32,
    );
    layout!(DAT_PROVIDER_INFO, 268, 4;
        ia_name => 0, dapl_version_major => 256, dapl_version_minor => 260, is_thread_safe => 264);
    layout!(DAT_DTO_COMPLETION_EVENT_DATA, 32, 8;
        ep_handle => 0, user_cookie => 8, status => 16, transfered_length => 24);
    layout!(DAT_RMR_BIND_COMPLETION_EVENT_DATA, 24, 8;
        rmr_handle => 0, user_cookie => 8, status => 16);
    layout!(DAT_SP_HANDLE, 8, 8; rsp_handle => 0, psp_handle => 0);
    layout!(DAT_CR_ARRIVAL_EVENT_DATA, 32, 8;
        sp_handle => 0, local_ia_address_ptr => 8, conn_qual => 16, cr_handle => 24);
    layout!(DAT_CONNECTION_EVENT_DATA, 24, 8;
        ep_handle => 0, private_data_size => 8, private_data => 16);
    layout!(DAT_ASYNCH_ERROR_EVENT_DATA, 16, 8; dat_handle => 0, reason => 8);
    layout!(DAT_SOFTWARE_EVENT_DATA, 8, 8; pointer => 0);
    layout!(DAT_EVENT_DATA, 32, 8;
        dto_completion_event_data => 0,
        rmr_completion_event_data => 0,
        cr_arrival_event_data => 0,
        connect_event_data => 0,
        asynch_error_event_data => 0,
        software_event_data => 0,
    );
    layout!(DAT_EVENT, 48, 8; event_number => 0, evd_handle => 8, event_data => 16);
    layout!(DAT_PROVIDER, 560, 8;
        device_name => 0,
        extension => 8,
        ia_open_func => 16,
        ia_query_func => 24,
        ia_close_func => 32,
        set_consumer_context_func => 40,
        get_consumer_context_func => 48,
        get_handle_type_func => 56,
        cno_create_func => 64,
        cno_modify_agent_func => 72,
        cno_query_func => 80,
        cno_free_func => 88,
        cno_wait_func => 96,
        cr_query_func => 104,
        cr_accept_func => 112,
        cr_reject_func => 120,
        cr_handoff_func => 128,
        evd_create_func => 136,
        evd_query_func => 144,
        evd_modify_cno_func => 152,
        evd_enable_func => 160,
        evd_disable_func => 168,
        evd_wait_func => 176,
        evd_resize_func => 184,
        evd_post_se_func => 192,
        evd_dequeue_func => 200,
        evd_free_func => 208,
        ep_create_func => 216,
        ep_query_func => 224,
        ep_modify_func => 232,
        ep_connect_func => 240,
        ep_dup_connect_func => 248,
        ep_disconnect_func => 256,
        ep_post_send_func => 264,
        ep_post_recv_func => 272,
        ep_post_rdma_read_func => 280,
        ep_post_rdma_write_func => 288,
        ep_get_status_func => 296,
        ep_free_func => 304,
        lmr_create_func => 312,
        lmr_query_func => 320,
        lmr_free_func => 328,
        rmr_create_func => 336,
        rmr_query_func => 344,
        rmr_bind_func => 352,
        rmr_free_func => 360,
        psp_create_func => 368,
        psp_query_func => 376,
        psp_free_func => 384,
        rsp_create_func => 392,
        rsp_query_func => 400,
        rsp_free_func => 408,
        pz_create_func => 416,
        pz_query_func => 424,
        pz_free_func => 432,
        psp_create_any_func => 440,
        ep_reset_func => 448,
        evd_set_unwaitable_func => 456,
        evd_clear_unwaitable_func => 464,
        lmr_sync_rdma_read_func => 472,
        lmr_sync_rdma_write_func => 480,
        ep_create_with_srq_func => 488,
        ep_recv_query_func => 496,
        ep_set_watermark_func => 504,
        srq_create_func => 512,
        srq_free_func => 520,
        srq_post_recv_func => 528,
        srq_query_func => 536,
        srq_resize_func => 544,
        srq_set_lw_func => 552,
    );
}
