#!/bin/sh
# Guest half of interop.sh (runs inside the test guest, busybox sh, in /host).
# Environment (from interop.sh through run.sh --env):
#   CASES       "role:size:hport:gport ..." role server = our program is the
#               server on the host (rping -c here), client = our program is
#               the client (rping -s here)
#   COUNT       pings per case
#   CASE_TIMEOUT seconds for one rping
#   SANITY      "yes": first rping server and client both in the guest over
#               every RDMA device
# Per case i it exchanges files with the host half: go.i (host: our server
# listens), ready.i (guest: rping server listens), hostdone.i (host: our
# client exited), done.i (guest: "rc pings", the rping's exit status and
# the pings it reported).
COUNT=${COUNT:-20}
CASE_TIMEOUT=${CASE_TIMEOUT:-30}

# The host polls for done.i, so it appears whole: written aside, then renamed.
put() {  # file line
    echo "$2" > "$1.tmp" && mv "$1.tmp" "$1"
}

wait_file() {  # file seconds
    n=$(( $2 * 10 ))
    while [ ! -e "$1" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
    [ -e "$1" ]
}

listening() {  # port: a kernel TCP listener (siw's) on it
    hex=$(printf '%04X' "$1")
    grep -q ":$hex 00000000:0000 0A" /proc/net/tcp
}

# rping client output: "rc pings" (rping exits 0 also when the server
# disconnects early, so the pings it printed with -v are counted).
run_rping_client() {  # tag addr port size
    timeout "$CASE_TIMEOUT" rping -c -v -V -a "$2" -p "$3" -C "$COUNT" -S "$4" \
        > "/tmp/$1.out" 2> "$1.err"
    rc=$?
    pings=$(grep -o 'ping data: rdma-ping-[0-9]*' "/tmp/$1.out" | wc -l)
    grep -v '^ping data' "/tmp/$1.out" | head -n 20 >> "$1.err"
    echo "$rc $pings"
}

touch booted
i=0
for c in $CASES; do
    i=$((i + 1))
    role=${c%%:*}; rest=${c#*:}; size=${rest%%:*}; rest=${rest#*:}; gport=${rest#*:}
    if [ "$role" = server ]; then
        # our server on the host; rping client here, through guestfwd 10.0.2.100
        if ! wait_file "go.$i" 60; then put "done.$i" "timeout 0"; continue; fi
        set -- $(run_rping_client "case.$i" 10.0.2.100 "$gport" "$size")
        put "done.$i" "$1 $2"
    else
        # rping server here; our client on the host through hostfwd
        timeout "$CASE_TIMEOUT" rping -s -V -a 10.0.2.15 -p "$gport" -S "$size" > "case.$i.err" 2>&1 &
        spid=$!
        n=100
        while [ $n -gt 0 ] && ! listening "$gport"; do sleep 0.1; n=$((n - 1)); done
        touch "ready.$i"
        wait_file "hostdone.$i" $((CASE_TIMEOUT + 30))
        # the rping server ends when our client disconnects; else stop it
        n=30
        while [ $n -gt 0 ] && kill -0 $spid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
        kill $spid 2>/dev/null
        wait $spid
        put "done.$i" "$? -"
    fi
done
if [ "${SANITY:-}" = yes ]; then
    for dev in $(ls /sys/class/infiniband); do
        for size in 23 65535; do
            t0=$(cut -d' ' -f1 /proc/uptime)
            timeout "$CASE_TIMEOUT" rping -s -V -a 10.0.2.15 -p 7174 -S $size > sanity.srv.err 2>&1 &
            spid=$!
            n=50
            while [ $n -gt 0 ] && ! listening 7174 && [ "${dev#rxe}" = "$dev" ]; do sleep 0.1; n=$((n-1)); done
            [ "${dev#rxe}" = "$dev" ] || sleep 1   # rxe listens without TCP
            set -- $(run_rping_client sanity 10.0.2.15 7174 $size)
            wait $spid
            srv=$?
            res=FAIL
            [ "$1" = 0 ] && [ "$2" = "$COUNT" ] && res=PASS
            secs=$(awk -v a="$(cut -d' ' -f1 /proc/uptime)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
            echo "sanity: rping server + client in the guest over $dev, size $size: $res ($2/$COUNT pings, client exit $1, server exit $srv, ${secs}s)"
            echo "$dev $size $res $2 $secs" >> sanity.results
        done
    done
fi

dmesg | grep -E 'siw[0-9]*:|siw: [^lm]|iw_cm|rdma_cm|BUG|Oops|invalid opcode|WARNING|Call Trace' | grep -v 'speed is unknown' | tail -n 40 > dmesg.txt
exit 0
