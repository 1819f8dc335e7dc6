//! What dat-info and dat-perf share: the DAT 1.2 C types (the very
//! definitions `include/dat/udat.h` is generated from) and the entry points
//! of a libdat.so.1 loaded at run time. Nothing of the library's
//! implementation is linked in: the tools work against any libdat.so.1.

#[path = "../../ffi/src/types.rs"]
pub mod abi;
pub mod conf;
pub mod fmt;
pub mod ia;
pub mod perf;
pub mod sys;
