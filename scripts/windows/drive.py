#!/usr/bin/env python3
"""Runs walj.exe under Wine through what matters most on Windows (scripts/test-windows.sh).

Each check prints one line (`ok:` or `FAIL:`) with its figures; the exit status is 1 when any
failed. Paths are Wine's view of this machine's files (Z:\\...). Environment: WALJ_EXE (the
walj.exe to test), WALJ_WIN_HELPERS (the folder holding claude.exe and hold.exe), WINE (the
wine program), WALJ_WIN_WRITERS and WALJ_WIN_KILLS (the concurrent-writer figures).

- writers: concurrent `walj hook` processes append to one journal while some are killed at
  random moments: every hook that exited 0 (acknowledged) is in the journal, every line reads.
- torn: a torn tail and corrupted bytes in the journal: walj still reads every whole record.
- revert: a Write journaled through PreToolUse/PostToolUse is reverted and undone byte-exact
  (CRLF and non-UTF-8 bytes kept), through the checked rename.
- held: a file held open without delete sharing: revert fails with a clear message and loses
  nothing; once it is released, the revert goes through.
- liveness: the session's process (claude.exe, the hook's parent) is live while it runs and
  ended once it exits.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

WINE = os.environ.get("WINE", "wine")
WALJ = os.path.abspath(os.environ["WALJ_EXE"])
HELPERS = os.path.abspath(os.environ["WALJ_WIN_HELPERS"])
WRITERS = int(os.environ.get("WALJ_WIN_WRITERS", "48"))
KILLS = int(os.environ.get("WALJ_WIN_KILLS", "16"))
SEED = int(os.environ.get("WALJ_WIN_SEED", "7"))
SID = "4b79e617-7ef1-4ab2-a219-fbffcb6122b5"

failures = []


def win(path):
    """Wine's name of a Linux path (the Z: drive is /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def report(ok, name, detail):
    print(("ok:   " if ok else "FAIL: ") + name + ": " + detail, flush=True)
    if not ok:
        failures.append(name)


def env():
    e = dict(os.environ)
    e["WINEDEBUG"] = "-all"
    return e


def walj(args, cwd, stdin=None, timeout=120):
    return subprocess.run(
        [WINE, WALJ] + args,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=env(),
    )


def payload(project, event, **extra):
    p = {
        "session_id": SID,
        "transcript_path": win(os.path.join(project, "transcript.jsonl")),
        "cwd": win(project),
        "hook_event_name": event,
    }
    p.update(extra)
    return json.dumps(p).encode()


def write_pre(project, tid, rel, content):
    return payload(
        project,
        "PreToolUse",
        permission_mode="acceptEdits",
        tool_name="Write",
        tool_input={"file_path": win(os.path.join(project, rel)), "content": content},
        tool_use_id=tid,
    )


def write_post(project, tid, rel, content, original):
    return payload(
        project,
        "PostToolUse",
        permission_mode="acceptEdits",
        tool_name="Write",
        tool_input={"file_path": win(os.path.join(project, rel)), "content": content},
        tool_response={
            "type": "update" if original is not None else "create",
            "filePath": win(os.path.join(project, rel)),
            "content": content,
            "structuredPatch": [],
            "originalFile": original,
            "userModified": False,
        },
        tool_use_id=tid,
    )


def journal_records(project):
    """The journal's whole lines (parsed) and the count of lines that are not JSON."""
    path = os.path.join(project, ".walj", "journal.jsonl")
    good, bad = [], 0
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if not line.strip():
                continue
            try:
                good.append(json.loads(line))
            except ValueError:
                bad += 1
    return good, bad


def new_project(root, name):
    p = os.path.join(root, name)
    os.makedirs(p)
    return p


