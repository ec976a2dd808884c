//! The per-checkout watcher of Bash snapshots (src/watch.rs, src/watch/server.rs, its use in
//! src/bashsnap.rs): the real binary as hook and as watcher, real git repositories, real
//! inotify. Each test has its own runtime folder (`WALJ_RUNTIME_DIR`), so its watcher is its
//! own; a watcher leaves within a second of its work tree being removed.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{Repo, walj_bin};
use serde_json::{Value, json};

const SESSION: &str = "5e551011-watch-test";
/// What the snapshot summary says when the watcher named the changes.
const WATCHED: &str = "watcher";
/// The claim of the one reconciliation that runs for a checkout.
const RECONCILE_CLAIM: &str = ".walj/bash/reconcile.claim";

struct W {
    repo: Repo,
    rt: Arc<tempfile::TempDir>,
    env: Vec<(String, String)>,
}

impl W {
    fn new(files: &[(&str, &str)]) -> W {
        W::with(Repo::new(files))
    }

    fn with(repo: Repo) -> W {
        let rt = tempfile::tempdir().unwrap();
        // The watcher refuses a runtime folder others can enter.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(rt.path(), fs::Permissions::from_mode(0o700)).unwrap();
        W::with_rt(repo, Arc::new(rt))
    }

    fn with_rt(repo: Repo, rt: Arc<tempfile::TempDir>) -> W {
        let w = W { repo, rt, env: Vec::new() };
        // Generous for a loaded test machine: a timeout falls back, which would hide what the
        // test checks. The default is 10 ms.
        w.config("[bash]\nwatch_ms = 2000\n");
        w
    }

    fn root(&self) -> &Path {
        &self.repo.root
    }

    fn config(&self, text: &str) {
        fs::create_dir_all(self.root().join(".walj")).unwrap();
        fs::write(self.root().join(".walj/config.toml"), text).unwrap();
    }

