#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests through the real binary, and the
# end-to-end tests against the real Claude Code CLI (installed by scripts/setup-test-deps.sh).
#
# Every test binary runs even when one fails (`--no-fail-fast`), and the run ends with one
# totals line summed over all of them (`totals: N passed, N failed, N skipped`, skipped
# being cargo's ignored); the exit status is
# non-zero when anything failed or did not build. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-test-deps.sh
log="$(mktemp "${TMPDIR:-/tmp}/walj-test.XXXXXX")"
trap 'rm -f "$log"' EXIT
start=$(date +%s)
set +e
cargo test --locked --no-fail-fast "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# One "test result:" line per test binary (and one for the doc-tests).
read -r passed failed ignored binaries < <(awk '
  /^test result: / {
    for (i = 1; i <= NF; i++) {
      if ($(i + 1) ~ /^passed/) p += $i
      if ($(i + 1) ~ /^failed/) f += $i
      if ($(i + 1) ~ /^ignored/) g += $i
    }
    n++
  }
  END { printf "%d %d %d %d\n", p, f, g, n }' "$log")
echo
if [ "$failed" -gt 0 ]; then
  echo "failed tests:"
  # cargo lists each binary's failures under "failures:" (the names, indented by 4).
  awk '/^failures:$/ {inlist = 1; next} inlist && /^    / {print; next} inlist && !/^    / && NF {inlist = 0}' "$log" |
    grep -v '^    ---- ' | sort -u
fi
echo "test binaries: $binaries; wall time: $(($(date +%s) - start)) s"
echo "totals: $passed passed, $failed failed, $ignored skipped"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "cargo test exited $rc with no failed test: a build error or a crashed test binary (see above)" >&2
fi
exit "$rc"
