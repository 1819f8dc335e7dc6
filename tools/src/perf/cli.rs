//! Command line: what the user asked for (`Args`), what a client resolves
//! it to (`Params`, sent to the server), and what a server was explicitly
//! told (`Explicit`, checked against the client's `Params`).

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use super::proto::{Amount, Mode, Params, Sizes, Test, Wait};

/// The default connection qualifier (perftest's port).
pub const DEFAULT_QUALIFIER: u64 = 18515;
/// Largest message size.
pub const MAX_SIZE: u64 = 8 << 20;
/// Default iterations per size.
pub const DEFAULT_ITERS: u64 = 1000;
/// Default connections of `-t conn`.
pub const DEFAULT_CONNS: u64 = 100;
/// Default window of `--bw`.
pub const DEFAULT_DEPTH: u32 = 16;
/// Largest `--depth`.
pub const MAX_DEPTH: u32 = 256;

const AFTER_HELP: &str = "\
Server:  dat-perf -D IA_NAME [options]
Client:  dat-perf -D IA_NAME [options] HOST

The client sends its parameters to the server in the connection request's
private data; the server adopts them, except those it was given explicitly:
if one of those differs, both sides fail with \"mismatched parameters\".

Latency (--lat): ping-pong; t_* are round trip / 2 for send and write, the
time of one RDMA Read for read. Bandwidth (--bw): --depth operations in
flight; t_* are each operation's post-to-completion time. MB = 10^6 bytes.
Mmsg/s: round trips (lat) or messages (bw) per second, in millions.
Each size's run (and its baseline) starts with 16 untimed iterations.

-c checks every iteration's payload (a pattern per iteration) at the
receiver; the time to write and check the pattern is then part of the
figures. DAT_PERF_CORRUPT=N makes the side that sends the data (the client
for send and write, the server for read; both sides send in --lat
send/write) corrupt one byte of iteration N after writing the pattern.

Environment: DAT_LIBRARY, the libdat.so.1 to load (default: libdat.so.1
found the usual way).";

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum BaselineKind {
    /// The same pattern over plain TCP sockets between the same processes.
    Tcp,
}

/// dat-perf: latency, bandwidth and connection rate of a uDAPL (DAT 1.2)
/// library, beside plain TCP.
#[derive(Parser, Debug, Clone)]
#[command(name = "dat-perf", version, after_help = AFTER_HELP)]
pub struct Args {
    /// IA (interface adapter) to open: tcp0 is loopback, an interface's
    /// name, or a dat.conf name.
    #[arg(
        short = 'D',
        long = "ia",
        value_name = "IA_NAME",
        default_value = "tcp0"
    )]
    pub ia: String,

    /// Connection qualifier of the server's service point [default: 18515].
    #[arg(short = 'p', long = "port", value_name = "QUALIFIER")]
    pub port: Option<u64>,

    /// Test: send (Send/Recv), write (RDMA Write), read (RDMA Read) or conn
    /// (connection rate) [default: send].
    #[arg(short = 't', long = "test", value_enum)]
    pub test: Option<Test>,

    /// Latency: ping-pong (the default).
    #[arg(long, conflicts_with = "bw")]
    pub lat: bool,

    /// Bandwidth: --depth operations in flight.
    #[arg(long)]
    pub bw: bool,

    /// Operations in flight in --bw [default: 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_DEPTH as i64))]
    pub depth: Option<u32>,

    /// Every power of two from 1 B to 8 MiB.
    #[arg(short = 'a', long = "all", conflicts_with = "size")]
    pub all: bool,

    /// Message size, 1 B to 8 MiB; K and M suffixes (binary) [default: 8 for
    /// --lat, 64K for --bw].
    #[arg(short = 's', long = "size", value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,

    /// Iterations per size (connections for -t conn) [default: 1000; 100 for conn].
    #[arg(short = 'n', long = "iters", value_name = "ITERS", conflicts_with = "duration",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: Option<u64>,

    /// Run each size for this long instead of a number of iterations.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub duration: Option<f64>,

    /// Connection rate with N connections (the same as -t conn -n N).
    #[arg(long = "conn", value_name = "N", conflicts_with_all = ["iters", "duration"],
          value_parser = clap::value_parser!(u64).range(1..))]
    pub conn: Option<u64>,

    /// Check every iteration's data end to end.
    #[arg(short = 'c', long = "check")]
    pub check: bool,

    /// How completions are waited for: poll (dat_evd_dequeue in a loop),
    /// evd (dat_evd_wait) or cno (dat_cno_wait, then dequeue) [default: poll].
    #[arg(long, value_enum)]
    pub wait: Option<Wait>,

    /// Run the same pattern over plain TCP too and print it beside ours.
    #[arg(long, value_enum, value_name = "KIND")]
    pub baseline: Option<BaselineKind>,

    /// Seconds any single wait may take before the run fails.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub timeout: f64,

    /// JSON results on standard output (instead of the table), or into FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true,
          default_missing_value = "-")]
    pub json: Option<String>,

    /// CSV results on standard output (instead of the table), or into FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true,
          default_missing_value = "-")]
    pub csv: Option<String>,

    /// Draw latency and bandwidth against message size into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Server: keep serving clients, one after the other.
    #[arg(long = "loop")]
    pub serve_forever: bool,

    /// No progress line, even on a terminal.
    #[arg(long)]
    pub no_progress: bool,

    /// The server to connect to (client mode); none: be the server.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
}

