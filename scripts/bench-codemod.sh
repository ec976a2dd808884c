#!/usr/bin/env bash
# Benchmark: the PostToolUse of a codemod, `sed -i` over 1,500 tracked files of a 10,000-file git
# repository, against `git status` there (budget: at most 2x git status).
#
#   scripts/bench-codemod.sh [WALJ_BINARY [BASE_BINARY]]   (default: the release build, scripts/walj-bin.sh)
#
# With BASE_BINARY (another build, e.g. of an older commit), both are measured in the same
# run, in turns, on the same scene (each with its own Pre): post-base.sh is the base's Post.
#
# Sets the scene once in a temp folder: the repository, walj's PreToolUse hook, the sed. The
# measured PostToolUse must meet the same state every run (1,500 changed files, none of their
# bytes in walj's store yet), so each run first puts back `.walj/` as the Pre left it. It writes
# three scripts:
#   post.sh     put `.walj/` back, then the PostToolUse hook and its settle pass
#   restore.sh  put `.walj/` back only
#   status.sh   git status --porcelain                        (the yardstick)
# By default its own timer (below) runs, in turns, RUNS rounds of: restore.sh (untimed), `sync`,
# the changed files' bytes written again (the codemod's unwritten data, as right after the sed),
# then the PostToolUse hook alone, timed (the base's too, with BASE_BINARY), and git status;
# it prints medians of wall and cpu time and the ratios to git status round by round.
# HYPERFINE=1 times post.sh, restore.sh and status.sh with hyperfine instead (subtract restore).
# The PostToolUse under test is run with WALJ_SETTLE_DETACHED=0: it spills the images it names
# (one durable file) without starting its detached settle pass, which is then timed on its own
# right after it ("settle pass", `walj settle`, its own row), so neither overlaps another
# measurement. A base binary that stores the images inside its hook ignores the variable.
# The checkout's watcher is off (`[bash] watcher = false`): the Post scans the tree in full, the
# slower path, and the one whose cost does not depend on a background process.
set -euo pipefail

WALJ=${1:-$("$(dirname "$0")/walj-bin.sh")}
WALJ=$(realpath "$WALJ")
BASE=${2:-}
[ -n "$BASE" ] && BASE=$(realpath "$BASE")
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
if [ -n "$BASE" ]; then
  # The base's own Pre, on the same tree, kept aside.
  "$BASE" hook --project "$REPO" < "$WORK/pre.json"
  rm -rf "$WORK/walj-pre-base"
  cp -a "$REPO/.walj" "$WORK/walj-pre-base"
  find "$REPO/.walj" -mindepth 1 ! -name config.toml -exec rm -rf {} +
fi
"$WALJ" hook --project "$REPO" < "$WORK/pre.json"
( cd "$REPO" && git ls-files 'src/*.rs' | sed -n "1,${CHANGED}p" | xargs sed -i 's/old_name/new_name/' )
git -C "$REPO" status --porcelain | sed 's/^...//' > "$WORK/changed.txt"
wc -l < "$WORK/changed.txt" | xargs echo "changed files:" >&2
rm -rf "$WORK/walj-pre"
cp -a "$REPO/.walj" "$WORK/walj-pre"

# The last run's `.walj/` is moved aside, not deleted: on a file system without a journal
# (ext4 with `^has_journal`, as on the machine these figures come from) thousands of freshly
# deleted inodes make every new file's inode search slow for minutes, a cost of the benchmark's
# own churn that no real PostToolUse meets. Deleted at the end.
mkdir -p "$WORK/trash"
cat > "$WORK/restore.sh" <<SH
#!/bin/sh
[ -e "$REPO/.walj" ] && mv "$REPO/.walj" "\$(mktemp -d "$WORK/trash/w.XXXXXX")/"
cp -a "$WORK/walj-pre" "$REPO/.walj"
SH
cat > "$WORK/post.sh" <<SH
#!/bin/sh
"$WORK/restore.sh" && "$WALJ" hook --project "$REPO" < "$WORK/post.json" && exec "$WALJ" --project "$REPO" settle
SH
if [ -n "$BASE" ]; then
  cat > "$WORK/restore-base.sh" <<SH
