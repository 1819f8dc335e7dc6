//! The two-process rows (`qp_bench procs`): ping-pong with the passive
//! side in a child process, for queue pairs and raw TCP.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use udapl::transport::api::{Access, CompletionQueue, Device, MemoryRegion, PdId, QueuePair, WcOp};
use udapl::transport::tcp::{DeviceOptions, IwarpDevice};
use udapl::transport::SOFTWARE_CAPABILITIES;

use super::harness::{
    blocking, pattern, post_recv, post_send, sge, ConnEvent, ConnEventLog, DevicePair, Poller, SEND,
};
use super::tcp::{spin_read, spin_write};
use super::{local_completion, median, style, Row, LO, R, WAIT};

/// Ping-pong with the passive side in a second process (this program run
/// as `qp_bench __child busy|block`), as `bench_ep` runs the DAT layer:
/// the same harness shape at the two levels. One connection of each kind
/// (queue pair, raw TCP) for the whole run; the child is driven through
/// its stdin/stdout, one command a line.
struct Child {
    proc: std::process::Child,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

impl Child {
    fn say(&mut self, line: &str) -> R<()> {
        writeln!(self.to, "{line}").map_err(|e| format!("child: write: {e}"))?;
        self.to.flush().map_err(|e| format!("child: write: {e}"))
    }

    fn hear(&mut self) -> R<String> {
        use std::io::BufRead;
        let mut l = String::new();
        match self.from.read_line(&mut l) {
            Ok(0) => Err("child: gone".into()),
            Ok(_) => Ok(l.trim_end().to_string()),
            Err(e) => Err(format!("child: read: {e}")),
        }
    }

