//! Machinery shared by the software transports (iWARP over TCP today, shared
//! memory later), none of it tied to a protocol or to sockets:
//!
//! - [`keys`]: the key table (LMR/RMR contexts) and the one lock-free check
//!   of every use of registered memory;
//! - [`cq`]: the completion queue and the engines that feed it;
//! - [`progress`]: the background progress thread;
//! - [`memio`]: moving bytes between descriptors and application memory
//!   without faulting on it;
//! - [`memcheck`]: whether memory can be registered.

pub mod cq;
pub mod keys;
pub mod memcheck;
pub mod memio;
pub mod progress;
