#!/usr/bin/env bash
# Run C test programs; each prints "N passed, N failed" as its last line.
# Sums them up and prints the total the same way. $CTEST_WRAPPER (e.g. a
# valgrind command) is put in front of every program when set.
set -u
total_pass=0
total_fail=0
bad_programs=()
for prog in "$@"; do
    echo "== ${prog#build/ctests/}"
    out=$(${CTEST_WRAPPER:-} "$prog" 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed$'
    last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$last" ]; then
        echo "   (no summary line; exit code $rc)"
        total_fail=$((total_fail + 1))
        bad_programs+=("$prog")
        continue
    fi
    p=${last%% passed*}
    f=${last#*passed, }; f=${f%% failed*}
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "   (exit code $rc with no failed case)"
        total_fail=$((total_fail + 1))
        bad_programs+=("$prog")
    fi
done
echo
echo "C tests: ${#@} programs"
[ ${#bad_programs[@]} -eq 0 ] || echo "programs with errors: ${bad_programs[*]}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
