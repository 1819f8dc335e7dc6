#!/bin/bash
# The DAT test programs over a verbs IA on the kernel's RDMA devices, in
# the QEMU test guest (build.sh, run.sh; the guest half is verbs-guest.sh).
#
# Suite, one guest per device (rxe0 on eth0, siw0 on eth0), both processes
# of every test in the guest over the IA OpenIB-<device>-1:
#   - the endpoint conformance programs (build/ctests/ep/*), the
#     consumer-pattern programs (build/ctests/consumer/*) and the local-object
#     programs for the functions those leave out (build/ctests/unit/*): the
#     set chosen below (--programs; docs/testing.md says why), DAT_TEST_IA
#     naming the IA;
#   - the examples: dat_demo on the IA, rdma_pingpong server and client;
#   - rdma-core's rping against our rping_dat, both roles (our server and
#     their client, their server and our client), --rping-size each.
# Interop (siw only): our rping_dat over the verbs IA on siw0 in the guest
# against our rping_dat over TCP (tcp0) on the host, both roles, CRC off
# (siw.ko, the host's default) and on (siw_crc.ko, a host IA with crc=on),
# through QEMU's forwards on 127.0.0.1; Send, RDMA Read and RDMA Write each
# ping, every byte verified (-V).
# One line per program and case, a summary per device, exit 1 if anything
# failed.
#
#   tests/guest/verbs.sh [options]
#     --transport verbs|tcp  the guest IA's transport (default verbs; tcp runs
#                            the same harness over our TCP transport on the
#                            guest's eth0, to check it without verbs)
#     --device rxe|siw|both  suite devices (default both)
#     --programs SET         subset (default: SUBSET below), all (every
#                            program in ep/, consumer/ and unit/), or a list
#                            "ep/srq consumer/teardown:TEARDOWN_active ..."
#                            (entries as in SUBSET, relative to build/ctests)
#     --no-suite             only the interop cases
#     --no-interop           only the suites
#     --rping-size N         (repeatable; default 64 65535)
#     --interop-size N       (repeatable; default 64 65535)
#     --count N              pings per rping case (default 20)
#     --case-timeout S       one example, rping or interop case (default 60)
#     --keep DIR             keep the shares (logs of every program) in DIR
# Environment: BUILD (default build; its lib/, ctests/, examples/, demo/),
# UDAPL_GUEST_CACHE (see build.sh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"

# The programs the suite runs by default under TCG, and why, are in
# docs/testing.md ("Verbs in the guest"). An entry is PROGRAM (every case),
# PROGRAM:F1,F2 (the cases whose name contains F1 or F2) or PROGRAM:!F1,F2
# (every case but those; the names are read from ctests/PROGRAM.c).
SUBSET=(
    ep/ep_lifecycle:!EPC_17_max_eps ep/ep_modify ep/ep_status
    ep/conn_connect ep/conn_cr:!BADH_ ep/conn_sp:!BADH_ ep/conn_e2e
    ep/dto_send ep/dto_recv ep/dto_rdma ep/dto_rmr ep/dto_flags ep/dto_e2e
    ep/dto_badinput:E2E_DTO_BADPOST
    ep/srq ep/e2e_smoke ep/e2e_threads
    ep/e2e_race:!RACE_posts_during,EDQ_08,EFR_08
    ep/notify_stress
    consumer/conn_patterns consumer/fork_servers consumer/teardown
    consumer/dto_patterns:NULL_ATTR
    unit/unit_pz unit/unit_mem unit/unit_misc unit/unit_evd:ECU,EDS,EEN,ERS,ESU
)
# Messages per notify_stress case (its default, 2000, takes a minute under TCG).
NOTIFY_STRESS_MSGS=${NOTIFY_STRESS_MSGS:-300}

