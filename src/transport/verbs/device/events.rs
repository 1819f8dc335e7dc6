//! The device's event thread: rdma_cm events (connection requests,
//! connections made, refused or closed), asynchronous device events (a
//! queue pair broke) and, for completion queues with a notification hook,
//! their channels. Events are copied and acknowledged before they are
//! handed on, so destroying an rdma_cm id never waits for a handler.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

use super::cm::{self, Cm};
use super::cq::Notify;
use super::qp::QpInner;
use super::VerbsDevice;
use super::{Made, Owner, Request};
use crate::sync::lock_anyway;
use crate::transport::verbs::sys::*;
use crate::transport::verbs::{drain_eventfd, eventfd, write_eventfd};

const WAKE: u64 = 0;
const CM: u64 = 1;
const ASYNC: u64 = 2;
/// Tokens of watched completion channels start here.
const FIRST_CQ: u64 = 16;

pub(super) struct EventLoop {
    dev: Weak<VerbsDevice>,
    epoll: Epoll,
    wake: OwnedFd,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    owners: Mutex<HashMap<u64, Owner>>,
    pub(super) requests: Mutex<HashMap<u64, Request>>,
    /// Queue pairs by number (asynchronous events, accepts).
    qps: Mutex<HashMap<u32, Weak<QpInner>>>,
    cqs: Mutex<HashMap<u64, Arc<Notify>>>,
    /// Events made up here for queue pairs (a connection abandoned before
    /// rdma_cm had one to report), delivered from the thread.
    deferred: Mutex<VecDeque<(Weak<QpInner>, Made)>>,
    /// Connections being made, by deadline (`dat_ep_connect`'s timeout):
    /// one not made by then is abandoned and reported timed out.
    deadlines: Mutex<Vec<(Instant, Weak<QpInner>, u64)>>,
}

impl EventLoop {
    pub(super) fn new(dev: Weak<VerbsDevice>) -> EventLoop {
        EventLoop {
            dev,
            epoll: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).expect("epoll_create1"),
            wake: eventfd().expect("eventfd"),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            owners: Mutex::default(),
            requests: Mutex::default(),
            qps: Mutex::default(),
            cqs: Mutex::default(),
            deferred: Mutex::default(),
            deadlines: Mutex::default(),
        }
    }

    /// The device this loop serves (while it is alive).
    pub(super) fn device(&self) -> Option<Arc<VerbsDevice>> {
        self.dev.upgrade()
    }

    fn add(&self, fd: i32, token: u64) -> std::io::Result<()> {
        // SAFETY: the descriptor stays open while it is in the set (its
        // owner removes it before closing it).
        let b = unsafe { BorrowedFd::borrow_raw(fd) };
        self.epoll
            .add(b, EpollEvent::new(EpollFlags::EPOLLIN, token))
            .map_err(std::io::Error::from)
    }

    pub(super) fn start(&self, cm_fd: i32, async_fd: i32) -> std::io::Result<()> {
        self.add(self.wake.as_raw_fd(), WAKE)?;
        self.add(cm_fd, CM)?;
        self.add(async_fd, ASYNC)?;
        let dev = self.dev.clone();
        let ep = Epoll(self.epoll.0.try_clone()?);
        let t = std::thread::Builder::new()
            .name("dat-verbs-events".into())
            .spawn(move || run(dev, ep))?;
        *lock_anyway(&self.thread) = Some(t);
        Ok(())
    }

    /// Stops the thread (from the device's drop).
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        write_eventfd(&self.wake);
        if let Some(t) = lock_anyway(&self.thread).take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }

    pub(super) fn set_owner(&self, token: u64, o: Owner) {
        lock_anyway(&self.owners).insert(token, o);
    }

    pub(super) fn remove_owner(&self, token: u64) {
        lock_anyway(&self.owners).remove(&token);
    }

    pub(super) fn add_qp(&self, num: u32, qp: Weak<QpInner>) {
        lock_anyway(&self.qps).insert(num, qp);
    }

    pub(super) fn remove_qp(&self, num: u32) {
        lock_anyway(&self.qps).remove(&num);
    }

    pub(super) fn qp(&self, num: u32) -> Option<Arc<QpInner>> {
        lock_anyway(&self.qps).get(&num).and_then(Weak::upgrade)
    }

    pub(super) fn watch_cq(&self, n: Arc<Notify>) {
        let (fd, token) = (n.fd(), FIRST_CQ + n.token);
        lock_anyway(&self.cqs).insert(token, n);
        let _ = self.add(fd, token);
    }

    pub(super) fn unwatch_cq(&self, n: &Notify) {
        // SAFETY: the descriptor is open (the Notify holds it).
        let _ = self.epoll.delete(unsafe { BorrowedFd::borrow_raw(n.fd()) });
        lock_anyway(&self.cqs).remove(&(FIRST_CQ + n.token));
    }

    /// Abandons connection attempt `attempt` of `qp` if it is not made by
    /// `at`.
    pub(super) fn deadline(&self, at: Instant, qp: Weak<QpInner>, attempt: u64) {
        lock_anyway(&self.deadlines).push((at, qp, attempt));
        write_eventfd(&self.wake);
    }

    /// The time until the next deadline; runs those that passed.
    fn run_deadlines(&self) -> EpollTimeout {
        let now = Instant::now();
        let due: Vec<_> = {
            let mut d = lock_anyway(&self.deadlines);
            let (due, keep): (Vec<_>, Vec<_>) = d.drain(..).partition(|(at, _, _)| *at <= now);
            *d = keep;
            due
        };
        for (_, qp, attempt) in due {
            if let Some(q) = qp.upgrade() {
                q.connect_timed_out(attempt);
            }
        }
        let next = lock_anyway(&self.deadlines)
            .iter()
            .map(|(at, _, _)| *at)
            .min();
        match next {
            None => EpollTimeout::NONE,
            Some(at) => {
                let ms = at
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .clamp(1, 60_000);
                EpollTimeout::try_from(ms as u16 as i32).unwrap_or(EpollTimeout::NONE)
            }
        }
    }

    /// Delivers `ev` to `qp` from the event thread.
    pub(super) fn defer(&self, qp: Weak<QpInner>, ev: Made) {
        lock_anyway(&self.deferred).push_back((qp, ev));
        write_eventfd(&self.wake);
    }
}

