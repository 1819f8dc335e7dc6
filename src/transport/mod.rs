//! Transports: how the DAT layer reaches a network.
//!
//! [`api`] is the queue-pair interface every transport implements; [`open`]
//! is the one place that turns a [`DeviceConfig`] into a device of the
//! transport it names, and [`parse_options`] the one place that hands a
//! transport its instance options. Below: [`soft`] (machinery shared by
//! software transports), [`iwarp`] (the protocol, no I/O) and [`tcp`] (the
//! driver). See docs/transport.md.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::sync::Arc;

use crate::error::{DatError, Result, Sub, Type};
use crate::sys;
use api::Device;
pub use tcp::capabilities::{software_capabilities, SOFTWARE_CAPABILITIES};

pub mod api;
pub mod iwarp;
pub mod options;
pub(crate) mod ports;
pub mod soft;
pub mod tcp;
pub mod verbs;

/// What a device can do, in transport terms (like verbs' device
/// attributes). The DAT layer derives every `dat_ia_query` attribute from
/// these; a transport fills them in for its devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Vendor name reported to consumers.
    pub vendor: &'static str,
    /// Hardware and firmware versions (major, minor).
    pub hw_version: (u32, u32),
    pub fw_version: (u32, u32),
    /// Queue pairs per device.
    pub max_qp: u32,
    /// Work requests per queue (send or receive).
    pub max_qp_wr: u32,
    /// Scatter/gather elements per send or receive work request.
    pub max_sge: u32,
    /// Scatter/gather elements per RDMA read and per RDMA write.
    pub max_sge_rd: u32,
    pub max_sge_wr: u32,
    /// Completion queues per device, entries per completion queue.
    pub max_cq: u32,
    pub max_cqe: u32,
    /// Memory regions, their largest size, the highest registrable address.
    pub max_mr: u32,
    pub max_mr_size: u64,
    pub max_va: u64,
    /// Protection domains.
    pub max_pd: u32,
    /// Largest message (send) and RDMA transfer.
    pub max_msg_size: u64,
    pub max_rdma_size: u64,
    /// Memory windows (0: the transport has none).
    pub max_mw: u32,
    /// Shared receive queues (0: the transport has none), receives per
    /// SRQ, queue pairs per SRQ.
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_qp_per_srq: u32,
    /// Inbound (IRD) and outbound (ORD) RDMA reads in flight per queue pair,
    /// and for the whole device.
    pub max_ird: u32,
    pub max_ord: u32,
    pub max_ird_total: u32,
    pub max_ord_total: u32,
    /// Connection private data the consumer may send with a connect,
    /// accept or reject, bytes.
    pub max_private_data: u32,
    /// Completion features.
    pub solicited_events: bool,
    pub unsignalled: bool,
    pub fence: bool,
    /// Several paths per connection.
    pub multipath: bool,
    /// Best buffer alignment, bytes.
    pub buffer_alignment: u32,
}

/// Which transport an IA names (`transport=` in dat.conf). `shm` is a
/// planned transport: this build does not have it, and an IA naming it does
/// not open ([`TransportKind::unavailable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// Software RC over TCP sockets (works everywhere).
    #[default]
    Tcp,
    /// Shared memory between processes of one host (not in this build).
    Shm,
    /// rdma-core verbs, for RDMA NICs (the libraries are loaded when an IA
    /// opens; without them the IA does not open).
    Verbs,
}

impl TransportKind {
    /// Parses `tcp`, `shm` or `verbs`.
    pub fn parse(s: &str) -> Option<TransportKind> {
        match s {
            "tcp" => Some(TransportKind::Tcp),
            "shm" => Some(TransportKind::Shm),
            "verbs" => Some(TransportKind::Verbs),
            _ => None,
        }
    }

    /// As spelled in dat.conf (`transport=`).
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Shm => "shm",
            TransportKind::Verbs => "verbs",
        }
    }

    /// What an IA reports as its transport (the protocol it speaks).
    pub fn describe(self) -> &'static str {
        match self {
            TransportKind::Tcp => "iwarp-tcp",
            TransportKind::Shm => "shm",
            TransportKind::Verbs => "verbs",
        }
    }

    /// Why an IA naming this transport cannot open, or `None` if this
    /// build has it.
    pub fn unavailable(self) -> Option<&'static str> {
        match self {
            TransportKind::Tcp => None,
            TransportKind::Shm => Some("the shared-memory transport is not in this build"),
            TransportKind::Verbs => None,
        }
    }
}

/// Which address of a network interface an IA uses (`family=` in dat.conf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressFamily {
    /// IPv4 (`family=inet`).
    Inet,
    /// IPv6 (`family=inet6`).
    Inet6,
}

