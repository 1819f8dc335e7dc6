//! The registry and IAs of a loaded libdat, through its C ABI only:
//! `dat_registry_list_providers`, `dat_ia_openv` / `dat_ia_query` /
//! `dat_ia_close`, and owned copies of `DAT_IA_ATTR` / `DAT_PROVIDER_ATTR`
//! (field names as in the C structs, strings and addresses decoded).

use core::ffi::c_char;
use std::ffi::CString;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use crate::sys::Dat;
use dat_abi::*;

/// A registry key: what `dat_registry_list_providers` lists and what
/// `dat_ia_openv` looks up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The IA name, raw bytes.
    pub name: Vec<u8>,
    pub major: u32,
    pub minor: u32,
    pub thread_safe: bool,
}

impl Key {
    /// The IA name as text (lossy).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }
}

/// The bytes of a NUL-terminated name in a fixed C array (all of it if
/// there is no NUL).
fn c_array_bytes(a: &[c_char]) -> Vec<u8> {
    a.iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect()
}

fn c_array_string(a: &[c_char]) -> String {
    String::from_utf8_lossy(&c_array_bytes(a)).into_owned()
}

/// Entries asked for first; grown when the library says there are more.
const FIRST_GUESS: usize = 64;
/// No registry is this large; stop growing there.
const LIST_LIMIT: usize = 1 << 16;

/// `dat_registry_list_providers`: every entry, in the library's order.
pub fn list_providers(dat: &Dat) -> Result<Vec<Key>, DAT_RETURN> {
    // The size probe (max 0) fails by specification but stores the count;
    // a library that does not is asked with a first guess instead.
    let mut size: DAT_COUNT = -1;
    // SAFETY: max_to_return 0: only the count is written, to a live local.
    let _ = unsafe { (dat.dat_registry_list_providers)(0, &mut size, std::ptr::null_mut()) };
    let mut want = usize::try_from(size).unwrap_or(0).max(FIRST_GUESS);
    loop {
        let zero: DAT_PROVIDER_INFO = DAT_PROVIDER_INFO {
            ia_name: [0; DAT_NAME_MAX_LENGTH],
            dapl_version_major: 0,
            dapl_version_minor: 0,
            is_thread_safe: DAT_FALSE,
        };
        let mut infos = vec![zero; want];
        let mut ptrs: Vec<*mut DAT_PROVIDER_INFO> = infos
            .iter_mut()
            .map(|i| i as *mut DAT_PROVIDER_INFO)
            .collect();
        let mut got: DAT_COUNT = 0;
        let max = DAT_COUNT::try_from(want).unwrap_or(DAT_COUNT::MAX);
        // SAFETY: `ptrs` holds `want` pointers to distinct live structs and
        // `got` is a live local; both outlive the call.
        let rc = unsafe { (dat.dat_registry_list_providers)(max, &mut got, ptrs.as_mut_ptr()) };
        if rc != DAT_SUCCESS {
            return Err(rc);
        }
        let got = usize::try_from(got).unwrap_or(0).min(want);
        if got == want && want < LIST_LIMIT {
            want *= 4;
            continue;
        }
        return Ok(infos[..got]
            .iter()
            .map(|i| Key {
                name: c_array_bytes(&i.ia_name),
                major: i.dapl_version_major,
                minor: i.dapl_version_minor,
                thread_safe: i.is_thread_safe != DAT_FALSE,
            })
            .collect());
    }
}

/// An open IA; closed (gracefully, else abruptly) when dropped.
pub struct OpenIa<'a> {
    dat: &'a Dat,
    handle: DAT_IA_HANDLE,
}

/// Queue length of the async EVD each open creates.
pub const ASYNC_EVD_QLEN: DAT_COUNT = 8;

