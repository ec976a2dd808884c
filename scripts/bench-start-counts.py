#!/usr/bin/env python3
"""Start-up cost of `walj hook` builds in counts the machine's load does not change.

    scripts/bench-start-counts.py LABEL=BINARY [LABEL=BINARY ...] [--runs N]

Each binary runs the Edit PreToolUse payload (a new pre-image each run, as in
`scripts/bench-hook-ab.py`) in its own fresh git project, in turns, N times (default 40), and
the script prints per binary: instructions of one run under `valgrind --tool=callgrind`
(process start included: the dynamic loader's work too), median minor page faults and median
system calls (`strace -f -c`, one run), its relative relocations (`readelf -r`: what a
position-independent build applies at every start), its size, and the median wall time of the
turns (that one does move with load). A floor built from `scripts/hook-floor.rs` (append one
line, fdatasync) may be one of the binaries: it reads stdin and writes `floor-journal.jsonl`
in its working folder, which is the project.
"""
import json, os, re, statistics, subprocess, sys, tempfile, time

args = [a for a in sys.argv[1:] if "=" in a and not a.startswith("--")]
runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 40
if not args:
    sys.exit(__doc__)
bins = [(a.split("=", 1)[0], os.path.realpath(a.split("=", 1)[1])) for a in args]
env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
env.pop("CLAUDE_PROJECT_DIR", None)
text = "".join(f"fn function_{i}() -> u32 {{ {i} }}\n" for i in range(400))


def project():
    d = tempfile.mkdtemp(prefix="walj-start-counts.")
    os.makedirs(d + "/src")
    open(d + "/src/lib.rs", "w").write(text)
    subprocess.run(["git", "init", "-q"], cwd=d, check=True, env=env)
    return d


def payload(d):
    return json.dumps({
        "session_id": "bench-session-0000", "transcript_path": "/nonexistent/t.jsonl", "cwd": d,
        "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_bench_0",
        "tool_input": {"file_path": d + "/src/lib.rs", "old_string": "fn function_1()",
                       "new_string": "fn function_one()"}}).encode()


def argv(b):
    return [b] if "floor" in os.path.basename(b) else [b, "hook"]


def once(b, d, i, wrap=()):
    with open(d + "/src/lib.rs", "a") as f:
        f.write(f"// run {i}\n")
    r, w = os.pipe()
    t = time.perf_counter()
    p = subprocess.Popen(list(wrap) + argv(b), cwd=d, env=env, stdin=r, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    os.close(r)
    os.write(w, payload(d))
    os.close(w)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    return wall, ru.ru_minflt, err


projects = {label: project() for label, _ in bins}
walls = {label: [] for label, _ in bins}
faults = {label: [] for label, _ in bins}
for i in range(runs):
    for label, b in bins:
        wall, minflt, _ = once(b, projects[label], i)
        walls[label].append(wall)
        faults[label].append(minflt)
rows = []
for label, b in bins:
    d = projects[label]
    _, _, err = once(b, d, runs, ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"))
    m = re.search(r"Collected : (\d+)", err)
    instr = int(m.group(1)) if m else None
    _, _, err = once(b, d, runs + 1, ("strace", "-f", "-c", "-o", "/dev/stderr"))
    total = [ln.split() for ln in err.splitlines() if ln.split()[-1:] == ["total"]]
    sys_calls = int(total[-1][3]) if total and len(total[-1]) > 4 else None
    rel = subprocess.run(["readelf", "-r", b], capture_output=True, text=True).stdout
    relative = len(re.findall(r"R_X86_64_RELATIVE", rel))
    rows.append((label, instr, statistics.median(faults[label]), sys_calls, relative,
                 os.path.getsize(b), statistics.median(walls[label]) * 1000))
print(f"Edit PreToolUse, {runs} runs each in turns; load average {os.getloadavg()[0]:.1f}")
print("| binary | instructions (callgrind) | minor faults (median) | system calls | relative relocations | size | wall, median (ms) |")
print("|---|---|---|---|---|---|---|")
for label, instr, flt, sc, rel, size, wall in rows:
    print(f"| {label} | {instr:,} | {flt:.0f} | {sc} | {rel:,} | {size / 1e6:.1f} MB | {wall:.2f} |")
for d in projects.values():
    subprocess.run(["rm", "-rf", d])
