//! bench_progress (`make bench-progress`): the asynchronous-progress
//! targets (memory-polling latency, RDMA Read from a computing peer,
//! `dat_cno_wait`, one-in-flight streams, idle CPU), each measured with
//! dat-perf server and client processes beside its baseline from the same
//! run. Targets, modes and exit status: docs/benchmarks.md, "Asynchronous
//! progress".

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const USAGE: &str = "usage: bench_progress [--dat-perf PATH] [--ia IA_NAME] [--quick]";

/// Iteration counts of one configuration.
struct Counts {
    check: &'static str,
    /// Iterations per size of the latency runs (both of a pair).
    lat: &'static str,
    read: &'static str,
    cno: &'static str,
    /// Iterations of the stream at 8 MiB (twice as many at 4 MiB, ...:
    /// the same bytes at every size).
    stream: u64,
    idle_s: &'static str,
}

const FULL: Counts = Counts {
    check: "20",
    lat: "100",
    read: "300",
    cno: "1000",
    stream: 32,
    idle_s: "5",
};

const QUICK: Counts = Counts {
    check: "5",
    lat: "10",
    read: "20",
    cno: "20",
    stream: 2,
    idle_s: "0.5",
};

struct Opts {
    dat_perf: PathBuf,
    ia: String,
    quick: bool,
}

fn parse_args() -> Result<Opts, String> {
    let mut it = std::env::args().skip(1);
    let mut dat_perf = None;
    let mut ia = "tcp0".to_string();
    let mut quick = false;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dat-perf" => dat_perf = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            "--ia" => ia = it.next().ok_or(USAGE)?,
            "--quick" => quick = true,
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    let dat_perf = match dat_perf {
        Some(p) => p,
        None => {
            // Beside this program, else the build tree's.
            let here = std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(|d| d.join("dat-perf")));
            match here {
                Some(p) if p.exists() => p,
                _ => PathBuf::from("build/bin/dat-perf"),
            }
        }
    };
    Ok(Opts {
        dat_perf,
        ia,
        quick,
    })
}

/// A process whose standard output is read line by line; killed on drop.
struct Proc {
    child: Child,
    lines: Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl Proc {
    fn spawn(bin: &Path, args: &[String]) -> Result<Proc, String> {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let mut err = child.stderr.take().ok_or("no stderr")?;
        let (tx, lines) = channel();
        thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Ok(Proc {
            child,
            lines,
            stderr: Some(stderr),
        })
    }

    /// Waits for the exit (killed past `within`): success, stdout, stderr.
    fn finish(mut self, within: Duration) -> (bool, String, String) {
        let end = Instant::now() + within;
        let ok = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.success(),
                Ok(None) if Instant::now() < end => thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break false;
                }
            }
        };
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(l);
        }
        let err = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (ok, out.join("\n"), err)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One dat-perf run: a server on a free qualifier, the client with `args`
/// and `--json`; the client's JSON.
fn run(o: &Opts, args: &[&str]) -> Result<Value, String> {
    let timeout = "20";
    let server_args: Vec<String> = ["-D", &o.ia, "-p", "0", "--timeout", timeout]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let server = Proc::spawn(&o.dat_perf, &server_args)?;
    // "dat-perf: server on IA tcp0 (127.0.0.1) qualifier 40001: waiting for a client"
    let line = match server.lines.recv_timeout(Duration::from_secs(20)) {
        Ok(l) => l,
        Err(_) => {
            let (_, _, err) = server.finish(Duration::from_secs(1));
            return Err(format!(
                "the dat-perf server did not start: {}",
                first_line(&err).unwrap_or("no output")
            ));
        }
    };
    let (addr, qual) = parse_server_line(&line)
        .ok_or_else(|| format!("unexpected line from the dat-perf server: {line}"))?;
    let mut client_args: Vec<String> = ["-D", &o.ia, "-p", &qual, "--timeout", timeout]
        .iter()
        .map(|s| s.to_string())
        .collect();
    client_args.extend(args.iter().map(|s| s.to_string()));
    client_args.extend(["--json".to_string(), "--no-progress".into(), addr]);
    let client = Proc::spawn(&o.dat_perf, &client_args)?;
    let (cok, cout, cerr) = client.finish(Duration::from_secs(180));
    let (sok, _, serr) = server.finish(Duration::from_secs(30));
    let shown = args.join(" ");
    if !cok {
        return Err(format!(
            "dat-perf {shown}: {}{}",
            first_line(&cerr).unwrap_or("the client failed or did not finish"),
            first_line(&serr)
                .filter(|_| !sok)
                .map(|l| format!(" (server: {l})"))
                .unwrap_or_default()
        ));
    }
    if !sok {
        return Err(format!(
            "dat-perf {shown}: server: {}",
            first_line(&serr).unwrap_or("failed")
        ));
    }
    serde_json::from_str(&cout).map_err(|e| format!("dat-perf {shown}: not JSON ({e})"))
}

