//! Capture-and-decode harness around Wireshark's `tshark`, for checking that
//! the bytes this library puts on a TCP connection are what an independent
//! implementation of iWARP (Wireshark's `iwarp_mpa` and `iwarp_ddp_rdmap`
//! dissectors) decodes.
//!
//! Two ways to get a capture file:
//! - [`LiveCapture`]: `tshark -i lo` on real loopback traffic (needs capture
//!   rights: root or `CAP_NET_RAW`; [`LiveCapture::start`] reports
//!   [`Unavailable`] when the sandbox refuses);
//! - [`PcapWriter`]: a pcap file written here, one synthetic TCP/IPv4
//!   conversation per [`TcpFlow`] with correct sequence numbers and
//!   checksums; needs no privilege.
//!
//! Decoding: [`decode_iwarp`] runs `tshark -r` with [`IWARP_DECODE_ARGS`]
//! (MPA heuristic tried before port-based dissectors; the RPC-over-RDMA and
//! SMB Direct payload heuristics off, so that application bytes are not
//! taken for those protocols), parses its PDML into [`Packet`]s, and
//! collects every warning/error expert item, including those Wireshark
//! records without a tree item (from the `-z expert` table). [`Packet::iwarp`]
//! turns one packet into typed views ([`Iwarp`]) of what the dissectors
//! decoded, for assertions.
//!
//! What the dissectors (Wireshark 4.0) need to decode a capture:
//! - the MPA Request and Reply of each connection (the dissector learns
//!   from them that the connection is MPA and whether CRCs are used);
//! - each TCP segment starting with an MPA frame or FPDU. Frames are
//!   reassembled with TCP (an FPDU spread over several segments, or several
//!   FPDUs in one segment, decode), but with 4.0.17 an FPDU that starts in
//!   the middle of a segment and ends in a later one is left undecoded, and
//!   so is everything after it on that connection. Tests that compare frame
//!   by frame also want one frame per segment: write each with one
//!   `write()`/`writev()` under `TCP_NODELAY`, and let the peer read it
//!   before writing the next ([`Decoded::tcp_data`] then lists them in
//!   order).
//!
//! Known dissector limitations (not codec errors):
//! - MPA revision 2 (RFC 6581) is unknown: a Request with revision 2 earns
//!   the warning "Rev field is NOT set to one", its H flag (`0x10`) is shown
//!   as the reserved field and earns "Res field is NOT set to zero" (both
//!   in [`ALLOWED_EXPERT`]); the IRD/ORD word is shown as the first 4 bytes
//!   of the private data ([`MpaView::ird_ord`] decodes it).
//! - A Terminate's offending DDP header is taken as 14 bytes when the error
//!   type is 1 and 18 bytes otherwise, whatever the layer, instead of by the
//!   header's own T bit (RFC 5040): an RDMAP remote protection error (type
//!   one) naming an untagged segment, e.g. a Read Request, is shown with a
//!   14-byte DDP header and a misplaced RDMAP header.
//! - The CRC field is displayed as the wire bytes read big-endian, i.e. the
//!   CRC32c value byte-swapped; "Good CRC32" is the verdict to look at. A bad
//!   CRC is only a label, not an expert item: check [`CrcView`].
#![allow(dead_code)] // a shared harness: each test uses part of it

use std::fmt;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use udapl::transport::iwarp::wire::IrdOrd;

// ───────────────────────────── environment ─────────────────────────────

