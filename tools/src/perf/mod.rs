//! dat-perf: latency, bandwidth and connection rate between two processes
//! through any libdat.so.1's C ABI, beside plain TCP.
//!
//! Server: `dat-perf -D IA [options]`; client: `dat-perf -D IA [options]
//! HOST`. The protocol between them is in [`proto`], the measurement loops
//! in [`engine`] (DAT) and [`tcp`] (the baseline).

pub mod cli;
pub mod dat;
pub mod engine;
pub mod output;
pub mod plot;
pub mod progress;
pub mod proto;
pub mod stats;
pub mod tcp;
pub mod waiter;

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use cli::Args;
use dat::{ep_attr, event_name, Evd, Ia, Psp, Request};
use dat_abi::*;
use engine::Session;
use output::{Baseline, IdleReport, Report, Row};
use proto::{
    mode_name, size_text, wait_name, Amount, Hello, Metric, Params, Peer, Test, Transport, Wait,
};

/// A failure, printed as one line "dat-perf: ...".
#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The program.
pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = args.validate() {
        eprintln!("dat-perf: {e}");
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("dat-perf: {}", e.0.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Error> {
    dat::load()?;
    let timeout = Duration::from_secs_f64(args.timeout);
    match &args.host {
        Some(host) => client(args, host, timeout),
        None => server(args, timeout),
    }
}

fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

/// HOST in the IA's address family (the port is not used by DAT).
fn resolve(host: &str, like: IpAddr) -> Result<SocketAddr, Error> {
    let all: Vec<SocketAddr> = (host, 0)
        .to_socket_addrs()
        .map_err(|e| Error(format!("cannot resolve {host}: {e}")))?
        .collect();
    all.iter()
        .find(|a| a.is_ipv4() == like.is_ipv4())
        .copied()
        .ok_or_else(|| {
            Error(format!(
                "{host} has no {} address (the IA's family)",
                if like.is_ipv4() { "IPv4" } else { "IPv6" }
            ))
        })
}

/// The sizes must fit the IA's limits.
fn check_limits(ia: &Ia, p: &Params) -> Result<(), String> {
    let max = p.sizes.max();
    let (limit, which) = match p.test {
        Test::Send => (ia.max_message_size, "max_message_size"),
        Test::Write | Test::Read => (ia.max_rdma_size, "max_rdma_size"),
        Test::Conn | Test::Idle => return Ok(()),
    };
    if limit != 0 && max > limit {
        return Err(format!(
            "size {} exceeds IA {}'s {which} ({limit})",
            size_text(max),
            ia.name
        ));
    }
    Ok(())
}

/// "send lat" and "1000 iterations, wait poll, ...".
fn describe(p: &Params) -> (String, String) {
    let what = if matches!(p.test, Test::Conn | Test::Idle) {
        p.test.to_string()
    } else {
        format!("{} {}", p.test, mode_name(p.mode))
    };
    let mut s = format!("{}, wait {}", p.amount_text(), wait_name(p.wait));
    if p.test == Test::Idle {
        s.push_str(match p.wait {
            Wait::Mem => " (no library call: both sides sleep)",
            Wait::Evd => " (both sides block in dat_evd_wait)",
            Wait::Cno => " (both sides block in dat_cno_wait)",
            Wait::Poll => " (both sides spin on dat_evd_dequeue)",
        });
    }
    if p.mode == Metric::Bw && !matches!(p.test, Test::Conn | Test::Idle) {
        s.push_str(&format!(", depth {}", p.depth));
    }
    if p.peer != Peer::Wait {
        s.push_str(&format!(", peer {}", proto::peer_name(p.peer)));
    }
    if p.verify {
        s.push_str(", check");
    }
    if p.baseline {
        s.push_str(", baseline tcp");
    }
    (what, s)
}

fn client(args: &Args, host: &str, timeout: Duration) -> Result<(), Error> {
    let p = args.params();
    let qual = args.qualifier();
    let ia = Ia::open(&args.ia)?;
    check_limits(&ia, &p).map_err(Error)?;
    let to = resolve(host, ia.addr)?;
    let mut sess = Session::new(&ia, p, timeout)?;
    let hello = sess.connect(to, qual, host)?;
    let tcp_port = match hello {
        Hello::Ok { tcp_port, .. } => tcp_port,
        Hello::Mismatch(why) => {
            let _ = sess.disconnect();
            return Err(Error(format!("mismatched parameters: {why}")));
        }
        Hello::Refused(why) => {
            let _ = sess.disconnect();
            return Err(Error(format!("the server refused the run: {why}")));
        }
    };
    let tcp_to = p.baseline.then(|| SocketAddr::new(to.ip(), tcp_port));
    if let Some(a) = tcp_to {
        if tcp_port == 0 {
            return Err(Error("the server has no TCP baseline listener".into()));
        }
        if p.test != Test::Conn {
            sess.tcp = Some(tcp::Link::connect(a, p.wait.spins(), timeout)?);
        }
    }

    let table = args.json.as_deref() != Some("-") && args.csv.as_deref() != Some("-");
    if p.test == Test::Idle {
        return client_idle(args, &sess, &ia, host, to, qual, table);
    }
    let mut progress = progress::Progress::new(!args.no_progress);
    if table {
        let (what, details) = describe(&p);
        let shown = if host == to.ip().to_string() {
            host.to_string()
        } else {
            format!("{host} ({})", to.ip())
        };
        progress.println(&format!(
            "dat-perf: {what} over IA {} to {shown} qualifier {qual}: {details}; t_*: {}",
            ia.name,
            output::latency_kind(&p)
        ));
        progress.println(&output::header(&p, p.baseline));
    }
    let mut rows = Vec::new();
    let total = match p.amount {
        Amount::Iters(n) => Some(n),
        Amount::DurationMs(_) => None,
    };
    for size in p.sizes.list() {
        let label = if p.test == Test::Conn {
            "connections".to_string()
        } else {
            size_text(size)
        };
        // One size over one transport, with its progress line.
        let mut run = |transport: Transport, label: &str| {
            progress.start(label, total);
            let pr = &progress;
            let target = engine::Target {
                transport,
                server: to,
                qual,
                tcp: tcp_to,
            };
            let s = sess.run_size(size, &target, &mut |n| pr.set(n))?;
            Ok::<_, Error>(s.figures(size, p.test == Test::Conn))
        };
        let ours = run(Transport::Dat, &label)?;
        let baseline = if p.baseline {
            let f = run(Transport::Tcp, &format!("{label} (tcp)"))?;
            Some(Baseline {
                ratio: output::ratio(&p, &ours, &f),
                figures: f,
            })
        } else {
            None
        };
        progress.finish();
        let row = Row { ours, baseline };
        if table {
            progress.println(&output::line(&p, &row));
        }
        rows.push(row);
    }
    sess.finish()?;
    drop(sess);

    let rep = Report {
        tool: "dat-perf",
        version: env!("CARGO_PKG_VERSION"),
        library: dat::d().path.clone(),
        ia: ia.name.clone(),
        server: host.to_string(),
        server_address: to.ip().to_string(),
        qualifier: qual,
        test: p.test,
        mode: (p.test != Test::Conn).then_some(p.mode),
        wait: p.wait,
        peer: p.peer,
        depth: p.depth,
        check: p.verify,
        iterations: total,
        duration_s: match p.amount {
            Amount::DurationMs(ms) => Some(f64::from(ms) / 1000.0),
            Amount::Iters(_) => None,
        },
        warmup_iterations: match (p.test, p.amount) {
            (Test::Conn, _) => 0,
            (_, Amount::Iters(n)) => engine::WARMUP.min(n),
            (_, Amount::DurationMs(_)) => engine::WARMUP,
        },
        latency: output::latency_kind(&p),
        baseline: p.baseline.then_some("tcp"),
        results: rows,
        idle: None,
    };
    if let Some(dest) = &args.json {
        output::emit(dest, &output::json(&rep)?, "--json")?;
    }
    if let Some(dest) = &args.csv {
        output::emit(dest, &output::csv(&rep)?, "--csv")?;
    }
    if let Some(path) = &args.plot {
        plot::draw(path, &rep)?;
    }
    Ok(())
}

/// The idle test's client: the run, then its table or JSON.
fn client_idle(
    args: &Args,
    sess: &Session,
    ia: &Ia,
    host: &str,
    to: SocketAddr,
    qual: u64,
    table: bool,
) -> Result<(), Error> {
    let p = sess.p;
    if table {
        let (what, details) = describe(&p);
        say(&format!(
            "dat-perf: {what} over IA {} to {host} qualifier {qual}: {details}",
            ia.name
        ));
    }
    let (ours, theirs) = sess.idle()?;
    sess.finish()?;
    let idle = IdleReport::new(ours, theirs);
    if table {
        say(&output::idle_table(&idle));
    }
    let rep = Report {
        tool: "dat-perf",
        version: env!("CARGO_PKG_VERSION"),
        library: dat::d().path.clone(),
        ia: ia.name.clone(),
        server: host.to_string(),
        server_address: to.ip().to_string(),
        qualifier: qual,
        test: p.test,
        mode: None,
        wait: p.wait,
        peer: p.peer,
        depth: p.depth,
        check: p.verify,
        iterations: None,
        duration_s: match p.amount {
            Amount::DurationMs(ms) => Some(f64::from(ms) / 1000.0),
            Amount::Iters(_) => None,
        },
        warmup_iterations: 0,
        latency: output::latency_kind(&p),
        baseline: None,
        results: Vec::new(),
        idle: Some(idle),
    };
    if let Some(dest) = &args.json {
        output::emit(dest, &output::json(&rep)?, "--json")?;
    }
    Ok(())
}

fn server(args: &Args, timeout: Duration) -> Result<(), Error> {
    let ia = Ia::open(&args.ia)?;
    let cr = Evd::create(&ia, 16, DAT_EVD_CR_FLAG, None)?;
    let (_psp, qual) = if args.port == Some(0) {
        Psp::create_any(&ia, &cr)?
    } else {
        let q = args.qualifier();
        (Psp::create(&ia, q, &cr)?, q)
    };
    let explicit = args.explicit();
    say(&format!(
        "dat-perf: server on IA {} ({}) qualifier {qual}: waiting for a client",
        ia.name, ia.addr
    ));
    loop {
        let ev = cr.wait_forever()?;
        if ev.event_number != DAT_CONNECTION_REQUEST_EVENT {
            return Err(Error(format!(
                "waiting for a client: got {}",
                event_name(ev.event_number)
            )));
        }
        let req = Request::from_event(&ev)?;
        let params = match Params::decode(&req.private) {
            Ok((p, buf)) => (p, buf),
            Err(why) => {
                let from = req.peer.map_or("?".into(), |a| a.ip().to_string());
                req.reject();
                eprintln!("dat-perf: rejected a connection from {from}: {why}");
                continue;
            }
        };
        let r = serve_one(&ia, &cr, req, params, &explicit, timeout);
        match r {
            Ok(()) if !args.serve_forever => return Ok(()),
            Err(e) if !args.serve_forever => return Err(e),
            Ok(()) => {}
            Err(e) => eprintln!("dat-perf: {}", e.0),
        }
        say(&format!(
            "dat-perf: server on IA {} ({}) qualifier {qual}: waiting for a client",
            ia.name, ia.addr
        ));
    }
}

/// Accepts with a refusal in the private data, then waits for the client
/// to hang up.
fn refuse(ia: &Ia, req: Request, hello: Hello, timeout: Duration) -> Result<(), Error> {
    let pz = dat::Pz::create(ia)?;
    let dto = Evd::create(ia, 8, DAT_EVD_DTO_FLAG, None)?;
    let conn = Evd::create(ia, 8, DAT_EVD_CONNECTION_FLAG, None)?;
    let ep = dat::Ep::create(ia, &pz, &dto, &conn, &ep_attr(64, 1, 1, 0))?;
    req.accept(&ep, &hello.encode(ia.max_private_data.max(64)))?;
    let deadline = Instant::now() + timeout;
    // ESTABLISHED, then the client's disconnection (or a failure).
    while let Some(ev) = conn.wait(deadline.saturating_duration_since(Instant::now()))? {
        if ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED {
            break;
        }
    }
    drop(ep);
    Ok(())
}

fn serve_one(
    ia: &Ia,
    cr: &Evd,
    req: Request,
    (p, peer): (Params, proto::RemoteBuf),
    explicit: &proto::Explicit,
    timeout: Duration,
) -> Result<(), Error> {
    let from = req.peer.map_or("?".into(), |a| a.ip().to_string());
    if let Some(why) = proto::mismatches(&p, explicit) {
        refuse(ia, req, Hello::Mismatch(why.clone()), timeout)?;
        return Err(Error(format!("mismatched parameters: {why}")));
    }
    if let Err(why) = check_limits(ia, &p) {
        refuse(ia, req, Hello::Refused(why.clone()), timeout)?;
        return Err(Error(format!("refused a run from {from}: {why}")));
    }
    let mut sess = Session::new(ia, p, timeout)?;
    sess.peer = peer;
    sess.create_ep()?;
    sess.post_ctl_recv()?;
    let listener = if p.baseline {
        Some(
            TcpListener::bind(SocketAddr::new(ia.addr, 0))
                .map_err(|e| Error(format!("TCP baseline listener on {}: {e}", ia.addr)))?,
        )
    } else {
        None
    };
    let tcp_port = match &listener {
        Some(l) => l
            .local_addr()
            .map_err(|e| Error(format!("TCP baseline listener: {e}")))?
            .port(),
        None => 0,
    };
    let hello = Hello::Ok {
        buf: sess.local_buf(),
        tcp_port,
        read_in: u16::try_from(sess.reads.max(0)).unwrap_or(u16::MAX),
    };
    req.accept(sess.ep(), &hello.encode(ia.max_private_data))?;
    let ev = sess.w().conn_event("the client's connection")?;
    if ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED {
        return Err(Error(format!(
            "accepting {from}: {}",
            event_name(ev.event_number)
        )));
    }
    if let (Some(l), false) = (&listener, p.test == Test::Conn) {
        let s = tcp::accept(l, p.wait.spins(), timeout)?;
        sess.tcp = Some(tcp::Link::new(s, p.wait.spins(), timeout)?);
    }
    let (what, details) = describe(&p);
    say(&format!(
        "dat-perf: client {from}: {what}, {details}: running"
    ));
    sess.serve(cr, listener.as_ref())?;
    say(&format!("dat-perf: client {from}: done"));
    Ok(())
}
