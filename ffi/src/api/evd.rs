//! The 12 `dat_evd_*` functions. Their primary-handle pre-check uses
//! `DAT_INVALID_HANDLE1` (0x8005001A), as the reference libdat does.

use udapl::error::{DatError, Input, Sub};
use udapl::object::{Evd, Event, EventData, Ia, WaitOutcome};
use udapl::wait::Held;

use crate::boundary::{input, out, put};
use crate::entry::entry;
use crate::handles::{core_handle, from_handle, to_handle};
use dat_abi::*;

/// Writes a core event as a `DAT_EVENT`.
pub(crate) fn to_c_event(ev: &Event) -> DAT_EVENT {
    let ctx = |v: u64| DAT_CONTEXT { as_64: v };
    let event_data = match ev.data {
        EventData::Software { pointer } => DAT_EVENT_DATA {
            software_event_data: DAT_SOFTWARE_EVENT_DATA {
                pointer: pointer as DAT_PVOID,
            },
        },
        EventData::Dto {
            ep,
            cookie,
            status,
            length,
        } => DAT_EVENT_DATA {
            dto_completion_event_data: DAT_DTO_COMPLETION_EVENT_DATA {
                ep_handle: to_handle(ep),
                user_cookie: ctx(cookie),
                status,
                transfered_length: length,
            },
        },
        EventData::RmrBind {
            rmr,
            cookie,
            status,
        } => DAT_EVENT_DATA {
            rmr_completion_event_data: DAT_RMR_BIND_COMPLETION_EVENT_DATA {
                rmr_handle: to_handle(rmr),
                user_cookie: ctx(cookie),
                status,
            },
        },
        EventData::ConnectionRequest {
            sp,
            local_addr,
            conn_qual,
            cr,
        } => DAT_EVENT_DATA {
            cr_arrival_event_data: DAT_CR_ARRIVAL_EVENT_DATA {
                sp_handle: DAT_SP_HANDLE {
                    psp_handle: to_handle(sp),
                },
                local_ia_address_ptr: local_addr as DAT_IA_ADDRESS_PTR,
                conn_qual,
                cr_handle: to_handle(cr),
            },
        },
        EventData::Connection {
            ep,
            private_data_size,
            private_data,
        } => DAT_EVENT_DATA {
            connect_event_data: DAT_CONNECTION_EVENT_DATA {
                ep_handle: to_handle(ep),
                private_data_size,
                private_data: private_data as DAT_PVOID,
            },
        },
        EventData::AsyncError { handle, reason } => DAT_EVENT_DATA {
            asynch_error_event_data: DAT_ASYNCH_ERROR_EVENT_DATA {
                dat_handle: to_handle(handle),
                reason,
            },
        },
    };
    DAT_EVENT {
        event_number: ev.number,
        evd_handle: to_handle(ev.evd),
        event_data,
    }
}

/// Creates an Event Dispatcher.
///
/// # Safety
/// `evd_handle` is NULL or points at a writable handle.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA, CNO), `DAT_INVALID_PARAMETER`
/// (ARG2 qlen <= 0, ARG5 NULL OUT), `DAT_INSUFFICIENT_RESOURCES` (TEVD).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_create(
    ia_handle: DAT_IA_HANDLE,
    evd_min_qlen: DAT_COUNT,
    cno_handle: DAT_CNO_HANDLE,
    evd_flags: DAT_EVD_FLAGS,
    evd_handle: *mut DAT_EVD_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        evd_create_func(ia_handle, evd_min_qlen, cno_handle, evd_flags, evd_handle),
        {
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(evd_handle, Input::EvdHandle)?;
            let evd = Evd::create(&ia, evd_min_qlen, core_handle(cno_handle), evd_flags)?;
            slot.set(to_handle(evd.handle));
            Ok(())
        }
    )
}

/// Returns EVD parameters.
///
/// # Safety
/// `evd_param` is NULL or points at a writable `DAT_EVD_PARAM`.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG2 mask, ARG3 NULL).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_query(
    evd_handle: DAT_EVD_HANDLE,
    evd_param_mask: DAT_EVD_PARAM_MASK,
    evd_param: *mut DAT_EVD_PARAM,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_query_func(evd_handle, evd_param_mask, evd_param),
        {
            let evd = from_handle::<Evd>(evd_handle)?;
            if evd_param_mask & !DAT_EVD_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::EvdParamMask));
            }
            if evd_param_mask == 0 {
                return Ok(());
            }
            let slot = out(evd_param, Input::EvdParam)?;
            let p = evd.query()?;
            put!(slot, ia_handle = to_handle(p.ia));
            put!(slot, evd_qlen = p.qlen);
            put!(slot, evd_state = p.state);
            put!(slot, cno_handle = to_handle(p.cno));
            put!(slot, evd_flags = p.flags);
            Ok(())
        }
    )
}

/// Attaches, replaces or detaches the EVD's CNO.
///
/// # Safety
/// Handles are validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (EVD, CNO).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_modify_cno(
    evd_handle: DAT_EVD_HANDLE,
    cno_handle: DAT_CNO_HANDLE,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_modify_cno_func(evd_handle, cno_handle),
        {
            from_handle::<Evd>(evd_handle)?
                .arc()
                .modify_cno(core_handle(cno_handle))
        }
    )
}

