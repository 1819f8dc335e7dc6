//! Receive: at an FPDU boundary a peek plus one `recvmsg` takes every FPDU
//! that arrived (payload straight into application memory, completions held
//! until it has landed); a payload's `recvmsg` also takes its trailer and
//! the next FPDU's first bytes. A Send that finds no posted receive holds
//! the connection for the receiver-not-ready time.

use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{
    socket::peek,
    state::{
        DeviceShared, EstablishedConn, IwarpQp, PayloadDest, PumpStatus, LOOKAHEAD, PEEK_MAX,
        PEEK_MIN, SCRATCH,
    },
};
use crate::transport::api::{Wc, WcStatus};
use crate::transport::iwarp::conn::{Fault, RxAction, MAX_SGE};
use crate::transport::iwarp::wire::{RxEvent, RxNeed, Segment};
use crate::transport::soft::keys::KeyTable;
use crate::transport::soft::memio::{self, IoError, IoPlan, RawSeg, RecvGather};

/// Bytes one step receives before it lets the transmit side and the
/// caller have their turn.
pub(super) const RX_BUDGET: usize = 256 * 1024;

impl IwarpQp {
    /// Reads and places FPDUs until the socket is empty. `thorough`: until
    /// a read says so (the caller answers for an edge the progress thread
    /// took: nothing will say again that data is there); otherwise a short
    /// peek that was taken whole ends it (one system call less for an
    /// application's poll, which looks again anyway).
    pub(super) fn pump_rx(&self, up: &mut EstablishedConn, thorough: bool) -> (bool, PumpStatus) {
        let Some(dev) = self.dev.upgrade() else {
            return (false, PumpStatus::Broken);
        };
        let keys = &dev.keys;
        let mut sink = self.sink();
        let mut any = false;
        if let Some((seg, until)) = up.not_ready {
            match self.take_segment(up, &seg, keys, &mut sink) {
                Ok(true) => {
                    up.not_ready = None;
                    self.rnr_waiting.store(false, Ordering::Release);
                    any = true;
                }
                Ok(false) if Instant::now() >= until => {
                    up.not_ready = None;
                    self.rnr_waiting.store(false, Ordering::Release);
                    let _ = up.conn.rnr_expired(&mut sink);
                    return (true, PumpStatus::Terminated);
                }
                Ok(false) => return (false, PumpStatus::Ok),
                Err(()) => return (true, PumpStatus::Broken),
            }
        }
        // A bounded amount per step: the responses the receive side queues
        // (acknowledgements above all) go out between slices of a long
        // stream, and a poll returns.
        let mut budget = RX_BUDGET;
        self.rx_more.store(false, Ordering::Relaxed);
        loop {
            if budget == 0 {
                self.rx_more.store(true, Ordering::Relaxed);
                return (true, PumpStatus::Ok);
            }
            if up.reader.at_boundary() && up.rx_wcs.is_empty() {
                match self.rx_batch(up, keys, &dev) {
                    Batch::More => {
                        any = true;
                        budget = budget.saturating_sub(PEEK_MAX);
                        continue;
                    }
                    Batch::Empty => return (any, PumpStatus::Ok),
                    Batch::Drained if thorough => {
                        any = true;
                        continue;
                    }
                    Batch::Drained => return (true, PumpStatus::Ok),
                    Batch::End(o) => return (true, o),
                }
            }
            match up.reader.need() {
                RxNeed::Header(_) | RxNeed::Trailer(_) => {
                    let r = (&*up.stream).read(up.reader.spare());
                    let n = match r {
                        // The peer closed, even inside an FPDU (its
                        // process ended mid-write): rulings, teardown events.
                        Ok(0) => return (true, PumpStatus::PeerClosed),
                        Ok(n) => n,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            return (any, PumpStatus::Ok)
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => return (true, outcome_of_errno(e.raw_os_error())),
                    };
                    any = true;
                    up.hold_tx = false;
                    up.nudge = None;
                    let r = up.reader.commit(n);
                    if let Some(o) = self.on_commit(up, r, keys, &dev, &mut sink) {
                        return (true, o);
                    }
                }
                RxNeed::Payload(left) => {
                    // Bytes received past the payload (into `up.tail`).
                    let mut extra = 0usize;
                    let r = match &mut up.rx {
                        PayloadDest::Place { segs, nsegs, off } => {
                            // The payload, its pad and CRC, and the first
                            // bytes of the next FPDU, in one call.
                            let tl = up.reader.trailer_len();
                            let plan = IoPlan::recv(
                                &mut [],
                                &segs[..*nsegs],
                                *off,
                                left as u64,
                                &mut up.tail[..tl + LOOKAHEAD],
                            );
                            let Some(plan) = plan else {
                                return (true, PumpStatus::Broken);
                            };
                            match memio::recv_plan(up.stream.as_fd(), &plan, libc::MSG_DONTWAIT) {
                                Ok(got) => {
                                    let n = got.min(left);
                                    extra = got - n;
                                    let start = *off;
                                    *off += n as u64;
                                    if up.crc {
                                        let reader = &mut up.reader;
                                        let mut bad = false;
                                        if memio::digest_segs(
                                            &segs[..*nsegs],
                                            start,
                                            n as u64,
                                            |b| bad |= reader.placed(b).is_err(),
                                        )
                                        .is_err()
                                            || bad
                                        {
                                            return (true, PumpStatus::Broken);
                                        }
                                        Ok(n)
                                    } else {
                                        up.reader
                                            .placed_crc(n, 0)
                                            .map(|_| n)
                                            .map_err(|_| IoError::Other(libc::EPROTO))
                                    }
                                }
                                Err(e) => Err(e),
                            }
                        }
                        PayloadDest::Inline { len, off } => {
                            let buf = &mut up.conn.rx_inline()[*off..*len];
                            match (&*up.stream).read(buf) {
                                Ok(0) => Err(IoError::Closed),
                                Ok(n) => {
                                    let s = *off;
                                    *off += n;
                                    let bytes = &up.conn.rx_inline()[s..s + n];
                                    up.reader
                                        .placed(bytes)
                                        .map(|_| n)
                                        .map_err(|_| IoError::Other(libc::EPROTO))
                                }
                                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                                    Err(IoError::WouldBlock)
                                }
                                Err(_) => Err(IoError::Closed),
                            }
                        }
                        PayloadDest::None => return (true, PumpStatus::Broken),
                    };
                    if extra > 0 {
                        // Trailer and next header bytes: through the reader.
                        let mut at = 0;
                        while at < extra {
                            let tail = up.tail;
                            let spare = up.reader.spare();
                            let take = spare.len().min(extra - at);
                            if take == 0 {
                                return (true, PumpStatus::Broken);
                            }
                            spare[..take].copy_from_slice(&tail[at..at + take]);
                            at += take;
                            let c = up.reader.commit(take);
                            if let Some(o) = self.on_commit(up, c, keys, &dev, &mut sink) {
                                return (true, o);
                            }
                        }
                    }
                    match r {
                        Ok(n) => {
                            any = true;
                            budget = budget.saturating_sub(n.max(1));
                        }
                        Err(IoError::WouldBlock) => return (any, PumpStatus::Ok),
                        Err(IoError::Closed) => return (true, PumpStatus::PeerClosed),
                        Err(_) => {
                            up.conn.flush(&mut sink);
                            return (true, PumpStatus::Broken);
                        }
                    }
                }
            }
        }
    }

    /// At an FPDU boundary: peeks what has arrived, runs the engine over
    /// the whole FPDUs (and the start of a partial one) in it, and takes
    /// exactly those bytes off the socket with one `recvmsg` whose iovecs
    /// put payload straight into the application's buffers and the rest
    /// into a scratch area. Two system calls however many FPDUs arrived
    /// together. Completions are held until the `recvmsg` has placed the
    /// payload they report.
    pub(super) fn rx_batch(
        &self,
        up: &mut EstablishedConn,
        keys: &KeyTable,
        dev: &DeviceShared,
    ) -> Batch {
        let want = up.peek_len.min(PEEK_MAX);
        let n = match peek(&up.stream, &mut up.peek[..want]) {
            Ok(0) => return Batch::End(PumpStatus::PeerClosed),
            Ok(n) => n,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Batch::Empty,
                    errno => Batch::End(outcome_of_errno(errno)),
                }
            }
        };
        up.hold_tx = false;
        up.nudge = None;
        // Payload into application memory, the rest into `up.scratch`.
        let mut gather = RecvGather::new(SCRATCH);
        let mut pos = 0usize;
        let mut end: Option<PumpStatus> = None;
        // Taken out while the engine runs (and put back, capacity kept).
        let mut wcs = std::mem::take(&mut up.rx_wcs);
        let mut hold = |wc: Wc| wcs.push(wc);
        while pos < n && end.is_none() && gather.entries() + MAX_SGE + 2 < memio::IOV_CHUNK {
            match up.reader.need() {
                RxNeed::Header(_) | RxNeed::Trailer(_) => {
                    let spare = up.reader.spare();
                    let take = spare.len().min(n - pos);
                    spare[..take].copy_from_slice(&up.peek[pos..pos + take]);
                    gather.discard(take);
                    pos += take;
                    match up.reader.commit(take) {
                        Ok(None) => {}
                        Ok(Some(RxEvent::Segment(seg))) => {
                            match Self::take_segment_in(up, &seg, keys, &mut hold) {
                                Ok(true) => {}
                                Ok(false) => {
                                    let until = Instant::now() + dev.rnr_timeout();
                                    up.stream.wake_at(until);
                                    up.not_ready = Some((seg, until));
                                    self.rnr_waiting.store(true, Ordering::Release);
                                    end = Some(PumpStatus::Ok);
                                }
                                Err(()) => end = Some(PumpStatus::Broken),
                            }
                        }
                        Ok(Some(RxEvent::Done)) => {
                            up.rx = PayloadDest::None;
                            if let Err(f) = up.conn.rx_done(&mut hold) {
                                end = Some(fault_outcome(f));
                            }
                        }
                        Err(e) => {
                            match e.term() {
                                Some(t) => _ = up.conn.refuse(t, up.reader.segment(), &mut hold),
                                None => up.conn.flush(&mut hold),
                            }
                            end = Some(PumpStatus::Broken);
                        }
                    }
                }
                RxNeed::Payload(left) => {
                    let mut take = left.min(n - pos);
                    let placed = match &mut up.rx {
                        PayloadDest::Place { segs, nsegs, off } => {
                            let Some(plan) =
                                IoPlan::recv(&mut [], &segs[..*nsegs], *off, take as u64, &mut [])
                            else {
                                end = Some(PumpStatus::Broken);
                                break;
                            };
                            let b = gather.add(&plan);
                            take = b;
                            *off += b as u64;
                            if up.crc {
                                up.reader.placed(&up.peek[pos..pos + take])
                            } else {
                                up.reader.placed_crc(take, 0)
                            }
                        }
                        PayloadDest::Inline { len, off } => {
                            take = take.min(*len - *off);
                            let o = *off;
                            up.conn.rx_inline()[o..o + take]
                                .copy_from_slice(&up.peek[pos..pos + take]);
                            *off += take;
                            gather.discard(take);
                            up.reader.placed(&up.peek[pos..pos + take])
                        }
                        PayloadDest::None => {
                            end = Some(PumpStatus::Broken);
                            break;
                        }
                    };
                    pos += take;
                    if placed.is_err() {
                        up.conn.flush(&mut hold);
                        end = Some(PumpStatus::Broken);
                    }
                    if take == 0 {
                        break;
                    }
                }
            }
        }
        // Take exactly the bytes the engine consumed.
        if pos > 0 {
            // The bytes are there (peeked): anything but all of them is a
            // fault (application memory not writable) or a broken socket.
            let got = gather.recv(up.stream.as_fd(), &mut up.scratch, libc::MSG_DONTWAIT);
            if got != Ok(pos) {
                // The payload the held completions report may not have
                // landed: they complete flushed, as the connection breaks.
                let mut sink = self.sink();
                for mut wc in wcs.drain(..) {
                    if wc.status == WcStatus::Success {
                        wc.status = WcStatus::Flushed;
                    }
                    sink(wc);
                }
                up.rx_wcs = wcs;
                up.conn.flush(&mut sink);
                return Batch::End(PumpStatus::Broken);
            }
        }
        // The next peek: small while a large payload streams in.
        up.peek_len = match up.reader.need() {
            RxNeed::Payload(left) if left > PEEK_MAX => PEEK_MIN,
            _ => PEEK_MAX,
        };
        let mut sink = self.sink();
        for wc in wcs.drain(..) {
            sink(wc);
        }
        up.rx_wcs = wcs;
        match end {
            Some(o @ PumpStatus::Ok) if up.not_ready.is_some() => Batch::End(o),
            Some(o) => Batch::End(o),
            // The peek got less than it asked for and all of it was taken:
            // the socket was empty a moment ago, and another peek now would
            // almost always say so at the cost of a system call on the
            // latency path (bytes arriving since are the next poll's, or
            // wake the progress thread; a step that answers for such an
            // edge reads on: see `pump_rx`).
            None if n < want && pos == n => Batch::Drained,
            None => Batch::More,
        }
    }

    /// Acts on what the reader made of committed header or trailer bytes;
    /// `Some`: the receive pump stops with that outcome.
    pub(super) fn on_commit(
        &self,
        up: &mut EstablishedConn,
        r: Result<Option<RxEvent>, crate::transport::iwarp::wire::FpduError>,
        keys: &KeyTable,
        dev: &DeviceShared,
        sink: &mut impl FnMut(Wc),
    ) -> Option<PumpStatus> {
        match r {
            Ok(None) => None,
            Ok(Some(RxEvent::Segment(seg))) => match self.take_segment(up, &seg, keys, sink) {
                Ok(true) => None,
                Ok(false) => {
                    let until = Instant::now() + dev.rnr_timeout();
                    up.stream.wake_at(until);
                    up.not_ready = Some((seg, until));
                    self.rnr_waiting.store(true, Ordering::Release);
                    Some(PumpStatus::Ok)
                }
                Err(()) => Some(PumpStatus::Broken),
            },
            Ok(Some(RxEvent::Done)) => {
                up.rx = PayloadDest::None;
                up.conn.rx_done(sink).err().map(fault_outcome)
            }
            Err(e) => {
                match e.term() {
                    Some(t) => _ = up.conn.refuse(t, up.reader.segment(), sink),
                    None => up.conn.flush(sink),
                }
                Some(PumpStatus::Broken)
            }
        }
    }

    /// Hands a segment header to the engine. False: no receive (retry).
    pub(super) fn take_segment(
        &self,
        up: &mut EstablishedConn,
        seg: &Segment,
        keys: &KeyTable,
        sink: &mut impl FnMut(Wc),
    ) -> Result<bool, ()> {
        Self::take_segment_in(up, seg, keys, sink)
    }

    pub(super) fn take_segment_in(
        up: &mut EstablishedConn,
        seg: &Segment,
        keys: &KeyTable,
        sink: &mut impl FnMut(Wc),
    ) -> Result<bool, ()> {
        match up.conn.rx_header(seg, keys, &mut up.rxplan, sink) {
            Ok(RxAction::Place) => {
                let mut segs = [RawSeg::default(); MAX_SGE];
                let ps = up.rxplan.pieces();
                for (k, p) in ps.iter().enumerate() {
                    segs[k] = RawSeg {
                        addr: p.addr,
                        len: p.len,
                    };
                }
                up.rx = PayloadDest::Place {
                    segs,
                    nsegs: ps.len(),
                    off: 0,
                };
                Ok(true)
            }
            Ok(RxAction::Inline(len)) => {
                up.rx = PayloadDest::Inline { len, off: 0 };
                Ok(true)
            }
            Ok(RxAction::NotReady) => Ok(false),
            Err(_) => Err(()),
        }
    }
}

/// How a batched receive ended.
pub(super) enum Batch {
    /// FPDUs were taken; look again.
    More,
    /// Nothing has arrived.
    Empty,
    /// FPDUs were taken, and nothing else had arrived.
    Drained,
    End(PumpStatus),
}

pub(super) fn fault_outcome(_f: Fault) -> PumpStatus {
    PumpStatus::Broken
}

/// How a socket error ends the connection (rulings, teardown events): the
/// peer closing it, in order or abruptly (a reset: its abrupt disconnect,
/// its EP freed, its process gone), is a disconnect; anything this side
/// detects (keepalive or user timeout, other errors) breaks it.
pub(super) fn outcome_of_errno(errno: Option<i32>) -> PumpStatus {
    match errno {
        Some(libc::ECONNRESET | libc::EPIPE) => PumpStatus::PeerClosed,
        _ => PumpStatus::Broken,
    }
}