/// Parses a size with an optional K or M suffix (binary units).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        _ => (t, 0),
    };
    let v: u64 = digits
        .parse()
        .map_err(|_| format!("'{s}' is not a size (a number, optionally with K or M)"))?;
    let v = v
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))?;
    if v == 0 || v > MAX_SIZE {
        return Err(format!("size {s} out of range (1 B to 8M)"));
    }
    Ok(v)
}

fn parse_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(v > 0.0 && v <= 1e6) {
        return Err(format!("{s}: seconds must be more than 0"));
    }
    Ok(v)
}

/// The options a server was given explicitly (None: adopt the client's).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explicit {
    pub test: Option<Test>,
    pub mode: Option<Mode>,
    pub sizes: Option<Sizes>,
    pub amount: Option<Amount>,
    pub depth: Option<u32>,
    pub wait: Option<Wait>,
    pub verify: Option<bool>,
    pub baseline: Option<bool>,
}

impl Args {
    fn test(&self) -> Option<Test> {
        if self.conn.is_some() {
            Some(Test::Conn)
        } else {
            self.test
        }
    }

    fn mode(&self) -> Option<Mode> {
        if self.bw {
            Some(Mode::Bw)
        } else if self.lat {
            Some(Mode::Lat)
        } else {
            None
        }
    }

    fn amount(&self) -> Option<Amount> {
        if let Some(n) = self.conn.or(self.iters) {
            Some(Amount::Iters(n))
        } else {
            self.duration.map(|d| {
                Amount::DurationMs((d * 1000.0).round().clamp(1.0, u32::MAX as f64) as u32)
            })
        }
    }