def check_writers(root):
    project = new_project(root, "writers")
    rng = random.Random(SEED)
    victims = set(rng.sample(range(WRITERS), min(KILLS, WRITERS)))
    procs = {}
    started = time.time()
    for i in range(WRITERS):
        data = write_pre(project, "toolu_w%03d" % i, "f%03d.txt" % i, "writer %d\n" % i)
        p = subprocess.Popen(
            [WINE, WALJ, "hook"],
            cwd=project,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env(),
        )
        p.stdin.write(data)
        p.stdin.close()
        procs[i] = p
        if i in victims:
            # Killed at a random moment of its life: before, during or after its append.
            time.sleep(rng.uniform(0.0, 0.4))
            p.kill()
    acked, killed_before_exit, failed = set(), 0, []
    for i, p in procs.items():
        code = p.wait(timeout=300)
        if code == 0:
            acked.add("toolu_w%03d" % i)
        elif i in victims:
            killed_before_exit += 1
        else:
            failed.append((i, code))
    records, bad = journal_records(project)
    journaled = {r.get("id") for r in records if r.get("op") == "intent"}
    lost = sorted(acked - journaled)
    reader = walj(["log", "--json", "--all"], project)
    readable = reader.returncode == 0
    report(
        not lost and not failed and readable,
        "writers",
        "%d writers, %d killed before they exited, %d acknowledged, %d intents journaled, "
        "acknowledged records lost: %d, hooks that exited non-zero unkilled: %d, unreadable lines: %d, "
        "walj log exit %d, %.1f s"
        % (WRITERS, killed_before_exit, len(acked), len(journaled), len(lost), len(failed), bad,
           reader.returncode, time.time() - started),
    )
    return project, acked


def check_torn(project, acked):
    path = os.path.join(project, ".walj", "journal.jsonl")
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    # Corrupt one whole line in the middle (bytes flipped) and tear the tail.
    mid = len(lines) // 2
    victim = lines[mid]
    lines[mid] = bytes(b ^ 0x5A for b in lines[mid])
    torn = b"\n".join(lines) + b'{"op":"intent","tool_use_id":"torn'
    with open(path, "wb") as f:
        f.write(torn)
    try:
        victim_id = json.loads(victim).get("id")
    except ValueError:
        victim_id = None
    r = walj(["log", "--json", "--all"], project)
    out = r.stdout.decode("utf-8", "replace")
    missing = [t for t in acked if t not in out and t != victim_id]
    # A hook appends after the torn tail: the tear is healed, the new record whole.
    h = walj(["hook"], project, write_pre(project, "toolu_after_tear", "after.txt", "after\n"))
    records, bad = journal_records(project)
    after = any(rec.get("id") == "toolu_after_tear" for rec in records)
    report(
        r.returncode == 0 and not missing and h.returncode == 0 and after,
        "torn",
        "one corrupted line and a torn tail: walj log exit %d, whole records missing from its output: %d, "
        "hook after the tear exit %d, its record whole: %s, unreadable lines left: %d"
        % (r.returncode, len(missing), h.returncode, after, bad),
    )


def journal_write(project, tid, rel, new):
    """A Write of `new` over rel's bytes, journaled as Claude Code would: Pre, the write, Post."""
    path = os.path.join(project, rel)
    original = None
    if os.path.exists(path):
        with open(path, "rb") as f:
            original = f.read().decode("utf-8", "replace")
    pre = walj(["hook"], project, write_pre(project, tid, rel, new.decode("utf-8", "replace")))
    with open(path, "wb") as f:
        f.write(new)
    post = walj(["hook"], project, write_post(project, tid, rel, new.decode("utf-8", "replace"), original))
    return pre.returncode, post.returncode


def entry_id(project, tid):
    r = walj(["log", "--json", "--all"], project)
    try:
        v = json.loads(r.stdout)
    except ValueError:
        return None
    for e in v if isinstance(v, list) else []:
        if isinstance(e, dict) and e.get("id") == tid:
            return e["id"]
    return None


