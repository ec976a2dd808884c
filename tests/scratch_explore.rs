#![allow(clippy::unwrap_used, clippy::panic)]
mod support;
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};
use support::anthropic_mock::{MockServer, Turn};
use support::claude::{self, Sandbox};

fn tmux(sock: &std::path::Path, args: &[&str]) -> String {
    let o = Command::new("tmux").arg("-S").arg(sock).args(args).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn explore_esc() {
    let bin = claude::claude_bin().unwrap();
    let sb = Sandbox::new();
    sb.write("a.txt", "old\n");
    sb.commit("init");
    let dir = sb.dir.path().join("payloads");
    std::fs::create_dir_all(&dir).unwrap();
    sb.settings(&claude::hooks_for_all_events(&claude::saver_command(&dir)));
    let proj = sb.project.to_string_lossy().into_owned();
    std::fs::write(sb.home.join(".claude.json"), json!({
        "hasCompletedOnboarding": true, "theme": "dark", "numStartups": 5,
        "customApiKeyResponses": {"approved": ["test"], "rejected": []},
        "projects": {proj.clone(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
    }).to_string()).unwrap();
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": sb.project.join("a.txt"), "content": "new\n"})),
        Turn::tool("Bash", json!({"command": "echo started > run.log; sleep 30", "description": "long"})),
        Turn::text("unreached"),
    ]);
    let sock = sb.dir.path().join("tmux.sock");
    let cmd = claude::sh_quote(&bin);
    let env = format!("env -i SHELL=/bin/bash USER=walj-e2e PATH={} HOME={} TMPDIR={} LANG=C.UTF-8 TERM=xterm-256color ANTHROPIC_BASE_URL={} ANTHROPIC_API_KEY=test CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {} --permission-mode acceptEdits --allowedTools 'Edit Write Bash'",
        claude::sh_quote(std::env::var("PATH").unwrap()), claude::sh_quote(&sb.home), claude::sh_quote(&sb.tmp), mock.base_url(), cmd);
    tmux(&sock, &["new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", &proj, &env]);
    let shot = |label: &str| println!("=== {label}\n{}", tmux(&sock, &["capture-pane", "-p", "-t", "t"]));
    std::thread::sleep(Duration::from_secs(4));
    shot("start");
    tmux(&sock, &["send-keys", "-t", "t", "-l", "rewrite a"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux(&sock, &["send-keys", "-t", "t", "Enter"]);
    let got = claude::wait_for_payload(&dir, Duration::from_secs(20), |p| p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash");
    println!("bash pre: {}", got.is_some());
    std::thread::sleep(Duration::from_millis(1500));
    // type while it works
    tmux(&sock, &["send-keys", "-t", "t", "-l", "queued message"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux(&sock, &["send-keys", "-t", "t", "Enter"]);
    std::thread::sleep(Duration::from_millis(2000));
    shot("queued");
    for p in claude::payloads(&dir) { if p["hook_event_name"] == "UserPromptSubmit" { println!("UPS so far: {}", p["prompt"]); } }
    tmux(&sock, &["send-keys", "-t", "t", "Escape"]);
    std::thread::sleep(Duration::from_millis(2000));
    shot("after esc");
    tmux(&sock, &["send-keys", "-t", "t", "-l", "next prompt"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux(&sock, &["send-keys", "-t", "t", "Enter"]);
    std::thread::sleep(Duration::from_millis(3000));
    shot("after next");
    let t0 = Instant::now();
    let _ = t0;
    for p in claude::payloads(&dir) {
        let mut p = p.clone();
        if let Some(o) = p.as_object_mut() { o.remove("transcript_path"); o.remove("cwd"); o.remove("session_id"); }
        println!("{}", serde_json::to_string(&p).unwrap().chars().take(400).collect::<String>());
    }
    println!("{}", mock.summary());
    for e in std::fs::read_dir(sb.transcripts_dir()).unwrap().flatten().filter(|e| e.path().is_file()) {
        for l in std::fs::read_to_string(e.path()).unwrap().lines() {
            if l.contains("tool_result") || l.contains("interrupted") || l.contains("queue") { println!("T: {}", l.chars().take(600).collect::<String>()); }
        }
    }
    tmux(&sock, &["kill-server"]);
}
