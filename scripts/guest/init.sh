#!/bin/sh
# PID 1 of a user-mode-linux guest that sees the host's files through hostfs.
# Safety first: proc, sysfs and the cgroup filesystems are mounted guest-side before anything
# reads them, and each mount is checked, so nothing in the guest can reach the host's
# /proc or cgroupfs through hostfs. Any failure powers the guest off with a reason file.
#
# Kernel command line passes: FS_MODE (v1|v2), FS_BIN (faultscale binary), FS_OUT (a host
# directory for results), FS_SCENARIO (the script to run).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

fail() {
    echo "guest init: $*" > "$FS_OUT/init-failed.txt"
    echo o > /proc/sysrq-trigger
    exit 1
}

mount -t proc proc /proc || fail "mounting proc"
[ "$(stat -f -c %T /proc)" = proc ] || fail "/proc is not the guest's procfs"
mount -t sysfs sysfs /sys || fail "mounting sysfs"
[ "$(stat -f -c %T /sys)" = sysfs ] || fail "/sys is not the guest's sysfs"
case "$FS_MODE" in
v2)
    mount -t cgroup2 none /sys/fs/cgroup || fail "mounting cgroup2"
    [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || fail "cgroup2 not mounted"
    ;;
v1)
    mount -t tmpfs cgroup /sys/fs/cgroup || fail "mounting the cgroup tmpfs"
    mkdir /sys/fs/cgroup/memory
    mount -t cgroup -o memory none /sys/fs/cgroup/memory || fail "mounting the v1 memory hierarchy"
    [ "$(stat -f -c %T /sys/fs/cgroup/memory)" = cgroupfs ] || fail "v1 memory not mounted"
    ;;
*) fail "FS_MODE must be v1 or v2, not '$FS_MODE'" ;;
esac
mount -t tmpfs tmpfs /run || fail "mounting /run"
# A /tmp of the guest's own: through hostfs it is the host's, where this kernel cannot see a
# host run's locks (a guest's `cleanup` must not judge the host's runs). What the guest needs
# from the host's /tmp (a checkout there, the results directory) is bound back at its path,
# one top-level entry each. (/dev is the guest's devtmpfs; /dev/shm gets a tmpfs there.)
mkdir /run/host-tmp && mount --bind /tmp /run/host-tmp || fail "binding the host's /tmp"
mount -t tmpfs tmpfs /tmp || fail "mounting /tmp"
for needed in "$FS_OUT" "$FS_BIN" "$FS_SCENARIO" $(echo "$FS_TESTS" | tr : " "); do
    case "$needed" in
    /tmp/?*)
        top=${needed#/tmp/}
        top=${top%%/*}
        [ -e "/tmp/$top" ] && continue
        if [ -d "/run/host-tmp/$top" ]; then mkdir "/tmp/$top"; else : > "/tmp/$top"; fi
        mount --bind "/run/host-tmp/$top" "/tmp/$top" || {
            echo "guest init: binding /tmp/$top back" > "/run/host-tmp/$top/init-failed.txt"
            echo o > /proc/sysrq-trigger
            exit 1
        }
        ;;
    esac
done
[ "$(stat -f -c %T /tmp)" = tmpfs ] || fail "/tmp is not the guest's"
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm || fail "mounting /dev/shm"

sh "$FS_SCENARIO" > "$FS_OUT/scenario.log" 2>&1
echo "$?" > "$FS_OUT/scenario.rc"
sync
echo o > /proc/sysrq-trigger
sleep 10
