# Shell helpers of the host halves of the guest tests (bash; sourced by
# verbs.sh and verbs-perf.sh): free ports on 127.0.0.1, files the guest
# writes into its share, a guest kernel that died, elapsed times.

# Seconds since a `date +%s.%N` stamp, one decimal.
secs_since() {  # stamp
    awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'
}

# Free TCP ports on 127.0.0.1 (a random base, checked with ss).
used_ports() { ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u; }
pick_ports() {  # count -> the first of a run of free ports
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
    echo "no free run of $n ports on 127.0.0.1" >&2
    return 1
}

# A guest kernel that hit BUG(), panicked or locked up is wedged: stop
# waiting for it. The share's .console is what run.sh writes.
guest_wedged() {  # share
    grep -qE 'kernel BUG at|Kernel panic|soft lockup' "$1/.console" 2>/dev/null
}
wedge_reason() {  # share
    grep -m1 -oE 'kernel BUG at [^ ]*|Kernel panic.*|soft lockup.*' "$1/.console" 2>/dev/null
}

# Waits for a file the guest writes into its share; fails early when the
# guest (run.sh's process) is gone (2) or its kernel died (3).
wait_guest_file() {  # file seconds guest_pid
    local n=$(( $2 * 10 ))
    while [ ! -e "$1" ] && [ $n -gt 0 ]; do
        kill -0 "$3" 2>/dev/null || return 2
        guest_wedged "$(dirname "$1")" && return 3
        sleep 0.1; n=$((n - 1))
    done
    [ -e "$1" ]
}
