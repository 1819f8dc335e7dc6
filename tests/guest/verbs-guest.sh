#!/bin/sh
# Guest half of verbs.sh (runs inside the test guest, busybox sh, in /host).
# Both processes of every test run here, over one IA on the guest's RDMA
# device. Environment (from verbs.sh through run.sh --env):
#   TRANSPORT     verbs | tcp: what the IA's dat.conf line asks for (tcp:
#                 our software iWARP on eth0, to check this harness
#                 while the verbs transport is not there)
#   DEVICE        the RDMA device (rxe0, siw0); the IA is OpenIB-$DEVICE-1
#   MODE          suite: PROGRAMS, EXAMPLES, then the rping cases;
#                 interop: the host-interop CASES (verbs.sh's host half)
#   PROGRAMS      C test programs, space-separated: "PATH" (every case) or
#                 "PATH:F1,F2,..." (the cases whose name contains F1, F2, ...:
#                 one run of the program per filter)
#   EXAMPLES      the examples' build directory (build/examples), or empty
#   DEMO          the dat_demo program, or empty
#   RPING_DAT     ctests/interop/rping_dat
#   RPING_SIZES   sizes of the rping cases (rping and rping_dat here)
#   COUNT         pings per rping case
#   CASE_TIMEOUT  seconds one example or rping case may take
#   PROG_TIMEOUT  seconds one C test program may take
#   CASES         interop: "role:size:port ..." (role server: rping_dat -s
#                 here, the host's rping_dat connects through hostfwd;
#                 client: rping_dat -c here, through guestfwd to the host)
#   IA_OPTS       extra instance data for the IA (tcp: "crc=on")
# Results, one line each, in results (the host half reads them):
#   prog NAME PASSED FAILED SECS EXIT SKIPPED   (skipped cases count as passed)
#   case KIND NAME PASS|FAIL|SKIP SECS DETAIL...
# and every program's output in logs/.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
TRANSPORT=${TRANSPORT:-verbs}
DEVICE=${DEVICE:-siw0}
MODE=${MODE:-suite}
COUNT=${COUNT:-20}
CASE_TIMEOUT=${CASE_TIMEOUT:-60}
PROG_TIMEOUT=${PROG_TIMEOUT:-300}
IA=OpenIB-$DEVICE-1
ADDR=10.0.2.15
mkdir -p logs
: > results

# The IA: the verbs device, or (tcp) our TCP transport on the device's netdev.
case $TRANSPORT in
verbs) data="transport=verbs device=$DEVICE port=1${IA_OPTS:+ $IA_OPTS}" ;;
tcp) data="transport=tcp netdev=eth0${IA_OPTS:+ $IA_OPTS}" ;;
*) echo "verbs-guest: TRANSPORT=$TRANSPORT: verbs or tcp"; exit 2 ;;
esac
for ts in nonthreadsafe threadsafe; do
    echo "$IA u1.2 $ts default libdat.so.1 dat.1.2 \"$data\" \"\""
done > dat.conf
export DAT_OVERRIDE=/host/dat.conf DAT_TEST_IA=$IA

uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$(uptime_s)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }

# The host polls for files: they appear whole (written aside, renamed).
put() {  # file line
    echo "$2" > "$1.tmp" && mv "$1.tmp" "$1"
}
wait_file() {  # file seconds
    n=$(( $2 * 10 ))
    while [ ! -e "$1" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
    [ -e "$1" ]
}
# Waits until a log file has a line matching a pattern (the process is up).
wait_line() {  # file pattern pid seconds
    n=$(( $4 * 10 ))
    while [ $n -gt 0 ] && ! grep -q "$2" "$1" 2>/dev/null; do
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1; n=$((n - 1))
    done
    grep -q "$2" "$1" 2>/dev/null
}
# rping's server listens without a line to wait for: a siw (iWARP) listener
# is a kernel TCP listener; rxe has none, so give it a second.
wait_rping_listening() {  # port
    case $DEVICE in
    siw*)
        hex=$(printf '%04X' "$1") n=100
        while [ $n -gt 0 ] && ! grep -q ":$hex 00000000:0000 0A" /proc/net/tcp; do
            sleep 0.1; n=$((n - 1))
        done ;;
    *) sleep 1 ;;
    esac
}