    fn expect(&mut self, want: &str) -> R<()> {
        let got = self.hear()?;
        if got == want {
            Ok(())
        } else {
            Err(format!("child said {got:?}, expected {want:?}"))
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

/// One device of this process: its protection domain, CQ, recorder.
struct SingleDevice {
    dev: Arc<IwarpDevice>,
    pd: PdId,
    cq: Arc<dyn CompletionQueue>,
    rec: Arc<ConnEventLog>,
}

impl SingleDevice {
    fn open() -> R<SingleDevice> {
        let opts = DeviceOptions {
            local_completion: local_completion(),
            ..DeviceOptions::default()
        };
        let dev = IwarpDevice::open_with(LO, SOFTWARE_CAPABILITIES, opts);
        let pd = dev.alloc_pd().map_err(|e| format!("alloc_pd: {e:?}"))?;
        let cq = dev.create_cq(1024).map_err(|e| format!("cq: {e:?}"))?;
        Ok(SingleDevice {
            dev,
            pd,
            cq,
            rec: Arc::new(ConnEventLog::default()),
        })
    }

    fn spin<T>(&self, what: &str, mut f: impl FnMut() -> R<Option<T>>) -> R<T> {
        let end = Instant::now() + WAIT;
        loop {
            if let Some(t) = f()? {
                return Ok(t);
            }
            self.dev.progress();
            if Instant::now() > end {
                return Err(format!("timed out waiting for {what}"));
            }
        }
    }

    fn reg(&self, buf: &[u8]) -> R<MemoryRegion> {
        let all = Access::LOCAL_READ
            .union(Access::LOCAL_WRITE)
            .union(Access::REMOTE_READ)
            .union(Access::REMOTE_WRITE);
        self.dev
            .register(self.pd, buf.as_ptr() as u64, buf.len() as u64, all)
            .map_err(|e| format!("register: {e:?}"))
    }

    fn qp(&self) -> R<Arc<dyn QueuePair>> {
        DevicePair::qp(&self.dev, self.pd, &self.cq, &self.rec)
    }
}

/// Largest ping-pong message of the two-process mode.
const PROCS_MAX: usize = 65536;

/// The child: the passive side of both connections, echoing.
pub(crate) fn procs_child() -> R<()> {
    use std::io::BufRead;
    let me = SingleDevice::open()?;
    let listener = me
        .dev
        .listen(0, me.rec.clone())
        .map_err(|e| format!("listen: {e:?}"))?;
    let tl = TcpListener::bind((LO, 0)).map_err(|e| format!("bind: {e}"))?;
    let tport = tl.local_addr().map_err(|e| e.to_string())?.port();
    let mut out = std::io::stdout();
    writeln!(out, "{} {tport}", listener.port()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    let rb = vec![0u8; PROCS_MAX];
    let mrb = me.reg(&rb)?;
    let qb = me.qp()?;
    let req = me.spin("connection request", || {
        me.rec.take(None, |e| matches!(e, ConnEvent::Request(_)))
    })?;
    let ConnEvent::Request(id) = req else {
        return Err("request".into());
    };
    me.dev
        .accept(id, &*qb, b"")
        .map_err(|e| format!("accept: {e:?}"))?;
    me.spin("established (passive)", || {
        me.rec.take(Some(qb.num()), |e| e == ConnEvent::Established)
    })?;
    let (ts, _) = tl.accept().map_err(|e| format!("accept: {e}"))?;
    ts.set_nodelay(true).map_err(|e| e.to_string())?;
    ts.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let mut p = Poller::new(&me.cq);
    let mut unacked = 0usize;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> R<usize> {
            w.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| format!("bad command {line:?}"))
        };
        match w.first().copied() {
            Some("qp") => {
                let (len, total) = (num(1)?, num(2)?);
                post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                writeln!(out, "R").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
                for i in 0..total {
                    loop {
                        let wc = p.next()?;
                        if wc.op == WcOp::Recv {
                            if wc.byte_len != len as u64 {
                                return Err("child: wrong length".into());
                            }
                            break;
                        }
                        unacked -= 1;
                    }
                    if i + 1 < total {
                        post_recv(&*qb, 1, sge(&mrb, 0, len))?;
                    }
                    post_send(&*qb, 2, SEND, sge(&mrb, 0, len))?;
                    unacked += 1;
                }
                writeln!(out, "D").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
            }
            Some("tcp") => {
                let (len, total) = (num(1)?, num(2)?);
                let mut b = vec![0u8; len];
                ts.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
                writeln!(out, "R").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
                for _ in 0..total {
                    spin_read(&ts, &mut b)?;
                    spin_write(&ts, &b)?;
                }
                writeln!(out, "D").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
            }
            Some("quit") => break,
            _ => return Err(format!("child: unknown command {line:?}")),
        }
    }
    // The last echoes' acknowledgements: whatever arrives before the parent
    // disconnects (not checked).
    let end = Instant::now() + Duration::from_millis(200);
    while unacked > 0 && Instant::now() < end {
        if p.try_next().ok().flatten().is_some() {
            unacked -= 1;
        }
    }
    Ok(())
}

/// The parent: the active side; seconds per round trip for each size, queue
/// pairs then raw TCP, median of three runs each.
pub(crate) fn procs_run() -> R<Vec<Row>> {
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut proc = Command::new(exe)
        .arg("__child")
        .arg(style())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let (Some(to), Some(from)) = (proc.stdin.take(), proc.stdout.take()) else {
        return Err("child pipes".into());
    };
    let mut c = Child {
        proc,
        to,
        from: std::io::BufReader::new(from),
    };
    let ports = c.hear()?;
    let mut it = ports.split_whitespace().map(|x| x.parse::<u16>());
    let (Some(Ok(qport)), Some(Ok(tport))) = (it.next(), it.next()) else {
        return Err(format!("child said {ports:?}"));
    };
    let me = SingleDevice::open()?;
    let src = pattern(PROCS_MAX, 4);
    let ra = vec![0u8; PROCS_MAX];
    let (ms, mra) = (me.reg(&src)?, me.reg(&ra)?);
    let qa = me.qp()?;
    qa.connect(SocketAddr::new(LO, 0), qport, b"", WAIT)
        .map_err(|e| format!("connect: {e:?}"))?;
    me.spin("established (active)", || {
        me.rec.take(Some(qa.num()), |e| e == ConnEvent::Established)
    })?;
    let tc = TcpStream::connect((LO, tport)).map_err(|e| format!("connect: {e}"))?;
    tc.set_nodelay(true).map_err(|e| e.to_string())?;
    tc.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let mut p = Poller::new(&me.cq);
    let mut unacked = 0usize;
    let mut rows = Vec::new();
    for &(len, warm, iters) in &[
        (8usize, 1000usize, 20_000usize),
        (64, 1000, 20_000),
        (1024, 1000, 10_000),
        (65536, 100, 1000),
    ] {
        let total = warm + iters;
        let mut qp_run = |c: &mut Child| -> R<f64> {
            c.say(&format!("qp {len} {total}"))?;
            c.expect("R")?;
            let mut t0 = Instant::now();
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
                        if wc.byte_len != len as u64 {
                            return Err("wrong length".into());
                        }
                        break;
                    }
                    unacked -= 1;
                }
                if i == 0 && ra[..len] != src[..len] {
                    return Err("qp ping-pong (2 processes): data mismatch".into());
                }
                if unacked > 64 {
                    return Err("sends do not complete".into());
                }
            }
            let per = t0.elapsed().as_secs_f64() / iters as f64;
            c.expect("D")?;
            Ok(per)
        };
        let ours = median(|| qp_run(&mut c))? * 0.5e6;
        let tcp_run = |c: &mut Child| -> R<f64> {
            let mut b = vec![0u8; len];
            tc.set_nonblocking(!blocking()).map_err(|e| e.to_string())?;
            c.say(&format!("tcp {len} {total}"))?;
            c.expect("R")?;
            let mut t0 = Instant::now();
            for i in 0..total {
                if i == warm {
                    t0 = Instant::now();
                }
                spin_write(&tc, &src[..len])?;
                spin_read(&tc, &mut b)?;
            }
            let per = t0.elapsed().as_secs_f64() / iters as f64;
            if b[..] != src[..len] {
                return Err("tcp ping-pong (2 processes): data mismatch".into());
            }
            c.expect("D")?;
            Ok(per)
        };
        let tcp = median(|| tcp_run(&mut c))? * 0.5e6;
        rows.push(Row {
            wait: style(),
            pattern: "ping-pong 2 procs (RTT/2)",
            size: len,
            unit: "us",
            ours,
            tcp,
            target: if len <= 1024 { "<= 1.05x" } else { "" },
        });
    }
    c.say("quit")?;
    let _ = qa.disconnect(false);
    let status = c.proc.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("child exited with {status}"));
    }
    Ok(rows)
}
