#!/usr/bin/env bash
# Benchmark: Bash side-effect snapshot (PreToolUse + PostToolUse hooks) on a git repository
# of 10,000 files with 20 dirty files (issue 6 budget: <= 50 ms together).
#
#   scripts/bench-bash.sh [WALJ_BINARY]      (default: the release build, scripts/walj-bin.sh; needs hyperfine)
#
# Measures, with hyperfine:
#   1. `walj hook` Pre+Post of a Bash call that changes nothing (steady state);
#   2. the same with the command modifying 3 files between Pre and Post;
#   3. the same with `[bash] snapshot = false` (the hook's own cost, to subtract);
#   4. a cold Pre+Post (empty .walj: the 20 dirty files are captured into the store).
set -euo pipefail

WALJ=${1:-$("$(dirname "$0")/walj-bin.sh")}
WALJ=$(realpath "$WALJ")
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install -y hyperfine)" >&2; exit 1; }
N=${FILES:-10000}
DIRTY=${DIRTY:-20}
WORK=$(mktemp -d /tmp/walj-bench-bash.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
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
        f.write(f"// file {i}\n" + "pub fn f() -> u32 { %d }\n" % i * 20)
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("target/\n*.log\n")
PY
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" commit -qm init
for i in $(seq 0 $((DIRTY - 1))); do
  f=$(printf "%s/src/m%03d/f%05d.rs" "$REPO" $((i * 7 % (N / 100))) $((i * 7 % (N / 100) * 100 + i)))
  echo "// dirty $i" >> "$f"
done
sleep 2.1 # leave the racy-git window so stat caches are trusted, as in real use
git -C "$REPO" status --porcelain | wc -l | xargs echo "dirty files:" >&2

pre() { printf '{"hook_event_name":"PreToolUse","session_id":"bench","tool_name":"Bash","tool_use_id":"%s","cwd":"%s","tool_input":{"command":"make"}}' "$1" "$REPO"; }
post() { printf '{"hook_event_name":"PostToolUse","session_id":"bench","tool_name":"Bash","tool_use_id":"%s","cwd":"%s","tool_input":{"command":"make"},"tool_response":{"stdout":""}}' "$1" "$REPO"; }
pre toolu_bench > "$WORK/pre.json"
post toolu_bench > "$WORK/post.json"
cat > "$WORK/prepost.sh" <<SH
#!/bin/sh
"$WALJ" hook --project "$REPO" < "$WORK/pre.json"
\${CHANGE:-true}
"$WALJ" hook --project "$REPO" < "$WORK/post.json"
SH
chmod +x "$WORK/prepost.sh"
cat > "$WORK/change.sh" <<SH
#!/bin/sh
echo "// \$\$" >> "$REPO/src/m001/f00101.rs"
echo "// \$\$" >> "$REPO/src/m002/f00202.rs"
echo "gen \$\$" > "$REPO/generated.txt"
SH
chmod +x "$WORK/change.sh"

# Warm up once (captures the dirty files, fills the stat cache).
"$WORK/prepost.sh"
rm -f "$REPO/.walj/config.toml"
hyperfine -N --warmup 3 --runs ${RUNS:-40} --export-json "$WORK/steady.json" \
  -n "pre+post, no change" "$WORK/prepost.sh" \
  -n "pre+post, command changes 3 files" "env CHANGE=$WORK/change.sh $WORK/prepost.sh"
printf '[bash]\nsnapshot = false\n' > "$REPO/.walj/config.toml"
hyperfine -N --warmup 3 --runs ${RUNS:-40} --export-json "$WORK/off.json" -n "pre+post, snapshot off (hook baseline)" "$WORK/prepost.sh"
rm -f "$REPO/.walj/config.toml"
hyperfine -N --runs ${COLD_RUNS:-10} --export-json "$WORK/cold.json" --prepare "rm -rf $REPO/.walj" -n "pre+post, cold (empty store)" "$WORK/prepost.sh"
echo "medians (ms):" >&2
python3 - "$WORK"/steady.json "$WORK"/off.json "$WORK"/cold.json <<'PY' >&2
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        print(f"  {r['command']:40s} median {r['median']*1000:6.1f}  min {r['min']*1000:6.1f}  mean {r['mean']*1000:6.1f}")
PY
echo "snapshot time reported by walj (ms, Pre+Post, last run):" >&2
grep -o '"snapshot":{[^}]*}' "$REPO/.walj/journal.jsonl" | tail -3 >&2
