//! The engine's tests: two engines wired back to back in memory.

use super::*;
use crate::transport::iwarp::wire::{FpduReader, RxEvent};
use crate::transport::soft::keys::Region;
use crate::transport::soft::memio;

const PD: u64 = 7;
const ALL: Access = Access::LOCAL_READ
    .union(Access::LOCAL_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// Registered test memory; the Vec never grows, so its address is stable.
struct Mem {
    v: Vec<u8>,
    lkey: u32,
    rkey: u32,
}

impl Mem {
    fn addr(&self) -> u64 {
        self.v.as_ptr() as u64
    }
    fn sge(&self, off: usize, len: usize) -> Sge {
        Sge {
            addr: self.addr() + off as u64,
            len: len as u64,
            lkey: self.lkey,
        }
    }
}

struct Side {
    conn: Conn,
    keys: KeyTable,
    wcs: Vec<Wc>,
    reader: FpduReader,
    inbox: Vec<u8>,
    pos: usize,
    pending: Option<Segment>,
    faults: Vec<Fault>,
    /// Copied at every receive completion: (addr, len) to snapshot.
    watch: Option<(u64, usize)>,
    snapshots: Vec<Vec<u8>>,
}

impl Side {
    fn new(cfg: ConnConfig, neg: Negotiated) -> Side {
        Side {
            conn: Conn::new(cfg, neg).expect("queues"),
            keys: KeyTable::new(),
            wcs: Vec::new(),
            reader: FpduReader::new(neg.crc),
            inbox: Vec::new(),
            pos: 0,
            pending: None,
            faults: Vec::new(),
            watch: None,
            snapshots: Vec::new(),
        }
    }

    fn mem(&self, len: usize, rights: Access, pz: u64) -> Mem {
        let v: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let addr = v.as_ptr() as u64;
        let (idx, lkey) = self
            .keys
            .register(Region {
                addr,
                len: len as u64,
                rights,
                pz,
            })
            .expect("register");
        let rkey = if rights.is_remote() {
            self.keys
                .grant_remote(idx, addr, len as u64, rights)
                .expect("grant")
        } else {
            0
        };
        Mem { v, lkey, rkey }
    }

    fn send(&mut self, wr_id: u64, op: SendOp, sgl: &[Sge], signaled: bool, fence: bool) {
        let wr = SendWr {
            wr_id,
            ctx: 0,
            op,
            sgl,
            signaled,
            fence,
        };
        self.conn.post_send(&wr, &self.keys).expect("post_send");
    }

    fn recv(&mut self, wr_id: u64, sgl: &[Sge]) {
        self.conn
            .post_recv(&RecvWr { wr_id, ctx: 0, sgl }, &self.keys)
            .expect("post_recv");
    }

    /// Writes every FPDU the engine has into `out`; returns how many.
    fn transmit(&mut self, out: &mut Vec<u8>) -> usize {
        let mut plan = TxPlan::new();
        let mut n = 0;
        while self.conn.next_tx(&mut plan) {
            out.extend_from_slice(plan.head());
            out.extend_from_slice(plan.inline());
            for p in plan.pieces().to_vec() {
                // The pieces lie in the test's live registered Vecs.
                let mut b = vec![0u8; p.len as usize];
                memio::read_app(p.addr, &mut b).expect("read piece");
                out.extend_from_slice(&b);
                plan.payload(&b).expect("payload");
            }
            out.extend_from_slice(plan.trailer().expect("trailer"));
            let wcs = &mut self.wcs;
            self.conn.tx_done(&mut |wc| wcs.push(wc));
            n += 1;
        }
        n
    }

    /// Processes the inbox; returns whether anything was consumed.
    fn receive(&mut self) -> bool {
        let start = (self.pos, self.pending.is_some());
        let mut progressed = false;
        loop {
            if !self.faults.is_empty() {
                return progressed;
            }
            let seg = match self.pending.take() {
                Some(s) => s,
                None => {
                    if self.pos == self.inbox.len() {
                        return progressed || self.pos != start.0;
                    }
                    let fed = self.reader.feed(&self.inbox[self.pos..]).expect("framing");
                    self.pos += fed.consumed;
                    match fed.event {
                        Some(RxEvent::Segment(s)) => s,
                        Some(RxEvent::Done) => {
                            let wcs = &mut self.wcs;
                            let before = wcs.len();
                            let r = self.conn.rx_done(&mut |wc| wcs.push(wc));
                            if let Some((a, l)) = self.watch {
                                if self.wcs[before..].iter().any(|w| w.op == WcOp::Recv) {
                                    let mut b = vec![0u8; l];
                                    memio::read_app(a, &mut b).expect("a live test buffer");
                                    self.snapshots.push(b);
                                }
                            }
                            if let Err(f) = r {
                                self.faults.push(f);
                            }
                            continue;
                        }
                        None => continue,
                    }
                }
            };
            let mut plan = RxPlan::new();
            let wcs = &mut self.wcs;
            match self
                .conn
                .rx_header(&seg, &self.keys, &mut plan, &mut |wc| wcs.push(wc))
            {
                Ok(RxAction::NotReady) => {
                    self.pending = Some(seg);
                    return progressed || self.pos != start.0;
                }
                Ok(RxAction::Place) => {
                    let mut total = 0;
                    for p in plan.pieces() {
                        let src = &self.inbox[self.pos..self.pos + p.len as usize];
                        // The engine checked the range against live test buffers.
                        memio::write_app(src, p.addr).expect("place");
                        self.reader.placed(src).expect("placed");
                        self.pos += src.len();
                        total += src.len();
                    }
                    assert_eq!(total, seg.payload_len, "placement covers the payload");
                }
                Ok(RxAction::Inline(n)) => {
                    let src = &self.inbox[self.pos..self.pos + n];
                    self.conn.rx_inline()[..n].copy_from_slice(src);
                    self.reader.placed(src).expect("placed");
                    self.pos += n;
                }
                Err(f) => self.faults.push(f),
            }
            progressed = true;
        }
    }

    fn take(&mut self) -> Vec<Wc> {
        std::mem::take(&mut self.wcs)
    }
}

fn cfg(qp: QpNum) -> ConnConfig {
    ConnConfig {
        send_depth: 16,
        recv_depth: 16,
        max_sge: 4,
        ord: 2,
        ird: 2,
        qp,
        pd: PD,
    }
}

fn neg(crc: bool, ack_reads: bool) -> Negotiated {
    Negotiated {
        crc,
        max_fpdu: 65535,
        ird: 3,
        ord: 3,
        ack_reads,
    }
}

fn pair(crc: bool, ack: bool) -> (Side, Side) {
    (
        Side::new(cfg(1), neg(crc, ack)),
        Side::new(cfg(2), neg(crc, ack)),
    )
}

/// Moves bytes both ways until nothing moves.
fn pump(a: &mut Side, b: &mut Side) {
    for _ in 0..1000 {
        let mut moved = a.transmit(&mut b.inbox) + b.transmit(&mut a.inbox);
        moved += usize::from(b.receive()) + usize::from(a.receive());
        if moved == 0 {
            return;
        }
    }
    panic!("pump does not settle");
}

fn ok(wr_id: u64, op: WcOp, len: u64, qp: QpNum) -> Wc {
    Wc {
        wr_id,
        ctx: 0,
        implicit: 0,
        status: WcStatus::Success,
        op,
        byte_len: len,
        qp,
        solicited: false,
    }
}

const SEND: SendOp = SendOp::Send { solicited: false };

#[test]
fn send_recv_0_1_and_100k_bytes_with_and_without_crc() {
    for crc in [false, true] {
        for ack in [false, true] {
            let (mut a, mut b) = pair(crc, ack);
            let src = a.mem(100 * 1024, ALL, PD);
            let mut dst = b.mem(100 * 1024, ALL, PD);
            dst.v.fill(0);
            for (i, len) in [0usize, 1, 100 * 1024].into_iter().enumerate() {
                b.recv(10 + i as u64, &[dst.sge(0, 100 * 1024)]);
                a.send(i as u64, SEND, &[src.sge(0, len)], true, false);
                pump(&mut a, &mut b);
                assert_eq!(
                    a.take(),
                    [ok(i as u64, WcOp::Send, len as u64, 1)],
                    "crc {crc} ack {ack}"
                );
                assert_eq!(b.take(), [ok(10 + i as u64, WcOp::Recv, len as u64, 2)]);
                assert_eq!(dst.v[..len], src.v[..len]);
            }
            assert!(a.faults.is_empty() && b.faults.is_empty());
        }
    }
}

#[test]
fn send_recv_multi_sge_on_both_sides_over_small_fpdus() {
    let mut n = neg(true, true);
    n.max_fpdu = 128;
    let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
    let src = a.mem(1000, ALL, PD);
    let mut dst = b.mem(1000, ALL, PD);
    dst.v.fill(0);
    a.send(
        1,
        SEND,
        &[src.sge(0, 100), src.sge(500, 300), src.sge(100, 1)],
        true,
        false,
    );
    b.recv(2, &[dst.sge(0, 50), dst.sge(600, 7), dst.sge(100, 400)]);
    pump(&mut a, &mut b);
    assert_eq!(b.take(), [ok(2, WcOp::Recv, 401, 2)]);
    assert_eq!(a.take(), [ok(1, WcOp::Send, 401, 1)]);
    let mut want = src.v[0..100].to_vec();
    want.extend_from_slice(&src.v[500..800]);
    want.push(src.v[100]);
    let mut got = dst.v[0..50].to_vec();
    got.extend_from_slice(&dst.v[600..607]);
    got.extend_from_slice(&dst.v[100..444]);
    assert_eq!(got, want);
    assert!(
        dst.v[444..500].iter().all(|&x| x == 0),
        "nothing beyond the message"
    );
}

#[test]
fn rdma_write_spans_several_fpdus() {
    let mut n = neg(false, true);
    n.max_fpdu = 1500;
    let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
    let src = a.mem(20000, ALL, PD);
    let mut dst = b.mem(30000, ALL, PD);
    dst.v.fill(0);
    let op = SendOp::RdmaWrite {
        remote_addr: dst.addr() + 5000,
        rkey: dst.rkey,
    };
    a.send(
        9,
        op,
        &[src.sge(0, 12000), src.sge(15000, 5000)],
        true,
        false,
    );
    let mut wire = Vec::new();
    let fpdus = a.transmit(&mut wire);
    assert!(fpdus > 12, "{fpdus} FPDUs, one ack read");
    b.inbox = wire;
    pump(&mut a, &mut b);
    assert_eq!(a.take(), [ok(9, WcOp::RdmaWrite, 17000, 1)]);
    assert!(
        b.take().is_empty(),
        "a write completes nothing at the target"
    );
    assert_eq!(dst.v[5000..17000], src.v[..12000]);
    assert_eq!(dst.v[17000..22000], src.v[15000..20000]);
    assert!(dst.v[..5000].iter().chain(&dst.v[22000..]).all(|&x| x == 0));
}

#[test]
fn rdma_read_into_multi_sge_sink_over_several_fpdus() {
    for ack in [false, true] {
        let mut n = neg(true, ack);
        n.max_fpdu = 1000;
        let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
        let mut sink = a.mem(10000, ALL, PD);
        sink.v.fill(0);
        let src = b.mem(10000, ALL, PD);
        let op = SendOp::RdmaRead {
            remote_addr: src.addr() + 100,
            rkey: src.rkey,
        };
        a.send(
            4,
            op,
            &[sink.sge(5000, 3000), sink.sge(0, 2000)],
            true,
            false,
        );
        pump(&mut a, &mut b);
        assert_eq!(a.take(), [ok(4, WcOp::RdmaRead, 5000, 1)]);
        assert_eq!(sink.v[5000..8000], src.v[100..3100]);
        assert_eq!(sink.v[0..2000], src.v[3100..5100]);
        assert!(sink.v[2000..5000].iter().all(|&x| x == 0));
    }
}

/// Counts the Read Requests in a byte stream.
fn read_requests(stream: &[u8], crc: bool) -> usize {
    let mut r = FpduReader::new(crc);
    let (mut at, mut n) = (0, 0);
    while at < stream.len() {
        let fed = r.feed(&stream[at..]).expect("framing");
        at += fed.consumed;
        if let Some(RxEvent::Segment(s)) = fed.event {
            n += usize::from(matches!(s.header.ulp, Ulp::ReadRequest { .. }));
        }
    }
    n
}

#[test]
fn rdma_reads_wait_for_an_ord_credit() {
    let mut c = cfg(1);
    c.ord = 1;
    let (mut a, mut b) = (
        Side::new(c, neg(false, false)),
        Side::new(cfg(2), neg(false, false)),
    );
    let sink = a.mem(64, ALL, PD);
    let src = b.mem(64, ALL, PD);
    let op = SendOp::RdmaRead {
        remote_addr: src.addr(),
        rkey: src.rkey,
    };
    a.send(1, op, &[sink.sge(0, 8)], true, false);
    a.send(2, op, &[sink.sge(8, 8)], true, false);
    let mut wire = Vec::new();
    a.transmit(&mut wire);
    assert_eq!(read_requests(&wire, false), 1, "ORD 1: one read in flight");
    b.inbox = wire;
    pump(&mut a, &mut b);
    assert_eq!(
        a.take(),
        [ok(1, WcOp::RdmaRead, 8, 1), ok(2, WcOp::RdmaRead, 8, 1)]
    );
    assert_eq!(sink.v[0..8], src.v[0..8]);
    assert_eq!(sink.v[8..16], src.v[0..8]);
}

#[test]
fn reads_beyond_the_peers_ird_terminate() {
    let mut na = neg(false, false);
    na.ord = 3;
    let mut nb = neg(false, false);
    nb.ird = 1;
    let (mut a, mut b) = (Side::new(cfg(1), na), Side::new(cfg(2), nb));
    let sink = a.mem(64, ALL, PD);
    let src = b.mem(64, ALL, PD);
    let op = SendOp::RdmaRead {
        remote_addr: src.addr(),
        rkey: src.rkey,
    };
    a.send(1, op, &[sink.sge(0, 8)], true, false);
    a.send(2, op, &[sink.sge(8, 8)], true, false);
    a.transmit(&mut b.inbox);
    pump(&mut a, &mut b);
    let e = TermError::DdpUntagged(DdpUntagged::InvalidMsnRange);
    assert_eq!(b.faults, [Fault::Protocol(e)]);
    let w: Vec<_> = a.take().iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(w, [(1, WcStatus::Flushed), (2, WcStatus::RemoteOperation)]);
}

#[test]
fn ack_reads_fall_back_without_a_spare_ord_credit() {
    let mut n = neg(false, true);
    n.ord = cfg(1).ord;
    let c = Conn::new(cfg(1), n).expect("queues");
    assert!(!c.ack_reads());
    assert!(Conn::new(cfg(1), neg(false, true))
        .expect("queues")
        .ack_reads());
}

#[test]
fn unsignalled_sends_complete_nothing_on_success() {
    for ack in [false, true] {
        let (mut a, mut b) = pair(false, ack);
        let src = a.mem(64, ALL, PD);
        let dst = b.mem(64, ALL, PD);
        b.recv(1, &[dst.sge(0, 64)]);
        b.recv(2, &[dst.sge(0, 64)]);
        a.send(1, SEND, &[src.sge(0, 4)], false, false);
        pump(&mut a, &mut b);
        assert!(a.take().is_empty());
        a.send(2, SEND, &[src.sge(0, 5)], true, false);
        pump(&mut a, &mut b);
        // It counts the unsignalled one before it.
        assert_eq!(
            a.take(),
            [Wc {
                implicit: 1,
                ..ok(2, WcOp::Send, 5, 1)
            }]
        );
        assert_eq!(b.take().len(), 2);
        assert_eq!(
            a.conn.send_outstanding(),
            0,
            "the unsignalled slot retired too"
        );
    }
}

#[test]
fn solicited_flag_reaches_the_receive_completion() {
    let (mut a, mut b) = pair(false, true);
    let src = a.mem(64, ALL, PD);
    let dst = b.mem(64, ALL, PD);
    b.recv(1, &[dst.sge(0, 64)]);
    b.recv(2, &[dst.sge(0, 64)]);
    a.send(
        1,
        SendOp::Send { solicited: true },
        &[src.sge(0, 3)],
        true,
        false,
    );
    a.send(2, SEND, &[src.sge(0, 3)], true, false);
    pump(&mut a, &mut b);
    let w = b.take();
    assert!(w[0].solicited && !w[1].solicited, "{w:?}");
}

#[test]
fn a_send_after_a_write_finds_the_written_bytes_in_place() {
    let mut n = neg(false, true);
    n.max_fpdu = 512;
    let (mut a, mut b) = (Side::new(cfg(1), n), Side::new(cfg(2), n));
    let src = a.mem(8000, ALL, PD);
    let mut dst = b.mem(8000, ALL, PD);
    dst.v.fill(0);
    let rx = b.mem(16, ALL, PD);
    b.watch = Some((dst.addr(), 8000));
    b.recv(1, &[rx.sge(0, 16)]);
    let op = SendOp::RdmaWrite {
        remote_addr: dst.addr(),
        rkey: dst.rkey,
    };
    a.send(1, op, &[src.sge(0, 8000)], false, false);
    a.send(2, SEND, &[src.sge(0, 1)], true, false);
    pump(&mut a, &mut b);
    assert_eq!(b.snapshots.len(), 1);
    assert_eq!(
        b.snapshots[0], src.v,
        "the write was placed before the send completed"
    );
    assert_eq!(
        a.take(),
        [Wc {
            implicit: 1,
            ..ok(2, WcOp::Send, 1, 1)
        }]
    );
}

#[test]
fn fence_holds_a_request_until_earlier_reads_completed() {
    let (mut a, mut b) = pair(false, false);
    let sink = a.mem(64, ALL, PD);
    let src = b.mem(64, ALL, PD);
    let dst = b.mem(64, ALL, PD);
    b.recv(1, &[dst.sge(0, 64)]);
    let op = SendOp::RdmaRead {
        remote_addr: src.addr(),
        rkey: src.rkey,
    };
    a.send(1, op, &[sink.sge(0, 8)], true, false);
    a.send(2, SEND, &[sink.sge(0, 8)], true, true);
    let mut wire = Vec::new();
    assert_eq!(a.transmit(&mut wire), 1, "only the Read Request");
    b.inbox = wire;
    pump(&mut a, &mut b);
    assert_eq!(
        a.take(),
        [ok(1, WcOp::RdmaRead, 8, 1), ok(2, WcOp::Send, 8, 1)]
    );
    let r = b.take();
    assert_eq!(r, [ok(1, WcOp::Recv, 8, 2)]);
    assert_eq!(dst.v[..8], src.v[..8], "the send carried the read's data");
}

#[test]
fn ack_reads_complete_sends_after_the_peer_processed_them() {
    let (mut a, mut b) = pair(false, true);
    let src = a.mem(64, ALL, PD);
    let dst = b.mem(64, ALL, PD);
    b.recv(1, &[dst.sge(0, 64)]);
    a.send(1, SEND, &[src.sge(0, 10)], true, false);
    a.send(2, SEND, &[src.sge(0, 10)], true, false);
    let mut wire = Vec::new();
    assert_eq!(
        a.transmit(&mut wire),
        3,
        "two sends, one ack read behind both"
    );
    assert_eq!(read_requests(&wire, false), 1);
    assert!(a.take().is_empty(), "handed off is not done");
    b.inbox = wire;
    b.receive();
    assert_eq!(b.take().len(), 1);
    assert!(b.pending.is_some(), "second send waits for a receive");
    b.transmit(&mut a.inbox);
    a.receive();
    assert!(a.take().is_empty(), "no response while the peer is stuck");
    b.recv(2, &[dst.sge(0, 64)]);
    pump(&mut a, &mut b);
    assert_eq!(
        a.take(),
        [ok(1, WcOp::Send, 10, 1), ok(2, WcOp::Send, 10, 1)]
    );
}

#[test]
fn without_ack_reads_sends_complete_when_handed_off() {
    let (mut a, _b) = pair(false, false);
    let src = a.mem(64, ALL, PD);
    a.send(1, SEND, &[src.sge(0, 10)], true, false);
    let mut wire = Vec::new();
    assert_eq!(a.transmit(&mut wire), 1);
    assert_eq!(read_requests(&wire, false), 0);
    assert_eq!(a.take(), [ok(1, WcOp::Send, 10, 1)]);
}

#[test]
fn rnr_send_waits_then_lands_after_post_recv() {
    let (mut a, mut b) = pair(true, true);
    let src = a.mem(64, ALL, PD);
    let dst = b.mem(64, ALL, PD);
    a.send(1, SEND, &[src.sge(0, 33)], true, false);
    pump(&mut a, &mut b);
    assert!(b.pending.is_some() && a.take().is_empty());
    b.recv(7, &[dst.sge(0, 64)]);
    pump(&mut a, &mut b);
    assert_eq!(b.take(), [ok(7, WcOp::Recv, 33, 2)]);
    assert_eq!(a.take(), [ok(1, WcOp::Send, 33, 1)]);
    assert_eq!(dst.v[..33], src.v[..33]);
}

#[test]
fn rnr_expiry_terminates_and_the_send_completes_receiver_not_ready() {
    let (mut a, mut b) = pair(false, true);
    let src = a.mem(64, ALL, PD);
    a.send(1, SEND, &[src.sge(0, 8)], true, false);
    a.send(2, SEND, &[src.sge(0, 8)], false, false);
    pump(&mut a, &mut b);
    let mut wcs = Vec::new();
    let f = b.conn.rnr_expired(&mut |wc| wcs.push(wc));
    assert_eq!(
        f,
        Fault::Protocol(TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer))
    );
    assert_eq!(b.conn.state(), ConnState::Terminating);
    b.pending = None;
    pump(&mut a, &mut b);
    assert_eq!(b.conn.state(), ConnState::Broken);
    let w = a.take();
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::ReceiverNotReady));
    assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed));
    assert!(matches!(a.faults[..], [Fault::Terminated(_)]));
    assert_eq!(a.conn.state(), ConnState::Broken);
}