def check_revert(root):
    project = new_project(root, "revert")
    original = b"line one\r\nline two \xe9\xff\r\n"
    with open(os.path.join(project, "a.txt"), "wb") as f:
        f.write(original)
    new = b"rewritten\r\n"
    codes = journal_write(project, "toolu_rv1", "a.txt", new)
    eid = entry_id(project, "toolu_rv1")
    rv = walj(["revert", eid or "missing-id", "--yes", "--force"], project)
    with open(os.path.join(project, "a.txt"), "rb") as f:
        after_revert = f.read()
    un = walj(["undo", "--yes", "--force"], project)
    with open(os.path.join(project, "a.txt"), "rb") as f:
        after_undo = f.read()
    ok = codes == (0, 0) and eid and rv.returncode == 0 and after_revert == original and un.returncode == 0 \
        and after_undo == new
    report(
        ok,
        "revert",
        "hooks %s, entry %s, revert exit %d (pre-image byte-exact: %s), undo exit %d (byte-exact: %s)%s"
        % (codes, eid, rv.returncode, after_revert == original, un.returncode, after_undo == new,
           "" if ok else "; revert said: " + (rv.stdout + rv.stderr).decode("utf-8", "replace")[-600:]
           + " undo said: " + (un.stdout + un.stderr).decode("utf-8", "replace")[-400:]),
    )


def check_held(root):
    project = new_project(root, "held")
    original = b"kept bytes\r\n"
    path = os.path.join(project, "h.txt")
    with open(path, "wb") as f:
        f.write(original)
    new = b"changed\r\n"
    journal_write(project, "toolu_h1", "h.txt", new)
    eid = entry_id(project, "toolu_h1")
    hold = subprocess.Popen(
        [WINE, os.path.join(HELPERS, "hold.exe"), win(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    held = hold.stdout.readline().strip() == b"held"
    rv = walj(["revert", eid or "missing-id", "--yes", "--force"], project)
    with open(path, "rb") as f:
        during = f.read()
    said = (rv.stdout + rv.stderr).decode("utf-8", "replace")
    hold.stdin.close()
    hold.wait(timeout=60)
    rv2 = walj(["revert", eid or "missing-id", "--yes", "--force"], project)
    with open(path, "rb") as f:
        after = f.read()
    # While held: either Windows let the rename through (Wine may not enforce sharing) and the
    # bytes are the pre-image, or it failed, said so, and the file is untouched.
    refused = rv.returncode != 0 and during == new and "another program may hold the file open" in said
    went_through = rv.returncode == 0 and during == original
    ok = held and eid is not None and (refused or went_through) and after == original
    report(
        ok,
        "held",
        "held: %s, revert while held exit %d (%s), after release exit %d, pre-image byte-exact: %s%s"
        % (held, rv.returncode, "refused, file untouched" if refused else
           "went through" if went_through else "bytes neither new nor pre-image", rv2.returncode, after == original,
           "" if ok else "; walj said: " + said[-600:]),
    )
    if refused:
        print("      walj said while held: " + " ".join(said.split())[:300], flush=True)


def session_state(project):
    r = walj(["sessions", "list", "--json"], project)
    try:
        v = json.loads(r.stdout)
    except ValueError:
        return "unreadable: " + r.stdout.decode("utf-8", "replace")[:200] + r.stderr.decode("utf-8", "replace")[:200]
    rows = v if isinstance(v, list) else v.get("sessions", [])
    for s in rows:
        if s.get("session") == SID:
            return s.get("state") or json.dumps(s)[:200]
    return "not listed: " + json.dumps(v)[:300]


def check_liveness(root):
    project = new_project(root, "live")
    pfile = os.path.join(project, "payload.json")
    with open(pfile, "wb") as f:
        f.write(payload(project, "SessionStart", source="startup"))
    claude = subprocess.Popen(
        [WINE, os.path.join(HELPERS, "claude.exe"), WALJ, win(pfile), "15000"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    # The hook has run once the journal names the session.
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(os.path.join(project, ".walj", "journal.jsonl")):
        time.sleep(0.2)
    time.sleep(1.0)
    while_running = session_state(project)
    claude.wait(timeout=120)
    after_exit = session_state(project)
    ok = while_running == "live" and after_exit != "live" and after_exit in ("crashed", "ended", "dead", "exited")
    report(ok, "liveness", "state while claude.exe runs: %s; after it exited: %s" % (while_running, after_exit))


def main():
    root = tempfile.mkdtemp(prefix="walj-win-")
    try:
        project, acked = check_writers(root)
        check_torn(project, acked)
        check_revert(root)
        check_held(root)
        check_liveness(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("checks failed: %d (%s)" % (len(failures), ", ".join(failures) or "none"), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
