//! Results: the human table, `--json`, `--csv`.

use std::io::Write;

use serde::Serialize;

use super::engine::Cpu;
use super::proto::{size_text, Metric, Params, Peer, Test, Wait};
use super::stats::Figures;
use super::Error;

/// The TCP baseline's figures for a row and the ratio of ours to them.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    #[serde(flatten)]
    pub figures: Figures,
    /// Ours / TCP's, of the mode's figure: t_median for --lat (above 1:
    /// slower than TCP), MB/s for --bw and connections/s for conn (above
    /// 1: faster than TCP).
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub ours: Figures,
    pub baseline: Option<Baseline>,
}

/// What `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: &'static str,
    pub version: &'static str,
    pub library: String,
    pub ia: String,
    pub server: String,
    pub server_address: String,
    pub qualifier: u64,
    pub test: Test,
    /// null for conn.
    pub mode: Option<Metric>,
    pub wait: Wait,
    /// What the target of reads (or of a write stream) does in a batch.
    pub peer: Peer,
    pub depth: u32,
    pub check: bool,
    /// Iterations (connections for conn) per size, or null with --duration.
    pub iterations: Option<u64>,
    pub duration_s: Option<f64>,
    /// Untimed iterations before each size's run (and before its baseline).
    pub warmup_iterations: u64,
    /// What t_min / t_median / t_p99 measure.
    pub latency: &'static str,
    /// "tcp" with --baseline tcp.
    pub baseline: Option<&'static str>,
    pub results: Vec<Row>,
    /// -t idle: each side's CPU over the idle period (results is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleReport>,
}

/// One side's CPU over the idle period.
#[derive(Debug, Clone, Serialize)]
pub struct IdleSide {
    pub seconds: f64,
    /// User + system time of every thread of the process.
    pub cpu_seconds: f64,
    /// cpu_seconds / seconds, in % of one core.
    pub percent_of_core: f64,
}

impl IdleSide {
    fn new(c: Cpu) -> IdleSide {
        let seconds = c.wall_ns as f64 / 1e9;
        let cpu_seconds = c.cpu_ns as f64 / 1e9;
        IdleSide {
            seconds,
            cpu_seconds,
            percent_of_core: if seconds > 0.0 {
                100.0 * cpu_seconds / seconds
            } else {
                0.0
            },
        }
    }
}

/// What -t idle measured on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct IdleReport {
    pub client: IdleSide,
    pub server: IdleSide,
}

impl IdleReport {
    pub fn new(client: Cpu, server: Cpu) -> IdleReport {
        IdleReport {
            client: IdleSide::new(client),
            server: IdleSide::new(server),
        }
    }
}

/// The idle test's table.
pub fn idle_table(r: &IdleReport) -> String {
    let mut s = format!(
        "{:>8} {:>10} {:>12} {:>12}",
        "side", "seconds", "cpu_ms", "% of a core"
    );
    for (name, x) in [("client", &r.client), ("server", &r.server)] {
        s.push_str(&format!(
            "\n{:>8} {:>10.2} {:>12.3} {:>12.3}",
            name,
            x.seconds,
            x.cpu_seconds * 1000.0,
            x.percent_of_core
        ));
    }
    s
}

/// What the t_* figures are for these parameters.
pub fn latency_kind(p: &Params) -> &'static str {
    match (p.test, p.mode) {
        (Test::Conn, _) => "connection setup, round trip and teardown",
        (Test::Idle, _) => "none (CPU time of an idle pair)",
        (Test::Read, Metric::Lat) if p.wait == Wait::Mem => {
            "one RDMA Read (post to its data's last byte seen in memory)"
        }
        (Test::Read, Metric::Lat) => "one RDMA Read (request and response)",
        (_, Metric::Lat) if p.wait == Wait::Mem => {
            "round trip / 2 (to the answer's last byte seen in memory)"
        }
        (_, Metric::Lat) => "round trip / 2",
        (Test::Read, Metric::Bw) if p.wait == Wait::Mem => {
            "post of each RDMA Read to its data's last byte seen in memory"
        }
        (_, Metric::Bw) => "post to completion of each operation",
    }
}

pub fn ratio(p: &Params, ours: &Figures, tcp: &Figures) -> Option<f64> {
    let r = match (p.test, p.mode) {
        (Test::Conn, _) => ours.conn_per_s? / tcp.conn_per_s?,
        (Test::Idle, _) => return None,
        (_, Metric::Lat) => ours.t_median_us? / tcp.t_median_us?,
        (_, Metric::Bw) => ours.mb_per_s? / tcp.mb_per_s?,
    };
    r.is_finite().then_some(r)
}

fn num(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(x) => format!("{x:.prec$}"),
        None => "-".into(),
    }
}

