//! Consumer Notification Object: one place to wait for notifications from
//! several EVDs of an IA, with an optional one-shot OS wait proxy agent.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::error::{DatError, Result, Sub};
use crate::handle::{self, Handle, HandleType, Object};
use crate::object::evd::{Evd, TIMEOUT_INFINITE};
use crate::object::ia::Ia;
use crate::transport::{Blocker, Wake};

/// `DAT_OS_WAIT_PROXY_AGENT` as two opaque words. `func == 0` means no agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agent {
    pub instance_data: usize,
    pub func: usize,
}

/// Calls an agent function with `(instance_data, evd)`. Installed by the C
/// layer, which knows how to call a C function pointer.
pub type AgentInvoker = fn(Agent, Handle);

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
    evds: Vec<Weak<Evd>>,
}

/// A CNO.
pub struct Cno {
    /// Its handle.
    pub handle: Handle,
    /// Its IA.
    pub ia: Arc<Ia>,
    st: Mutex<State>,
    blocker: Blocker,
}

impl Cno {
    pub(crate) fn create(ia: &Arc<Ia>, agent: Agent) -> Result<Arc<Cno>> {
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
            blocker: Blocker::new(),
        });
        st.insert(cno.handle, Object::Cno(cno.clone()));
        res.publish(Object::Cno(cno.clone()));
        Ok(cno)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn live_state(&self) -> Result<MutexGuard<'_, State>> {
        let st = self.state();
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

    pub(crate) fn attach(&self, evd: &Arc<Evd>) {
        let mut st = self.state();
        st.evds.retain(|w| w.strong_count() > 0);
        st.evds.push(Arc::downgrade(evd));
    }

    pub(crate) fn detach(&self, evd: &Evd) {
        let mut st = self.state();
        st.evds
            .retain(|w| w.upgrade().is_some_and(|e| e.handle != evd.handle));
    }

    /// An EVD of this CNO got a notification event: wake every waiter with
    /// the EVD as hint and call the agent once (it is then disassociated).
    pub(crate) fn trigger(&self, evd: Handle) {
        let agent = {
            let mut st = self.state();
            if st.dead {
                return;
            }
            st.seq = st.seq.wrapping_add(1);
            st.hint = evd;
            self.blocker.wake_all();
            if st.agent.func != 0 {
                std::mem::take(&mut st.agent)
            } else {
                Agent::default()
            }
        };
        self.call_agent(agent, evd);
    }

    fn call_agent(&self, agent: Agent, evd: Handle) {
        if agent.func != 0 {
            if let Some(invoke) = self.ia.agent_invoker {
                invoke(agent, evd);
            }
        }
    }

    /// Releases every waiter (and the agent) with a NULL EVD.
    pub(crate) fn release_waiters(&self, dead: bool) {
        let agent = {
            let mut st = self.state();
            st.seq = st.seq.wrapping_add(1);
            st.hint = Handle::NULL;
            st.dead |= dead;
            self.blocker.wake_all();
            if st.waiters > 0 && st.agent.func != 0 {
                std::mem::take(&mut st.agent)
            } else {
                Agent::default()
            }
        };
        self.call_agent(agent, Handle::NULL);
    }

    /// The CNO is destroyed (its IA closed): waiters return with NULL.
    pub(crate) fn destroy(&self) {
        self.release_waiters(true);
    }

    /// `dat_cno_wait`. An EVD that already holds an event that would notify
    /// counts as a trigger, so no wake-up is lost.
    pub fn wait(&self, timeout_us: u32) -> Result<CnoWake> {
        let (start, evds) = {
            let mut st = self.live_state()?;
            st.waiters += 1;
            (st.seq, st.evds.clone())
        };
        let pending = evds
            .iter()
            .filter_map(Weak::upgrade)
            .find(|e| e.has_notifiable_event())
            .map(|e| e.handle);
        let mut st = self.state();
        let outcome = if let Some(h) = pending {
            CnoWake::Evd(h)
        } else {
            let deadline = (timeout_us != TIMEOUT_INFINITE)
                .then(|| Instant::now() + Duration::from_micros(u64::from(timeout_us)));
            loop {
                if st.seq != start {
                    break if st.hint.is_null() {
                        CnoWake::Released { dead: st.dead }
                    } else {
                        CnoWake::Evd(st.hint)
                    };
                }
                if st.dead {
                    break CnoWake::Released { dead: true };
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break CnoWake::Timeout;
                }
                let ticket = self.blocker.ticket();
                drop(st);
                let wake = self.blocker.wait(ticket, deadline);
                st = self.state();
                if wake == Wake::Interrupted {
                    break CnoWake::Interrupted;
                }
            }
        };
        st.waiters -= 1;
        Ok(outcome)
    }

    /// `dat_cno_free`: refused while an EVD is associated or a thread waits.
    pub fn free(&self) -> Result<()> {
        let mut ia = self.ia.live_state()?;
        if !ia.is_live(self.handle) {
            return Err(DatError::handle(Sub::HandleCno));
        }
        if ia.users(self.handle) > 0 || self.state().waiters > 0 {
            return Err(DatError::state(Sub::CnoInUse));
        }
        ia.remove(self.handle);
        drop(ia);
        self.destroy();
        Ok(())
    }
}

/// Looks up a live CNO, `DAT_INVALID_HANDLE/CNO` otherwise.
pub fn lookup(addr: usize) -> Result<Arc<Cno>> {
    let cno = handle::expect::<Cno>(addr, Sub::HandleCno)?;
    cno.live_state().map(|_| ())?;
    Ok(cno)
}
