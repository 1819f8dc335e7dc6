//! memio's tests: transfers and copies over real sockets and mappings, faults in the middle, the pipe fallback.

use super::copy::{copy_raw, pipe_copy, vm_copy, MODE, MODE_PIPE, MODE_VM};
use super::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;

const PAGE: usize = 4096;

const EMPTY_IOV: libc::iovec = libc::iovec {
    iov_base: std::ptr::null_mut(),
    iov_len: 0,
};

/// An anonymous private mapping standing in for application memory.
struct Map {
    base: u64,
    len: usize,
}

impl Map {
    fn new(pages: usize) -> Map {
        let len = pages * PAGE;
        // SAFETY: a new private anonymous mapping; no existing memory
        // is involved.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Map {
            base: p as u64,
            len,
        }
    }

    fn at(&self, off: usize) -> u64 {
        self.base + off as u64
    }

    /// Changes the protection of page `page` (it stays reserved, so no
    /// other thread's mapping lands there).
    fn protect(&self, page: usize, prot: i32) {
        // SAFETY: changes the protection of a page of our own mapping,
        // which no reference points into.
        let rc = unsafe { libc::mprotect(app_ptr(self.at(page * PAGE)), PAGE, prot) };
        assert_eq!(rc, 0);
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmaps our own mapping, which nothing refers to.
        unsafe { libc::munmap(app_ptr(self.base), self.len) };
    }
}

/// Never mapped: below `vm.mmap_min_addr`.
const UNMAPPED: u64 = 4096;

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Writes a pattern over the scatter range and returns it.
fn fill_segs(segs: &[RawSeg], off: u64, len: usize, seed: u32) -> Vec<u8> {
    let data = pattern(len, seed);
    write_segs(&data, segs, off).unwrap();
    data
}

fn read_back(segs: &[RawSeg], off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    read_segs(segs, off, &mut v).unwrap();
    v
}

fn unix_pair() -> (OwnedFd, OwnedFd) {
    let (a, b) = UnixStream::pair().unwrap();
    (a.into(), b.into())
}

fn tcp_pair() -> (OwnedFd, OwnedFd) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    a.set_nodelay(true).unwrap();
    (a.into(), b.into())
}

fn pairs() -> [(&'static str, (OwnedFd, OwnedFd)); 2] {
    [("unix", unix_pair()), ("tcp", tcp_pair())]
}

fn set_nonblocking(fd: BorrowedFd<'_>) {
    // SAFETY: fcntl on a descriptor we own, with plain flags.
    unsafe {
        let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        assert_eq!(
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK),
            0
        );
    }
}

/// Small socket buffers, so that an 8 MiB transfer cannot move in one
/// call on either side, whatever the scheduling.
fn small_buffers(fd: BorrowedFd<'_>) {
    let size: libc::c_int = 64 * 1024;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: setsockopt on a socket we own, with an int option value.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
    }
}

fn wait_for(fd: BorrowedFd<'_>, events: i16) {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: polls one pollfd of our own.
    let rc = unsafe { libc::poll(&mut p, 1, 10_000) };
    assert_eq!(rc, 1, "socket not ready within 10 s");
}

/// Receives until the plan is full.
fn recv_all(fd: BorrowedFd<'_>, plan: &mut IoPlan<'_>) {
    while !plan.is_empty() {
        match recv_plan(fd, plan, 0) {
            Ok(n) => plan.advance(n),
            Err(IoError::WouldBlock) => wait_for(fd, libc::POLLIN),
            Err(e) => panic!("recv_plan: {e:?}"),
        }
    }
}

/// Reads whatever is queued on a non-blocking socket.
fn drain(fd: &OwnedFd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        // SAFETY: reads into our own stack buffer.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n <= 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
}

