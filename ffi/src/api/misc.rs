//! Consumer context, handle type and `dat_strerror`.

use udapl::error::{self, DatError, Input, Sub};
use udapl::handle;

use crate::boundary::{guard, out};
use crate::entry::entry;
use crate::handles::address;
use dat_abi::*;

/// Stores the consumer context of any DAT object.
///
/// # Safety
/// The handle is validated.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn dat_set_consumer_context(
    dat_handle: DAT_HANDLE,
    context: DAT_CONTEXT,
) -> DAT_RETURN {
    entry!(
        dat_handle,
        Sub::Handle1,
        set_consumer_context_func(dat_handle, context),
        {
            // SAFETY: all members of the 8-byte union share the same bits.
            let v = unsafe { context.as_64 };
            if handle::set_context(address(dat_handle), v) {
                Ok(())
            } else {
                Err(DatError::handle(Sub::Handle1))
            }
        }
    )
}

/// Reads the consumer context of any DAT object (zero if never set).
///
/// # Safety
/// `context` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG2).
#[no_mangle]
pub unsafe extern "C" fn dat_get_consumer_context(
    dat_handle: DAT_HANDLE,
    context: *mut DAT_CONTEXT,
) -> DAT_RETURN {
    entry!(
        dat_handle,
        Sub::Handle1,
        get_consumer_context_func(dat_handle, context),
        {
            let v = handle::context(address(dat_handle)).ok_or(DatError::handle(Sub::Handle1))?;
            out(context, Input::Context)?.set(DAT_CONTEXT { as_64: v });
            Ok(())
        }
    )
}

/// Reports the type of any DAT object.
///
/// # Safety
/// `handle_type` is NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, `DAT_INVALID_HANDLE`, `DAT_INVALID_PARAMETER` (ARG2).
#[no_mangle]
pub unsafe extern "C" fn dat_get_handle_type(
    dat_handle: DAT_HANDLE,
    handle_type: *mut DAT_HANDLE_TYPE,
) -> DAT_RETURN {
    entry!(
        dat_handle,
        Sub::Handle1,
        get_handle_type_func(dat_handle, handle_type),
        {
            let t = handle::type_of(address(dat_handle)).ok_or(DatError::handle(Sub::Handle1))?;
            out(handle_type, Input::HandleType)?.set(t as DAT_HANDLE_TYPE);
            Ok(())
        }
    )
}

/// Names the type and subtype of a `DAT_RETURN` (class bits ignored).
/// Every 1.2 type and subtype is known.
///
/// # Safety
/// Both OUT pointers are NULL or writable.
///
/// # Returns
/// `DAT_SUCCESS`, or `DAT_INVALID_PARAMETER` for an undefined type or
/// subtype (no subtype) or a NULL OUT pointer (ARG2, ARG3).
#[no_mangle]
pub unsafe extern "C" fn dat_strerror(
    value: DAT_RETURN,
    major_message: *mut *const libc::c_char,
    minor_message: *mut *const libc::c_char,
) -> DAT_RETURN {
    guard(|| {
        let r = crate::boundary::run(|| {
            let major_out = out(major_message, Input::MajorMessage)?;
            let minor_out = out(minor_message, Input::MinorMessage)?;
            let (major, minor) =
                strerror_cstr(value).ok_or(DatError::of(udapl::error::Type::InvalidParameter))?;
            major_out.set(major);
            minor_out.set(minor);
            Ok(())
        });
        crate::boundary::code(r, &["value", "major_message", "minor_message"])
    })
}

/// Static NUL-terminated names for a value.
fn strerror_cstr(value: u32) -> Option<(*const libc::c_char, *const libc::c_char)> {
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::sync::OnceLock;
    static NAMES: OnceLock<HashMap<&'static str, CString>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        error::Type::ALL
            .iter()
            .map(|t| t.c_name())
            .chain(error::Sub::ALL.iter().map(|s| s.c_name()))
            .filter_map(|n| CString::new(n).ok().map(|c| (n, c)))
            .collect()
    });
    let (major, minor) = error::strerror(value)?;
    Some((names.get(major)?.as_ptr(), names.get(minor)?.as_ptr()))
}
