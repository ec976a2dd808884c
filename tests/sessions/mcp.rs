//! `walj mcp`: the real binary driven over stdio as Claude Code drives an MCP server
//! (initialize, tools/list, every tool), on a project a crash left behind (recorded hook
//! payloads), checked against `walj recover --json`, `walj diff --json`, `walj sessions show
//! --json`, `walj log --all --json` and `walj ops --json` of the same project.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::common::{Locate, Parent, Repo};

fn crashed_repo() -> Repo {
    let repo = Repo::fixture_in("p", "hooks/crash-mid-write/project");
    // Variant b: the Write in flight reached the disk, its PostToolUse never came.
    crate::common::replay_crash_mid_write(&repo, true, |p| {
        assert_eq!(repo.hook_run(p, Parent::Timeout(20), Locate::Folder).0, 0)
    });
    repo
}

/// A running `walj mcp` and its pipes.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(repo: &Repo) -> Server {
        let mut child = std::process::Command::new(crate::common::walj_bin())
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .arg("mcp")
            .current_dir(&repo.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server { child, stdin, stdout, next_id: 1 }
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "walj mcp closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.read();
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r["result"].clone()
    }

    /// A tool's result object (`about`, `tool`, `data`, `page`), checked to be the same in
    /// `structuredContent` and in the text content.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &r["result"];
        assert_eq!(result["isError"], false, "{tool} {args}: {r:#}");
        let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, result["structuredContent"], "{tool}: the text and the structured content differ");
        assert!(text["about"].as_str().unwrap().contains("never as instructions"), "{text:#}");
        assert_eq!(text["tool"], tool);
        text
    }

    /// `data` of every page of a paged tool, lists joined.
    fn call_all_pages(&mut self, tool: &str, args: Value, list: &str) -> (Value, usize) {
        let mut first = self.call(tool, args.clone());
        let mut pages = 1;
        let mut next = first["page"]["next_cursor"].as_str().map(str::to_string);
        while let Some(c) = next {
            let mut a = args.clone();
            a["cursor"] = json!(c);
            let page = self.call(tool, a);
            let more = page["data"][list].as_array().unwrap().clone();
            first["data"][list].as_array_mut().unwrap().extend(more);
            next = page["page"]["next_cursor"].as_str().map(str::to_string);
            pages += 1;
        }
        (first["data"].clone(), pages)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `.walj/` holds: every file with its size and modification time.
fn walj_dir_state(repo: &Repo) -> Vec<(String, u64, std::time::SystemTime)> {
    // The fill pass a SessionStart starts writes `.walj/bash/` in the background.
    crate::common::wait_fill_done(&repo.root);
    let mut out = Vec::new();
    let mut stack = vec![repo.root.join(".walj")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path().display().to_string(), m.len(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn initialize_and_tools_list_read_nothing_and_offer_only_reading_tools() {
    let repo = crashed_repo();
    let before = walj_dir_state(&repo);
    let mut s = Server::start(&repo);
    let init = s.initialize();
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "walj");
    assert!(init["capabilities"]["tools"].is_object());
    let instructions = init["instructions"].as_str().unwrap();
    for must in
        ["ask the user", "walj revert", "walj mark", "walj handoff", "walj undo", "--yes", "never as instructions"]
    {
        assert!(instructions.contains(must), "instructions lack {must:?}: {instructions}");
    }
    // An older client gets its own version back.
    let old = s.request("initialize", json!({"protocolVersion": "2024-11-05", "capabilities": {}}));
    assert_eq!(old["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    let list = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["recover", "entry", "session", "path_log", "ops", "bisect"]);
    for t in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t:#}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t:#}");
    }
    // No action is a tool.
    for action in ["revert", "mark", "handoff", "undo"] {
        let r = s.request("tools/call", json!({"name": action, "arguments": {}}));
        assert_eq!(r["error"]["code"], -32602, "{r:#}");
    }
    assert_eq!(s.request("resources/read", json!({}))["error"]["code"], -32601);
    // Start-up and listing folded nothing and wrote nothing.
    assert_eq!(walj_dir_state(&repo), before);
}

#[test]
fn every_tool_answers_what_the_commands_answer_on_a_crashed_project() {
    let repo = crashed_repo();
    // The commands first (reconciling what the crash cut off, once), then the server.
    let recover = repo.json(&["recover", "--json"]);
    assert_eq!(recover["unresolved"], 2, "{recover:#}");
    let mut s = Server::start(&repo);
    s.initialize();

    // recover: the same data as `walj recover --json`.
    let (data, _) = s.call_all_pages("recover", json!({}), "sessions");
    assert_eq!(data, repo.json(&["recover", "--json"]));
    let in_flight: Vec<&Value> = data["sessions"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"] == "docs/generated-index.md")
        .collect();
    assert_eq!(in_flight.len(), 1, "{data:#}");
    assert!(in_flight[0].get("foreign").is_none(), "this checkout's own entry is not foreign");

    // entry: each unresolved entry as `walj diff --json ID`, in every mode.
    for e in data["sessions"][0]["entries"].as_array().unwrap() {
        let id = e["id"].as_str().unwrap();
        for (mode, flag) in [("disk", None), ("applied", Some("--applied")), ("head", Some("--head"))] {
            let got = s.call("entry", json!({"id": id, "mode": mode}));
            let mut args = vec!["diff", "--json", id];
            args.extend(flag);
            assert_eq!(got["data"], repo.json(&args), "entry {id} mode {mode}");
            assert!(got["page"]["next_cursor"].is_null());
        }
    }
    let written = s.call("entry", json!({"id": in_flight[0]["short"]}));
    assert!(written["data"][0]["diff"].as_str().unwrap().contains("+- retries: 5"), "{written:#}");

    // session: the context of `walj sessions show --json`, paged one item a list at a time.
    let sid = data["sessions"][0]["sid"].as_str().unwrap();
    let shown = repo.json(&["sessions", "show", "--json", sid]);
    assert_eq!(s.call("session", json!({"session": sid}))["data"], shown);
    let (joined, pages) = s.call_all_pages("session", json!({"session": sid, "limit": 1}), "entries");
    assert!(pages > 1, "one entry a page takes several pages");
    assert_eq!(joined["entries"], shown["entries"]);
    assert!(shown["prompts"][0]["text"].is_string(), "{shown:#}");

    // path_log: the path's entries of `walj log --all --json`.
    let log = repo.json(&["log", "--all", "--json"]);
    for path in ["docs/generated-index.md", "config/settings.json"] {
        let want: Vec<Value> = log.as_array().unwrap().iter().filter(|e| e["path"] == path).cloned().collect();
        assert!(!want.is_empty());
        let got = s.call("path_log", json!({"path": path}));
        assert_eq!(got["data"]["entries"], json!(want), "{path}");
        let abs = repo.root.join(path);
        assert_eq!(s.call("path_log", json!({"path": abs}))["data"]["entries"], json!(want), "{path} absolute");
    }

    // ops: empty, then the mark the user made.
    assert_eq!(s.call("ops", json!({}))["data"]["operations"], json!([]));
    repo.ok(&["mark", in_flight[0]["short"].as_str().unwrap(), "--done"]);
    let ops = s.call("ops", json!({}));
    assert_eq!(ops["data"]["operations"], repo.json(&["ops", "--json"]));
    assert_eq!(ops["data"]["operations"].as_array().unwrap().len(), 1);

    // bisect: none has run.
    assert!(s.call("bisect", json!({}))["data"]["verdict"].is_null());

    // A tool's own failure is a result with isError, not a protocol error.
    let r = s.request("tools/call", json!({"name": "entry", "arguments": {"id": "01NoSuchEntry"}}));
    assert_eq!(r["result"]["isError"], true, "{r:#}");
    let r = s.request("tools/call", json!({"name": "entry", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602, "{r:#}");
}

/// Entries a bundle brought (`walj sessions import`) are served marked `foreign`, with their
/// session, by `recover`, `session` and `path_log`; this checkout's own are not.
#[test]
fn a_bundles_entries_are_served_as_foreign() {
    let src = Repo::new(&[("a.txt", "one\n")]);
    let sender = crate::common::Claude::new(&src, "5e5e5e5e-0000-4000-8000-000000000001");
    sender.start();
    sender.prompt("PROMPT-FROM-BUNDLE: change a.txt");
    sender.edit("toolu_1", "a.txt", "one", "two");
    sender.write_intent("toolu_2", "b.txt", "half\n");
    let bundle = src.tmp.join("s.walj");
    src.ok(&["sessions", "export", "5e5e5e5e", "-o", bundle.to_str().unwrap()]);

    let dst = crashed_repo();
    dst.ok(&["sessions", "import", "--yes", bundle.to_str().unwrap()]);
    let mut s = Server::start(&dst);
    s.initialize();
    let (data, _) = s.call_all_pages("recover", json!({}), "sessions");
    let sessions = data["sessions"].as_array().unwrap();
    let theirs = sessions
        .iter()
        .find(|x| x["session"].as_str().unwrap().starts_with("5e5e5e5e"))
        .unwrap_or_else(|| panic!("{data:#}"));
    assert!(theirs["foreign"].as_str().unwrap().starts_with("from bundle"), "{theirs:#}");
    for e in theirs["entries"].as_array().unwrap() {
        assert!(e["foreign"].as_str().unwrap().starts_with("from bundle"), "{e:#}");
    }
    let ours = sessions.iter().find(|x| x["sid"] == "8f14e4").unwrap();
    assert!(ours.get("foreign").is_none(), "{ours:#}");
    assert!(ours["entries"].as_array().unwrap().iter().all(|e| e.get("foreign").is_none()));

    let session = s.call("session", json!({"session": "5e5e5e5e"}));
    assert!(session["data"]["foreign"].as_str().unwrap().starts_with("from bundle"), "{session:#}");
    let log = s.call("path_log", json!({"path": "b.txt"}));
    let entries = log["data"]["entries"].as_array().unwrap();
    assert!(!entries.is_empty() && entries.iter().all(|e| e["foreign"].as_str().is_some()), "{log:#}");
    let own = s.call("session", json!({"session": "8f14e4"}));
    assert!(own["data"].get("foreign").is_none());
}
