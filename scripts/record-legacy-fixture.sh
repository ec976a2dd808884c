#!/usr/bin/env bash
# Records tests/fixtures/legacy-subfolder/: a journal written in pkg/core/.walj/ by a walj from
# before this change (default /tmp/walj-087e4d4, main's release binary at 087e4d4), the way a
# session started in pkg/core/ with `walj install --local` or the plugin journaled before one
# project root: the hook run with CLAUDE_PROJECT_DIR=<repo>/pkg/core and `--project pkg/core`.
#
#   scripts/record-legacy-fixture.sh [OLD_WALJ]
#
# The session (real Claude Code 2.1.x payloads from /work/shared/fixtures/hooks/, paths
# filled in): SessionStart, a prompt, an Edit of config/settings.json (Pre and Post, the file
# edited between them), a Write of docs/generated-index.md whose Pre was journaled and whose
# file was written but whose Post never came (the crash), and a Bash command
# (`echo started > run.log; sleep 60`) killed with SIGKILL mid-run. The recording shell is
# the session's "Claude Code" process: it has exited when the test reads the journal.
#
# Writes:
#   committed/   the files of pkg/core as committed before the session;
#   after/       pkg/core after the crash, its .walj/ as dot-walj/ (journal.jsonl, store/, …;
#                its .gitignore as dot-gitignore);
#   meta.json    the binary, its version and the project path of the recording.
# The tests copy committed/ into a fresh git repository, commit it, then copy after/ over it.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-${WALJ_OLD_BIN:-/tmp/walj-087e4d4}}"
HOOKS="${WALJ_HOOK_FIXTURES:-/work/shared/fixtures/hooks}"
OUT=tests/fixtures/legacy-subfolder

session() {
  set -euo pipefail
  export CLAUDE_PROJECT_DIR="$P"
  SESSION="$SESSION"
  : "${SESSION:?}"
  feed() { # payload file: placeholders filled, the other session's id replaced by this one's
    sed -e "s#\${PROJECT}#$P#g" -e "s#\${HOME}#$HOME#g" \
      -e "s#4b79e617-7ef1-4ab2-a219-fbffcb6122b5#$SESSION#g" "$1" |
      (cd "$P" && "$OLD" --project "$P" hook)
  }
  C="$HOOKS/crash-mid-write"
  feed "$C/01-session-start.json"
  feed "$C/02-user-prompt.json"
  feed "$C/05-pre-edit-config.json"
  sed -i 's/"retries": 3/"retries": 5/' "$P/config/settings.json"
  feed "$C/06-post-edit-config.json"
  feed "$C/09-pre-write-docs.json"
  mkdir -p "$P/docs"
  printf '# Index\n\n- retries: 5\n- timeout_ms: 500\n' >"$P/docs/generated-index.md"
  # The Bash call: journaled, started, killed with its session mid-run.
  feed "$HOOKS/real-2.1.328-killed-mid-bash/07-PreToolUse-Bash.json"
  (cd "$P" && exec bash -c 'echo started > run.log; sleep 60') &
  cmd=$!
  sleep 1
  kids="$(pgrep -P "$cmd" || true)"
  kill -9 "$cmd" $kids
  wait "$cmd" 2>/dev/null || true
}
[ -x "$OLD" ] || { echo "record-legacy-fixture.sh: no old walj binary at $OLD" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
repo="$work/repo"
export HOME="$work/home"
mkdir -p "$HOME" "$repo/pkg/core"
P="$repo/pkg/core"
cp -r "$HOOKS/crash-mid-write/project/." "$P/"
chmod -R u+w "$P"
git -C "$repo" init -q
git -C "$repo" -c user.email=t@t -c user.name=t add -A
git -C "$repo" -c user.email=t@t -c user.name=t commit -qm base
rm -rf "$OUT"
mkdir -p "$OUT/committed" "$OUT/after"
cp -r "$P/." "$OUT/committed/"

# The session runs under a process of its own that stands for Claude Code (the hook records
# its nearest non-shell ancestor as the session's process): it has exited, so the session
# reads as crashed.
SESSION=8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10
export P HOOKS OLD HOME SESSION
python3 -c 'import subprocess, sys; sys.exit(subprocess.call(["bash", "-c", sys.argv[1]]))' "$(declare -f session); session"
cp -r "$P/." "$OUT/after/"
rm -rf "$OUT/after/.walj/cache" "$OUT/after/.walj/observed.jsonl" "$OUT/after/.walj/journal.lock"
# `.walj/.gitignore` is `*`: kept under another name so that git carries the fixture.
mv "$OUT/after/.walj" "$OUT/after/dot-walj"
mv "$OUT/after/dot-walj/.gitignore" "$OUT/after/dot-walj/dot-gitignore"
version="$("$OLD" --version)"
printf '{"binary": "%s", "version": "%s", "project": "%s", "session": "%s"}\n' \
  "$OLD" "$version" "$P" "$SESSION" >"$OUT/meta.json"
echo "record-legacy-fixture.sh: recorded with $version into $OUT:" >&2
find "$OUT" -type f | sort >&2