impl<'a> OpenIa<'a> {
    /// `dat_ia_openv(name, 8, &async_evd, &ia, major, minor, thread_safety)`
    /// with a new async EVD.
    pub fn open(dat: &'a Dat, key: &Key) -> Result<OpenIa<'a>, DAT_RETURN> {
        let name = CString::new(key.name.clone())
            .map_err(|_| DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG1)?;
        let mut evd: DAT_EVD_HANDLE = DAT_HANDLE_NULL;
        let mut ia: DAT_IA_HANDLE = DAT_HANDLE_NULL;
        let ts = if key.thread_safe { DAT_TRUE } else { DAT_FALSE };
        // SAFETY: a NUL-terminated name and two live handle locals (the
        // async one NULL: create an EVD), as dat_ia_openv requires.
        let rc = unsafe {
            (dat.dat_ia_openv)(
                name.as_ptr() as DAT_NAME_PTR,
                ASYNC_EVD_QLEN,
                &mut evd,
                &mut ia,
                key.major,
                key.minor,
                ts,
            )
        };
        if rc != DAT_SUCCESS {
            return Err(rc);
        }
        Ok(OpenIa { dat, handle: ia })
    }

    /// `dat_ia_query` with every IA and provider attribute.
    pub fn query(&self) -> Result<(IaAttr, ProviderAttr), DAT_RETURN> {
        // SAFETY: both structs are plain C data (integers, arrays, raw
        // pointers) for which all-zero bytes are a valid value.
        let mut ia: DAT_IA_ATTR = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut pr: DAT_PROVIDER_ATTR = unsafe { std::mem::zeroed() };
        let mut evd: DAT_EVD_HANDLE = DAT_HANDLE_NULL;
        // SAFETY: an open IA handle and three live out-structs.
        let rc = unsafe {
            (self.dat.dat_ia_query)(
                self.handle,
                &mut evd,
                DAT_IA_FIELD_ALL,
                &mut ia,
                DAT_PROVIDER_FIELD_ALL,
                &mut pr,
            )
        };
        if rc != DAT_SUCCESS {
            return Err(rc);
        }
        // SAFETY: the IA is open, so the pointers the query returned (the
        // address and the named attribute lists) are valid until it closes;
        // they are copied here.
        Ok(unsafe { (IaAttr::copy(&ia), ProviderAttr::copy(&pr)) })
    }

    /// `dat_ia_close`, graceful first, then abrupt.
    pub fn close(mut self) -> Result<(), DAT_RETURN> {
        let r = self.close_now();
        self.handle = DAT_HANDLE_NULL;
        r
    }

    fn close_now(&mut self) -> Result<(), DAT_RETURN> {
        if self.handle.is_null() {
            return Ok(());
        }
        // SAFETY: an IA handle this value opened and has not closed.
        let rc = unsafe { (self.dat.dat_ia_close)(self.handle, DAT_CLOSE_GRACEFUL_FLAG) };
        if rc == DAT_SUCCESS {
            return Ok(());
        }
        // SAFETY: still open (the graceful close failed).
        let abrupt = unsafe { (self.dat.dat_ia_close)(self.handle, DAT_CLOSE_ABRUPT_FLAG) };
        if abrupt == DAT_SUCCESS {
            Ok(())
        } else {
            Err(rc)
        }
    }
}

impl Drop for OpenIa<'_> {
    fn drop(&mut self) {
        let _ = self.close_now();
    }
}

/// A named attribute (`DAT_NAMED_ATTR`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamedAttr {
    pub name: String,
    pub value: String,
}

/// Named attributes read at most (a sane bound on a bad count).
const NAMED_LIMIT: usize = 4096;

/// Copies `n` named attributes at `p`.
///
/// # Safety
/// `p` is NULL or points at `n` `DAT_NAMED_ATTR` whose strings are NULL or
/// NUL-terminated.
unsafe fn named(n: DAT_COUNT, p: *const DAT_NAMED_ATTR) -> Vec<NamedAttr> {
    let n = usize::try_from(n).unwrap_or(0).min(NAMED_LIMIT);
    if p.is_null() || n == 0 {
        return Vec::new();
    }
    let text = |s: *const c_char| {
        if s.is_null() {
            String::new()
        } else {
            // SAFETY: per the contract, a NUL-terminated string.
            unsafe { std::ffi::CStr::from_ptr(s) }
                .to_string_lossy()
                .into_owned()
        }
    };
    (0..n)
        .map(|i| {
            // SAFETY: i < n elements, per the contract.
            let a = unsafe { p.add(i).read_unaligned() };
            NamedAttr {
                name: text(a.name),
                value: text(a.value),
            }
        })
        .collect()
}

/// An IA address (`DAT_IA_ADDRESS_PTR`, a `sockaddr_in` or `sockaddr_in6`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Address {
    /// `inet`, `inet6`, or `AF_<n>` for another family.
    pub family: String,
    /// The IP address (IPv6 with `%<scope id>` when it has one); empty for
    /// another family.
    pub address: String,
    pub port: u16,
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.address.is_empty() {
            write!(f, "(address family {})", self.family)
        } else {
            f.write_str(&self.address)?;
            if self.port != 0 {
                write!(f, " port {}", self.port)?;
            }
            Ok(())
        }
    }
}