/// Name, write target (address, rkey), rights and zone of the target
/// memory, the Terminate error expected.
type Case = (&'static str, fn(&Mem) -> (u64, u32), Access, u64, TermError);

#[test]
fn remote_access_violations_terminate_and_place_nothing() {
    let cases: [Case; 5] = [
        (
            "bad stag",
            |m| (m.addr(), m.rkey ^ 0x4_0000),
            ALL,
            PD,
            TermError::DdpTagged(DdpTagged::InvalidStag),
        ),
        (
            "bounds",
            |m| (m.addr() + 60, m.rkey),
            ALL,
            PD,
            TermError::DdpTagged(DdpTagged::BaseOrBounds),
        ),
        (
            "wrap",
            |m| (u64::MAX - 7, m.rkey),
            ALL,
            PD,
            TermError::DdpTagged(DdpTagged::ToWrap),
        ),
        (
            "rights",
            |m| (m.addr(), m.rkey),
            Access::LOCAL_WRITE.union(Access::REMOTE_READ),
            PD,
            TermError::RdmapProtection(RdmapProtection::AccessRights),
        ),
        (
            "domain",
            |m| (m.addr(), m.rkey),
            ALL,
            8,
            TermError::DdpTagged(DdpTagged::StagNotAssociated),
        ),
    ];
    for (name, target, rights, pz, e) in cases {
        let (mut a, mut b) = pair(false, true);
        let src = a.mem(64, ALL, PD);
        let mut dst = b.mem(64, rights, pz);
        dst.v.fill(0);
        let (remote_addr, rkey) = target(&dst);
        a.send(
            1,
            SendOp::RdmaWrite { remote_addr, rkey },
            &[src.sge(0, 16)],
            true,
            false,
        );
        a.send(2, SEND, &[src.sge(0, 1)], true, false);
        pump(&mut a, &mut b);
        assert_eq!(b.faults, [Fault::Protocol(e)], "{name}");
        assert_eq!(a.faults, [Fault::Terminated(e)], "{name}");
        assert!(dst.v.iter().all(|&x| x == 0), "{name}: nothing placed");
        let w = a.take();
        assert_eq!(
            (w[0].wr_id, w[0].status),
            (1, WcStatus::RemoteAccess),
            "{name}"
        );
        assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed), "{name}");
    }
}

