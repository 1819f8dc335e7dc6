#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for building and testing libdat, then
# builds the library and runs the demo.
#   ./setup.sh            install what is missing, build, run the demo
#   ./setup.sh --deps     only install what is missing
set -euo pipefail
cd "$(dirname "$0")"

CBINDGEN_VERSION=0.29.4   # the header check diffs cbindgen's output: exact match
RUST_VERSION=$(sed -n 's/^rust-version *= *"\(.*\)"/\1/p' Cargo.toml)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_updated=""
apt_update() { [ -n "$apt_updated" ] || { $SUDO apt-get update -q; apt_updated=1; }; }
apt_install() {  # [apt-get option...] package...
    apt_update
    echo "setup: installing $*"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "$@"
}

need_apt=()
# tshark: Wireshark's iWARP dissectors check the wire format (tests/wire_tshark.rs).
# ip: the tests between network namespaces (tests/netns.rs, tests/netns_dat.rs).
for tool in cc:gcc c++:g++ make:make valgrind:valgrind nm:binutils readelf:binutils pkg-config:pkg-config tshark:tshark ip:iproute2; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need_apt+=("${tool##*:}")
done
if [[ " ${need_apt[*]} " == *" tshark "* ]]; then
    # wireshark-common asks whether non-root users may capture: answer no
    # up front so that the install never waits (the test captures as root
    # or skips its live part).
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
fi
# rdma-core's headers: the stub libraries of the verbs tests build against
# them (tests/stub-verbs/); libdat itself needs no rdma-core to build.
[ -e /usr/include/infiniband/verbs.h ] || need_apt+=(libibverbs-dev)
[ -e /usr/include/rdma/rdma_cma.h ] || need_apt+=(librdmacm-dev)
[ ${#need_apt[@]} -eq 0 ] || apt_install "${need_apt[@]}"

# Same PATH as .ci/run: a rustup toolchain (or cargo-installed cbindgen) in
# ~/.cargo/bin comes first, the Debian packages' /usr/bin after it.
export PATH="$HOME/.cargo/bin:$PATH"

# "X.Y.Z" from "rustc 1.96.0 (...)" / "cargo 1.96.0 (...)"; empty if missing.
version_of() { "$1" --version 2>/dev/null | awk '{print $2}'; }
at_least() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
toolchain_ok() {
    at_least "$(version_of rustc)" "$RUST_VERSION" &&
        at_least "$(version_of cargo)" "$RUST_VERSION" &&
        cargo clippy --version >/dev/null 2>&1 &&
        cargo fmt --version >/dev/null 2>&1
}

if ! toolchain_ok && command -v rustup >/dev/null 2>&1; then
    rustup component add clippy rustfmt || true
fi
if ! toolchain_ok; then
    # Debian 12's plain rustc/cargo (1.63) are too old, but bookworm ships
    # the "-web" builds (1.85, newer in bookworm-security). They install
    # rustc, rustdoc, cargo, cargo-clippy, clippy-driver, cargo-fmt and
    # rustfmt into /usr/bin under their usual names, so `make` (CARGO=cargo)
    # and .ci/run find them with no PATH change or env file: `cargo clippy`
    # and `cargo fmt` run cargo-clippy and cargo-fmt found on PATH;
    # cargo-clippy runs the clippy-driver next to it, cargo-fmt the rustfmt
    # on PATH. Without recommends: rustc-web recommends rust-web-llvm, which
    # pulls ~600 MB of LLVM 22 tools this build does not use.
    apt_install --no-install-recommends rustc-web cargo-web rust-web-clippy rustfmt-web
    if ! toolchain_ok; then
        echo "setup: still no Rust >= $RUST_VERSION with clippy and rustfmt on PATH:" >&2
        echo "setup:   rustc $(version_of rustc) at $(command -v rustc || echo -), cargo $(version_of cargo) at $(command -v cargo || echo -)" >&2
        echo "setup: an older toolchain in ~/.cargo/bin hides /usr/bin; update it (rustup update stable) or remove it" >&2
        exit 1
    fi
fi
echo "setup: using $(cargo --version) at $(command -v cargo)"

if [ "$(cbindgen --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
    # Prefer Debian's cbindgen-web (bookworm-security) when it is exactly the
    # version the checked-in header was generated with; else build it.
    apt_update
    candidate=$(apt-cache policy cbindgen-web 2>/dev/null | awk '/Candidate:/ {print $2}')
    candidate=${candidate#*:}          # drop an epoch
    if [ "${candidate%%[+~-]*}" = "$CBINDGEN_VERSION" ]; then
        apt_install cbindgen-web       # /usr/bin/cbindgen
    fi
    # Also when a different cbindgen in ~/.cargo/bin hides /usr/bin/cbindgen:
    # cargo install replaces it there.
    if [ "$(cbindgen --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
        echo "setup: installing cbindgen $CBINDGEN_VERSION from crates.io"
        cargo install --locked --version "$CBINDGEN_VERSION" cbindgen
    fi
fi

# The kernel-RDMA test guest (tests/guest/, make guest-check): QEMU, socat
# for its forwards, cpio and kmod for the initramfs, the guest kernel's
# headers (kbuild and its compiler come with them) and linux-source for siw,
# built out of tree. The guest's own packages (kernel image, rdma-core,
# busybox-static) are fetched by tests/guest/build.sh with apt-get download,
# not installed.
guest_headers() {
    apt-cache depends linux-headers-amd64 2>/dev/null |
        sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n1
}
guest_krel=$(guest_headers)
[ -n "$guest_krel" ] || { apt_update; guest_krel=$(guest_headers); }
need_guest=()
for tool in qemu-system-x86_64:qemu-system-x86 socat:socat cpio:cpio depmod:kmod xz:xz-utils strip:binutils; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need_guest+=("${tool##*:}")
done
if [ -n "$guest_krel" ]; then
    guest_series=$(echo "$guest_krel" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
    for pkg in "linux-headers-$guest_krel" "linux-source-$guest_series"; do
        dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_guest+=("$pkg")
    done
else
    echo "setup: apt knows no linux-headers-amd64; the test guest (make guest-check) cannot be built" >&2
fi
[ ${#need_guest[@]} -eq 0 ] || apt_install --no-install-recommends "${need_guest[@]}"
# Build the guest into its cache now (a no-op when it is up to date); the
# rest of the setup does not depend on it.
if [ -n "$guest_krel" ]; then
    timeout 1200 tests/guest/build.sh >/dev/null ||
        echo "setup: warning: the test guest could not be built (make guest to retry)" >&2
fi

[ "${1:-}" = "--deps" ] && exit 0
make demo
