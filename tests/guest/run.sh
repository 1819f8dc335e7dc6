#!/bin/bash
# Runs a shell script inside the kernel-RDMA test guest (QEMU TCG, built by
# build.sh) and exits with the script's exit status; the guest's console
# (the script's output included) goes to standard output.
#
#   tests/guest/run.sh [options] SCRIPT      run a script file (sh, busybox)
#   tests/guest/run.sh [options] -c 'CMDS'   run a command line
#
# Options:
#   --siw siw|siw_crc|none  siw module to load (default siw; siw_crc requires MPA CRC)
#   --siw FILE.ko           load this siw module instead (e.g. a patched build)
#   --dev NAME:TYPE:NETDEV  an RDMA device to create, e.g. siw0:siw:eth0,
#                           rxe0:rxe:eth0, siwlo:siw:lo (repeatable; default
#                           siw0:siw:eth0; --dev none for no device)
#   --file PATH             a host file or directory, available in the guest
#                           at the same absolute path, with every shared library
#                           `ldd` lists for the ELF files among them (repeatable)
#   --env NAME=VALUE        exported to the script (repeatable)
#   --hostfwd PORT          host 127.0.0.1:PORT reaches guest 10.0.2.15:PORT (repeatable)
#   --guestfwd GPORT:HPORT  guest 10.0.2.100:GPORT reaches host 127.0.0.1:HPORT (repeatable)
#   --share DIR             the 9p share (guest /host; default a temporary
#                           directory, removed afterwards); the script's working
#                           directory, for results and for handshakes with the host
#   --timeout SECONDS       hard limit for the whole run, boot included (default 300)
#   --log FILE              also write the console there
#   --mem MB, --smp N       guest size (default 1024, 2)
#   --append ARGS           more kernel command line (e.g. "clocksource=tsc
#                           tsc=reliable": TCG's default clocksource, the
#                           emulated HPET, makes every clock read a system
#                           call; benchmarks read the clock per operation)
#   -q                      no console on stdout (only --log and errors)
# The exit status is the script's; 124 when the run timed out, 125 when the
# guest could not be built, started or set up (one line on stderr says why).
#
# Only 127.0.0.1 is involved: the guest's network is QEMU's user network
# with restrict=on (no route anywhere) and the explicit forwards above.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "guest-run: $*" >&2; exit 125; }
usage() { sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' -e 's/^# \{0,1\}//' >&2; exit 125; }

APPEND="" SIW=siw DEVS=() FILES=() ENVS=() HOSTFWD=() GUESTFWD=() SHARE="" TIMEOUT=300 LOG="" MEM=1024 SMP=2 QUIET=0
SCRIPT="" CMD=""
while [ $# -gt 0 ]; do
    case $1 in
    --siw) SIW=$2; shift ;;
    --dev) DEVS+=("$2"); shift ;;
    --file) FILES+=("$2"); shift ;;
    --env) ENVS+=("$2"); shift ;;
    --hostfwd) HOSTFWD+=("$2"); shift ;;
    --guestfwd) GUESTFWD+=("$2"); shift ;;
    --share) SHARE=$2; shift ;;
    --timeout) TIMEOUT=$2; shift ;;
    --log) LOG=$2; shift ;;
    --mem) MEM=$2; shift ;;
    --smp) SMP=$2; shift ;;
    --append) APPEND="$APPEND $2"; shift ;;
    -q) QUIET=1 ;;
    -c) CMD=$2; shift ;;
    -h|--help) usage ;;
    -*) echo "guest-run: unknown option $1" >&2; usage ;;
    *) SCRIPT=$1; shift; break ;;
    esac
    shift