#[test]
fn terminate_of_a_write_whose_remote_range_wraps_completes_it() {
    let (mut a, mut b) = pair(false, true);
    let src = a.mem(64, ALL, PD);
    let dst = b.mem(64, ALL, PD);
    let op = SendOp::RdmaWrite {
        remote_addr: u64::MAX - 7,
        rkey: dst.rkey,
    };
    a.send(1, op, &[src.sge(0, 16)], true, false);
    pump(&mut a, &mut b);
    let w = a.take();
    assert_eq!(
        (w[0].wr_id, w[0].status, w.len()),
        (1, WcStatus::RemoteAccess, 1)
    );
}

#[test]
fn refused_framing_terminates_naming_the_segment() {
    let (mut a, mut b) = pair(true, true);
    let src = a.mem(8, ALL, PD);
    let dst = b.mem(8, ALL, PD);
    b.recv(7, &[dst.sge(0, 8)]);
    a.send(1, SEND, &[src.sge(0, 5)], true, false);
    let mut wire_bytes = Vec::new();
    a.transmit(&mut wire_bytes);
    // The FPDU reader found a bad CRC on the Send, whose header it had
    // read; the bytes never reach the engine's receive path.
    let seg = Segment {
        header: Header::new(
            Ulp::Send {
                msn: 1,
                mo: 0,
                solicited: false,
                invalidate: None,
            },
            true,
        ),
        ulpdu_len: (UNTAGGED_HDR_LEN + 5) as u16,
        payload_len: 5,
    };
    let e = TermError::Mpa(wire::MpaCode::Crc);
    let wcs = &mut b.wcs;
    assert_eq!(
        b.conn.refuse(e, Some(seg), &mut |wc| wcs.push(wc)),
        Fault::Protocol(e)
    );
    assert_eq!(b.conn.state(), ConnState::Terminating);
    let w = b.take();
    assert_eq!((w[0].wr_id, w[0].status), (7, WcStatus::Flushed));
    let wcs = &mut b.wcs;
    assert_eq!(
        b.conn.refuse(e, None, &mut |wc| wcs.push(wc)),
        Fault::Closed
    );
    pump(&mut a, &mut b);
    assert_eq!(b.conn.state(), ConnState::Broken);
    assert_eq!(a.faults, [Fault::Terminated(e)]);
    let w = a.take();
    assert_eq!(
        (w[0].wr_id, w[0].status, w.len()),
        (1, WcStatus::RemoteOperation, 1),
        "the Terminate named the Send"
    );
}

