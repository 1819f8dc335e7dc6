//! Consumer Notification Object: one place to wait for notifications from
//! several EVDs of an IA, with an optional one-shot OS wait proxy agent.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, Handle, HandleType, Ref};
use crate::object::event::TIMEOUT_INFINITE;
use crate::object::ia::{Agent, Ia};
use crate::object::{lock, lock_anyway, Object};
use crate::transport::api::CompletionQueue;
use crate::wait::{self, Held, Notifier, Sleep, Wake};

/// An EVD as its CNO sees it (implemented by the EVD, which the CNO knows
/// only through this): a CNO waiter looks for events already pending and
/// drives the queue pairs feeding the EVD, as an EVD waiter does.
pub(crate) trait CnoEvd: Send + Sync {
    /// Its handle.
    fn handle(&self) -> Handle;
    /// Its transport CQ, if it has one.
    fn cq(&self) -> Option<Arc<dyn CompletionQueue>>;
    /// Moves completions from the CQ into the event queue.
    fn fill(&self);
    /// An event is queued that would notify the CNO now.
    fn has_notifiable_event(&self) -> bool;
}

/// How `dat_cno_wait` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CnoWake {
    /// Notified; the EVD is a hint.
    Evd(Handle),
    /// The timeout expired.
    Timeout,
    /// A signal interrupted the wait.
    Interrupted,
    /// Released by teardown: the last EVD was freed (`dead == false`) or the
    /// CNO itself is being destroyed with its IA (`dead == true`).
    Released { dead: bool },
}

struct State {
    agent: Agent,
    /// Bumped by every trigger or release.
    seq: u64,
    /// The EVD of the last trigger; NULL for a teardown release.
    hint: Handle,
    /// Threads blocked in `dat_cno_wait`.
    waiters: usize,
    dead: bool,
    /// EVDs associated with this CNO.
    evds: Vec<Weak<dyn CnoEvd>>,
}

/// A CNO.
#[repr(align(16))] // a handle tags its pointer in the low four bits
pub struct Cno {
    /// Its handle.
    pub handle: Handle,
    /// Its IA.
    pub ia: Arc<Ia>,
    st: Mutex<State>,
    /// Mirror of `State::seq` for spinning waiters (written under the lock).
    seq: AtomicU64,
    waiters: Notifier,
    /// Readable when data arrives for a queue pair feeding one of its
    /// EVDs (their completion queues' input descriptors): a waiter sleeps
    /// on it and then drives those queue pairs itself, as an EVD waiter
    /// does. `None` if the system refused an epoll instance (a waiter then
    /// relies on the transport's own progress).
    input: Option<Epoll>,
}

