//! The DAT layer across two network namespaces joined by a veth pair: the
//! `rdma_pingpong` example programs (built by `make examples`, linked
//! against `build/lib/libdat.so.1`) run unmodified, the server in one
//! namespace on the IA named after its veth interface, the client in the
//! other. Skipped with a message when namespaces are unavailable (not
//! root, no `ip`) or the examples are not built.

mod common {
    pub mod netns;
    pub mod tshark;
}

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::Netns;

fn example(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("build/examples/rdma_pingpong")
        .join(name);
    p.is_file().then_some(p)
}

fn libdir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("build/lib")
}

#[test]
fn rdma_pingpong_example_across_a_veth_pair() {
    let (Some(server), Some(client)) = (example("server"), example("client")) else {
        eprintln!("skipped: build/examples/rdma_pingpong not built (make examples)");
        return;
    };
    let (a, b) = match (Netns::create("da"), Netns::create("db")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => {
            eprintln!("skipped: network namespaces unavailable: {why:?}");
            return;
        }
    };
    let pid = std::process::id();
    let net = (1 + (pid + 97) % 250) as u8;
    let (ia, ib) = (
        Ipv4Addr::new(10, 198, net, 1),
        Ipv4Addr::new(10, 198, net, 2),
    );
    let (if_a, if_b) = (format!("ud{pid}x"), format!("ud{pid}y"));
    Netns::veth(
        &a,
        &if_a,
        &format!("{ia}/24"),
        &b,
        &if_b,
        &format!("{ib}/24"),
    )
    .unwrap_or_else(|e| panic!("veth pair: {e}"));
    let (rx0, tx0) = a.counters(&if_a);
    let run = |ns: &Netns, prog: &PathBuf, args: &[&str]| {
        Command::new("ip")
            .args(["netns", "exec", ns.name()])
            .arg(prog)
            .args(args)
            .env("LD_LIBRARY_PATH", libdir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ip netns exec")
    };
    // The server listens on its interface's IA (a built-in IA per interface).
    let srv = run(
        &a,
        &server,
        &["-D", &if_a, "-q", "4791", "-s", "4M", "-t", "20"],
    );
    // Give it a moment to listen; the client retries nothing, so wait for the port.
    let t0 = Instant::now();
    let mut out = None;
    while t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(200));
        let c = run(&b, &client, &["-D", &if_b, "-q", "4791", &ia.to_string()])
            .wait_with_output()
            .expect("client");
        let text = String::from_utf8_lossy(&c.stderr).into_owned();
        if c.status.success() {
            out = Some(c);
            break;
        }
        assert!(
            text.contains("REJECTED") || text.contains("refused"),
            "client failed for another reason than a server not yet listening: {text}"
        );
    }
    let c = out.expect("the client never succeeded within 15 s");
    let s = srv.wait_with_output().expect("server");
    let (so, co) = (
        String::from_utf8_lossy(&s.stdout),
        String::from_utf8_lossy(&c.stdout),
    );
    assert!(
        s.status.success(),
        "server failed: {so}{}",
        String::from_utf8_lossy(&s.stderr)
    );
    eprintln!("server:\n{so}client:\n{co}");
    // The data crossed the veth pair (4 MiB written and read back).
    let (rx1, tx1) = a.counters(&if_a);
    assert!(
        rx1 - rx0 >= 4 << 20,
        "received {} bytes on {if_a}",
        rx1 - rx0
    );
    assert!(tx1 - tx0 >= 4 << 20, "sent {} bytes on {if_a}", tx1 - tx0);
}
