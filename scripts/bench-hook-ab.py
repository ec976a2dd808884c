#!/usr/bin/env python3
"""Two walj binaries' hooks, timed in turns (round robin), to find a hook regression.

    scripts/bench-hook-ab.py OLD_WALJ NEW_WALJ [RUNS=300] [BIG_MB=314]

For each binary, six set-ups, each in its own fresh git project with a 10 KB file, run
in turns so that a busier stretch of the machine weighs on every set-up alike:
  - start-up: `walj hook` with the payload `{}` (nothing to journal)
  - Edit PreToolUse, new pre-image each run, small journal
  - Edit PostToolUse, new post-image each run, small journal
  - Edit PreToolUse on a journal of BIG_MB MB (written and synced before timing)
  - Bash PreToolUse + PostToolUse of `wc -c` (two processes, timed together), in a project
    with one commit, nothing changed by the command
Prints the median wall time (process spawn included) per set-up and binary, and each
binary's big/small journal ratio (budget <= 1.2x). With WALJ_BENCH_FLOOR=FLOOR (built by
`rustc -O -o FLOOR scripts/hook-floor.rs`: read stdin, append one line, fdatasync) the floor
runs in the same turns on the Edit PreToolUse payload, and each binary's Edit Pre / floor
ratio is printed (the file-hook budget: <= 1.3x). Several floors, separated by `:`, run side by
side (`WALJ_BENCH_FLOOR=/tmp/floor:/tmp/floor-nomain`, the second built with `--cfg nomain`:
no std runtime start, as walj's own binary on Linux). Release builds only make sense here:
    cargo build --release --locked && git worktree add /tmp/old REV && (cd /tmp/old && cargo build --release)
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

if len(sys.argv) < 3:
    sys.exit(__doc__)
bins = {"old": os.path.realpath(sys.argv[1]), "new": os.path.realpath(sys.argv[2])}
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 300
big_mb = int(sys.argv[4]) if len(sys.argv) > 4 else 314
text = "".join(f"fn function_{i}() -> u32 {{ {i} }}\n" for i in range(400))  # ~10 KB
env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
env.pop("CLAUDE_PROJECT_DIR", None)
made = []


def project():
    d = tempfile.mkdtemp(prefix="walj-hook-ab.")
    made.append(d)
    os.makedirs(d + "/src")
    open(d + "/src/lib.rs", "w").write(text)
    subprocess.run(["git", "init", "-q"], cwd=d, check=True, env=env)
    return d


def payload(d, event, i=0):
    if event == "{}":
        return b"{}"
    if event.startswith("Bash"):
        return json.dumps({
            "session_id": "bench-session-0000", "transcript_path": "/nonexistent/t.jsonl", "cwd": d,
            "hook_event_name": event[4:], "tool_name": "Bash", "tool_use_id": f"toolu_bench_bash_{i}",
            "tool_input": {"command": "wc -c src/lib.rs", "description": "Count"},
            "tool_response": {"stdout": "1 src/lib.rs", "stderr": "", "interrupted": False}}).encode()
    return json.dumps({
        "session_id": "bench-session-0000", "transcript_path": "/nonexistent/t.jsonl", "cwd": d,
        "hook_event_name": event, "tool_name": "Edit", "tool_use_id": "toolu_bench_0",
        "tool_input": {"file_path": d + "/src/lib.rs", "old_string": "fn function_1()",
                       "new_string": "fn function_one()"},
        "tool_response": {"filePath": d + "/src/lib.rs"}}).encode()


def hook(b, d, p):
    subprocess.run([bins[b], "hook"], input=p, cwd=d, check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


try:
    setups = {}
    for b in bins:
        for name, event in [("start-up", "{}"), ("Edit Pre", "PreToolUse"), ("Edit Post", "PostToolUse"),
                            ("Pre, big journal", "PreToolUse"), ("Bash Pre + Post", "Bash")]:
            d = project()
            p = payload(d, event)
            if event == "Bash":
                subprocess.run(["git", "add", "."], cwd=d, check=True, env=env)
                subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"],
                               cwd=d, check=True, env=env)
                for ph in ("BashPreToolUse", "BashPostToolUse"):
                    hook(b, d, payload(d, ph))
            else:
                hook(b, d, p)
            if name == "Pre, big journal":
                j = d + "/.walj/journal.jsonl"
                line = open(j, "rb").readline()
                with open(j, "ab") as f:
                    chunk = line * 10000
                    while f.tell() < big_mb * 1_000_000:
                        f.write(chunk)
                    f.flush()
                    os.fsync(f.fileno())
            setups[(b, name)] = (d, p)
    floors = [f for f in os.environ.get("WALJ_BENCH_FLOOR", "").split(":") if f]
    for f in floors:
        bins[f] = os.path.realpath(f)
        d = project()
        setups[(f, "Edit Pre")] = (d, payload(d, "PreToolUse"))
    subprocess.run(["sync"])
    time.sleep(2)
    times = {k: [] for k in setups}
    for i in range(runs):
        for k, (d, p) in setups.items():
            if k[1] == "Bash Pre + Post":
                pre, post = payload(d, "BashPreToolUse", i + 1), payload(d, "BashPostToolUse", i + 1)
                t = time.perf_counter()
                hook(k[0], d, pre)
                hook(k[0], d, post)
                times[k].append(time.perf_counter() - t)
                continue
            if k[1] != "start-up":
                open(d + "/src/lib.rs", "w").write(text + f"// run {i}\n")
            t = time.perf_counter()
            hook(k[0], d, p)
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"| hook (median of {runs}, in turns; load {os.getloadavg()[0]:.1f}) | old | new |")
    print("|---|---|---|")
    for name in ["start-up", "Edit Pre", "Edit Post", "Pre, big journal", "Bash Pre + Post"]:
        label = {"Pre, big journal": f"Edit Pre, {big_mb} MB journal",
                 "start-up": "start-up (`{}`)"}.get(name, name)
        print(f"| {label} | {med[('old', name)]:.2f} ms | {med[('new', name)]:.2f} ms |")
    print("| big / small journal | " + " | ".join(
        f"{med[(b, 'Pre, big journal')] / med[(b, 'Edit Pre')]:.2f}x" for b in ("old", "new")) + " |")
    for fl in floors:
        f = med[(fl, "Edit Pre")]
        name = os.path.basename(fl)
        print(f"| append + fdatasync floor `{name}`, same payload | {f:.2f} ms | {f:.2f} ms |")
        print(f"| Edit Pre / `{name}` | " + " | ".join(
            f"{med[(b, 'Edit Pre')] / f:.2f}x" for b in ("old", "new")) + " |")
finally:
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
