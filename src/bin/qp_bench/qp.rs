//! The queue-pair patterns: ping-pong, windowed RDMA Write / Read, message
//! rate and connection setup rate, between the two devices of a
//! [`DevicePair`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use udapl::transport::api::{SendOp, Wc, WcOp};

use super::harness::{
    blocking, pattern, post_recv, post_send, sge, two, ConnEvent, DevicePair, Poller, SEND,
};
use super::{local_completion, R, WAIT};

/// Outstanding work requests in the windowed patterns.
const WINDOW: usize = 8;

/// Ping-pong over queue pairs: seconds per round trip.
pub(crate) fn qp_pingpong(d: &DevicePair, len: usize, warm: usize, iters: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 4);
    let (ra, rb) = (vec![0u8; len], vec![0u8; len]);
    let (ms, mra, mrb) = (d.reg(true, &src)?, d.reg(true, &ra)?, d.reg(false, &rb)?);
    let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mrb, 0, len)))?;
    let total = warm + iters;
    let per = two(
        |bar| {
            let mut p = Poller::new(&ca);
            bar.wait();
            let mut t0 = Instant::now();
            let mut unacked = 0usize;
            for i in 0..total {
                if i == warm {
                    t0 = Instant::now();
                }
                post_recv(&*qa, 1, sge(&mra, 0, len))?;
                post_send(&*qa, 2, SEND, sge(&ms, 0, len))?;
                unacked += 1;
                loop {
                    let wc = p.next()?;
                    if wc.op == WcOp::Recv {
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && ra != src {
                    return Err("qp ping-pong: data mismatch (active side)".into());
                }
                if unacked > 64 {
                    return Err("qp ping-pong: sends do not complete".into());
                }
            }
            Ok(t0.elapsed().as_secs_f64() / iters as f64)
        },
        |bar| {
            let mut p = Poller::new(&cb);
            bar.wait();
            let mut unacked = 0usize;
            for i in 0..total {
                loop {
                    let wc = p.next()?;
                    if wc.op == WcOp::Recv {
                        if wc.byte_len != len as u64 {
                            return Err("qp ping-pong: wrong length".into());
                        }
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && rb != src {
                    return Err("qp ping-pong: data mismatch (passive side)".into());
                }
                if i + 1 < total {
                    post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                }
                post_send(&*qb, 2, SEND, sge(&mrb, 0, len))?;
                unacked += 1;
                if unacked > 64 {
                    return Err("qp ping-pong: replies do not complete".into());
                }
            }
            Ok(())
        },
    )?;
    let _ = qa.disconnect(false);
    Ok(per)
}

/// Windowed RDMA Writes (or Reads) of `len` bytes, `count` of them; bytes
/// per second at the initiator. The first one is verified before timing.
pub(crate) fn qp_rdma(d: &DevicePair, read: bool, len: usize, count: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let (local, remote) = if read {
        (vec![0u8; len], pattern(len, 5))
    } else {
        (pattern(len, 6), vec![0u8; len])
    };
    let (ml, mr) = (d.reg(true, &local)?, d.reg(false, &remote)?);
    let (qa, _qb) = d.connect(&ca, &cb, |_| Ok(()))?;
    let op = if read {
        SendOp::RdmaRead {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        }
    } else {
        SendOp::RdmaWrite {
            remote_addr: mr.addr,
            rkey: mr.rkey,
        }
    };
    // One verified transfer, both sides driven from this thread.
    post_send(&*qa, 0, op, sge(&ml, 0, len))?;
    let (mut pa, mut pb) = (Poller::new(&ca), Poller::new(&cb));
    let wc = d.spin("first transfer", || {
        pb.try_next()?;
        pa.try_next()
    })?;
    if wc.byte_len != len as u64 && read {
        return Err(format!("rdma read: {} bytes, want {len}", wc.byte_len));
    }
    if local_completion() && !read {
        // A locally completed Write may still be on its way.
        // (black_box: the buffer changes behind the compiler's back.)
        d.spin("written data", || {
            Ok((local == *std::hint::black_box(&remote)).then_some(()))
        })?;
    }
    if local != remote {
        return Err("rdma: data mismatch".into());
    }
    let stop = AtomicBool::new(false);
    let s0 = udapl::transport::soft::progress::stats();
    let _show = ProgressStatsReport(s0);
    two(
        |bar| {
            bar.wait();
            let r = (|| {
                let t0 = Instant::now();
                let (mut posted, mut done) = (0, 0);
                while done < count {
                    while posted < count && posted - done < WINDOW {
                        post_send(&*qa, posted as u64, op, sge(&ml, 0, len))?;
                        posted += 1;
                    }
                    pa.next()?;
                    done += 1;
                }
                Ok((len * count) as f64 / t0.elapsed().as_secs_f64())
            })();
            stop.store(true, Ordering::Release);
            r
        },
        |bar| {
            bar.wait();
            let end = Instant::now() + WAIT * 3;
            while !stop.load(Ordering::Acquire) {
                // A blocking target sleeps: the transport serves it.
                if blocking() {
                    std::thread::sleep(Duration::from_millis(1));
                } else {
                    pb.try_next()?;
                }
                if Instant::now() > end {
                    return Err("rdma target: timed out".into());
                }
            }
            Ok(())
        },
    )
}

/// Prints the progress engine's counters since the given snapshot when
/// dropped, if `QP_BENCH_STATS` is set.
struct ProgressStatsReport((u64, u64));
impl Drop for ProgressStatsReport {
    fn drop(&mut self) {
        if std::env::var_os("QP_BENCH_STATS").is_some() {
            let (r, l) = udapl::transport::soft::progress::stats();
            println!(
                "  timed part: {} runs, {} handed to a holder",
                r - self.0 .0,
                l - self.0 .1
            );
        }
    }
}

/// Sets its flag when dropped (on success and on error alike).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Windowed 64 B Sends; messages per second at the receiver.
pub(crate) fn qp_msg_rate(d: &DevicePair, len: usize, count: usize) -> R<f64> {
    const SLOTS: usize = 64;
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 7);
    let rbuf = vec![0u8; len * SLOTS];
    let (ms, mrb) = (d.reg(true, &src)?, d.reg(false, &rbuf)?);
    let stop = AtomicBool::new(false);
    let (qa, qb) = d.connect(&ca, &cb, |qb| {
        (0..SLOTS).try_for_each(|i| post_recv(qb, i as u64, sge(&mrb, i * len, len)))
    })?;
    two(
        |bar| {
            let mut p = Poller::new(&cb);
            bar.wait();
            let t0 = Instant::now();
            for i in 0..count {
                let wc = p
                    .next()
                    .map_err(|e| format!("receiver, after {i} of {count}: {e}"))?;
                let slot = wc.wr_id as usize;
                if i == 0 && rbuf[slot * len..(slot + 1) * len] != src[..] {
                    return Err("qp messages: data mismatch".into());
                }
                if i + SLOTS < count {
                    post_recv(&*qb, wc.wr_id, sge(&mrb, slot * len, len))?;
                }
            }
            let rate = count as f64 / t0.elapsed().as_secs_f64();
            // The sender's last Sends complete when this side answers their
            // ack reads: keep driving the engine until the sender is done.
            let end = Instant::now() + WAIT;
            while !stop.load(Ordering::Acquire) {
                p.try_next()?;
                if Instant::now() > end {
                    return Err("receiver: sender did not finish".into());
                }
            }
            Ok(rate)
        },
        |bar| {
            let mut p = Poller::new(&ca);
            bar.wait();
            let _done = SetOnDrop(&stop);
            let (mut posted, mut done) = (0, 0);
            while done < count {
                while posted < count && posted - done < WINDOW {
                    post_send(&*qa, posted as u64, SEND, sge(&ms, 0, len))?;
                    posted += 1;
                }
                p.next()
                    .map_err(|e| format!("sender, {done} of {count} completed: {e}"))?;
                done += 1;
            }
            Ok(())
        },
    )
}

/// (connect + MPA exchange + one round trip + close) per second, both
/// sides driven from this thread.
pub(crate) fn qp_conn_rate(d: &DevicePair, count: usize) -> R<f64> {
    let (ca, cb) = d.cqs()?;
    let (ba, bb) = (vec![0u8; 8], vec![0u8; 8]);
    let (ma, mb) = (d.reg(true, &ba)?, d.reg(false, &bb)?);
    let src = *b"ping1234";
    let msrc = d.reg(true, &src)?;
    let (mut pa, mut pb) = (Poller::new(&ca), Poller::new(&cb));
    let t0 = Instant::now();
    for i in 0..count {
        let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mb, 0, 8)))?;
        post_recv(&*qa, 1, sge(&ma, 0, 8))?;
        post_send(&*qa, 2, SEND, sge(&msrc, 0, 8))?;
        d.spin("request", || {
            Ok(pb.try_next()?.filter(|w| w.op == WcOp::Recv))
        })?;
        post_send(&*qb, 2, SEND, sge(&mb, 0, 8))?;
        d.spin("reply", || {
            Ok(pa.try_next()?.filter(|w| w.op == WcOp::Recv))
        })?;
        if i == 0 && (ba != src || bb != src) {
            return Err("qp connections: data mismatch".into());
        }
        qa.disconnect(true)
            .map_err(|e| format!("disconnect: {e:?}"))?;
        d.spin("peer disconnected", || {
            d.rb.take(Some(qb.num()), |e| e == ConnEvent::Down)
        })?;
        d.ra.take(Some(qa.num()), |_| true)?;
        // Flushed or late send completions of this connection: not counted.
        while ca.poll(&mut [Wc::BLANK; 8]) > 0 {}
        while cb.poll(&mut [Wc::BLANK; 8]) > 0 {}
        pa = Poller::new(&ca);
        pb = Poller::new(&cb);
    }
    Ok(count as f64 / t0.elapsed().as_secs_f64())
}
