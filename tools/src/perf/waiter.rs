//! Waiting for DTO completions the way `--wait` asks (polling, blocking
//! on the EVD or on its CNO), each wait bounded by the run's timeout and
//! interrupted when the connection EVD reports the peer gone.

use std::time::{Duration, Instant};

use dat_abi::*;

use super::dat::{d, dat_error, dto_status_name, event_name, timeout_us, type_of, Cno, Evd};
use super::proto::Wait;
use super::Error;

/// A completed DTO.
#[derive(Copy, Clone, Debug)]
pub struct DtoCompletion {
    pub cookie: u64,
    pub len: u64,
}

/// How a side waits for its DTO completions (`--wait`), with the deadline
/// of every wait and the connection EVD checked for a lost peer.
pub struct Waiter<'a> {
    pub dto: &'a Evd,
    pub conn: &'a Evd,
    pub cno: Option<&'a Cno>,
    pub wait: Wait,
    pub timeout: Duration,
}

/// Slice of a blocking wait between looks at the connection EVD.
const SLICE: Duration = Duration::from_millis(500);

impl Waiter<'_> {
    /// Fails when the connection EVD says the connection is gone.
    pub fn check_conn(&self) -> Result<(), Error> {
        if let Some(ev) = self.conn.dequeue()? {
            return Err(lost(Some(ev.event_number)));
        }
        Ok(())
    }

    /// The next DTO completion; it must have succeeded.
    pub fn next(&self, what: &str) -> Result<DtoCompletion, Error> {
        let ev = self.next_event(what)?;
        self.dto_of(&ev, what)
    }

    /// The next event of the DTO EVD, whatever its status.
    pub fn next_event(&self, what: &str) -> Result<DAT_EVENT, Error> {
        match self.wait {
            // With --wait mem a side calls the library only once the data
            // is there (or its send queue is full): then it dequeues.
            // (The clock is read only once the first dequeue found nothing:
            // perftest's poll loop reads none.)
            Wait::Poll | Wait::Mem => self.next_poll(what),
            Wait::Evd => self.next_evd(Instant::now() + self.timeout, what),
            Wait::Cno => self.next_cno(Instant::now() + self.timeout, what),
        }
    }

    /// A completion if one is there (never blocks).
    pub fn try_next(&self, what: &str) -> Result<Option<DtoCompletion>, Error> {
        match self.dto.dequeue()? {
            Some(ev) => Ok(Some(self.dto_of(&ev, what)?)),
            None => Ok(None),
        }
    }

    fn dto_of(&self, ev: &DAT_EVENT, what: &str) -> Result<DtoCompletion, Error> {
        if ev.event_number != DAT_DTO_COMPLETION_EVENT {
            return Err(Error(format!(
                "waiting for {what}: got {} ({:#x})",
                event_name(ev.event_number),
                ev.event_number
            )));
        }
        // SAFETY: a DTO completion event carries dto_completion data.
        let c = unsafe { ev.event_data.dto_completion_event_data };
        if c.status != DAT_DTO_SUCCESS {
            if c.status == DAT_DTO_ERR_FLUSHED {
                // The connection is gone; say how if the EVD knows.
                let why = self.conn.dequeue().ok().flatten().map(|e| e.event_number);
                return Err(lost(why));
            }
            return Err(Error(format!(
                "{what} completed with {} ({})",
                dto_status_name(c.status),
                c.status
            )));
        }
        Ok(DtoCompletion {
            // SAFETY: the cookie is the u64 we posted.
            cookie: unsafe { c.user_cookie.as_64 },
            len: c.transfered_length,
        })
    }

    fn timed_out(&self, what: &str) -> Error {
        Error(format!(
            "timed out after {} s waiting for {what}",
            self.timeout.as_secs_f64()
        ))
    }

    fn next_poll(&self, what: &str) -> Result<DAT_EVENT, Error> {
        let mut spins: u32 = 0;
        let mut deadline = None;
        loop {
            if let Some(ev) = self.dto.dequeue()? {
                return Ok(ev);
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 {
                self.check_conn()?;
                let d = *deadline.get_or_insert_with(|| Instant::now() + self.timeout);
                if Instant::now() > d {
                    return Err(self.timed_out(what));
                }
            }
            std::hint::spin_loop();
        }
    }

    fn next_evd(&self, deadline: Instant, what: &str) -> Result<DAT_EVENT, Error> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(ev) = self.dto.wait(left.min(SLICE))? {
                return Ok(ev);
            }
            self.check_conn()?;
            if Instant::now() >= deadline {
                return Err(self.timed_out(what));
            }
        }
    }

    fn next_cno(&self, deadline: Instant, what: &str) -> Result<DAT_EVENT, Error> {
        let cno = self.cno.expect("--wait cno has a CNO");
        loop {
            if let Some(ev) = self.dto.dequeue()? {
                return Ok(ev);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out(what));
            }
            self.cno_slice(cno, left)?;
        }
    }

    /// One dat_cno_wait of at most a slice of `left`.
    fn cno_slice(&self, cno: &Cno, left: Duration) -> Result<(), Error> {
        let mut evd = DAT_HANDLE_NULL;
        // SAFETY: our CNO; an out-pointer to a local.
        let rc = unsafe { (d().dat_cno_wait)(cno.h, timeout_us(left.min(SLICE)), &mut evd) };
        if rc != DAT_SUCCESS {
            // DAT 1.2 reports a CNO wait that timed out as
            // DAT_QUEUE_EMPTY (some libraries say DAT_TIMEOUT_EXPIRED).
            if !matches!(type_of(rc), DAT_QUEUE_EMPTY | DAT_TIMEOUT_EXPIRED) {
                return Err(dat_error("dat_cno_wait", rc));
            }
            self.check_conn()?;
        }
        Ok(())
    }

    /// An event of the DTO EVD before `until` (None when `until` passed),
    /// waiting in the run's style; with mem no library call at all: the
    /// thread sleeps until `until` (the idle test).
    pub fn event_until(&self, until: Instant) -> Result<Option<DAT_EVENT>, Error> {
        match self.wait {
            Wait::Mem => {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
                Ok(None)
            }
            Wait::Poll => {
                let mut spins: u32 = 0;
                loop {
                    if let Some(ev) = self.dto.dequeue()? {
                        return Ok(Some(ev));
                    }
                    spins = spins.wrapping_add(1);
                    if spins % 4096 == 0 {
                        self.check_conn()?;
                        if Instant::now() >= until {
                            return Ok(None);
                        }
                    }
                    std::hint::spin_loop();
                }
            }
            Wait::Evd => loop {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                if let Some(ev) = self.dto.wait(left.min(SLICE))? {
                    return Ok(Some(ev));
                }
                self.check_conn()?;
            },
            Wait::Cno => {
                let cno = self.cno.expect("--wait cno has a CNO");
                loop {
                    if let Some(ev) = self.dto.dequeue()? {
                        return Ok(Some(ev));
                    }
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    self.cno_slice(cno, left)?;
                }
            }
        }
    }

    /// Turns an event into a DTO completion (it must have succeeded).
    pub fn dto(&self, ev: &DAT_EVENT, what: &str) -> Result<DtoCompletion, Error> {
        self.dto_of(ev, what)
    }

    /// Waits for a connection event on the connection EVD.
    pub fn conn_event(&self, what: &str) -> Result<DAT_EVENT, Error> {
        self.conn_event_within(self.timeout, what)
    }

    /// The event that ends a `dat_ep_connect` made with our timeout: the
    /// library reports TIMED_OUT when that timeout passes, so the wait
    /// lasts a little longer (it would otherwise race the library's own).
    pub fn connect_event(&self, what: &str) -> Result<DAT_EVENT, Error> {
        self.conn_event_within(self.timeout + Duration::from_secs(1), what)
    }

    fn conn_event_within(&self, t: Duration, what: &str) -> Result<DAT_EVENT, Error> {
        self.conn.wait(t)?.ok_or_else(|| self.timed_out(what))
    }
}

/// "connection lost: ..." for a connection that ended under us.
pub fn lost(ev: Option<DAT_EVENT_NUMBER>) -> Error {
    match ev {
        Some(n) => Error(format!(
            "connection lost: the peer closed it or died ({})",
            event_name(n)
        )),
        None => {
            Error("connection lost: the peer closed it or died (operations flushed)".to_string())
        }
    }
}