#[test]
fn plan_fill_covers_the_range_and_splits_segments_at_offsets() {
    let segs = [
        RawSeg {
            addr: 1000,
            len: 100,
        },
        RawSeg { addr: 5000, len: 0 },
        RawSeg {
            addr: 8000,
            len: 5000,
        },
        RawSeg {
            addr: 20000,
            len: 3000,
        },
    ];
    let head = [1u8; 18];
    let tail = [2u8; 6];
    let plan = IoPlan::send(&head, &segs, 50, 6050, &tail).unwrap();
    assert_eq!(plan.len(), 18 + 6050 + 6);
    let mut iov = [EMPTY_IOV; 8];
    let (n, bytes) = plan.fill(&mut iov);
    let got: Vec<(usize, usize)> = iov[..n]
        .iter()
        .map(|v| (v.iov_base as usize, v.iov_len))
        .collect();
    assert_eq!(
        got,
        [
            (head.as_ptr() as usize, 18),
            (1050, 50),
            (8000, 5000),
            (20000, 1000),
            (tail.as_ptr() as usize, 6)
        ]
    );
    assert_eq!(bytes, 18 + 6050 + 6);

    // Too few entries: a prefix.
    let mut small = [EMPTY_IOV; 2];
    assert_eq!(plan.fill(&mut small), (2, 68));

    // Advancing into the middle of a segment, then into the trailer.
    let mut plan = plan;
    plan.advance(18 + 60);
    let (n, bytes) = plan.fill(&mut iov);
    assert_eq!((iov[0].iov_base as usize, iov[0].iov_len), (8010, 4990));
    assert_eq!((n, bytes), (3, 4990 + 1000 + 6));
    plan.advance(4990 + 1000 + 2);
    let (n, bytes) = plan.fill(&mut iov);
    assert_eq!((n, bytes), (1, 4));
    assert_eq!(iov[0].iov_base as usize, tail.as_ptr() as usize + 2);
    plan.advance(4);
    assert!(plan.is_empty());
    assert_eq!(plan.fill(&mut iov), (0, 0));
}

#[test]
fn plan_rejects_ranges_outside_the_list() {
    let segs = [RawSeg { addr: 0, len: 10 }, RawSeg { addr: 0, len: 5 }];
    assert!(IoPlan::send(&[], &segs, 0, 15, &[]).is_some());
    assert!(IoPlan::send(&[], &segs, 15, 0, &[]).is_some());
    assert!(IoPlan::send(&[], &segs, 10, 6, &[]).is_none());
    assert!(IoPlan::send(&[], &segs, 16, 0, &[]).is_none());
    assert!(IoPlan::send(&[], &segs, u64::MAX, 2, &[]).is_none());
    let huge = [
        RawSeg {
            addr: 0,
            len: u64::MAX,
        },
        RawSeg { addr: 0, len: 2 },
    ];
    assert!(IoPlan::send(&[], &huge, 0, 1, &[]).is_none());
    let mut buf = [0u8; 4];
    assert!(IoPlan::recv(&mut [], &segs, 14, 2, &mut buf).is_none());
}

#[test]
fn plan_fill_caps_the_bytes_of_one_call() {
    let segs = [RawSeg {
        addr: 1 << 40,
        len: 3 << 30,
    }];
    let plan = IoPlan::send(&[], &segs, 0, 3 << 30, &[]).unwrap();
    let mut iov = [EMPTY_IOV; 4];
    assert_eq!(plan.fill(&mut iov), (1, MAX_CALL_BYTES));
}

