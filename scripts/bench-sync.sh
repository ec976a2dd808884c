#!/bin/sh
# Bytes `walj sync` uploads for a 10-line append to a large journal (issue 18): the pack git
# sends (`git pack-objects --revs --thin`, the remote's previous tip as base), and the time of
# the first and the second sync. MB sets the journal size (default 100); ENCRYPT=1 syncs encrypted
# (to an age recipient).
set -eu
cd "$(dirname "$0")/.."
WALJ_SYNC_BENCH_MB="${MB:-100}" WALJ_SYNC_BENCH_ENCRYPT="${ENCRYPT:-0}" cargo test --locked --test sync ten_line_append -- --nocapture 2>&1 | grep 'sync bench'
