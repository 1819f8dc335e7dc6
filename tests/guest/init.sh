#!/bin/sh
# /init of the test guest (busybox). Built into the initramfs by build.sh;
# everything run-specific comes from the 9p share that run.sh prepares,
# mounted at /host:
#   /host/guest.conf   GUEST_SIW (siw | siw_crc | none), GUEST_DEVICES
#                      ("name:type:netdev ..."), GUEST_ENV (file to source)
#   /host/files/...    host files, linked at the same absolute paths
#   /host/script.sh    what to run (sh), its output on the console
# and writes /host/exit-status (the script's exit status, or 125 with a
# reason in /host/init-error when the guest could not be set up).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
echo /sbin/modprobe > /proc/sys/kernel/modprobe

fail() {
    echo "guest-init: $*" > /dev/console
    [ -d /host/files ] && { echo "$*" > /host/init-error; echo 125 > /host/exit-status; }
    sync
    poweroff -f
    sleep 10
}

while read -r ko; do
    out=$(insmod "$ko" 2>&1) || case $out in
        *"File exists"*) ;;
        *) echo "guest-init: insmod $ko: $out" > /dev/console ;;
    esac
done < /etc/guest-modules

mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none host0 /host ||
    fail "cannot mount the 9p share host0"
[ -f /host/guest.conf ] || fail "no /host/guest.conf"
GUEST_SIW=siw
GUEST_DEVICES="siw0:siw:eth0"
. /host/guest.conf

ip link set lo up
ip link set eth0 up || fail "no eth0"
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2

if [ "$GUEST_SIW" != none ]; then
    for m in $(cat /lib/siw/depends); do modprobe "$m" || fail "modprobe $m (for siw)"; done
    case $GUEST_SIW in /*) ko=$GUEST_SIW ;; *) ko=/lib/siw/$GUEST_SIW.ko ;; esac
    out=$(insmod "$ko" 2>&1) || fail "insmod $ko: $out"
fi
for dev in $GUEST_DEVICES; do
    name=${dev%%:*}; rest=${dev#*:}; type=${rest%%:*}; netdev=${rest#*:}
    out=$(rdma link add "$name" type "$type" netdev "$netdev" 2>&1) ||
        fail "rdma link add $name type $type netdev $netdev: $out"
done

# Host files at their own absolute paths (a file the guest already has stays).
if [ -d /host/files ]; then
    (cd /host/files && find . ! -type d) | while read -r f; do
        p=${f#.}
        [ -e "$p" ] || [ -L "$p" ] && continue
        mkdir -p "$(dirname "$p")"
        ln -s "/host/files$p" "$p"
    done
fi

ulimit -l unlimited
ulimit -c 0
[ -n "${GUEST_ENV:-}" ] && [ -f "$GUEST_ENV" ] && . "$GUEST_ENV"
echo "guest-init: up in $(cut -d' ' -f1 /proc/uptime)s: siw=$GUEST_SIW devices: $(ls /sys/class/infiniband 2>/dev/null | xargs)" > /dev/console
cd /host
sh /host/script.sh < /dev/null > /dev/console 2>&1
echo $? > /host/exit-status
sync
poweroff -f
sleep 10