#[test]
fn read_rtr_taken_moves_the_inbound_read_msn() {
    for (msn, ok) in [(2, true), (1, false)] {
        let (_, mut b) = pair(false, true);
        let src = b.mem(16, ALL, PD);
        b.conn.read_rtr_taken(1);
        let req = ReadRequest {
            sink_stag: 9,
            sink_to: 0,
            size: 16,
            source_stag: src.rkey,
            source_to: src.addr(),
        };
        let h = Header::new(Ulp::ReadRequest { msn, mo: 0, req }, true);
        let mut f = [0u8; 64];
        let n = wire::encode_fpdu(&h, &[], false, &mut f).expect("fpdu");
        b.inbox.extend_from_slice(&f[..n]);
        b.receive();
        let mut out = Vec::new();
        assert_eq!(b.transmit(&mut out), 1, "MSN {msn}");
        if ok {
            assert!(b.faults.is_empty(), "MSN {msn}: answered");
        } else {
            let e = TermError::DdpUntagged(DdpUntagged::InvalidMsnRange);
            assert_eq!(b.faults, [Fault::Protocol(e)], "MSN {msn}: the RTR's");
        }
    }
}

#[test]
fn read_of_a_bad_source_completes_remote_access() {
    let (mut a, mut b) = pair(true, true);
    let sink = a.mem(64, ALL, PD);
    let src = b.mem(64, Access::LOCAL_READ.union(Access::REMOTE_WRITE), PD);
    let op = SendOp::RdmaRead {
        remote_addr: src.addr(),
        rkey: src.rkey,
    };
    a.send(3, op, &[sink.sge(0, 8)], true, false);
    pump(&mut a, &mut b);
    let e = TermError::RdmapProtection(RdmapProtection::AccessRights);
    assert_eq!(b.faults, [Fault::Protocol(e)]);
    let w = a.take();
    assert_eq!(
        (w[0].wr_id, w[0].status, w.len()),
        (3, WcStatus::RemoteAccess, 1)
    );
}

