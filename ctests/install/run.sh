#!/bin/bash
# make install into a scratch DESTDIR, then check what a user gets: the
# library stripped (its exports and SONAME unchanged, a .gnu_debuglink to
# the debug file installed beside it, which gdb finds), the tools stripped
# and working, and a program built against the installed header and
# dat.pc that opens the built-in IA. Exit 1 on the first problem.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP"
DEST=$(mktemp -d /tmp/dat-install.XXXXXX)
trap 'rm -rf "$DEST"' EXIT
PREFIX=/usr/local
fail() { echo "install check: $*" >&2; exit 1; }

make -s install DESTDIR="$DEST" PREFIX="$PREFIX" >/dev/null
LIB="$DEST$PREFIX/lib/libdat.so.1"
DBG="$DEST$PREFIX/lib/.debug/libdat.so.1.debug"
[ -f "$LIB" ] || fail "no $LIB"
[ -f "$DBG" ] || fail "no $DBG"

# Stripped: no DWARF and no symbol table left in the library.
readelf -S "$LIB" | grep -q '\.debug_info' && fail "the installed library has debug info"
readelf -S "$LIB" | grep -q ' \.symtab' && fail "the installed library has a symbol table"
readelf -S "$DBG" | grep -q '\.debug_info' || fail "the debug file has no debug info"
link=$(readelf --string-dump=.gnu_debuglink "$LIB" 2>/dev/null | sed -n 's/.*\] *\(libdat\.so\.1\.debug\).*/\1/p' | head -1)
[ "$link" = libdat.so.1.debug ] || fail "no .gnu_debuglink to libdat.so.1.debug"

# The same 72 symbols and SONAME as the build.
nm -D --defined-only "$LIB" | awk '$2 == "T" {print $3}' | sort | diff -u ffi/exports.txt - ||
    fail "the installed library's exports differ"
readelf -d "$LIB" | grep -q 'Library soname: \[libdat.so.1\]' || fail "SONAME"

# gdb finds the debug file and, through it, the entry points' sources.
if command -v gdb >/dev/null; then
    gdb -batch -ex "info functions dat_ia_openv" "$LIB" 2>&1 | grep -q '^File ffi/src/api/ia.rs:' ||
        fail "gdb finds no source for dat_ia_openv (debug file not found?)"
fi

# A program built the way a user builds one: installed header, dat.pc.
prog="$DEST/open_tcp0"
cat > "$DEST/open_tcp0.c" <<'C'
#include <dat/udat.h>
#include <stdio.h>
int main(void)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_RETURN r = dat_ia_open("tcp0", 8, &evd, &ia);
    if (r != DAT_SUCCESS) {
        printf("dat_ia_open: 0x%08x\n", r);
        return 1;
    }
    r = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    printf("tcp0 opened and closed: 0x%08x\n", r);
    return r != DAT_SUCCESS;
}
C
flags=$(PKG_CONFIG_SYSROOT_DIR="$DEST" PKG_CONFIG_LIBDIR="$DEST$PREFIX/lib/pkgconfig" pkg-config --cflags --libs dat)
# shellcheck disable=SC2086
cc -Wall -Wextra -Werror -o "$prog" "$DEST/open_tcp0.c" $flags
LD_LIBRARY_PATH="$DEST$PREFIX/lib" "$prog" | grep -q 'opened and closed: 0x00000000' || fail "the program did not open tcp0"
DAT_LIBRARY="$LIB" "$DEST$PREFIX/bin/dat-info" -l >/dev/null || fail "the installed dat-info did not run"

size=$(stat -c %s "$LIB")
echo "install check: libdat.so.1 installed stripped ($size bytes; debug info in lib/.debug), exports and SONAME unchanged, a program built with dat.pc opens tcp0"
