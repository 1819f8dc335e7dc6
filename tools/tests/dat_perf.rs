//! dat-perf end to end: a server and a client process over loopback (IA
//! tcp0) against build/lib/libdat.so.1, every mode at a few sizes, the
//! outputs, the data check and every failure path. Each test uses its own
//! qualifiers so that the tests run in parallel; every process has a
//! deadline and is killed when it passes it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::thread;
use std::time::{Duration, Instant};

const LIB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../build/lib/libdat.so.1");
const BIN: &str = env!("CARGO_BIN_EXE_dat-perf");
const BENCH: &str = env!("CARGO_BIN_EXE_bench_progress");

fn lib() -> &'static str {
    assert!(
        std::path::Path::new(LIB).exists(),
        "{LIB} is missing: run make lib first"
    );
    LIB
}

/// A process killed if still running when dropped.
struct Proc {
    child: Child,
    lines: Receiver<String>,
    stderr: thread::JoinHandle<String>,
    seen: Vec<String>,
}

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Proc {
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("DAT_LIBRARY", lib())
            .env_remove("DAT_PERF_CORRUPT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn dat-perf");
        let out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
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
        Proc {
            child,
            lines,
            stderr,
            seen: Vec::new(),
        }
    }

    /// Waits for a line of standard output containing `what`.
    fn wait_line(&mut self, what: &str, within: Duration) {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(what);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!(
                    "no line with {what:?} within {within:?}; output so far: {:?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits for the exit; kills the process and fails past `within`.
    fn finish(mut self, within: Duration) -> Output {
        let end = Instant::now() + within;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "dat-perf did not exit within {within:?}; output: {:?}",
                    self.seen
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        let mut stdout = self.seen.join("\n");
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            stdout.push('\n');
            stdout.push_str(&l);
        }
        let stderr = std::mem::replace(&mut self.stderr, thread::spawn(String::new))
            .join()
            .unwrap_or_default();
        Output {
            status,
            stdout,
            stderr,
        }
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

/// A server on `qual`, ready for a client.
fn server(qual: u16, args: &[&str], env: &[(&str, &str)]) -> Proc {
    let q = qual.to_string();
    let mut a = vec!["-p", &q];
    a.extend_from_slice(args);
    let mut p = Proc::spawn(&a, env);
    p.wait_line("waiting for a client", Duration::from_secs(10));
    p
}

fn client(qual: u16, args: &[&str], env: &[(&str, &str)]) -> Proc {
    let q = qual.to_string();
    let mut a = vec!["-p", &q];
    a.extend_from_slice(args);
    a.push("127.0.0.1");
    Proc::spawn(&a, env)
}

type Env<'a> = (&'a str, &'a str);

const DEADLINE: Duration = Duration::from_secs(30);

/// A server and a client that must both succeed; the client's output.
fn pair(qual: u16, server_args: &[&str], client_args: &[&str]) -> Output {
    let s = server(qual, server_args, &[]);
    let c = client(qual, client_args, &[]).finish(DEADLINE);
    let s = s.finish(DEADLINE);
    assert!(
        c.status.success(),
        "client {client_args:?} failed: {}\n{}",
        c.stderr,
        c.stdout
    );
    assert!(s.status.success(), "server failed: {}", s.stderr);
    assert!(s.stdout.contains("done"), "{}", s.stdout);
    c
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// One-line error on standard error, starting with "dat-perf: ".
fn one_line_error(out: &Output, what: &str) {
    assert!(!out.status.success(), "expected a failure, got success");
    let e = out.stderr.trim_end();
    assert_eq!(e.lines().count(), 1, "not one line: {e:?}");
    assert!(e.starts_with("dat-perf: "), "{e:?}");
    assert!(e.contains(what), "{e:?} lacks {what:?}");
}

/// Runs one test/mode at 1 B, 4 KiB (with the TCP baseline) and 1 MiB,
/// with -c, and checks the JSON.
fn mode_at_sizes(base: u16, test: &str, mode: &str) {
    for (k, (size, iters, baseline)) in [("1", 20u64, false), ("4K", 20, true), ("1M", 3, false)]
        .into_iter()
        .enumerate()
    {
        let n = iters.to_string();
        let mut args = vec!["-t", test, mode, "-s", size, "-n", &n, "-c", "--json"];
        if baseline {
            args.extend(["--baseline", "tcp"]);
        }
        let out = pair(base + k as u16, &[], &args);
        let v = json(&out);
        assert_eq!(v["test"], test);
        assert_eq!(v["mode"], &mode[2..]);
        assert_eq!(v["check"], true);
        assert_eq!(v["warmup_iterations"].as_u64(), Some(iters.min(16)));
        let rows = v["results"].as_array().expect("results");
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        let bytes = dat_tools::perf::cli::parse_size(size).expect("size");
        assert_eq!(r["size"].as_u64(), Some(bytes));
        assert_eq!(r["iterations"].as_u64(), Some(iters));
        let (min, med, p99) = (f(r, "t_min_us"), f(r, "t_median_us"), f(r, "t_p99_us"));
        assert!(min > 0.0 && min <= med && med <= p99, "{r}");
        assert!(f(r, "mb_per_s") > 0.0 && f(r, "mmsg_per_s") > 0.0, "{r}");
        if baseline {
            assert_eq!(v["baseline"], "tcp");
            let b = &r["baseline"];
            assert_eq!(b["iterations"].as_u64(), Some(iters), "{b}");
            assert!(f(b, "mb_per_s") > 0.0 && f(b, "ratio") > 0.0, "{b}");
            if mode == "--lat" {
                assert!(f(b, "t_median_us") > 0.0, "{b}");
            }
        } else {
            assert!(r["baseline"].is_null(), "{r}");
        }
    }
}

#[test]
fn send_lat_and_bw() {
    mode_at_sizes(21010, "send", "--lat");
    mode_at_sizes(21020, "send", "--bw");
}

#[test]
fn write_lat_and_bw() {
    mode_at_sizes(21030, "write", "--lat");
    mode_at_sizes(21040, "write", "--bw");
}

#[test]
fn read_lat_and_bw() {
    mode_at_sizes(21050, "read", "--lat");
    mode_at_sizes(21060, "read", "--bw");
}

#[test]
fn connection_rate_with_baseline() {
    let out = pair(
        21070,
        &[],
        &["--conn", "20", "-c", "--baseline", "tcp", "--json"],
    );
    let v = json(&out);
    assert_eq!(v["test"], "conn");
    assert!(v["mode"].is_null());
    assert_eq!(v["warmup_iterations"].as_u64(), Some(0));
    let r = &v["results"][0];
    assert_eq!(r["iterations"].as_u64(), Some(20));
    assert!(f(r, "conn_per_s") > 0.0 && f(r, "t_min_us") > 0.0, "{r}");
    assert!(f(&r["baseline"], "conn_per_s") > 0.0, "{r}");
    assert!(f(&r["baseline"], "ratio") > 0.0, "{r}");
    // The human table too.
    let out = pair(21071, &["-t", "conn"], &["-t", "conn", "-n", "5"]);
    assert!(out.stdout.contains("conn/s"), "{}", out.stdout);
}

#[test]
fn wait_styles_and_duration() {
    for (k, wait) in ["evd", "cno"].into_iter().enumerate() {
        let q = 21080 + 2 * k as u16;
        for (j, args) in [
            ["-t", "send", "--lat", "-s", "64", "-n", "10"],
            ["-t", "write", "--bw", "-s", "64K", "-n", "10"],
        ]
        .iter()
        .enumerate()
        {
            let mut a = args.to_vec();
            a.extend(["--wait", wait, "-c", "--json"]);
            let v = json(&pair(q + j as u16, &[], &a));
            assert_eq!(v["wait"], wait);
            assert_eq!(v["results"][0]["iterations"].as_u64(), Some(10));
        }
    }
    let v = json(&pair(
        21090,
        &[],
        &["-s", "64", "--duration", "0.3", "--json"],
    ));
    assert_eq!(v["duration_s"].as_f64(), Some(0.3));
    assert!(v["iterations"].is_null());
    let r = &v["results"][0];
    assert!(r["iterations"].as_u64().unwrap_or(0) > 0, "{r}");
    assert!(f(r, "seconds") > 0.0, "{r}");
}

#[test]
fn check_catches_a_corrupted_byte() {
    // (test, mode, size, which side sends the data)
    let cases = [
        ("send", "--lat", "4K", "client", "iteration 3, byte 2048"),
        ("send", "--bw", "4K", "client", "iteration 3, byte 2048"),
        ("write", "--lat", "4K", "client", "iteration 3, byte 2048"),
        ("write", "--lat", "1", "client", "iteration 3, byte 0"),
        ("write", "--bw", "4K", "client", "iteration 3, byte 2048"),
        ("read", "--lat", "4K", "server", "iteration 3, byte 2048"),
        ("read", "--bw", "4K", "server", "iteration 3, byte 2048"),
        ("conn", "--lat", "", "client", "iteration 3, byte 4"),
    ];
    for (k, (test, mode, size, who, what)) in cases.into_iter().enumerate() {
        let q = 21100 + k as u16;
        let corrupt = [("DAT_PERF_CORRUPT", "3")];
        let (senv, cenv): (&[Env], &[Env]) = if who == "server" {
            (&corrupt, &[])
        } else {
            (&[], &corrupt)
        };
        let mut a = vec!["-t", test, "-n", "10", "-c"];
        if test != "conn" {
            a.extend([mode, "-s", size]);
        }
        let s = server(q, &[], senv);
        let c = client(q, &a, cenv).finish(DEADLINE);
        let s = s.finish(DEADLINE);
        let m = format!("data mismatch at {what}");
        one_line_error(&c, &m);
        one_line_error(&s, &m);
    }
    // Without -c the hook does nothing.
    let s = server(21110, &[], &[]);
    let c = client(21110, &["-n", "10"], &[("DAT_PERF_CORRUPT", "3")]).finish(DEADLINE);
    assert!(c.status.success(), "{}", c.stderr);
    assert!(s.finish(DEADLINE).status.success());
}

/// Selective signalling (--cq-mod, perftest's): Sends and RDMA Writes
/// posted with DAT_COMPLETION_SUPPRESS_FLAG but one in N; the ping-pong's
/// slot accounting must still see every slot free again (a miscount hangs
/// or fails the run), in every wait style, with the data checked.
#[test]
fn cq_mod_suppresses_all_but_one_in_n() {
    let mut q = 21300;
    for test in ["send", "write"] {
        for wait in ["poll", "mem", "evd"] {
            for m in ["1", "3", "1024"] {
                let out = pair(
                    q,
                    &[],
                    &[
                        "-t", test, "--lat", "-s", "64", "-n", "50", "-c", "--cq-mod", m, "--wait",
                        wait, "--json",
                    ],
                );
                let v = json(&out);
                let r = &v["results"][0];
                assert_eq!(
                    r["iterations"].as_u64(),
                    Some(50),
                    "{test} {wait} --cq-mod {m}: {r}"
                );
                q += 1;
            }
        }
    }
    // A server given --cq-mod explicitly insists on it.
    let s = server(q, &["--cq-mod", "5"], &[]);
    let c = client(q, &["--cq-mod", "7"], &[]).finish(DEADLINE);
    let s = s.finish(DEADLINE);
    one_line_error(&c, "mismatched parameters: cq-mod: client 7, server 5");
    one_line_error(&s, "mismatched parameters: cq-mod: client 7, server 5");
}

#[test]
fn plot_and_csv() {
    let dir = std::env::temp_dir().join(format!("dat-perf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let svg = dir.join("lat.svg");
    let csv_file = dir.join("lat.csv");
    let csv_arg = format!("--csv={}", csv_file.display());
    let svg_arg = svg.display().to_string();
    let out = pair(
        21120,
        &[],
        &[
            "-t",
            "send",
            "--lat",
            "-a",
            "-n",
            "3",
            "--baseline",
            "tcp",
            "--plot",
            &svg_arg,
            &csv_arg,
        ],
    );
    // The table is printed too, one row per size.
    assert!(
        out.stdout.contains("8 MiB") && out.stdout.contains("ratio"),
        "{}",
        out.stdout
    );

    let text = std::fs::read_to_string(&svg).expect("svg written");
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    assert!(texts.iter().any(|t| t == "dat-perf (tcp0)"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "TCP baseline"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "message size"), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("latency")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "bandwidth"), "{texts:?}");
    // Each series drawn as a line in both panels (legend marks aside),
    // with one point per size.
    for color in ["#1F77B4", "#D62728"] {
        let lines = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(color))
            .filter(|n| {
                n.attribute("points")
                    .is_some_and(|p| p.split_whitespace().count() == 24)
            })
            .count();
        assert_eq!(lines, 2, "series {color}");
        let points = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle") && n.attribute("fill") == Some(color))
            .count();
        assert_eq!(points, 48, "points {color}");
    }

    let mut rd = csv::Reader::from_path(&csv_file).expect("csv written");
    let headers = rd.headers().expect("header").clone();
    for h in [
        "size",
        "iterations",
        "t_median_us",
        "mb_per_s",
        "tcp_t_median_us",
        "ratio",
    ] {
        assert!(headers.iter().any(|x| x == h), "{h} not in {headers:?}");
    }
    let col = |name: &str| headers.iter().position(|x| x == name).expect("column");
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("record")).collect();
    assert_eq!(rows.len(), 24);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r[col("size")].parse::<u64>().ok(), Some(1 << i));
        assert_eq!(&r[col("iterations")], "3");
        assert!(r[col("t_median_us")].parse::<f64>().is_ok_and(|v| v > 0.0));
        assert!(r[col("ratio")].parse::<f64>().is_ok_and(|v| v > 0.0));
    }

    // --csv on standard output alone (no table).
    let out = pair(
        21121,
        &[],
        &["-t", "read", "--bw", "-s", "1K", "-n", "5", "--csv"],
    );
    let mut rd = csv::Reader::from_reader(out.stdout.as_bytes());
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.expect("record")).collect();
    assert_eq!(rows.len(), 1, "{}", out.stdout);
    assert_eq!(&rows[0][0], "read");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nothing_listening() {
    let t0 = Instant::now();
    let c = client(21130, &["--timeout", "5"], &[]).finish(Duration::from_secs(10));
    one_line_error(&c, "refused (DAT_CONNECTION_EVENT_NON_PEER_REJECTED)");
    assert!(t0.elapsed() < Duration::from_secs(6));
}

