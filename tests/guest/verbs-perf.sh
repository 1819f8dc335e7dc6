#!/bin/bash
# dat-perf over a verbs IA beside rdma-core's perftest on the same device,
# in the QEMU test guest (build.sh, run.sh; the guest half is
# verbs-perf-guest.sh): ib_send_lat, ib_write_lat, ib_read_lat and
# ib_write_bw, server and client in the guest over rxe0 (and siw0), and
# dat-perf -t send|write|read --lat|--bw with the same sizes, iterations
# and depth, each pair run back to back. One table per device: perftest's
# figure and ours (medians over the rounds), and the ratio, the median of
# the rounds' own ratios (latency: ours / raw, lower is better; bandwidth:
# ours / raw, higher is better). dat-perf signals one Send or RDMA Write in
# 100 (--cq-mod, perftest's default) and, on rxe, its verbs transport
# posts small ones inline, as perftest does (not on iWARP: docs/verbs.md).
# Latency is the median (perftest's
# t_typical, dat-perf's t_median: half a round trip for send and write, one
# RDMA Read for read); bandwidth in MB/s (10^6 bytes; perftest's MiB/s
# converted). Under TCG the absolute numbers mean little; the ratios are the
# point.
#
#   tests/guest/verbs-perf.sh [options]
#     --transport verbs|tcp  dat-perf's IA (default verbs; tcp: our TCP
#                            transport on the guest's eth0, to check the
#                            harness without verbs; its ratios mean nothing)
#     --device rxe|siw|both  (default both)
#     --lat-size N           (repeatable; default 8 4096)
#     --bw-size N            (repeatable; default 65536)
#     --iters N              iterations of every latency run (default 10000:
#                            with 1000 the rounds' ratios spread 0.7-1.9
#                            under TCG)
#     --bw-iters N           iterations of every bandwidth run (default 1000)
#     --depth N              bandwidth: operations in flight (default 16)
#     --reps N               rounds of every pair, raw and ours alternating
#                            (default 5); the table shows the medians over
#                            the rounds and the range of the rounds' ratios
#     --test T               (repeatable; default send_lat write_lat read_lat write_bw)
#     --pin C,S              run every client on guest CPU C and every
#                            server on CPU S (taskset; default: where the
#                            scheduler puts them)
#     --keep DIR             keep the shares (every run's output) in DIR
# Exit status 0 when every test has a figure from at least one round, 1
# otherwise (rounds without one are named in the table; the
# ratios are reported, not judged).
# Environment: BUILD (default build; its lib/ and bin/dat-perf).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"

TRANSPORT=verbs DEVICES="rxe siw" LAT_SIZES=() BW_SIZES=() ITERS=10000 BW_ITERS=1000 DEPTH=16 REPS=5 TESTS=() KEEP="" PIN=""
while [ $# -gt 0 ]; do
    case $1 in
    --transport) case $2 in verbs|tcp) TRANSPORT=$2 ;; *) echo "verbs-perf: --transport verbs|tcp" >&2; exit 2 ;; esac; shift ;;
    --device) case $2 in both) DEVICES="rxe siw" ;; rxe|siw) DEVICES=$2 ;; *) echo "verbs-perf: --device rxe|siw|both" >&2; exit 2 ;; esac; shift ;;
    --lat-size) LAT_SIZES+=("$2"); shift ;;
    --bw-size) BW_SIZES+=("$2"); shift ;;
    --iters) ITERS=$2; shift ;;
    --bw-iters) BW_ITERS=$2; shift ;;
    --depth) DEPTH=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --test) case $2 in send_lat|write_lat|read_lat|write_bw) TESTS+=("$2") ;; *) echo "verbs-perf: --test send_lat|write_lat|read_lat|write_bw" >&2; exit 2 ;; esac; shift ;;
    --keep) KEEP=$2; shift ;;
    --pin) case $2 in [0-9]*,[0-9]*) PIN=$2 ;; *) echo "verbs-perf: --pin CLIENT_CPU,SERVER_CPU" >&2; exit 2 ;; esac; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verbs-perf: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#LAT_SIZES[@]} -gt 0 ] || LAT_SIZES=(8 4096)
