//! The core's operating-system calls that are neither socket I/O nor
//! application memory: network interfaces, the progress thread's priority,
//! epoll interest of descriptors known by number, the fork handler. Every
//! `unsafe` block here has its `// SAFETY:` line.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{BorrowedFd, RawFd};

use nix::sys::epoll::{Epoll, EpollEvent};

/// Changes what `ep` watches descriptor `raw` for; the caller keeps `raw`
/// open for the call (the progress engine's sources unregister before
/// they close).
pub(crate) fn epoll_modify(ep: &Epoll, raw: RawFd, ev: &mut EpollEvent) -> nix::Result<()> {
    // SAFETY: the caller keeps `raw` open for the call; epoll_ctl reads no
    // memory through it.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    ep.modify(fd, ev)
}

/// Stops `ep` watching descriptor `raw`; the caller keeps `raw` open for
/// the call.
pub(crate) fn epoll_delete(ep: &Epoll, raw: RawFd) -> nix::Result<()> {
    // SAFETY: as for `epoll_modify`.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    ep.delete(fd)
}

/// Gives the calling thread the nice value `nice`.
pub(crate) fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: gettid and setpriority on the calling thread; no memory is
    // passed.
    let rc = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One address of a network interface, as `getifaddrs` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IfAddr {
    /// Interface name (its label for an IPv4 alias, e.g. `eth0:1`).
    pub name: String,
    /// `IFF_UP`.
    pub up: bool,
    /// `IFF_LOOPBACK`.
    pub loopback: bool,
    pub ip: IpAddr,
    /// The IPv6 scope (interface index for link-local addresses); 0 for IPv4.
    pub scope_id: u32,
}

/// Every IPv4 and IPv6 address of every network interface, in the order
/// `getifaddrs` lists them. Interfaces whose name is not UTF-8 (which no
/// dat.conf line can name) are left out; so is everything when
/// `getifaddrs` fails.
pub(crate) fn interface_addresses() -> Vec<IfAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head`; freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned and is not freed yet.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_name.is_null() || ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let ifname = unsafe { CStr::from_ptr(ifa.ifa_name) };
        let Ok(name) = ifname.to_str() else { continue };
        // SAFETY: ifa_addr points at a sockaddr whose family tells its real type.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let (ip, scope_id) = if family == libc::AF_INET {
            // SAFETY: family AF_INET means the pointee is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            (IpAddr::V4(ip), 0)
        } else if family == libc::AF_INET6 {
            // SAFETY: family AF_INET6 means the pointee is a sockaddr_in6.
            let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            (IpAddr::V6(ip), sin6.sin6_scope_id)
        } else {
            continue;
        };
        let flags = ifa.ifa_flags;
        out.push(IfAddr {
            name: name.to_owned(),
            up: flags & libc::IFF_UP as libc::c_uint != 0,
            loopback: flags & libc::IFF_LOOPBACK as libc::c_uint != 0,
            ip,
            scope_id,
        });
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// Counts fork()s into a child (set by a `pthread_atfork` handler).
static FORK_GEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static ATFORK: std::sync::Once = std::sync::Once::new();

extern "C" fn forked_child() {
    FORK_GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The current fork generation: what a process makes remembers it, and
/// what was made before a fork() is inherited (the parent's) in the child.
/// Installs the fork handler on first use.
pub fn fork_generation() -> u32 {
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only increments an atomic (an
        // async-signal-safe operation, as a child handler requires).
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    FORK_GEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// True in a child for what was made (at generation `gen`) before the
/// fork: it shares descriptors with the parent and must not use them.
pub fn inherited(gen: u32) -> bool {
    FORK_GEN.load(std::sync::atomic::Ordering::Relaxed) != gen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loopback interface is there on any Linux host (containers
    /// included) with 127.0.0.1.
    #[test]
    fn getifaddrs_finds_loopback() {
        let all = interface_addresses();
        let lo = all
            .iter()
            .find(|a| a.ip == IpAddr::V4(Ipv4Addr::LOCALHOST))
            .expect("127.0.0.1 is listed");
        assert!(lo.up && lo.loopback, "{lo:?}");
        assert_eq!(lo.scope_id, 0);
        assert!(all.iter().all(|a| !a.name.is_empty()));
    }
}