#[test]
fn mismatched_parameters() {
    let s = server(21140, &["-t", "send", "-s", "1K"], &[]);
    let c = client(21140, &["-t", "write", "-s", "4K"], &[]).finish(DEADLINE);
    let s = s.finish(DEADLINE);
    let m =
        "mismatched parameters: test: client write, server send; size: client 4 KiB, server 1 KiB";
    one_line_error(&c, m);
    one_line_error(&s, m);
    // Options the server was not given are adopted.
    pair(21141, &["-s", "1K"], &["-s", "1K", "-t", "read", "-n", "5"]);
}

#[test]
fn server_killed_mid_run() {
    let mut s = server(21150, &[], &[]);
    let t0 = Instant::now();
    let c = client(
        21150,
        &["-t", "write", "--lat", "--duration", "20", "--timeout", "5"],
        &[],
    );
    s.wait_line("running", Duration::from_secs(10));
    thread::sleep(Duration::from_millis(300));
    let _ = s.child.kill(); // SIGKILL
    let c = c.finish(Duration::from_secs(10));
    one_line_error(&c, "connection lost");
    assert!(t0.elapsed() < Duration::from_secs(12));
}

#[test]
fn client_killed_mid_run() {
    let mut s = server(21160, &["--timeout", "5"], &[]);
    let mut c = client(21160, &["-t", "send", "--bw", "--duration", "20"], &[]);
    s.wait_line("running", Duration::from_secs(10));
    thread::sleep(Duration::from_millis(300));
    let _ = c.child.kill();
    let s = s.finish(Duration::from_secs(10));
    one_line_error(&s, "connection lost");
}