TRANSPORT=verbs DEVICES="rxe siw" PROGRAMS=subset SUITE=1 INTEROP=1 RPING_SIZES=() INTEROP_SIZES=()
COUNT=20 CASE_TIMEOUT=60 KEEP=""
while [ $# -gt 0 ]; do
    case $1 in
    --transport) case $2 in verbs|tcp) TRANSPORT=$2 ;; *) echo "verbs: --transport verbs|tcp" >&2; exit 2 ;; esac; shift ;;
    --device) case $2 in both) DEVICES="rxe siw" ;; rxe|siw) DEVICES=$2 ;; *) echo "verbs: --device rxe|siw|both" >&2; exit 2 ;; esac; shift ;;
    --programs) PROGRAMS=$2; shift ;;
    --no-suite) SUITE=0 ;;
    --no-interop) INTEROP=0 ;;
    --rping-size) RPING_SIZES+=("$2"); shift ;;
    --interop-size) INTEROP_SIZES+=("$2"); shift ;;
    --count) COUNT=$2; shift ;;
    --case-timeout) CASE_TIMEOUT=$2; shift ;;
    --keep) KEEP=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verbs: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#RPING_SIZES[@]} -gt 0 ] || RPING_SIZES=(64 65535)
[ ${#INTEROP_SIZES[@]} -gt 0 ] || INTEROP_SIZES=(64 65535)
for s in "${RPING_SIZES[@]}" "${INTEROP_SIZES[@]}"; do
    [[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 23 ] && [ "$s" -le 65535 ] ||
        { echo "verbs: size $s: rping accepts 23..65535" >&2; exit 2; }
done

BUILD=$(cd "${BUILD:-$TOP/build}" 2>/dev/null && pwd) || { echo "verbs: no build directory (make)" >&2; exit 2; }
CT=$BUILD/ctests
RPING_DAT=$CT/interop/rping_dat
DEMO=$BUILD/demo/dat_demo
for f in "$BUILD/lib/libdat.so.1" "$RPING_DAT" "$DEMO" "$BUILD/examples/rdma_pingpong/server"; do
    [ -e "$f" ] || { echo "verbs: $f missing (make verbs-check builds what this needs)" >&2; exit 2; }
done
case $PROGRAMS in
subset) LIST=("${SUBSET[@]}") ;;
all) LIST=(); for p in "$CT"/ep/* "$CT"/consumer/* "$CT"/unit/*; do LIST+=("${p#"$CT"/}"); done ;;
*) read -ra LIST <<< "$PROGRAMS" ;;
esac
# PROGRAM:!F1,F2 -> PROGRAM:P1,P2,...: filters that select every case whose
# name contains no Fi, each exactly once, in few runs: per case not yet
# selected, the shortest prefix of its name that no excluded case contains
# and no case already selected contains (the full name at worst).
expand_entry() {  # entry
    local prog=${1%%:*} filters names
    filters=${1#"$prog"}; filters=${filters#:}
    [ -x "$CT/$prog" ] || { echo "verbs: $CT/$prog missing (make ctests)" >&2; return 1; }
    if [[ $filters != '!'* ]]; then echo "$CT/$1"; return 0; fi
    [ -f "$TOP/ctests/$prog.c" ] || { echo "verbs: $prog: no ctests/$prog.c to read its cases from" >&2; return 1; }
    names=$(sed -n 's/^TEST(\([A-Za-z0-9_]*\)).*/\1/p' "$TOP/ctests/$prog.c" | awk -v excl="${filters#!}" '
        BEGIN { nx = split(excl, x, ",") }
        {
            all[++n] = $0; out[n] = 0
            for (j = 1; j <= nx; j++) if (index($0, x[j])) out[n] = 1
        }
        END {
            for (i = 1; i <= n; i++) {
                if (out[i] || done[i]) continue
                for (len = 1; len <= length(all[i]); len++) {
                    p = substr(all[i], 1, len); ok = 1
                    for (k = 1; k <= n && ok; k++)
                        if (index(all[k], p) && (out[k] || done[k])) ok = 0
                    if (ok) break
                }
                for (k = 1; k <= n; k++) if (index(all[k], p)) done[k] = 1
                sel = sel (sel == "" ? "" : ",") p
            }
            print sel
        }')
    [ -n "$names" ] || { echo "verbs: $1 leaves no case" >&2; return 1; }
    echo "$CT/$prog:$names"
}
PROG_PATHS=()
for p in "${LIST[@]}"; do
    e=$(expand_entry "$p") || exit 2
    PROG_PATHS+=("$e")
