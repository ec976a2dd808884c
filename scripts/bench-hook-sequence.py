#!/usr/bin/env python3
"""The in-session bench's sequence of hook payloads, replayed hook by hook without Claude Code.

    scripts/bench-hook-sequence.py OLD_WALJ NEW_WALJ [ROUNDS=2]

`scripts/bench-hooks-in-session.py` times walj's hooks inside a real Claude Code session; this
replays what that session sends (ten tracked 10 KB files; Edit, Write and Bash in turn, 30
calls, each call's PreToolUse and PostToolUse) straight to `walj hook`, so a row that moves
there can be looked at without the CLI. Each round runs a fresh project per binary, old then
new. Prints the median wall time (process spawn included) of each event per binary and round.
No watcher (`WALJ_RUNTIME_DIR` cannot be made), as in the in-session bench.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

if len(sys.argv) < 3:
    sys.exit(__doc__)
bins = [("old", os.path.realpath(sys.argv[1])), ("new", os.path.realpath(sys.argv[2]))]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", WALJ_RUNTIME_DIR="/dev/null/walj")
env.pop("CLAUDE_PROJECT_DIR", None)


def content(i, v):
    """The bench's 10 KB file `i`, version `v` (benches/e2e.rs)."""
    s, n = "", 0
    while len(s) < 10 * 1024:
        s += f"file {i} line {n} version {v}: the quick brown fox jumps over the lazy dog\n"
        n += 1
    return s


def run(walj, d):
    os.makedirs(d + "/src")
    for i in range(10):
        open(f"{d}/src/f{i}.txt", "w").write(content(i, 0))
    subprocess.run("git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm init",
                   shell=True, cwd=d, check=True, env=env)
    times = {}

    def hook(name, ev):
        payload = {"session_id": "bench-sequence-0000", "transcript_path": "/nonexistent/t.jsonl", "cwd": d, **ev}
        t = time.perf_counter()
        subprocess.run([walj, "hook"], input=json.dumps(payload).encode(), cwd=d, env=env, check=True)
        times.setdefault(name, []).append((time.perf_counter() - t) * 1000)

    hook("SessionStart", {"hook_event_name": "SessionStart", "source": "startup"})
    for k in range(30):
        i = k % 10
        p = f"{d}/src/f{i}.txt"
        if k % 3 == 0:
            inp = {"file_path": p, "old_string": f"file {i} line 7 version",
                   "new_string": f"file {i} line 7 (edited {k}) version"}
            hook("Edit Pre", {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": f"e{k}", "tool_input": inp})
            text = open(p).read().replace(inp["old_string"], inp["new_string"], 1)
            open(p, "w").write(text)
            hook("Edit Post", {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": f"e{k}",
                               "tool_input": inp, "tool_response": {"filePath": p}})
        elif k % 3 == 1:
            inp = {"file_path": p, "content": content(i, k)}
            hook("Write Pre", {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": f"w{k}", "tool_input": inp})
            open(p, "w").write(content(i, k))
            hook("Write Post", {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": f"w{k}",
                                "tool_input": inp, "tool_response": {"type": "update", "filePath": p}})
        else:
            inp = {"command": f"wc -c src/f{i}.txt", "description": "Count"}
            hook("Bash Pre", {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"b{k}", "tool_input": inp})
            hook("Bash Post", {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"b{k}", "tool_input": inp,
                               "tool_response": {"stdout": f"10240 src/f{i}.txt", "stderr": "", "interrupted": False}})
    return {k: statistics.median(v) for k, v in times.items()}


rows = {}
for r in range(rounds):
    for name, walj in bins:
        d = tempfile.mkdtemp(prefix="walj-sequence.")
        try:
            for event, ms in run(walj, d).items():
                rows.setdefault(event, {}).setdefault(name, []).append(ms)
        finally:
            shutil.rmtree(d, ignore_errors=True)
print(f"| event (median of 10 a round; {rounds} rounds) | old | new |\n|---|---|---|")
for event, by in rows.items():
    cell = lambda n: " / ".join(f"{v:.2f}" for v in by[n]) + " ms"
    print(f"| {event} | {cell('old')} | {cell('new')} |")