impl AddressFamily {
    /// Parses `inet` or `inet6`.
    pub fn parse(s: &str) -> Option<AddressFamily> {
        match s {
            "inet" => Some(AddressFamily::Inet),
            "inet6" => Some(AddressFamily::Inet6),
            _ => None,
        }
    }

    /// As spelled in dat.conf (`family=`).
    pub fn name(self) -> &'static str {
        match self {
            AddressFamily::Inet => "inet",
            AddressFamily::Inet6 => "inet6",
        }
    }
}

/// How the built-in provider opens a device: from dat.conf instance data.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeviceConfig {
    pub transport: TransportKind,
    /// Network interface whose address is the IA address; `None`: loopback.
    pub netdev: Option<String>,
    /// Which of the interface's addresses; `None`: IPv4 if it has one, else
    /// IPv6.
    pub family: Option<AddressFamily>,
    /// RDMA device (verbs: `device=`, e.g. `mlx5_0`); `None`: the device
    /// bound to `netdev`.
    pub device: Option<String>,
    /// RDMA port number (verbs).
    pub port: u32,
    /// The transport's own instance options ([`parse_options`]).
    pub options: InstanceOptions,
}

/// A transport's instance options, parsed by its own table; opaque above
/// the transports. The default is the default transport's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceOptions(Parsed);

/// The options of each transport of this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parsed {
    Tcp(tcp::options::DeviceOptions),
    /// A transport with no options (or not in this build).
    None,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions::defaults(TransportKind::default())
    }
}

impl InstanceOptions {
    /// Every option of `kind` at its default.
    pub fn defaults(kind: TransportKind) -> InstanceOptions {
        match kind {
            TransportKind::Tcp => {
                InstanceOptions(Parsed::Tcp(tcp::options::DeviceOptions::default()))
            }
            TransportKind::Shm | TransportKind::Verbs => InstanceOptions(Parsed::None),
        }
    }

    /// Every option with its value, by name, as dat.conf spells them (what
    /// an IA reports among its provider-specific attributes).
    pub fn values(&self) -> Vec<(&'static str, String)> {
        match &self.0 {
            Parsed::Tcp(o) => options::values(&tcp::options::OPTIONS, o),
            Parsed::None => Vec::new(),
        }
    }

    /// Every option the transport declares: name, default and help.
    pub fn declared(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        match &self.0 {
            Parsed::Tcp(_) => tcp::options::OPTIONS
                .iter()
                .map(|d| (d.name, d.default, d.help))
                .collect(),
            Parsed::None => Vec::new(),
        }
    }
}

/// Parses the instance options of transport `kind` from `tokens` (the
/// `key=value` tokens of the built-in instance data that are not generic)
/// with the table that transport owns. Returns the options, for
/// [`open`], and the indices of the tokens not understood (a transport
/// without options, or not in this build, understands none).
pub fn parse_options(kind: TransportKind, tokens: &[&str]) -> (InstanceOptions, Vec<usize>) {
    let mut o = InstanceOptions::defaults(kind);
    let unknown = match &mut o.0 {
        Parsed::Tcp(t) => options::parse_tokens(&tcp::options::OPTIONS, tokens, t),
        Parsed::None => (0..tokens.len()).collect(),
    };
    (o, unknown)
}

/// Opens the device `cfg` names: the one place that knows which transport
/// implements which [`TransportKind`]. Returns the device and the IA
/// address (`DAT_PROVIDER_NOT_FOUND` for a transport this build does not
/// have; `DAT_INSUFFICIENT_RESOURCES` if the network interface has no
/// address).
pub fn open(cfg: &DeviceConfig) -> Result<(Arc<dyn Device>, SocketAddr)> {
    match cfg.transport {
        TransportKind::Tcp => {
            let address = resolve_address(cfg)?;
            let opts = match cfg.options.0 {
                Parsed::Tcp(o) => o,
                Parsed::None => tcp::DeviceOptions::default(),
            };
            let caps = *software_capabilities();
            let dev: Arc<dyn Device> = tcp::IwarpDevice::open_with(address.ip(), caps, opts);
            Ok((dev, address))
        }
        TransportKind::Verbs => verbs::open(cfg),
        TransportKind::Shm => Err(DatError::of(Type::ProviderNotFound)),
    }
}

