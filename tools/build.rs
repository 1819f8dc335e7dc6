//! The tools' run path. Installed as PREFIX/bin/dat-*, they find the
//! libdat.so.1 installed in PREFIX/lib when they dlopen it by name
//! (`$ORIGIN/../lib`). `DAT_TOOLS_RPATH` replaces that run path at build
//! time, for an installation whose library directory is elsewhere (for
//! example `$ORIGIN/../lib64`, or an absolute LIBDIR).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DAT_TOOLS_RPATH");
    let rpath = std::env::var("DAT_TOOLS_RPATH")
        .ok()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "$ORIGIN/../lib".to_string());
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{rpath}");
}
