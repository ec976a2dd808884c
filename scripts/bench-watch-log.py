#!/usr/bin/env python3
"""The watcher's log (`.walj/observed.jsonl`) while a large file is rewritten, for one or more
walj binaries side by side in one run.

    python3 scripts/bench-watch-log.py [WALJ_BINARY ...] [--mb 20] [--rewrites 30] [--chunk-kb 4]
        [--budget-kb 100] [--rounds 2]
    (default binary: the release build, scripts/walj-bin.sh)

For each binary, in turns (binary A, B, A, B … for `--rounds`, default 2): a git repository
with one tracked 20 MB file, `walj hook` SessionStart (which starts the checkout's watcher),
the watcher ready, then the file rewritten 30 times in 4 KiB writes (unbuffered, one
`write(2)` each: a program's default buffer), 2.5 s at the end for the last batch, and the log's growth measured:
bytes and lines added (the rotated `.1` counted too) and the watcher's CPU time (utime +
stime of its process, from /proc). Exits 1 when the last binary's growth is over the budget
(100 KB: the watcher's log budget for this case).
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
opts = {"--mb": 20, "--rewrites": 30, "--budget-kb": 100, "--rounds": 2, "--chunk-kb": 4}
bins = []
i = 0
while i < len(args):
    if args[i] in opts:
        opts[args[i]] = int(args[i + 1])
        i += 2
    else:
        bins.append(os.path.realpath(args[i]))
        i += 1
if not bins:
    here = os.path.dirname(os.path.realpath(__file__))
    bins = [subprocess.run([here + "/walj-bin.sh"], check=True, capture_output=True, text=True).stdout.strip()]

ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
           GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
ENV.pop("CLAUDE_PROJECT_DIR", None)
ENV.pop("WALJ_JOURNAL", None)
TICKS = os.sysconf("SC_CLK_TCK")


def log_size(root):
    total, lines = 0, 0
    for name in ("observed.jsonl", "observed.jsonl.1"):
        p = os.path.join(root, ".walj", name)
        if os.path.exists(p):
            with open(p, "rb") as f:
                data = f.read()
            total += len(data)
            lines += data.count(b"\n")
    return total, lines


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICKS


def wait_ready(rt):
    """The watcher's pid once it answers a ping (its first crawl is over)."""
    t = time.time()
    while time.time() - t < 30:
        for name in os.listdir(rt):
            if not name.endswith(".sock"):
                continue
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(os.path.join(rt, name))
                s.sendall(b'{"op":"ping"}\n')
                answer = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
                s.close()
                if b"epoch" in answer:
                    with open(os.path.join(rt, name[:-5] + ".claim")) as f:
                        return int(f.read().split()[0])
            except OSError:
                pass
        time.sleep(0.05)
    sys.exit("no watcher came up")


def one(walj, mb, rewrites):
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as rt:
        os.chmod(rt, 0o700)
        env = dict(ENV, WALJ_RUNTIME_DIR=rt)
        chunk = os.urandom(opts["--chunk-kb"] << 10)
        big = os.path.join(root, "big.bin")

        def rewrite():
            with open(big, "wb", buffering=0) as f:
                for _ in range((mb << 20) // len(chunk)):
                    f.write(chunk)

        rewrite()
        subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "init"], cwd=root, env=env, check=True)
        start = json.dumps({"hook_event_name": "SessionStart", "session_id": "bench-log", "cwd": root,
                            "transcript_path": "/tmp/none.jsonl", "source": "startup"}).encode()
        subprocess.run([walj, "--project", root, "hook"], input=start, env=env, cwd=root, check=True,
                       capture_output=True)
        pid = wait_ready(rt)
        time.sleep(1.5)  # the start-up lines written
        size0, lines0 = log_size(root)
        cpu0 = cpu_s(pid)
        t = time.time()
        for _ in range(rewrites):
            rewrite()
        took = time.time() - t
        time.sleep(2.5)  # the last batch written (at least once a second)
        size1, lines1 = log_size(root)
        cpu1 = cpu_s(pid)
        os.kill(pid, 15)
        return size1 - size0, lines1 - lines0, cpu1 - cpu0, took


def main():
    mb, rewrites, budget = opts["--mb"], opts["--rewrites"], opts["--budget-kb"] * 1000
    results = {b: [] for b in bins}
    for _ in range(opts["--rounds"]):
        for b in bins:
            results[b].append(one(b, mb, rewrites))
    print(f"{mb} MB file rewritten {rewrites} times ({opts['--chunk-kb']} KiB writes), watcher log growth, {opts['--rounds']} rounds in turns")
    print(f"{'binary':<50} {'bytes added':>12} {'lines':>8} {'watcher CPU s':>14} {'rewrites s':>11}")
    for b in bins:
        for size, lines, cpu, took in results[b]:
            print(f"{b[-50:]:<50} {size:>12} {lines:>8} {cpu:>14.2f} {took:>11.2f}")
    worst = max(r[0] for r in results[bins[-1]])
    print(f"budget {budget} bytes: {'met' if worst <= budget else 'NOT met'} by {bins[-1]} (worst {worst})")
    return 0 if worst <= budget else 1


if __name__ == "__main__":
    sys.exit(main())