/// Why a tshark check cannot run on this machine; the test prints
/// `skipped: <reason>` and passes.
#[derive(Debug, Clone)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Print the standard skip line for `test`, straight to stderr so that the
/// test harness's output capture does not hide it.
pub fn skip(test: &str, why: &Unavailable) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// The tshark binary: `$TSHARK` if set, else `tshark` found on `PATH`.
/// `Err` when there is none (Debian: `apt-get install tshark`).
pub fn find_tshark() -> Result<PathBuf, Unavailable> {
    if let Some(p) = std::env::var_os("TSHARK") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Unavailable(format!(
                "$TSHARK={} is not a file",
                p.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join("tshark");
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(Unavailable(
        "tshark is not installed (Debian: apt-get install tshark)".into(),
    ))
}

/// First line of `tshark -v`, e.g. `TShark (Wireshark) 4.0.17 (...)`.
pub fn tshark_version(tshark: &Path) -> String {
    Command::new(tshark)
        .arg("-v")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "tshark (version unknown)".into())
}

/// A fresh directory under the system temp dir, removed on drop unless
/// `UDAPL_KEEP_PCAP` is set (then its path is printed, to open the captures
/// in Wireshark).
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("udapl-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("UDAPL_KEEP_PCAP").is_some() {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

// ───────────────────────────── live capture ─────────────────────────────

const START_PROBE: &[u8] = b"?";
const END_PROBE: &[u8] = b"udapl-end";
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(30);
/// Kernel capture buffer (`-B`, MiB): loopback bursts of 64 KiB segments
/// overflow the 2 MiB default, and dropped packets leave holes in the
/// streams the dissectors reassemble.
const CAPTURE_BUFFER_MIB: &str = "256";

/// `tshark -i lo` writing a pcapng file, limited to some TCP ports on
/// loopback.
///
/// Readiness and completeness are checked with UDP probes to a port of our
/// own, captured with the same filter: tshark prints one line per captured
/// packet (`-P -l -T fields`), so the first printed probe proves the capture
/// is live (tshark says "Capturing on" before it is), and the end probe,
/// sent after the traffic, proves everything before it is in the file when
/// it is printed. The probes stay in the file; [`decode_iwarp`] users look
/// at TCP packets only.
///
/// The kernel buffer is enlarged (bulk transfers on loopback come as 64 KiB
/// segments), and [`finish`](Self::finish) fails the test if tshark reports
/// dropped packets: a stream with holes cannot be checked.
///
/// The capture runs in the network namespace of the thread that calls
/// [`start`](Self::start) (tshark inherits it).
pub struct LiveCapture {
    child: Option<Child>,
    path: PathBuf,
    probe: UdpSocket,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<thread::JoinHandle<()>>,
}

impl LiveCapture {
    /// Start capturing on `lo` the TCP traffic to or from `tcp_ports` into
    /// `path`, and return once packets are really being captured.
    /// `Err(Unavailable)` when tshark cannot capture here (no permission,
    /// no loopback interface); other failures panic.
    pub fn start(
        tshark: &Path,
        tcp_ports: &[u16],
        path: &Path,
    ) -> Result<LiveCapture, Unavailable> {
        let probe = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind UDP probe socket");
        let probe_port = probe.local_addr().unwrap().port();
        let mut filter = format!("udp port {probe_port}");
        for p in tcp_ports {
            filter.push_str(&format!(" or tcp port {p}"));
        }
        let mut child = Command::new(tshark)
            .args(["-i", "lo", "-B", CAPTURE_BUFFER_MIB, "-f", &filter, "-w"])
            .arg(path)
            .args([
                "-P",
                "-l",
                "-T",
                "fields",
                "-e",
                "frame.number",
                "-e",
                "udp.length",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Unavailable(format!("cannot run {}: {e}", tshark.display())))?;

        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let stderr_reader = thread::spawn(move || {
            let mut r = BufReader::new(err_pipe);
            let mut buf = String::new();
            while r.read_line(&mut buf).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&buf);
                buf.clear();
            }
        });

        let mut cap = LiveCapture {
            child: Some(child),
            path: path.to_owned(),
            probe,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
        };
        let deadline = Instant::now() + CAPTURE_TIMEOUT;
        loop {
            cap.send_probe(START_PROBE);
            match cap.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(_) => break,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {}
            }
            if let Some(status) = cap.child.as_mut().unwrap().try_wait().unwrap() {
                // tshark gave up: typically no permission to capture.
                thread::sleep(Duration::from_millis(100));
                let err = cap.stderr_text();
                let err: Vec<&str> = err
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with("Capturing on"))
                    .take(2)
                    .collect();
                cap.child = None;
                return Err(Unavailable(format!(
                    "live capture on lo not possible here (tshark exited with {status}): {}",
                    err.join(" ")
                )));
            }
            assert!(
                Instant::now() < deadline,
                "tshark captured nothing on lo within {CAPTURE_TIMEOUT:?}; stderr: {}",
                cap.stderr_text()
            );
        }
        Ok(cap)
    }

    fn send_probe(&self, payload: &[u8]) {
        let me = self.probe.local_addr().unwrap();
        let _ = self.probe.send_to(payload, me);
    }

    fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait until everything sent before this call has been written to the
    /// file, stop tshark (SIGINT) and return the file's path. Panics if
    /// tshark dropped packets.
    pub fn finish(mut self) -> PathBuf {
        let want = (8 + END_PROBE.len()).to_string();
        let deadline = Instant::now() + CAPTURE_TIMEOUT;
        self.send_probe(END_PROBE);
        let mut last_probe = Instant::now();
        loop {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) if line.split('\t').nth(1) == Some(want.as_str()) => break,
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("tshark stopped early; stderr: {}", self.stderr_text())
                }
            }
            assert!(
                Instant::now() < deadline,
                "tshark did not capture the end probe; stderr: {}",
                self.stderr_text()
            );
            if last_probe.elapsed() > Duration::from_secs(1) {
                // A lost datagram is unlikely on lo, but cheap to cover.
                self.send_probe(END_PROBE);
                last_probe = Instant::now();
            }
        }
        self.stop();
        let dropped = self.dropped();
        assert!(
            dropped.is_empty(),
            "the capture is incomplete (tshark: {}); the streams cannot be checked",
            dropped.join("; ")
        );
        self.path.clone()
    }

    /// tshark's "N packets dropped" lines with N > 0, once it has exited.
    fn dropped(&mut self) -> Vec<String> {
        if let Some(h) = self.stderr_reader.take() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !h.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
        self.stderr_text()
            .lines()
            .map(str::trim)
            .filter(|l| l.contains("dropped"))
            .filter(|l| {
                l.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            })
            .map(str::to_owned)
            .collect()
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGINT lets tshark stop dumpcap and close the file cleanly.
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.wait();
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        self.stop();
    }
}

