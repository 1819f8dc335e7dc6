//! The tools' run path: installed as PREFIX/bin/dat-*, they find the
//! libdat.so.1 installed in PREFIX/lib when they dlopen it by name.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN/../lib");
    println!("cargo:rerun-if-changed=build.rs");
}
