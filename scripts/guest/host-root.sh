#!/bin/busybox sh
# PID 1 of a `scripts/qemu-guest --host-root` guest, in its initramfs (busybox and the
# kernel's modules): loads the virtio, 9p and disk modules, mounts the machine's own / (9p tag
# "host") and puts the guest's own proc and devtmpfs (and a tmpfs at /sys) over it before anything there can
# be read, sets the --set variables (9p tag "in": settings) and becomes FS_JOB there, as
# PID 1, as user-mode-linux boots scripts/guest/init.sh on hostfs.
/bin/busybox mount -t proc proc /proc
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
halt() {
    echo "host-root init: $*" >&2
    echo o > /proc/sysrq-trigger
    sleep 10
}
mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev || halt "mounting sysfs and devtmpfs"
release=$(uname -r)
# (None listed: a kernel file given without --modules, its drivers built in.)
order=/lib/modules/$release/load-order
[ -f "$order" ] || order=/dev/null
while read -r module; do
    insmod "/lib/modules/$release/$module" || halt "insmod $module"
done < "$order"
mount -t 9p -o trans=virtio,version=9p2000.L,ro in /in || halt "mounting the 9p share in"
set -a
. /in/settings
set +a
umount /in
mount -t 9p -o trans=virtio,version=9p2000.L,cache=mmap,msize=262144 host /host || halt "mounting the 9p share host"
for fs in proc dev; do
    mount --move "/$fs" "/host/$fs" || halt "moving /$fs onto the host's root"
done
# sysfs cannot be mounted twice on one place, which init.sh does: an empty tmpfs hides the
# host's /sys until then.
umount /sys && mount -t tmpfs -o size=1m,mode=755 nosys /host/sys || halt "hiding the host's /sys"
[ -n "$FS_JOB" ] && [ -f "/host$FS_JOB" ] || halt "FS_JOB '$FS_JOB' is not a file on the host's root"
exec switch_root /host /bin/sh "$FS_JOB"
