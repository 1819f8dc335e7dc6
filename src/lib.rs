//! Safe core of the DAT 1.2 (uDAPL) drop-in library.
//!
//! Layers, each with one job:
//! - [`error`]: the `DAT_RETURN` codes and their names (one table).
//! - [`handle`]: the handle table. A handle is the address of a slot whose
//!   first word is the owning provider's `DAT_PROVIDER *`; lookups are O(1),
//!   lock-free, and never touch freed memory.
//! - [`wait`]: blocking waits (bounded spin, then an interruptible sleep).
//! - [`registry`]: dat.conf and the static/dynamic provider registries.
//! - [`object`]: the DAT objects (IA, PZ, EVD, CNO, LMR, RMR, …): state
//!   machines, checks and events, written once for every transport.
//! - [`transport`]: the narrow reliable-connection queue-pair interface the
//!   object layer drives, and the transports under it.
//!
//! Nothing here knows C: the `ffi` crate converts pointers and C structs and
//! calls into this crate.
#![deny(unsafe_code)]

pub mod error;
pub mod fuzz;
pub mod handle;
pub mod object;
pub mod registry;
pub mod ring;
mod sync;
mod sys;
pub mod transport;
pub mod wait;

pub use error::{DatError, Result};
