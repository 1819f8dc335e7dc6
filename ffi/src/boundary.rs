//! The panic boundary and the pointer helpers every entry point uses.

use std::panic::{catch_unwind, AssertUnwindSafe};

use udapl::error::{DatError, Sub, Type};

use crate::types::DAT_RETURN;

/// Runs an entry point body; a panic becomes `DAT_INTERNAL_ERROR`.
pub(crate) fn guard(f: impl FnOnce() -> DAT_RETURN) -> DAT_RETURN {
    crate::log::init();
    #[cfg(test)]
    let f = || {
        if tests::PANIC_NEXT.with(|p| p.replace(false)) {
            panic!("forced panic for the panic-safety test");
        }
        f()
    };
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            tracing::error!("internal panic caught at the C boundary");
            DatError::of(Type::InternalError).code()
        }
    }
}

/// Runs a fallible entry point body (keeps `?` usable inside `entry!`).
pub(crate) fn run<T>(f: impl FnOnce() -> udapl::Result<T>) -> udapl::Result<T> {
    f()
}

/// `DAT_SUCCESS` or the error code.
pub(crate) fn code(r: udapl::Result<()>) -> DAT_RETURN {
    match r {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}

/// The dispatch-layer pre-check: NULL or not 4-byte aligned.
pub(crate) fn bad_handle(h: usize) -> bool {
    h == 0 || h & 3 != 0
}

/// A required OUT pointer: `DAT_INVALID_PARAMETER/ARGn` if NULL or misaligned.
pub(crate) fn out<'a, T>(p: *mut T, argn: u32) -> udapl::Result<&'a mut T> {
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(DatError::arg(argn));
    }
    // SAFETY: non-NULL and aligned; the caller promises it points at a `T`
    // it owns for the duration of the call (the DAT calling contract).
    Ok(unsafe { &mut *p })
}

/// An optional OUT pointer (NULL allowed).
pub(crate) fn opt_out<'a, T>(p: *mut T, argn: u32) -> udapl::Result<Option<&'a mut T>> {
    if p.is_null() {
        Ok(None)
    } else {
        out(p, argn).map(Some)
    }
}

/// A required IN pointer.
pub(crate) fn input<'a, T>(p: *const T, argn: u32) -> udapl::Result<&'a T> {
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(DatError::arg(argn));
    }
    // SAFETY: non-NULL and aligned; the caller passes a readable `T`.
    Ok(unsafe { &*p })
}

/// `DAT_INVALID_HANDLE` with `sub`, as a `DAT_RETURN`.
pub(crate) fn invalid_handle(sub: Sub) -> DAT_RETURN {
    DatError::handle(sub).code()
}

/// Entry point body for a function whose primary handle is `$h`: pre-check,
/// third-party dispatch through `$slot`, else run `$body` (a `Result<()>` block).
macro_rules! entry {
    ($h:expr, $sub:expr, $slot:ident($($arg:expr),* $(,)?), $body:block) => {
        $crate::boundary::guard(|| {
            let h = $h as usize;
            if $crate::boundary::bad_handle(h) {
                return $crate::boundary::invalid_handle($sub);
            }
            if !udapl::handle::is_ours(h) {
                return match $crate::foreign::provider(h) {
                    // SAFETY: the table belongs to a registered provider, and
                    // the slot has this function's exact C signature.
                    Some(p) => match p.$slot {
                        Some(f) => unsafe { f($($arg),*) },
                        None => udapl::DatError::of(udapl::error::Type::NotImplemented).code(),
                    },
                    None => $crate::boundary::invalid_handle($sub),
                };
            }
            let r: udapl::Result<()> = $crate::boundary::run(|| $body);
            $crate::boundary::code(r)
        })
    };
}
pub(crate) use entry;

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    thread_local! {
        pub(crate) static PANIC_NEXT: Cell<bool> = const { Cell::new(false) };
    }

    #[test]
    fn panic_becomes_internal_error() {
        PANIC_NEXT.with(|p| p.set(true));
        let r = super::guard(|| 0);
        assert_eq!(r, 0x8004_0000);
        assert_eq!(super::guard(|| 0), 0);
    }
}

#[cfg(test)]
mod entry_point_panic {
    /// A panic inside a real exported entry point comes back to the C caller
    /// as `DAT_INTERNAL_ERROR` instead of unwinding into C or aborting.
    #[test]
    fn exported_function_returns_internal_error() {
        let mut pz: crate::types::DAT_PZ_HANDLE = std::ptr::null_mut();
        super::tests::PANIC_NEXT.with(|p| p.set(true));
        // SAFETY: a call as a C program would make; the handle is validated.
        let r = unsafe { crate::api::dat_pz_create(0x10 as crate::types::DAT_IA_HANDLE, &mut pz) };
        assert_eq!(r, 0x8004_0000);
        assert!(pz.is_null());
    }
}
