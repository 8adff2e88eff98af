#!/bin/sh
# A job for scripts/qemu-guest that runs a list of faultscale commands in one boot (each boot
# of a TCG guest costs a minute of emulation): FS_COMMANDS in $FS_IN/settings holds one command
# a line, "NAME ARGS...", ARGS faultscale's arguments as a shell would read them. Each runs as
# `faultscale ARGS --json $FS_OUT/NAME.json`, its stdout, stderr and exit code in
# $FS_OUT/NAME.out, .err and .rc, its time in seconds.txt; a failed command does not end the
# list. Where the runner attached a disk (--disk: virtio vda, ext4) it is mounted at /mnt/disk
# first, a disk file system for --tmpdir (the guest's root is its initramfs, in memory).
# Also written: cpus.txt, kernel.txt, cpu-flags.txt (the first CPU's), env.out (faultscale env), leftovers.txt (faultscale
# cgroups left under the root: none, when every command cleaned up).
. "$FS_IN/settings"
B=$FS_IN/faultscale
O=$FS_OUT
nproc > "$O/cpus.txt"
uname -r > "$O/kernel.txt"
# (Whether the kernel sees a hypervisor: then, without paravirt spinlocks, x86 spinlocks are
# test-and-set and their contention is never traced.)
grep -m1 '^flags' /proc/cpuinfo > "$O/cpu-flags.txt"
"$B" env > "$O/env.out" 2>&1
modprobe -a virtio_blk ext4 2>/dev/null
udevadm settle 2>/dev/null
tries=0
while [ ! -b /dev/vda ] && [ "$tries" -lt 20 ]; do sleep 0.5; tries=$((tries + 1)); done
# (Never a disk something has mounted already: the guest's is fresh and unmounted.)
if [ -b /dev/vda ] && ! grep -q '^/dev/vda' /proc/mounts; then
    mkdir -p /mnt/disk
    mount -t ext4 /dev/vda /mnt/disk || echo "command-list: /dev/vda could not be mounted at /mnt/disk" >&2
fi
# A here-document, not a pipe: the commands keep no stdin of the list's.
while read -r name args; do
    [ -n "$name" ] || continue
    start=$(date +%s)
    eval "set -- $args"
    "$B" "$@" --json "$O/$name.json" > "$O/$name.out" 2> "$O/$name.err" < /dev/null
    echo $? > "$O/$name.rc"
    echo "$name $(($(date +%s) - start)) s" >> "$O/seconds.txt"
done <<LIST
$FS_COMMANDS
LIST
ls /sys/fs/cgroup | grep -c faultscale > "$O/leftovers.txt" || true
exit 0
