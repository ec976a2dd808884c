#!/usr/bin/env python3
"""`walj mcp`'s start-up: `initialize` answered, on a project whose journal has LINES lines,
timed beside `walj --version` (the floor: a process that starts, parses its arguments and
exits), in turns.

    scripts/bench-mcp-init.py [WALJ] [LINES=1000000] [RUNS=50]

WALJ defaults to `scripts/walj-bin.sh release`. The journal is made by replaying a small
session through `walj hook` (a prompt, Edits and Writes with their Post events), then copying
its tool-call lines with new ids until it has LINES lines (about 360 MB for a million). Each run
of `walj mcp` starts the process in the project, writes the `initialize` request, reads the
one-line answer, then closes stdin and waits for the exit: the wall time from the start to the
answer is the figure (budget: 50 ms); the exit is timed too. Prints medians and 90th percentiles.
"""
import json, os, statistics, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
walj = os.path.realpath(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else subprocess.run(
    [os.path.join(root, "scripts/walj-bin.sh"), "release"], capture_output=True, text=True, check=True).stdout.strip()
lines = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 50
env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
for k in ("CLAUDE_PROJECT_DIR", "CLAUDECODE", "WALJ_JOURNAL"):
    env.pop(k, None)

d = tempfile.mkdtemp(prefix="walj-mcp-bench.")
subprocess.run(["git", "init", "-q"], cwd=d, check=True, env=env)
os.makedirs(d + "/src")
sid = "bench-mcp-0000"


def hook(p):
    subprocess.run([walj, "hook"], input=json.dumps(p).encode(), cwd=d, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


base = {"session_id": sid, "transcript_path": "/nonexistent/t.jsonl", "cwd": d}
hook({**base, "hook_event_name": "SessionStart", "source": "startup"})
hook({**base, "hook_event_name": "UserPromptSubmit", "prompt": "write some files"})
for i in range(20):
    path = f"{d}/src/f{i}.rs"
    inp = {"file_path": path, "content": f"fn f{i}() {{}}\n"}
    hook({**base, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": f"toolu_b{i}", "tool_input": inp})
    open(path, "w").write(inp["content"])
    hook({**base, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": f"toolu_b{i}",
          "tool_input": inp, "tool_response": {"type": "create", "filePath": path, "content": inp["content"], "originalFile": None}})
journal = d + "/.walj/journal.jsonl"
seed = [l for l in open(journal, encoding="utf-8").read().splitlines() if "toolu_b" in l]
have = sum(1 for _ in open(journal, encoding="utf-8"))
with open(journal, "a", encoding="utf-8") as f:
    n = 0
    while have < lines:
        for l in seed:
            f.write(l.replace("toolu_b", f"toolu_c{n}_") + "\n")
            have += 1
            if have >= lines:
                break
        n += 1
print(f"journal: {have} lines, {os.path.getsize(journal) / 1e6:.0f} MB ({walj})", flush=True)

init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
answer, total, floor = [], [], []
for i in range(runs + 2):
    t0 = time.perf_counter()
    p = subprocess.Popen([walj, "mcp"], cwd=d, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write((init + "\n").encode())
    p.stdin.flush()
    reply = p.stdout.readline()
    t1 = time.perf_counter()
    p.stdin.close()
    p.wait()
    t2 = time.perf_counter()
    assert json.loads(reply)["result"]["serverInfo"]["name"] == "walj", reply
    t3 = time.perf_counter()
    subprocess.run([walj, "--version"], cwd=d, env=env, stdout=subprocess.DEVNULL, check=True)
    t4 = time.perf_counter()
    if i >= 2:  # two warm-up turns
        answer.append((t1 - t0) * 1000)
        total.append((t2 - t0) * 1000)
        floor.append((t4 - t3) * 1000)


def p90(xs):
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


for name, xs in [("walj mcp: initialize answered", answer), ("walj mcp: answered and exited", total), ("walj --version", floor)]:
    print(f"{name:32} median {statistics.median(xs):7.2f} ms   p90 {p90(xs):7.2f} ms   ({len(xs)} runs)")
subprocess.run(["rm", "-rf", d])