// ───────────────────────────── pcap writer ─────────────────────────────

/// A classic pcap file (microsecond timestamps, link type RAW: each record
/// is an IPv4 packet), written in memory and saved with [`save`](Self::save).
pub struct PcapWriter {
    buf: Vec<u8>,
    usec: u64,
    ip_id: u16,
}

const LINKTYPE_RAW: u32 = 101;

impl Default for PcapWriter {
    fn default() -> Self {
        PcapWriter::new()
    }
}

impl PcapWriter {
    pub fn new() -> PcapWriter {
        let mut buf = Vec::new();
        buf.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        buf.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        buf.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
        buf.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        PcapWriter {
            buf,
            usec: 1_700_000_000_000_000,
            ip_id: 1,
        }
    }

    /// Append one IPv4 packet; packets are 10 µs apart.
    fn record(&mut self, packet: &[u8]) {
        self.usec += 10;
        let (s, us) = (self.usec / 1_000_000, self.usec % 1_000_000);
        self.buf.extend_from_slice(&(s as u32).to_le_bytes());
        self.buf.extend_from_slice(&(us as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&(packet.len() as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&(packet.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(packet);
    }

    fn next_ip_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    pub fn save(&self, path: &Path) {
        fs::write(path, &self.buf).expect("write pcap file");
    }
}

/// Internet checksum (RFC 1071) of `parts` concatenated.
fn inet_checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &b in *part {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// One synthetic TCP connection between two IPv4 endpoints, written into a
/// [`PcapWriter`]: handshake, one segment per [`send`](Self::send) (each
/// acknowledged by the peer), and a FIN exchange. Sequence and
/// acknowledgement numbers and the IPv4/TCP checksums are correct, so that
/// tshark's TCP analysis sees a clean stream.
pub struct TcpFlow {
    addr: [Ipv4Addr; 2],
    port: [u16; 2],
    /// Next sequence number of each side.
    seq: [u32; 2],
}

impl TcpFlow {
    /// Side 0 (the client, `client` address and port) connects to side 1;
    /// writes the three-way handshake.
    pub fn connect(
        pcap: &mut PcapWriter,
        client: (Ipv4Addr, u16),
        server: (Ipv4Addr, u16),
        isn: [u32; 2],
    ) -> TcpFlow {
        let mut f = TcpFlow {
            addr: [client.0, server.0],
            port: [client.1, server.1],
            seq: isn,
        };
        f.segment(pcap, 0, TCP_SYN, &[], false);
        f.seq[0] = f.seq[0].wrapping_add(1);
        f.segment(pcap, 1, TCP_SYN | TCP_ACK, &[], true);
        f.seq[1] = f.seq[1].wrapping_add(1);
        f.segment(pcap, 0, TCP_ACK, &[], true);
        f
    }

    /// One data segment from side `from` (0 client, 1 server) carrying
    /// `payload`, then the peer's pure ACK.
    pub fn send(&mut self, pcap: &mut PcapWriter, from: usize, payload: &[u8]) {
        self.segment(pcap, from, TCP_PSH | TCP_ACK, payload, true);
        self.seq[from] = self.seq[from].wrapping_add(payload.len() as u32);
        self.segment(pcap, 1 - from, TCP_ACK, &[], true);
    }

    /// FIN from the client, FIN+ACK from the server, final ACK.
    pub fn close(mut self, pcap: &mut PcapWriter) {
        self.segment(pcap, 0, TCP_FIN | TCP_ACK, &[], true);
        self.seq[0] = self.seq[0].wrapping_add(1);
        self.segment(pcap, 1, TCP_FIN | TCP_ACK, &[], true);
        self.seq[1] = self.seq[1].wrapping_add(1);
        self.segment(pcap, 0, TCP_ACK, &[], true);
    }

    fn segment(
        &mut self,
        pcap: &mut PcapWriter,
        from: usize,
        flags: u8,
        payload: &[u8],
        ack: bool,
    ) {
        let to = 1 - from;
        let (src, dst) = (self.addr[from].octets(), self.addr[to].octets());
        let mut tcp = Vec::with_capacity(20 + payload.len());
        tcp.extend_from_slice(&self.port[from].to_be_bytes());
        tcp.extend_from_slice(&self.port[to].to_be_bytes());
        tcp.extend_from_slice(&self.seq[from].to_be_bytes());
        tcp.extend_from_slice(&(if ack { self.seq[to] } else { 0 }).to_be_bytes());
        tcp.push(5 << 4); // data offset: 20 bytes, no options
        tcp.push(flags);
        tcp.extend_from_slice(&65535u16.to_be_bytes()); // window
        tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        tcp.extend_from_slice(payload);
        let tcp_len = (tcp.len() as u16).to_be_bytes();
        let pseudo = [
            src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2], dst[3], 0, 6, tcp_len[0],
            tcp_len[1],
        ];
        let sum = inet_checksum(&[&pseudo, &tcp]);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());

        let total = (20 + tcp.len()) as u16;
        let mut ip = Vec::with_capacity(usize::from(total));
        ip.extend_from_slice(&[0x45, 0]);
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&pcap.next_ip_id().to_be_bytes());
        ip.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
        ip.extend_from_slice(&[64, 6, 0, 0]); // TTL, TCP, checksum
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let sum = inet_checksum(&[&ip]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip.extend_from_slice(&tcp);
        pcap.record(&ip);
    }
}

// ───────────────────────────── decoding ─────────────────────────────

/// tshark options for iWARP on any TCP port: try the MPA heuristic before
/// port-based dissectors, and keep application payload as raw data.
pub const IWARP_DECODE_ARGS: &[&str] = &[
    "--enable-heuristic",
    "iwarp_mpa_tcp",
    "-o",
    "tcp.try_heuristic_first:TRUE",
    "--disable-heuristic",
    "rpcrdma_iwarp",
    "--disable-heuristic",
    "smb_direct_iwarp",
];

/// Extra options for synthetic files: verify the IPv4 and TCP checksums
/// (pointless on live loopback captures, whose checksums are left to
/// offload and read as bad).
pub const CHECKSUM_ARGS: &[&str] = &[
    "-o",
    "ip.check_checksum:TRUE",
    "-o",
    "tcp.check_checksum:TRUE",
];

/// Expert items that Wireshark's iWARP dissectors raise on correct traffic
/// (protocol, summary, why it is not a fault).
pub const ALLOWED_EXPERT: &[(&str, &str, &str)] = &[
    (
        "IWARP_MPA",
        "Rev field is NOT set to one as required by RFC 5044",
        "the dissector predates RFC 6581 (MPA revision 2)",
    ),
    (
        "IWARP_MPA",
        "Res field is NOT set to zero as required by RFC 5044",
        "the dissector predates RFC 6581: its reserved field includes H (0x10)",
    ),
];

/// One field (or protocol) element of tshark's PDML output.
#[derive(Clone, Debug, Default)]
pub struct Field {
    pub name: String,
    /// The label as Wireshark displays it, e.g. `CRC check: 0x… (Good CRC32)`.
    pub showname: String,
    /// The value as text, e.g. `0x00001234`, `2`, `1` (booleans).
    pub show: String,
    /// The raw bytes (or masked value) as hex without separators.
    pub value: String,
    pub pos: usize,
    pub size: usize,
    /// A `<proto>` element (a protocol layer) rather than a `<field>`.
    pub proto: bool,
}

impl Field {
    /// The value as an unsigned number (`show` in decimal or `0x` hex).
    pub fn uint(&self) -> Option<u64> {
        parse_uint(&self.show)
    }

    /// The field's bytes (from `value`).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        hex_bytes(&self.value)
    }
}

fn parse_uint(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let s: String = s.chars().filter(|c| *c != ':').collect();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// One captured packet: its PDML elements in document order.
#[derive(Clone, Debug, Default)]
pub struct Packet {
    pub fields: Vec<Field>,
}

impl Packet {
    pub fn first(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
        self.fields.iter().filter(move |f| f.name == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.first(name).is_some()
    }

    pub fn uint(&self, name: &str) -> Option<u64> {
        self.first(name).and_then(Field::uint)
    }

    pub fn number(&self) -> u64 {
        self.uint("frame.number").unwrap_or(0)
    }

    /// The TCP payload bytes (none for pure ACKs and non-TCP packets).
    pub fn tcp_payload(&self) -> Option<Vec<u8>> {
        self.first("tcp.payload").and_then(Field::bytes)
    }

    pub fn tcp_ports(&self) -> Option<(u16, u16)> {
        Some((
            self.uint("tcp.srcport")? as u16,
            self.uint("tcp.dstport")? as u16,
        ))
    }

    /// Expert items of this packet at warning level or above, and
    /// malformed-packet markers, as `"<severity>: <message>"`.
    pub fn problems(&self) -> Vec<String> {
        const SEVERITY_WARN: u64 = 0x0060_0000;
        let mut out = Vec::new();
        let mut msg = None;
        for f in &self.fields {
            match f.name.as_str() {
                "_ws.expert.message" => msg = Some(f.show.clone()),
                "_ws.expert.severity" if f.uint().unwrap_or(0) >= SEVERITY_WARN => {
                    out.push(format!(
                        "{}: {}",
                        f.showname,
                        msg.take().unwrap_or_default()
                    ));
                }
                "_ws.malformed" => out.push(f.showname.clone()),
                _ => {}
            }
        }
        out
    }

    /// The MPA frames and FPDUs tshark decoded in this packet, in order.
    pub fn iwarp(&self) -> Vec<Iwarp> {
        parse_iwarp(self)
    }
}

/// A row of `tshark -z expert`: severity section, group, protocol, summary.
#[derive(Clone, Debug)]
pub struct ExpertRow {
    pub severity: String,
    pub count: u64,
    pub group: String,
    pub protocol: String,
    pub summary: String,
}

/// The result of decoding a capture file.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub packets: Vec<Packet>,
    /// Every expert item at warning level or above (including items
    /// Wireshark attaches to no tree node, which PDML omits).
    pub expert: Vec<ExpertRow>,
}

impl Decoded {
    /// Warning/error expert rows not listed in `allowed` (protocol,
    /// summary, reason), plus per-packet problems; empty when the decode
    /// is clean.
    pub fn problems(&self, allowed: &[(&str, &str, &str)]) -> Vec<String> {
        let mut out: Vec<String> = self
            .expert
            .iter()
            .filter(|r| {
                !allowed
                    .iter()
                    .any(|(p, s, _)| r.protocol == *p && r.summary == *s)
            })
            .map(|r| {
                format!(
                    "{} x{} [{}] {}: {}",
                    r.severity, r.count, r.group, r.protocol, r.summary
                )
            })
            .collect();
        for p in &self.packets {
            for msg in p.problems() {
                let allowed_msg = allowed.iter().any(|(_, s, _)| msg.ends_with(s));
                if !allowed_msg {
                    out.push(format!("frame {}: {msg}", p.number()));
                }
            }
        }
        out
    }

    /// Packets with TCP payload, in capture order.
    pub fn tcp_data(&self) -> impl Iterator<Item = &Packet> {
        self.packets.iter().filter(|p| p.has("tcp.payload"))
    }
}

/// Decode `file` with the iWARP dissectors: `tshark -r file -T pdml -z
/// expert,warn` with [`IWARP_DECODE_ARGS`] and `extra`.
pub fn decode_iwarp(tshark: &Path, file: &Path, extra: &[&str]) -> Decoded {
    let run = |args: &[&str]| -> String {
        let out = Command::new(tshark)
            .arg("-n")
            .arg("-r")
            .arg(file)
            .args(IWARP_DECODE_ARGS)
            .args(extra)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tshark");
        assert!(
            out.status.success(),
            "tshark -r {} {:?} failed ({}): {}",
            file.display(),
            args,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("tshark output is UTF-8")
    };
    // One pass: the PDML document, then the expert table after it.
    let out = run(&["-T", "pdml", "-z", "expert,warn"]);
    let (pdml, expert) = match out.find("</pdml>") {
        Some(i) => out.split_at(i + "</pdml>".len()),
        None => (out.as_str(), ""),
    };
    Decoded {
        packets: parse_pdml(pdml),
        expert: parse_expert(expert),
    }
}

/// Parse `tshark -T pdml` into packets (flat element lists). Only the
/// `<field>` and `<proto>` start tags matter; the rest is skipped.
pub fn parse_pdml(text: &str) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut cur: Option<Packet> = None;
    let mut rest = text;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt + 1..];
        let end = tag_end(rest);
        let tag = &rest[..end];
        rest = &rest[(end + 1).min(rest.len())..];
        // The name runs to the first blank or '/' after its first character
        // (which is '/' in an end tag).
        let name_end = tag
            .char_indices()
            .skip(1)
            .find(|&(_, c)| c.is_whitespace() || c == '/')
            .map_or(tag.len(), |(i, _)| i);
        match &tag[..name_end] {
            "packet" => cur = Some(Packet::default()),
            "/packet" => packets.extend(cur.take()),
            kind @ ("field" | "proto") => {
                if let Some(p) = cur.as_mut() {
                    let mut f = parse_attrs(&tag[name_end..]);
                    f.proto = kind == "proto";
                    p.fields.push(f);
                }
            }
            _ => {}
        }
    }
    packets
}

/// Index of the `>` closing a tag, outside quoted attribute values.
fn tag_end(s: &str) -> usize {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' if !quoted => return i,
            _ => {}
        }
    }
    s.len()
}

