//! The shape of every entry point whose first argument is a handle: reject
//! a NULL or misaligned handle, hand a third-party provider's handle to its
//! `DAT_PROVIDER` slot, else run the body against the core.

/// Entry point body for a function whose primary handle is `$h`: pre-check,
/// third-party dispatch through `$slot`, else run `$body` (a `Result<()>` block).
macro_rules! entry {
    ($h:expr, $sub:expr, $slot:ident($($arg:expr),* $(,)?), $body:block) => {
        $crate::boundary::guard(|| {
            let h = $crate::handles::address($h);
            if $crate::boundary::bad_handle(h) {
                return $crate::boundary::invalid_handle($sub);
            }
            if !udapl::handle::is_ours(h) {
                let registry = $crate::registry_glue::existing();
                return match registry.and_then(|reg| $crate::foreign::provider(reg, h)) {
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
            $crate::boundary::code(r, &[$(stringify!($arg)),*])
        })
    };
}
pub(crate) use entry;
