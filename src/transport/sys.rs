//! Operating-system queries of the transport layer (network interfaces,
//! RDMA devices). The only `unsafe` of the core crate lives here.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The first address of network interface `name` (IPv4 preferred).
pub(crate) fn interface_address(name: &str) -> Option<IpAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head`; freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut v4 = None;
    let mut v6 = None;
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
        if ifname.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr whose family tells its real type.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if family == libc::AF_INET && v4.is_none() {
            // SAFETY: family AF_INET means the pointee is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            v4 = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                sin.sin_addr.s_addr,
            ))));
        } else if family == libc::AF_INET6 && v6.is_none() {
            // SAFETY: family AF_INET6 means the pointee is a sockaddr_in6.
            let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
            v6 = Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    v4.or(v6)
}

/// True if the kernel exposes any RDMA device.
pub(crate) fn has_rdma_devices() -> bool {
    std::fs::read_dir("/sys/class/infiniband")
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// Polls of the futex word before sleeping (a few microseconds).
const SPIN_ROUNDS: u32 = 4000;

/// How a [`Blocker::wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Woken (or the state changed before sleeping); re-check the condition.
    Woken,
    /// The deadline passed.
    TimedOut,
    /// A signal handler ran (installed without `SA_RESTART`).
    Interrupted,
}

/// A wait/wake primitive on a futex word: sleeps until woken, a deadline or
/// a signal. Use: read [`Blocker::ticket`] while holding the lock that
/// guards the condition, drop the lock, then [`Blocker::wait`]; wakers
/// change the condition under the lock and call [`Blocker::wake_all`].
#[derive(Default)]
pub struct Blocker {
    seq: AtomicU32,
}

impl Blocker {
    /// A new blocker.
    pub const fn new() -> Blocker {
        Blocker {
            seq: AtomicU32::new(0),
        }
    }

    /// The current generation, to pass to [`Blocker::wait`].
    pub fn ticket(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }

    /// Sleeps while the generation is still `ticket`. Spins briefly first:
    /// a wake-up that comes within a few microseconds then costs no sleep.
    pub fn wait(&self, ticket: u32, deadline: Option<Instant>) -> Wake {
        for _ in 0..SPIN_ROUNDS {
            if self.seq.load(Ordering::Acquire) != ticket {
                return Wake::Woken;
            }
            std::hint::spin_loop();
        }
        let ts = match deadline {
            None => None,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Wake::TimedOut;
                }
                let left = d - now;
                Some(libc::timespec {
                    tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_nsec: libc::c_long::from(left.subsec_nanos()),
                })
            }
        };
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: FUTEX_WAIT on a live AtomicU32 we own, with a valid or
        // NULL relative timeout; the kernel only reads these.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.seq.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                ticket,
                ts_ptr,
            )
        };
        if r == 0 {
            return Wake::Woken;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => Wake::Interrupted,
            Some(libc::ETIMEDOUT) => Wake::TimedOut,
            _ => Wake::Woken,
        }
    }

    /// Wakes every sleeper.
    pub fn wake_all(&self) {
        self.seq.fetch_add(1, Ordering::Release);
        // SAFETY: FUTEX_WAKE on a live AtomicU32; no memory is written.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.seq.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
}