/// Header, three application segments with the range starting and
/// ending inside segments, trailer; received into a differently split
/// list.
#[test]
fn send_and_recv_header_three_segments_trailer_over_unix_and_tcp() {
    for (kind, (a, b)) in pairs() {
        let src = Map::new(4);
        let dst = Map::new(4);
        let src_segs = [
            RawSeg {
                addr: src.at(10),
                len: 100,
            },
            RawSeg {
                addr: src.at(PAGE - 30),
                len: 5000,
            },
            RawSeg {
                addr: src.at(3 * PAGE),
                len: 3000,
            },
        ];
        let body = fill_segs(&src_segs, 50, 6050, 1);
        let header: Vec<u8> = (0..18).collect();
        let trailer = [0, 0, 0xde, 0xad, 0xbe, 0xef];
        let plan = IoPlan::send(&header, &src_segs, 50, 6050, &trailer).unwrap();
        assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(18 + 6050 + 6), "{kind}");

        let dst_segs = [
            RawSeg {
                addr: dst.at(0),
                len: 7,
            },
            RawSeg {
                addr: dst.at(2 * PAGE - 3),
                len: 6000,
            },
            RawSeg {
                addr: dst.at(PAGE),
                len: 100,
            },
        ];
        let mut h = [0u8; 18];
        let mut t = [0u8; 6];
        let mut plan = IoPlan::recv(&mut h, &dst_segs, 2, 6050, &mut t).unwrap();
        recv_all(b.as_fd(), &mut plan);
        assert_eq!(h[..], header[..], "{kind}");
        assert_eq!(t, trailer, "{kind}");
        assert_eq!(read_back(&dst_segs, 2, 6050), body, "{kind}");
    }
}

/// 8 MiB through non-blocking sockets: both sides see partial
/// transfers and resume from the returned counts.
#[test]
fn large_nonblocking_transfer_resumes_partial_transfers() {
    const LEN: usize = 8 << 20;
    for (kind, (a, b)) in pairs() {
        set_nonblocking(a.as_fd());
        set_nonblocking(b.as_fd());
        small_buffers(a.as_fd());
        small_buffers(b.as_fd());
        let src = Map::new(LEN / PAGE + 1);
        let dst = Map::new(LEN / PAGE + 1);
        let src_segs = [
            RawSeg {
                addr: src.at(3),
                len: 1_000_003,
            },
            RawSeg {
                addr: src.at(1_000_006),
                len: 4_000_000,
            },
            RawSeg {
                addr: src.at(5_000_006),
                len: (LEN - 5_000_003) as u64,
            },
        ];
        let body = fill_segs(&src_segs, 0, LEN, 2);
        let dst_segs = [
            RawSeg {
                addr: dst.at(1),
                len: 3_333_333,
            },
            RawSeg {
                addr: dst.at(3_333_334),
                len: (LEN - 3_333_333) as u64,
            },
        ];
        let header = *b"FPDU-HEADER-18BYTE";
        let trailer = *b"CRC32c";
        let sender = std::thread::spawn(move || {
            let mut plan = IoPlan::send(&header, &src_segs, 0, LEN as u64, &trailer).unwrap();
            let mut partial = 0;
            while !plan.is_empty() {
                match send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT) {
                    Ok(n) => {
                        if (n as u64) < plan.len() {
                            partial += 1;
                        }
                        plan.advance(n);
                    }
                    Err(IoError::WouldBlock) => wait_for(a.as_fd(), libc::POLLOUT),
                    Err(e) => panic!("send_plan: {e:?}"),
                }
            }
            drop(src);
            partial
        });
        let mut h = [0u8; 18];
        let mut t = [0u8; 6];
        let mut plan = IoPlan::recv(&mut h, &dst_segs, 0, LEN as u64, &mut t).unwrap();
        let mut partial = 0;
        while !plan.is_empty() {
            match recv_plan(b.as_fd(), &plan, 0) {
                Ok(n) => {
                    if (n as u64) < plan.len() {
                        partial += 1;
                    }
                    plan.advance(n);
                }
                Err(IoError::WouldBlock) => wait_for(b.as_fd(), libc::POLLIN),
                Err(e) => panic!("recv_plan: {e:?}"),
            }
        }
        let sent_partial = sender.join().unwrap();
        assert!(sent_partial > 0, "{kind}: no partial send");
        assert!(partial > 0, "{kind}: no partial receive");
        assert_eq!(h, header, "{kind}");
        assert_eq!(t, trailer, "{kind}");
        assert!(read_back(&dst_segs, 0, LEN) == body, "{kind}: body differs");
    }
}