#[test]
fn receive_too_small_completes_local_length() {
    let (mut a, mut b) = pair(false, true);
    let src = a.mem(200, ALL, PD);
    let dst = b.mem(200, ALL, PD);
    b.recv(1, &[dst.sge(0, 10)]);
    b.recv(2, &[dst.sge(10, 10)]);
    a.send(1, SEND, &[src.sge(0, 100)], true, false);
    pump(&mut a, &mut b);
    let w = b.take();
    assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::LocalLength));
    assert_eq!((w[1].wr_id, w[1].status), (2, WcStatus::Flushed));
    let e = TermError::DdpUntagged(DdpUntagged::MessageTooLong);
    assert_eq!(b.faults, [Fault::Protocol(e)]);
    let w = a.take();
    assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::RemoteOperation));
}

#[test]
fn flush_completes_every_request_once_in_order() {
    let (mut a, _b) = pair(false, true);
    let m = a.mem(64, ALL, PD);
    a.send(1, SEND, &[m.sge(0, 8)], false, false);
    a.send(2, SEND, &[m.sge(0, 8)], true, false);
    a.recv(3, &[m.sge(0, 8)]);
    a.recv(4, &[m.sge(0, 8)]);
    let mut plan = TxPlan::new();
    assert!(a.conn.next_tx(&mut plan), "one send in flight");
    let mut w = Vec::new();
    a.conn.flush(&mut |wc| w.push(wc));
    a.conn.flush(&mut |wc| w.push(wc));
    let ids: Vec<_> = w.iter().map(|w| (w.wr_id, w.op, w.status)).collect();
    assert_eq!(
        ids,
        [
            (1, WcOp::Send, WcStatus::Flushed),
            (2, WcOp::Send, WcStatus::Flushed),
            (3, WcOp::Recv, WcStatus::Flushed),
            (4, WcOp::Recv, WcStatus::Flushed),
        ]
    );
    assert_eq!(a.conn.state(), ConnState::Broken);
    assert!(!a.conn.next_tx(&mut plan));
    let wr = SendWr {
        wr_id: 5,
        ctx: 0,
        op: SEND,
        sgl: &[],
        signaled: true,
        fence: false,
    };
    assert_eq!(a.conn.post_send(&wr, &a.keys), Err(PostError::State));
}

