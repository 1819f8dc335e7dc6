//! Queue-pair-level benchmark (`make qp-bench`, part of `make bench`): the
//! TCP transport's queue pairs beside raw TCP sockets over loopback, in a
//! busy-polling and a sleeping style: ping-pong latency (also with the
//! passive side in a second process, `procs`, the harness shape of
//! `bench_ep`), RDMA Write / Read bandwidth, 64 B message rate and
//! connection setup rate; `qp_bench lockstep N` counts per round trip.
//! What each pattern does and the results: docs/benchmarks.md.
//! This file: the command line, the runs and the table; the patterns are
//! in `tcp` (raw TCP), `qp` (queue pairs), `procs` (two processes) and
//! `lockstep` (the counting mode), on the helpers of `harness`.

mod harness;
mod lockstep;
mod procs;
mod qp;
mod tcp;

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use harness::{blocking, DevicePair, BLOCKING};
use procs::{procs_child, procs_run};
use qp::{qp_conn_rate, qp_msg_rate, qp_pingpong, qp_rdma};
use tcp::{tcp_conn_rate, tcp_msg_rate, tcp_pingpong, tcp_stream};

type R<T> = Result<T, String>;

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Longest any single wait may take.
const WAIT: Duration = Duration::from_secs(10);

struct Row {
    pattern: &'static str,
    /// Waiting style: "busy" or "block".
    wait: &'static str,
    size: usize,
    unit: &'static str,
    ours: f64,
    tcp: f64,
    /// The target for ours / raw TCP (informative).
    target: &'static str,
}

fn size_str(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// Patterns to run: those whose group (`latency`, `procs`, `write`,
/// `read`, `rate`, `conn`) is named on the command line, or all.
/// `qp_bench lockstep [N [BYTES [idle]]]` instead runs [`lockstep::qp_lockstep`] alone.
fn wanted(group: &str) -> bool {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "busy" && a != "block")
        .collect();
    args.is_empty() || args.iter().any(|a| a == group)
}

fn wanted_style(s: &str) -> bool {
    std::env::args().skip(1).any(|a| a == s)
}

/// QP_BENCH_ACK=local: iWARP's local completion.
fn local_completion() -> bool {
    std::env::var("QP_BENCH_ACK").is_ok_and(|v| v == "local")
}

fn style() -> &'static str {
    if blocking() {
        "block"
    } else {
        "busy"
    }
}

/// Runs a measurement three times; the median.
fn median(mut f: impl FnMut() -> R<f64>) -> R<f64> {
    let mut v = [f()?, f()?, f()?];
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v[1])
}

