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
pub(crate) fn lock<T>(m: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    m.lock().map_err(|_| DatError::of(Type::InternalError))
}

/// Locks, ignoring poison (see the module documentation).
pub(crate) fn lock_anyway<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts fork()s into a child (set by a `pthread_atfork` handler).
static FORK_GEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static ATFORK: std::sync::Once = std::sync::Once::new();

extern "C" fn forked_child() {
    FORK_GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The current fork generation: what a process makes remembers it, and
/// what was made before a fork() is inherited (the parent's) in the child.
/// Installs the fork handler on first use.
pub fn fork_generation() -> u32 {
    ATFORK.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: registers a handler that only increments an atomic (an
        // async-signal-safe operation, as a child handler requires).
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    FORK_GEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// True in a child for what was made (at generation `gen`) before the
/// fork: it shares descriptors with the parent and must not use them.
pub fn inherited(gen: u32) -> bool {
    FORK_GEN.load(std::sync::atomic::Ordering::Relaxed) != gen
}
