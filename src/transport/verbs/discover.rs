//! Which RDMA devices and ports this host has, from sysfs.
//!
//! Reads `class/infiniband` (and `class/net` to find each port's network
//! device) under a sysfs root, so listing the verbs IAs needs no rdma-core
//! library. Pure reads: a file that is missing or unreadable means "not
//! known", never an error. The root is `$DAT_VERBS_SYSFS` if set (tests
//! point it at a fake tree), else `/sys`.

use std::fs;
use std::path::{Path, PathBuf};

/// The environment variable that replaces `/sys` as the sysfs root.
pub const SYSFS_ENV: &str = "DAT_VERBS_SYSFS";

/// `IB_PORT_ACTIVE`, the first number of a port's `state` file.
const PORT_ACTIVE: u32 = 4;

/// One port of an RDMA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaPort {
    /// The device name (`mlx5_0`, `rxe0`, `siw0`).
    pub device: String,
    /// The port number, from 1.
    pub port: u8,
    /// The port state is ACTIVE.
    pub active: bool,
    /// `InfiniBand` or `Ethernet`, as sysfs spells it.
    pub link_layer: String,
    /// The device's node type: 1 CA (InfiniBand, RoCE), 4 RNIC (iWARP).
    pub node_type: u32,
    /// The network device bound to the port ([`netdev_of`]).
    pub netdev: Option<String>,
}

/// The sysfs root: `$DAT_VERBS_SYSFS` if set, else `/sys`.
pub fn sysfs_root() -> PathBuf {
    std::env::var_os(SYSFS_ENV).map_or_else(|| PathBuf::from("/sys"), PathBuf::from)
}

fn devices_dir(root: &Path) -> PathBuf {
    root.join("class/infiniband")
}

