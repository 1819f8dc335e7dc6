#!/bin/sh
# Guest half of verbs-perf.sh (runs inside the test guest, busybox sh, in
# /host): perftest's raw-verbs benchmark and dat-perf over the IA
# OpenIB-$DEVICE-1, server and client both here, one after the other for
# every test and size, so that both see the same guest at the same time.
# Environment (from verbs-perf.sh through run.sh --env):
#   TRANSPORT   verbs | tcp (dat-perf over our TCP transport on eth0: the
#               harness without verbs; its ratios mean nothing)
#   DEVICE      rxe0 | siw0
#   DAT_PERF    the dat-perf binary (its libdat.so.1 in ../lib)
#   TESTS       "send_lat write_lat read_lat write_bw" (perftest's names)
#   LAT_SIZES, BW_SIZES, ITERS (latency), BW_ITERS (bandwidth), DEPTH
#               (bandwidth: operations in flight)
#   REPS        rounds: every pair runs REPS times, raw and ours alternating
#               (TCG's timing drifts from one run to the next)
# dat-perf waits as perftest does: ib_write_lat spins on the last byte of
# its buffer, dat-perf -t write --lat with --wait mem; ib_send_lat and
# ib_read_lat poll the CQ, dat-perf with --wait poll (dat_evd_dequeue);
# the target of ib_read_lat and ib_write_bw busy-polls a CQ until the
# client's closing message (perftest's -R exchange; measured: its server
# spends the whole run in user mode), dat-perf's a dat_evd_dequeue loop
# (--peer wait, the default).
# Results, one line each, in perf.results (a run that did not do the
# iterations asked for gives no figure):
#   TEST SIZE raw|ours VALUE    (median latency in us, or bandwidth in MB/s,
#                                MB = 10^6 bytes; VALUE "-" when it failed;
#                                a line per round)
# and every run's output in logs/.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
TRANSPORT=${TRANSPORT:-verbs}
DEVICE=${DEVICE:-rxe0}
TESTS=${TESTS:-send_lat write_lat read_lat write_bw}
LAT_SIZES=${LAT_SIZES:-8 4096}
BW_SIZES=${BW_SIZES:-65536}
ITERS=${ITERS:-10000}
BW_ITERS=${BW_ITERS:-1000}
DEPTH=${DEPTH:-16}
REPS=${REPS:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
IA=OpenIB-$DEVICE-1
ADDR=10.0.2.15
mkdir -p logs
: > perf.results

case $TRANSPORT in
verbs) data="transport=verbs device=$DEVICE port=1" ;;
tcp) data="transport=tcp netdev=eth0" ;;
*) echo "verbs-perf-guest: TRANSPORT=$TRANSPORT: verbs or tcp"; exit 2 ;;
esac
echo "$IA u1.2 nonthreadsafe default libdat.so.1 dat.1.2 \"$data\" \"\"" > dat.conf
export DAT_OVERRIDE=/host/dat.conf

# perftest's server is up when it listens: siw's (iWARP) listener is a
# kernel TCP listener; rxe's rdma_cm listener has none to look at. dat-perf's
# server says "waiting for a client".
wait_listening() {  # port pid
    if [ "${DEVICE#rxe}" != "$DEVICE" ]; then sleep 2; return; fi
    # (a counter of its own: the callers' $n is the run's iterations)
    hex=$(printf '%04X' "$1") w=100
    while [ $w -gt 0 ] && ! grep -q ":$hex 00000000:0000 0A" /proc/net/tcp; do
        kill -0 "$2" 2>/dev/null || return
        sleep 0.1; w=$((w - 1))
    done
}

