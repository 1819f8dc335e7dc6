#!/usr/bin/env bash
# Drop-in test: a program linked against a *different* libdat.so.1 (a stub
# generated here from the export list, whose every function fails) runs
# unchanged against ours, via LD_LIBRARY_PATH and via LD_PRELOAD.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/dropin
mkdir -p "$out/stub"
{
    echo '/* generated: a libdat.so.1 whose every entry point fails */'
    while read -r sym; do
        echo "unsigned int $sym(void) { return 0x80040000u; }"
    done < ffi/exports.txt
} > "$out/stub/stub.c"
cc -shared -fPIC -Wl,-soname,libdat.so.1 -o "$out/stub/libdat.so.1" "$out/stub/stub.c"
ln -sf libdat.so.1 "$out/stub/libdat.so"
cc -std=gnu11 -Wall -Wextra -Werror -Iinclude -o "$out/dat_demo" examples/dat_demo.c \
    -L"$out/stub" -ldat -Wl,-rpath,"$(pwd)/$out/stub"
pass=0 fail=0
check() {
    local what=$1; shift
    if "$@" > "$out/log" 2>&1 && grep -q "every call succeeded" "$out/log"; then
        echo "ok   DROPIN_$what"; pass=$((pass + 1))
    else
        echo "FAIL DROPIN_$what"; sed 's/^/    /' "$out/log"; fail=$((fail + 1))
    fi
}
# Sanity: against the stub it must fail (so the test can fail).
if "$out/dat_demo" > "$out/log" 2>&1; then
    echo "FAIL DROPIN_00_stub_really_fails"; fail=$((fail + 1))
else
    echo "ok   DROPIN_00_stub_really_fails"; pass=$((pass + 1))
fi
check 01_ld_library_path env LD_LIBRARY_PATH="$(pwd)/build/lib" "$out/dat_demo"
check 02_ld_preload env LD_PRELOAD="$(pwd)/build/lib/libdat.so.1" "$out/dat_demo"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
