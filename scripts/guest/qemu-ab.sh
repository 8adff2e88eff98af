#!/bin/sh
# The job of scripts/kernel-ab in each kernel's guest: faultscale with the caller's arguments
# (FS_ARGS, shell-quoted, in $FS_IN/settings) and --json into $FS_OUT/result.json, plus env.
. "$FS_IN/settings"
eval "set -- $FS_ARGS"
"$FS_IN/faultscale" env > "$FS_OUT/env.out" 2>&1
start=$(date +%s)
"$FS_IN/faultscale" "$@" --json "$FS_OUT/result.json" > "$FS_OUT/run.out" 2> "$FS_OUT/run.err"
echo $? > "$FS_OUT/run.rc"
echo "run $(( $(date +%s) - start )) s" > "$FS_OUT/seconds.txt"
exit 0