port=18600
# --pin C,S: clients on CPU C, servers on CPU S.
PIN_C= PIN_S=
if [ -n "${PIN:-}" ]; then PIN_C="taskset -c ${PIN%,*}" PIN_S="taskset -c ${PIN#*,}"; fi
# perftest: the row of the client's table that starts with the size.
# Latency: t_typical (the median, column 5); bandwidth: BW average (column
# 4, in MiB/s), as MB/s.
raw() {  # test size
    port=$((port + 1))
    log=logs/raw.$1.$2.$rep
    extra= n=$ITERS
    case $1 in *_bw) extra="-t $DEPTH" n=$BW_ITERS ;; esac
    # -F: TCG's CPU frequency readings disagree; perftest would stop on that
    $PIN_S timeout "$RUN_TIMEOUT" "ib_$1" -R -d "$DEVICE" -F -p $port -s "$2" -n "$n" $extra > "$log.server" 2>&1 &
    spid=$!
    wait_listening $port $spid
    $PIN_C timeout "$RUN_TIMEOUT" "ib_$1" -R -d "$DEVICE" -F -p $port -s "$2" -n "$n" $extra $ADDR > "$log.client" 2>&1
    wait $spid
    # A figure counts only from a run of the iterations asked for
    # (column 2).
    case $1 in
    *_lat) v=$(awk -v s="$2" -v n="$n" '$1 == s && $2 == n && NF >= 5 {print $5}' "$log.client" | tail -n1) ;;
    *) v=$(awk -v s="$2" -v n="$n" '$1 == s && $2 == n && NF >= 4 {printf "%.2f", $4 * 1.048576}' "$log.client" | tail -n1) ;;
    esac
    case $v in ''|*[!0-9.]*) v=- ;; esac   # perftest prints "inf" when its clock fails it
    echo "$1 $2 raw $v" >> perf.results
}

# dat-perf: its CSV row; t_median_us (column 8) or mb_per_s (column 10).
ours() {  # test size
    port=$((port + 1))
    log=logs/ours.$1.$2.$rep
    op=${1%_*} mode=--${1#*_}
    extra= n=$ITERS
    [ "$mode" = --bw ] && extra="--depth $DEPTH" n=$BW_ITERS
    [ "$1" = write_lat ] && extra="--wait mem"
    # The target of Reads and Write streams polls as perftest's does
    # (dat-perf's default, --peer wait): with -R perftest's server
    # busy-polls a CQ for the closing message throughout the run.
    $PIN_S timeout "$RUN_TIMEOUT" "$DAT_PERF" -D "$IA" -p $port --no-progress > "$log.server" 2>&1 &
    spid=$!
    # (its own counter: $n is the run's iterations)
    w=300
    while [ $w -gt 0 ] && ! grep -q 'waiting for a client' "$log.server"; do
        kill -0 $spid 2>/dev/null || break
        sleep 0.1; w=$((w - 1))
    done
    $PIN_C timeout "$RUN_TIMEOUT" "$DAT_PERF" -D "$IA" -p $port -t "$op" $mode -s "$2" -n "$n" $extra \
        --csv --no-progress $ADDR > "$log.client" 2>&1
    wait $spid
    # Only from a run of the iterations asked for (column 5): until
    # 2026-12-02 the wait above reused $n, and dat-perf ran some 300
    # iterations beside perftest's 10,000.
    case $mode in
    --lat) v=$(awk -F, -v s="$2" -v n="$n" '$4 == s && $5 == n {printf "%.2f", $8}' "$log.client" | tail -n1) ;;
    *) v=$(awk -F, -v s="$2" -v n="$n" '$4 == s && $5 == n {printf "%.2f", $10}' "$log.client" | tail -n1) ;;
    esac
    case $v in ''|*[!0-9.]*) v=- ;; esac
    echo "$1 $2 ours $v" >> perf.results
}

touch booted
echo "verbs-perf-guest: $IA ($data) beside perftest on $DEVICE, $ITERS iterations ($BW_ITERS for bandwidth), $REPS round(s)"
rep=1
while [ $rep -le "$REPS" ]; do
    for t in $TESTS; do
        case $t in *_lat) sizes=$LAT_SIZES ;; *) sizes=$BW_SIZES ;; esac
        for s in $sizes; do
            # Alternate which goes first from round to round.
            if [ $((rep % 2)) -eq 1 ]; then raw "$t" "$s"; ours "$t" "$s"; else ours "$t" "$s"; raw "$t" "$s"; fi
            echo "verbs-perf-guest: round $rep: $(grep "^$t $s " perf.results | tail -n2 | awk '{printf "%s=%s ", $3, $4}')($t $s B)"
        done
    done
    rep=$((rep + 1))
done
exit 0