#[test]
fn posts_are_checked() {
    let (mut a, _b) = pair(false, true);
    let m = a.mem(64, ALL, PD);
    let ro = a.mem(64, Access::LOCAL_READ, PD);
    let other = a.mem(64, ALL, 9);
    let post = |a: &mut Side, op, sgl: &[Sge]| {
        let wr = SendWr {
            wr_id: 0,
            ctx: 0,
            op,
            sgl,
            signaled: true,
            fence: false,
        };
        a.conn.post_send(&wr, &a.keys)
    };
    let five = [m.sge(0, 1); 5];
    assert_eq!(post(&mut a, SEND, &five), Err(PostError::TooManySge));
    assert_eq!(
        post(&mut a, SEND, &[m.sge(60, 8)]),
        Err(PostError::Protection(KeyFault::Bounds))
    );
    assert_eq!(
        post(&mut a, SEND, &[other.sge(0, 8)]),
        Err(PostError::Protection(KeyFault::Domain))
    );
    let read = SendOp::RdmaRead {
        remote_addr: 0,
        rkey: 1,
    };
    assert_eq!(
        post(&mut a, read, &[ro.sge(0, 8)]),
        Err(PostError::Protection(KeyFault::Rights)),
        "a read sink needs LOCAL_WRITE"
    );
    let big = [
        Sge {
            addr: m.addr(),
            len: 0,
            lkey: m.lkey,
        },
        Sge {
            addr: 0,
            len: MAX_MSG + 1,
            lkey: 0,
        },
    ];
    assert!(post(&mut a, SEND, &big).is_err());
    for _ in 0..16 {
        post(&mut a, SEND, &[m.sge(0, 1)]).expect("post");
    }
    assert_eq!(
        post(&mut a, SEND, &[m.sge(0, 1)]),
        Err(PostError::QueueFull)
    );
    assert_eq!(
        a.conn.post_recv(
            &RecvWr {
                wr_id: 1,
                ctx: 0,
                sgl: &[ro.sge(0, 8)]
            },
            &a.keys
        ),
        Err(PostError::Protection(KeyFault::Rights))
    );
}
