//! The 5 `dat_cno_*` functions.

use udapl::error::{DatError, Input, Sub, Type};
use udapl::handle::Handle;
use udapl::object::{Agent, Cno, CnoWake, Ia};
use udapl::wait::Held;

use crate::boundary::{out, put};
use crate::entry::entry;
use crate::handles::{from_handle, to_handle};
use dat_abi::*;

fn agent_of(a: &DAT_OS_WAIT_PROXY_AGENT) -> Agent {
    Agent {
        instance_data: a.instance_data as usize,
        func: a.proxy_agent_func.map_or(0, |f| f as usize),
    }
}

fn to_c(a: Agent) -> DAT_OS_WAIT_PROXY_AGENT {
    DAT_OS_WAIT_PROXY_AGENT {
        instance_data: a.instance_data as DAT_PVOID,
        // SAFETY: `func` is 0 or a function pointer received as DAT_AGENT_FUNC.
        proxy_agent_func: (a.func != 0).then(|| unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(DAT_PVOID, DAT_EVD_HANDLE)>(a.func)
        }),
    }
}

/// Calls a CNO's proxy agent (installed into the core as its agent invoker).
pub(crate) fn invoke_agent(agent: Agent, evd: Handle) {
    if let Some(f) = to_c(agent).proxy_agent_func {
        // SAFETY: the consumer's agent function with its own instance data.
        unsafe { f(agent.instance_data as DAT_PVOID, to_handle(evd)) };
    }
}

/// Creates a CNO with an optional OS wait proxy agent.
///
/// # Safety
/// `cno_handle` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (IA), `DAT_INVALID_PARAMETER` (ARG3),
/// `DAT_INSUFFICIENT_RESOURCES`.
#[no_mangle]
pub unsafe extern "C" fn dat_cno_create(
    ia_handle: DAT_IA_HANDLE,
    agent: DAT_OS_WAIT_PROXY_AGENT,
    cno_handle: *mut DAT_CNO_HANDLE,
) -> DAT_RETURN {
    entry!(
        ia_handle,
        Sub::HandleIa,
        cno_create_func(ia_handle, agent, cno_handle),
        {
            let ia = from_handle::<Ia>(ia_handle)?.arc();
            let slot = out(cno_handle, Input::CnoHandle)?;
            let cno = Cno::create(&ia, agent_of(&agent))?;
            slot.set(to_handle(cno.handle));
            Ok(())
        }
    )
}

/// Replaces or removes the CNO's proxy agent.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (CNO).
#[no_mangle]
pub unsafe extern "C" fn dat_cno_modify_agent(
    cno_handle: DAT_CNO_HANDLE,
    agent: DAT_OS_WAIT_PROXY_AGENT,
) -> DAT_RETURN {
    entry!(
        cno_handle,
        Sub::HandleCno,
        cno_modify_agent_func(cno_handle, agent),
        { from_handle::<Cno>(cno_handle)?.set_agent(agent_of(&agent)) }
    )
}

/// Returns CNO parameters.
///
/// # Safety
/// `cno_param` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (CNO), `DAT_INVALID_PARAMETER` (ARG2, ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_cno_query(
    cno_handle: DAT_CNO_HANDLE,
    cno_param_mask: DAT_CNO_PARAM_MASK,
    cno_param: *mut DAT_CNO_PARAM,
) -> DAT_RETURN {
    entry!(
        cno_handle,
        Sub::HandleCno,
        cno_query_func(cno_handle, cno_param_mask, cno_param),
        {
            let cno = from_handle::<Cno>(cno_handle)?;
            if cno_param_mask & !DAT_CNO_FIELD_ALL != 0 {
                return Err(DatError::invalid(Input::CnoParamMask));
            }
            if cno_param_mask == 0 {
                return Ok(());
            }
            let slot = out(cno_param, Input::CnoParam)?;
            let agent = cno.agent()?;
            put!(slot, ia_handle = to_handle(cno.ia.handle));
            put!(slot, agent = to_c(agent));
            Ok(())
        }
    )
}

/// Destroys a CNO no EVD uses and no thread waits on.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE` (CNO), `DAT_INVALID_STATE` (CNO_IN_USE).
#[no_mangle]
pub unsafe extern "C" fn dat_cno_free(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN {
    entry!(cno_handle, Sub::HandleCno, cno_free_func(cno_handle), {
        from_handle::<Cno>(cno_handle)?.free()
    })
}

/// Waits for a notification from one of the CNO's EVDs.
///
/// # Safety
/// `evd_handle` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS` (`*evd_handle` is a hint), `DAT_QUEUE_EMPTY` (timeout, or
/// released because its last EVD was freed; `*evd_handle` NULL),
/// `DAT_INVALID_STATE`/CNO_DEAD (its IA was closed; NULL), `DAT_INVALID_HANDLE`,
/// `DAT_INVALID_PARAMETER` (ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_cno_wait(
    cno_handle: DAT_CNO_HANDLE,
    timeout: DAT_TIMEOUT,
    evd_handle: *mut DAT_EVD_HANDLE,
) -> DAT_RETURN {
    entry!(
        cno_handle,
        Sub::HandleCno,
        cno_wait_func(cno_handle, timeout, evd_handle),
        {
            // First of all, hold the signals (unless the call cannot sleep):
            // a handler run during the lookup or the CNO's own work could
            // not end the sleep that may follow (src/wait/mod.rs).
            let held = Held::signals_if(timeout != 0);
            // A counted reference: the wait may block for long.
            let cno = from_handle::<Cno>(cno_handle)?.arc();
            let slot = out(evd_handle, Input::EvdHandle)?;
            let wake = cno.wait(timeout, &held)?;
            match wake {
                CnoWake::Evd(h) => {
                    slot.set(to_handle(h));
                    Ok(())
                }
                CnoWake::Timeout | CnoWake::Released { dead: false } => {
                    slot.set(std::ptr::null_mut());
                    Err(DatError::of(Type::QueueEmpty))
                }
                CnoWake::Interrupted => {
                    slot.set(std::ptr::null_mut());
                    Err(DatError::of(Type::InterruptedCall))
                }
                CnoWake::Released { dead: true } => {
                    slot.set(std::ptr::null_mut());
                    Err(DatError::state(Sub::CnoDead))
                }
            }
        }
    )
}
