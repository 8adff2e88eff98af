#!/bin/sh
# The job of the QEMU systemd guests (scripts/qemu-guest, tests/qemu.rs): faultscale run as a
# user runs it, from a real login session (su -l: pam_systemd registers session-cN.scope with
# logind), on the layout the kernel command line chose (pure v2, or v1 hybrid with
# systemd.unified_cgroup_hierarchy=0). Then the checks that a run leaves nothing: no faultscale
# cgroup, no run-*.scope, no failed unit. With FS_PROFILE=1 in $FS_IN/settings, --profile at
# the true root too; with FS_TOPOLOGY=1 (a guest of 2 packages x 2 cores x 2 threads on 2 NUMA
# nodes, which no sysfs fixture can stand in for) the guest's own sysfs topology beside what
# faultscale reports, cores-first's choice of CPUs, a task sweep and siblings:4 at the true
# root: one boot for all, since each boot costs half a minute of emulation. Every output and
# exit code goes to $FS_OUT for the test to assert on.
B=$FS_IN/faultscale
O=$FS_OUT
[ -f "$FS_IN/settings" ] && . "$FS_IN/settings"

# Two FIFOs the job holds open for reading and writing, so a terminal's input never ends:
# idle (nothing typed; script(1) at end of input would hang) and keys (what is typed).
mkfifo /run/idle /run/keys
exec 3<> /run/idle 4<> /run/keys

# A step's seconds, from its start to now, to seconds.txt (sourced by every session).
cat > /run/seconds.sh <<SECONDS
seconds() { # step name, its start
    echo "\$1 \$(awk -v a="\$2" -v b="\$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" >> $O/seconds.txt
}
SECONDS

step() { # name, command line: one step of the next login session; its output, errors and
    # exit code go to $O/NAME.out, .err and .rc.
    printf 'start=$(date +%%s.%%N)\n{ %s\n} > %s/%s.out 2> %s/%s.err\necho $? > %s/%s.rc\nseconds %s "$start"\n' \
        "$2" "$O" "$1" "$O" "$1" "$O" "$1" "$1" >> /run/steps.sh
}

session() { # name: the steps so far, typed at a terminal (a pty from script(1)) of a login
    # shell of its own (su -l: pam_systemd registers a tty session with logind), reading KEYS
    # (default idle). One login for several steps: a login costs 3-4 s of emulation. The
    # wrapper's handler (not an ignore, which children would inherit) keeps it alive past a
    # Ctrl-C to record the exit code.
    { printf 'trap : INT\n. /run/seconds.sh\n'; cat /run/steps.sh; } > "/run/session-$1.sh"
    rm /run/steps.sh
    script -qec "su -l root -c 'sh /run/session-$1.sh'" /dev/null < "${KEYS:-/run/idle}" > "$O/$1.terminal"
}

step where 'cat /proc/self/cgroup; loginctl show-session --property=Id --property=Class --property=Type "$XDG_SESSION_ID"; '"$B env > $O/env.out"
# The README's main command, shortened (--duration 5 there).
step readme "$B --base new --cgroup child,nested:4 --duration 0.6 --csv $O/readme.csv"
# The mission's command, shortened (--duration 60): the default base is the true root.
step mission "$B --cgroup child --duration 1 --csv $O/mission.csv"
# A login session's scope holds the shell: --base self must refuse in one line (v2's rule).
step self "$B --base self --duration 0.3"
session login
# Ctrl-C typed on the session's terminal in the middle of a --base new run (a pty from
# script(1): the line discipline sends SIGINT to the foreground process group).
# Typed once the run has named itself (faultscale-run: its handlers are in place by then),
# then every 3 s until the session ends: under emulation on a busy host the login and
# systemd-run's scope take longer than any one guess, and a Ctrl-C that reaches systemd-run
# while it asks for the scope ends it (exit 130, nothing said, nothing made: seen here 4.8 s
# into the step); one typed during faultscale's cleanup changes nothing (said in the README).
# Each pgrep takes 1-3 s in the emulated 8-vCPU guest, and there it never listed the workers
# (faultscale-wkr), though they ran: the harness is what it finds.
(
    for _ in $(seq 300); do pgrep -x faultscale-run >/dev/null && break; sleep 0.5; done
    sleep 2
    while [ ! -f "$O/ctrl-c.rc" ]; do printf '\003' > /run/keys; sleep 3; done
) &
step ctrl-c "$B --base new --cgroup child,nested:2 --duration 20"
KEYS=/run/keys session ctrl-c
if [ "${FS_PROFILE:-0}" = 1 ]; then
    step profile "$B --base root --cgroup child --tasks 2 --duration 2 --slices 2 --profile --json $O/profile.json"
    session profile
