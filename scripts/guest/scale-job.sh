#!/bin/sh
# The job of scripts/bench-scale-guest: in a QEMU guest of many vCPUs (systemd, pure v2), the
# LKP job's placements on every CPU, once at the default open-file limit and once under a soft
# limit too low for the crews (raised to the hard one by faultscale) and once under a hard limit
# too low (refused before anything is made). Behaviour, not speed: TCG runs a twentieth of
# native. Everything goes to $FS_OUT.
B=$FS_IN/faultscale
O=$FS_OUT
nproc > $O/cpus.txt
run() { # name, then the shell prefix (a ulimit) for faultscale
    name=$1; shift
    start=$(date +%s)
    # --base new: on systemd's v2 faultscale runs itself again in a delegated scope of its own
    # (systemd-run), which keeps the limits set here.
    sh -c "$* ; exec $B --base new --cgroup child,nested:4,control --duration 5 --slices 5 --json $O/$name.json" > $O/$name.out 2> $O/$name.err
    echo $? > $O/$name.rc
    echo "$name $(( $(date +%s) - start )) s" >> $O/seconds.txt
}
run default true
run soft-128 "ulimit -Sn 128"
run hard-128 "ulimit -n 128"
ls /sys/fs/cgroup | grep -c faultscale > $O/leftovers.txt || true