/// A receive running into a `PROT_NONE` page: `Fault` (possibly after
/// short counts), the counts returned are exact, the process survives.
#[test]
fn recv_into_guard_page_is_a_fault() {
    for (kind, (a, b)) in pairs() {
        // Two writes: on a Unix socket two buffers, of which the first
        // fits before the guard page.
        let data = pattern(3 * PAGE, 3);
        (&UnixOrTcp(&a)).write_all(&data[..100]).unwrap();
        (&UnixOrTcp(&a)).write_all(&data[100..]).unwrap();
        let dst = Map::new(3);
        dst.protect(1, libc::PROT_NONE);
        let segs = [RawSeg {
            addr: dst.at(PAGE - 200),
            len: 2 * PAGE as u64,
        }];
        let mut h = [0u8; 10];
        let mut plan = IoPlan::recv(&mut h, &segs, 0, 2 * PAGE as u64, &mut []).unwrap();
        let mut got = 0;
        let fault = loop {
            match recv_plan(b.as_fd(), &plan, 0) {
                Ok(n) => {
                    assert!(n > 0 && got + n <= 210, "{kind}: {n} bytes past the guard");
                    got += n;
                    plan.advance(n);
                }
                Err(e) => break e,
            }
        };
        assert_eq!(fault, IoError::Fault, "{kind}");
        let head = got.min(10);
        assert_eq!(h[..head], data[..head], "{kind}");
        if got > 10 {
            let mut v = vec![0u8; got - 10];
            read_app(dst.at(PAGE - 200), &mut v).unwrap();
            assert_eq!(v[..], data[10..got], "{kind}");
        }
    }
}

/// `Write` for a borrowed socket descriptor, to feed tests.
struct UnixOrTcp<'a>(&'a OwnedFd);

impl Write for &UnixOrTcp<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: sends from our own slice.
        let n = unsafe {
            libc::send(
                self.0.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A send running into a `PROT_NONE` page: short counts that are
/// exactly what the peer gets, then `Fault`. A source that was never
/// mapped: `Fault` at once, nothing sent.
#[test]
fn send_from_guard_or_unmapped_page_is_a_fault() {
    for (kind, (a, b)) in pairs() {
        set_nonblocking(a.as_fd());
        let src = Map::new(41);
        src.protect(40, libc::PROT_NONE);
        let segs = [RawSeg {
            addr: src.at(0),
            len: 41 * PAGE as u64,
        }];
        let body = fill_segs(&segs, 0, 40 * PAGE, 4);
        let header = [7u8; 18];
        let mut plan = IoPlan::send(&header, &segs, 0, 41 * PAGE as u64, &[]).unwrap();
        let mut received = Vec::new();
        let mut sent = 0;
        let fault = loop {
            match send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT) {
                Ok(n) => {
                    sent += n;
                    plan.advance(n);
                }
                Err(IoError::WouldBlock) => received.extend(drain(&b)),
                Err(e) => break e,
            }
        };
        assert_eq!(fault, IoError::Fault, "{kind}");
        assert!(sent <= 18 + 40 * PAGE, "{kind}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        received.extend(drain(&b));
        assert_eq!(received.len(), sent, "{kind}");
        let mut expected = header.to_vec();
        expected.extend_from_slice(&body);
        assert!(received[..] == expected[..sent], "{kind}: wrong bytes");

        let bad = [RawSeg {
            addr: UNMAPPED,
            len: 100,
        }];
        let plan = IoPlan::send(&header, &bad, 0, 100, &[]).unwrap();
        assert_eq!(
            send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT),
            Err(IoError::Fault),
            "{kind}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(drain(&b).is_empty(), "{kind}");
    }
}

#[test]
fn zero_length_segments_and_empty_plans() {
    let (a, b) = unix_pair();
    let src = Map::new(1);
    let dst = Map::new(1);
    let segs = [
        RawSeg {
            addr: UNMAPPED,
            len: 0,
        },
        RawSeg {
            addr: src.at(0),
            len: 10,
        },
        RawSeg { addr: 0, len: 0 },
        RawSeg { addr: 8, len: 0 },
        RawSeg {
            addr: src.at(100),
            len: 5,
        },
        RawSeg { addr: 0, len: 0 },
    ];
    let body = fill_segs(&segs, 0, 15, 5);
    let plan = IoPlan::send(&[], &segs, 0, 15, &[]).unwrap();
    let mut iov = [EMPTY_IOV; 8];
    assert_eq!(plan.fill(&mut iov), (2, 15));
    assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(15));
    let dsegs = [
        RawSeg { addr: 0, len: 0 },
        RawSeg {
            addr: dst.at(0),
            len: 15,
        },
        RawSeg {
            addr: UNMAPPED,
            len: 0,
        },
    ];
    let plan = IoPlan::recv(&mut [], &dsegs, 0, 15, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(15));
    assert_eq!(read_back(&dsegs, 0, 15), body);

    // Empty plans make no system call: Ok(0) even with nothing to read
    // on a blocking socket, and with only bogus empty segments.
    let empty = IoPlan::send(&[], &segs[2..4], 0, 0, &[]).unwrap();
    assert!(empty.is_empty());
    assert_eq!(send_plan(a.as_fd(), &empty, 0), Ok(0));
    let empty = IoPlan::recv(&mut [], &[], 0, 0, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &empty, 0), Ok(0));
    // An empty application range between local parts.
    let mut h = [0u8; 3];
    let plan = IoPlan::send(b"abc", &segs, 15, 0, &[]).unwrap();
    assert_eq!(send_plan(a.as_fd(), &plan, 0), Ok(3));
    let plan = IoPlan::recv(&mut h, &segs, 15, 0, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(3));
    assert_eq!(&h, b"abc");
}

