#!/bin/sh
# What runs inside the guest, at the guest's TRUE root cgroup (--base root). Every command's
# output, CSV/JSON and exit code go to $FS_OUT on the host; tests/guest.rs asserts on them.
B="$FS_BIN"
O="$FS_OUT"
cg=/sys/fs/cgroup
[ "$FS_MODE" = v1 ] && cg=/sys/fs/cgroup/memory

run() { # name, args...
    name=$1; shift
    "$B" "$@" > "$O/$name.out" 2> "$O/$name.err"
    echo $? > "$O/$name.rc"
}

run_in() { # cgroup directory, name, args...: faultscale started from inside that cgroup
    dir=$1; name=$2; shift 2
    sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$dir" "$B" "$@" > "$O/$name.out" 2> "$O/$name.err"
    echo $? > "$O/$name.rc"
}

run env env
[ "$FS_MODE" = v2 ] && cat $cg/cgroup.subtree_control > "$O/subtree_before.txt"

# Root vs child vs nested:4 at the true root.
run main --base root --cgroup child,nested:4 --duration 0.5 --csv "$O/main.csv" --json "$O/main.json"

# Every shipped profile whose knobs this version has.
profiles="child nested-2 nested-4 nested-8 limited protected"
[ "$FS_MODE" = v2 ] && profiles="$profiles high"
for p in $profiles; do
    run "profile-$p" --base root --cgroup "$p" --duration 0.5 --chunk 64K --json "$O/profile-$p.json"
done
[ "$FS_MODE" = v1 ] && run profile-high-v1 --base root --cgroup high --duration 0.3

# A facility the guest kernel lacks: perf events. faultscale must say so and fall back.
run perf --base root --cgroup child --duration 0.5 --chunk 64K --kernel-count perf --csv "$O/perf.csv"
# --profile cannot fall back: one line, before anything is created.
run profile-noperf --base root --cgroup child --duration 0.5 --profile
find $cg -name 'faultscale-*' > "$O/profile_noperf_left.txt"

if [ "$FS_MODE" = v2 ]; then
    # faultscale enabled +memory at the root for its runs and must have disabled it again.
    cat $cg/cgroup.subtree_control > "$O/subtree_after.txt"
    # From here on the guest plays the administrator who delegates: memory is enabled for
    # the root's children, so /busy and /deleg below have the memory controller.
    echo +memory > $cg/cgroup.subtree_control
    # No-internal-processes rule: a non-root base holding a process cannot give its children
    # memory; faultscale must refuse, name the rule, and create nothing.
    mkdir $cg/busy
    sleep 60 &
    sleeper=$!
    echo $sleeper > $cg/busy/cgroup.procs
    run busy --base /busy --cgroup child --no-baseline --duration 0.3
    kill $sleeper
    wait $sleeper 2>/dev/null
    # A delegated, empty cgroup works with --no-baseline; +memory is enabled for the run and
    # disabled again afterwards; the baseline inside it is refused.
    mkdir $cg/deleg
    run deleg --base /deleg --cgroup child,nested:2 --no-baseline --duration 0.5 --chunk 64K --csv "$O/deleg.csv"
    cat $cg/deleg/cgroup.subtree_control > "$O/deleg_subtree_after.txt"
    run deleg-baseline --base /deleg --cgroup child --duration 0.5 --chunk 64K --csv "$O/deleg-baseline.csv"
    rmdir $cg/busy $cg/deleg

    # A systemd login session's shape: /user.slice/session.scope holds a shell and another
    # process; /user.slice gives memory to its children. --base self must refuse, create
    # nothing and move nobody; --base new must work beside it.
    mkdir -p $cg/user.slice/session.scope
    echo +memory > $cg/user.slice/cgroup.subtree_control
    sleep 120 &
    other=$!
    echo $other > $cg/user.slice/session.scope/cgroup.procs
    run_in $cg/user.slice/session.scope session-self --base self --duration 0.3
    find $cg -name 'faultscale-*' > "$O/session_self_left.txt"
    grep '^0::' /proc/$other/cgroup > "$O/session_other_cgroup.txt"
    run_in $cg/user.slice/session.scope session-new --base new --cgroup child,nested:2 --duration 0.5 --csv "$O/session-new.csv"
    run_in $cg/user.slice/session.scope session-env env --base self
    cat $cg/user.slice/session.scope/cgroup.procs | wc -l > "$O/session_procs_after.txt"
    kill $other
    wait $other 2>/dev/null

    # A delegated scope's shape (systemd-run --scope -p Delegate=yes): an empty cgroup that
    # holds only faultscale. --base self works and leaves it exactly as found.
    mkdir -p $cg/system.slice/fs.scope
    echo +memory > $cg/system.slice/cgroup.subtree_control
    cat $cg/system.slice/fs.scope/cgroup.subtree_control > "$O/scope_subtree_before.txt"
    run_in $cg/system.slice/fs.scope scope-self --base self --cgroup child,nested:2 --duration 0.5 --csv "$O/scope-self.csv"
    cat $cg/system.slice/fs.scope/cgroup.subtree_control > "$O/scope_subtree_after.txt"
    find $cg/system.slice/fs.scope -mindepth 1 -type d > "$O/scope_children_after.txt"
    rmdir $cg/system.slice/fs.scope $cg/system.slice $cg/user.slice/session.scope $cg/user.slice
fi

# Cleanup judges liveness by the run's lock on its tree: a live run's tree is kept, a
# SIGKILLed run's tree (its workers dead with it) is removed.
"$B" --base root --cgroup child --duration 4 > "$O/live.out" 2>&1 &
live=$!
sleep 2
run cleanup-live cleanup --base root
wait $live
echo $? > "$O/live.rc"
"$B" --base root --cgroup child --duration 60 > /dev/null 2>&1 &
doomed=$!
sleep 2
kill -9 $doomed
wait $doomed 2>/dev/null
sleep 1
run cleanup-dead cleanup --base root

# Outputs: through a symlink the target is written and the link stays; SIGQUIT is handled
# like Ctrl-C.
echo old > "$O/target.csv"
ln -s target.csv "$O/link.csv"
run link --base root --cgroup child --duration 0.5 --chunk 64K --csv "$O/link.csv"
[ -L "$O/link.csv" ] && echo link > "$O/link_kind.txt"
# A non-interactive shell starts background jobs with SIGINT and SIGQUIT ignored, and
# faultscale keeps a signal ignored at start ignored (nohup's SIGHUP): give it back its default.
env --default-signal=QUIT "$B" --base root --cgroup nested:3 --duration 60 > /dev/null 2>&1 &
quit=$!
sleep 2
kill -QUIT $quit
wait $quit
echo $? > "$O/quit.rc"

find $cg -name 'faultscale-*' > "$O/leftovers.txt"