fn parse_attrs(mut s: &str) -> Field {
    let mut f = Field::default();
    loop {
        s = s.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        let Some(eq) = s.find('=') else { break };
        let key = s[..eq].trim();
        let after = &s[eq + 1..];
        let Some(after) = after.strip_prefix('"') else {
            break;
        };
        let Some(close) = after.find('"') else { break };
        let val = xml_unescape(&after[..close]);
        s = &after[close + 1..];
        match key {
            "name" => f.name = val,
            "showname" => f.showname = val,
            "show" => f.show = val,
            "value" => f.value = val,
            "pos" => f.pos = val.parse().unwrap_or(0),
            "size" => f.size = val.parse().unwrap_or(0),
            _ => {}
        }
    }
    f
}

fn xml_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';') else { break };
        let ent = &rest[1..semi];
        let ch = match ent {
            "quot" => Some('"'),
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parse the tables of `tshark -q -z expert[,level]`.
pub fn parse_expert(text: &str) -> Vec<ExpertRow> {
    let mut rows = Vec::new();
    let mut severity: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some((word, _)) = t.split_once(" (") {
            if matches!(word, "Errors" | "Warns" | "Notes" | "Chats" | "Comments")
                && t.ends_with(')')
            {
                severity = Some(word.to_owned());
                continue;
            }
        }
        let Some(sev) = &severity else { continue };
        let mut it = t.split_whitespace();
        let (Some(count), Some(group), Some(protocol)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(count) = count.parse() else { continue };
        rows.push(ExpertRow {
            severity: sev.clone(),
            count,
            group: group.to_owned(),
            protocol: protocol.to_owned(),
            summary: it.collect::<Vec<_>>().join(" "),
        });
    }
    rows
}

// ───────────────────────────── iWARP views ─────────────────────────────

/// What tshark decoded for one MPA frame or FPDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Iwarp {
    Request(MpaView),
    Reply(MpaView),
    Fpdu(FpduView),
}