/// 200 segments need four iovec chunks on each side.
#[test]
fn more_segments_than_one_iovec_chunk() {
    for (kind, (a, b)) in pairs() {
        let src = Map::new(32);
        let dst = Map::new(32);
        let mut src_segs = Vec::new();
        let mut dst_segs = Vec::new();
        let (mut s, mut d, mut total) = (0usize, 0usize, 0u64);
        for i in 0..200usize {
            let sl = 1 + (i * 37) % 300;
            src_segs.push(RawSeg {
                addr: src.at(s),
                len: sl as u64,
            });
            s += sl + 16;
            total += sl as u64;
        }
        let mut left = total + 2;
        for i in 0..200usize {
            let dl = if i == 199 {
                left as usize
            } else {
                1 + (i * 53) % 250
            };
            dst_segs.push(RawSeg {
                addr: dst.at(d),
                len: dl as u64,
            });
            d += dl + 8;
            left -= dl as u64;
        }
        let body = fill_segs(&src_segs, 0, total as usize, 6);
        let plan = IoPlan::send(b"H", &src_segs, 0, total, b"T").unwrap();
        assert_eq!(
            send_plan(a.as_fd(), &plan, 0),
            Ok(total as usize + 2),
            "{kind}"
        );
        let mut h = [0u8; 1];
        let mut t = [0u8; 1];
        let mut plan = IoPlan::recv(&mut h, &dst_segs, 2, total, &mut t).unwrap();
        recv_all(b.as_fd(), &mut plan);
        assert_eq!((&h, &t), (b"H", b"T"), "{kind}");
        assert_eq!(read_back(&dst_segs, 2, total as usize), body, "{kind}");
    }
}

