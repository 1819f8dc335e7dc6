//! The panic boundary and the pointer helpers every entry point uses.

use std::panic::{catch_unwind, AssertUnwindSafe};

use udapl::error::{DatError, Input, Sub, Type};

use dat_abi::DAT_RETURN;

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

/// `DAT_SUCCESS` or the error code of a function whose C prototype has the
/// parameters `params` (in order): an invalid input becomes the
/// `DAT_INVALID_ARGn` of its parameter.
#[inline]
pub(crate) fn code(r: udapl::Result<()>, params: &[&str]) -> DAT_RETURN {
    match r {
        Ok(()) => 0,
        Err(e) => error_code(e, params),
    }
}

/// [`code`] for an error.
#[inline]
pub(crate) fn error_code(e: DatError, params: &[&str]) -> DAT_RETURN {
    if e.input().is_none() {
        return e.code();
    }
    numbered(e, params)
}

/// An invalid-input error numbered by `params` (off the data path).
#[cold]
#[inline(never)]
fn numbered(e: DatError, params: &[&str]) -> DAT_RETURN {
    e.code_in(params).unwrap_or_else(|| {
        debug_assert!(false, "{e:?} names no parameter of {params:?}");
        tracing::error!("{e:?} names no parameter of {params:?}");
        e.code()
    })
}

/// The dispatch-layer pre-check: NULL or not 4-byte aligned.
pub(crate) fn bad_handle(h: usize) -> bool {
    h == 0 || h & 3 != 0
}

/// A checked OUT pointer (non-NULL, aligned). It is written through the
/// raw pointer and never turned into a Rust reference, so two OUT arguments
/// may name the same variable (the last write wins, as in C).
pub(crate) struct Out<T>(std::ptr::NonNull<T>);

impl<T> Out<T> {
    /// Stores `v`.
    pub(crate) fn set(&self, v: T) {
        // SAFETY: checked non-NULL and aligned by `out`; the caller passes
        // memory it owns for the call (the DAT calling contract). A raw
        // write creates no reference, so aliasing OUT arguments are fine.
        unsafe { self.0.as_ptr().write(v) }
    }

    /// The pointer, for field-wise writes with [`put!`].
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }
}

/// Writes one field (or nested field) of an [`Out`] struct in place,
/// leaving the other fields of the consumer's struct untouched.
macro_rules! put {
    ($out:expr, $($field:ident).+ = $value:expr) => {{
        let p = $out.as_ptr();
        let v = $value;
        // SAFETY: `p` is a checked OUT pointer (see `Out::set`); the field
        // is written through a raw place, creating no reference.
        unsafe { std::ptr::addr_of_mut!((*p).$($field).+).write(v) }
    }};
}
pub(crate) use put;

/// A required OUT pointer: `DAT_INVALID_PARAMETER` naming `input` if NULL or misaligned.
pub(crate) fn out<T>(p: *mut T, input: Input) -> udapl::Result<Out<T>> {
    if (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(DatError::invalid(input));
    }
    std::ptr::NonNull::new(p)
        .map(Out)
        .ok_or(DatError::invalid(input))
}

/// An optional OUT pointer (NULL allowed).
pub(crate) fn opt_out<T>(p: *mut T, input: Input) -> udapl::Result<Option<Out<T>>> {
    if p.is_null() {
        Ok(None)
    } else {
        out(p, input).map(Some)
    }
}

/// A required IN pointer, read once by value (never kept as a reference:
/// the consumer's memory may change under us).
pub(crate) fn input<T: Copy>(p: *const T, input: Input) -> udapl::Result<T> {
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(DatError::invalid(input));
    }
    // SAFETY: non-NULL and aligned; the caller passes a readable `T`. The
    // value is copied out, no reference is formed.
    Ok(unsafe { p.read() })
}

/// A `DAT_NAME_MAX_LENGTH` C name: `src` cut to 255 bytes, NUL-padded.
pub(crate) fn c_name(src: &[u8]) -> [libc::c_char; dat_abi::DAT_NAME_MAX_LENGTH] {
    let mut dst = [0; dat_abi::DAT_NAME_MAX_LENGTH];
    for (d, s) in dst
        .iter_mut()
        .zip(src.iter().take(dat_abi::DAT_NAME_MAX_LENGTH - 1))
    {
        *d = *s as libc::c_char;
    }
    dst
}

/// `DAT_INVALID_HANDLE` with `sub`, as a `DAT_RETURN`.
pub(crate) fn invalid_handle(sub: Sub) -> DAT_RETURN {
    DatError::handle(sub).code()
}

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
        let mut pz: dat_abi::DAT_PZ_HANDLE = std::ptr::null_mut();
        super::tests::PANIC_NEXT.with(|p| p.set(true));
        // SAFETY: a call as a C program would make; the handle is validated.
        let r = unsafe { crate::api::dat_pz_create(0x10 as dat_abi::DAT_IA_HANDLE, &mut pz) };
        assert_eq!(r, 0x8004_0000);
        assert!(pz.is_null());
    }
}