/// An MPA Request or Reply as tshark shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpaView {
    pub markers: bool,
    pub crc: bool,
    pub reject: bool,
    /// The low five flag bits: Wireshark 4.0 counts H (`0x10`) as reserved.
    pub reserved: u8,
    pub revision: u8,
    pub pd_len: u16,
    /// The private data as tshark delimits it (IRD/ORD word included).
    pub private_data: Vec<u8>,
}

impl MpaView {
    /// H, read from the bit tshark calls reserved.
    pub fn enhanced(&self) -> bool {
        self.reserved & 0x10 != 0
    }

    /// The IRD/ORD word (first 4 bytes of the private data under H),
    /// decoded here: tshark 4.0 does not know RFC 6581.
    pub fn ird_ord(&self) -> Option<IrdOrd> {
        if !self.enhanced() || self.private_data.len() < 4 {
            return None;
        }
        let w = [
            self.private_data[0],
            self.private_data[1],
            self.private_data[2],
            self.private_data[3],
        ];
        Some(IrdOrd::decode(w))
    }
}

/// The FPDU CRC field as tshark judged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrcView {
    /// CRC in use on the connection and the field matches.
    Good(u32),
    /// CRC in use and the field does not match.
    Bad(u32),
    /// CRC not in use: the field's value (zeros from a correct sender).
    Unchecked(u32),
    /// No CRC field decoded.
    Missing,
}