#!/bin/sh
[ -e "$REPO/.walj" ] && mv "$REPO/.walj" "\$(mktemp -d "$WORK/trash/w.XXXXXX")/"
cp -a "$WORK/walj-pre-base" "$REPO/.walj"
SH
cat > "$WORK/post-base.sh" <<SH
#!/bin/sh
"$WORK/restore-base.sh" && exec "$BASE" hook --project "$REPO" < "$WORK/post.json"
SH
fi
cat > "$WORK/status.sh" <<SH
#!/bin/sh
exec git -C "$REPO" status --porcelain
SH
chmod +x "$WORK"/*.sh

export WALJ_SETTLE_DETACHED=0
# One run, checked: every changed file is an entry (and the settle pass's report).
"$WORK/post.sh" >&2
grep -c '"parent":"toolu_codemod"' "$REPO/.walj/journal.jsonl" | xargs echo "entries of the command:" >&2
grep -o '"snapshot":{[^}]*}' "$REPO/.walj/journal.jsonl" | tail -1 >&2

if [ -n "$BASE" ]; then
  "$WORK/post-base.sh"
  grep -c '"parent":"toolu_codemod"' "$REPO/.walj/journal.jsonl" | xargs echo "entries of the command (base):" >&2
fi

if [ -z "${HYPERFINE:-}" ] || ! command -v hyperfine >/dev/null; then
  # In turns (restore, post, [post-base], git status) RUNS times; medians of wall and cpu.
  python3 - "$WORK" "${RUNS:-15}" "$BASE" "$WALJ" "$REPO" <<'PY'
import os, statistics, subprocess, sys, time
work, runs, base, walj, repo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
post = lambda b: [b, "hook", "--project", repo]
# (name, untimed set-up, timed command, its stdin)
cases = [("PostToolUse", "restore.sh", post(walj), "post.json"),
         # Right after it, as the hook would start it (no set-up, no sync before it).
         ("settle pass", "-", [walj, "--project", repo, "settle"], None)]
if base:
    cases.append(("PostToolUse (base)", "restore-base.sh", post(base), "post.json"))
cases.append(("git status", None, ["git", "-C", repo, "status", "--porcelain"], None))
res = {n: [] for n, *_ in cases}
changed = open(os.path.join(work, "changed.txt")).read().split()
for i in range(runs + 1):
    for n, setup, cmd, stdin in cases:
        if setup and setup != "-":
            subprocess.run([os.path.join(work, setup)], check=True)
        if setup != "-":
            subprocess.run(["sync"], check=True)  # nothing left to write from the set-up...
            for rel in changed:  # ...but the codemod's own writes, as right after the sed
                path = os.path.join(repo, rel)
                with open(path, "rb") as fh:
                    data = fh.read()
                with open(path, "r+b") as fh:
                    fh.write(data)
        f = open(os.path.join(work, stdin)) if stdin else subprocess.DEVNULL
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdin=f, stdout=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t
        if i > 0:  # the first round warms the caches
            res[n].append((wall, ru.ru_utime + ru.ru_stime))
med = statistics.median
print(f"{runs} rounds in turns (set-up untimed); medians (min-max), seconds")
for n, *_ in cases:
    w = [x[0] for x in res[n]]; c = [x[1] for x in res[n]]
    print(f"  {n:20} wall {med(w):.3f} ({min(w):.3f}-{max(w):.3f})  cpu {med(c):.3f}")
st = res["git status"]
if "settle pass" in res:
    both = [(p[0] + q[0], p[1] + q[1]) for p, q in zip(res["PostToolUse"], res["settle pass"])]
    res["PostToolUse + settle pass"] = both
    w = [x[0] for x in both]; c = [x[1] for x in both]
    print(f"  {'PostToolUse + settle':20} wall {med(w):.3f} ({min(w):.3f}-{max(w):.3f})  cpu {med(c):.3f}")
names = [n for n, *_ in cases[:-1]] + (["PostToolUse + settle pass"] if "settle pass" in res else [])
for n in names:
    rw = [p[0] / s[0] for p, s in zip(res[n], st)]
    rc = [p[1] / max(s[1], 1e-3) for p, s in zip(res[n], st)]
    print(f"  {n} / git status, round by round: wall {med(rw):.1f}x, cpu {med(rc):.1f}x")
PY
elif command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 2 --runs "${RUNS:-15}" \
    -n "restore .walj" "$WORK/restore.sh" \
    -n "restore .walj + PostToolUse" "$WORK/post.sh" \
    -n "git status" "$WORK/status.sh"
else
  echo "time these (PostToolUse = post.sh - restore.sh; compare with status.sh):" >&2
  echo "  $WORK/post.sh  $WORK/restore.sh  $WORK/status.sh" >&2
fi
rm -rf "$WORK/trash"