/// Reads the address at `p`.
///
/// # Safety
/// `p` is NULL or points at a `sockaddr` whose family says how large it is
/// (`sockaddr_in` or `sockaddr_in6`; any other family: 2 bytes are read).
pub unsafe fn address_at(p: *const DAT_SOCK_ADDR) -> Option<Address> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every sockaddr starts with its family.
    let family = unsafe { std::ptr::addr_of!((*p).sa_family).read_unaligned() };
    match i32::from(family) {
        DAT_AF_INET => {
            // SAFETY: AF_INET: the storage is a sockaddr_in.
            let a = unsafe { p.cast::<libc::sockaddr_in>().read_unaligned() };
            Some(Address {
                family: "inet".into(),
                address: Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)).to_string(),
                port: u16::from_be(a.sin_port),
            })
        }
        DAT_AF_INET6 => {
            // SAFETY: AF_INET6: the storage is a sockaddr_in6.
            let a = unsafe { p.cast::<libc::sockaddr_in6>().read_unaligned() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let address = if a.sin6_scope_id != 0 {
                format!("{ip}%{}", a.sin6_scope_id)
            } else {
                ip.to_string()
            };
            Some(Address {
                family: "inet6".into(),
                address,
                port: u16::from_be(a.sin6_port),
            })
        }
        other => Some(Address {
            family: format!("AF_{other}"),
            address: String::new(),
            port: 0,
        }),
    }
}

fn yes(b: DAT_BOOLEAN) -> bool {
    b != DAT_FALSE
}

/// Every field of `DAT_IA_ATTR`, C names; pointers replaced by what they
/// point at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IaAttr {
    pub adapter_name: String,
    pub vendor_name: String,
    pub hardware_version_major: u32,
    pub hardware_version_minor: u32,
    pub firmware_version_major: u32,
    pub firmware_version_minor: u32,
    pub ia_address_ptr: Option<Address>,
    pub max_eps: i32,
    pub max_dto_per_ep: i32,
    pub max_rdma_read_per_ep_in: i32,
    pub max_rdma_read_per_ep_out: i32,
    pub max_evds: i32,
    pub max_evd_qlen: i32,
    pub max_iov_segments_per_dto: i32,
    pub max_lmrs: i32,
    pub max_lmr_block_size: u64,
    pub max_lmr_virtual_address: u64,
    pub max_pzs: i32,
    pub max_message_size: u64,
    pub max_rdma_size: u64,
    pub max_rmrs: i32,
    pub max_rmr_target_address: u64,
    pub max_srqs: i32,
    pub max_ep_per_srq: i32,
    pub max_recv_per_srq: i32,
    pub max_iov_segments_per_rdma_read: i32,
    pub max_iov_segments_per_rdma_write: i32,
    pub max_rdma_read_in: i32,
    pub max_rdma_read_out: i32,
    pub max_rdma_read_per_ep_in_guaranteed: bool,
    pub max_rdma_read_per_ep_out_guaranteed: bool,
    pub num_transport_attr: i32,
    pub transport_attr: Vec<NamedAttr>,
    pub num_vendor_attr: i32,
    pub vendor_attr: Vec<NamedAttr>,
}

impl IaAttr {
    /// # Safety
    /// The pointers in `a` are valid (the IA is open).
    unsafe fn copy(a: &DAT_IA_ATTR) -> IaAttr {
        IaAttr {
            adapter_name: c_array_string(&a.adapter_name),
            vendor_name: c_array_string(&a.vendor_name),
            hardware_version_major: a.hardware_version_major,
            hardware_version_minor: a.hardware_version_minor,
            firmware_version_major: a.firmware_version_major,
            firmware_version_minor: a.firmware_version_minor,
            // SAFETY: the IA's address storage, valid while it is open.
            ia_address_ptr: unsafe { address_at(a.ia_address_ptr) },
            max_eps: a.max_eps,
            max_dto_per_ep: a.max_dto_per_ep,
            max_rdma_read_per_ep_in: a.max_rdma_read_per_ep_in,
            max_rdma_read_per_ep_out: a.max_rdma_read_per_ep_out,
            max_evds: a.max_evds,
            max_evd_qlen: a.max_evd_qlen,
            max_iov_segments_per_dto: a.max_iov_segments_per_dto,
            max_lmrs: a.max_lmrs,
            max_lmr_block_size: a.max_lmr_block_size,
            max_lmr_virtual_address: a.max_lmr_virtual_address,
            max_pzs: a.max_pzs,
            max_message_size: a.max_message_size,
            max_rdma_size: a.max_rdma_size,
            max_rmrs: a.max_rmrs,
            max_rmr_target_address: a.max_rmr_target_address,
            max_srqs: a.max_srqs,
            max_ep_per_srq: a.max_ep_per_srq,
            max_recv_per_srq: a.max_recv_per_srq,
            max_iov_segments_per_rdma_read: a.max_iov_segments_per_rdma_read,
            max_iov_segments_per_rdma_write: a.max_iov_segments_per_rdma_write,
            max_rdma_read_in: a.max_rdma_read_in,
            max_rdma_read_out: a.max_rdma_read_out,
            max_rdma_read_per_ep_in_guaranteed: yes(a.max_rdma_read_per_ep_in_guaranteed),
            max_rdma_read_per_ep_out_guaranteed: yes(a.max_rdma_read_per_ep_out_guaranteed),
            num_transport_attr: a.num_transport_attr,
            // SAFETY: the provider's list, valid while the IA is open.
            transport_attr: unsafe { named(a.num_transport_attr, a.transport_attr) },
            num_vendor_attr: a.num_vendor_attr,
            // SAFETY: as above.
            vendor_attr: unsafe { named(a.num_vendor_attr, a.vendor_attr) },
        }
    }
}

