#!/bin/sh
# Prints, as C initialisers, every (library, function, version) the verbs
# transport resolves with dlvsym: the lines of the `functions! { ... }`
# table in src/transport/verbs/lib.rs (its argument), so that the check of
# the stub libraries (ctests/verbs/stub_verbs.c) follows the table.
set -eu
lib_rs=$1
out=$(awk '
    /^functions! *\{/ { inside = 1; next }
    inside && /^\}/   { inside = 0 }
    inside && $2 ~ /^"/ && $3 == "fn" {
        lib = $1 == "Ibverbs" ? "libibverbs.so.1" : $1 == "Rdmacm" ? "librdmacm.so.1" : ""
        if (lib == "") { print "unknown library " $1 > "/dev/stderr"; exit 1 }
        name = $4; sub(/\(.*/, "", name)
        printf "    {\"%s\", \"%s\", %s},\n", lib, name, $2
    }
' "$lib_rs")
[ -n "$out" ] || { echo "symbols.sh: no functions! table in $lib_rs" >&2; exit 1; }
echo "/* Generated from $lib_rs by tests/stub-verbs/symbols.sh. */"
printf '%s\n' "$out"
