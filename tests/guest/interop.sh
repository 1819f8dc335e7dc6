#!/bin/bash
# Interoperability of libdat's built-in iWARP provider with the Linux
# kernel's siw and rdma-core's rping, in the QEMU test guest (build.sh,
# run.sh). Our rping_dat (ctests/interop/rping_dat.c) runs on the host:
#   server: our rping_dat -s on 127.0.0.1  <-  rping -c in the guest (guestfwd)
#   client: our rping_dat -c               ->  rping -s in the guest (hostfwd)
# for each size, COUNT pings, data verified on both sides; once with the
# library's default configuration against siw, once with a dat.conf IA
# that sets crc=on against siw built with mpa_crc_required. First, sanity
# cases inside the guest alone: rping server and client over siw and over
# rxe. One line per case, a summary, exit 1 if any case failed.
#
#   tests/guest/interop.sh [options]
#     --role server|client|both   (default both)
#     --crc off|on|both           (default both)
#     --size N                    (repeatable; default 23 64 4096 65535: rping's
#                                  minimum -S is 23, its maximum 65535)
#     --count N                   pings per case (default 20)
#     --lib-opts "K=V ..."        extra instance options for our IA in both modes
#                                  (e.g. "ack=local"), through a dat.conf line
#     --no-sanity                 skip the guest-only rping cases
#     --pcap DIR                  capture the forwarded TCP ports on lo (dumpcap)
#                                  into DIR/crc-{off,on}.pcapng
#     --keep DIR                  keep the shares (logs, rping output) in DIR
#     --case-timeout S            one case's deadline (default 30)
#     --siw-ko FILE               load this siw module in the crc=off guest instead
#                                  of the built one (to try a patched siw)
# Environment: RPING_DAT (default build/ctests/interop/rping_dat), LIBDIR
# (default build/lib), UDAPL_GUEST_CACHE (see build.sh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

SIW_KO="" ROLES="server client" CRCS="off on" SIZES=() COUNT=20 LIB_OPTS="" SANITY=1 PCAP="" KEEP="" CASE_TIMEOUT=30
while [ $# -gt 0 ]; do
    case $1 in
    --role) case $2 in both) ROLES="server client" ;; server|client) ROLES=$2 ;; *) echo "interop: --role server|client|both" >&2; exit 2 ;; esac; shift ;;
    --crc) case $2 in both) CRCS="off on" ;; off|on) CRCS=$2 ;; *) echo "interop: --crc off|on|both" >&2; exit 2 ;; esac; shift ;;
    --size) SIZES+=("$2"); shift ;;
    --count) COUNT=$2; shift ;;
    --lib-opts) LIB_OPTS=$2; shift ;;
    --no-sanity) SANITY=0 ;;
    --pcap) PCAP=$2; shift ;;
    --keep) KEEP=$2; shift ;;
    --case-timeout) CASE_TIMEOUT=$2; shift ;;
    --siw-ko) SIW_KO=$(cd "$(dirname "$2")" && echo "$PWD/$(basename "$2")"); shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "interop: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#SIZES[@]} -gt 0 ] || SIZES=(23 64 4096 65535)
