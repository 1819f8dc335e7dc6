#!/usr/bin/env bash
# Load-independent cost of the 8 B send/recv ping-pong at the three levels
# (raw TCP, queue pairs, DAT C API): user-space instructions per round trip
# (callgrind) and system calls per round trip (perf's syscall tracepoints),
# both sides together, from the lockstep modes of bench_ep and qp_bench
# (one thread drives both ends in lock step, so every poll finds what it
# polls for and the counts do not depend on timing or on machine load).
#
# Each figure is the difference between a run of N2 and one of N1 round
# trips, divided by N2 - N1 (setup, warm-up and teardown cancel out); the
# instruction counts cover only the measured loop (--toggle-collect). Also
# the cost of one poll of an idle CQ / dequeue of an empty EVD (the step of
# a busy poller's spin).
#
# Usage: ctests/bench/lockstep_counts.sh [--wait] [LIBDIR]
#   --wait  the DAT level waits with dat_evd_wait instead of dequeuing
#   LIBDIR  a directory with another libdat.so.1 to count (default: build/lib)
# Needs valgrind and perf (syscall counts are skipped if perf cannot read
# the syscalls:* tracepoints); run `make lib build/bench/bench_ep` and
# `cargo build --release --bin qp_bench` first.
set -u
cd "$(dirname "$0")/../.."
style=poll
if [ "${1:-}" = --wait ]; then
    style=wait
    shift
fi
lib=${1:-build/lib}
N1=${N1:-1000}
N2=${N2:-3000}
S1=${S1:-5000}
S2=${S2:-10000}
ep=build/bench/bench_ep
qp=target/release/qp_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ir TAG FUNCTION N cmd...: total Ir collected in FUNCTION (@N@ in cmd is N).
ir() {
    local tag=$1 fn=$2 n=$3
    shift 3
    local cmd=("${@//@N@/$n}")
    LD_LIBRARY_PATH=$lib valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$fn" \
        --callgrind-out-file="$tmp/$tag.$n" "${cmd[@]}" >"$tmp/$tag.$n.out" 2>"$tmp/$tag.$n.err" ||
        { echo "failed: ${cmd[*]}" >&2; cat "$tmp/$tag.$n.err" >&2; exit 1; }
    awk '/Collected/ {print $4}' "$tmp/$tag.$n.err"
}

# per_rt TAG FUNCTION cmd...: instructions per round trip.
per_rt() {
    local tag=$1 fn=$2
    shift 2
    local a b
    a=$(ir "$tag" "$fn" "$N1" "$@")
    b=$(ir "$tag" "$fn" "$N2" "$@")
    echo $(( (b - a) / (N2 - N1) ))
}

# sys cmd...: system calls per round trip (all threads), by name.
sys() {
    local n
    for n in $S1 $S2; do
        local cmd=("${@//@N@/$n}")
        LD_LIBRARY_PATH=$lib perf stat -x, -e 'syscalls:sys_enter_*' "${cmd[@]}" 2>&1 >/dev/null |
            awk -F, '$1+0 > 0 {print $3, $1}' | sort >"$tmp/sys.$n"
    done
    join -a1 -a2 -e0 -o 0,1.2,2.2 "$tmp/sys.$S1" "$tmp/sys.$S2" |
        awk -v d=$((S2 - S1)) '{x = ($3 - $2) / d; if (x > 0.005) {t += x; s = s sprintf(" %s %.2f", substr($1, 19), x)}}
            END {printf "%.2f  (%s )\n", t, s}'
}

have_perf=1
perf stat -e 'syscalls:sys_enter_read' true >/dev/null 2>&1 || have_perf=0

printf '%-44s %12s  %s\n' "8 B send/recv ping-pong, lockstep" "instr/RT" "syscalls/RT (by name)"
row() {
    local name=$1 fn=$2
    shift 2
    local i s=-
    i=$(per_rt "x" "$fn" "$@")
    [ $have_perf = 1 ] && s=$(sys "${@}")
    printf '%-44s %12s  %s\n' "$name" "$i" "$s"
}
row "raw TCP (write + read per message)" 'ls_loop_tcp*' $ep --lockstep @N@ --skip-ours
row "queue pairs (qp_bench lockstep)" 'qp_bench::lockstep::lockstep_loop' $qp lockstep @N@
row "DAT C API ($style, $lib)" 'ls_loop_dat*' $ep --lockstep @N@ --skip-tcp --style $style
printf '%-44s %12s\n' "idle CQ poll (queue pairs)" \
    "$(per_rt e 'qp_bench::lockstep::lockstep_empty' $qp lockstep @N@ 8 idle)"
printf '%-44s %12s\n' "empty EVD dequeue (DAT, $lib)" \
    "$(per_rt e 'ls_empty_dat*' $ep --lockstep @N@ --skip-tcp --idle)"