    /// Checks combinations clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.conn.is_some() && self.test.is_some_and(|t| t != Test::Conn) {
            return Err(
                "--conn is the connection-rate test: it cannot be combined with -t send/write/read"
                    .into(),
            );
        }
        if self.test() == Some(Test::Conn) {
            if self.all || self.size.is_some() {
                return Err("-t conn uses 8-byte messages: -a and -s do not apply".into());
            }
            if self.duration.is_some() {
                return Err(
                    "-t conn counts connections: use -n N or --conn N, not --duration".into(),
                );
            }
            if self.plot.is_some() {
                return Err(
                    "--plot draws against message size: it does not apply to -t conn".into(),
                );
            }
        }
        if self.json.as_deref() == Some("-") && self.csv.as_deref() == Some("-") {
            return Err(
                "--json and --csv cannot both go to standard output (give one a file: --csv=FILE)"
                    .into(),
            );
        }
        if self.host.is_none() && (self.json.is_some() || self.csv.is_some() || self.plot.is_some())
        {
            return Err(
                "--json, --csv and --plot are client options (the client prints the results)"
                    .into(),
            );
        }
        if self.host.is_some() && self.serve_forever {
            return Err("--loop is a server option".into());
        }
        Ok(())
    }

    /// What a server was told explicitly.
    pub fn explicit(&self) -> Explicit {
        Explicit {
            test: self.test(),
            mode: self.mode(),
            sizes: if self.all {
                Some(Sizes::All)
            } else {
                self.size.map(Sizes::One)
            },
            amount: self.amount(),
            depth: self.depth,
            wait: self.wait,
            verify: self.check.then_some(true),
            baseline: self.baseline.map(|_| true),
        }
    }

    /// A client's complete parameters (defaults filled in).
    pub fn params(&self) -> Params {
        let test = self.test().unwrap_or(Test::Send);
        let mode = if test == Test::Conn {
            Mode::Lat
        } else {
            self.mode().unwrap_or(Mode::Lat)
        };
        let sizes = if test == Test::Conn {
            Sizes::One(8)
        } else if self.all {
            Sizes::All
        } else {
            Sizes::One(self.size.unwrap_or(match mode {
                Mode::Lat => 8,
                Mode::Bw => 64 << 10,
            }))
        };
        let amount = self
            .amount()
            .unwrap_or(Amount::Iters(if test == Test::Conn {
                DEFAULT_CONNS
            } else {
                DEFAULT_ITERS
            }));
        Params {
            test,
            mode,
            sizes,
            amount,
            depth: self.depth.unwrap_or(DEFAULT_DEPTH),
            wait: self.wait.unwrap_or(Wait::Poll),
            verify: self.check,
            baseline: self.baseline.is_some(),
        }
    }

    pub fn qualifier(&self) -> u64 {
        self.port.unwrap_or(DEFAULT_QUALIFIER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("dat-perf").chain(v.iter().copied())).expect("parse")
    }

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!(parse_size("1"), Ok(1));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert!(parse_size("9M").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("x").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn client_defaults_and_server_explicit_options() {
        let a = args(&["-t", "write", "--bw", "127.0.0.1"]);
        let p = a.params();
        assert_eq!(p.test, Test::Write);
        assert_eq!(p.mode, Mode::Bw);
        assert_eq!(p.sizes, Sizes::One(64 << 10));
        assert_eq!(p.amount, Amount::Iters(DEFAULT_ITERS));
        assert_eq!(a.host.as_deref(), Some("127.0.0.1"));

        let s = args(&["-s", "4K", "-c"]);
        let e = s.explicit();
        assert_eq!(e.sizes, Some(Sizes::One(4096)));
        assert_eq!(e.verify, Some(true));
        assert_eq!(e.test, None);
        assert_eq!(e.baseline, None);
    }

    #[test]
    fn conn_and_json_forms() {
        let a = args(&["--conn", "5", "--json", "h"]);
        assert_eq!(a.params().test, Test::Conn);
        assert_eq!(a.params().amount, Amount::Iters(5));
        assert_eq!(a.json.as_deref(), Some("-"));
        assert_eq!(a.host.as_deref(), Some("h"));
        let b = args(&["--csv=out.csv", "h"]);
        assert_eq!(b.csv.as_deref(), Some("out.csv"));
        assert!(args(&["--conn", "5", "-t", "send", "h"])
            .validate()
            .is_err());
        assert!(args(&["-t", "conn", "-s", "64", "h"]).validate().is_err());
        assert!(Args::try_parse_from(["dat-perf", "-a", "-s", "4", "h"]).is_err());
        assert!(Args::try_parse_from(["dat-perf", "--lat", "--bw", "h"]).is_err());
    }
}