#[test]
fn end_of_stream_and_broken_pipe_are_closed() {
    let (a, b) = unix_pair();
    let dst = Map::new(1);
    let segs = [RawSeg {
        addr: dst.at(0),
        len: 100,
    }];
    (&UnixOrTcp(&a)).write_all(b"xyz").unwrap();
    drop(a);
    let plan = IoPlan::recv(&mut [], &segs, 0, 100, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Ok(3));
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));
    let plan = IoPlan::send(b"late", &[], 0, 0, &[]).unwrap();
    // No SIGPIPE (it would kill the test binary): EPIPE.
    assert_eq!(send_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));

    let (a, b) = tcp_pair();
    drop(a);
    let plan = IoPlan::recv(&mut [], &segs, 0, 100, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::Closed));
}

#[test]
fn nothing_to_transfer_on_a_nonblocking_socket_is_would_block() {
    let (a, b) = unix_pair();
    set_nonblocking(b.as_fd());
    let mut h = [0u8; 4];
    let plan = IoPlan::recv(&mut h, &[], 0, 0, &mut []).unwrap();
    assert_eq!(recv_plan(b.as_fd(), &plan, 0), Err(IoError::WouldBlock));
    let big = vec![0u8; 1 << 20];
    let plan = IoPlan::send(&big, &[], 0, 0, &[]).unwrap();
    let first = send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT).unwrap();
    assert!(first < big.len());
    let mut plan = plan;
    plan.advance(first);
    assert_eq!(
        send_plan(a.as_fd(), &plan, libc::MSG_DONTWAIT),
        Err(IoError::WouldBlock)
    );
}

#[test]
#[should_panic(expected = "IoPlan::recv")]
fn recv_into_a_send_plan_panics() {
    let (_a, b) = unix_pair();
    let plan = IoPlan::send(b"abc", &[], 0, 0, &[]).unwrap();
    let _ = recv_plan(b.as_fd(), &plan, 0);
}

/// The copy cases, run through the active copier and through the pipe.
fn check_copies(copy: fn(usize, usize, usize) -> Result<(), IoError>) {
    // Pages: 0-1 data, 2 no access, 3 spare, 4 read-only, 5-7 target.
    let m = Map::new(8);
    m.protect(2, libc::PROT_NONE);
    m.protect(4, libc::PROT_READ);
    let data = pattern(2 * PAGE, 7);
    let (a, g, ro, w) = (m.at(0), m.at(2 * PAGE), m.at(4 * PAGE), m.at(5 * PAGE));
    // Local to application and back, across a page boundary.
    copy(a as usize + 100, data.as_ptr() as usize, 5000).unwrap();
    let mut back = vec![0u8; 5000];
    copy(back.as_mut_ptr() as usize, a as usize + 100, 5000).unwrap();
    assert_eq!(back[..], data[..5000]);
    // Application to application.
    copy(w as usize, a as usize + 100, 4000).unwrap();
    let mut back = vec![0u8; 4000];
    copy(back.as_mut_ptr() as usize, w as usize, 4000).unwrap();
    assert_eq!(back[..], data[..4000]);
    // Faults: unreadable source, unwritable destination (no access,
    // read-only), a range running into the guard page, never mapped.
    let mut buf = vec![0u8; 8192];
    let b = buf.as_mut_ptr() as usize;
    assert_eq!(copy(b, g as usize, 10), Err(IoError::Fault));
    assert_eq!(copy(g as usize, b, 10), Err(IoError::Fault));
    assert_eq!(copy(ro as usize, b, 10), Err(IoError::Fault));
    assert_eq!(copy(b, g as usize - 100, 200), Err(IoError::Fault));
    assert_eq!(copy(g as usize - 100, b, 200), Err(IoError::Fault));
    assert_eq!(
        copy(w as usize, g as usize - 8000, 8192),
        Err(IoError::Fault)
    );
    assert_eq!(copy(b, UNMAPPED as usize, 10), Err(IoError::Fault));
    assert_eq!(copy(b, usize::MAX - 3, 10), Err(IoError::Fault));
    // Still correct afterwards (the pipe is in step).
    let mut back = vec![0u8; 300];
    copy(back.as_mut_ptr() as usize, a as usize + 100, 300).unwrap();
    assert_eq!(back[..], data[..300]);
    // Bytes before a fault in the destination were written; the rest of
    // the chunk left no trace in the next copy.
    copy(g as usize - 100, data.as_ptr() as usize, 300).unwrap_err();
    copy(back.as_mut_ptr() as usize, a as usize + 100, 300).unwrap();
    assert_eq!(back[..], data[..300]);
    // More than one pipe chunk.
    let big = Map::new(64);
    let data = pattern(200_000, 8);
    copy(big.at(5) as usize, data.as_ptr() as usize, data.len()).unwrap();
    let mut back = vec![0u8; data.len()];
    copy(back.as_mut_ptr() as usize, big.at(5) as usize, data.len()).unwrap();
    assert!(back == data);
}