done

T_ALL=$(date +%s.%N)
"$HERE/build.sh" >/dev/null || { echo "verbs: the guest could not be built" >&2; exit 1; }

WORK=${KEEP:-$(mktemp -d /tmp/udapl-verbs.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BG=()
cleanup() {
    local p
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SUMMARY=()
FAILED=0
# What every guest gets: the library, the programs (with their libraries),
# and the guest half.
FILES=(--file "$BUILD/lib" --file "$RPING_DAT")

# ---- the suite, one guest per device ------------------------------------------------
run_suite() {  # rxe|siw
    local kind=$1 dev=${1}0 share=$WORK/suite-${1}0 t0 rc devopts
    rm -rf "$share"; mkdir -p "$share"
    if [ "$kind" = rxe ]; then devopts=(--siw none --dev rxe0:rxe:eth0); else devopts=(--siw siw --dev siw0:siw:eth0); fi
    echo "verbs: $dev: ${#PROG_PATHS[@]} program runs, the examples, rping x rping_dat (transport=$TRANSPORT)"
    t0=$(date +%s.%N)
    # Each program has its own deadline in the guest; the guest's covers all.
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout 900 "${devopts[@]}" \
        "${FILES[@]}" --file "$CT/ep" --file "$CT/consumer" --file "$CT/unit" --file "$BUILD/examples" --file "$DEMO" \
        --env "TRANSPORT=$TRANSPORT" --env "DEVICE=$dev" --env MODE=suite \
        --env "PROGRAMS=${PROG_PATHS[*]}" --env "EXAMPLES=$BUILD/examples" --env "DEMO=$DEMO" \
        --env "RPING_DAT=$RPING_DAT" --env "RPING_SIZES=${RPING_SIZES[*]}" --env "COUNT=$COUNT" \
        --env "CASE_TIMEOUT=$CASE_TIMEOUT" --env PROG_TIMEOUT=240 --env "NOTIFY_STRESS_MSGS=$NOTIFY_STRESS_MSGS" \
        "$HERE/verbs-guest.sh" > "$share/run.out" 2>&1
    rc=$?
    grep '^verbs-guest: ' "$share/console.log" | sed 's/^verbs-guest: /verbs:   /'
    local progs=0 passed=0 failed=0 skipped=0 bad=0 cp=0 cf=0 cs=0 kind_ name p f secs prc sk res
    while read -r kind_ name p f secs prc sk; do
        [ "$kind_" = prog ] || continue
        progs=$((progs + 1)); passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + sk))
        [ "$prc" = 0 ] || [ "$f" -gt 0 ] || bad=$((bad + 1))
    done < <(cat "$share/results" 2>/dev/null)
    while read -r kind_ _ name res secs; do
        [ "$kind_" = case ] || continue
        case $res in PASS) cp=$((cp + 1)) ;; SKIP) cs=$((cs + 1)) ;; *) cf=$((cf + 1)) ;; esac
    done < <(cat "$share/results" 2>/dev/null)
    local line
    line=$(printf '%s: %d program runs, %d cases passed (%d of them skipped), %d failed; examples and rping: %d passed, %d failed, %d skipped (%s s)' \
        "$dev" "$progs" "$passed" "$skipped" "$failed" "$cp" "$cf" "$cs" "$(secs_since "$t0")")
    [ "$bad" -eq 0 ] || line+="; $bad program(s) exited non-zero with no failed case"
    if [ "$rc" -ne 0 ]; then
        line+="; the guest run ended with status $rc: $(tail -n1 "$share/run.out")"
        FAILED=$((FAILED + 1))
    fi
    [ "$progs" -eq ${#PROG_PATHS[@]} ] || { line+="; $(( ${#PROG_PATHS[@]} - progs )) program run(s) missing"; FAILED=$((FAILED + 1)); }
    FAILED=$((FAILED + failed + bad + cf))
    [ ! -s "$share/dmesg.txt" ] || [ $((failed + bad + cf)) -eq 0 ] ||
        sed 's/^/verbs:   guest dmesg: /' "$share/dmesg.txt" | head -n 10
    echo "verbs: $line"
    SUMMARY+=("$line")
}

# ---- interop: rping_dat in the guest (siw) <-> rping_dat on the host (TCP) ----------
run_interop() {  # off|on
    local crc=$1 share=$WORK/interop-crc-$1 siw=siw host_ia=tcp0 ia_opts="" conf
    rm -rf "$share"; mkdir -p "$share"
    conf=$share/host-dat.conf
    : > "$conf"
    if [ "$crc" = on ]; then
        siw=siw_crc host_ia=interop_crc
        echo "interop_crc u1.2 nonthreadsafe default builtin udapl.1.2 \"crc=on\" \"\"" > "$conf"
        # our TCP transport in the guest (--transport tcp) is told as siw_crc.ko is built
        [ "$TRANSPORT" = verbs ] || ia_opts="crc=on"
    fi
    local roles="server client" ncase base i=0 role size port cases=() fwd=()
    ncase=$(( ${#INTEROP_SIZES[@]} * 2 ))
    base=$(pick_ports "$ncase") || { FAILED=$((FAILED + 1)); return; }
    for role in $roles; do
        for size in "${INTEROP_SIZES[@]}"; do
            port=$((base + i)); i=$((i + 1))
            cases+=("$role:$size:$port")
            # role = the guest's: its server is reached through hostfwd, its
            # client reaches the host through guestfwd
            if [ "$role" = server ]; then fwd+=(--hostfwd "$port"); else fwd+=(--guestfwd "$port:$port"); fi
        done
    done
    echo "verbs: interop crc=$crc: siw0 in the guest with $siw.ko ($TRANSPORT IA) <-> host IA $host_ia, ports $base-$((base + ncase - 1))"
    local gtimeout=$(( 60 + ncase * (CASE_TIMEOUT + 15) )) guest_pid
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout "$gtimeout" --siw "$siw" \
        --dev siw0:siw:eth0 "${FILES[@]}" --env "TRANSPORT=$TRANSPORT" --env DEVICE=siw0 --env MODE=interop \
        --env "IA_OPTS=$ia_opts" --env "RPING_DAT=$RPING_DAT" --env "CASES=${cases[*]}" --env "COUNT=$COUNT" \
        --env "CASE_TIMEOUT=$CASE_TIMEOUT" "${fwd[@]}" "$HERE/verbs-guest.sh" > "$share/run.out" 2>&1 &
    guest_pid=$!
    BG+=("$guest_pid")
    wait_guest_file "$share/booted" 120 "$guest_pid" ||
        echo "verbs: interop crc=$crc: the guest did not come up: $(tail -n1 "$share/run.out")"
    local c t0 rc g res detail ours
    i=0
    for c in "${cases[@]}"; do
        i=$((i + 1))
        role=${c%%:*}; size=${c#*:}; size=${size%%:*}; port=${c##*:}
        ours=$share/host.$i.out
        t0=$(date +%s.%N)
        if ! kill -0 "$guest_pid" 2>/dev/null || guest_wedged "$share"; then
            interop_line "$role" "$crc" "$size" FAIL 0 "not run: the guest is gone ($(wedge_reason "$share" || tail -n1 "$share/run.out"))"
            continue
        fi
        if [ "$role" = server ]; then
            if ! wait_guest_file "$share/ready.$i" 60 "$guest_pid"; then
                interop_line "$role" "$crc" "$size" FAIL "$(secs_since "$t0")" "our server in the guest never got ready"
                continue
            fi
            DAT_OVERRIDE=$conf LD_LIBRARY_PATH=$BUILD/lib timeout $((CASE_TIMEOUT + 10)) \
                "$RPING_DAT" -c -a 127.0.0.1 -D "$host_ia" -p "$port" -S "$size" -C "$COUNT" -V -r \
                -t "$CASE_TIMEOUT" > "$ours" 2>&1
            rc=$?
        else
            DAT_OVERRIDE=$conf LD_LIBRARY_PATH=$BUILD/lib timeout $((CASE_TIMEOUT + 10)) \
                "$RPING_DAT" -s -D "$host_ia" -p "$port" -S "$size" -C "$COUNT" -V \
                -t "$CASE_TIMEOUT" > "$ours" 2>&1 &
            local sp=$! n=50
            while [ $n -gt 0 ] && ! grep -q listening "$ours" 2>/dev/null; do
                kill -0 "$sp" 2>/dev/null || break; sleep 0.1; n=$((n - 1))
            done
            touch "$share/go.$i"
            wait "$sp"; rc=$?
        fi
        wait_guest_file "$share/done.$i" $((CASE_TIMEOUT + 20)) "$guest_pid"
        g=$(cat "$share/done.$i" 2>/dev/null || echo none)
        if [ "$rc" -eq 0 ] && [ "$g" = 0 ]; then
            res=PASS detail="host: $(tail -n1 "$ours" | sed 's/^rping_dat: //')"
        else
            res=FAIL
            detail="host exit $rc: $(tail -n1 "$ours" | sed 's/^rping_dat: //') | guest exit $g: $(tail -n1 "$share/logs/interop.$i.out" 2>/dev/null | sed 's/^rping_dat: //')"
        fi
        interop_line "$role" "$crc" "$size" "$res" "$(secs_since "$t0")" "$detail"
    done
    if guest_wedged "$share"; then kill "$guest_pid" 2>/dev/null; fi
    wait "$guest_pid"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "verbs: interop crc=$crc: the guest run ended with status $rc: $(tail -n1 "$share/run.out")"
        FAILED=$((FAILED + 1))
    fi
    [ ! -s "$share/dmesg.txt" ] || sed 's/^/verbs:   guest dmesg: /' "$share/dmesg.txt" | head -n 10
}
INTEROP_PASS=0 INTEROP_FAIL=0
interop_line() {  # guest-role crc size result secs detail
    printf 'verbs: interop guest-%-6s crc=%-3s size=%-6s %-4s %6ss  %s\n' "$1" "$2" "$3" "$4" "$5" "$6"
    if [ "$4" = PASS ]; then INTEROP_PASS=$((INTEROP_PASS + 1)); else INTEROP_FAIL=$((INTEROP_FAIL + 1)); FAILED=$((FAILED + 1)); fi
}

if [ "$SUITE" -eq 1 ]; then
    for d in $DEVICES; do run_suite "$d"; done
fi
if [ "$INTEROP" -eq 1 ]; then
    T_IO=$(date +%s.%N)
    for crc in off on; do run_interop "$crc"; done
    SUMMARY+=("$(printf 'interop siw0 (guest, %s) <-> tcp0 (host): %d passed, %d failed (%s s)' \
        "$TRANSPORT" "$INTEROP_PASS" "$INTEROP_FAIL" "$(secs_since "$T_IO")")")
fi

echo
echo "verbs: results (transport=$TRANSPORT):"
for s in "${SUMMARY[@]}"; do echo "  $s"; done
printf 'verbs: %s (%s s)\n' "$([ "$FAILED" -eq 0 ] && echo "all passed" || echo "$FAILED failure(s)")" "$(secs_since "$T_ALL")"
[ -z "$KEEP" ] || echo "verbs: logs in $WORK"
[ "$FAILED" -eq 0 ]