/// The thread waits on its own descriptor of the device's epoll set, so it
/// holds the device only while it handles events.
fn run(dev: Weak<VerbsDevice>, ep: Epoll) {
    let mut evs = [EpollEvent::empty(); 16];
    loop {
        let timeout = match dev.upgrade() {
            Some(d) => d.events.run_deadlines(),
            None => return,
        };
        let n = match ep.wait(&mut evs, timeout) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        };
        let Some(d) = dev.upgrade() else { return };
        if d.events.stop.load(Ordering::Acquire) {
            return;
        }
        for e in &evs[..n] {
            match e.data() {
                WAKE => {
                    drain_eventfd(&d.events.wake);
                    loop {
                        let next = lock_anyway(&d.events.deferred).pop_front();
                        let Some((qp, ev)) = next else { break };
                        if let Some(q) = qp.upgrade() {
                            q.made_event(ev);
                        }
                    }
                }
                CM => cm_events(&d),
                ASYNC => async_events(&d),
                t => {
                    let n = lock_anyway(&d.events.cqs).get(&t).cloned();
                    if let Some(n) = n {
                        n.notified();
                    }
                }
            }
        }
    }
}

/// Reads, copies and acknowledges every pending rdma_cm event, then hands
/// each on.
fn cm_events(d: &Arc<VerbsDevice>) {
    loop {
        let mut ev = std::ptr::null_mut();
        // SAFETY: the channel's descriptor is non-blocking; the event is
        // copied and acknowledged before anything else happens.
        let copy = unsafe {
            if (d.lib.rdma_get_cm_event)(d.channel.0, &mut ev) != 0 {
                return;
            }
            let c = Cm::copy(&*ev);
            (d.lib.rdma_ack_cm_event)(ev);
            c
        };
        tracing::debug!(
            event = copy.kind,
            status = copy.status,
            token = copy.token,
            "verbs: rdma_cm event"
        );
        let owner = lock_anyway(&d.events.owners).get(&copy.token).cloned();
        cm::dispatch(d, owner, copy);
    }
}

fn async_events(d: &Arc<VerbsDevice>) {
    loop {
        // SAFETY: an all-zero event is a valid value; the descriptor is
        // non-blocking; the event is acknowledged after copying.
        let (kind, qp_num) = unsafe {
            let mut ev: ibv_async_event = std::mem::zeroed();
            if (d.lib.ibv_get_async_event)(d.ctx.0, &mut ev) != 0 {
                return;
            }
            let kind = ev.event_type;
            let qp_num = match kind {
                IBV_EVENT_QP_FATAL | IBV_EVENT_QP_REQ_ERR | IBV_EVENT_QP_ACCESS_ERR => {
                    Some((*ev.element.qp).qp_num)
                }
                _ => None,
            };
            (d.lib.ibv_ack_async_event)(&mut ev);
            (kind, qp_num)
        };
        match qp_num {
            Some(n) => {
                if let Some(q) = d.events.qp(n) {
                    q.broke();
                }
            }
            None if kind == IBV_EVENT_DEVICE_FATAL => {
                let all: Vec<_> = lock_anyway(&d.events.qps)
                    .values()
                    .filter_map(Weak::upgrade)
                    .collect();
                for q in all {
                    q.broke();
                }
            }
            None => tracing::debug!(event = kind, "verbs: asynchronous event"),
        }
    }
}
