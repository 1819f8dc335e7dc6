//! Which RDMA devices and ports this host has, from sysfs.

use std::path::{Path, PathBuf};

/// The sysfs root: `$DAT_VERBS_SYSFS`, else `/sys`.
pub fn sysfs_root() -> PathBuf {
    std::env::var_os("DAT_VERBS_SYSFS").map_or_else(|| PathBuf::from("/sys"), PathBuf::from)
}

/// The network interface bound to `port` of RDMA device `device`.
pub fn netdev_of(root: &Path, device: &str, port: u8) -> Option<String> {
    let p = root.join(format!(
        "class/infiniband/{device}/ports/{port}/gid_attrs/ndevs/0"
    ));
    let s = std::fs::read_to_string(p)
        .or_else(|_| {
            std::fs::read_to_string(root.join(format!("class/infiniband/{device}/parent")))
        })
        .ok()?;
    Some(s.trim().to_owned()).filter(|s| !s.is_empty())
}