for s in "${SIZES[@]}"; do
    [[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 23 ] && [ "$s" -le 65535 ] ||
        { echo "interop: --size $s: rping accepts 23..65535" >&2; exit 2; }
done

RPING_DAT=${RPING_DAT:-$TOP/build/ctests/interop/rping_dat}
LIBDIR=${LIBDIR:-$TOP/build/lib}
[ -x "$RPING_DAT" ] || { echo "interop: $RPING_DAT missing (make interop)" >&2; exit 2; }
[ -f "$LIBDIR/libdat.so.1" ] || { echo "interop: $LIBDIR/libdat.so.1 missing (make)" >&2; exit 2; }

T_ALL=$(date +%s.%N)
"$HERE/build.sh" >/dev/null || { echo "interop: the guest could not be built" >&2; exit 1; }

WORK=${KEEP:-$(mktemp -d /tmp/udapl-interop.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
[ -z "$PCAP" ] || { mkdir -p "$PCAP"; PCAP=$(cd "$PCAP" && pwd); }
BG=()
cleanup() {
    local p
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free TCP ports on 127.0.0.1 (a random base, checked with ss).
used_ports() { ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u; }
pick_ports() {  # count -> a run of free ports
    local n=$1 base try p ok used
    used=" $(used_ports | tr '\n' ' ') "
    for try in $(seq 50); do
        base=$(( 20000 + (RANDOM * 7 + try * 131) % 30000 ))
        ok=1
        for p in $(seq "$base" $((base + n - 1))); do
            [[ $used == *" $p "* ]] && { ok=0; break; }
        done
        [ $ok -eq 1 ] && { echo "$base"; return 0; }
    done
    echo "interop: no free run of $n ports" >&2
    return 1
}

# A guest kernel that hit BUG() (iw_cm's cm_close_handler does when a
# connection siw never reported established is closed) is wedged: stop
# waiting for it.
guest_wedged() {  # share
    grep -qE 'kernel BUG at|Kernel panic|soft lockup' "$1/.console" 2>/dev/null
}
wedge_reason() {  # share
    grep -m1 -oE 'kernel BUG at [^ ]*|Kernel panic.*|soft lockup.*' "$1/.console" 2>/dev/null
}

wait_file() {  # file seconds guest_pid
    local n=$(( $2 * 10 ))
    while [ ! -e "$1" ] && [ $n -gt 0 ]; do
        kill -0 "$3" 2>/dev/null || return 2
        guest_wedged "$(dirname "$1")" && return 3
        sleep 0.1; n=$((n - 1))
    done
    [ -e "$1" ]
}

RESULTS=()
PASS=0 FAIL=0
report() {  # role crc size result secs detail
    local line
    line=$(printf '%-8s crc=%-3s size=%-6s %-4s %6.1fs  %s' "$1" "$2" "$3" "$4" "$5" "$6")
    echo "interop: $line"
    RESULTS+=("$line")
    if [ "$4" = PASS ]; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); fi
}

run_mode() {  # off|on
    local crc=$1 siw=${SIW_KO:-siw} ia=tcp0 conf share guest_pid i cases=() hostfwd=() guestfwd=()
    local base ncase role size port
    share=$WORK/crc-$crc
    rm -rf "$share"; mkdir -p "$share"
    conf=$share/dat.conf
    local opts=$LIB_OPTS
    if [ "$crc" = on ]; then
        siw=siw_crc ia=interop_crc
        opts="crc=on${opts:+ $opts}"
    fi
    : > "$conf"
    if [ -n "$opts" ] || [ "$ia" != tcp0 ]; then
        [ "$ia" != tcp0 ] || ia=interop
        echo "$ia u1.2 nonthreadsafe default builtin udapl.1.2 \"$opts\" \"\"" > "$conf"
    fi
    ncase=$(( ${#SIZES[@]} * $(echo $ROLES | wc -w) ))
    base=$(pick_ports "$ncase") || return 1
    i=0
    for role in $ROLES; do
        for size in "${SIZES[@]}"; do
            port=$((base + i))
            i=$((i + 1))
            cases+=("$role:$size:$port:$port")
            if [ "$role" = server ]; then guestfwd+=(--guestfwd "$port:$port"); else hostfwd+=(--hostfwd "$port"); fi
        done
    done
    local sanity=no
    [ "$SANITY" -eq 1 ] && sanity=yes
    echo "interop: crc=$crc: guest with $siw.ko, our IA $ia${opts:+ (\"$opts\")}, ports $base-$((base + ncase - 1))"
    local dp=""
    if [ -n "$PCAP" ]; then
        dumpcap -q -i lo -f "tcp portrange $base-$((base + ncase - 1))" -w "$PCAP/crc-$crc.pcapng" 2>/dev/null &
        dp=$!
        BG+=("$dp")
        sleep 0.5
    fi
    local gtimeout=$(( 60 + ncase * (CASE_TIMEOUT + 15) ))
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout "$gtimeout" --siw "$siw" \
        --env "CASES=${cases[*]}" --env "COUNT=$COUNT" --env "CASE_TIMEOUT=$CASE_TIMEOUT" \
        --env "SANITY=$sanity" "${hostfwd[@]}" "${guestfwd[@]}" "$HERE/interop-guest.sh" \
        > "$share/run.out" 2>&1 &
    guest_pid=$!
    BG+=("$guest_pid")

    # Case times start once the guest is up.
    if ! wait_file "$share/booted" 120 "$guest_pid"; then
        echo "interop: crc=$crc: the guest did not come up: $(tail -n1 "$share/run.out")"
        grep -v '^$' "$share/console.log" 2>/dev/null | tail -n 5 | sed 's/^/interop:   guest: /'
    fi
    i=0
    local c t0 secs rc detail res g
    for c in "${cases[@]}"; do
        i=$((i + 1))
        role=${c%%:*}; size=${c#*:}; size=${size%%:*}; port=${c##*:}
        t0=$(date +%s.%N)
        if ! kill -0 "$guest_pid" 2>/dev/null; then
            report "$role" "$crc" "$size" FAIL 0 "not run: the guest is gone ($(tail -n1 "$share/run.out" 2>/dev/null))"
            continue
        fi
        if guest_wedged "$share"; then
            report "$role" "$crc" "$size" FAIL 0 "not run: the guest kernel died earlier ($(wedge_reason "$share"))"
            continue
        fi
        if [ "$role" = server ]; then
            DAT_OVERRIDE=$conf LD_LIBRARY_PATH=$LIBDIR timeout $((CASE_TIMEOUT + 10)) \
                "$RPING_DAT" -s -D "$ia" -p "$port" -S "$size" -C "$COUNT" -V \
                -t "$CASE_TIMEOUT" -w 10 > "$share/ours.$i.out" 2>&1 &
            local sp=$!
            # listening?
            local n=50
            while [ $n -gt 0 ] && ! grep -q listening "$share/ours.$i.out" 2>/dev/null; do
                kill -0 "$sp" 2>/dev/null || break; sleep 0.1; n=$((n - 1))
            done
            touch "$share/go.$i"
            wait "$sp"; rc=$?
            wait_file "$share/done.$i" 20 "$guest_pid"
            g=$(cat "$share/done.$i" 2>/dev/null || echo "none -")
            secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
            # "none -" pads a short or empty answer (never an unbound $1/$2)
            set -- $g none -
            if [ "$rc" -eq 0 ] && [ "$1" = 0 ] && [ "$2" = "$COUNT" ]; then
                res=PASS detail="$(tail -n1 "$share/ours.$i.out" | sed 's/^rping_dat: server: //')"
            else
                res=FAIL
                detail="ours: $(grep -v listening "$share/ours.$i.out" | tail -n1 | sed 's/^rping_dat: //') | rping -c: exit $1, $2/$COUNT pings $(grep -v DISCONNECT "$share/case.$i.err" 2>/dev/null | head -n1)"
            fi
        else
            if ! wait_file "$share/ready.$i" 30 "$guest_pid"; then
                report "$role" "$crc" "$size" FAIL 0 "the rping server in the guest never got ready"
                continue
            fi
            DAT_OVERRIDE=$conf LD_LIBRARY_PATH=$LIBDIR timeout $((CASE_TIMEOUT + 10)) \
                "$RPING_DAT" -a 127.0.0.1 -D "$ia" -p "$port" -S "$size" -C "$COUNT" -V -r \
                -t "$CASE_TIMEOUT" -w 10 > "$share/ours.$i.out" 2>&1
            rc=$?
            touch "$share/hostdone.$i"
            wait_file "$share/done.$i" 20 "$guest_pid"
            secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
            if [ "$rc" -eq 0 ]; then
                res=PASS detail="$(tail -n1 "$share/ours.$i.out" | sed 's/^rping_dat: client: //')"
            else
                res=FAIL detail="ours: $(tail -n1 "$share/ours.$i.out" | sed 's/^rping_dat: //') | rping -s: $(grep -v DISCONNECT "$share/case.$i.err" 2>/dev/null | head -n1)"
            fi
        fi
        report "$role" "$crc" "$size" "$res" "$secs" "$detail"
    done
    if guest_wedged "$share"; then
        kill "$guest_pid" 2>/dev/null   # run.sh stops QEMU
    fi
    wait "$guest_pid"
    rc=$?
    [ -z "$dp" ] || { sleep 0.5; kill "$dp" 2>/dev/null; wait "$dp" 2>/dev/null; }
    if [ -f "$share/sanity.results" ]; then
        local dev sz r p s
        while read -r dev sz r p s; do
            report "sanity" "$crc" "$sz" "$r" "$s" "rping -s and rping -c in the guest over $dev ($p/$COUNT pings)"
        done < "$share/sanity.results"
    fi
    if [ "$rc" -ne 0 ]; then
        echo "interop: crc=$crc: the guest run ended with status $rc: $(tail -n1 "$share/run.out")"
        grep -E 'BUG|Oops|invalid opcode|RIP:' "$share/.console" "$share/console.log" 2>/dev/null | head -n 3 | sed 's/^[^:]*:/interop:   guest: /'
        FAIL=$((FAIL + 1))
    fi
    [ ! -s "$share/dmesg.txt" ] || sed 's/^/interop:   guest dmesg: /' "$share/dmesg.txt" | head -n 10
}

for crc in $CRCS; do
    run_mode "$crc"
done

# rxe: a guest of its own (rxe and siw on one eth0 would make rdma_cm's
# device choice for 10.0.2.15 ambiguous).
if [ "$SANITY" -eq 1 ]; then
    share=$WORK/rxe
    mkdir -p "$share"
    "$HERE/run.sh" -q --log "$share/console.log" --share "$share" --timeout 120 --siw none \
        --dev rxe0:rxe:eth0 --env "COUNT=$COUNT" --env "CASE_TIMEOUT=$CASE_TIMEOUT" \
        --env "SANITY=yes" --env "CASES=" "$HERE/interop-guest.sh" > "$share/run.out" 2>&1
    if [ -f "$share/sanity.results" ]; then
        while read -r dev sz r p s; do
            report "sanity" "-" "$sz" "$r" "$s" "rping -s and rping -c in the guest over $dev ($p/$COUNT pings)"
        done < "$share/sanity.results"
    else
        report "sanity" "-" "-" FAIL 0 "rxe guest: $(tail -n1 "$share/run.out")"
    fi
fi

echo
echo "interop: results (${LIB_OPTS:-default configuration}${LIB_OPTS:+ added to our IA}):"
for r in "${RESULTS[@]}"; do echo "  $r"; done
printf 'interop: %d passed, %d failed (%.0f s)\n' "$PASS" "$FAIL" "$(awk -v a="$(date +%s.%N)" -v b="$T_ALL" 'BEGIN { print a - b }')"
[ -z "$KEEP" ] || echo "interop: logs in $WORK"
[ "$FAIL" -eq 0 ]