/// The IA address for a device configuration: the loopback address, or the
/// address of `cfg.netdev` (see [`pick_address`]).
pub fn resolve_address(cfg: &DeviceConfig) -> Result<SocketAddr> {
    match &cfg.netdev {
        None => Ok(match cfg.family {
            Some(AddressFamily::Inet6) => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0),
            _ => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        }),
        Some(name) => {
            pick_address(&sys::interface_addresses(), name, cfg.family).ok_or_else(|| {
                tracing::warn!(netdev = %name, family = ?cfg.family,
                    "network interface not found or has no address of that family");
                DatError::resources(Sub::ResourceDevice)
            })
        }
    }
}

/// An IPv6 link-local address (`fe80::/10`): usable only with its scope.
fn is_link_local_v6(ip: &Ipv6Addr) -> bool {
    ip.segments()[0] & 0xffc0 == 0xfe80
}

/// The address (port 0) of interface `name` among `addrs`: with no family
/// asked for, its first IPv4 address, else IPv6; for IPv6, its first
/// address that is not link-local, else its first link-local one (with the
/// scope id, without which it cannot be reached).
pub(crate) fn pick_address(
    addrs: &[sys::IfAddr],
    name: &str,
    family: Option<AddressFamily>,
) -> Option<SocketAddr> {
    let mine = || addrs.iter().filter(move |a| a.name == name);
    let v4 = || {
        mine().find_map(|a| match a.ip {
            IpAddr::V4(ip) => Some(SocketAddr::new(IpAddr::V4(ip), 0)),
            IpAddr::V6(_) => None,
        })
    };
    let v6 = || {
        let v6s = || {
            mine().filter_map(|a| match a.ip {
                IpAddr::V6(ip) => Some((ip, a.scope_id)),
                IpAddr::V4(_) => None,
            })
        };
        v6s()
            .find(|(ip, _)| !is_link_local_v6(ip))
            .map(|(ip, _)| SocketAddr::V6(SocketAddrV6::new(ip, 0, 0, 0)))
            .or_else(|| {
                v6s()
                    .next()
                    .map(|(ip, scope)| SocketAddr::V6(SocketAddrV6::new(ip, 0, 0, scope)))
            })
    };
    match family {
        None => v4().or_else(v6),
        Some(AddressFamily::Inet) => v4(),
        Some(AddressFamily::Inet6) => v6(),
    }
}

/// The network interfaces that get a built-in IA of their own: up, not
/// loopback, with an IPv4 address or an IPv6 address that is not
/// link-local. In the order `getifaddrs` lists them, each once.
pub fn interface_ia_names() -> Vec<String> {
    ia_names_of(&sys::interface_addresses())
}

fn ia_names_of(addrs: &[sys::IfAddr]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for a in addrs {
        let usable = match a.ip {
            IpAddr::V4(_) => true,
            IpAddr::V6(ip) => !is_link_local_v6(&ip),
        };
        if a.up && !a.loopback && usable && !names.contains(&a.name) {
            names.push(a.name.clone());
        }
    }
    names
}

/// A `struct sockaddr_in` / `sockaddr_in6` in the Linux layout, 8-aligned,
/// big enough for either (the pointee of `DAT_IA_ADDRESS_PTR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct SockAddrStorage {
    pub bytes: [u8; 32],
}

/// `AF_INET` / `AF_INET6` on Linux.
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;

impl From<SocketAddr> for SockAddrStorage {
    fn from(a: SocketAddr) -> Self {
        let mut b = [0u8; 32];
        b[2..4].copy_from_slice(&a.port().to_be_bytes());
        match a {
            SocketAddr::V4(v4) => {
                b[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
                b[4..8].copy_from_slice(&v4.ip().octets());
            }
            SocketAddr::V6(v6) => {
                b[0..2].copy_from_slice(&AF_INET6.to_ne_bytes());
                b[4..8].copy_from_slice(&v6.flowinfo().to_be_bytes());
                b[8..24].copy_from_slice(&v6.ip().octets());
                b[24..28].copy_from_slice(&v6.scope_id().to_ne_bytes());
            }
        }
        SockAddrStorage { bytes: b }
    }
}

impl SockAddrStorage {
    /// The bytes of a `sockaddr_in`/`sockaddr_in6` of this family, or
    /// `None` for any other family.
    pub fn len_of_family(family: u16) -> Option<usize> {
        match family {
            AF_INET => Some(16),
            AF_INET6 => Some(28),
            _ => None,
        }
    }

