//! The C ABI of `libdat.so.1`: exactly the 72 DAT 1.2 `dat_*` entry points.
//!
//! Every entry point has the same shape: catch panics, reject a NULL or
//! misaligned primary handle with the subtype the reference uses, hand a
//! handle that belongs to a third-party provider to that provider's
//! `DAT_PROVIDER` table, and otherwise check pointers, convert, make one call
//! into the `udapl` core and write the OUT parameters (only on success).
//! No DAT logic lives here.

mod abi_check;
mod boundary;
mod entry;
mod foreign;
mod handles;
mod log;
mod provider_table;
mod registry_glue;

pub mod api;