impl Cno {
    /// `dat_cno_create`.
    pub fn create(ia: &Arc<Ia>, agent: Agent) -> Result<Arc<Cno>> {
        let mut st = ia.live_state()?;
        st.check_limit(HandleType::Cno, ia.limits.max_cnos, Sub::ResourceMemory)?;
        let res = handle::reserve(ia.provider_word)?;
        let cno = Arc::new(Cno {
            handle: res.handle(),
            ia: ia.clone(),
            st: Mutex::new(State {
                agent,
                seq: 0,
                hint: Handle::NULL,
                waiters: 0,
                dead: false,
                evds: Vec::new(),
            }),
            seq: AtomicU64::new(0),
            waiters: Notifier::new(),
            input: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).ok(),
        });
        st.insert(cno.handle, Object::Cno(cno.clone()));
        res.publish(cno.clone());
        Ok(cno)
    }

    fn live_state(&self) -> Result<MutexGuard<'_, State>> {
        let st = lock(&self.st)?;
        if st.dead {
            Err(DatError::handle(Sub::HandleCno))
        } else {
            Ok(st)
        }
    }

    /// The current agent (`dat_cno_query`).
    pub fn agent(&self) -> Result<Agent> {
        Ok(self.live_state()?.agent)
    }

    /// `dat_cno_modify_agent`.
    pub fn set_agent(&self, agent: Agent) -> Result<()> {
        self.live_state()?.agent = agent;
        Ok(())
    }

    pub(crate) fn attach<E: CnoEvd + 'static>(&self, evd: &Arc<E>) {
        let mut st = lock_anyway(&self.st);
        st.evds.retain(|w| w.strong_count() > 0);
        st.evds.push(Arc::downgrade(evd) as Weak<dyn CnoEvd>);
        if let (Some(ep), Some(cq)) = (&self.input, evd.cq()) {
            let ev = EpollEvent::new(EpollFlags::EPOLLIN, evd.handle().addr() as u64);
            let _ = ep.add(cq.input_fd(), ev);
        }
    }

    pub(crate) fn detach(&self, evd: &dyn CnoEvd) {
        let mut st = lock_anyway(&self.st);
        st.evds
            .retain(|w| w.upgrade().is_some_and(|e| e.handle() != evd.handle()));
        if let (Some(ep), Some(cq)) = (&self.input, evd.cq()) {
            let _ = ep.delete(cq.input_fd());
        }
    }

    /// Bumps the sequence with the lock held; returns the one-shot agent
    /// to call, taken off the CNO (the default agent when there is none).
    fn signal(&self, st: &mut State, hint: Handle) -> Agent {
        st.seq = st.seq.wrapping_add(1);
        st.hint = hint;
        self.seq.store(st.seq, Ordering::Release);
        if st.agent.func != 0 {
            std::mem::take(&mut st.agent)
        } else {
            Agent::default()
        }
    }

    /// An EVD of this CNO got a notification event: wake every waiter with
    /// the EVD as hint and call the agent once (it is then disassociated).
    pub(crate) fn trigger(&self, evd: Handle) {
        let agent = {
            let mut st = lock_anyway(&self.st);
            if st.dead {
                return;
            }
            self.signal(&mut st, evd)
        };
        self.waiters.notify();
        self.call_agent(agent, evd);
    }

    fn call_agent(&self, agent: Agent, evd: Handle) {
        if agent.func != 0 {
            if let Some(invoke) = self.ia.agent_invoker {
                invoke(agent, evd);
            }
        }
    }

    /// Teardown release: the last EVD was freed (`dead == false`) or the IA
    /// is closing (`dead == true`). Every waiter returns with a NULL EVD and
    /// the agent, if any, is called once with a NULL EVD.
    pub(crate) fn release_waiters(&self, dead: bool) {
        let agent = {
            let mut st = lock_anyway(&self.st);
            if st.dead {
                return;
            }
            st.dead |= dead;
            self.signal(&mut st, Handle::NULL)
        };
        self.waiters.notify();
        self.call_agent(agent, Handle::NULL);
    }

    /// The CNO is destroyed (its IA closed).
    pub(crate) fn destroy(&self) {
        self.release_waiters(true);
    }

    /// `dat_cno_wait`. An EVD that already holds an event that would notify
    /// counts as a trigger, so no wake-up is lost. `held` is the call's [`Held`], taken before the CNO was looked up.
    pub fn wait(&self, timeout_us: u32, held: &Held) -> Result<CnoWake> {
        let deadline = (timeout_us != TIMEOUT_INFINITE)
            .then(|| Instant::now() + Duration::from_micros(u64::from(timeout_us)));
        let (start, evds) = {
            let mut st = self.live_state()?;
            st.waiters += 1;
            (st.seq, st.evds.clone())
        };
        // Completions still in an EVD's CQ count too: one that arrived
        // before `start` was read triggered the CNO then, and nothing will
        // trigger it again for that completion (the lost wake-up a waiter
        // that dequeued just before would otherwise sleep through).
        let pending = evds
            .iter()
            .filter_map(Weak::upgrade)
            .find(|e| {
                e.fill();
                e.has_notifiable_event()
            })
            .map(|e| e.handle());
        let outcome = if let Some(h) = pending {
            CnoWake::Evd(h)
        } else {
            // Like an EVD waiter, the CNO waiter drives the queue pairs of
            // its EVDs while it spins and when data for them wakes it: the
            // completions they produce trigger this CNO through their
            // queues' notification hooks, with no thread hop.
            let evds: Vec<Arc<dyn CnoEvd>> = evds.iter().filter_map(Weak::upgrade).collect();
            let cqs: Vec<_> = evds.iter().filter_map(|e| e.cq()).collect();
            let declared = std::cell::Cell::new(false);
            let before = || {
                if !declared.replace(true) {
                    for cq in &cqs {
                        cq.sleeping(true);
                    }
                }
            };
            let sleep = Sleep {
                deadline,
                fd: self.input.as_ref().map(|e| e.0.as_fd()),
                before: Some(&before),
            };
            let r = wait::wait(&self.waiters, sleep, held, || {
                if self.seq.load(Ordering::Acquire) == start {
                    for e in &evds {
                        e.fill();
                    }
                }
                if self.seq.load(Ordering::Acquire) == start {
                    return None;
                }
                let st = lock_anyway(&self.st);
                if st.seq == start {
                    return None;
                }
                Some(if st.hint.is_null() {
                    CnoWake::Released { dead: st.dead }
                } else {
                    CnoWake::Evd(st.hint)
                })
            });
            if declared.get() {
                for cq in &cqs {
                    cq.sleeping(false);
                }
            }
            match r {
                Ok(w) => w,
                Err(Wake::TimedOut) => CnoWake::Timeout,
                Err(Wake::Interrupted) => CnoWake::Interrupted,
            }
        };
        lock_anyway(&self.st).waiters -= 1;
        Ok(outcome)
    }

    /// `dat_cno_free`: refused while an EVD is associated or a thread waits.
    pub fn free(&self) -> Result<()> {
        let mut ia = self.ia.live_state()?;
        if ia.users(self.handle) > 0 || self.live_state()?.waiters > 0 {
            return Err(DatError::state(Sub::CnoInUse));
        }
        ia.remove(self.handle, Sub::HandleCno)?;
        drop(ia);
        // Freed, not torn down: nobody waits and no agent is owed a call.
        lock_anyway(&self.st).dead = true;
        Ok(())
    }
}

/// Looks up a live CNO, `DAT_INVALID_HANDLE/CNO` otherwise. Lock-free.
pub fn lookup(addr: usize) -> Result<Ref<Cno>> {
    handle::expect::<Cno>(addr, Sub::HandleCno)
}
