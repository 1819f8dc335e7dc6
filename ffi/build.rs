//! Link settings of libdat.so.1: the SONAME.
//!
//! No version script of our own: rustc already passes the linker one for a
//! cdylib that exports exactly its `#[no_mangle] extern "C"` items (the 72
//! DAT 1.2 entry points, checked by `make exports`) and makes everything
//! else local. A second one added nothing under LLD (it merges them; rustup's
//! default linker since 1.90) and fails under GNU ld ("anonymous version tag
//! cannot be combined with other version tags"), which Debian's rustc and
//! rustc before 1.90 use.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdat.so.1");
}
