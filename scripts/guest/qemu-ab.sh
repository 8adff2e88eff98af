#!/bin/sh
# The job of scripts/kernel-ab in each kernel's guest: faultscale with the caller's arguments
# (FS_ARGS, shell-quoted, in $FS_IN/settings) and --json into $FS_OUT/result-N.json, FS_RUNS
# times (N = 1, 2, ...), plus env. run.rc is the first run's code that is not 0, else 0; a
# failed run ends the job, its output kept.
. "$FS_IN/settings"
eval "set -- $FS_ARGS"
"$FS_IN/faultscale" env > "$FS_OUT/env.out" 2>&1
start=$(date +%s)
run=1 rc=0
while [ "$run" -le "${FS_RUNS:-1}" ] && [ "$rc" = 0 ]; do
	"$FS_IN/faultscale" "$@" --json "$FS_OUT/result-$run.json" > "$FS_OUT/run.out" 2> "$FS_OUT/run.err"
	rc=$?
	run=$((run + 1))
done
echo "$rc" > "$FS_OUT/run.rc"
echo "run $(( $(date +%s) - start )) s" > "$FS_OUT/seconds.txt"
exit 0