/// The table's header lines.
pub fn header(p: &Params, baseline: bool) -> String {
    let mut h = if p.test == Test::Conn {
        format!(
            "{:>8} {:>10} {:>10} {:>10} {:>11}",
            "conns", "t_min", "t_median", "t_p99", "conn/s"
        )
    } else {
        format!(
            "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "size", "iters", "t_min", "t_median", "t_p99", "MB/s", "Mmsg/s"
        )
    };
    if baseline {
        if p.test == Test::Conn {
            h.push_str(&format!(" | {:>11} {:>7}", "tcp conn/s", "ratio"));
        } else {
            h.push_str(&format!(
                " | {:>12} {:>10} {:>7}",
                "tcp t_median", "tcp MB/s", "ratio"
            ));
        }
    }
    h.push_str("\n(t_* in microseconds)");
    h
}

/// One table row.
pub fn line(p: &Params, r: &Row) -> String {
    let f = &r.ours;
    let mut s = if p.test == Test::Conn {
        format!(
            "{:>8} {:>10} {:>10} {:>10} {:>11}",
            f.iterations,
            num(f.t_min_us, 2),
            num(f.t_median_us, 2),
            num(f.t_p99_us, 2),
            num(f.conn_per_s, 1)
        )
    } else {
        format!(
            "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>8}",
            size_text(f.size),
            f.iterations,
            num(f.t_min_us, 2),
            num(f.t_median_us, 2),
            num(f.t_p99_us, 2),
            num(f.mb_per_s, 2),
            num(f.mmsg_per_s, 4)
        )
    };
    if let Some(b) = &r.baseline {
        let ratio = b.ratio.map_or("-".to_string(), |x| format!("{x:.2}x"));
        if p.test == Test::Conn {
            s.push_str(&format!(
                " | {:>11} {:>7}",
                num(b.figures.conn_per_s, 1),
                ratio
            ));
        } else {
            s.push_str(&format!(
                " | {:>12} {:>10} {:>7}",
                num(b.figures.t_median_us, 2),
                num(b.figures.mb_per_s, 2),
                ratio
            ));
        }
    }
    s
}

/// A CSV record: ours, then the baseline's (empty without one).
#[derive(Serialize)]
struct CsvRow<'a> {
    test: &'a str,
    mode: &'a str,
    wait: &'a str,
    size: u64,
    iterations: u64,
    seconds: f64,
    t_min_us: Option<f64>,
    t_median_us: Option<f64>,
    t_p99_us: Option<f64>,
    mb_per_s: Option<f64>,
    mmsg_per_s: Option<f64>,
    conn_per_s: Option<f64>,
    tcp_iterations: Option<u64>,
    tcp_seconds: Option<f64>,
    tcp_t_min_us: Option<f64>,
    tcp_t_median_us: Option<f64>,
    tcp_t_p99_us: Option<f64>,
    tcp_mb_per_s: Option<f64>,
    tcp_mmsg_per_s: Option<f64>,
    tcp_conn_per_s: Option<f64>,
    ratio: Option<f64>,
}

pub fn csv(rep: &Report) -> Result<Vec<u8>, Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let test = rep.test.to_string();
    let mode = rep.mode.map_or("", super::proto::mode_name);
    let wait = super::proto::wait_name(rep.wait);
    for r in &rep.results {
        let b = r.baseline.as_ref().map(|b| &b.figures);
        w.serialize(CsvRow {
            test: &test,
            mode,
            wait,
            size: r.ours.size,
            iterations: r.ours.iterations,
            seconds: r.ours.seconds,
            t_min_us: r.ours.t_min_us,
            t_median_us: r.ours.t_median_us,
            t_p99_us: r.ours.t_p99_us,
            mb_per_s: r.ours.mb_per_s,
            mmsg_per_s: r.ours.mmsg_per_s,
            conn_per_s: r.ours.conn_per_s,
            tcp_iterations: b.map(|b| b.iterations),
            tcp_seconds: b.map(|b| b.seconds),
            tcp_t_min_us: b.and_then(|b| b.t_min_us),
            tcp_t_median_us: b.and_then(|b| b.t_median_us),
            tcp_t_p99_us: b.and_then(|b| b.t_p99_us),
            tcp_mb_per_s: b.and_then(|b| b.mb_per_s),
            tcp_mmsg_per_s: b.and_then(|b| b.mmsg_per_s),
            tcp_conn_per_s: b.and_then(|b| b.conn_per_s),
            ratio: r.baseline.as_ref().and_then(|b| b.ratio),
        })
        .map_err(|e| Error(format!("--csv: {e}")))?;
    }
    w.into_inner().map_err(|e| Error(format!("--csv: {e}")))
}

pub fn json(rep: &Report) -> Result<Vec<u8>, Error> {
    let mut v = serde_json::to_vec_pretty(rep).map_err(|e| Error(format!("--json: {e}")))?;
    v.push(b'\n');
    Ok(v)
}

/// Writes to FILE, or standard output for "-".
pub fn emit(dest: &str, bytes: &[u8], what: &str) -> Result<(), Error> {
    if dest == "-" {
        let mut o = std::io::stdout().lock();
        o.write_all(bytes)
            .and_then(|_| o.flush())
            .map_err(|e| Error(format!("{what}: standard output: {e}")))
    } else {
        std::fs::write(dest, bytes).map_err(|e| Error(format!("{what}: cannot write {dest}: {e}")))
    }
}