case_line() {  # kind name result secs detail
    echo "case $1 $2 $3 $4 $5" >> results
    printf 'verbs-guest: %-8s %-28s %-4s %6ss  %s\n' "$1" "$2" "$3" "$4" "$5"
}

run_programs() {
    for entry in $PROGRAMS; do
        prog=${entry%%:*} filters=
        [ "$prog" = "$entry" ] || filters=${entry#*:}
        name=$(echo "${prog#*/ctests/}" | tr / .)
        if [ -n "$filters" ]; then
            n=$(echo "$filters" | tr ',' '\n' | wc -l)
            if [ ${#filters} -le 32 ]; then name=$name:$filters; else name="$name:$n-filters"; fi
        fi
        log=logs/$(echo "$name" | tr ':,' '__').out
        t0=$(uptime_s)
        : > "$log"
        p=0 f=0 rc=0
        # one run per filter (a case matches if its name contains it)
        for filter in $(echo "${filters:-}" | tr ',' ' '); do
            timeout "$PROG_TIMEOUT" "$prog" "$filter" >> "$log" 2>&1 || rc=$?
        done
        [ -n "$filters" ] || { timeout "$PROG_TIMEOUT" "$prog" >> "$log" 2>&1 || rc=$?; }
        secs=$(since "$t0")
        runs=$(grep -cE '^[0-9]+ passed, [0-9]+ failed$' "$log")
        want=1; [ -z "$filters" ] || want=$(echo "$filters" | tr ',' '\n' | wc -l)
        p=$(grep -c '^ok ' "$log") f=$(grep -c '^FAIL ' "$log") s=$(grep -c '^ok .*(skipped)$' "$log")
        # a run that ended without its summary line (killed, crashed) is a failure
        [ "$runs" -eq "$want" ] || f=$((f + want - runs))
        echo "prog $name $p $f $secs $rc $s" >> results
        printf 'verbs-guest: %-36s %4s passed %3s failed %7ss%s%s\n' "$name" "$p" "$f" "$secs" \
            "$([ "$s" -eq 0 ] || echo "  ($s skipped)")" "$([ "$rc" -eq 0 ] || echo "  (exit $rc)")"
        grep '^FAIL ' "$log" | sed 's/^/verbs-guest:     /'
    done
}

run_examples() {
    if [ -n "${DEMO:-}" ]; then
        t0=$(uptime_s)
        timeout "$CASE_TIMEOUT" "$DEMO" "$IA" > logs/dat_demo.out 2>&1
        rc=$?
        res=FAIL; [ $rc -eq 0 ] && res=PASS
        case_line example dat_demo "$res" "$(since "$t0")" "local objects on $IA (exit $rc)"
    fi
    [ -n "${EXAMPLES:-}" ] || return 0
    t0=$(uptime_s)
    srv=logs/rdma_pingpong.server.out cli=logs/rdma_pingpong.client.out
    timeout "$CASE_TIMEOUT" "$EXAMPLES/rdma_pingpong/server" -D "$IA" -q 4797 -t "$CASE_TIMEOUT" > "$srv" 2>&1 &
    spid=$!
    if wait_line "$srv" listening $spid "$CASE_TIMEOUT"; then
        timeout "$CASE_TIMEOUT" "$EXAMPLES/rdma_pingpong/client" -D "$IA" -q 4797 "$ADDR" > "$cli" 2>&1
        crc=$?
    else
        crc=-1
    fi
    wait $spid
    src=$?
    res=FAIL
    [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q 'server: OK' "$srv" && res=PASS
    case_line example rdma_pingpong "$res" "$(since "$t0")" \
        "client exit $crc, server exit $src: $(tail -n1 "$srv")"
}

# rdma-core's rping against rping_dat, both here, both roles. Our TCP
# transport speaks iWARP, so with TRANSPORT=tcp it can meet rping on siw
# but not on rxe (RoCE).
run_rping() {
    port=7174
    for size in $RPING_SIZES; do
        for role in server client; do
            port=$((port + 1))
            name=rping_dat-$role-$size
            if [ "$TRANSPORT" = tcp ] && [ "${DEVICE#rxe}" != "$DEVICE" ]; then
                case_line rping "$name" SKIP 0 "our tcp transport cannot meet rping on rxe (RoCE)"
                continue
            fi
            t0=$(uptime_s)
            ours=logs/$name.ours.out theirs=logs/$name.rping.out
            if [ $role = server ]; then
                timeout "$CASE_TIMEOUT" "$RPING_DAT" -s -D "$IA" -p $port -S "$size" -C "$COUNT" -V \
                    -t "$CASE_TIMEOUT" > "$ours" 2>&1 &
                opid=$!
                wait_line "$ours" listening $opid "$CASE_TIMEOUT"
                timeout "$CASE_TIMEOUT" rping -c -v -V -a $ADDR -p $port -S "$size" -C "$COUNT" > "$theirs" 2>&1
                trc=$?
                wait $opid
                orc=$?
                pings=$(grep -c 'ping data: rdma-ping-' "$theirs")
                res=FAIL
                [ $orc -eq 0 ] && [ $trc -eq 0 ] && [ "$pings" = "$COUNT" ] && res=PASS
                detail="rping -c: exit $trc, $pings/$COUNT pings; $(tail -n1 "$ours" | sed 's/^rping_dat: //')"
            else
                timeout "$CASE_TIMEOUT" rping -s -V -a $ADDR -p $port -S "$size" > "$theirs" 2>&1 &
                tpid=$!
                wait_rping_listening $port
                timeout "$CASE_TIMEOUT" "$RPING_DAT" -c -a $ADDR -D "$IA" -p $port -S "$size" -C "$COUNT" -V -r \
                    -t "$CASE_TIMEOUT" > "$ours" 2>&1
                orc=$?
                n=50   # rping -s ends when our client disconnects; else stop it
                while [ $n -gt 0 ] && kill -0 $tpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
                kill $tpid 2>/dev/null
                wait $tpid
                trc=$?
                res=FAIL
                [ $orc -eq 0 ] && [ $trc -eq 0 ] && res=PASS
                detail="rping -s: exit $trc; $(tail -n1 "$ours" | sed 's/^rping_dat: //')"
            fi
            case_line rping "$name" $res "$(since "$t0")" "$detail"
        done
    done
}

# Host interop: per case i, files shared with the host half: ready.i (our
# server here listens), go.i (the host's server listens), hostdone.i (the
# host's client exited), done.i ("exit-status" of our side here).
run_interop() {
    i=0
    for c in $CASES; do
        i=$((i + 1))
        role=${c%%:*} rest=${c#*:}; size=${rest%%:*} port=${rest#*:}
        out=logs/interop.$i.out
        if [ "$role" = server ]; then
            timeout "$CASE_TIMEOUT" "$RPING_DAT" -s -D "$IA" -p "$port" -S "$size" -C "$COUNT" -V \
                -t "$CASE_TIMEOUT" > "$out" 2>&1 &
            opid=$!
            wait_line "$out" listening $opid 30
            touch "ready.$i"
            wait $opid
            put "done.$i" "$?"
        else
            if ! wait_file "go.$i" 60; then put "done.$i" "timeout"; continue; fi
            timeout "$CASE_TIMEOUT" "$RPING_DAT" -c -a 10.0.2.100 -D "$IA" -p "$port" -S "$size" \
                -C "$COUNT" -V -r -t "$CASE_TIMEOUT" > "$out" 2>&1
            put "done.$i" "$?"
        fi
    done
}

touch booted
echo "verbs-guest: $MODE over $IA ($TRANSPORT: $data), devices: $(ls /sys/class/infiniband | xargs)"
t_all=$(uptime_s)
case $MODE in
suite)
    run_programs
    run_examples
    [ -z "${RPING_SIZES:-}" ] || run_rping ;;
interop)
    run_interop ;;
esac
echo "verbs-guest: done in $(since "$t_all")s"
dmesg | grep -E 'rxe|siw[0-9]*:|siw: [^lm]|iw_cm|rdma_cm|BUG|Oops|invalid opcode|WARNING|Call Trace' |
    grep -v 'speed is unknown' | tail -n 40 > dmesg.txt
exit 0
