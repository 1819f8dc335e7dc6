//! Every type and constant of the DAT 1.2 / uDAPL C ABI (`<dat/udat.h>`),
//! shared by the library's C layer (`ffi/`) and the tools.
//!
//! This crate is the single source of truth for the public C header:
//! `make header` runs cbindgen over it (and over the `dat_*` entry points in
//! `ffi/src/api`) to produce `include/dat/udat.h`. What cbindgen cannot
//! express (function-like and pointer-valued macros, the redirection macros)
//! is written by hand in `cbindgen.toml`.
//!
//! Conventions:
//! - Names are the exact C names; struct and union tags are the lower-case C
//!   tags (`struct dat_event`), each followed by its upper-case typedef.
//! - Every C enum is a `u32` alias plus one constant per enumerator: a C
//!   caller or a provider may hand us any 32-bit value, which a Rust `enum`
//!   could not hold soundly.
//! - Layouts are those of x86-64 Linux (LP64, SysV), checked at compile time
//!   (`layout_checks`).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
#![allow(clippy::upper_case_acronyms)]

mod base;
mod enums;
mod event;
mod masks;
mod params;
mod provider;
mod ret;

/// cbindgen:ignore
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
mod layout_checks;

pub use base::*;
pub use enums::*;
pub use event::*;
pub use masks::*;
pub use params::*;
pub use provider::*;
pub use ret::*;