#[test]
fn copies_through_process_vm_readv_and_faults() {
    let vm = |d, s, n| match vm_copy(d, s, n) {
        Ok(k) if k == n => Ok(()),
        Ok(_) | Err(libc::EFAULT) => Err(IoError::Fault),
        Err(e) => panic!("process_vm_readv unavailable: {e}"),
    };
    check_copies(vm);
    check_copies(copy_raw);
}

#[test]
fn copies_through_the_pipe_and_faults() {
    check_copies(pipe_copy);
}

#[test]
fn read_write_copy_app_and_scatter_copies() {
    let m = Map::new(4);
    m.protect(3, libc::PROT_NONE);
    write_app(b"hello, world", m.at(10)).unwrap();
    let mut buf = [0u8; 12];
    read_app(m.at(10), &mut buf).unwrap();
    assert_eq!(&buf, b"hello, world");
    copy_app(m.at(PAGE), m.at(10), 12).unwrap();
    read_app(m.at(PAGE), &mut buf).unwrap();
    assert_eq!(&buf, b"hello, world");
    assert_eq!(read_app(m.at(3 * PAGE), &mut buf), Err(IoError::Fault));
    assert_eq!(write_app(&buf, m.at(3 * PAGE - 4)), Err(IoError::Fault));
    assert_eq!(copy_app(m.at(3 * PAGE), m.at(0), 1), Err(IoError::Fault));
    assert_eq!(copy_app(m.at(0), u64::MAX - 1, 4), Err(IoError::Fault));
    // Empty copies touch nothing.
    assert_eq!(read_app(UNMAPPED, &mut []), Ok(()));
    assert_eq!(write_app(&[], UNMAPPED), Ok(()));
    assert_eq!(copy_app(UNMAPPED, UNMAPPED, 0), Ok(()));

    let segs = [
        RawSeg {
            addr: m.at(100),
            len: 5,
        },
        RawSeg {
            addr: m.at(2 * PAGE),
            len: 0,
        },
        RawSeg {
            addr: m.at(2 * PAGE),
            len: 10,
        },
    ];
    write_segs(b"abcdefghij", &segs, 3).unwrap();
    let mut out = [0u8; 15];
    read_segs(&segs, 0, &mut out).unwrap();
    assert_eq!(&out[3..13], b"abcdefghij");
    assert_eq!(
        read_segs(&segs, 1, &mut out),
        Err(IoError::Other(libc::EINVAL))
    );
    assert_eq!(
        write_segs(&out, &segs, 1),
        Err(IoError::Other(libc::EINVAL))
    );
    let bad = [
        segs[0],
        RawSeg {
            addr: m.at(3 * PAGE),
            len: 10,
        },
    ];
    assert_eq!(read_segs(&bad, 0, &mut out), Err(IoError::Fault));
}

