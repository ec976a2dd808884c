#!/bin/sh
# One Bash PreToolUse + PostToolUse of `true` through the walj binary $1 in the git checkout $2,
# as Claude Code runs them: the unit the "in turns" rows of docs/performance.md time, e.g.
#   farm-bench -n 30 --vs 'git -C R status --porcelain' -- scripts/bash-pair.sh WALJ R
# (R made by scripts/bench-watch.py's `build`, `[bash] watcher = false` for the full scan).
set -e
W=$1
R=$2
id=pair$$
printf '{"hook_event_name":"PreToolUse","session_id":"bench","tool_name":"Bash","tool_use_id":"%s","cwd":"%s","transcript_path":"/tmp/none.jsonl","tool_input":{"command":"true"}}' "$id" "$R" |
    "$W" --project "$R" hook >/dev/null 2>&1
true
printf '{"hook_event_name":"PostToolUse","session_id":"bench","tool_name":"Bash","tool_use_id":"%s","cwd":"%s","transcript_path":"/tmp/none.jsonl","tool_input":{"command":"true"},"tool_response":{"stdout":""}}' "$id" "$R" |
    "$W" --project "$R" hook >/dev/null 2>&1
