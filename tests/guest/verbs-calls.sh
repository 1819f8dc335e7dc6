#!/bin/bash
# The DAT layer's cost over raw verbs, call by call, in the QEMU test guest
# (build.sh, run.sh): ctests/bench/verbs_calls in one process per device
# drives a raw-verbs connection and a DAT connection over the same device
# (rxe0, siw0) in lock step, alternating chunks of round trips, so that
# both see the guest in the same state; it prints, per kind of call
# (post_send, post_recv, a poll that finds a completion, an empty one),
# the median and 90th percentile in nanoseconds and the time per round
# trip, and the median of the paired chunks' ratios (DAT / raw round trip)
# with their quartiles. Under TCG a round trip's time varies by 2x from
# one moment to the next whatever runs; the paired chunks are what makes
# the ratio mean something.
#
#   tests/guest/verbs-calls.sh [options]
#     --device rxe|siw|both  (default both)
#     --pairs N              chunk pairs (default 40)
#     --chunk N              round trips per chunk (default 500)
#     --keep DIR             keep the shares (the output) in DIR
# Exit status 0 when every run completed (every call succeeded, every
# message came back intact), 1 otherwise.
# Environment: BUILD (default build; its lib/ and bench/verbs_calls).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"

DEVICES="rxe siw" PAIRS=40 CHUNK=500 KEEP=""
while [ $# -gt 0 ]; do
    case $1 in
    --device) case $2 in both) DEVICES="rxe siw" ;; rxe|siw) DEVICES=$2 ;; *) echo "verbs-calls: --device rxe|siw|both" >&2; exit 2 ;; esac; shift ;;
    --pairs) PAIRS=$2; shift ;;
    --chunk) CHUNK=$2; shift ;;
    --keep) KEEP=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verbs-calls: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done

BUILD=$(cd "${BUILD:-$TOP/build}" 2>/dev/null && pwd) || { echo "verbs-calls: no build directory (make)" >&2; exit 2; }
CALLS=$BUILD/bench/verbs_calls
[ -x "$CALLS" ] || { echo "verbs-calls: $CALLS missing (make verbs-calls)" >&2; exit 2; }
"$HERE/build.sh" >/dev/null || { echo "verbs-calls: the guest could not be built" >&2; exit 1; }
WORK=${KEEP:-$(mktemp -d /tmp/udapl-verbs-calls.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cleanup() { [ -n "$KEEP" ] || rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

FAILED=0
for kind in $DEVICES; do
    dev=${kind}0 share=$WORK/calls-${kind}0
    rm -rf "$share"; mkdir -p "$share"
    if [ "$kind" = rxe ]; then devopts=(--siw none --dev rxe0:rxe:eth0); else devopts=(--siw siw --dev siw0:siw:eth0); fi
    t0=$(date +%s.%N)
    # The guest's clock as on real machines (a vDSO read, not a system call).
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout $(( 120 + PAIRS * CHUNK / 50 )) "${devopts[@]}" \
        --append "clocksource=tsc tsc=reliable" --file "$BUILD/lib" --file "$CALLS" \
        -c "export PATH=/usr/sbin:/usr/bin:/sbin:/bin; cd /host
            echo 'OpenIB-$dev-1 u1.2 nonthreadsafe default libdat.so.1 dat.1.2 \"transport=verbs device=$dev port=1\" \"\"' > dat.conf
            DAT_OVERRIDE=/host/dat.conf $CALLS 10.0.2.15 OpenIB-$dev-1 $PAIRS $CHUNK" > "$share/run.out" 2>&1
    rc=$?
    echo
    echo "verbs-calls: $dev ($(secs_since "$t0") s)"
    if [ "$rc" -ne 0 ] || ! grep -q '^verbs_calls: DAT / raw' "$share/console.log"; then
        echo "verbs-calls: $dev: the run failed (status $rc):"
        grep -E 'verbs_calls|guest-run' "$share/console.log" "$share/run.out" | tail -n 5
        FAILED=$((FAILED + 1))
        continue
    fi
    sed -n '/^verbs_calls: 10.0.2.15/,/^verbs_calls: DAT \/ raw/p' "$share/console.log"
done
[ "$FAILED" -eq 0 ]