/// A DDP segment's placement fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Tagged { stag: u32, to: u64 },
    Untagged { qn: u32, msn: u32, mo: u32 },
}

/// An RDMA Read Request's RDMAP header as tshark shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequestView {
    pub sink_stag: u32,
    pub sink_to: u64,
    pub size: u32,
    pub source_stag: u32,
    pub source_to: u64,
}

/// A Terminate body as tshark shows it (RFC 5040 layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminateView {
    pub layer: u8,
    pub etype: u8,
    pub code: u8,
    pub m: bool,
    pub d: bool,
    pub r: bool,
    pub reserved: u16,
    /// The raw 2-byte DDP segment length (shown only with D).
    pub segment_len: Option<Vec<u8>>,
    pub ddp_header: Option<Vec<u8>>,
    pub rdmap_header: Option<Vec<u8>>,
    /// The labels tshark gives layer, error type and code.
    pub labels: Vec<String>,
}

/// One FPDU as tshark decoded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FpduView {
    pub ulpdu_len: u16,
    pub pad_len: usize,
    pub crc: CrcView,
    pub tagged: bool,
    pub last: bool,
    pub ddp_version: u8,
    pub rdmap_version: u8,
    pub opcode: u8,
    /// The opcode's name in tshark's display.
    pub opcode_name: String,
    pub placement: Option<Placement>,
    pub read_request: Option<ReadRequestView>,
    pub terminate: Option<TerminateView>,
    /// Invalidate STag (Send with Invalidate kinds).
    pub invalidate: Option<u32>,
}