fn first_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).find(|l| !l.is_empty())
}

/// The address and qualifier in the server's "waiting" line.
fn parse_server_line(l: &str) -> Option<(String, String)> {
    let open = l.find(" (")?;
    let close = l[open..].find(") qualifier ")? + open;
    let addr = l[open + 2..close].to_string();
    let rest = &l[close + ") qualifier ".len()..];
    let qual: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!qual.is_empty()).then_some((addr, qual))
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// The rows of a run's results by size.
fn rows(v: &Value) -> Vec<Value> {
    v["results"].as_array().cloned().unwrap_or_default()
}

fn size_text(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

fn us(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 1000.0 => format!("{v:.0} us"),
        Some(v) => format!("{v:.2} us"),
        None => "-".into(),
    }
}

fn mbs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.0} MB/s"))
}

/// One line of the final table.
struct Line {
    what: String,
    size: String,
    measured: String,
    baseline: String,
    ratio: Option<f64>,
    goal: &'static str,
    met: Option<bool>,
}

impl Line {
    fn failed(what: String, why: String) -> Line {
        Line {
            what,
            size: "-".into(),
            measured: format!("run failed: {why}"),
            baseline: String::new(),
            ratio: None,
            goal: "",
            met: None,
        }
    }
}

const HEADS: [&str; 7] = [
    "target",
    "size",
    "measured",
    "baseline (same run)",
    "ratio",
    "goal",
    "result",
];

impl Line {
    fn cells(&self) -> [String; 7] {
        [
            self.what.clone(),
            self.size.clone(),
            self.measured.clone(),
            self.baseline.clone(),
            self.ratio.map_or("-".into(), |r| format!("{r:.2}x")),
            self.goal.to_string(),
            match self.met {
                Some(true) => "met".into(),
                Some(false) => "NOT MET".into(),
                None => "-".into(),
            },
        ]
    }
}