    /// The address (the inverse of `From<SocketAddr>`); `None` for a
    /// family other than `AF_INET`/`AF_INET6`.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        let b = &self.bytes;
        let port = u16::from_be_bytes([b[2], b[3]]);
        match u16::from_ne_bytes([b[0], b[1]]) {
            AF_INET => Some(SocketAddr::from(([b[4], b[5], b[6], b[7]], port))),
            AF_INET6 => {
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&b[8..24]);
                let flow = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                let scope = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
                Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                    ip.into(),
                    port,
                    flow,
                    scope,
                )))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_storage_round_trips_both_families() {
        for a in [
            "10.1.2.3:4791".parse::<SocketAddr>().unwrap(),
            "[fe80::1%3]:65535".parse::<SocketAddr>().unwrap(),
        ] {
            let sa = SockAddrStorage::from(a);
            assert_eq!(sa.to_socket_addr(), Some(a));
        }
        let mut sa = SockAddrStorage { bytes: [0; 32] };
        sa.bytes[0..2].copy_from_slice(&1u16.to_ne_bytes()); // AF_UNIX
        assert_eq!(sa.to_socket_addr(), None);
        assert_eq!(SockAddrStorage::len_of_family(1), None);
    }

    fn ifaddr(name: &str, up: bool, loopback: bool, ip: &str, scope_id: u32) -> sys::IfAddr {
        sys::IfAddr {
            name: name.to_owned(),
            up,
            loopback,
            ip: ip.parse().expect("ip"),
            scope_id,
        }
    }

    /// lo (both families), eth0 (link-local first, then IPv4, then a
    /// global IPv6), v6only (link-local and global IPv6), ll (link-local
    /// only), down0 (down), v4only.
    fn host() -> Vec<sys::IfAddr> {
        vec![
            ifaddr("lo", true, true, "127.0.0.1", 0),
            ifaddr("eth0", true, false, "fe80::1", 2),
            ifaddr("eth0", true, false, "192.0.2.2", 0),
            ifaddr("lo", true, true, "::1", 0),
            ifaddr("eth0", true, false, "fd00::2", 0),
            ifaddr("v6only", true, false, "fe80::5", 3),
            ifaddr("v6only", true, false, "2001:db8::5", 0),
            ifaddr("ll", true, false, "fe80::7", 4),
            ifaddr("down0", false, false, "10.9.9.9", 0),
            ifaddr("v4only", true, false, "10.0.0.1", 0),
            ifaddr("eth0:1", true, false, "192.0.2.3", 0),
        ]
    }

    fn sa(s: &str) -> Option<SocketAddr> {
        Some(s.parse().expect("socket address"))
    }

    #[test]
    fn interface_address_prefers_ipv4_then_global_ipv6() {
        let h = host();
        let inet6 = Some(AddressFamily::Inet6);
        let inet = Some(AddressFamily::Inet);
        assert_eq!(pick_address(&h, "eth0", None), sa("192.0.2.2:0"));
        assert_eq!(pick_address(&h, "eth0", inet), sa("192.0.2.2:0"));
        assert_eq!(pick_address(&h, "eth0", inet6), sa("[fd00::2]:0"));
        assert_eq!(pick_address(&h, "eth0:1", None), sa("192.0.2.3:0"));
        // An interface with only IPv6 resolves to it, with no family asked for.
        assert_eq!(pick_address(&h, "v6only", None), sa("[2001:db8::5]:0"));
        assert_eq!(pick_address(&h, "v6only", inet6), sa("[2001:db8::5]:0"));
        assert_eq!(pick_address(&h, "v6only", inet), None);
        // Link-local only: that address, with its scope.
        let ll = Some(SocketAddr::V6(SocketAddrV6::new(
            "fe80::7".parse().expect("ip"),
            0,
            0,
            4,
        )));
        assert_eq!(pick_address(&h, "ll", None), ll);
        assert_eq!(pick_address(&h, "ll", inet6), ll);
        assert_eq!(pick_address(&h, "v4only", inet6), None);
        assert_eq!(pick_address(&h, "lo", None), sa("127.0.0.1:0"));
        assert_eq!(pick_address(&h, "lo", inet6), sa("[::1]:0"));
        // A named interface that is down still has its address.
        assert_eq!(pick_address(&h, "down0", None), sa("10.9.9.9:0"));
        assert_eq!(pick_address(&h, "nosuch", None), None);
        assert_eq!(pick_address(&h, "eth", None), None);
        assert_eq!(pick_address(&[], "eth0", None), None);
    }

    #[test]
    fn interface_ias_are_up_non_loopback_with_a_usable_address() {
        assert_eq!(ia_names_of(&host()), ["eth0", "v6only", "v4only", "eth0:1"]);
        assert!(ia_names_of(&[]).is_empty());
    }

    #[test]
    fn loopback_address_by_family() {
        let mut cfg = DeviceConfig::default();
        assert_eq!(resolve_address(&cfg).ok(), sa("127.0.0.1:0"));
        cfg.family = Some(AddressFamily::Inet);
        assert_eq!(resolve_address(&cfg).ok(), sa("127.0.0.1:0"));
        cfg.family = Some(AddressFamily::Inet6);
        assert_eq!(resolve_address(&cfg).ok(), sa("[::1]:0"));
        cfg.netdev = Some("no-such-interface0".to_owned());
        assert_eq!(
            resolve_address(&cfg),
            Err(DatError::resources(Sub::ResourceDevice))
        );
    }

    /// Through getifaddrs: the loopback interface's IPv4 address (and its
    /// IPv6 one when the host has IPv6).
    #[test]
    fn resolve_address_of_this_hosts_loopback() {
        let all = sys::interface_addresses();
        let Some(lo) = all.iter().find(|a| a.loopback).map(|a| a.name.clone()) else {
            return;
        };
        let mut cfg = DeviceConfig {
            netdev: Some(lo.clone()),
            ..DeviceConfig::default()
        };
        assert_eq!(resolve_address(&cfg).ok(), sa("127.0.0.1:0"));
        cfg.family = Some(AddressFamily::Inet6);
        let has_v6 = all.iter().any(|a| a.name == lo && a.ip.is_ipv6());
        assert_eq!(resolve_address(&cfg).is_ok(), has_v6);
        for name in interface_ia_names() {
            let cfg = DeviceConfig {
                netdev: Some(name.clone()),
                ..DeviceConfig::default()
            };
            assert!(resolve_address(&cfg).is_ok(), "{name}");
        }
    }

    #[test]
    fn sockaddr_in6_layout_is_linux() {
        let ip: Ipv6Addr = "fe80::1:2:3:4".parse().expect("ip");
        let a = SocketAddr::V6(SocketAddrV6::new(ip, 4791, 0x0001_2345, 7));
        let s = SockAddrStorage::from(a);
        // struct sockaddr_in6 { sa_family_t sin6_family; in_port_t sin6_port;
        //   uint32_t sin6_flowinfo; struct in6_addr sin6_addr; uint32_t sin6_scope_id; }
        assert_eq!(&s.bytes[0..2], &AF_INET6.to_ne_bytes());
        assert_eq!(&s.bytes[2..4], &4791u16.to_be_bytes());
        assert_eq!(&s.bytes[4..8], &0x0001_2345u32.to_be_bytes());
        assert_eq!(&s.bytes[8..24], &ip.octets());
        assert_eq!(&s.bytes[24..28], &7u32.to_ne_bytes());
        assert_eq!(&s.bytes[28..32], &[0; 4]);
        assert_eq!(std::mem::size_of::<libc::sockaddr_in6>(), 28);
        assert_eq!(std::mem::offset_of!(libc::sockaddr_in6, sin6_addr), 8);
        assert_eq!(std::mem::offset_of!(libc::sockaddr_in6, sin6_scope_id), 24);
        assert!(std::mem::size_of::<SockAddrStorage>() >= 28);
        assert_eq!(std::mem::align_of::<SockAddrStorage>(), 8);
        assert_eq!(i32::from(AF_INET6), libc::AF_INET6);
    }

    #[test]
    fn sockaddr_layout_is_linux() {
        let a: SocketAddr = "10.1.2.3:4791".parse().expect("addr");
        let s = SockAddrStorage::from(a);
        assert_eq!(&s.bytes[0..2], &AF_INET.to_ne_bytes());
        assert_eq!(&s.bytes[2..4], &4791u16.to_be_bytes());
        assert_eq!(&s.bytes[4..8], &[10, 1, 2, 3]);
    }

    #[test]
    fn defaults_parse_and_print_back() {
        let o = InstanceOptions::default();
        let shown: Vec<_> = o.values();
        let declared: Vec<_> = o
            .declared()
            .into_iter()
            .map(|(n, d, _)| (n, d.to_string()))
            .collect();
        assert_eq!(shown, declared);
        assert!(!shown.is_empty());
    }

    #[test]
    fn a_transport_without_options_understands_none() {
        let (o, unknown) = parse_options(TransportKind::Shm, &["crc=on", "x=y"]);
        assert_eq!(unknown, [0, 1]);
        assert!(o.values().is_empty());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_reported_by_index() {
        let (o, unknown) = parse_options(
            TransportKind::Tcp,
            &["crc=on", "colour=red", "crc=maybe", "bare"],
        );
        assert_eq!(unknown, [1, 2, 3]);
        assert!(o.values().contains(&("crc", "on".to_string())));
    }
}
