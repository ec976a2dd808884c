#!/usr/bin/env python3
"""Bash snapshots with and without the checkout's watcher, beside `git status`, in one run.

    python3 scripts/bench-watch.py [WALJ_BINARY] [SIZES] [RUNS]
    (defaults: the release build (scripts/walj-bin.sh), 1000,10000,100000, 12)

For each size: a git repository of N tracked files (20-line files, 100 per folder, as the cost
issue measured), `walj hook` SessionStart, then RUNS x (Bash PreToolUse + PostToolUse of `true`),
medians, in these set-ups:
  - watcher running: the watcher the SessionStart started, ready;
  - watcher configured but dead: a stale socket and a live process holding the claim (so no
    hook starts a new one): every snapshot connects, is refused and does the full scan;
  - no watcher: `[bash] watcher = false` (today's full scan), timed in turns with the dead row;
  - session in a subfolder (`--project <repo>/src`), watcher running;
and `git status --porcelain` of the same repository, RUNS times, in turns with the dead and
no-watcher rows (dead, none, git, dead, none, git ...), so the ratio "no watcher / git status"
is taken pair by pair, as the cost budget states it. Also the watcher's ready time (SessionStart
to its first answer). The new repository is flushed to disk (`sync`) before anything is timed:
the kernel writing back the build's 100,000 files would otherwise slow whatever runs first.
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WALJ = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else subprocess.run(
    [os.path.dirname(os.path.realpath(__file__)) + "/walj-bin.sh"], check=True, capture_output=True, text=True).stdout.strip())
SIZES = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1000,10000,100000").split(",")]
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 12

ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
           GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
ENV.pop("CLAUDE_PROJECT_DIR", None)


def build(root, n):
    for i in range(n):
        d = os.path.join(root, "src", f"m{i // 100:04d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:06d}.rs"), "w") as f:
            f.write("".join(f"pub fn f{j}() -> u32 {{ {i} }}\n" for j in range(20)))
    subprocess.run(["git", "init", "-q"], cwd=root, env=ENV, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, env=ENV, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, env=ENV, check=True)
    time.sleep(2.1)  # out of the racy-git window
    subprocess.run(["git", "status", "--porcelain"], cwd=root, env=ENV, check=True, capture_output=True)
    os.sync()


def payload(event, root, tid):
    return json.dumps({"hook_event_name": event, "session_id": "bench", "tool_name": "Bash",
                       "tool_use_id": tid, "cwd": root, "transcript_path": "/tmp/none.jsonl",
                       "source": "startup", "tool_input": {"command": "true"},
                       "tool_response": {"stdout": ""}}).encode()


def hook(project, data, env):
    subprocess.run([WALJ, "--project", project, "hook"], input=data, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pair(project, root, env, tid):
    t = time.perf_counter()
    hook(project, payload("PreToolUse", root, tid), env)
    subprocess.run(["true"])
    hook(project, payload("PostToolUse", root, tid), env)
    return (time.perf_counter() - t) * 1000


def median_pairs(project, root, env, tag):
    pair(project, root, env, f"{tag}-warm")
    xs = [pair(project, root, env, f"{tag}-{i}") for i in range(RUNS)]
    return statistics.median(xs)


def last_watch(root):
    with open(os.path.join(root, ".walj/journal.jsonl")) as f:
        lines = [json.loads(l) for l in f if '"snapshot"' in l]
    return lines[-1]["snapshot"].get("watch", "?") if lines else "?"


def ping(sock):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock)
    s.sendall(b'{"op":"ping"}\n')
    return s.recv(4096)


def main():
    rows = []
    for n in SIZES:
        work = tempfile.mkdtemp(prefix="walj-bench-watch.")
        rt = os.path.join(work, "rt")
        os.mkdir(rt, 0o700)
        root = os.path.join(work, "repo")
        os.mkdir(root)
        print(f"building {n} files in {root}", file=sys.stderr)
        build(root, n)
        env = dict(ENV, WALJ_RUNTIME_DIR=rt)

        def git_status():
            t = time.perf_counter()
            subprocess.run(["git", "status", "--porcelain"], cwd=root, env=ENV, check=True, capture_output=True)
            return (time.perf_counter() - t) * 1000
        # Watcher running.
        t = time.perf_counter()
        hook(root, payload("SessionStart", root, ""), env)
        sock = claim = None
        while time.perf_counter() - t < 60:
            names = os.listdir(rt)
            socks = [x for x in names if x.endswith(".sock")]
            if socks:
                sock = os.path.join(rt, socks[0])
                claim = sock[:-5] + ".claim"
                try:
                    if b"epoch" in ping(sock):
                        break
                except OSError:
                    pass
            time.sleep(0.005)
        ready = (time.perf_counter() - t) * 1000
        running = median_pairs(root, root, env, "run")
        w_run = last_watch(root)
        sub = median_pairs(os.path.join(root, "src"), root, env, "sub")
        w_sub = last_watch(os.path.join(root, "src"))
        # Configured but dead: kill it, leave its socket, hold its claim with a live process.
        pid = int(open(claim).read().split()[0])
        os.kill(pid, 9)
        time.sleep(0.2)
        holder = subprocess.Popen(["sleep", "3600"])
        start = open(f"/proc/{holder.pid}/stat").read().rsplit(")", 1)[1].split()[19]
        with open(claim, "w") as f:
            f.write(f"{holder.pid} {start}\n")
        if not os.path.exists(sock):
            s = socket.socket(socket.AF_UNIX)
            s.bind(sock)
            s.close()
        # Dead and no watcher in turns (one pair each, the config switched between them), so
        # neither row gets a quieter stretch of the machine, nor the moments after the kill.
        config = os.path.join(root, ".walj/config.toml")

        def setup(on):
            with open(config, "w") as f:
                f.write("" if on else "[bash]\nwatcher = false\n")

        dead_xs, none_xs, git, ratios, w_dead, w_none = [], [], [], [], "?", "?"
        for i in range(-1, RUNS):
            setup(True)
            t_dead = pair(root, root, env, f"dead-{i}")
            w_dead = last_watch(root)
            setup(False)
            t_none = pair(root, root, env, f"none-{i}")
            w_none = last_watch(root)
            t_git = git_status()
            if i >= 0:  # the first turn warms all three
                dead_xs.append(t_dead)
                none_xs.append(t_none)
                git.append(t_git)
                ratios.append(t_none / t_git)
        dead, none = statistics.median(dead_xs), statistics.median(none_xs)
        holder.kill()
        g = statistics.median(git)
        ratio = statistics.median(ratios)
        rows.append((n, g, ready, running, dead, none, ratio, sub, w_run, w_dead, w_none, w_sub))
        shutil.rmtree(work, ignore_errors=True)
    print(f"walj {WALJ}, medians of {RUNS}, load {os.getloadavg()[0]:.1f}")
    print("| tracked files | `git status` | watcher ready after SessionStart | Pre+Post, watcher running | "
          "watcher dead | no watcher | no watcher / `git status` | session in `src/`, watcher running |")
    print("|---|---|---|---|---|---|---|---|")
    for n, g, ready, running, dead, none, ratio, sub, *_ in rows:
        print(f"| {n:,} | {g:.1f} ms | {ready:.0f} ms | {running:.1f} ms | {dead:.1f} ms | {none:.1f} ms | "
              f"{ratio:.2f}x | {sub:.1f} ms |")
    for n, *rest in rows:
        print(f"  {n}: last snapshot said: running={rest[-4]!r} dead={rest[-3]!r} none={rest[-2]!r} sub={rest[-1]!r}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