#[test]
fn server_loop_serves_clients_one_after_the_other() {
    let mut s = server(21170, &["--loop"], &[]);
    for _ in 0..2 {
        let c = client(21170, &["-n", "5"], &[]).finish(DEADLINE);
        assert!(c.status.success(), "{}", c.stderr);
    }
    s.wait_line("waiting for a client", Duration::from_secs(5));
    assert!(
        s.child.try_wait().expect("try_wait").is_none(),
        "--loop server exited"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--json", "--csv", "127.0.0.1"][..],
        &["-t", "conn", "-s", "4K", "127.0.0.1"],
        &["-s", "9M", "127.0.0.1"],
        &["--lat", "--bw", "127.0.0.1"],
        &["--plot", "x.svg"],
        &["-s", "8,1000", "127.0.0.1"],
        &["-s", "64K-8", "127.0.0.1"],
        &["--wait", "mem", "-t", "conn", "127.0.0.1"],
        &["--peer", "compute", "-t", "send", "127.0.0.1"],
        &["--peer", "compute", "-t", "write", "--lat", "127.0.0.1"],
        &["--peer", "busy", "-t", "read", "127.0.0.1"],
        &["-t", "idle", "-s", "8", "127.0.0.1"],
        &["-t", "idle", "-n", "5", "127.0.0.1"],
        &["-t", "idle", "--baseline", "tcp", "127.0.0.1"],
        &["-p", "0", "127.0.0.1"],
    ] {
        let o = Proc::spawn(args, &[]).finish(Duration::from_secs(10));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", o.stderr);
    }
}

