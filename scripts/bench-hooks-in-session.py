#!/usr/bin/env python3
"""How long walj's hook processes run inside a real Claude Code session, per event.

    scripts/bench-hooks-in-session.py [SESSIONS=3] [OLD_WALJ]

The session-level rows of `cargo bench --bench e2e` move by several ms from run to run (Claude
Code's own turn time varies more than walj costs), so this times the hook processes
themselves: it runs that bench SESSIONS times with one run per row, the real CLI under
`strace -f --seccomp-bpf -e trace=execve,exit_group` (only those two calls stop the
process), and reads from the traces how long each `walj hook` ran from its exec to its exit,
against `cat` in the bench's noop set-up (the same hooks with `cat >/dev/null`). With
OLD_WALJ, the bench's fourth set-up runs that binary in turns with this one
(`WALJ_BENCH_E2E_OLD`). Needs strace and the pinned CLI (scripts/claude-code.sh).
Prints a Markdown table: median per event and tool, and per tool call (Pre + Post, the mean
over Edit, Write and Bash) minus two `cat`s.
"""
import glob, os, re, statistics, subprocess, sys, tempfile

sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 3
old = os.path.realpath(sys.argv[2]) if len(sys.argv) > 2 else None
root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
claude = subprocess.run([root + "/scripts/claude-code.sh"], check=True, capture_output=True, text=True).stdout.strip()
tmp = tempfile.mkdtemp(prefix="walj-in-session.")
wrapper = tmp + "/claude"
with open(wrapper, "w") as f:
    # No watcher: `strace -f` would follow the one a SessionStart starts, which outlives the
    # session by minutes, and never exit. With a runtime dir that cannot be made, none starts and the
    # Bash hooks scan the bench's small project in full.
    f.write(f"#!/bin/sh\nWALJ_RUNTIME_DIR=/dev/null/walj; export WALJ_RUNTIME_DIR\n"
            "exec strace -f --seccomp-bpf -e trace=execve,exit_group -ttt "
            f"-o {tmp}/trace.$$ {claude} \"$@\"\n")
os.chmod(wrapper, 0o755)
env = dict(os.environ, WALJ_CLAUDE_BIN=wrapper, WALJ_BENCH_E2E_RUNS="1")
if old:
    env["WALJ_BENCH_E2E_OLD"] = old
for _ in range(sessions):
    subprocess.run(["cargo", "bench", "--offline", "--bench", "e2e"], cwd=root, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# One bench run: `claude --version`, a warm-up per set-up, then 0 and 30 calls per set-up, in
# the order plain, noop, walj[, old] (a single run is never reversed).
setups = 4 if old else 3
group = 1 + 3 * setups
files = sorted(glob.glob(tmp + "/trace.*"), key=os.path.getmtime)
assert len(files) == sessions * group, f"{len(files)} traces, expected {sessions * group}"


def durations(path, argv):
    """exec-to-exit (ms) of the processes whose execve argv contains `argv`, in exec order."""
    execs, exits = [], {}
    for line in open(path):
        m = re.match(r"(\d+)\s+([\d.]+)\s+(execve|\+\+\+ exited)(.*)", line)
        if not m:
            continue
        pid, t, what, rest = m.groups()
        if what == "execve" and "= 0" in rest and argv in rest:
            execs.append((float(t), pid))
        elif what == "+++ exited":
            exits[pid] = float(t)
    return [(exits[p] - t) * 1000 for t, p in sorted(execs) if p in exits]


kinds = ["Edit", "Write", "Bash"]
per = {"new": {}, "old": {}}
cat = []
for g in range(sessions):
    traces = files[g * group:(g + 1) * group]
    long_rows = traces[1 + 2 * setups:]  # the 30-call sessions
    # The noop hook: `cat >/dev/null` in shell form, `dd of=/dev/null` in exec form.
    noop = durations(long_rows[1], '["dd", "of=/dev/null"') or durations(long_rows[1], '["cat"]')
    cat += noop[2:62]  # after SessionStart and the prompt
    for label, path in [("new", long_rows[2])] + ([("old", long_rows[3])] if old else []):
        d = durations(path, '"walj", "hook"')
        assert len(d) == 64, f"{path}: {len(d)} walj hooks"
        for j in range(30):
            for phase, off in (("Pre", 2), ("Post", 3)):
                per[label].setdefault(f"{kinds[j % 3]} {phase}", []).append(d[off + 2 * j])
med = statistics.median
c = med(cat)
cols = ["old", "new"] if old else ["new"]
print(f"| hook, exec to exit in a real session (median of {sessions * 10} each) | " + " | ".join(cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for k in per["new"]:
    print(f"| {k} | " + " | ".join(f"{med(per[l][k]):.2f} ms" for l in cols) + " |")
print(f"| noop hook (`cat` or `dd`) | " + " | ".join(f"{c:.2f} ms" for _ in cols) + " |")
print("| **per tool call: Pre + Post − 2 × noop (mean over Edit, Write, Bash)** | " + " | ".join(
    f"**{sum(med(v) for v in per[l].values()) / 3 - 2 * c:.2f} ms**" for l in cols) + " |")
print(f"\ntraces: {tmp}; load {os.getloadavg()[0]:.1f}")