/// A sysfs attribute without its trailing newline; `None` if it cannot be
/// read or is empty.
fn read_attr(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let value = text.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// The leading number of a `"<n>: <NAME>"` attribute (`state`, `node_type`).
fn leading_number(path: &Path) -> Option<u32> {
    let text = read_attr(path)?;
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The names of the entries of `dir`, sorted; empty if it cannot be read.
fn sorted_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_unstable();
    names
}

/// Every port of every RDMA device under `root`, by device name, then port.
pub fn ports(root: &Path) -> Vec<RdmaPort> {
    let mut out = Vec::new();
    for device in sorted_names(&devices_dir(root)) {
        let dir = devices_dir(root).join(&device);
        let node_type = leading_number(&dir.join("node_type")).unwrap_or(0);
        let mut numbers: Vec<u8> = sorted_names(&dir.join("ports"))
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        numbers.sort_unstable();
        for port in numbers {
            let port_dir = dir.join("ports").join(port.to_string());
            out.push(RdmaPort {
                active: leading_number(&port_dir.join("state")) == Some(PORT_ACTIVE),
                link_layer: read_attr(&port_dir.join("link_layer")).unwrap_or_default(),
                node_type,
                netdev: netdev_of(root, &device, port),
                device: device.clone(),
                port,
            });
        }
    }
    out
}

/// The network device bound to port `port` of `device`, tried in order:
/// the port's first GID's network device (RoCE), the device's `parent`
/// (rxe, siw), a network device on the same bus device whose `dev_port`
/// is `port - 1` (IPoIB, hardware NICs), and for an iWARP device the
/// network device whose MAC address starts the port's first GID.
pub fn netdev_of(root: &Path, device: &str, port: u8) -> Option<String> {
    let dir = devices_dir(root).join(device);
    let port_dir = dir.join("ports").join(port.to_string());
    read_attr(&port_dir.join("gid_attrs/ndevs/0"))
        .or_else(|| read_attr(&dir.join("parent")))
        .or_else(|| netdev_on_same_bus_device(root, &dir, port))
        .or_else(|| {
            let iwarp = leading_number(&dir.join("node_type")) == Some(4);
            iwarp.then(|| netdev_by_gid_mac(root, &port_dir)).flatten()
        })
}

/// The network device whose `device` link resolves where the RDMA
/// device's does and whose `dev_port` (0-based) is `port - 1`.
fn netdev_on_same_bus_device(root: &Path, rdma_dir: &Path, port: u8) -> Option<String> {
    let target = fs::canonicalize(rdma_dir.join("device")).ok()?;
    let net = root.join("class/net");
    sorted_names(&net).into_iter().find(|name| {
        let dir = net.join(name);
        let same = fs::canonicalize(dir.join("device")).is_ok_and(|t| t == target);
        let dev_port = read_attr(&dir.join("dev_port")).and_then(|p| p.parse::<u32>().ok());
        same && dev_port.map(|p| p + 1) == Some(u32::from(port))
    })
}

/// The network device whose MAC address is the first 6 bytes of the
/// port's GID 0 (how iWARP devices such as siw form their GID).
fn netdev_by_gid_mac(root: &Path, port_dir: &Path) -> Option<String> {
    let gid = read_attr(&port_dir.join("gids/0"))?;
    let hex: String = gid.chars().filter(|c| *c != ':').collect();
    let mac_hex = hex.get(..12)?;
    if mac_hex.len() != 12 || mac_hex.chars().all(|c| c == '0') {
        return None;
    }
    let net = root.join("class/net");
    sorted_names(&net).into_iter().find(|name| {
        read_attr(&net.join(name).join("address")).is_some_and(|address| {
            let bare: String = address.chars().filter(|c| *c != ':').collect();
            bare.eq_ignore_ascii_case(mac_hex)
        })
    })
}

/// The RDMA device and port bound to network device `netdev`: an active
/// port if there is one, else the first.
pub fn port_of_netdev(root: &Path, netdev: &str) -> Option<(String, u8)> {
    let bound: Vec<RdmaPort> = ports(root)
        .into_iter()
        .filter(|p| p.netdev.as_deref() == Some(netdev))
        .collect();
    bound
        .iter()
        .find(|p| p.active)
        .or_else(|| bound.first())
        .map(|p| (p.device.clone(), p.port))
}

/// True if `root` has an RDMA device of that name.
pub fn has_device(root: &Path, device: &str) -> bool {
    !device.is_empty()
        && !device.contains('/')
        && device != "."
        && device != ".."
        && devices_dir(root).join(device).is_dir()
}

/// The IA name of a port, as OFED's DAT 1.2 names it: `OpenIB-<device>-<port>`.
pub fn ia_name(device: &str, port: u8) -> String {
    format!("OpenIB-{device}-{port}")
}

/// Fake sysfs trees for tests (here and in the registry).
#[cfg(test)]
pub(crate) mod fake {
    use std::fs;
    use std::path::{Path, PathBuf};

    /// A temporary sysfs root, removed on drop.
    pub struct Sysfs(pub PathBuf);

    impl Drop for Sysfs {
        fn drop(&mut self) {
            fs::remove_dir_all(&self.0).ok();
        }
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn link(target: &Path, at: &Path) {
        fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    impl Sysfs {
        /// An empty tree named after `tag` (unique per process and test).
        pub fn new(tag: &str) -> Sysfs {
            let root =
                std::env::temp_dir().join(format!("udapl-sysfs-{tag}-{}", std::process::id()));
            fs::remove_dir_all(&root).ok();
            fs::create_dir_all(&root).expect("root");
            Sysfs(root)
        }

        pub fn root(&self) -> &Path {
            &self.0
        }

        fn dev(&self, device: &str) -> PathBuf {
            self.0.join("class/infiniband").join(device)
        }

        /// A device with a `node_type` ("1: CA" / "4: RNIC") and no ports.
        pub fn device(&self, device: &str, node_type: &str) -> &Self {
            write(
                &self.dev(device).join("node_type"),
                &format!("{node_type}\n"),
            );
            self
        }

        /// A port: `state` ("4: ACTIVE", "1: DOWN") and `link_layer`.
        pub fn port(&self, device: &str, port: u8, state: &str, link_layer: &str) -> &Self {
            let dir = self.dev(device).join("ports").join(port.to_string());
            write(&dir.join("state"), &format!("{state}\n"));
            write(&dir.join("link_layer"), &format!("{link_layer}\n"));
            self
        }

        /// The port's `gid_attrs/ndevs/0`.
        pub fn gid_ndev(&self, device: &str, port: u8, netdev: &str) -> &Self {
            let dir = self.dev(device).join("ports").join(port.to_string());
            write(&dir.join("gid_attrs/ndevs/0"), &format!("{netdev}\n"));
            self
        }

        /// The port's `gids/0`.
        pub fn gid(&self, device: &str, port: u8, gid: &str) -> &Self {
            let dir = self.dev(device).join("ports").join(port.to_string());
            write(&dir.join("gids/0"), &format!("{gid}\n"));
            self
        }

        /// The device's `parent`.
        pub fn parent(&self, device: &str, netdev: &str) -> &Self {
            write(&self.dev(device).join("parent"), &format!("{netdev}\n"));
            self
        }

        /// A bus device `devices/<bus>`, linked as the RDMA device's `device`.
        pub fn rdma_on_bus(&self, device: &str, bus: &str) -> &Self {
            let target = self.0.join("devices").join(bus);
            fs::create_dir_all(&target).expect("bus device");
            link(&target, &self.dev(device).join("device"));
            self
        }

        /// A network device with a MAC address, optionally on bus device
        /// `bus` with `dev_port`.
        pub fn netdev(&self, name: &str, mac: &str, bus: Option<(&str, u32)>) -> &Self {
            let dir = self.0.join("class/net").join(name);
            write(&dir.join("address"), &format!("{mac}\n"));
            if let Some((bus, dev_port)) = bus {
                let target = self.0.join("devices").join(bus);
                fs::create_dir_all(&target).expect("bus device");
                link(&target, &dir.join("device"));
                write(&dir.join("dev_port"), &format!("{dev_port}\n"));
            }
            self
        }

        /// rxe0 on `netdev` (RoCE: ndevs/0 and parent), port 1 active.
        pub fn rxe(&self, device: &str, netdev: &str) -> &Self {
            self.device(device, "1: CA")
                .port(device, 1, "4: ACTIVE", "Ethernet")
                .gid_ndev(device, 1, netdev)
                .parent(device, netdev)
        }

        /// siw0 on a netdev with MAC 52:54:00:12:34:56 (no ndevs, no
        /// parent: found by the GID), port 1 active.
        pub fn siw(&self, device: &str) -> &Self {
            self.device(device, "4: RNIC")
                .port(device, 1, "4: ACTIVE", "Ethernet")
                .gid(device, 1, "5254:0012:3456:0000:0000:0000:0000:0000")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::Sysfs;
    use super::*;

    fn port(device: &str, port: u8, active: bool, ll: &str, nt: u32, nd: Option<&str>) -> RdmaPort {
        RdmaPort {
            device: device.to_owned(),
            port,
            active,
            link_layer: ll.to_owned(),
            node_type: nt,
            netdev: nd.map(str::to_owned),
        }
    }

    #[test]
    fn no_infiniband_class_means_no_ports() {
        let s = Sysfs::new("empty");
        assert!(ports(s.root()).is_empty());
        assert_eq!(port_of_netdev(s.root(), "eth0"), None);
        assert_eq!(netdev_of(s.root(), "rxe0", 1), None);
        assert!(ports(&s.root().join("missing")).is_empty());
    }

    #[test]
    fn rxe_port_is_found_by_its_gid_netdev() {
        let s = Sysfs::new("rxe");
        s.rxe("rxe0", "eth0")
            .netdev("eth0", "52:54:00:12:34:56", None);
        assert_eq!(
            ports(s.root()),
            [port("rxe0", 1, true, "Ethernet", 1, Some("eth0"))]
        );
        assert_eq!(
            port_of_netdev(s.root(), "eth0"),
            Some(("rxe0".to_owned(), 1))
        );
        assert_eq!(port_of_netdev(s.root(), "eth1"), None);
    }

    #[test]
    fn gid_netdev_comes_before_parent() {
        let s = Sysfs::new("order");
        s.device("rxe1", "1: CA")
            .port("rxe1", 1, "4: ACTIVE", "Ethernet")
            .gid_ndev("rxe1", 1, "vlan5")
            .parent("rxe1", "eth0");
        assert_eq!(netdev_of(s.root(), "rxe1", 1).as_deref(), Some("vlan5"));
        // Without the GID's netdev, the parent.
        let s = Sysfs::new("parent");
        s.device("rxe1", "1: CA")
            .port("rxe1", 1, "4: ACTIVE", "Ethernet")
            .parent("rxe1", "eth0");
        assert_eq!(netdev_of(s.root(), "rxe1", 1).as_deref(), Some("eth0"));
    }

    #[test]
    fn siw_port_is_found_by_the_mac_in_its_gid() {
        let s = Sysfs::new("siw");
        s.siw("siw0")
            .netdev("eth0", "52:54:00:12:34:56", None)
            .netdev("eth1", "52:54:00:12:34:57", None);
        assert_eq!(
            ports(s.root()),
            [port("siw0", 1, true, "Ethernet", 4, Some("eth0"))]
        );
        // Upper-case MACs compare equal too.
        let s = Sysfs::new("siw-upper");
        s.siw("siw0").netdev("ens3", "52:54:00:12:34:56", None);
        assert_eq!(netdev_of(s.root(), "siw0", 1).as_deref(), Some("ens3"));
        // A CA is not matched by MAC: that rule is for iWARP.
        let s = Sysfs::new("ca-gid");
        s.device("mlx5_0", "1: CA")
            .port("mlx5_0", 1, "4: ACTIVE", "InfiniBand")
            .gid("mlx5_0", 1, "5254:0012:3456:0000:0000:0000:0000:0000")
            .netdev("eth0", "52:54:00:12:34:56", None);
        assert_eq!(netdev_of(s.root(), "mlx5_0", 1), None);
    }

    #[test]
    fn ib_port_is_found_by_bus_device_and_dev_port() {
        let s = Sysfs::new("ib");
        s.device("mlx5_0", "1: CA")
            .port("mlx5_0", 1, "4: ACTIVE", "InfiniBand")
            .port("mlx5_0", 2, "1: DOWN", "InfiniBand")
            .rdma_on_bus("mlx5_0", "pci0000:00/0000:00:03.0")
            .netdev(
                "ib0",
                "00:00:10:49:fe:80",
                Some(("pci0000:00/0000:00:03.0", 0)),
            )
            .netdev(
                "ib1",
                "00:00:10:49:fe:81",
                Some(("pci0000:00/0000:00:03.0", 1)),
            )
            .netdev(
                "eth0",
                "52:54:00:00:00:01",
                Some(("pci0000:00/0000:00:04.0", 0)),
            );
        assert_eq!(
            ports(s.root()),
            [
                port("mlx5_0", 1, true, "InfiniBand", 1, Some("ib0")),
                port("mlx5_0", 2, false, "InfiniBand", 1, Some("ib1")),
            ]
        );
        assert_eq!(
            port_of_netdev(s.root(), "ib1"),
            Some(("mlx5_0".to_owned(), 2))
        );
        assert_eq!(port_of_netdev(s.root(), "eth0"), None);
    }

    #[test]
    fn down_ports_are_listed_inactive_and_ports_sort_numerically() {
        let s = Sysfs::new("two");
        s.device("rxe0", "1: CA");
        for n in [10, 2, 1] {
            s.port(
                "rxe0",
                n,
                if n == 2 { "4: ACTIVE" } else { "1: DOWN" },
                "Ethernet",
            );
        }
        s.rxe("a_dev", "eth9");
        let got: Vec<(String, u8, bool)> = ports(s.root())
            .into_iter()
            .map(|p| (p.device, p.port, p.active))
            .collect();
        let want = [
            ("a_dev", 1, true),
            ("rxe0", 1, false),
            ("rxe0", 2, true),
            ("rxe0", 10, false),
        ];
        let want: Vec<(String, u8, bool)> = want
            .iter()
            .map(|(d, p, a)| (d.to_string(), *p, *a))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_active_port_is_preferred_for_a_netdev() {
        let s = Sysfs::new("prefer");
        s.device("rxe0", "1: CA")
            .port("rxe0", 1, "1: DOWN", "Ethernet")
            .gid_ndev("rxe0", 1, "eth0")
            .rxe("rxe1", "eth0");
        assert_eq!(
            port_of_netdev(s.root(), "eth0"),
            Some(("rxe1".to_owned(), 1))
        );
    }

    #[test]
    fn device_names_and_ia_names() {
        let s = Sysfs::new("names");
        s.rxe("rxe0", "eth0");
        assert!(has_device(s.root(), "rxe0"));
        assert!(!has_device(s.root(), "eth0"));
        assert!(!has_device(s.root(), ".."));
        assert!(!has_device(s.root(), ""));
        assert_eq!(ia_name("mlx5_0", 1), "OpenIB-mlx5_0-1");
        assert_eq!(ia_name("rxe0", 2), "OpenIB-rxe0-2");
    }
}
