//! Command line: what the user asked for (`Args`), what a client resolves
//! it to (`Params`, sent to the server), and what a server was explicitly
//! told (`Explicit`, checked by the protocol against the client's `Params`).

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use super::proto::{
    Amount, Explicit, Metric, Params, Peer, Sizes, Test, Wait, ALL_SIZES, MAX_DEPTH, MAX_SIZE,
};

/// The default connection qualifier (perftest's port).
pub const DEFAULT_QUALIFIER: u64 = 18515;
/// Default iterations per size.
pub const DEFAULT_ITERS: u64 = 1000;
/// Default connections of `-t conn`.
pub const DEFAULT_CONNS: u64 = 100;
/// Default window of `--bw`.
pub const DEFAULT_DEPTH: u32 = 16;
/// Default of --cq-mod (perftest's).
pub const DEFAULT_CQ_MOD: u32 = 100;
/// The largest --cq-mod (perftest's).
pub const MAX_CQ_MOD: u32 = 1024;
/// Default idle period of `-t idle`, in milliseconds.
pub const DEFAULT_IDLE_MS: u32 = 5000;

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

--wait mem: the receiver of the data polls the last byte of its buffer in
memory (volatile loads, no library call) until the message landed; only
then does it call the library: it dequeues the completion that goes with
the message, and reaps its own Sends' and Writes' completions with
dat_evd_dequeue (waiting for one only when its send queue is full).
Every message carries a tag in its last byte that changes every
iteration (the receiver clears the byte before the buffer is reused).
  send --lat   each side posts its receive, polls the receive buffer's
               last byte, then dequeues the receive completion and
               answers; t_* from posting the Send to seeing the answer.
  write --lat  each side polls the last byte of its destination (no
               dequeue in the loop, unlike poll/evd/cno, which dequeue
               while polling as ib_write_lat does); it reaps its Writes'
               completions after the answer landed.
  read --lat   the reader polls the last byte of its destination, then
               dequeues the read completion; t_* end at the byte.
  send --bw    the server polls each receive buffer in turn, then
               dequeues its completion and reposts it; the client waits
               for its Sends' completions with dat_evd_dequeue.
  write --bw   the server polls the last byte of each destination slot in
               turn (a batch covers each slot once); the client as send.
  read --bw    the reader polls the oldest read's destination, then
               dequeues its completion.
The TCP baseline spins on non-blocking sockets for poll and mem, and
blocks for evd and cno. --bw --depth 1 is a one-message-in-flight
stream; its TCP baseline is TCP's own stream of the same messages
(written back to back, the receiver reading each).