/// Every field of `DAT_PROVIDER_ATTR`, C names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProviderAttr {
    pub provider_name: String,
    pub provider_version_major: u32,
    pub provider_version_minor: u32,
    pub dapl_version_major: u32,
    pub dapl_version_minor: u32,
    pub lmr_mem_types_supported: u32,
    pub iov_ownership_on_return: u32,
    pub dat_qos_supported: u32,
    pub completion_flags_supported: u32,
    pub is_thread_safe: bool,
    pub max_private_data_size: i32,
    pub supports_multipath: bool,
    pub ep_creator: u32,
    pub pz_support: u32,
    pub optimal_buffer_alignment: u32,
    /// Rows and columns in `DAT_EVD_FLAGS` order: software, CR, DTO,
    /// connection, RMR bind, async.
    pub evd_stream_merging_supported: [[bool; 6]; 6],
    pub srq_supported: bool,
    pub srq_watermarks_supported: i32,
    pub srq_ep_pz_difference_supported: bool,
    pub srq_info_supported: i32,
    pub ep_recv_info_supported: i32,
    pub lmr_sync_req: bool,
    pub dto_async_return_guaranteed: bool,
    pub rdma_write_for_rdma_read_req: bool,
    pub num_provider_specific_attr: i32,
    pub provider_specific_attr: Vec<NamedAttr>,
}

impl ProviderAttr {
    /// # Safety
    /// The pointers in `p` are valid (the IA is open).
    unsafe fn copy(p: &DAT_PROVIDER_ATTR) -> ProviderAttr {
        ProviderAttr {
            provider_name: c_array_string(&p.provider_name),
            provider_version_major: p.provider_version_major,
            provider_version_minor: p.provider_version_minor,
            dapl_version_major: p.dapl_version_major,
            dapl_version_minor: p.dapl_version_minor,
            lmr_mem_types_supported: p.lmr_mem_types_supported,
            iov_ownership_on_return: p.iov_ownership_on_return,
            dat_qos_supported: p.dat_qos_supported,
            completion_flags_supported: p.completion_flags_supported,
            is_thread_safe: yes(p.is_thread_safe),
            max_private_data_size: p.max_private_data_size,
            supports_multipath: yes(p.supports_multipath),
            ep_creator: p.ep_creator,
            pz_support: p.pz_support,
            optimal_buffer_alignment: p.optimal_buffer_alignment,
            evd_stream_merging_supported: p.evd_stream_merging_supported.map(|r| r.map(yes)),
            srq_supported: yes(p.srq_supported),
            srq_watermarks_supported: p.srq_watermarks_supported,
            srq_ep_pz_difference_supported: yes(p.srq_ep_pz_difference_supported),
            srq_info_supported: p.srq_info_supported,
            ep_recv_info_supported: p.ep_recv_info_supported,
            lmr_sync_req: yes(p.lmr_sync_req),
            dto_async_return_guaranteed: yes(p.dto_async_return_guaranteed),
            rdma_write_for_rdma_read_req: yes(p.rdma_write_for_rdma_read_req),
            num_provider_specific_attr: p.num_provider_specific_attr,
            // SAFETY: the provider's list, valid while the IA is open.
            provider_specific_attr: unsafe {
                named(p.num_provider_specific_attr, p.provider_specific_attr)
            },
        }
    }
}

