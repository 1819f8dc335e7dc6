//! What dat-info and dat-perf share: the entry points of a libdat.so.1
//! loaded at run time, with the DAT 1.2 C types of `dat_abi` (the very
//! definitions `include/dat/udat.h` is generated from). Every DAT call goes
//! through that library's C ABI, so the tools work against any libdat.so.1;
//! nothing of this project's core is linked.
pub mod conf;
pub mod fmt;
pub mod ia;
pub mod perf;
pub mod sys;
