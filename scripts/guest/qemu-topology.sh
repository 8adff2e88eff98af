#!/bin/sh
# The job of the QEMU topology guest (tests/qemu.rs): 8 vCPUs as 2 packages x 2 cores x 2 SMT
# threads on 2 NUMA nodes, which no sysfs fixture can stand in for. It records the guest's own
# sysfs topology beside what faultscale reports (env, --cpu-order cores-first's choice of CPUs)
# and runs a task sweep and siblings:4 at the true root. Outputs go to $FS_OUT.
B=$FS_IN/faultscale
O=$FS_OUT

run() { # name, args...
    name=$1; shift
    start=$(date +%s.%N)
    "$B" "$@" > "$O/$name.out" 2> "$O/$name.err"
    echo $? > "$O/$name.rc"
    echo "$name $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" >> "$O/seconds.txt"
}

for cpu in /sys/devices/system/cpu/cpu[0-9]*; do
    echo "${cpu##*/cpu} $(cat "$cpu/topology/physical_package_id") $(cat "$cpu/topology/core_id") $(cat "$cpu/topology/thread_siblings_list")"
done | sort -n > "$O/sysfs_topology.txt"
cat /sys/devices/system/node/online > "$O/sysfs_nodes.txt"
run env env
run cores-first --cgroup child --tasks 4 --cpu-order cores-first --duration 0.4 --per-cpu --csv "$O/cores-first.csv"
run sweep --cgroup child --tasks 1..8 --duration 0.4 --csv "$O/sweep.csv"
run siblings --cgroup child,siblings:4 --tasks 8 --duration 0.4 --csv "$O/siblings.csv"
find /sys/fs/cgroup -name 'faultscale-*' > "$O/leftover_cgroups.txt"
exit 0