#[test]
fn digest_sees_application_bytes_in_order() {
    let m = Map::new(16);
    m.protect(15, libc::PROT_NONE);
    let segs = [
        RawSeg {
            addr: m.at(7),
            len: 40_000,
        },
        RawSeg {
            addr: m.at(50_000),
            len: 3,
        },
        RawSeg {
            addr: m.at(51_000),
            len: 9_000,
        },
    ];
    let data = fill_segs(&segs, 0, 49_003, 9);
    let mut seen = Vec::new();
    let mut calls = 0;
    digest_app(m.at(7), 40_000, |b| {
        assert!(b.len() <= DIGEST_CHUNK);
        calls += 1;
        seen.extend_from_slice(b);
    })
    .unwrap();
    assert_eq!(calls, 3);
    assert!(seen[..] == data[..40_000]);
    seen.clear();
    digest_segs(&segs, 39_990, 5_000, |b| seen.extend_from_slice(b)).unwrap();
    assert!(seen[..] == data[39_990..44_990]);
    assert_eq!(
        digest_segs(&segs, 49_000, 10, |_| {}),
        Err(IoError::Other(libc::EINVAL))
    );
    assert_eq!(
        digest_app(m.at(15 * PAGE - 10), 20, |_| {}),
        Err(IoError::Fault)
    );
    assert_eq!(digest_app(u64::MAX, 2, |_| {}), Err(IoError::Fault));
}

/// With `process_vm_readv` refused by seccomp on one thread (the rest of
/// the test binary is unaffected), copies switch to the pipe for good
/// and still report faults.
#[test]
fn refused_process_vm_readv_switches_to_the_pipe() {
    let t = std::thread::spawn(|| {
        let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
        let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        let ret = (libc::BPF_RET | libc::BPF_K) as u16;
        let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
        let filter = [
            op(ld, 0, 0, 0), // seccomp_data.nr
            op(jeq, 2, 0, libc::SYS_process_vm_readv as u32),
            op(jeq, 1, 0, libc::SYS_process_vm_writev as u32),
            op(ret, 0, 0, libc::SECCOMP_RET_ALLOW),
            op(ret, 0, 0, deny),
        ];
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: prctl with the documented arguments; the filter
        // applies to this thread only (no TSYNC) and `prog` outlives the
        // call.
        unsafe {
            assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
            assert_eq!(
                libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ),
                0
            );
        }
        let m = Map::new(2);
        m.protect(1, libc::PROT_NONE);
        let mut x = [0u8; 8];
        assert_eq!(
            vm_copy(x.as_mut_ptr() as usize, m.at(0) as usize, 8),
            Err(libc::EPERM)
        );
        MODE.store(MODE_VM, Ordering::Relaxed);
        write_app(b"fallback", m.at(0)).unwrap();
        assert_eq!(MODE.load(Ordering::Relaxed), MODE_PIPE);
        read_app(m.at(0), &mut x).unwrap();
        assert_eq!(&x, b"fallback");
        assert_eq!(read_app(m.at(PAGE), &mut x), Err(IoError::Fault));
        assert_eq!(write_app(&x, m.at(PAGE - 4)), Err(IoError::Fault));
        copy_app(m.at(100), m.at(0), 8).unwrap();
        let mut seen = Vec::new();
        digest_app(m.at(100), 8, |b| seen.extend_from_slice(b)).unwrap();
        assert_eq!(&seen, b"fallback");
        check_copies(copy_raw);
    });
    let r = t.join();
    MODE.store(MODE_VM, Ordering::Relaxed);
    r.expect("seccomp thread");
}

#[test]
fn io_errors_map_to_errnos() {
    assert_eq!(IoError::from_errno(libc::EAGAIN), IoError::WouldBlock);
    assert_eq!(IoError::from_errno(libc::EFAULT), IoError::Fault);
    assert_eq!(IoError::from_errno(libc::EPIPE), IoError::Closed);
    assert_eq!(IoError::from_errno(libc::ECONNRESET), IoError::Closed);
    assert_eq!(
        IoError::from_errno(libc::EBADF),
        IoError::Other(libc::EBADF)
    );
    let e: std::io::Error = IoError::WouldBlock.into();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    let e: std::io::Error = IoError::Fault.into();
    assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
}
