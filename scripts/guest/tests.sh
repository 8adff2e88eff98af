#!/bin/sh
# Runs the host's integration test executables (FS_TESTS, colon-separated) inside the guest,
# one at a time, each test on its own thread in turn, as a user's machine would run them:
# - v2: in a systemd login session's shape, /user.slice/session.scope, beside another process,
#   with /user.slice giving memory to its children;
# - v1: in a cgroup below the root, as a CI job sits.
# Each executable's output and exit code go to $FS_OUT/test-NAME.{log,rc}.
O="$FS_OUT"
cg=/sys/fs/cgroup
# Temporary files in guest memory, not on the host's /tmp through hostfs.
mkdir -p /run/tmp
TMPDIR=/run/tmp
export TMPDIR
# A /dev of the guest's own (hostfs shows the host's /dev, which has no pts directory, and the
# guest must never write there): the usual nodes, and pseudo-terminals for script(1).
mount -t tmpfs -o mode=755 guestdev /dev
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<NODE
$node
NODE
    mknod -m 666 /dev/$name c $major $minor
done
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
# The ext4 disk guest-run attaches (user-mode-linux's ubd1, QEMU's virtio vda): where tests
# find a disk-backed directory.
if [ -r /sys/block/vda/dev ]; then
    IFS=: read -r major minor < /sys/block/vda/dev
    mknod /dev/guestdisk b "$major" "$minor"
else
    mknod /dev/guestdisk b 98 16
fi
if mkdir -p /run/disk && mount -t ext4 /dev/guestdisk /run/disk; then
    FAULTSCALE_DISK_TMPDIR=/run/disk
    export FAULTSCALE_DISK_TMPDIR
fi
if [ "$FS_MODE" = v2 ]; then
    echo +memory > $cg/cgroup.subtree_control
    mkdir -p $cg/user.slice/session.scope
    echo +memory > $cg/user.slice/cgroup.subtree_control
    sleep 100000 &
    other=$!
    echo $other > $cg/user.slice/session.scope/cgroup.procs
    echo $$ > $cg/user.slice/session.scope/cgroup.procs
else
    mkdir -p $cg/memory/ci-job
    echo $$ > $cg/memory/ci-job/cgroup.procs
fi
echo "tests run in: $(cat /proc/self/cgroup)" > "$O/tests-cgroup.txt"
# FS_TEST_SKIPS (colon-separated test names): tests the host's run covers for every layout.
set --
IFS=:
for skip in $FS_TEST_SKIPS; do
    [ "$skip" = none ] && continue
    set -- "$@" --skip "$skip"
done
for t in $FS_TESTS; do
    name=$(basename "$t")
    start=$(date +%s)
    "$t" --test-threads=1 --nocapture --exact "$@" > "$O/test-$name.log" 2>&1
    echo $? > "$O/test-$name.rc"
    echo "$name $(( $(date +%s) - start )) s" >> "$O/tests-seconds.txt"
done
[ -n "$other" ] && kill $other
find $cg -name 'faultscale-*' > "$O/leftovers.txt"