/// Lets arrivals trigger the EVD's CNO.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_evd_enable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry!(evd_handle, Sub::Handle1, evd_enable_func(evd_handle), {
        from_handle::<Evd>(evd_handle)?.set_enabled(true)
    })
}

/// Stops arrivals from triggering the EVD's CNO.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_evd_disable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry!(evd_handle, Sub::Handle1, evd_disable_func(evd_handle), {
        from_handle::<Evd>(evd_handle)?.set_enabled(false)
    })
}

/// Waits until `threshold` events are queued, then dequeues one.
///
/// # Safety
/// `event` and `nmore` are NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_TIMEOUT_EXPIRED` (`*nmore` set, nothing dequeued),
/// `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG3 threshold, ARG4/ARG5
/// NULL), `DAT_INVALID_STATE` (unwaitable, another waiter), `DAT_ABORT`
/// (EVD freed or IA closed while waiting).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_wait(
    evd_handle: DAT_EVD_HANDLE,
    timeout: DAT_TIMEOUT,
    threshold: DAT_COUNT,
    event: *mut DAT_EVENT,
    nmore: *mut DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_wait_func(evd_handle, timeout, threshold, event, nmore),
        {
            // First of all, hold the signals (unless the call cannot sleep):
            // a handler run during the lookup or the EVD's own work could
            // not end the sleep that may follow (src/wait/mod.rs).
            let held = Held::signals_if(timeout != 0);
            // A counted reference: the wait may block for long.
            let evd = from_handle::<Evd>(evd_handle)?.arc();
            let ev_slot = out(event, Input::Event)?;
            let nmore_slot = out(nmore, Input::Nmore)?;
            match evd.wait(timeout, threshold, &held)? {
                WaitOutcome::Event(ev, left) => {
                    ev_slot.set(to_c_event(&ev));
                    nmore_slot.set(i32::try_from(left).unwrap_or(i32::MAX));
                    Ok(())
                }
                WaitOutcome::Timeout(left) => {
                    nmore_slot.set(i32::try_from(left).unwrap_or(i32::MAX));
                    Err(DatError::of(udapl::error::Type::TimeoutExpired))
                }
            }
        }
    )
}

/// Changes the queue capacity.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG2),
/// `DAT_INSUFFICIENT_RESOURCES`, `DAT_INVALID_STATE` (more events queued).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_resize(
    evd_handle: DAT_EVD_HANDLE,
    evd_min_qlen: DAT_COUNT,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_resize_func(evd_handle, evd_min_qlen),
        { from_handle::<Evd>(evd_handle)?.resize(evd_min_qlen) }
    )
}

/// Posts a software event.
///
/// # Safety
/// `event` is NULL or points at a readable `DAT_EVENT`.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG1 not a
/// software EVD, ARG2 NULL or not a software event), `DAT_QUEUE_FULL`.
#[no_mangle]
pub unsafe extern "C" fn dat_evd_post_se(
    evd_handle: DAT_EVD_HANDLE,
    event: *const DAT_EVENT,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_post_se_func(evd_handle, event),
        {
            let evd = from_handle::<Evd>(evd_handle)?;
            let ev = input(event, Input::Event)?;
            // SAFETY: reading the pointer member of the (copied) union as plain bits.
            let pointer = unsafe { ev.event_data.software_event_data.pointer } as usize;
            evd.post_se(ev.event_number, pointer)
        }
    )
}

/// Removes the first event without blocking.
///
/// # Safety
/// `event` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_QUEUE_EMPTY`, `DAT_INVALID_HANDLE`,
/// `DAT_INVALID_PARAMETER` (ARG2), `DAT_INVALID_STATE` (a waiter is blocked).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_dequeue(
    evd_handle: DAT_EVD_HANDLE,
    event: *mut DAT_EVENT,
) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_dequeue_func(evd_handle, event),
        {
            let evd = from_handle::<Evd>(evd_handle)?;
            let slot = out(event, Input::Event)?;
            let ev = evd.dequeue()?;
            slot.set(to_c_event(&ev));
            Ok(())
        }
    )
}

/// Destroys an EVD; a blocked waiter returns `DAT_ABORT`.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_STATE` (EVD_IN_USE).
#[no_mangle]
pub unsafe extern "C" fn dat_evd_free(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry!(evd_handle, Sub::Handle1, evd_free_func(evd_handle), {
        from_handle::<Evd>(evd_handle)?.free()
    })
}

/// Makes the EVD unwaitable, waking a blocked waiter.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_evd_set_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_set_unwaitable_func(evd_handle),
        { from_handle::<Evd>(evd_handle)?.set_waitable(false) }
    )
}

/// Makes the EVD waitable again.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_evd_clear_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry!(
        evd_handle,
        Sub::Handle1,
        evd_clear_unwaitable_func(evd_handle),
        { from_handle::<Evd>(evd_handle)?.set_waitable(true) }
    )
}