fi

if [ "${FS_TOPOLOGY:-0}" = 1 ]; then
    for cpu in /sys/devices/system/cpu/cpu[0-9]*; do
        echo "${cpu##*/cpu} $(cat "$cpu/topology/physical_package_id") $(cat "$cpu/topology/core_id") $(cat "$cpu/topology/thread_siblings_list")"
    done | sort -n > "$O/sysfs_topology.txt"
    cat /sys/devices/system/node/online > "$O/sysfs_nodes.txt"
    # Fixed work (4 iterations a worker, one run a placement), not fixed time: 8 vCPUs
    # emulated on a busy 2-CPU host can leave a worker without one whole iteration in a 0.4 s
    # slice (CI saw a baseline count nothing), which no ratio survives.
    work="--iterations 4 --slices 1"
    step cores-first "$B --cgroup child --tasks 4 --cpu-order cores-first $work --per-cpu --csv $O/cores-first.csv"
    step sweep "$B --cgroup child --tasks 1..8 $work --csv $O/sweep.csv"
    step siblings "$B --cgroup child,siblings:4 --tasks 8 $work --csv $O/siblings.csv"
    session topology
fi

# faultscale as an LKP program (integrations/lkp), where LKP's own test machines run it: as
# root from the job's service, so in that service's cgroup below the root (the program's
# default base, detected at run time: --base new on v2). The program and lkp-tests' lib/ come
# in through --share (/mnt/in/extra), the binary where `lkp install` puts it
# ($BENCHMARK_ROOT/faultscale/bin); its output goes to $O/lkp for the test to feed to `parse`
# under ruby on the host (the guest has no ruby).
if [ -x "$FS_IN/extra/lkp-tests/programs/faultscale/run" ]; then
    mkdir -p "$O/lkp" /tmp/lkp-benchmarks/faultscale/bin /tmp/lkp-tmp
    ln -sf "$FS_IN/faultscale" /tmp/lkp-benchmarks/faultscale/bin/faultscale
    start=$(date +%s.%N)
    env -i PATH="/usr/sbin:/usr/bin:/sbin:/bin" LKP_SRC="$FS_IN/extra/lkp-tests" \
        RESULT_ROOT="$O/lkp" TMP_RESULT_ROOT="$O/lkp" TMP=/tmp/lkp-tmp testcase=faultscale suite=faultscale \
        BENCHMARK_ROOT=/tmp/lkp-benchmarks placement=child,nested:4 runtime=1 slices=2 nr_task=2 test=anon \
        bash "$FS_IN/extra/lkp-tests/programs/faultscale/run" > "$O/lkp/faultscale" 2> "$O/lkp.err" < /dev/null
    echo $? > "$O/lkp.rc"
    . /run/seconds.sh
    seconds lkp "$start"
fi

sleep 1
find /sys/fs/cgroup -name 'faultscale-*' > "$O/leftover_cgroups.txt"
systemctl list-units --all --no-legend --plain 'run-*.scope' > "$O/leftover_scopes.txt"
systemctl --failed --no-legend --plain > "$O/failed_units.txt"
ps -eo pid,args | grep '[f]aultscale' | grep -v '/run/session-' > "$O/leftover_processes.txt"
journalctl -b -p warning --no-pager > "$O/journal_warnings.txt" 2>&1
exit 0
