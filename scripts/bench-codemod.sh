#!/usr/bin/env bash
# Benchmark: the PostToolUse of a codemod, `sed -i` over 1,500 tracked files of a 10,000-file git
# repository, against `git status` there (budget: at most 2x git status).
#
#   scripts/bench-codemod.sh [WALJ_BINARY]      (default: the release build, scripts/walj-bin.sh)
#
# Sets the scene once in a temp folder: the repository, walj's PreToolUse hook, the sed. The
# measured PostToolUse must meet the same state every run (1,500 changed files, none of their
# bytes in walj's store yet), so each run first puts back `.walj/` as the Pre left it. It writes
# three scripts, timed with any whole-process timer (hyperfine when installed, else printed):
#   post.sh     put `.walj/` back, then the PostToolUse hook  (what is measured)
#   restore.sh  put `.walj/` back only                        (subtracted from post.sh)
#   status.sh   git status --porcelain                        (the yardstick)
# The checkout's watcher is off (`[bash] watcher = false`): the Post scans the tree in full, the
# slower path, and the one whose cost does not depend on a background process.
set -euo pipefail

WALJ=${1:-$("$(dirname "$0")/walj-bin.sh")}
WALJ=$(realpath "$WALJ")
N=${FILES:-10000}
CHANGED=${CHANGED:-1500}
WORK=${WORK:-$(mktemp -d /tmp/walj-bench-codemod.XXXXXX)}
REPO="$WORK/repo"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

echo "building a $N-file repository in $REPO" >&2
mkdir -p "$REPO"
python3 - "$REPO" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "src", f"m{i // 100:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}.rs"), "w") as f:
        f.write(f"// file {i}\n" + "pub fn old_name() -> u32 { %d }\n" % i * 20)
PY
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" commit -qm init
mkdir -p "$REPO/.walj"
printf '[bash]\nwatcher = false\n' > "$REPO/.walj/config.toml"
sleep 2.1 # leave the racy-git window so stat caches are trusted, as in real use

hook() { printf '{"hook_event_name":"%s","session_id":"bench","tool_name":"Bash","tool_use_id":"toolu_codemod","cwd":"%s","tool_input":{"command":"sed"},"tool_response":{"stdout":""}}' "$1" "$REPO"; }
hook PreToolUse > "$WORK/pre.json"
hook PostToolUse > "$WORK/post.json"
"$WALJ" hook --project "$REPO" < "$WORK/pre.json"
( cd "$REPO" && git ls-files 'src/*.rs' | sed -n "1,${CHANGED}p" | xargs sed -i 's/old_name/new_name/' )
git -C "$REPO" status --porcelain | wc -l | xargs echo "changed files:" >&2
rm -rf "$WORK/walj-pre"
cp -a "$REPO/.walj" "$WORK/walj-pre"

cat > "$WORK/restore.sh" <<SH
#!/bin/sh
rm -rf "$REPO/.walj" && cp -a "$WORK/walj-pre" "$REPO/.walj"
SH
cat > "$WORK/post.sh" <<SH
#!/bin/sh
rm -rf "$REPO/.walj" && cp -a "$WORK/walj-pre" "$REPO/.walj"
exec "$WALJ" hook --project "$REPO" < "$WORK/post.json"
SH
cat > "$WORK/status.sh" <<SH
#!/bin/sh
exec git -C "$REPO" status --porcelain
SH
chmod +x "$WORK"/*.sh

# One run, checked: every changed file is an entry.
"$WORK/post.sh"
grep -c '"parent":"toolu_codemod"' "$REPO/.walj/journal.jsonl" | xargs echo "entries of the command:" >&2
grep -o '"snapshot":{[^}]*}' "$REPO/.walj/journal.jsonl" | tail -1 >&2

if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 2 --runs "${RUNS:-15}" \
    -n "restore .walj" "$WORK/restore.sh" \
    -n "restore .walj + PostToolUse" "$WORK/post.sh" \
    -n "git status" "$WORK/status.sh"
else
  echo "time these (PostToolUse = post.sh - restore.sh; compare with status.sh):" >&2
  echo "  $WORK/post.sh  $WORK/restore.sh  $WORK/status.sh" >&2
fi
