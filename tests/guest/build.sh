#!/bin/bash
# Builds the kernel-RDMA test guest from Debian 12 packages into a cache
# that survives between runs; a second run with the same inputs is a no-op.
#
#   tests/guest/build.sh            build (or reuse) the guest; prints its directory
#   tests/guest/build.sh --print    only print the directory of the current guest
#
# Output, in ${UDAPL_GUEST_CACHE:-$HOME/.cache/udapl-guest}/guest-<key>/ (and the
# symlink `current` beside it): vmlinuz, initrd.gz (busybox /init, the kernel
# modules for rxe, rdma_cm, 9p and virtio, siw built out of tree twice — siw.ko
# and siw_crc.ko (mpa_crc_required = true) — and rdma-core 44's libraries,
# providers and tools: rping, ucmatose, ibv_*, rdma; perftest's ib_send_lat,
# ib_write_lat, ib_read_lat and the _bw ones), and info (what it was
# built from). The key hashes every input: the .deb file names (so versions),
# the linux-source and headers versions, the host libc, and this directory's
# scripts.
#
# Nothing is installed on the host: packages are fetched with `apt-get
# download` and unpacked with `dpkg-deb -x`. Needs (./setup.sh --deps):
# linux-headers-<KREL> (kbuild for siw), linux-source-<ver> (or apt access to
# download it), busybox-static's deb is downloaded, cpio, gzip, kmod (depmod,
# modprobe), binutils.
#
# Environment:
#   UDAPL_GUEST_CACHE   cache directory (default ~/.cache/udapl-guest)
#   GUEST_KREL          kernel release (default: the one linux-headers-amd64
#                       depends on, if its headers are installed; else the
#                       newest installed linux-headers-*-amd64)
#   GUEST_STEP_TIMEOUT  seconds any one step may take (default 900)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${UDAPL_GUEST_CACHE:-$HOME/.cache/udapl-guest}
STEP_TIMEOUT=${GUEST_STEP_TIMEOUT:-900}
APT_OPTS=(-o APT::Sandbox::User=root -q)

log() { echo "guest-build: $*" >&2; }
die() { echo "guest-build: error: $*" >&2; exit 1; }
# Every step that can take long runs under timeout(1).
bounded() {
    local what=$1; shift
    local rc=0
    timeout "$STEP_TIMEOUT" "$@" || rc=$?
    [ "$rc" -eq 124 ] && die "$what: timed out after ${STEP_TIMEOUT}s"
    [ "$rc" -eq 0 ] || die "$what: failed (exit $rc)"
}

if [ "${1:-}" = "--print" ]; then
    [ -f "$CACHE/current/ok" ] || die "no guest built yet in $CACHE (run tests/guest/build.sh)"
    readlink -f "$CACHE/current"
    exit 0
fi

for tool in apt-get dpkg-deb dpkg-query cpio gzip depmod modprobe modinfo strip ldd make timeout sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "missing tool '$tool' (run ./setup.sh --deps)"
done
[ "$(id -u)" -eq 0 ] || die "must run as root (the initramfs needs a /dev/console node)"

# ---- kernel release and its headers -----------------------------------------
if [ -n "${GUEST_KREL:-}" ]; then
    KREL=$GUEST_KREL
else
    KREL=$(apt-cache depends linux-headers-amd64 2>/dev/null |
        sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n1)
    if [ -z "$KREL" ] || [ ! -f "/usr/src/linux-headers-$KREL/Makefile" ]; then
        KREL=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sed 's|.*/linux-headers-||' |
            sort -V | tail -n1)
    fi
fi
[ -n "$KREL" ] || die "no linux-headers-*-amd64 installed (run ./setup.sh --deps)"
HDR=/usr/src/linux-headers-$KREL
[ -f "$HDR/Makefile" ] || die "linux-headers-$KREL is not installed (run ./setup.sh --deps)"
HDR_VER=$(dpkg-query -W -f '${Version}' "linux-headers-$KREL" 2>/dev/null) ||
    die "dpkg does not know linux-headers-$KREL"