done
[ -n "$SCRIPT" ] || [ -n "$CMD" ] || usage
[ -z "$SCRIPT" ] || [ -f "$SCRIPT" ] || die "no such script: $SCRIPT"
case $SIW in siw|siw_crc|none) ;; *.ko) [ -f "$SIW" ] || die "--siw $SIW: no such file" ;; *) die "--siw: siw, siw_crc, none or a .ko file" ;; esac
[ ${#DEVS[@]} -gt 0 ] || DEVS=(siw0:siw:eth0)
[ "${DEVS[*]}" != none ] || DEVS=()
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (run ./setup.sh --deps)"
command -v socat >/dev/null || die "socat missing (run ./setup.sh --deps)"

GUEST=$("$HERE/build.sh" --print 2>/dev/null) || GUEST=$("$HERE/build.sh") || die "the guest could not be built"

KEEP_SHARE=1
if [ -z "$SHARE" ]; then
    SHARE=$(mktemp -d /tmp/udapl-guest.XXXXXX)
    KEEP_SHARE=0
fi
mkdir -p "$SHARE"
SHARE=$(cd "$SHARE" && pwd)
rm -rf "$SHARE/files" "$SHARE/exit-status" "$SHARE/init-error" "$SHARE/.fwd"
mkdir -p "$SHARE/files" "$SHARE/.fwd"
QPID=""
cleanup() {
    [ -z "$QPID" ] || kill "$QPID" 2>/dev/null || true
    [ "$KEEP_SHARE" -eq 1 ] || rm -rf "$SHARE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Host files and their libraries, at their absolute paths under files/.
add_file() {  # absolute path
    local p=$1
    [ -e "$SHARE/files$p" ] && return 0
    mkdir -p "$SHARE/files$(dirname "$p")"
    cp -L "$p" "$SHARE/files$p"
}
add_with_libs() {
    local p lib
    p=$(readlink -f "$1")
    [ -e "$p" ] || die "--file $1: no such file"
    add_file "$p"
    # keep the name it was given too (a symlink such as libdat.so.1)
    case $1 in /*) [ "$1" = "$p" ] || add_file "$1" ;; esac
    if head -c4 "$p" 2>/dev/null | grep -q 'ELF'; then
        for lib in $(ldd "$p" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
            add_file "$lib"
            # the library's resolved name too, if ldd's path is a symlink
            [ "$(readlink -f "$lib")" = "$lib" ] || add_file "$(readlink -f "$lib")"
        done
        if ldd "$p" 2>/dev/null | grep -q 'not found'; then
            die "--file $1: $(ldd "$p" | grep 'not found' | head -n1 | xargs)"
        fi
    fi
}
for f in "${FILES[@]}"; do
    f=$(cd "$(dirname "$f")" && echo "$PWD/$(basename "$f")")
    if [ -d "$f" ]; then
        while IFS= read -r g; do add_with_libs "$g"; done < <(find "$f" \( -type f -o -type l \) )
    else
        add_with_libs "$f"
    fi
done

if [[ $SIW == *.ko ]]; then cp "$SIW" "$SHARE/siw-custom.ko"; SIW=/host/siw-custom.ko; fi
if [ -n "$SCRIPT" ]; then cp "$SCRIPT" "$SHARE/script.sh"; else printf '%s\n' "$CMD" > "$SHARE/script.sh"; fi
{
    printf 'GUEST_SIW=%q\n' "$SIW"
    printf 'GUEST_DEVICES=%q\n' "${DEVS[*]:-}"
    printf 'GUEST_ENV=/host/env.sh\n'
} > "$SHARE/guest.conf"
: > "$SHARE/env.sh"
for e in "${ENVS[@]}"; do
    printf 'export %s=%q\n' "${e%%=*}" "${e#*=}" >> "$SHARE/env.sh"
done

# Network: QEMU's user network, restricted, with explicit forwards only.
NET="user,id=n0,restrict=on"
for p in "${HOSTFWD[@]}"; do
    [[ $p =~ ^[0-9]+$ ]] || die "--hostfwd $p: a port number"
    NET+=",hostfwd=tcp:127.0.0.1:$p-10.0.2.15:$p"
done
for gh in "${GUESTFWD[@]}"; do
    [[ $gh =~ ^[0-9]+:[0-9]+$ ]] || die "--guestfwd $gh: GPORT:HPORT"
    gp=${gh%%:*} hp=${gh#*:}
    # QEMU 7.2 splits a cmd: at blanks: a script per forward, no arguments.
    s=$SHARE/.fwd/to-$hp.sh
    printf '#!/bin/sh\nexec socat STDIO TCP:127.0.0.1:%s\n' "$hp" > "$s"
    chmod +x "$s"
    NET+=",guestfwd=tcp:10.0.2.100:$gp-cmd:$s"
done

CONSOLE=$SHARE/.console
: > "$CONSOLE"
# The console, without carriage returns, to the file and (unless -q) stdout.
if [ "$QUIET" -eq 0 ]; then
    exec 3> >(sed -u -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' | tee "$CONSOLE")
else
    exec 3> >(sed -u -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' > "$CONSOLE")
fi
start=$(date +%s.%N)
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$MEM" -smp "$SMP" \
    -nographic -no-reboot -nodefaults -serial stdio -monitor none \
    -kernel "$GUEST/vmlinuz" -initrd "$GUEST/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init${APPEND}" \
    -netdev "$NET" -device virtio-net-pci,netdev=n0,romfile= \
    -virtfs "local,path=$SHARE,mount_tag=host0,security_model=none" \
    < /dev/null >&3 2>&1 &
QPID=$!
exec 3>&-
rc=0
deadline=$(( $(date +%s) + TIMEOUT ))
while kill -0 "$QPID" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        kill "$QPID" 2>/dev/null || true
        wait "$QPID" 2>/dev/null || true
        QPID=""
        rc=124
        break
    fi
    sleep 0.2
done
if [ -n "$QPID" ]; then wait "$QPID" || rc=$?; QPID=""; fi
sleep 0.2   # let the console filter write the last lines
[ -z "$LOG" ] || cp "$CONSOLE" "$LOG"
secs=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
if [ "$rc" -eq 124 ]; then
    echo "guest-run: timed out after ${TIMEOUT}s" >&2
    exit 124
fi
if [ ! -f "$SHARE/exit-status" ]; then
    [ "$QUIET" -eq 0 ] || tail -n 20 "$CONSOLE" >&2
    die "the guest stopped without an exit status (QEMU exit $rc, after ${secs}s)"
fi
status=$(cat "$SHARE/exit-status")
if [ -f "$SHARE/init-error" ]; then
    die "guest setup failed: $(cat "$SHARE/init-error")"
fi
[ -n "${GUEST_RUN_VERBOSE:-}" ] && echo "guest-run: exit $status after ${secs}s" >&2
exit "$status"