/// The file the library was loaded from (the dynamic loader's answer for
/// one of its entry points), e.g. `/usr/local/lib/libdat.so.1` for
/// `libdat.so.1`.
pub fn loaded_from(dat: &Dat) -> Option<String> {
    // SAFETY: all-zero is a valid Dl_info (NULL pointers).
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = dat.dat_strerror as *const libc::c_void;
    // SAFETY: dladdr only reads the loader's tables for an address of a
    // loaded object and fills the live `info`.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader,
    // valid while the object stays loaded (it is, through `dat`).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(name.to_string_lossy().into_owned())
}

/// Whether a provider library loads, as `dlopen(path, RTLD_NOW)` says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LibraryProbe {
    pub loads: bool,
    /// The loader's message when it does not.
    pub error: Option<String>,
    /// Whether it exports `dat_provider_init` (optional: a provider may
    /// register itself from an ELF constructor).
    pub has_dat_provider_init: bool,
}

/// Loads `path` the way libdat does (`RTLD_NOW`, the name searched the
/// usual way when it has no `/`), looks for `dat_provider_init`, unloads it.
pub fn probe_library(path: &str) -> LibraryProbe {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading a provider library runs its initialisers, exactly as
    // libdat's own dlopen of it would when the IA is opened.
    match unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) } {
        Ok(lib) => {
            // SAFETY: only the symbol's presence is checked; it is not called.
            let init = unsafe { lib.get::<*const ()>(b"dat_provider_init\0") }.is_ok();
            drop(lib);
            LibraryProbe {
                loads: true,
                error: None,
                has_dat_provider_init: init,
            }
        }
        Err(e) => LibraryProbe {
            loads: false,
            // libloading shows dlerror()'s text as is.
            error: Some(e.to_string()),
            has_dat_provider_init: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        // SAFETY: a sockaddr_in / sockaddr_in6 on the stack.
        unsafe {
            let mut v4: libc::sockaddr_in = std::mem::zeroed();
            v4.sin_family = libc::AF_INET as libc::sa_family_t;
            v4.sin_addr.s_addr = u32::from(Ipv4Addr::new(127, 0, 0, 1)).to_be();
            let a = address_at(std::ptr::addr_of!(v4).cast()).unwrap();
            assert_eq!(
                (a.family.as_str(), a.to_string()),
                ("inet", "127.0.0.1".into())
            );
            let mut v6: libc::sockaddr_in6 = std::mem::zeroed();
            v6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            v6.sin6_addr.s6_addr = "fe80::1".parse::<Ipv6Addr>().unwrap().octets();
            v6.sin6_scope_id = 3;
            v6.sin6_port = 4791u16.to_be();
            let a = address_at(std::ptr::addr_of!(v6).cast()).unwrap();
            assert_eq!(a.family, "inet6");
            assert_eq!(a.to_string(), "fe80::1%3 port 4791");
            assert_eq!(address_at(std::ptr::null()), None);
        }
    }

    #[test]
    fn lists_opens_and_queries_tcp0() {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../build/lib/libdat.so.1");
        if !std::path::Path::new(p).exists() {
            eprintln!("build/lib/libdat.so.1 not built (make lib): skipped");
            return;
        }
        let dat = Dat::load(p).expect("load");
        let from = loaded_from(&dat).expect("dladdr");
        assert!(from.ends_with("build/lib/libdat.so.1"), "{from}");
        let keys = list_providers(&dat).expect("list");
        let tcp0 = keys
            .iter()
            .find(|k| k.name == b"tcp0" && !k.thread_safe)
            .expect("tcp0 listed");
        assert_eq!((tcp0.major, tcp0.minor), (1, 2));
        let ia = OpenIa::open(&dat, tcp0).expect("open");
        let (a, p) = ia.query().expect("query");
        assert_eq!(a.adapter_name, "tcp0");
        assert_eq!(a.ia_address_ptr.unwrap().to_string(), "127.0.0.1");
        assert!(a.max_eps > 0);
        assert_eq!((p.dapl_version_major, p.dapl_version_minor), (1, 2));
        assert!(!p.is_thread_safe);
        ia.close().expect("close");
        let none = Key {
            name: b"no-such-ia".to_vec(),
            ..tcp0.clone()
        };
        let rc = OpenIa::open(&dat, &none).err().expect("no such IA");
        assert_eq!(rc & DAT_TYPE_MASK, DAT_PROVIDER_NOT_FOUND);
    }

    #[test]
    fn missing_library_gives_the_loaders_message() {
        let p = probe_library("/nonexistent/libnothing.so");
        assert!(!p.loads);
        let e = p.error.unwrap();
        assert!(e.contains("/nonexistent/libnothing.so"), "{e}");
        assert!(e.contains("No such file"), "{e}");
        assert!(!e.contains("DlDescription"), "{e}");
    }
}
