//! Link settings of libdat.so.1: the SONAME, and a version script that
//! exports exactly the 72 DAT 1.2 symbols (everything else stays local).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=libdat.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdat.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/libdat.map");
}