    /// Runs `walj hook` (the test process is its Claude Code: the session stays live); returns
    /// the hook process's pid.
    fn hook_with(&self, payload: &Value, parent_timeout: bool) -> u32 {
        let mut c = if parent_timeout {
            let mut c = Command::new("timeout");
            c.arg("20").arg(walj_bin());
            c
        } else {
            Command::new(walj_bin())
        };
        c.arg("--project").arg(self.root()).arg("hook").current_dir(self.root());
        c.env("WALJ_RUNTIME_DIR", self.rt.path()).env_remove("CLAUDE_PROJECT_DIR").env_remove("WALJ_JOURNAL");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "walj hook: {}", String::from_utf8_lossy(&out.stderr));
        pid
    }

    fn hook(&self, payload: &Value) -> u32 {
        self.hook_with(payload, false)
    }

    fn payload(&self, event: &str, id: &str) -> Value {
        json!({
            "hook_event_name": event,
            "session_id": SESSION,
            "transcript_path": "/tmp/none.jsonl",
            "cwd": self.root(),
            "tool_name": "Bash",
            "tool_use_id": id,
            "tool_input": {"command": format!("cmd {id}"), "description": "test"},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
            "source": "startup",
        })
    }

    /// A payload Claude Code 2.1.328 sent (`shared/fixtures/hooks/real-2.1.328-killed-mid-bash/`,
    /// file `name`), for this test's checkout and session; a Bash call's id and command as given.
    fn real(&self, name: &str, id: &str, command: &str) -> Value {
        let path = crate::common::fixtures().join("hooks/real-2.1.328-killed-mid-bash").join(name);
        let mut p: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        p["cwd"] = json!(self.root());
        p["session_id"] = json!(SESSION);
        p["transcript_path"] = json!("/tmp/none.jsonl");
        if p.get("tool_use_id").is_some() {
            p["tool_use_id"] = json!(id);
            p["tool_input"]["command"] = json!(command);
        }
        p
    }

    fn start(&self) {
        self.hook(&self.payload("SessionStart", ""));
    }

    fn pre(&self, id: &str) {
        self.hook(&self.payload("PreToolUse", id));
    }

    fn post(&self, id: &str) {
        self.hook(&self.payload("PostToolUse", id));
    }

    /// Runs the Stop hook; returns its pid.
    fn stop(&self) -> u32 {
        let mut p = self.payload("Stop", "");
        p["stop_hook_active"] = json!(false);
        self.hook(&p)
    }

    /// Waits until no reconciliation runs or waits for one (neither its request nor its claim
    /// is left).
    fn wait_reconciled(&self) {
        let (again, claim) = (self.root().join(".walj/bash/reconcile.again"), self.root().join(RECONCILE_CLAIM));
        let t = Instant::now();
        while again.exists() || claim.exists() {
            assert!(t.elapsed() < Duration::from_secs(30), "the reconciliation after Stop did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lines(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.root().join(".walj/journal.jsonl")).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// The Post record of command `id` and its snapshot summary.
    fn summary(&self, id: &str) -> Value {
        self.lines()
            .into_iter()
            .find(|r| r["id"] == json!(id) && r.get("snapshot").is_some())
            .map(|r| r["snapshot"].clone())
            .unwrap_or_else(|| panic!("no snapshot summary for {id}"))
    }

    /// Child entries of command `id`: path → after blob id.
    fn children(&self, id: &str) -> Vec<(String, Value)> {
        let mut v: Vec<(String, Value)> = self
            .lines()
            .into_iter()
            .filter(|r| r["parent"] == json!(id))
            .map(|r| (r["path"].as_str().unwrap_or("").to_string(), r["after"].clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn socket(&self) -> PathBuf {
        self.places(self.root()).0
    }

    /// (socket, claim) of the watcher of the checkout at `root` in this test's runtime folder.
    fn places(&self, root: &Path) -> (PathBuf, PathBuf) {
        use sha2::Digest;
        let canon = fs::canonicalize(root).unwrap();
        let hex: String =
            sha2::Sha256::digest(canon.to_string_lossy().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        let key = &hex[..16];
        (self.rt.path().join(format!("w-{key}.sock")), self.rt.path().join(format!("w-{key}.claim")))
    }

    /// Waits until the watcher answers on its socket (it is ready once it listens).
    fn wait_ready(&self) -> u32 {
        let (sock, claim) = self.places(self.root());
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if std::os::unix::net::UnixStream::connect(&sock).is_ok()
                && let Some(pid) =
                    fs::read_to_string(&claim).ok().and_then(|c| c.split_whitespace().next()?.parse().ok())
            {
                // Listening comes before the first crawl ends; a ping is answered after it.
                // (A watcher just killed may still hold its socket a moment: errors are "not yet".)
                let mut a = String::new();
                let asked = std::os::unix::net::UnixStream::connect(&sock).and_then(|mut s| {
                    s.write_all(b"{\"op\":\"ping\"}\n")?;
                    std::io::Read::read_to_string(&mut s, &mut a)
                });
                if asked.is_ok() && a.contains("epoch") {
                    return pid;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let names: Vec<String> = fs::read_dir(self.rt.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let claim_text = fs::read_to_string(&claim).unwrap_or_default();
        let stat = claim_text
            .split_whitespace()
            .next()
            .map(|p| fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
            .unwrap_or_default();
        panic!("no watcher came up at {}: {names:?}, claim {claim_text:?}, its stat {stat:?}", sock.display());
    }

    fn doctor(&self) -> String {
        let out =
            crate::common::walj_at(self.root()).arg("doctor").env("WALJ_RUNTIME_DIR", self.rt.path()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }
}

fn blob(content: &str) -> Value {
    json!(walj::store::blob_id(content.as_bytes()))
}

fn sh(root: &Path, cmd: &str) {
    assert!(Command::new("sh").arg("-c").arg(cmd).current_dir(root).status().unwrap().success());
}

fn kill(pid: u32, sig: &str) {
    assert!(Command::new("kill").arg(sig).arg(pid.to_string()).status().unwrap().success());
    if sig == "-9" {
        // Gone (or a zombie nobody reaps) before the test goes on: until then it holds its socket.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            // A zombie leader whose other threads still exit holds the socket: wait for them too.
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let threads = fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
            if stat.rsplit_once(')').is_none_or(|(_, rest)| rest.trim_start().starts_with('Z') && threads <= 1) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{pid} survived kill -9");
    }
}

/// The barrier: a change made 1 ms before the Post reaches it through the watcher, in every
/// one of 1,000 runs (`WALJ_BARRIER_RUNS` to change the count).
#[test]
fn a_change_made_1ms_before_the_post_is_journaled_every_time() {
    let runs: usize = std::env::var("WALJ_BARRIER_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let w = W::new(&[("a.txt", "v\n"), ("src/lib.rs", "x\n")]);
    w.start();
    w.wait_ready();
    for i in 0..runs {
        let id = format!("toolu_b{i}");
        w.pre(&id);
        fs::write(w.root().join("a.txt"), format!("v{i}\n")).unwrap();
        std::thread::sleep(Duration::from_millis(1));
        w.post(&id);
    }
    let lines = w.lines();
    let mut missed = Vec::new();
    let mut watched = 0;
    for i in 0..runs {
        let id = format!("toolu_b{i}");
        let kids: Vec<&Value> = lines.iter().filter(|r| r["parent"] == json!(id)).collect();
        if kids.len() != 1 || kids[0]["path"] != json!("a.txt") || kids[0]["after"] != blob(&format!("v{i}\n")) {
            missed.push(i);
        }
        let s = lines.iter().find(|r| r["id"] == json!(id) && r.get("snapshot").is_some()).unwrap();
        if s["snapshot"]["watch"] == json!(WATCHED) {
            watched += 1;
        }
    }
    assert!(missed.is_empty(), "runs whose change was not journaled: {missed:?}");
    // Not a full scan in disguise: every Post asked the watcher.
    assert_eq!(watched, runs, "Posts that used the watcher");
}

/// inotify is not recursive: a folder a command makes is watched and crawled when seen, so
/// files made in it before its watch existed are changes too.
#[test]
fn new_folders_and_their_files_are_crawled() {
    let w = W::new(&[("a.txt", "v\n")]);
    w.start();
    w.wait_ready();
    w.pre("toolu_n");
    sh(w.root(), "mkdir -p n/m/o && echo x > n/m/o/f.txt && echo y > n/g.txt && mkdir e && mv n e/");
    w.post("toolu_n");
    assert_eq!(w.summary("toolu_n")["watch"], json!(WATCHED));
    let kids = w.children("toolu_n");
    assert_eq!(
        kids,
        vec![("e/n/g.txt".to_string(), blob("y\n")), ("e/n/m/o/f.txt".to_string(), blob("x\n"))],
        "{kids:?}"
    );
    // A folder moved out of the tree: its tracked files are gone, with no event of their own.
    w.repo.write("d/k.txt", "k\n");
    w.repo.commit("d");
    w.pre("toolu_d0");
    w.post("toolu_d0");
    w.pre("toolu_d");
    let out = tempfile::tempdir().unwrap();
    fs::rename(w.root().join("d"), out.path().join("d")).unwrap();
    w.post("toolu_d");
    let kids = w.children("toolu_d");
    assert_eq!(kids, vec![("d/k.txt".to_string(), Value::Null)], "{kids:?}");
}

/// kill -9 of the watcher between Pre and Post: the Post finds a stale socket and does the
/// full scan. A watcher restarted between Pre and Post (another session started one) has a
/// new epoch: the Post does the full scan too. Then the new one serves.
#[test]
fn a_killed_or_restarted_watcher_means_a_full_scan() {
    let w = W::new(&[("a.txt", "v\n")]);
    w.start();
    let pid = w.wait_ready();
    w.pre("toolu_k");
    kill(pid, "-9");
    fs::write(w.root().join("a.txt"), "killed\n").unwrap();
    w.post("toolu_k");
    assert_eq!(w.children("toolu_k"), vec![("a.txt".to_string(), blob("killed\n"))]);
    let why = w.summary("toolu_k")["watch"].as_str().unwrap().to_string();
    assert!(why.contains("stale"), "{why}");
    let d = w.doctor();
    assert!(d.contains("fell back to a full scan: stale watcher socket"), "{d}");

    // A new one (the dead one's claim is taken over); killed and replaced mid-command.
    w.start();
    let pid2 = w.wait_ready();
    assert_ne!(pid, pid2);
    w.pre("toolu_r");
    kill(pid2, "-9");
    w.start();
    let pid3 = w.wait_ready();
    assert_ne!(pid3, pid2);
    fs::write(w.root().join("a.txt"), "restarted\n").unwrap();
    w.post("toolu_r");
    let s = w.summary("toolu_r");
    assert!(s["watch"].as_str().unwrap().contains("restarted"), "{s}");
    assert_eq!(w.children("toolu_r"), vec![("a.txt".to_string(), blob("restarted\n"))]);

    w.pre("toolu_k3");
    fs::write(w.root().join("a.txt"), "again\n").unwrap();
    w.post("toolu_k3");
    assert_eq!(w.summary("toolu_k3")["watch"], json!(WATCHED));
    assert_eq!(w.children("toolu_k3"), vec![("a.txt".to_string(), blob("again\n"))]);
}

/// A real IN_Q_OVERFLOW: the watcher is stopped (SIGSTOP) while more events than the kernel
/// queues happen; after it resumes, the Post cannot use it and scans.
#[test]
fn an_overflowed_queue_means_a_full_scan() {
    let queued: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(16384);
    let w = W::new(&[("a.txt", "v\n"), (".gitignore", "*.flood\n")]);
    w.start();
    let pid = w.wait_ready();
    w.pre("toolu_o");
    kill(pid, "-STOP");
    for i in 0..queued + 1000 {
        fs::write(w.root().join(format!("{i}.flood")), b"").unwrap();
    }
    fs::write(w.root().join("a.txt"), "after overflow\n").unwrap();
    kill(pid, "-CONT");
    // It works through what the kernel queued (every name is asked about git's ignore rules).
    std::thread::sleep(Duration::from_millis(3000));
    w.post("toolu_o");
    let s = w.summary("toolu_o");
    assert!(s["watch"].as_str().unwrap().contains("overflowed"), "{s}");
    assert_eq!(w.children("toolu_o"), vec![("a.txt".to_string(), blob("after overflow\n"))]);
}

/// Over the watch limit (lowered to one folder): every snapshot is a full scan, and says so.
#[test]
fn over_the_watch_limit_every_snapshot_is_a_full_scan() {
    let mut w = W::new(&[("a.txt", "v\n"), ("s/b.txt", "b\n"), ("s/t/c.txt", "c\n")]);
    w.env.push(("WALJ_WATCH_MAX_DIRS".into(), "1".into()));
    w.start();
    w.wait_ready();
    w.pre("toolu_l");
    fs::write(w.root().join("s/t/c.txt"), "limit\n").unwrap();
    w.post("toolu_l");
    let s = w.summary("toolu_l");
    assert!(s["watch"].as_str().unwrap().contains("watch limit"), "{s}");
    assert_eq!(w.children("toolu_l"), vec![("s/t/c.txt".to_string(), blob("limit\n"))]);
    assert!(w.doctor().contains("watch limit"), "{}", w.doctor());
}

/// A socket file nobody listens on (a watcher that died long ago): the hook says so, scans,
/// and starts a watcher that replaces it.
#[test]
fn a_stale_socket_is_replaced() {
    let w = W::new(&[("a.txt", "v\n")]);
    {
        let _dead = std::os::unix::net::UnixListener::bind(w.socket()).unwrap();
    }
    assert!(w.socket().exists());
    w.pre("toolu_s");
    fs::write(w.root().join("a.txt"), "s\n").unwrap();
    w.post("toolu_s");
    let s = w.summary("toolu_s");
    // The Pre found the stale socket (and the Post too, when the new watcher was not up yet).
    let pre_why = s.get("watch_pre").unwrap_or(&s["watch"]);
    assert!(pre_why.as_str().unwrap().contains("stale"), "{s}");
    assert_eq!(w.children("toolu_s"), vec![("a.txt".to_string(), blob("s\n"))]);
    w.wait_ready();
    w.pre("toolu_s2");
    fs::write(w.root().join("a.txt"), "s2\n").unwrap();
    w.post("toolu_s2");
    assert_eq!(w.summary("toolu_s2")["watch"], json!(WATCHED));
    assert_eq!(w.children("toolu_s2"), vec![("a.txt".to_string(), blob("s2\n"))]);
}

/// A socket that answers for another checkout is never believed.
#[test]
fn another_checkouts_watcher_is_not_used() {
    let a = W::new(&[("a.txt", "v\n")]);
    let b = W::with_rt(Repo::new(&[("b.txt", "v\n")]), a.rt.clone());
    b.start();
    b.wait_ready();
    // b's watcher, reachable under a's socket name.
    fs::hard_link(b.socket(), a.socket()).unwrap();
    a.pre("toolu_x");
    fs::write(a.root().join("a.txt"), "x\n").unwrap();
    a.post("toolu_x");
    let s = a.summary("toolu_x");
    assert!(s["watch"].as_str().unwrap().contains("another checkout"), "{s}");
    assert_eq!(a.children("toolu_x"), vec![("a.txt".to_string(), blob("x\n"))]);
}

/// The full scan after Stop finds what the watcher missed (a write through a hard link
/// outside the tree: inotify reports it in the other folder only), journals it as an uncertain
/// side effect of the last command, and doctor counts the fault. The scan is not the Stop
/// hook's: it runs after it, detached, one at a time per checkout (its claim).
#[test]
fn reconciliation_after_stop_finds_a_planted_miss() {
    let w = W::new(&[("a.txt", "v\n"), ("b.txt", "b\n")]);
    let outside = tempfile::tempdir().unwrap();
    let alias = outside.path().join("alias");
    w.start();
    w.wait_ready();
    // Made from outside after the watcher crawled a.txt: a link count changing is no event in
    // a folder, so the watcher does not know a.txt has another name (docs/architecture.md).
    fs::hard_link(w.root().join("a.txt"), &alias).unwrap();
    w.pre("toolu_m");
    fs::write(&alias, "planted\n").unwrap();
    fs::write(w.root().join("b.txt"), "seen\n").unwrap();
    w.post("toolu_m");
    assert_eq!(w.summary("toolu_m")["watch"], json!(WATCHED));
    // The miss is planted: only b.txt came through the watcher.
    assert_eq!(w.children("toolu_m"), vec![("b.txt".to_string(), blob("seen\n"))]);
    let faults = || -> Vec<Value> { w.lines().into_iter().filter(|r| r["watch_fault"] == json!(true)).collect() };

    // While another reconciliation holds the checkout's claim (a live process: this test),
    // the Stop returns, the one it starts leaves at once, and nothing has scanned the tree:
    // the scan is not done inside the Stop hook.
    let claim = w.root().join(RECONCILE_CLAIM);
    fs::write(&claim, format!("{} {}\n", std::process::id(), own_start())).unwrap();
    w.stop();
    assert!(w.lines().iter().any(|r| r["kind"] == json!("stop")), "the Stop is journaled");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(faults(), Vec::<Value>::new(), "no scan while the claim is held");
    assert!(w.root().join(".walj/bash/reconcile.again").exists(), "the request waits for the claim's holder");

    // The claim free, the next Stop's reconciliation runs, in a process of its own.
    fs::remove_file(&claim).unwrap();
    let stop_pid = w.stop();
    let t = Instant::now();
    while faults().is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    w.wait_reconciled();
    let found = faults();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["path"], json!("a.txt"));
    assert_eq!(found[0]["after"], blob("planted\n"));
    assert_eq!(found[0]["parent"], json!("toolu_m"));
    assert_eq!(found[0]["attribution"], json!("uncertain"));
    let counted = fs::read_to_string(w.root().join(".walj/bash/watch-faults.jsonl")).unwrap();
    let line: Value = serde_json::from_str(counted.lines().next().unwrap()).unwrap();
    assert_ne!(line["pid"], json!(stop_pid), "found by the Stop hook's own process: {line}");
    assert!(line["pid"].as_u64().is_some(), "{line}");
    let d = w.doctor();
    assert!(d.contains("watcher faults") && d.contains("missed: a.txt"), "{d}");
    // Found once: the next turn's reconciliation does not journal it again.
    w.pre("toolu_m2");
    w.post("toolu_m2");
    w.stop();
    w.wait_reconciled();
    assert_eq!(faults().len(), 1);
}

/// This process's start time (clock ticks since boot), as a claim file names it.
fn own_start() -> u64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// `[bash] watcher = false`: no watcher is started, every snapshot is a full scan.
#[test]
fn the_config_key_turns_the_watcher_off() {
    let w = W::new(&[("a.txt", "v\n")]);
    w.config("[bash]\nwatcher = false\n");
    w.start();
    w.pre("toolu_f");
    fs::write(w.root().join("a.txt"), "off\n").unwrap();
    w.post("toolu_f");
    assert!(w.summary("toolu_f")["watch"].as_str().unwrap().contains("watcher = false"));
    assert_eq!(w.children("toolu_f"), vec![("a.txt".to_string(), blob("off\n"))]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fs::read_dir(w.rt.path()).unwrap().count(), 0, "no watcher socket or claim");
    assert!(w.doctor().contains("the watcher is off"));
}

/// The live observer: each change's time and the moment a session's Claude Code process
/// ended, in `.walj/observed.jsonl`, never in the journal.
#[test]
fn the_observer_notes_changes_and_when_claude_code_ended() {
    let w = W::new(&[("a.txt", "v\n")]);
    w.start();
    w.wait_ready();
    // Under `timeout`, the hook's Claude Code is a process that ends right after it.
    w.hook_with(&w.payload("PreToolUse", "toolu_obs"), true);
    fs::write(w.root().join("a.txt"), "seen\n").unwrap();
    let obs = w.root().join(".walj/observed.jsonl");
    let t = Instant::now();
    let mut lines: Vec<Value> = Vec::new();
    while t.elapsed() < Duration::from_secs(10) {
        lines =
            fs::read_to_string(&obs).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        // The end is written the moment the process exits, a change at the next flush.
        if lines.iter().any(|l| l["ev"] == json!("end") && l["session"] == json!(SESSION))
            && lines.iter().any(|l| l["ev"] == json!("change") && l["path"] == json!("a.txt"))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let change = lines.iter().find(|l| l["ev"] == json!("change") && l["path"] == json!("a.txt"));
    assert!(change.is_some_and(|c| c["ns"].as_i64().is_some()), "{lines:?}");
    let end = lines.iter().find(|l| l["ev"] == json!("end") && l["session"] == json!(SESSION));
    assert!(end.is_some_and(|e| e["ns"].as_i64().is_some() && e["pid"].as_u64().is_some()), "{lines:?}");
    assert!(!fs::read_to_string(w.root().join(".walj/journal.jsonl")).unwrap().contains("\"ev\""));
}

/// The observer file is coalesced: a 4 MB file rewritten 10 times in 4 KiB writes (thousands of
/// write events) is a few lines, one per batch, each with its first and last time; the old
/// watcher wrote a line per event (over 1,000 here).
#[test]
fn the_observer_file_writes_a_rewritten_file_once_per_batch() {
    let w = W::new(&[("a.txt", "v\n")]);
    w.start();
    w.wait_ready();
    let chunk = vec![b'x'; 4096];
    for _ in 0..10 {
        let mut f = fs::File::create(w.root().join("big.bin")).unwrap();
        for _ in 0..1024 {
            f.write_all(&chunk).unwrap();
        }
    }
    // Written at least once a second: the last batch is out 1.5 s after the first line is.
    let path = w.root().join(".walj/observed.jsonl");
    let t = Instant::now();
    while !fs::read_to_string(&path).unwrap_or_default().contains("big.bin") {
        assert!(t.elapsed() < Duration::from_secs(10), "no change line");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let obs = fs::read_to_string(&path).unwrap_or_default();
    let lines: Vec<Value> = obs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["ev"] == json!("change") && l["path"] == json!("big.bin"))
        .collect();
    assert!(!lines.is_empty() && lines.len() <= 30, "{} lines:\n{obs}", lines.len());
    for l in &lines {
        assert!(l["first"].as_i64().unwrap() <= l["ns"].as_i64().unwrap(), "{l}");
        assert!(l["kind"] == json!("content") || l["kind"] == json!("attribute"), "{l}");
    }
}

/// A killed command's deletion is dated by the watcher, not only by its folder's ctime: the
/// user's deletion of another file in that folder after the crash moves the folder's ctime,
/// and would make the command's own deletion "maybe after Claude Code stopped".
#[test]
fn a_killed_commands_deletion_is_dated_by_the_watcher_not_by_its_folders_later_ctime() {
    let w = W::new(&[("gone.txt", "g\n"), ("notes.txt", "n\n")]);
    w.start();
    w.wait_ready();
    // Its Claude Code: `timeout`, which lives on a second after the PreToolUse hook, then ends
    // (the command's Post never comes).
    let payload = w.payload("PreToolUse", "toolu_rm");
    let mut child = pre_under_a_dying_parent(&w, &payload, "toolu_rm");
    std::thread::sleep(Duration::from_millis(50));
    // The command, while its Claude Code lives.
    fs::remove_file(w.root().join("gone.txt")).unwrap();
    assert!(child.wait().unwrap().success());
    wait_end_seen(&w);
    // The user, after the crash, in the same folder.
    std::thread::sleep(Duration::from_millis(100));
    fs::remove_file(w.root().join("notes.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(100));

    let out = crate::common::walj_at(w.root())
        .args(["recover", "--json"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kids: Vec<Value> = w.lines().into_iter().filter(|r| r["parent"] == json!("toolu_rm")).collect();
    let of = |p: &str| kids.iter().find(|r| r["path"] == json!(p)).unwrap_or_else(|| panic!("{p}: {kids:?}"));
    assert!(of("gone.txt").get("attribution").is_none(), "made while its Claude Code lived: {kids:?}");
    assert_eq!(of("notes.txt")["attribution"], json!("after_stop"), "{kids:?}");
    assert!(of("notes.txt")["end_seen"].as_str().is_some(), "when the watcher saw Claude Code end: {kids:?}");
    assert_eq!(kids.len(), 2, "{kids:?}");
}

/// Metadata never re-dates content, with the watcher: the killed command wrote `a.txt` and
/// `b.txt` while its Claude Code lived; after the crash a same-mode `chmod` and a `touch -r`
/// move their ctimes. The watcher logs those apart (`kind: "attribute"`), so its last content
/// change dates each file: both stay the command's, certain (not `redated`, not after-stop);
/// the user's own edit after the crash stays after-stop.
#[test]
fn a_chmod_or_touch_after_the_crash_keeps_the_commands_change_its_own_with_the_watcher() {
    let w = W::new(&[("a.txt", "x\n"), ("b.txt", "x\n"), ("c.txt", "x\n")]);
    w.hook(&w.real("01-SessionStart.json", "", ""));
    w.wait_ready();
    let payload = w.real("07-PreToolUse-Bash.json", "toolu_sed", "sed -i s/x/y/ a.txt b.txt; sleep 60");
    let mut child = pre_under_a_dying_parent(&w, &payload, "toolu_sed");
    std::thread::sleep(Duration::from_millis(50));
    // The command, while its Claude Code lives.
    fs::write(w.root().join("a.txt"), "y\n").unwrap();
    fs::write(w.root().join("b.txt"), "y\n").unwrap();
    assert!(child.wait().unwrap().success());
    wait_end_seen(&w);
    std::thread::sleep(Duration::from_millis(100));
    // After the crash: a `chmod` to the mode a.txt has, `touch -r a.txt b.txt`, the user's edit.
    let same = fs::metadata(w.root().join("a.txt")).unwrap().permissions();
    fs::set_permissions(w.root().join("a.txt"), same).unwrap();
    sh(w.root(), "touch -r a.txt b.txt");
    fs::write(w.root().join("c.txt"), "the user's\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));

    let out = crate::common::walj_at(w.root())
        .args(["recover", "--json"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kids: Vec<Value> = w.lines().into_iter().filter(|r| r["parent"] == json!("toolu_sed")).collect();
    let of = |p: &str| kids.iter().find(|r| r["path"] == json!(p)).unwrap_or_else(|| panic!("{p}: {kids:?}"));
    let observed = fs::read_to_string(w.root().join(".walj/observed.jsonl")).unwrap_or_default();
    for p in ["a.txt", "b.txt"] {
        assert!(of(p).get("attribution").is_none(), "{p}: metadata re-dated the content: {kids:?}\n{observed}");
    }
    assert_eq!(of("c.txt")["attribution"], json!("after_stop"), "{kids:?}");
    assert_eq!(kids.len(), 3, "{kids:?}");
    // The watcher's log keeps the attribute changes apart from the content ones.
    let lines: Vec<Value> = observed.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kinds = |p: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["ev"] == json!("change") && l["path"] == json!(p))
            .map(|l| l["kind"].clone())
            .collect()
    };
    assert!(kinds("a.txt").contains(&json!("content")) && kinds("a.txt").contains(&json!("attribute")), "{observed}");
    assert!(kinds("b.txt").contains(&json!("attribute")), "{observed}");
}

/// The watcher's absence is explained: the watcher dies (kill -9: its socket stays) while a
/// command runs, and Claude Code is killed in it. No watcher saw Claude Code end, so the user's
/// change after the crash is after-stop bounded by the last sign of life only, and its record
/// says why no watcher dated it (`watch_absent`: the watcher ended without leaving), as do
/// `recover` and, once the next snapshot finds the stale socket, `walj doctor`.
#[test]
fn a_watcher_that_died_is_explained_in_the_records_and_by_doctor() {
    let w = W::new(&[("a.txt", "x\n"), ("c.txt", "x\n")]);
    w.hook(&w.real("01-SessionStart.json", "", ""));
    let watcher = w.wait_ready();
    let payload = w.real("07-PreToolUse-Bash.json", "toolu_k", "echo y > a.txt; sleep 60");
    let mut child = pre_under_a_dying_parent(&w, &payload, "toolu_k");
    kill(watcher, "-9");
    fs::write(w.root().join("a.txt"), "y\n").unwrap();
    assert!(child.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(100));
    fs::write(w.root().join("c.txt"), "the user's\n").unwrap();

    let out = crate::common::walj_at(w.root())
        .args(["recover", "--json"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kids: Vec<Value> = w.lines().into_iter().filter(|r| r["parent"] == json!("toolu_k")).collect();
    let c = kids.iter().find(|r| r["path"] == json!("c.txt")).unwrap_or_else(|| panic!("{kids:?}"));
    assert_eq!(c["attribution"], json!("after_stop"), "{kids:?}");
    assert!(c.get("end_seen").is_none(), "no watcher saw the end: {kids:?}");
    let why = c["watch_absent"].as_str().unwrap_or_else(|| panic!("no watch_absent: {kids:?}"));
    assert!(why.contains(&format!("pid {watcher}")) && why.contains("ended without leaving"), "{why}");
    let text = crate::common::walj_at(w.root())
        .args(["recover", "--color", "never"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("no watcher saw Claude Code end"), "{text}");
    // The next command's snapshot finds the socket stale (a full scan); doctor says why.
    w.pre("toolu_next");
    w.post("toolu_next");
    let doctor = w.doctor();
    assert!(doctor.contains("why no watcher listened"), "{doctor}");
    assert!(doctor.contains(&format!("pid {watcher}")) && doctor.contains("ended without leaving"), "{doctor}");
}

/// A session whose first command found no watcher listening (a slow start on a loaded machine,
/// or a watcher that died: the socket is stale) and that was killed mid-command: the watcher
/// the command's PreToolUse starts must still note when that Claude Code ended, or the
/// command's own change, made while Claude Code lived, reads as "made after Claude Code
/// stopped" and `revert --session` leaves it out. Deterministic: the test kills the watcher
/// between SessionStart and the command's PreToolUse, and moves the fake Claude Code on
/// through files.
#[test]
fn a_command_whose_snapshot_found_a_stale_socket_keeps_its_change_when_claude_code_is_killed() {
    let w = W::new(&[("a.txt", "old\n")]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("start.json"), w.payload("SessionStart", "").to_string()).unwrap();
    fs::write(d.join("pre.json"), w.payload("PreToolUse", "toolu_sed").to_string()).unwrap();
    // Its Claude Code: `timeout` (the nearest non-shell ancestor of each hook), which runs
    // SessionStart, waits, runs the command's PreToolUse, waits, then ends (no Post: killed).
    let script = r#"
        w() { while [ ! -e "$D/$1" ]; do sleep 0.02; done; }
        "$WALJ" --project "$ROOT" hook < "$D/start.json" > /dev/null; touch "$D/started"; w go1
        "$WALJ" --project "$ROOT" hook < "$D/pre.json" > /dev/null; touch "$D/pre-done"; w go2
    "#;
    let mut claude = Command::new("timeout")
        .args(["60", "sh", "-c", script])
        .env("WALJ", walj_bin())
        .env("ROOT", w.root())
        .env("D", d)
        .current_dir(w.root())
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .spawn()
        .unwrap();
    let wait_for = |name: &str| {
        let t = Instant::now();
        while !d.join(name).exists() {
            assert!(t.elapsed() < Duration::from_secs(20), "the fake Claude Code never got to {name}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for("started");
    // The watcher SessionStart started dies: its socket stays, nobody listens.
    let first = w.wait_ready();
    kill(first, "-9");
    assert!(w.socket().exists(), "a killed watcher leaves its socket");
    fs::write(d.join("go1"), "").unwrap();
    wait_for("pre-done");
    // The PreToolUse found the stale socket (a full scan) and started a new watcher.
    let second = w.wait_ready();
    assert_ne!(first, second);
    // The command's change, while its Claude Code lives; then Claude Code is killed.
    std::thread::sleep(Duration::from_millis(50));
    fs::write(w.root().join("a.txt"), "new\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    fs::write(d.join("go2"), "").unwrap();
    assert!(claude.wait().unwrap().success());

    let out = crate::common::walj_at(w.root())
        .args(["recover", "--json"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kids: Vec<Value> = w.lines().into_iter().filter(|r| r["parent"] == json!("toolu_sed")).collect();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(kids[0]["path"], json!("a.txt"), "{kids:?}");
    assert!(
        kids[0].get("attribution").is_none(),
        "made while its Claude Code lived, and the new watcher saw it end: the command's: {kids:?}\nobserved: {}",
        fs::read_to_string(w.root().join(".walj/observed.jsonl")).unwrap_or_default()
    );
}

/// SessionStart names the session's Claude Code to the watcher, whether it starts the watcher
/// (on its command line) or finds one running (a `ping` carrying the session): a session whose
/// Bash snapshots never reach the watcher (its first command's snapshot came before the
/// watcher listened, under load) still has its end noted.
#[test]
fn session_start_names_its_claude_code_to_the_watcher_it_starts_or_finds() {
    let w = W::new(&[("a.txt", "a\n")]);
    let obs = w.root().join(".walj/observed.jsonl");
    let ended = |session: &str| {
        fs::read_to_string(&obs)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["ev"] == json!("end") && l["session"] == json!(session) && l["ns"].as_i64().is_some())
    };
    for (n, session) in ["5e551011-first-start", "5e551011-second-start"].into_iter().enumerate() {
        let mut p = w.payload("SessionStart", "");
        p["session_id"] = json!(session);
        // Its Claude Code: `timeout`, which lives on a moment after SessionStart, then ends.
        let mut child = Command::new("timeout")
            .args(["20", "sh", "-c", "\"$0\" --project \"$1\" hook > /dev/null; sleep 0.5"])
            .arg(walj_bin())
            .arg(w.root())
            .current_dir(w.root())
            .env("WALJ_RUNTIME_DIR", w.rt.path())
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(p.to_string().as_bytes()).unwrap();
        if n == 1 {
            // The first session's watcher runs on (it lingers): this one is told by a ping.
            assert!(w.socket().exists());
        }
        assert!(child.wait().unwrap().success());
        let t = Instant::now();
        while !ended(session) {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the watcher never noted the end of {session}: {}",
                fs::read_to_string(&obs).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        w.wait_ready();
    }
}

/// Outside git the watcher observes processes only (no folder watched): a command killed with
/// its Claude Code in a plain folder keeps the change it made while Claude Code lived, rather
/// than reading as made after Claude Code stopped (and being left out of `revert --session`).
#[test]
fn outside_git_a_killed_commands_change_made_while_claude_code_lived_is_the_commands() {
    let rt = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(rt.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let proj = tempfile::tempdir().unwrap();
    let root = proj.path().canonicalize().unwrap();
    fs::write(root.join("notes.md"), "draft\n").unwrap();
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let payload = |event: &str| {
        json!({
            "hook_event_name": event, "session_id": SESSION, "transcript_path": "/tmp/none.jsonl",
            "cwd": root, "tool_name": "Bash", "tool_use_id": "toolu_edit",
            "tool_input": {"command": "sed -i s/draft/final/ notes.md && sleep 60", "description": "test"},
            "source": "startup",
        })
    };
    fs::write(d.join("start.json"), payload("SessionStart").to_string()).unwrap();
    fs::write(d.join("pre.json"), payload("PreToolUse").to_string()).unwrap();
    let script = r#"
        w() { while [ ! -e "$D/$1" ]; do sleep 0.02; done; }
        "$WALJ" --project "$ROOT" hook < "$D/start.json" > /dev/null
        "$WALJ" --project "$ROOT" hook < "$D/pre.json" > /dev/null; touch "$D/pre-done"; w go
    "#;
    let mut claude = Command::new("timeout")
        .args(["60", "sh", "-c", script])
        .env("WALJ", walj_bin())
        .env("ROOT", &root)
        .env("D", d)
        .current_dir(&root)
        .env("WALJ_RUNTIME_DIR", rt.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !d.join("pre-done").exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "the fake Claude Code never ran its PreToolUse");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The observer knows the session before the command writes.
    let obs = root.join(".walj/observed.jsonl");
    let t = Instant::now();
    while !fs::read_to_string(&obs).unwrap_or_default().contains("\"ev\":\"session\"") {
        assert!(t.elapsed() < Duration::from_secs(20), "no watcher observes the session outside git");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    fs::write(root.join("notes.md"), "final\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    fs::write(d.join("go"), "").unwrap();
    assert!(claude.wait().unwrap().success());

    let out =
        crate::common::walj_at(&root).args(["recover", "--json"]).env("WALJ_RUNTIME_DIR", rt.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(root.join(".walj/journal.jsonl")).unwrap();
    let kids: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["parent"] == json!("toolu_edit"))
        .collect();
    assert_eq!(kids.len(), 1, "{text}");
    assert_eq!(kids[0]["path"], json!("notes.md"), "{kids:?}");
    assert!(
        kids[0].get("attribution").is_none(),
        "made while Claude Code lived: the command's: {kids:?}\nobserved: {}",
        fs::read_to_string(&obs).unwrap_or_default()
    );
    // The watcher watched no folder there.
    let ready = fs::read_to_string(&obs).unwrap_or_default();
    assert!(ready.contains("\"ev\":\"ready\",\"dirs\":0"), "{ready}");
    // `revert --session` restores it without --force.
    let out = crate::common::walj_at(&root)
        .args(["revert", "--session", SESSION, "--yes"])
        .env("WALJ_RUNTIME_DIR", rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(root.join("notes.md")).unwrap(), "draft\n");
}

/// The watcher's peak resident memory (`VmHWM` in `/proc/PID/status`), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The observer file's `dropped` lines.
fn dropped(root: &Path) -> Vec<Value> {
    fs::read_to_string(root.join(".walj/observed.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["ev"] == json!("dropped"))
        .collect()
}

/// A 300 MB request line: the watcher reads at most a few KB of it, drops it, counts it, and
/// answers the next request; its peak resident memory stays under 64 MB. A malformed line is
/// dropped and counted too.
#[test]
fn an_oversized_or_malformed_request_is_dropped_and_counted_in_little_memory() {
    use std::os::unix::net::UnixStream;
    let w = W::new(&[("a.txt", "v\n")]);
    w.start();
    let pid = w.wait_ready();
    let sock = w.socket();
    // 300 MB of one line, written until the watcher hangs up.
    let mut s = UnixStream::connect(&sock).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"{\"op\":\"ping\",\"cookie\":\"").unwrap();
    let block = vec![b'a'; 1 << 20];
    let mut sent = 0usize;
    for _ in 0..300 {
        if s.write_all(&block).is_err() {
            break;
        }
        sent += block.len();
    }
    let _ = s.write_all(b"\"}\n");
    drop(s);
    // Malformed: not a request.
    let mut m = UnixStream::connect(&sock).unwrap();
    m.write_all(b"this is not json\n").unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut m, &mut answer);
    assert!(answer.is_empty(), "a malformed request was answered: {answer}");
    // Still answering.
    let mut p = UnixStream::connect(&sock).unwrap();
    p.write_all(b"{\"op\":\"ping\",\"flush\":true}\n").unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut p, &mut answer).unwrap();
    assert!(answer.contains("epoch"), "{answer}");
    let kib = peak_kib(pid);
    assert!(kib < 64 * 1024, "the watcher's peak resident memory is {kib} KiB (sent {sent} bytes)");
    let t = Instant::now();
    let mut lines = dropped(w.root());
    while lines.len() < 2 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        lines = dropped(w.root());
    }
    let whys: Vec<&Value> = lines.iter().map(|l| &l["why"]).collect();
    assert_eq!(whys, [&json!("oversized"), &json!("malformed")], "{lines:?}");
    assert_eq!(lines[1]["count"], json!(2), "{lines:?}");
    eprintln!("watcher pid {pid}: VmHWM {kib} KiB; it took {sent} bytes of a 300 MB request line before it hung up");
}

/// Links planted where walj keeps its own files (the observer file, the Bash cache folder):
/// never written through, and `walj doctor` names them.
#[test]
fn links_planted_at_the_observer_file_and_the_bash_cache_are_never_written_through() {
    use std::os::unix::fs::symlink;
    let w = W::new(&[("a.txt", "v\n")]);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim.txt");
    fs::write(&target, "precious\n").unwrap();
    let cache = outside.path().join("cache");
    fs::create_dir(&cache).unwrap();
    symlink(&target, w.root().join(".walj/observed.jsonl")).unwrap();
    symlink(&cache, w.root().join(".walj/bash")).unwrap();
    w.start();
    w.wait_ready();
    w.pre("toolu_link");
    fs::write(w.root().join("a.txt"), "changed\n").unwrap();
    w.post("toolu_link");
    // The turn's Stop (its reconciliation request is a file in `.walj/bash` too).
    w.stop();
    // The watcher writes its observer file once a second.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious\n", "written through the observer link");
    let in_cache: Vec<_> = fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(in_cache.is_empty(), "written through the bash link: {in_cache:?}");
    // The command was still journaled (a full scan).
    assert!(w.lines().iter().any(|r| r["id"] == json!("toolu_link")));
    let d = w.doctor();
    assert!(d.contains("link(s) in") && d.contains("observed.jsonl") && d.contains(".walj/bash"), "{d}");
}

/// A runtime folder this user cannot use (open to others; another user's, where the test may
/// chown): `walj doctor` says the watcher cannot run, why, and what that costs.
#[test]
fn doctor_says_when_the_runtime_folder_is_not_usable() {
    use std::os::unix::fs::PermissionsExt;
    let rt = tempfile::tempdir().unwrap();
    fs::set_permissions(rt.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let w = W::with_rt(Repo::new(&[("a.txt", "v\n")]), Arc::new(rt));
    let d = w.doctor();
    assert!(d.contains("the watcher cannot run") && d.contains("not private to this user"), "{d}");
    assert!(d.contains("every Bash snapshot is a full scan"), "{d}");
    // Another user's folder (only root can make one here).
    if rustix::process::getuid().is_root() {
        fs::set_permissions(w.rt.path(), fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(w.rt.path(), Some(65534), Some(65534)).unwrap();
        let d = w.doctor();
        assert!(d.contains("the watcher cannot run") && d.contains("belongs to another user"), "{d}");
    }
    // A usable one: no such finding.
    let ok = W::new(&[("a.txt", "v\n")]);
    assert!(!ok.doctor().contains("the watcher cannot run"));
}

#[path = "watch_kinds.rs"]
mod kinds;

#[path = "watch_differential.rs"]
mod differential;

/// The PreToolUse `payload` of Bash call `id`, run as Claude Code runs it under a stand-in for
/// Claude Code (`timeout`) that lives a second past the hook, then ends (the command's Post never
/// comes): returns once the intent is journaled, with the stand-in still running.
fn pre_under_a_dying_parent(w: &W, payload: &Value, id: &str) -> std::process::Child {
    let mut child = Command::new("timeout")
        .arg("20")
        .arg("sh")
        .arg("-c")
        .arg("\"$0\" --project \"$1\" hook; sleep 1")
        .arg(walj_bin())
        .arg(w.root())
        .current_dir(w.root())
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let t = Instant::now();
    while !w.lines().iter().any(|r| r["op"] == json!("intent") && r["id"] == json!(id)) {
        assert!(t.elapsed() < Duration::from_secs(10), "no intent");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits (at most 10 s) until the watcher has written that Claude Code ended.
fn wait_end_seen(w: &W) {
    let obs = w.root().join(".walj/observed.jsonl");
    let t = Instant::now();
    while !fs::read_to_string(&obs).unwrap_or_default().contains("\"ev\":\"end\"") {
        assert!(t.elapsed() < Duration::from_secs(10), "the watcher saw no end");
        std::thread::sleep(Duration::from_millis(10));
    }
}
