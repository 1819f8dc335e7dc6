//! Safe core of the DAT 1.2 (uDAPL) drop-in library. Nothing here knows C:
//! the `dat` crate (`ffi/`) converts pointers and C structs and calls in.
//!
//! Layers, each with one job (docs/architecture.md): [`registry`] (dat.conf,
//! providers) → [`object`] (the DAT objects: every state machine, check and
//! event) → [`transport`] (the queue-pair interface and the transports under
//! it). Beside them: [`error`] (return codes), [`handle`] (the handle table),
//! [`wait`] (blocking waits), [`ring`] (queue storage), [`fuzz`] (fuzz entry
//! points).
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
