//! Private network namespaces for tests (`ip netns`), removed on drop.
//!
//! - [`Netns::create`] makes a namespace named `udapl-<pid>-<n>-<tag>`
//!   (unique per process and call) with its loopback up; dropping the
//!   guard deletes it, and with it every interface inside (a veth pair
//!   made by [`Netns::veth`] lives only inside the two namespaces, so
//!   nothing is left in the host's namespace even when a test panics).
//! - [`Netns::enter`] moves the calling thread (only that thread:
//!   `setns(2)` with `CLONE_NEWNET`) into the namespace; sockets the thread
//!   creates afterwards belong to it, and so do processes it spawns.
//! - Needs root (or `CAP_SYS_ADMIN`) and iproute2's `ip`;
//!   [`Netns::create`] reports [`Unavailable`] otherwise, for the test to
//!   skip.
#![allow(dead_code)] // a shared harness: each test uses part of it

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub use super::tshark::Unavailable;

/// A network namespace of this test process, deleted on drop.
pub struct Netns {
    name: String,
}

fn ip_binary() -> Option<PathBuf> {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Runs `ip args…`; its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    ip_output(args).map(drop)
}

/// Runs `ip args…`; its stdout, or its stderr on failure.
fn ip_output(args: &[&str]) -> Result<String, String> {
    let bin = ip_binary().ok_or("iproute2's ip is not installed")?;
    let out = Command::new(&bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "ip {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// A fresh namespace with `lo` up. `Err` (skip the test) when not root
    /// or when `ip netns` cannot create one here.
    pub fn create(tag: &str) -> Result<Netns, Unavailable> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Unavailable(
                "network namespaces need root (run the test as root)".into(),
            ));
        }
        if ip_binary().is_none() {
            return Err(Unavailable(
                "iproute2's ip is not installed (Debian: apt-get install iproute2)".into(),
            ));
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("udapl-{}-{n}-{tag}", std::process::id());
        ip(&["netns", "add", &name])
            .map_err(|e| Unavailable(format!("ip netns unavailable here: {e}")))?;
        // From here on the guard deletes it, whatever fails next.
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])
            .map_err(|e| Unavailable(format!("cannot set up lo in a namespace: {e}")))?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n <ns> args…`.
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut v = vec!["-n", self.name.as_str()];
        v.extend_from_slice(args);
        ip(&v)
    }

    /// A veth pair with one end in each namespace, addressed and up:
    /// `a_if` with `a_cidr` in `a`, `b_if` with `b_cidr` in `b`. Interface
    /// names are at most 15 bytes. Created inside the namespaces directly,
    /// so deleting them removes the pair.
    pub fn veth(
        a: &Netns,
        a_if: &str,
        a_cidr: &str,
        b: &Netns,
        b_if: &str,
        b_cidr: &str,
    ) -> Result<(), String> {
        ip(&[
            "link", "add", a_if, "netns", &a.name, "type", "veth", "peer", "name", b_if, "netns",
            &b.name,
        ])?;
        a.ip(&["addr", "add", a_cidr, "dev", a_if])?;
        b.ip(&["addr", "add", b_cidr, "dev", b_if])?;
        a.ip(&["link", "set", a_if, "up"])?;
        b.ip(&["link", "set", b_if, "up"])
    }

    /// Bytes received and sent by interface `dev` of the namespace (from
    /// `ip -s link`).
    pub fn counters(&self, dev: &str) -> (u64, u64) {
        let out = ip_output(&["-n", &self.name, "-s", "link", "show", "dev", dev])
            .unwrap_or_else(|e| panic!("{e}"));
        let after = |tag: &str| -> u64 {
            let mut lines = out.lines();
            lines
                .find(|l| l.trim_start().starts_with(tag))
                .and_then(|_| lines.next())
                .and_then(|l| l.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {tag} counters for {dev} in: {out}"))
        };
        (after("RX:"), after("TX:"))
    }

    fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// The namespace's inode (identifies it).
    pub fn inode(&self) -> u64 {
        std::fs::metadata(self.path())
            .expect("namespace file")
            .ino()
    }

    /// Moves the calling thread into the namespace and checks that it is
    /// there.
    pub fn enter(&self) {
        let f = File::open(self.path()).expect("open namespace file");
        // SAFETY: setns on a namespace descriptor we own; affects only the
        // calling thread's network namespace.
        let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(
            r,
            0,
            "setns into {}: {}",
            self.name,
            std::io::Error::last_os_error()
        );
        assert_eq!(
            current_netns(),
            self.inode(),
            "thread not in namespace {} after setns",
            self.name
        );
    }
}

/// The inode of the calling thread's network namespace.
pub fn current_netns() -> u64 {
    std::fs::metadata("/proc/thread-self/ns/net")
        .expect("/proc/thread-self/ns/net")
        .ino()
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("warning: could not delete namespace {}: {e}", self.name);
        }
    }
}