KSER=$(echo "$KREL" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')   # 6.1
[ -n "$KSER" ] || die "cannot read the kernel series from '$KREL'"

# ---- packages ------------------------------------------------------------------
DEBS=(linux-image-"$KREL" libibverbs1 librdmacm1 ibverbs-providers rdmacm-utils ibverbs-utils
      perftest libibumad3 libpci3 iproute2 busybox-static libnl-3-200 libnl-route-3-200 libmnl0)
DEBDIR=$CACHE/debs
mkdir -p "$DEBDIR"
uris=$(timeout 120 apt-get "${APT_OPTS[@]}" download --print-uris "${DEBS[@]}" 2>&1) ||
    die "apt-get cannot locate the guest packages (run apt-get update): $(echo "$uris" | grep -m1 -E '^E:' || echo "$uris" | tail -n1)"
FILES=$(echo "$uris" | awk '/^'"'"'/ {print $2}' | sort)
[ "$(echo "$FILES" | wc -l)" -eq ${#DEBS[@]} ] || die "apt-get download --print-uris listed $(echo "$FILES" | wc -l) files for ${#DEBS[@]} packages"
missing=()
for f in $FILES; do [ -s "$DEBDIR/$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -gt 0 ]; then
    log "downloading ${#missing[@]} package(s) into $DEBDIR"
    pkgs=()
    for f in "${missing[@]}"; do
        name=${f%%_*}; ver=${f#*_}; ver=${ver%_*}; ver=${ver//%3a/:}
        pkgs+=("$name=$ver")
    done
    (cd "$DEBDIR" && bounded "apt-get download" apt-get "${APT_OPTS[@]}" download "${pkgs[@]}" >/dev/null)
    for f in "${missing[@]}"; do [ -s "$DEBDIR/$f" ] || die "apt-get download did not produce $f"; done
fi

# ---- siw source: linux-source-<series>, only drivers/infiniband/sw/siw -----------
SRC_TAR=/usr/src/linux-source-$KSER.tar.xz
if [ -f "$SRC_TAR" ]; then
    SRC_VER=$(dpkg-query -W -f '${Version}' "linux-source-$KSER" 2>/dev/null || echo unknown)
else
    src_uri=$(timeout 120 apt-get "${APT_OPTS[@]}" download --print-uris "linux-source-$KSER" 2>/dev/null |
        awk '/^'"'"'/ {print $2}') || true
    [ -n "$src_uri" ] || die "linux-source-$KSER is neither installed nor downloadable (run ./setup.sh --deps)"
    SRC_VER=${src_uri#*_}; SRC_VER=${SRC_VER%_*}
    if [ ! -s "$DEBDIR/$src_uri" ]; then
        log "downloading linux-source-$KSER"
        (cd "$DEBDIR" && bounded "apt-get download linux-source-$KSER" apt-get "${APT_OPTS[@]}" download "linux-source-$KSER" >/dev/null)
    fi
    SRC_TAR=
fi
[ "$SRC_VER" = "$HDR_VER" ] || log "note: linux-source-$KSER $SRC_VER, headers $HDR_VER (siw builds from the source's version)"

SIWSRC=$CACHE/src/siw-$SRC_VER
if [ ! -f "$SIWSRC/.ok" ]; then
    log "extracting drivers/infiniband/sw/siw from linux-source-$KSER $SRC_VER"
    rm -rf "$SIWSRC" "$SIWSRC.tmp"
    mkdir -p "$SIWSRC.tmp"
    if [ -n "$SRC_TAR" ]; then
        bounded "extract siw source" tar -xJf "$SRC_TAR" -C "$SIWSRC.tmp" --strip-components=5 \
            "linux-source-$KSER/drivers/infiniband/sw/siw"
    else
        bounded "extract siw source" bash -c "dpkg-deb --fsys-tarfile '$DEBDIR/$src_uri' |
            tar -xO ./usr/src/linux-source-$KSER.tar.xz |
            tar -xJ -C '$SIWSRC.tmp' --strip-components=5 linux-source-$KSER/drivers/infiniband/sw/siw"
    fi
    [ -f "$SIWSRC.tmp/siw_main.c" ] || die "siw source not found in linux-source-$KSER"
    touch "$SIWSRC.tmp/.ok"
    mv "$SIWSRC.tmp" "$SIWSRC"
fi

# ---- the cache key -----------------------------------------------------------------
LIBC_VER=$(dpkg-query -W -f '${Version}' libc6 2>/dev/null || echo unknown)
KEY=$( {
    echo "krel $KREL headers $HDR_VER source $SRC_VER libc $LIBC_VER"
    echo "$FILES"
    cat "$HERE/build.sh" "$HERE/init.sh"
} | sha256sum | cut -c1-16)
OUT=$CACHE/guest-$KEY
if [ -f "$OUT/ok" ]; then
    ln -sfn "guest-$KEY" "$CACHE/current"
    log "up to date: $OUT"
    echo "$OUT"
    exit 0
fi

log "building guest $KEY (kernel $KREL) in $OUT"
T0=$(date +%s)
TMP=$OUT.tmp
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
STAGE=$TMP/stage KIMG=$TMP/kimg ROOT=$TMP/root
mkdir -p "$STAGE" "$KIMG" "$ROOT"

for f in $FILES; do
    case $f in
    linux-image-*) bounded "unpack $f" dpkg-deb -x "$DEBDIR/$f" "$KIMG" ;;
    *) bounded "unpack $f" dpkg-deb -x "$DEBDIR/$f" "$STAGE" ;;
    esac
done
[ -f "$KIMG/boot/vmlinuz-$KREL" ] || die "linux-image-$KREL has no boot/vmlinuz-$KREL"

# ---- root skeleton (merged /usr, as Debian 12) ----------------------------------------
mkdir -p "$ROOT"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,dev,proc,sys,tmp,run,host,root,var/tmp}
ln -s usr/bin "$ROOT/bin"
ln -s usr/sbin "$ROOT/sbin"
ln -s usr/lib "$ROOT/lib"
ln -s usr/lib64 "$ROOT/lib64"
chmod 1777 "$ROOT/tmp" "$ROOT/var/tmp"
mknod "$ROOT/dev/console" c 5 1
mknod "$ROOT/dev/null" c 1 3

# ---- kernel modules: the closure of what the guest loads, in load order -----------------
bounded "depmod (full kernel)" depmod -b "$KIMG" "$KREL"
# Order matters: crc32 algorithms before rxe and libcrc32c, virtio before 9p.
WANT=(configfs virtio_pci virtio_net 9pnet_virtio 9p crc32_generic crc32_pclmul
      crc32c_generic crc32c_intel libcrc32c ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm rdma_rxe)
MODDIR=lib/modules/$KREL
: > "$TMP/modules.order"
for m in "${WANT[@]}"; do
    deps=$(modprobe -d "$KIMG" -S "$KREL" --show-depends "$m" 2>&1) ||
        die "module $m not found in linux-image-$KREL: $deps"
    echo "$deps" | awk '$1 == "insmod" {print $2}' >> "$TMP/modules.order"
done
: > "$ROOT/etc/guest-modules"
awk '!seen[$0]++' "$TMP/modules.order" | while read -r ko; do
    rel=${ko#"$KIMG"/}
    mkdir -p "$ROOT/$(dirname "$rel")"
    cp "$ko" "$ROOT/$rel"
    echo "/$rel" >> "$ROOT/etc/guest-modules"
done
cp "$KIMG/$MODDIR"/modules.order "$KIMG/$MODDIR"/modules.builtin "$KIMG/$MODDIR"/modules.builtin.modinfo "$ROOT/$MODDIR/" 2>/dev/null || true
bounded "depmod (guest)" depmod -b "$ROOT" "$KREL"
cp "$KIMG/boot/vmlinuz-$KREL" "$TMP/vmlinuz"

# ---- siw, out of tree, twice ------------------------------------------------------------
build_siw() {  # name crc_required(true|false)
    local dir=$TMP/siw-$1
    cp -r "$SIWSRC" "$dir"
    if [ "$2" = true ]; then
        grep -q '^const bool mpa_crc_required;' "$dir/siw_main.c" ||
            die "siw_main.c: no 'const bool mpa_crc_required;' line to change"
        sed -i 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' "$dir/siw_main.c"
    fi
    log "building $1.ko (mpa_crc_required = $2)"
    bounded "kbuild $1" make -s -C "$HDR" M="$dir" CONFIG_RDMA_SIW=m -j"$(nproc)" modules \
        > "$TMP/kbuild-$1.log" 2>&1 || { tail -n 20 "$TMP/kbuild-$1.log" >&2; exit 1; }
    [ -f "$dir/siw.ko" ] || { tail -n 20 "$TMP/kbuild-$1.log" >&2; die "kbuild produced no siw.ko"; }
    strip --strip-debug -o "$ROOT/lib/siw/$1.ko" "$dir/siw.ko"
}
mkdir -p "$ROOT/lib/siw"
build_siw siw false
build_siw siw_crc true
# siw's module dependencies, loaded before it by /init (ib_core, libcrc32c).
modinfo -F depends "$ROOT/lib/siw/siw.ko" | tr ',' '\n' > "$ROOT/lib/siw/depends"

# ---- user space -----------------------------------------------------------------------
cp "$STAGE/bin/busybox" "$ROOT/usr/bin/busybox"
for app in $("$ROOT/usr/bin/busybox" --list-full); do
    [ -e "$ROOT/$app" ] || [ -L "$ROOT/$app" ] || ln -s /usr/bin/busybox "$ROOT/$app"
done
LIBD=usr/lib/x86_64-linux-gnu
for f in "$STAGE"/usr/bin/rping "$STAGE"/usr/bin/ucmatose "$STAGE"/usr/bin/udaddy "$STAGE"/usr/bin/rdma_server \
         "$STAGE"/usr/bin/rdma_client "$STAGE"/usr/bin/rstream "$STAGE"/usr/bin/ibv_* \
         "$STAGE"/usr/bin/ib_{send,write,read}_{lat,bw}; do
    cp "$f" "$ROOT/usr/bin/"
done
rm -f "$ROOT/usr/bin/rdma"   # iproute2's rdma, not a busybox applet
cp "$STAGE/usr/bin/rdma" "$ROOT/usr/bin/rdma"
mkdir -p "$ROOT/$LIBD/libibverbs" "$ROOT/etc/libibverbs.d"
cp -a "$STAGE/$LIBD"/libibverbs.so.1* "$STAGE/$LIBD"/librdmacm.so.1* "$ROOT/$LIBD/"
cp "$STAGE/$LIBD"/libibverbs/librxe-rdmav*.so "$STAGE/$LIBD"/libibverbs/libsiw-rdmav*.so "$ROOT/$LIBD/libibverbs/"
cp "$STAGE/etc/libibverbs.d/rxe.driver" "$STAGE/etc/libibverbs.d/siw.driver" "$ROOT/etc/libibverbs.d/"

# Shared libraries of every ELF file in the guest: the unpacked packages'
# copy if they have one, else the host's (Debian 12's libc and the like).
STAGE_LP=$STAGE/$LIBD:$STAGE/lib/x86_64-linux-gnu
copy_lib() {  # absolute path on the host (or in the stage)
    local src=$1 rel dst
    case $src in
    "$STAGE"/*) rel=${src#"$STAGE"/} ;;
    *) rel=${src#/} ;;
    esac
    dst=$ROOT/$rel
    [ -e "$dst" ] && return 0
    mkdir -p "$(dirname "$dst")"
    cp -L "$src" "$dst"
}
elves=$(find "$ROOT/usr/bin" "$ROOT/$LIBD" -type f \( -perm -u+x -o -name '*.so*' \) ! -name busybox)
for e in $elves; do
    out=$(LD_LIBRARY_PATH=$STAGE_LP ldd "$e" 2>&1) || die "ldd $e: $out"
    if echo "$out" | grep -q 'not found'; then
        die "$(basename "$e") needs a library no guest package has: $(echo "$out" | grep 'not found' | head -n1 | xargs); add its package to DEBS in build.sh"
    fi
    for lib in $(echo "$out" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
        copy_lib "$lib"
    done
done
[ -e "$ROOT/lib64/ld-linux-x86-64.so.2" ] || copy_lib /lib64/ld-linux-x86-64.so.2
# glibc dlopens libgcc_s for thread cancellation and pthread_exit (rping's
# threads end that way).
gcc_s=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ {print $NF; exit}')
[ -n "$gcc_s" ] || die "no libgcc_s.so.1 on the host (package libgcc-s1)"
copy_lib "$gcc_s"

printf 'root:x:0:0:root:/root:/bin/sh\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\n' > "$ROOT/etc/group"
printf '127.0.0.1 localhost\n10.0.2.15 guest\n10.0.2.100 host\n' > "$ROOT/etc/hosts"
echo "$KREL" > "$ROOT/etc/guest-krel"
install -m 0755 "$HERE/init.sh" "$ROOT/init"

bounded "cpio" bash -c "cd '$ROOT' && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1 > '$TMP/initrd.gz'"

{
    echo "key $KEY"
    echo "kernel $KREL (headers $HDR_VER, siw from linux-source-$KSER $SRC_VER)"
    echo "host libc6 $LIBC_VER"
    echo "packages:"
    echo "$FILES" | sed 's/^/  /'
    echo "initrd $(du -h "$TMP/initrd.gz" | cut -f1), built in $(( $(date +%s) - T0 ))s"
} > "$TMP/info"
rm -rf "$STAGE" "$KIMG" "$ROOT" "$TMP"/siw-*
touch "$TMP/ok"
rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
ln -sfn "guest-$KEY" "$CACHE/current"
# Older builds are of no further use.
for old in "$CACHE"/guest-*; do
    [ "$old" = "$OUT" ] || [ ! -f "$old/ok" ] || rm -rf "$old"
done
log "built $OUT in $(( $(date +%s) - T0 ))s ($(du -h "$OUT/initrd.gz" | cut -f1) initrd)"
echo "$OUT"
