//! Every type and constant of the DAT 1.2 / uDAPL C ABI (`<dat/udat.h>`),
//! shared by the library's C layer (`ffi/`) and the tools, and the source
//! `make header` runs cbindgen over (docs/architecture.md, "ABI").
//!
//! Invariants: names are the exact C names; every C enum is a `u32` alias
//! plus one constant per enumerator (a caller may hand in any 32-bit value);
//! layouts are those of x86-64 Linux, checked at compile time
//! (`layout_checks`).
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