/// `ip args…` (iproute2); its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A network namespace of this test, deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

/// The client in a namespace of its own whose only interface (besides
/// `lo`) is one end of a veth pair with 10.197.N.1/24; the other end is up
/// and has no address, so nothing on that subnet answers, and nothing
/// outside it has a route. No packet leaves the namespace. Skipped when
/// namespaces are unavailable (not root, no `ip`).
#[test]
fn unreachable_hosts() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    let pid = std::process::id();
    let ns = Netns(format!("udapl-perf-{pid}"));
    if let Err(why) = ip(&["netns", "add", &ns.0]) {
        eprintln!("skipped: network namespaces unavailable: {why}");
        return;
    }
    let (a, b) = (
        format!("upf{}a", pid % 100_000),
        format!("upf{}b", pid % 100_000),
    );
    let net = 1 + pid % 250;
    let addr = format!("10.197.{net}.1/24");
    for args in [
        &["-n", &ns.0, "link", "set", "lo", "up"][..],
        &[
            "-n", &ns.0, "link", "add", &a, "type", "veth", "peer", "name", &b,
        ],
        &["-n", &ns.0, "addr", "add", &addr, "dev", &a],
        &["-n", &ns.0, "link", "set", &a, "up"],
        &["-n", &ns.0, "link", "set", &b, "up"],
    ] {
        ip(args).unwrap_or_else(|e| panic!("{e}"));
    }
    let run = |host: &str| {
        let t0 = Instant::now();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns.0, BIN, "-D", &a, "-p", "21180"])
            .args(["--timeout", "2", host])
            .env("DAT_LIBRARY", lib())
            .stdin(Stdio::null());
        let out = cmd.output().expect("run dat-perf in the namespace");
        let out = Output {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (out, t0.elapsed())
    };
    // No route at all: at once.
    let (out, took) = run(&format!("10.196.{net}.2"));
    one_line_error(&out, "unreachable (DAT_CONNECTION_EVENT_UNREACHABLE)");
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(took < Duration::from_secs(2), "{took:?}");
    // On the subnet, nobody there: ARP fails (unreachable) or --timeout
    // passes first (no answer); either way one line within the timeout.
    let (out, took) = run(&format!("10.197.{net}.2"));
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    let e = out.stderr.trim_end();
    assert!(
        e.contains("unreachable (DAT_CONNECTION_EVENT_UNREACHABLE)")
            || e.contains("no answer within 2 s (DAT_CONNECTION_EVENT_TIMED_OUT)"),
        "{e:?}"
    );
    one_line_error(
        &out,
        &format!("cannot connect to 10.197.{net}.2 qualifier 21180"),
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
}

