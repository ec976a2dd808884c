#!/usr/bin/env bash
# Benchmark: `walj import` of one 50 MB transcript (issue 6 budget: <= 2 s).
#
#   scripts/bench-import.sh [WALJ_BINARY]      (default: the release build, scripts/walj-bin.sh; needs hyperfine)
#
# The transcript is synthetic: the real Claude Code 1.0.111 session in
# ../shared/fixtures/transcripts (Edit, MultiEdit, TodoWrite, Read, Grep…) repeated with fresh
# tool ids, uuids and file contents until it reaches SIZE_MB, so every repetition brings new
# records and new pre/post images. Each run imports into an empty journal and store.
# With /dev/shm (tmpfs) present, the import is also measured there: the difference is what
# creating ~1,700 object files costs on the disk (on a busy ext4 most of the time goes to
# inode allocation, not to walj).
set -euo pipefail

WALJ=${1:-$("$(dirname "$0")/walj-bin.sh")}
WALJ=$(realpath "$WALJ")
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install -y hyperfine)" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURE=${FIXTURE:-$HERE/../../shared/fixtures/transcripts/cc-1.0.111-edit-multiedit-todo.jsonl}
[ -f "$FIXTURE" ] || FIXTURE=/work/shared/fixtures/transcripts/cc-1.0.111-edit-multiedit-todo.jsonl
SIZE_MB=${SIZE_MB:-50}
WORK=$(mktemp -d /tmp/walj-bench-import.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 - "$FIXTURE" "$WORK/big.jsonl" "$SIZE_MB" <<'PY'
import json, sys
src, dst, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(src)]
SESSION = lines[0]["sessionId"]
target = size_mb * 1_000_000
out = open(dst, "w")
written, k = 0, 0
def fresh(v, k):
    # New ids and contents for repetition k, keeping every Edit applicable.
    if isinstance(v, dict):
        return {key: fresh(val, k) for key, val in v.items()}
    if isinstance(v, list):
        return [fresh(x, k) for x in v]
    if isinstance(v, str):
        if v.startswith("toolu_") or v.startswith("msg_"):
            return f"{v}_{k}"
        if len(v) == 36 and v.count("-") == 4 and v != SESSION:  # uuids (one session)
            return v[:-8] + f"{k:08d}"
        return v
    return v
while written < target:
    for d in lines:
        d = fresh(d, k)
        tur = d.get("toolUseResult")
        if isinstance(tur, dict):
            for key in ("originalFile", "originalFileContents"):
                if isinstance(tur.get(key), str):
                    tur[key] = f"/* revision {k} */\n" + tur[key]
        s = json.dumps(d, ensure_ascii=False) + "\n"
        out.write(s)
        written += len(s.encode())
    k += 1
print(f"{written/1e6:.1f} MB, {k} repetitions of {len(lines)} lines", file=sys.stderr)
PY
ls -l "$WORK/big.jsonl" >&2
mkdir -p "$WORK/project"
hyperfine --runs ${RUNS:-5} --prepare "rm -rf $WORK/project/.walj" \
  -n "import 50 MB transcript (empty journal)" \
  "env -u CLAUDE_PROJECT_DIR $WALJ import --project $WORK/project $WORK/big.jsonl"
hyperfine --runs ${RUNS:-5} \
  -n "import again (nothing new)" \
  "env -u CLAUDE_PROJECT_DIR $WALJ import --project $WORK/project $WORK/big.jsonl"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  SHM=$(mktemp -d /dev/shm/walj-bench-import.XXXXXX)
  trap 'rm -rf "$WORK" "$SHM"' EXIT
  cp "$WORK/big.jsonl" "$SHM/big.jsonl"
  mkdir -p "$SHM/project"
  hyperfine --runs ${RUNS:-5} --prepare "rm -rf $SHM/project/.walj" \
    -n "import 50 MB transcript (empty journal), tmpfs" \
    "env -u CLAUDE_PROJECT_DIR $WALJ import --project $SHM/project $SHM/big.jsonl"
fi
env -u CLAUDE_PROJECT_DIR "$WALJ" import --project "$WORK/project" "$WORK/big.jsonl" | tail -2 >&2
echo "journal: $(wc -l < "$WORK/project/.walj/journal.jsonl") records; store: $(find "$WORK/project/.walj/store" -type f | wc -l) objects" >&2
