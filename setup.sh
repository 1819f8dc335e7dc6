#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for building and testing libdat, then
# builds the library and runs the demo.
#   ./setup.sh            install what is missing, build, run the demo
#   ./setup.sh --deps     only install what is missing
set -euo pipefail
cd "$(dirname "$0")"

CBINDGEN_VERSION=0.29.4
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

need_apt=()
for tool in cc:gcc c++:g++ make:make valgrind:valgrind nm:binutils readelf:binutils pkg-config:pkg-config; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need_apt+=("${tool##*:}")
done
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
    # Debian 12's own rustc (1.63) is too old for this crate (1.85+).
    echo "setup: no Rust toolchain found; install Rust stable with rustup first" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt || true
fi
if [ "$(cbindgen --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
    echo "setup: installing cbindgen $CBINDGEN_VERSION"
    cargo install --locked --version "$CBINDGEN_VERSION" cbindgen
fi

[ "${1:-}" = "--deps" ] && exit 0
make demo