/// IPv6: an IA on `::1` (a dat.conf line with `family=inet6`), a Send
/// ping-pong and an RDMA Write stream with the data checked and the TCP
/// baseline over IPv6 too. Skipped when the host has no IPv6 loopback.
#[test]
fn ipv6_loopback() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    }
    let dir = std::env::temp_dir().join(format!("dat-perf-v6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conf = dir.join("dat.conf");
    std::fs::write(
        &conf,
        "lo6 u1.2 nonthreadsafe default builtin udapl.1.2 \"family=inet6\" \"\"\n",
    )
    .expect("write dat.conf");
    let conf = conf.to_str().expect("utf-8 path");
    let env = [("DAT_OVERRIDE", conf)];
    for (qual, test, mode) in [("21190", "send", "--lat"), ("21191", "write", "--bw")] {
        let mut s = Proc::spawn(&["-D", "lo6", "-p", qual, "--timeout", "10"], &env);
        s.wait_line("waiting for a client", Duration::from_secs(10));
        let c = Proc::spawn(
            &[
                "-D",
                "lo6",
                "-p",
                qual,
                "-t",
                test,
                mode,
                "-s",
                "4K",
                "-n",
                "50",
                "-c",
                "--baseline",
                "tcp",
                "--json",
                "::1",
            ],
            &env,
        )
        .finish(DEADLINE);
        let s = s.finish(DEADLINE);
        assert!(c.status.success(), "{test} {mode}: {}", c.stderr);
        assert!(s.status.success(), "server: {}", s.stderr);
        assert!(
            s.stdout.contains("(::1)"),
            "server not on ::1: {}",
            s.stdout
        );
        let v = json(&c);
        let r = &v["results"][0];
        assert_eq!(r["size"].as_u64(), Some(4096), "{v}");
        assert_eq!(v["check"], true, "{v}");
        assert!(f(r, "t_median_us") > 0.0, "{v}");
        assert!(f(&r["baseline"], "mb_per_s") > 0.0, "{v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server on a free qualifier (`-p 0`): the qualifier it printed.
fn server_any(args: &[&str]) -> (Proc, String) {
    let mut a = vec!["-p", "0"];
    a.extend_from_slice(args);
    let mut p = Proc::spawn(&a, &[]);
    p.wait_line("waiting for a client", Duration::from_secs(10));
    let line = p.seen.last().cloned().unwrap_or_default();
    let q = line
        .split("qualifier ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("no qualifier in {line:?}"))
        .to_string();
    assert!(q.parse::<u64>().is_ok_and(|v| v > 0), "{line}");
    (p, q)
}

/// Like `pair`, with the server on a free qualifier.
fn pair_any(client_args: &[&str]) -> Output {
    let (s, q) = server_any(&[]);
    let mut a = vec!["-p", &q];
    a.extend_from_slice(client_args);
    a.push("127.0.0.1");
    let c = Proc::spawn(&a, &[]).finish(DEADLINE);
    let s = s.finish(DEADLINE);
    assert!(
        c.status.success(),
        "client {client_args:?} failed: {}\n{}",
        c.stderr,
        c.stdout
    );
    assert!(s.status.success(), "server failed: {}", s.stderr);
    c
}

/// Checks a run's JSON: its wait style and peer, one row per size with
/// `iters` iterations and ordered latencies.
fn check_rows(v: &serde_json::Value, wait: &str, peer: &str, sizes: &[u64], iters: u64) {
    assert_eq!(v["wait"], wait, "{v}");
    assert_eq!(v["peer"], peer, "{v}");
    assert_eq!(v["check"], true, "{v}");
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), sizes.len(), "{v}");
    for (r, &size) in rows.iter().zip(sizes) {
        assert_eq!(r["size"].as_u64(), Some(size), "{r}");
        assert_eq!(r["iterations"].as_u64(), Some(iters), "{r}");
        let (min, med, p99) = (f(r, "t_min_us"), f(r, "t_median_us"), f(r, "t_p99_us"));
        assert!(min > 0.0 && min <= med && med <= p99, "{r}");
        assert!(f(r, "mb_per_s") > 0.0, "{r}");
    }
}

/// --wait mem in every test and mode, two sizes each, data checked; the
/// send ping-pong with its TCP baseline.
#[test]
fn wait_mem_in_every_test() {
    for (test, mode, extra) in [
        ("send", "--lat", &["--baseline", "tcp"][..]),
        ("write", "--lat", &[]),
        ("read", "--lat", &[]),
        ("send", "--bw", &["--depth", "1"]),
        ("write", "--bw", &["--depth", "4"]),
        ("read", "--bw", &["--depth", "4"]),
    ] {
        let mut a = vec![
            "-t", test, mode, "-s", "8,4K", "-n", "10", "--wait", "mem", "-c", "--json",
        ];
        a.extend_from_slice(extra);
        let v = json(&pair_any(&a));
        assert_eq!(v["test"], test);
        check_rows(&v, "mem", "wait", &[8, 4096], 10);
        if !extra.is_empty() && extra[0] == "--baseline" {
            let b = &v["results"][1]["baseline"];
            assert!(f(b, "t_median_us") > 0.0 && f(b, "ratio") > 0.0, "{b}");
        }
    }
    // The table says what t_* are.
    let out = pair_any(&[
        "-t", "read", "--lat", "-s", "64", "-n", "5", "--wait", "mem",
    ]);
    assert!(
        out.stdout.contains("wait mem")
            && out.stdout.contains("last byte seen in memory")
            && out.stdout.contains("64 B"),
        "{}",
        out.stdout
    );
}

/// --peer compute: reads (latency and bandwidth) and an RDMA Write stream
/// from a server that makes no library call during a batch, data checked.
#[test]
fn computing_peer() {
    for (test, mode, wait) in [
        ("read", "--lat", "poll"),
        ("read", "--lat", "mem"),
        ("read", "--bw", "evd"),
        ("write", "--bw", "poll"),
        ("write", "--bw", "mem"),
    ] {
        let a = [
            "-t", test, mode, "-s", "8,64K", "-n", "20", "--wait", wait, "--peer", "compute", "-c",
            "--json",
        ];
        let v = json(&pair_any(&a));
        check_rows(&v, wait, "compute", &[8, 65536], 20);
    }
    let out = pair_any(&["-t", "read", "-n", "5", "--peer", "compute"]);
    assert!(out.stdout.contains("peer compute"), "{}", out.stdout);
}

/// --wait mem and --peer compute still catch a corrupted byte (and a
/// corrupted tag: size 1).
#[test]
fn mem_and_compute_catch_a_corrupted_byte() {
    let cases = [
        (
            &["-t", "send", "--lat", "-s", "1"][..],
            "client",
            "iteration 3, byte 0",
        ),
        (
            &["-t", "write", "--lat", "-s", "4K"],
            "client",
            "iteration 3, byte 2048",
        ),
        (
            &["-t", "read", "--lat", "-s", "4K"],
            "server",
            "iteration 3, byte 2048",
        ),
        (
            &["-t", "send", "--bw", "-s", "4K"],
            "client",
            "iteration 3, byte 2048",
        ),
        (
            &["-t", "write", "--bw", "-s", "1"],
            "client",
            "iteration 3, byte 0",
        ),
        (
            &["-t", "read", "--bw", "-s", "4K", "--peer", "compute"],
            "server",
            "iteration 3, byte 2048",
        ),
        (
            &["-t", "write", "--bw", "-s", "4K", "--peer", "compute"],
            "client",
            "iteration 3, byte 2048",
        ),
    ];
    for (args, who, what) in cases {
        let corrupt = [("DAT_PERF_CORRUPT", "3")];
        let (senv, cenv): (&[Env], &[Env]) = if who == "server" {
            (&corrupt, &[])
        } else {
            (&[], &corrupt)
        };
        let mut s = Proc::spawn(&["-p", "0"], senv);
        s.wait_line("waiting for a client", Duration::from_secs(10));
        let line = s.seen.last().cloned().unwrap_or_default();
        let q = line
            .split("qualifier ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .expect("qualifier")
            .to_string();
        let mut a = vec!["-p", &q, "-n", "10", "-c", "--wait", "mem"];
        a.extend_from_slice(args);
        a.push("127.0.0.1");
        let c = Proc::spawn(&a, cenv).finish(DEADLINE);
        let s = s.finish(DEADLINE);
        let m = format!("data mismatch at {what}");
        one_line_error(&c, &m);
        one_line_error(&s, &m);
    }
}

/// -t idle: both sides' CPU over the period, as JSON and as a table.
#[test]
fn idle_pair() {
    for wait in ["mem", "evd", "cno"] {
        let v = json(&pair_any(&[
            "-t",
            "idle",
            "--duration",
            "0.4",
            "--wait",
            wait,
            "--json",
        ]));
        assert_eq!(v["test"], "idle");
        assert_eq!(v["wait"], wait);
        assert_eq!(v["duration_s"].as_f64(), Some(0.4));
        assert_eq!(v["results"].as_array().map(Vec::len), Some(0));
        for side in ["client", "server"] {
            let x = &v["idle"][side];
            let secs = f(x, "seconds");
            assert!((0.35..5.0).contains(&secs), "{side}: {x}");
            let cpu = f(x, "cpu_seconds");
            assert!(cpu >= 0.0 && cpu < secs * 2.0, "{side}: {x}");
            let pc = f(x, "percent_of_core");
            assert!((pc - 100.0 * cpu / secs).abs() < 1e-6, "{side}: {x}");
        }
    }
    // Spinning on dat_evd_dequeue shows: most of a core on each side.
    let v = json(&pair_any(&[
        "-t",
        "idle",
        "--duration",
        "0.4",
        "--wait",
        "poll",
        "--json",
    ]));
    assert!(f(&v["idle"]["client"], "percent_of_core") > 20.0, "{v}");
    let out = pair_any(&["-t", "idle", "--duration", "0.2"]);
    assert!(
        out.stdout.contains("% of a core")
            && out.stdout.contains("client")
            && out.stdout.contains("server")
            && out.stdout.contains("no library call"),
        "{}",
        out.stdout
    );
}

/// make bench-progress's program, with --quick counts: every target's
/// rows, the data check, exit 0.
#[test]
fn bench_progress_quick() {
    let out = Command::new(BENCH)
        .args(["--quick", "--dat-perf", BIN])
        .env("DAT_LIBRARY", lib())
        .stdin(Stdio::null())
        .output()
        .expect("run bench_progress");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "data check (-c",
        "memory-polling latency, send ping-pong",
        "memory-polling latency, write ping-pong",
        "RDMA Read from a computing peer",
        "dat_cno_wait send ping-pong",
        "one-in-flight stream, send, wait mem",
        "one-in-flight stream, write, wait cno",
        "TCP stream",
        "idle pair, no library call",
        "0 run(s) failed",
    ] {
        assert!(stdout.contains(want), "{want:?} missing:\n{stdout}");
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
    // Rows: memory polling 3 sizes x 2 tests, computing peer 3 sizes, CNO
    // 2 sizes, streams 4 sizes x 2 tests x 4 styles, idle 2.
    let rows = stdout
        .lines()
        .filter(|l| l.ends_with(" met") || l.ends_with("NOT MET"))
        .count();
    assert_eq!(rows, 6 + 3 + 2 + 32 + 2, "{stdout}");
}

/// CPU ticks (user + system, all threads) of a running process.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command's closing parenthesis; utime and stime
    // are fields 14 and 15 of the whole line.
    let rest = &s[s.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
}

/// The server's CPU ticks over one second in the middle of a long RDMA
/// Read latency run with `--peer` `peer` (and the client's output).
fn target_cpu(qual: u16, peer: &str) -> (u64, Output) {
    let s = server(qual, &[], &[]);
    let c = client(
        qual,
        &[
            "-t",
            "read",
            "--lat",
            "-s",
            "8",
            "--duration",
            "2.5",
            "--peer",
            peer,
            "-c",
        ],
        &[],
    );
    thread::sleep(Duration::from_millis(700));
    let t0 = cpu_ticks(s.child.id());
    thread::sleep(Duration::from_secs(1));
    let t1 = cpu_ticks(s.child.id());
    let c = c.finish(DEADLINE);
    let s = s.finish(DEADLINE);
    assert!(
        c.status.success(),
        "client failed: {}\n{}",
        c.stderr,
        c.stdout
    );
    assert!(s.status.success(), "server failed: {}", s.stderr);
    (t1 - t0, c)
}

/// --peer sleep: the target of RDMA Reads waits in dat_evd_wait instead
/// of spinning on dat_evd_dequeue as --peer wait with --wait poll does
/// (perftest's ib_read_lat server is idle): it takes clearly less CPU.
/// The data still checks out, and RDMA Write streams take it too.
#[test]
fn sleeping_peer_leaves_the_cpu_to_the_client() {
    let (spin, _) = target_cpu(21400, "wait");
    let (sleep, out) = target_cpu(21401, "sleep");
    assert!(out.stdout.contains("peer sleep"), "{}", out.stdout);
    assert!(
        spin >= 60 && sleep * 4 < spin * 3,
        "server CPU ticks in 1 s: {spin} spinning, {sleep} sleeping"
    );
    for (test, mode, wait) in [
        ("read", "--bw", "poll"),
        ("write", "--bw", "mem"),
        ("write", "--bw", "poll"),
    ] {
        let a = [
            "-t", test, mode, "-s", "8,64K", "-n", "20", "--wait", wait, "--peer", "sleep", "-c",
            "--json",
        ];
        let v = json(&pair_any(&a));
        check_rows(&v, wait, "sleep", &[8, 65536], 20);
    }
    let c = client(21402, &["-t", "send", "--peer", "sleep"], &[]).finish(DEADLINE);
    assert_eq!(c.status.code(), Some(2), "{}", c.stderr);
}
