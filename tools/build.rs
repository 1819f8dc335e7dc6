//! The tools' run path: `$ORIGIN/../lib`, so that an installed dat-info or
//! dat-perf (PREFIX/bin) loads the libdat.so.1 installed beside it
//! (PREFIX/lib) when `DAT_LIBRARY` names none. dlopen searches the calling
//! executable's run path.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN/../lib");
    println!("cargo:rerun-if-changed=build.rs");
}