fn flag(f: &Field) -> bool {
    f.uint().unwrap_or(0) != 0
}

fn label_value(showname: &str) -> String {
    showname
        .split_once(": ")
        .map_or(showname, |(_, v)| v)
        .to_owned()
}

/// Split a packet's fields into per-protocol runs and read each iWARP one.
fn parse_iwarp(p: &Packet) -> Vec<Iwarp> {
    let mut out = Vec::new();
    let fields = &p.fields;
    let mut i = 0;
    while i < fields.len() {
        if fields[i].proto && fields[i].name == "iwarp_mpa" {
            // The MPA element's fields run until the next protocol element;
            // the DDP/RDMAP element that follows an FPDU belongs to it.
            let start = i + 1;
            let mut end = start;
            while end < fields.len() && !fields[end].proto {
                end += 1;
            }
            let mpa = &fields[start..end];
            let mut ddp: &[Field] = &[];
            if end < fields.len() && fields[end].name == "iwarp_ddp_rdmap" {
                let s = end + 1;
                let mut e = s;
                while e < fields.len() && !fields[e].proto {
                    e += 1;
                }
                ddp = &fields[s..e];
                end = e;
            }
            if let Some(v) = parse_one(mpa, ddp) {
                out.push(v);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

fn parse_one(mpa: &[Field], ddp: &[Field]) -> Option<Iwarp> {
    let get = |fs: &[Field], n: &str| fs.iter().find(|f| f.name == n).cloned();
    let u = |fs: &[Field], n: &str| get(fs, n).and_then(|f| f.uint());
    if get(mpa, "iwarp_mpa.req").is_some() || get(mpa, "iwarp_mpa.rep").is_some() {
        let view = MpaView {
            markers: get(mpa, "iwarp_mpa.marker_flag").is_some_and(|f| flag(&f)),
            crc: get(mpa, "iwarp_mpa.crc_flag").is_some_and(|f| flag(&f)),
            reject: get(mpa, "iwarp_mpa.rej_flag").is_some_and(|f| flag(&f)),
            reserved: u(mpa, "iwarp_mpa.res").unwrap_or(0) as u8,
            revision: u(mpa, "iwarp_mpa.rev").unwrap_or(0) as u8,
            pd_len: u(mpa, "iwarp_mpa.pdlength").unwrap_or(0) as u16,
            private_data: get(mpa, "iwarp_mpa.privatedata")
                .and_then(|f| f.bytes())
                .unwrap_or_default(),
        };
        return Some(if get(mpa, "iwarp_mpa.req").is_some() {
            Iwarp::Request(view)
        } else {
            Iwarp::Reply(view)
        });
    }
    get(mpa, "iwarp_mpa.fpdu")?;
    let crc = if let Some(f) = get(mpa, "iwarp_mpa.crc_check") {
        let v = f.uint().unwrap_or(0) as u32;
        if f.showname.contains("Good CRC32") {
            CrcView::Good(v)
        } else {
            CrcView::Bad(v)
        }
    } else if let Some(f) = get(mpa, "iwarp_mpa.crc") {
        CrcView::Unchecked(f.uint().unwrap_or(0) as u32)
    } else {
        CrcView::Missing
    };
    let opcode = u(ddp, "iwarp_rdma.opcode").unwrap_or(0xFF) as u8;
    let placement = if let Some(stag) = u(ddp, "iwarp_ddp.stag") {
        Some(Placement::Tagged {
            stag: stag as u32,
            to: get(ddp, "iwarp_ddp.tagged_offset")
                .and_then(|f| f.uint().or_else(|| f.bytes().map(be_uint)))
                .unwrap_or(0),
        })
    } else {
        u(ddp, "iwarp_ddp.qn").map(|qn| Placement::Untagged {
            qn: qn as u32,
            msn: u(ddp, "iwarp_ddp.msn").unwrap_or(0) as u32,
            mo: u(ddp, "iwarp_ddp.mo").unwrap_or(0) as u32,
        })
    };
    let read_request = u(ddp, "iwarp_rdma.sinkstag").map(|sink_stag| ReadRequestView {
        sink_stag: sink_stag as u32,
        sink_to: u(ddp, "iwarp_rdma.sinkto").unwrap_or(0),
        size: u(ddp, "iwarp_rdma.rdmardsz").unwrap_or(0) as u32,
        source_stag: u(ddp, "iwarp_rdma.srcstag").unwrap_or(0) as u32,
        source_to: get(ddp, "iwarp_rdma.srcto")
            .and_then(|f| f.uint().or_else(|| f.bytes().map(be_uint)))
            .unwrap_or(0),
    });
    let terminate = get(ddp, "iwarp_rdma.terminate").map(|_| {
        let pick = |prefix: &str| {
            ddp.iter()
                .find(|f| f.name.starts_with(prefix))
                .cloned()
                .unwrap_or_default()
        };
        let layer = pick("iwarp_rdma.term_layer");
        let etype = pick("iwarp_rdma.term_etype");
        let code = pick("iwarp_rdma.term_errcode");
        TerminateView {
            layer: layer.uint().unwrap_or(0xFF) as u8,
            etype: etype.uint().unwrap_or(0xFF) as u8,
            code: code.uint().unwrap_or(0xFFFF) as u8,
            m: get(ddp, "iwarp_rdma.term_hdrct_m").is_some_and(|f| flag(&f)),
            d: get(ddp, "iwarp_rdma.hdrct_d").is_some_and(|f| flag(&f)),
            r: get(ddp, "iwarp_rdma.hdrct_r").is_some_and(|f| flag(&f)),
            reserved: u(ddp, "iwarp_rdma.term_rsvd").unwrap_or(0) as u16,
            segment_len: get(ddp, "iwarp_rdma.term_ddp_seg_len").and_then(|f| f.bytes()),
            ddp_header: get(ddp, "iwarp_rdma.term_ddp_h").and_then(|f| f.bytes()),
            rdmap_header: get(ddp, "iwarp_rdma.term_rdma_h").and_then(|f| f.bytes()),
            labels: [layer, etype, code]
                .iter()
                .map(|f| label_value(&f.showname))
                .collect(),
        }
    });
    Some(Iwarp::Fpdu(FpduView {
        ulpdu_len: u(mpa, "iwarp_mpa.ulpdulength").unwrap_or(0) as u16,
        pad_len: get(mpa, "iwarp_mpa.pad").map_or(0, |f| f.size),
        crc,
        tagged: get(ddp, "iwarp_ddp.tagged_flag").is_some_and(|f| flag(&f)),
        last: get(ddp, "iwarp_ddp.last_flag").is_some_and(|f| flag(&f)),
        ddp_version: u(ddp, "iwarp_ddp.dv").unwrap_or(0xFF) as u8,
        rdmap_version: u(ddp, "iwarp_rdma.version").unwrap_or(0xFF) as u8,
        opcode,
        opcode_name: get(ddp, "iwarp_rdma.opcode")
            .map(|f| label_value(&f.showname))
            .unwrap_or_default(),
        placement,
        read_request,
        terminate,
        invalidate: u(ddp, "iwarp_rdma.inval_stag").map(|v| v as u32),
    }))
}

fn be_uint(b: Vec<u8>) -> u64 {
    b.iter().fold(0, |acc, &x| (acc << 8) | u64::from(x))
}

/// Read whatever `r` yields until EOF (helper for tests that drain a
/// socket).
pub fn drain(mut r: impl Read) -> usize {
    let mut n = 0;
    let mut buf = [0u8; 4096];
    while let Ok(k) = r.read(&mut buf) {
        if k == 0 {
            break;
        }
        n += k;
    }
    n
}
