//! DAT handles (every `DAT_*_HANDLE` is a `void *` in C) and the core objects
//! they name: the one place that converts between the two.
//!
//! [`Object`] ties each kind of handle to its core object type and to the
//! core's lookup, which answers only for a live object of that kind and
//! gives the kind's `DAT_INVALID_HANDLE` subtype otherwise. A handle value
//! is never dereferenced here; [`address`] and [`core_handle`] only carry it
//! to the checks and calls that validate it.

use udapl::handle::{Handle, Kind, Ref};
use udapl::object::{cno, ep, evd, ia, lmr, pz, rmr, sp, srq};
use udapl::object::{Cno, Cr, Ep, Evd, Ia, Lmr, Psp, Pz, Rmr, Rsp, Srq};

use dat_abi::DAT_HANDLE;

/// A core object a DAT handle names.
pub(crate) trait Object: Kind + Sized {
    /// The live object at `addr`; `DAT_INVALID_HANDLE` with this kind's
    /// subtype if there is none.
    fn lookup(addr: usize) -> udapl::Result<Ref<Self>>;
}

macro_rules! objects {
    ($($object:ty => $lookup:path),* $(,)?) => {
        $(
            impl Object for $object {
                fn lookup(addr: usize) -> udapl::Result<Ref<Self>> {
                    $lookup(addr)
                }
            }
        )*
    };
}

objects!(
    Cno => cno::lookup,
    Cr => sp::lookup_cr,
    Ep => ep::lookup,
    Evd => evd::lookup,
    Ia => ia::lookup,
    Lmr => lmr::lookup,
    Psp => sp::lookup_psp,
    Pz => pz::lookup,
    Rmr => rmr::lookup,
    Rsp => sp::lookup_rsp,
    Srq => srq::lookup,
);

/// The live object of kind `T` that `h` names.
pub(crate) fn from_handle<T: Object>(h: DAT_HANDLE) -> udapl::Result<Ref<T>> {
    T::lookup(address(h))
}

/// The DAT handle of a core handle (`DAT_HANDLE_NULL` for `Handle::NULL`).
pub(crate) fn to_handle(h: Handle) -> DAT_HANDLE {
    h.addr() as DAT_HANDLE
}

/// The core handle `h` carries, not looked up: for a handle the core
/// validates itself (an optional CNO, the EP of an accept).
pub(crate) fn core_handle(h: DAT_HANDLE) -> Handle {
    Handle::from_addr(address(h))
}

/// The address `h` carries, for the checks before a lookup (NULL,
/// alignment, ours or a registered provider's) and for the handle-wide
/// operations (context, type).
pub(crate) fn address(h: DAT_HANDLE) -> usize {
    h as usize
}