--cq-mod N (send and write --lat): as perftest's --cq-mod, one Send or
RDMA Write in N (and the last of each size's run) asks for its completion;
the others are posted with DAT_COMPLETION_SUPPRESS_FLAG, and a completion
stands for every earlier request of the EP (they complete in order). The
default, 100, is perftest's; --cq-mod 1 dequeues every request's completion.

--peer compute (read, and write --bw): the side that is read from (or
written to) makes no library call during a batch: it computes over its
own memory until the client, after its last operation completed,
RDMA-Writes the batch's end flag into its memory; only then does it
take the END message. --peer wait (the default): it waits for the END
in the --wait style (poll and mem: a dat_evd_dequeue loop). --peer sleep:
it sleeps in dat_evd_wait until the END whatever --wait says: a
spinning target takes a CPU from the client and from a software device
(rxe, siw) on a small machine. (perftest's server with -R busy-polls a
CQ throughout ib_read_lat and ib_write_bw, as --peer wait does.) (The target's library does the work for Reads and
Writes on its own: over the TCP transport its progress thread.)

-t idle [--duration SECS, default 5]: both processes stay connected and
idle for SECS; each measures the CPU time of all its threads (getrusage,
user + system) over the period and the client prints it as % of one
core per side. During the period a side makes no library call with
--wait mem (it sleeps: only the library's own threads run), blocks in
dat_evd_wait (evd) or dat_cno_wait (cno) on its DTO EVD, or spins on
dat_evd_dequeue (poll: about 100 %, a reference).

-s takes one size, a list of powers of two (-s 8,1K,64K) or every power
of two in a range (-s 8-64K). A server given -p 0 listens on a free
qualifier (dat_psp_create_any) and prints it.

-c checks every iteration's payload (a pattern per iteration) at the
receiver; the time to write and check the pattern is then part of the
figures. With --wait mem the receiver checks the payload as soon as the
last byte is seen, before it dequeues the completion (what a consumer
that polls memory reads). DAT_PERF_CORRUPT=N makes the side that sends the data (the client
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

    /// Connection qualifier of the server's service point; 0 on a server:
    /// any free one, printed [default: 18515].
    #[arg(short = 'p', long = "port", value_name = "QUALIFIER")]
    pub port: Option<u64>,

    /// Test: send (Send/Recv), write (RDMA Write), read (RDMA Read), conn
    /// (connection rate) or idle (CPU of an idle connected pair)
    /// [default: send].
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

    /// Latency (send, write): one Send or RDMA Write in N asks for its
    /// completion; the others are posted with DAT_COMPLETION_SUPPRESS_FLAG,
    /// as perftest's --cq-mod (whose default is also 100) [default: 100;
    /// 1: every one].
    #[arg(long = "cq-mod", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_CQ_MOD as i64))]
    pub cq_mod: Option<u32>,

    /// Every power of two from 1 B to 8 MiB.
    #[arg(short = 'a', long = "all", conflicts_with = "size")]
    pub all: bool,

    /// Message size, 1 B to 8 MiB; K and M suffixes (binary); or powers of
    /// two: a list 8,1K,64K or a range 8-64K [default: 8 for --lat, 64K for
    /// --bw].
    #[arg(short = 's', long = "size", value_name = "SIZE", value_parser = parse_sizes)]
    pub size: Option<Sizes>,

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
    /// evd (dat_evd_wait), cno (dat_cno_wait, then dequeue) or mem (the
    /// receiver polls its buffer's last byte in memory, then dequeues; see
    /// below) [default: poll; mem for -t idle].
    #[arg(long, value_enum)]
    pub wait: Option<Wait>,

    /// The target of RDMA Reads (and of --bw RDMA Writes) during a batch:
    /// wait (for the END, in the --wait style) or compute (no library
    /// call: a compute loop until the client's end flag lands in its
    /// memory) [default: wait].
    #[arg(long, value_enum)]
    pub peer: Option<Peer>,

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

/// Parses `-s`: one size, a list of powers of two (`8,1K,64K`) or every
/// power of two in a range (`8-64K`).
pub fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let bit = |v: u64| -> Result<u32, String> {
        if v.is_power_of_two() {
            Ok(1 << v.trailing_zeros())
        } else {
            Err(format!(
                "{v} is not a power of two (a list or range of sizes takes powers of two)"
            ))
        }
    };
    let mask = if s.contains(',') {
        let mut m = 0;
        for part in s.split(',') {
            m |= bit(parse_size(part)?)?;
        }
        m
    } else if let Some((lo, hi)) = s.split_once('-') {
        let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
        if lo > hi {
            return Err(format!("size range {s}: the first is larger than the last"));
        }
        (0..24)
            .filter(|k| (lo..=hi).contains(&(1u64 << k)))
            .fold(0, |m, k| m | 1 << k)
    } else {
        return parse_size(s).map(Sizes::One);
    };
    if mask == 0 {
        return Err(format!("size range {s} holds no power of two"));
    }
    debug_assert!(mask & !ALL_SIZES == 0);
    Ok(Sizes::Set(mask))
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

impl Args {
    fn test(&self) -> Option<Test> {
        if self.conn.is_some() {
            Some(Test::Conn)
        } else {
            self.test
        }
    }

    fn mode(&self) -> Option<Metric> {
        if self.bw {
            Some(Metric::Bw)
        } else if self.lat {
            Some(Metric::Lat)
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
        // A client's test (send by default); a server without -t adopts
        // the client's, which its own checks then judge.
        let test = self.test().or(self.host.is_some().then_some(Test::Send));
        if test == Some(Test::Idle) {
            if self.all || self.size.is_some() {
                return Err("-t idle sends no data: -a and -s do not apply".into());
            }
            if self.iters.is_some() {
                return Err("-t idle lasts --duration SECS (default 5): -n does not apply".into());
            }
            if self.bw || self.lat || self.depth.is_some() {
                return Err("-t idle has no --lat, --bw or --depth".into());
            }
            if self.baseline.is_some() {
                return Err("-t idle has no TCP baseline".into());
            }
            if self.csv.is_some() || self.plot.is_some() {
                return Err(
                    "-t idle prints a table or --json: --csv and --plot do not apply".into(),
                );
            }
        }
        if self.wait == Some(Wait::Mem) && test == Some(Test::Conn) {
            return Err("--wait mem polls message buffers: it does not apply to -t conn".into());
        }
        if let (Some(peer @ (Peer::Compute | Peer::Sleep)), Some(test)) = (self.peer, test) {
            let fits = test == Test::Read || (test == Test::Write && self.bw);
            if !fits {
                return Err(format!(
                    "--peer {} is for the target of RDMA Reads (-t read) or of an RDMA Write stream (-t write --bw)",
                    super::proto::peer_name(peer)
                ));
            }
        }
        if self.host.is_some() && self.port == Some(0) {
            return Err("-p 0 (any free qualifier) is a server option".into());
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
                self.size
            },
            amount: self.amount(),
            depth: self.depth,
            wait: self.wait,
            peer: self.peer,
            verify: self.check.then_some(true),
            baseline: self.baseline.map(|_| true),
            cq_mod: self.cq_mod,
        }
    }

    /// A client's complete parameters (defaults filled in).
    pub fn params(&self) -> Params {
        let test = self.test().unwrap_or(Test::Send);
        let no_data = matches!(test, Test::Conn | Test::Idle);
        let mode = if no_data {
            Metric::Lat
        } else {
            self.mode().unwrap_or(Metric::Lat)
        };
        let sizes = if no_data {
            Sizes::One(8)
        } else if self.all {
            Sizes::All
        } else {
            self.size.unwrap_or(Sizes::One(match mode {
                Metric::Lat => 8,
                Metric::Bw => 64 << 10,
            }))
        };
        let amount = self.amount().unwrap_or(match test {
            Test::Conn => Amount::Iters(DEFAULT_CONNS),
            Test::Idle => Amount::DurationMs(DEFAULT_IDLE_MS),
            _ => Amount::Iters(DEFAULT_ITERS),
        });
        Params {
            test,
            mode,
            sizes,
            amount,
            depth: self.depth.unwrap_or(DEFAULT_DEPTH),
            wait: self.wait.unwrap_or(if test == Test::Idle {
                Wait::Mem
            } else {
                Wait::Poll
            }),
            peer: self.peer.unwrap_or(Peer::Wait),
            verify: self.check,
            baseline: self.baseline.is_some(),
            cq_mod: self.cq_mod.unwrap_or(DEFAULT_CQ_MOD),
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
        assert_eq!(p.mode, Metric::Bw);
        assert_eq!(p.sizes, Sizes::One(64 << 10));
        assert_eq!(p.amount, Amount::Iters(DEFAULT_ITERS));
        assert_eq!(a.host.as_deref(), Some("127.0.0.1"));

        let s = args(&["-s", "4K", "-c"]);
        let e = s.explicit();
        assert_eq!(e.sizes, Some(Sizes::One(4096)));
        assert_eq!(e.peer, None);
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

    #[test]
    fn size_lists_and_ranges() {
        assert_eq!(parse_sizes("4K"), Ok(Sizes::One(4096)));
        assert_eq!(parse_sizes("1000"), Ok(Sizes::One(1000)));
        assert_eq!(
            parse_sizes("8,1K,64K").map(|s| s.list()),
            Ok(vec![8, 1024, 65536])
        );
        assert_eq!(
            parse_sizes("8-64").map(|s| s.list()),
            Ok(vec![8, 16, 32, 64])
        );
        assert_eq!(
            parse_sizes("1M-8M").map(|s| s.list()),
            Ok(vec![1 << 20, 2 << 20, 4 << 20, 8 << 20])
        );
        assert_eq!(parse_sizes("3-7").map(|s| s.list()), Ok(vec![4]));
        assert!(parse_sizes("5-6").is_err());
        assert!(parse_sizes("64-8").is_err());
        assert!(parse_sizes("8,1000").is_err());
        assert!(parse_sizes("8-16M").is_err());
        let a = args(&["-s", "1M-8M", "--bw", "h"]);
        assert_eq!(a.params().sizes.max(), 8 << 20);
    }

    #[test]
    fn mem_wait_compute_peer_and_idle() {
        let a = args(&["-t", "read", "--wait", "mem", "--peer", "compute", "h"]);
        assert!(a.validate().is_ok());
        let p = a.params();
        assert_eq!((p.wait, p.peer), (Wait::Mem, Peer::Compute));
        assert_eq!(args(&["h"]).params().peer, Peer::Wait);
        assert!(args(&["-t", "write", "--bw", "--peer", "compute", "h"])
            .validate()
            .is_ok());
        for bad in [
            &["-t", "send", "--peer", "compute", "h"][..],
            &["-t", "write", "--lat", "--peer", "compute", "h"],
            &["-t", "conn", "--wait", "mem", "h"],
            &["-t", "idle", "-s", "8", "h"],
            &["-t", "idle", "-n", "5", "h"],
            &["-t", "idle", "--bw", "h"],
            &["-t", "idle", "--baseline", "tcp", "h"],
            &["-t", "idle", "--csv", "h"],
            &["-p", "0", "h"],
        ] {
            assert!(args(bad).validate().is_err(), "{bad:?}");
        }
        let i = args(&["-t", "idle", "h"]);
        assert!(i.validate().is_ok());
        let p = i.params();
        assert_eq!(p.test, Test::Idle);
        assert_eq!(p.amount, Amount::DurationMs(DEFAULT_IDLE_MS));
        assert_eq!(p.wait, Wait::Mem);
        let p = args(&["-t", "idle", "--duration", "0.5", "--wait", "evd", "h"]).params();
        assert_eq!((p.amount, p.wait), (Amount::DurationMs(500), Wait::Evd));
        assert!(args(&["-p", "0"]).validate().is_ok());
        // A server adopts the client's test: --peer compute alone is fine.
        assert!(args(&["--peer", "compute"]).validate().is_ok());
        assert!(args(&["--peer", "compute", "-t", "send"])
            .validate()
            .is_err());
    }
}
