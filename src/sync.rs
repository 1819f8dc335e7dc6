//! Taking a mutex, the two ways the crate needs.
//!
//! - [`lock`]: for an object's own state. A mutex poisoned by a panic makes
//!   the caller answer `DAT_INTERNAL_ERROR` rather than run on half-updated
//!   state.
//! - [`lock_anyway`]: for teardown paths and for structures a panic cannot
//!   leave inconsistent (allocators, registries, lists): poison is ignored.

use std::sync::{Mutex, MutexGuard};

use crate::error::{DatError, Result, Type};

/// Locks an object's state; a lock poisoned by a panic is an internal error.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    m.lock().map_err(|_| DatError::of(Type::InternalError))
}

/// Locks, ignoring poison (see the module documentation).
#[inline]
pub(crate) fn lock_anyway<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