fn run() -> R<Vec<Row>> {
    let d = DevicePair::open()?;
    let mut rows = Vec::new();
    let lat: &[(usize, usize, usize)] = if wanted("latency") {
        &[
            (8, 1000, 20_000),
            (64, 1000, 20_000),
            (1024, 1000, 10_000),
            (65536, 100, 1000),
        ]
    } else {
        &[]
    };
    for &(len, warm, iters) in lat {
        let ours = median(|| {
            qp_pingpong(&d, len, warm, iters).map_err(|e| format!("ping-pong {len} B: {e}"))
        })? * 0.5e6;
        let tcp = median(|| tcp_pingpong(len, warm, iters))? * 0.5e6;
        rows.push(Row {
            wait: style(),
            pattern: "ping-pong latency (RTT/2)",
            size: len,
            unit: "us",
            ours,
            tcp,
            target: if len <= 1024 { "<= 1.05x" } else { "" },
        });
    }
    if wanted("procs") {
        rows.extend(procs_run().map_err(|e| format!("two processes: {e}"))?);
    }
    let mut streams = Vec::new();
    let writes: &[(usize, usize)] = if wanted("write") {
        &[(65536, 2048), (1 << 20, 192), (8 << 20, 24)]
    } else {
        &[]
    };
    for &(len, count) in writes {
        let ours =
            median(|| qp_rdma(&d, false, len, count).map_err(|e| format!("write {len} B: {e}")))?
                / 1e9;
        let tcp = median(|| tcp_stream(len, count))? / 1e9;
        streams.push((len, count, tcp));
        rows.push(Row {
            wait: style(),
            pattern: "RDMA Write bandwidth",
            size: len,
            unit: "GB/s",
            ours,
            tcp,
            target: if len >= 1 << 20 { ">= 0.95x" } else { "" },
        });
    }
    let reads: &[(usize, usize)] = if wanted("read") {
        &[(1 << 20, 192), (8 << 20, 24)]
    } else {
        &[]
    };
    for &(len, count) in reads {
        let ours =
            median(|| qp_rdma(&d, true, len, count).map_err(|e| format!("read {len} B: {e}")))?
                / 1e9;
        let tcp = median(|| tcp_stream(len, count))? / 1e9;
        rows.push(Row {
            wait: style(),
            pattern: "RDMA Read bandwidth",
            size: len,
            unit: "GB/s",
            ours,
            tcp,
            target: ">= 0.95x",
        });
    }
    if wanted("rate") {
        let ours =
            median(|| qp_msg_rate(&d, 64, 100_000).map_err(|e| format!("messages: {e}")))? / 1e6;
        let tcp = median(|| tcp_msg_rate(64, 100_000))? / 1e6;
        rows.push(Row {
            wait: style(),
            pattern: "message rate (window 8)",
            size: 64,
            unit: "Mmsg/s",
            ours,
            tcp,
            target: "",
        });
    }
    if wanted("conn") {
        let ours = median(|| qp_conn_rate(&d, 200).map_err(|e| format!("connections: {e}")))?;
        let tcp = median(|| tcp_conn_rate(200))?;
        rows.push(Row {
            wait: style(),
            pattern: "connection setup+RT+close",
            size: 8,
            unit: "conn/s",
            ours,
            tcp,
            target: "",
        });
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "lockstep") {
        return lockstep::lockstep_main(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "__child") {
        BLOCKING.store(args.get(1).is_some_and(|a| a == "block"), Ordering::Relaxed);
        return match procs_child() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("qp_bench: error (child): {e}");
                ExitCode::FAILURE
            }
        };
    }
    let t0 = Instant::now();
    let mut rows = Vec::new();
    // `busy` / `block` on the command line pick one waiting style.
    let styles: Vec<bool> = match (wanted_style("busy"), wanted_style("block")) {
        (true, false) => vec![false],
        (false, true) => vec![true],
        _ => vec![false, true],
    };
    for b in styles {
        BLOCKING.store(b, Ordering::Relaxed);
        match run() {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("qp_bench: error ({}): {e}", style());
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{:<27} {:>5} {:>7} {:>7} {:>11} {:>11} {:>7}  target (informative)",
        "pattern", "wait", "size", "unit", "ours", "raw TCP", "ratio"
    );
    for r in &rows {
        println!(
            "{:<27} {:>5} {:>7} {:>7} {:>11.3} {:>11.3} {:>6.2}x  {}",
            r.pattern,
            r.wait,
            size_str(r.size),
            r.unit,
            r.ours,
            r.tcp,
            r.ours / r.tcp,
            r.target
        );
    }
    if std::env::var_os("QP_BENCH_STATS").is_some() {
        let (runs, looks) = udapl::transport::soft::progress::stats();
        println!("progress thread: {runs} runs, {looks} handed to a holder");
    }
    println!(
        "ratio = ours / raw TCP (latency: lower is better; the rest: higher is better). \
         Loopback, one thread per side; busy: both poll, block: both sleep (ours on \
         the armed CQ's wait descriptor, raw TCP in blocking reads; an RDMA target \
         sleeps and the transport serves it). Median of 3 runs. Total {:.1} s.",
        t0.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
