//! The wake-up protocol between sleepers and wakers of one object.
//!
//! This file is compiled twice: into the library, against `std` and the
//! eventfd parker of [`super`], and by `tests/loom_notify.rs` against loom's
//! atomics, mutex and thread parker, which explores every interleaving of a
//! sleeper and a waker and proves that no wake-up is lost.

use super::sync::{fence, Arc, AtomicUsize, Mutex, Ordering};
use super::Parker;

/// Where sleepers of one object register; wakers notify through it.
pub struct Notifier {
    sleepers: AtomicUsize,
    list: Mutex<Vec<Arc<Parker>>>,
}

impl Default for Notifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Notifier {
    /// A notifier with nobody registered.
    pub fn new() -> Notifier {
        Notifier {
            sleepers: AtomicUsize::new(0),
            list: Mutex::new(Vec::new()),
        }
    }

    /// Wakes every registered sleeper. Call after making the condition true
    /// and after releasing the lock that guards it. One fence and one load
    /// when nobody sleeps.
    pub fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        for p in self.list.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            p.unpark();
        }
    }

    /// Adds a sleeper. It must poll its condition once more afterwards,
    /// before it sleeps.
    pub(crate) fn register(&self, p: &Arc<Parker>) {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.clone());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `notify`: either the sleeper's next poll
        // sees the waker's condition, or the waker sees the sleeper.
        fence(Ordering::SeqCst);
    }

    /// Removes a sleeper.
    pub(crate) fn unregister(&self, p: &Arc<Parker>) {
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = list.iter().position(|q| Arc::ptr_eq(q, p)) {
            list.swap_remove(i);
        }
    }

    /// How many sleepers are registered.
    #[cfg(test)]
    pub fn sleepers(&self) -> usize {
        self.sleepers.load(Ordering::SeqCst)
    }
}
