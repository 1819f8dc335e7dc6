//! The counting mode (`qp_bench lockstep`): both queue pairs driven from
//! one thread in lock step, so the work per round trip does not depend on
//! timing; `ctests/bench/lockstep_counts.sh` counts the measured loop
//! (`lockstep_loop`) and the idle-CQ poll (`lockstep_empty`) by name.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use udapl::transport::api::{CompletionQueue, MemoryRegion, QueuePair, Wc, WcOp};

use super::harness::{pattern, post_recv, post_send, sge, DevicePair, Poller, SEND};
use super::R;

/// Send/recv ping-pong with both queue pairs driven by the calling thread
/// in lock step (the same pattern as `bench_ep --lockstep`): a posts a
/// receive and a Send; b polls until the receive completes, posts a
/// receive and the echo; a polls until its receive completes. Loopback
/// TCP delivers inside the sender's system call, so the work per round
/// trip does not depend on timing: run under callgrind or `perf stat`
/// with two values of `n` and divide the difference.
pub(crate) fn qp_lockstep(d: &DevicePair, len: usize, n: usize, idle: bool) -> R<()> {
    let (ca, cb) = d.cqs()?;
    let src = pattern(len, 4);
    let (ra, rb) = (vec![0u8; len], vec![0u8; len]);
    let (ms, mra, mrb) = (d.reg(true, &src)?, d.reg(true, &ra)?, d.reg(false, &rb)?);
    let (qa, qb) = d.connect(&ca, &cb, |qb| post_recv(qb, 1, sge(&mrb, 0, len)))?;
    let a = LockstepSide(&*qa, &ca, &ms, &mra);
    let b = LockstepSide(&*qb, &cb, &mrb, &mrb);
    // Warm-up: the progress thread still looks after freshly connected
    // queue pairs until it sees them polled.
    lockstep_warmup(&a, &b, len, LOCKSTEP_WARMUP)?;
    let t0 = Instant::now();
    let polls = lockstep_loop(&a, &b, len, n)?;
    let t = t0.elapsed().as_secs_f64();
    if ra != src || rb != src {
        return Err("lockstep: data mismatch".into());
    }
    println!(
        "lockstep QP: {n} round trips of {len} B, {:.2} poller steps per round trip, \
         {:.3} us per round trip (both sides, one thread)",
        polls as f64 / n as f64,
        t * 1e6 / n as f64
    );
    if idle {
        // The last echoes' acknowledgements, then polls of an idle CQ.
        let mut p = Poller::new(&ca);
        let end = Instant::now() + Duration::from_millis(100);
        while Instant::now() < end {
            let _ = p.try_next()?;
            cb.poll(&mut [Wc::BLANK; 4]);
        }
        let t0 = Instant::now();
        lockstep_empty(&ca, n)?;
        println!(
            "lockstep QP: {:.3} us per poll of an empty CQ",
            t0.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    let _ = qa.disconnect(false);
    Ok(())
}

/// Polls of an idle CQ (the spin of a busy poller; callgrind:
/// `--toggle-collect=qp_bench::lockstep::lockstep_empty`).
#[inline(never)]
fn lockstep_empty(cq: &Arc<dyn CompletionQueue>, n: usize) -> R<()> {
    let mut buf = [Wc::BLANK; 32];
    for _ in 0..n {
        if cq.poll(&mut buf) != 0 {
            return Err("lockstep: a completion on an idle CQ".into());
        }
    }
    Ok(())
}

/// A queue pair, its CQ, and the regions it sends from and receives into.
struct LockstepSide<'a>(
    &'a dyn QueuePair,
    &'a Arc<dyn CompletionQueue>,
    &'a MemoryRegion,
    &'a MemoryRegion,
);

/// Round trips run before the measured ones.
const LOCKSTEP_WARMUP: usize = 200;

/// The warm-up round trips (not measured).
#[inline(never)]
fn lockstep_warmup(a: &LockstepSide<'_>, b: &LockstepSide<'_>, len: usize, n: usize) -> R<u64> {
    lockstep_rounds(a, b, len, n, false)
}

/// The measured loop (callgrind:
/// `--toggle-collect=qp_bench::lockstep::lockstep_loop`, the exact name: a
/// pattern would also match its closures and toggle collection off inside
/// them); returns the poller steps taken.
#[inline(never)]
fn lockstep_loop(a: &LockstepSide<'_>, b: &LockstepSide<'_>, len: usize, n: usize) -> R<u64> {
    lockstep_rounds(a, b, len, n, true)
}

/// `n` lockstep round trips; `last`: the final one leaves b without a
/// posted receive.
#[inline(always)]
fn lockstep_rounds(
    a: &LockstepSide<'_>,
    b: &LockstepSide<'_>,
    len: usize,
    n: usize,
    last: bool,
) -> R<u64> {
    let (mut pa, mut pb) = (Poller::new(a.1), Poller::new(b.1));
    let mut polls = 0u64;
    let mut recv = |p: &mut Poller| -> R<()> {
        loop {
            polls += 1;
            if let Some(wc) = p.try_next()? {
                if wc.op == WcOp::Recv {
                    return if wc.byte_len == len as u64 {
                        Ok(())
                    } else {
                        Err("lockstep: wrong length".into())
                    };
                }
            }
            if polls > 1_000_000_000 {
                return Err("lockstep: stuck".into());
            }
        }
    };
    for i in 0..n {
        post_recv(a.0, 1, sge(a.3, 0, len))?;
        post_send(a.0, 2, SEND, sge(a.2, 0, len))?;
        recv(&mut pb)?;
        if i + 1 < n || !last {
            post_recv(b.0, 1, sge(b.3, 0, len))?;
        }
        post_send(b.0, 2, SEND, sge(b.2, 0, len))?;
        recv(&mut pa)?;
    }
    Ok(polls)
}

/// `qp_bench lockstep [N [BYTES [idle]]]`: [`qp_lockstep`] alone (`idle`:
/// then N polls of the idle CQ, timed).
pub(crate) fn lockstep_main(args: &[String]) -> ExitCode {
    let n = args.first().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let len = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let idle = args.get(2).is_some_and(|a| a == "idle");
    match DevicePair::open().and_then(|d| qp_lockstep(&d, len, n, idle)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qp_bench: error (lockstep): {e}");
            ExitCode::FAILURE
        }
    }
}
