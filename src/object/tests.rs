//! Unit tests of the object layer (the C tests cover the same rules from
//! the outside, by spec ID).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::error::{DatError, Input, Sub, Type};
use crate::handle::{self, Handle};
use crate::transport::DeviceConfig;
use crate::wait::Held;

fn open(async_qlen: i32) -> Arc<Ia> {
    Ia::open::<Evd>(
        OpenParams {
            name: "test0".into(),
            ro_aware: false,
            provider_word: 0x1000,
            dapl_major: 1,
            dapl_minor: 2,
            thread_safe: false,
            device: DeviceConfig::default(),
            async_evd: AsyncRequest::Create(async_qlen),
        },
        Some(count_agent),
    )
    .expect("open")
}

/// Agent calls, counted per agent `instance_data` (each test uses its own,
/// since tests run concurrently).
static AGENT_CALLS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
fn count_agent(a: Agent, _: Handle) {
    AGENT_CALLS[a.instance_data % 8].fetch_add(1, Ordering::SeqCst);
}

#[test]
fn graceful_close_waits_for_children_abrupt_close_retires_them() {
    let ia = open(4);
    let pz = Pz::create(&ia).expect("pz");
    let evd = Evd::create(&ia, 4, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    assert_eq!(ia.close(true), Err(DatError::state(Sub::IaInUse)));
    assert!(handle::get::<Pz>(pz.handle.addr()).is_some());
    ia.close(false).expect("abrupt");
    assert!(handle::type_of(pz.handle.addr()).is_none());
    assert!(handle::type_of(evd.handle.addr()).is_none());
    assert!(handle::type_of(ia.handle.addr()).is_none());
    assert_eq!(ia.close(false), Err(DatError::handle(Sub::HandleIa)));
}

#[test]
fn open_with_qlen_0_is_arg2() {
    let r = Ia::open::<Evd>(
        OpenParams {
            name: "x".into(),
            ro_aware: false,
            provider_word: 0,
            dapl_major: 1,
            dapl_minor: 2,
            thread_safe: false,
            device: DeviceConfig::default(),
            async_evd: AsyncRequest::Create(0),
        },
        None,
    );
    assert_eq!(r.err(), Some(DatError::invalid(Input::AsyncEvdQlen)));
}

#[test]
fn wait_needs_threshold_and_timeout_dequeues_nothing() {
    let ia = open(4);
    let evd = Evd::create(&ia, 4, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    evd.post_se(event::SOFTWARE, 1).expect("post");
    evd.post_se(event::SOFTWARE, 2).expect("post");
    assert_eq!(
        evd.wait(0, 3, &Held::nothing()),
        Ok(WaitOutcome::Timeout(2))
    );
    assert_eq!(
        evd.wait(0, 5, &Held::nothing()),
        Err(DatError::invalid(Input::Threshold))
    );
    match evd.wait(0, 2, &Held::nothing()) {
        Ok(WaitOutcome::Event(e, 1)) => assert_eq!(e.data, EventData::Software { pointer: 1 }),
        other => panic!("unexpected {other:?}"),
    }
    let t = Instant::now();
    assert_eq!(
        evd.wait(50_000, 2, &Held::signals()),
        Ok(WaitOutcome::Timeout(1))
    );
    assert!(t.elapsed() >= Duration::from_millis(45));
    ia.close(false).expect("close");
}

#[test]
fn full_queue_software_vs_provider_events() {
    let ia = open(4);
    let evd = Evd::create(&ia, 1, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    evd.post_se(event::SOFTWARE, 1).expect("post");
    assert_eq!(
        evd.post_se(event::SOFTWARE, 2),
        Err(DatError::of(Type::QueueFull))
    );
    let async_h = ia.async_evd_handle().expect("created");
    let async_evd = evd::lookup(async_h.addr()).expect("async");
    assert_eq!(async_evd.dequeue(), Err(DatError::of(Type::QueueEmpty)));
    // A provider event on a full EVD is lost and reported as overflow.
    evd.post_provider_event(Event::software(3), true);
    let ov = async_evd.dequeue().expect("overflow event");
    assert_eq!(ov.number, event::ASYNC_EVD_OVERFLOW);
    assert_eq!(
        ov.data,
        EventData::AsyncError {
            handle: evd.handle,
            reason: event::REASON_EVD_OVERFLOW
        }
    );
    ia.close(false).expect("close");
}

#[test]
fn cno_trigger_wakes_waiter_and_agent_is_one_shot() {
    let ia = open(4);
    let cno = Cno::create(
        &ia,
        Agent {
            instance_data: 7,
            func: 0xdead,
        },
    )
    .expect("cno");
    let evd = Evd::create(&ia, 4, cno.handle, EVD_SOFTWARE_FLAG).expect("evd");
    assert_eq!(cno.free(), Err(DatError::state(Sub::CnoInUse)));
    let before = AGENT_CALLS[7].load(Ordering::SeqCst);
    let waiter = {
        let cno = cno.clone();
        std::thread::spawn(move || cno.wait(5_000_000, &Held::signals()))
    };
    std::thread::sleep(Duration::from_millis(50));
    evd.post_se(event::SOFTWARE, 9).expect("post");
    assert_eq!(waiter.join().expect("join"), Ok(CnoWake::Evd(evd.handle)));
    assert_eq!(AGENT_CALLS[7].load(Ordering::SeqCst), before + 1);
    assert_eq!(cno.agent(), Ok(Agent::default()));
    evd.post_se(event::SOFTWARE, 10).expect("post");
    assert_eq!(AGENT_CALLS[7].load(Ordering::SeqCst), before + 1);
    evd.free().expect("free evd");
    cno.free().expect("free cno");
    ia.close(true).expect("graceful");
}

#[test]
fn evd_free_aborts_waiter() {
    let ia = open(4);
    let evd = Evd::create(&ia, 4, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    let waiter = {
        let evd = evd.clone();
        std::thread::spawn(move || {
            evd.wait(crate::object::evd::TIMEOUT_INFINITE, 1, &Held::signals())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    evd.free().expect("free");
    assert_eq!(waiter.join().expect("join"), Err(DatError::of(Type::Abort)));
    ia.close(true).expect("graceful");
}

/// A signal that arrives after `dat_evd_wait`/`dat_cno_wait` took its hold,
/// while the call looks up its object and runs the object's checks (the C
/// entry points take the hold first), interrupts the wait, and the event
/// posted later is still queued.
#[test]
fn a_signal_during_the_calls_own_work_interrupts_evd_and_cno_waits() {
    use crate::wait::tests::{handled, signal_self};
    let ia = open(4);
    let cno = Cno::create(&ia, Agent::default()).expect("cno");
    let evd = Evd::create(&ia, 4, cno.handle, EVD_SOFTWARE_FLAG).expect("evd");
    let before = handled();
    let held = Held::signals();
    signal_self();
    assert_eq!(
        evd.wait(5_000_000, 1, &held),
        Err(DatError::of(Type::InterruptedCall))
    );
    drop(held);
    let held = Held::signals();
    signal_self();
    assert_eq!(cno.wait(5_000_000, &held), Ok(CnoWake::Interrupted));
    drop(held);
    assert_eq!(handled(), before + 2);
    evd.post_se(event::SOFTWARE, 4).expect("post");
    assert!(matches!(
        evd.wait(5_000_000, 1, &Held::signals()),
        Ok(WaitOutcome::Event(_, 0))
    ));
    evd.free().expect("free evd");
    cno.free().expect("free cno");
    ia.close(true).expect("graceful");
}

#[test]
fn lmr_contexts_and_sync_validation() {
    let ia = open(4);
    let pz = Pz::create(&ia).expect("pz");
    let buf = vec![0u8; 4096];
    let va = buf.as_ptr() as u64;
    let req = |privileges| LmrRequest {
        mem_type: attr::MEM_TYPE_VIRTUAL,
        region: Region::Va(va),
        length: 4096,
        pz: pz.handle,
        privileges,
    };
    let a = Lmr::create(&ia, req(lmr::PRIV_LOCAL_READ)).expect("lmr");
    let b = Lmr::create(&ia, req(0x33)).expect("lmr");
    assert_eq!(a.rmr_context, 0);
    assert_ne!(b.rmr_context, 0);
    assert_ne!(a.lmr_context, b.lmr_context);
    assert_eq!(
        ia.sync_segments([(a.lmr_context, va, 4096)].into_iter()),
        Ok(())
    );
    assert_eq!(
        ia.sync_segments([(a.lmr_context, va, 4097)].into_iter()),
        Err(DatError::invalid(Input::LocalSegments))
    );
    assert_eq!(ia.sync_segments([(0xffff, 0, 0)].into_iter()), Ok(()));
    assert_eq!(pz.free(), Err(DatError::state(Sub::PzInUse)));
    a.free().expect("free");
    assert_eq!(
        ia.sync_segments([(a.lmr_context, va, 1)].into_iter()),
        Err(DatError::invalid(Input::LocalSegments))
    );
    b.free().expect("free");
    pz.free().expect("pz free");
    ia.close(true).expect("graceful");
}

#[test]
fn lmr_from_lmr_outlives_its_base() {
    let ia = open(4);
    let pz = Pz::create(&ia).expect("pz");
    let buf = vec![0u8; 8192];
    let va = buf.as_ptr() as u64;
    let base = Lmr::create(
        &ia,
        LmrRequest {
            mem_type: attr::MEM_TYPE_VIRTUAL,
            region: Region::Va(va),
            length: 8192,
            pz: pz.handle,
            privileges: 0x33,
        },
    )
    .expect("base");
    let derived = Lmr::create(
        &ia,
        LmrRequest {
            mem_type: attr::MEM_TYPE_LMR,
            region: Region::Lmr(base.handle),
            length: 0,
            pz: pz.handle,
            privileges: lmr::PRIV_LOCAL_READ,
        },
    )
    .expect("derived");
    assert!(Arc::ptr_eq(&base.registration, &derived.registration));
    base.free().expect("free base");
    assert_eq!(
        ia.sync_segments([(base.lmr_context, va, 1)].into_iter()),
        Err(DatError::invalid(Input::LocalSegments)),
        "the base's context died with it"
    );
    assert_eq!(
        ia.sync_segments([(derived.lmr_context, va, 8192)].into_iter()),
        Ok(()),
        "the derived LMR still names the whole registration"
    );
    assert_eq!(derived.registration.size, 8192);
    derived.free().expect("free derived");
    pz.free().expect("pz");
    ia.close(true).expect("close");
}

#[test]
fn cno_agent_is_called_when_its_last_evd_is_freed_and_on_abrupt_close() {
    let ia = open(4);
    let agent = Agent {
        instance_data: 1,
        func: 0xbeef,
    };
    let cno = Cno::create(&ia, agent).expect("cno");
    let evd = Evd::create(&ia, 4, cno.handle, EVD_SOFTWARE_FLAG).expect("evd");
    let before = AGENT_CALLS[1].load(Ordering::SeqCst);
    evd.free().expect("free evd");
    assert_eq!(AGENT_CALLS[1].load(Ordering::SeqCst), before + 1);
    assert_eq!(cno.agent(), Ok(Agent::default()), "one-shot");
    cno.set_agent(agent).expect("re-arm");
    let before = AGENT_CALLS[1].load(Ordering::SeqCst);
    ia.close(false).expect("abrupt");
    assert_eq!(AGENT_CALLS[1].load(Ordering::SeqCst), before + 1);
}

#[test]
fn a_panic_under_an_evd_lock_makes_the_evd_report_internal_error() {
    let ia = open(4);
    let evd = Evd::create(&ia, 4, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    evd.poison_for_test();
    assert_eq!(
        evd.post_se(event::SOFTWARE, 1),
        Err(DatError::of(Type::InternalError))
    );
    assert_eq!(evd.dequeue(), Err(DatError::of(Type::InternalError)));
    assert_eq!(
        evd.wait(10, 1, &Held::signals()),
        Err(DatError::of(Type::InternalError))
    );
    ia.close(false).expect("abrupt close still works");
}

#[test]
fn concurrent_frees_have_one_winner() {
    let ia = open(4);
    for _ in 0..50 {
        let pz = Pz::create(&ia).expect("pz");
        let results: Vec<_> = std::thread::scope(|s| {
            let a = s.spawn(|| pz.free());
            let b = s.spawn(|| pz.free());
            vec![a.join().expect("a"), b.join().expect("b")]
        });
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
        assert!(results.contains(&Err(DatError::handle(Sub::HandlePz))));
    }
    ia.close(true).expect("close");
}

/// Counts the calling thread's heap allocations (for the no-allocation
/// tests; the transport's use it too).
pub(crate) mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    pub struct Counting;

    // SAFETY: forwards to the system allocator unchanged; only counts.
    #[allow(unsafe_code)]
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(p, l, n) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Allocations made by this thread so far.
    pub fn count() -> u64 {
        ALLOCS.with(Cell::get)
    }
}

#[test]
fn posting_and_dequeuing_events_allocates_nothing() {
    let ia = open(4);
    let evd = Evd::create(&ia, 64, Handle::NULL, EVD_SOFTWARE_FLAG).expect("evd");
    let cno = Cno::create(&ia, Agent::default()).expect("cno");
    let fed = Evd::create(&ia, 64, cno.handle, EVD_SOFTWARE_FLAG).expect("evd");
    // Warm up lazily created per-thread state (parker, wait descriptors).
    evd.post_se(event::SOFTWARE, 0).expect("post");
    evd.dequeue().expect("dequeue");
    let before = counting::count();
    for round in 0..100 {
        for i in 0..64 {
            evd.post_se(event::SOFTWARE, i).expect("post");
            fed.post_se(event::SOFTWARE, i)
                .expect("post to a CNO's EVD");
        }
        // A 65th event overflows: refused without allocating either.
        assert_eq!(
            evd.post_se(event::SOFTWARE, 99),
            Err(DatError::of(Type::QueueFull))
        );
        for _ in 0..64 {
            evd.dequeue().expect("dequeue");
            fed.dequeue().expect("dequeue");
        }
        let handle = crate::handle::get::<Evd>(evd.handle.addr()).expect("lookup");
        assert_eq!(handle.handle, evd.handle, "round {round}");
    }
    assert_eq!(
        evd.wait(0, 1, &Held::nothing()),
        Ok(WaitOutcome::Timeout(0)),
        "an expired wait"
    );
    assert_eq!(counting::count(), before, "allocations on the event path");
    // The counter does see this thread's allocations.
    let v = std::hint::black_box(vec![1u8; 16]);
    assert_eq!(counting::count(), before + 1);
    drop(v);
    ia.close(false).expect("close");
}