[ ${#BW_SIZES[@]} -gt 0 ] || BW_SIZES=(65536)
[ ${#TESTS[@]} -gt 0 ] || TESTS=(send_lat write_lat read_lat write_bw)

BUILD=$(cd "${BUILD:-$TOP/build}" 2>/dev/null && pwd) || { echo "verbs-perf: no build directory (make)" >&2; exit 2; }
DAT_PERF=$BUILD/bin/dat-perf
[ -x "$DAT_PERF" ] || { echo "verbs-perf: $DAT_PERF missing (make tools)" >&2; exit 2; }
[ -f "$BUILD/lib/libdat.so.1" ] || { echo "verbs-perf: $BUILD/lib/libdat.so.1 missing (make)" >&2; exit 2; }

T_ALL=$(date +%s.%N)
"$HERE/build.sh" >/dev/null || { echo "verbs-perf: the guest could not be built" >&2; exit 1; }
WORK=${KEEP:-$(mktemp -d /tmp/udapl-verbs-perf.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cleanup() { [ -n "$KEEP" ] || rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The median of a test's figures over the rounds that produced one ("-"
# when none did; perftest's own client fails now and then under TCG, e.g.
# "Failed to connect RDMA CM events").
figure() {  # results test size raw|ours
    awk -v t="$2" -v s="$3" -v k="$4" '$1 == t && $2 == s && $3 == k && $4 != "-" {print $4}' "$1" 2>/dev/null |
        sort -g | awk '{v[NR] = $1}
            END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
                  else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# How many rounds of a test produced no figure, raw or ours ("" if none).
failed_rounds() {  # results test size
    awk -v t="$2" -v s="$3" '$1 == t && $2 == s && $4 == "-" {n[$3]++}
        END { out = ""; for (k in n) out = out (out == "" ? "" : ", ") n[k] " " k; if (out != "") printf "; no figure: %s", out }' "$1" 2>/dev/null
}

# The median of the rounds' ours/raw: each round's pair ran back to back,
# so its ratio is free of the drift between rounds that TCG shows ("-"
# when no round has both figures).
ratio_median() {  # results test size
    awk -v t="$2" -v s="$3" '$1 == t && $2 == s && $3 == "raw" {r[++nr] = $4}
        $1 == t && $2 == s && $3 == "ours" {o[++no] = $4}
        END { for (i = 1; i <= nr && i <= no; i++) if (r[i] != "-" && o[i] != "-" && r[i] + 0 > 0)
                  printf "%.6f\n", o[i] / r[i] }' "$1" 2>/dev/null |
        sort -g | awk '{v[NR] = $1}
            END { if (NR == 0) print "-"; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2];
                  else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The lowest and highest of the rounds' ours/raw (pairs in order).
ratio_range() {  # results test size
    awk -v t="$2" -v s="$3" '$1 == t && $2 == s && $3 == "raw" {r[++nr] = $4}
        $1 == t && $2 == s && $3 == "ours" {o[++no] = $4}
        END { for (i = 1; i <= nr && i <= no; i++) if (r[i] != "-" && o[i] != "-" && r[i] + 0 > 0) {
                  x = o[i] / r[i]; if (!n++ || x < lo) lo = x; if (n == 1 || x > hi) hi = x }
              if (n) printf "%.2f-%.2f", lo, hi }' "$1" 2>/dev/null
}

MISSING=0
run_device() {  # rxe|siw
    local kind=$1 dev=${1}0 share=$WORK/perf-${1}0 devopts rc t0 nruns missing_before=$MISSING
    rm -rf "$share"; mkdir -p "$share"
    if [ "$kind" = rxe ]; then devopts=(--siw none --dev rxe0:rxe:eth0); else devopts=(--siw siw --dev siw0:siw:eth0); fi
    nruns=$(( (${#LAT_SIZES[@]} * ${#TESTS[@]} * 2 + 2) * REPS ))
    t0=$(date +%s.%N)
    # The guest's clock as on real machines (a vDSO read, not a system
    # call): dat-perf reads it around every operation, as perftest its TSC.
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout $(( 60 + nruns * 130 )) "${devopts[@]}" \
        --append "clocksource=tsc tsc=reliable" \
        --file "$BUILD/lib" --file "$DAT_PERF" --env "TRANSPORT=$TRANSPORT" --env "DEVICE=$dev" \
        --env "DAT_PERF=$DAT_PERF" --env "TESTS=${TESTS[*]}" --env "LAT_SIZES=${LAT_SIZES[*]}" \
        --env "BW_SIZES=${BW_SIZES[*]}" --env "ITERS=$ITERS" --env "BW_ITERS=$BW_ITERS" --env "DEPTH=$DEPTH" --env "REPS=$REPS" --env "PIN=$PIN" \
        "$HERE/verbs-perf-guest.sh" > "$share/run.out" 2>&1
    rc=$?
    echo
    echo "verbs-perf: $dev, dat-perf over OpenIB-$dev-1 (transport=$TRANSPORT) beside perftest, $ITERS iterations ($BW_ITERS for bandwidth), bandwidth depth $DEPTH, median of $REPS round(s) ($(secs_since "$t0") s)"
    if [ "$rc" -ne 0 ]; then
        echo "verbs-perf: $dev: the guest run ended with status $rc: $(tail -n1 "$share/run.out")"
        MISSING=$((MISSING + 1))
    fi
    printf '  %-10s %8s  %14s  %14s  %9s  %s\n' test size perftest dat-perf "ours/raw" "rounds' ratios"
    local t s raw ours unit ratio
    for t in "${TESTS[@]}"; do
        local sizes=("${LAT_SIZES[@]}") unit="us"
        [[ $t == *_bw ]] && sizes=("${BW_SIZES[@]}") unit="MB/s"
        for s in "${sizes[@]}"; do
            raw=$(figure "$share/perf.results" "$t" "$s" raw)
            ours=$(figure "$share/perf.results" "$t" "$s" ours)
            ratio=$(ratio_median "$share/perf.results" "$t" "$s")
            [ "$raw" != - ] && [ "$ours" != - ] || MISSING=$((MISSING + 1))
            printf '  %-10s %8s  %9s %-4s  %9s %-4s  %9s  %s%s\n' "$t" "$s" "$raw" "$unit" "$ours" "$unit" "$ratio" \
                "$(ratio_range "$share/perf.results" "$t" "$s")" "$(failed_rounds "$share/perf.results" "$t" "$s")"
        done
    done
    [ "$MISSING" -eq "$missing_before" ] || echo "verbs-perf: $dev: tests without any figure: see $share/logs (--keep DIR keeps them)"
}

for d in $DEVICES; do run_device "$d"; done
echo
printf 'verbs-perf: %s (%s s); the issue asks latency <= 1.03x raw verbs, bandwidth >= 0.97x\n' \
    "$([ "$MISSING" -eq 0 ] && echo "every test produced its figures" || echo "$MISSING test(s) without any figure")" "$(secs_since "$T_ALL")"
[ "$MISSING" -eq 0 ]