fn print_table(lines: &[Line]) {
    let rows: Vec<[String; 7]> = lines.iter().map(Line::cells).collect();
    let widths: Vec<usize> = (0..7)
        .map(|k| {
            rows.iter()
                .map(|r| r[k].chars().count())
                .chain([HEADS[k].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let fmt = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    println!("{}", fmt(HEADS.iter().map(|h| h.to_string()).collect()));
    println!("{}", fmt(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for r in rows {
        println!("{}", fmt(r.to_vec()));
    }
}

/// Latency comparison: `ours` against `base` (same test and sizes), per
/// size: ratio of medians ≤ `max_ratio`, and p99 < `p99_max` when given.
#[allow(clippy::too_many_arguments)]
fn compare_lat(
    lines: &mut Vec<Line>,
    what: &str,
    ours: &Value,
    base: &Value,
    base_name: &str,
    max_ratio: f64,
    p99_max: Option<f64>,
    goal: &'static str,
) {
    for (a, b) in rows(ours).iter().zip(rows(base).iter()) {
        let (am, bm) = (f(a, "t_median_us"), f(b, "t_median_us"));
        let ratio = match (am, bm) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        };
        let p99 = f(a, "t_p99_us");
        let met =
            ratio.map(|r| r <= max_ratio && p99_max.is_none_or(|m| p99.is_some_and(|p| p < m)));
        let measured = match p99_max {
            Some(_) => format!("{} (p99 {})", us(am), us(p99)),
            None => us(am),
        };
        lines.push(Line {
            what: what.to_string(),
            size: size_text(a["size"].as_u64().unwrap_or(0)),
            measured,
            baseline: format!("{} {base_name}", us(bm)),
            ratio,
            goal,
            met,
        });
    }
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_progress: {e}");
            return ExitCode::from(2);
        }
    };
    let c = if o.quick { &QUICK } else { &FULL };
    let started = Instant::now();
    let mut failures = 0;
    println!(
        "bench_progress: asynchronous progress over IA {} with {} (server and client processes; each ratio against a baseline of this run)",
        o.ia,
        o.dat_perf.display()
    );

    // 1. The new modes with every byte checked.
    let checks: [(&str, &[&str]); 6] = [
        (
            "send lat, wait mem",
            &["-t", "send", "--lat", "-s", "8,64K", "--wait", "mem"],
        ),
        (
            "write lat, wait mem",
            &["-t", "write", "--lat", "-s", "8,64K", "--wait", "mem"],
        ),
        (
            "read lat, wait mem, peer compute",
            &[
                "-t", "read", "--lat", "-s", "8,64K", "--wait", "mem", "--peer", "compute",
            ],
        ),
        (
            "send bw depth 1, wait mem",
            &[
                "-t", "send", "--bw", "--depth", "1", "-s", "1M", "--wait", "mem",
            ],
        ),
        (
            "write bw depth 1, wait mem",
            &[
                "-t", "write", "--bw", "--depth", "1", "-s", "1M", "--wait", "mem",
            ],
        ),
        (
            "read bw, wait mem, peer compute",
            &[
                "-t", "read", "--bw", "-s", "64K", "--wait", "mem", "--peer", "compute",
            ],
        ),
    ];
    let mut library = String::new();
    print!("data check (-c, {} iterations per size):", c.check);
    for (name, args) in checks {
        let mut a = args.to_vec();
        a.extend(["-n", c.check, "-c"]);
        match run(&o, &a) {
            Ok(v) => {
                library = v["library"].as_str().unwrap_or("").to_string();
                print!(" {name}: ok;");
            }
            Err(e) => {
                failures += 1;
                print!(" {name}: FAILED ({e});");
            }
        }
    }
    println!();
    if !library.is_empty() {
        println!("library: {library}");
    }
    println!();

    let mut lines: Vec<Line> = Vec::new();
    let pair = |lines: &mut Vec<Line>, what: &str, a: &[&str], b: &[&str]| match (
        run(&o, a),
        run(&o, b),
    ) {
        (Ok(x), Ok(y)) => Some((x, y)),
        (Err(e), _) | (_, Err(e)) => {
            lines.push(Line::failed(what.to_string(), e));
            None
        }
    };

    // 2. Memory-polling latency against dequeue polling.
    for test in ["send", "write"] {
        let what = format!("memory-polling latency, {test} ping-pong");
        let base = [
            "-t", test, "--lat", "-s", "8,1K,64K", "-n", c.lat, "--wait", "poll",
        ];
        let mem = [
            "-t", test, "--lat", "-s", "8,1K,64K", "-n", c.lat, "--wait", "mem",
        ];
        if let Some((m, p)) = pair(&mut lines, &what, &mem, &base) {
            compare_lat(
                &mut lines,
                &what,
                &m,
                &p,
                "dequeue polling",
                1.5,
                Some(200.0),
                "<= 1.5x, p99 < 200 us",
            );
        } else {
            failures += 1;
        }
    }

    // 3. RDMA Read from a computing peer against a polling one.
    {
        let what = "RDMA Read from a computing peer";
        let base = [
            "-t", "read", "--lat", "-s", "8,4K,64K", "-n", c.read, "--wait", "poll",
        ];
        let mut comp = base.to_vec();
        comp.extend(["--peer", "compute"]);
        if let Some((m, p)) = pair(&mut lines, what, &comp, &base) {
            compare_lat(
                &mut lines,
                what,
                &m,
                &p,
                "polling peer",
                1.5,
                None,
                "<= 1.5x",
            );
        } else {
            failures += 1;
        }
    }

    // 4. dat_cno_wait against dat_evd_wait.
    {
        let what = "dat_cno_wait send ping-pong";
        let base = [
            "-t", "send", "--lat", "-s", "8,64K", "-n", c.cno, "--wait", "evd",
        ];
        let cno = [
            "-t", "send", "--lat", "-s", "8,64K", "-n", c.cno, "--wait", "cno",
        ];
        if let Some((m, p)) = pair(&mut lines, what, &cno, &base) {
            compare_lat(
                &mut lines,
                what,
                &m,
                &p,
                "dat_evd_wait",
                1.1,
                None,
                "<= 1.1x",
            );
        } else {
            failures += 1;
        }
    }

    // 5. One message in flight against TCP's stream, the same bytes at
    // every size (one run per size).
    for wait in ["poll", "evd", "cno", "mem"] {
        for test in ["send", "write"] {
            let what = format!("one-in-flight stream, {test}, wait {wait}");
            for (size, times) in [("1M", 8), ("2M", 4), ("4M", 2), ("8M", 1)] {
                let n = (c.stream * times).to_string();
                let a = [
                    "-t",
                    test,
                    "--bw",
                    "--depth",
                    "1",
                    "-s",
                    size,
                    "-n",
                    &n,
                    "--wait",
                    wait,
                    "--baseline",
                    "tcp",
                ];
                match run(&o, &a) {
                    Ok(v) => {
                        for r in rows(&v) {
                            let tcp = &r["baseline"];
                            let ratio = f(tcp, "ratio");
                            lines.push(Line {
                                what: what.clone(),
                                size: size_text(r["size"].as_u64().unwrap_or(0)),
                                measured: mbs(f(&r, "mb_per_s")),
                                baseline: format!(
                                    "{} TCP stream{}",
                                    mbs(f(tcp, "mb_per_s")),
                                    if wait == "evd" || wait == "cno" {
                                        " (blocking)"
                                    } else {
                                        " (spun)"
                                    }
                                ),
                                ratio,
                                goal: ">= 0.9x",
                                met: ratio.map(|r| r >= 0.9),
                            });
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        lines.push(Line::failed(what.clone(), e));
                    }
                }
            }
        }
    }

    // 6. An idle connected pair.
    for (wait, how) in [("mem", "no library call"), ("evd", "in dat_evd_wait")] {
        let what = format!("idle pair, {how}");
        match run(&o, &["-t", "idle", "--duration", c.idle_s, "--wait", wait]) {
            Ok(v) => {
                let pc = |side: &str| f(&v["idle"][side], "percent_of_core");
                let (cl, sv) = (pc("client"), pc("server"));
                let show = |x: Option<f64>| x.map_or("-".into(), |p| format!("{p:.3} %"));
                lines.push(Line {
                    what,
                    size: format!("{} s", c.idle_s),
                    measured: format!("client {}, server {}", show(cl), show(sv)),
                    baseline: "(none: absolute)".into(),
                    ratio: None,
                    goal: "< 1 % of a core each",
                    met: match (cl, sv) {
                        (Some(a), Some(b)) => Some(a < 1.0 && b < 1.0),
                        _ => None,
                    },
                });
            }
            Err(e) => {
                failures += 1;
                lines.push(Line::failed(what, e));
            }
        }
    }

    print_table(&lines);
    let met = lines.iter().filter(|l| l.met == Some(true)).count();
    let judged = lines.iter().filter(|l| l.met.is_some()).count();
    println!();
    println!(
        "{met} of {judged} met; {failures} run(s) failed; {:.0} s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "latency: t_median (p99) in microseconds, RTT/2 for ping-pongs, one RDMA Read for read; \
         memory polling ends when the answer's last byte is seen (--wait mem), dequeue polling when \
         dat_evd_dequeue returns its completion (write ping-pong: polling the last byte while \
         dequeuing, as ib_write_lat); ratio = ours / baseline of medians."
    );
    println!(
        "stream: --bw --depth 1 (one message in flight, the receiver waiting for each in the \
         style; with mem it polls each message's last byte) beside TCP streaming the same \
         messages back to back between the same processes (spun non-blocking sockets for \
         poll/mem, blocking for evd/cno); ratio = ours / TCP MB/s."
    );
    println!(
        "idle: CPU (user + system, every thread, getrusage) of each process over the period; \
         no library call = both sides sleep; dat_evd_wait = both block on their DTO EVD."
    );
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
