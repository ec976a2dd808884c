//! A command line that follows the conventions, through the real binary: closed
//! pipes, bad input refused in one line, exit codes, colour, completions, `--json`, ids.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::process::Stdio;

use crate::common::{Repo, outcome};

/// The crash-mid-write project after its crash: a crashed session with an applied Edit and an
/// in-flight Write, a todo list and a background command.
fn crashed() -> Repo {
    let repo = Repo::fixture_in("p", "hooks/crash-mid-write/project").with_home();
    crate::common::replay_crash_mid_write(&repo, false, |p| {
        repo.hook(p);
    });
    repo
}

/// Runs `walj ARGS` with its stdout a pipe whose reader is already gone (as after `| head`
/// read what it wanted): (exit code, stderr).
fn into_closed_pipe(repo: &Repo, args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut c = std::process::Command::new(crate::common::walj_bin());
    c.arg("--project").arg(&repo.root).args(args);
    c.env_remove("CLAUDECODE").env_remove("CLAUDE_PROJECT_DIR").env_remove("WALJ_JOURNAL").env("NO_COLOR", "1");
    c.env("HOME", &repo.home).stdin(Stdio::null()).stdout(writer).stderr(Stdio::piped());
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn writing_into_a_closed_pipe_ends_quietly_with_status_0() {
    let repo = crashed();
    for args in [
        &["log", "--all"][..],
        &["log", "--json"],
        &["recover"],
        &["recover", "--json"],
        &["status"],
        &["doctor"],
        &["doctor", "--json"],
        &["sessions"],
        &["sessions", "show", "8f14"],
        &["diff", "01EditCfg"],
        &["handoff", "--print"],
        &["procs"],
        &["--help"],
        &["log", "--help"],
    ] {
        let (code, err) = into_closed_pipe(&repo, args);
        assert_eq!((code, err.as_str()), (0, ""), "walj {args:?}");
    }
}

#[test]
fn a_real_pipe_into_head_ends_quietly() {
    let repo = crashed();
    // Enough output that walj is still writing when head has gone.
    let mut lines = String::new();
    for i in 0..3000 {
        lines.push_str(&format!("line {i} of a long file\n"));
    }
    repo.write("config/settings.json", &lines);
    let walj = crate::common::walj_bin();
    let script =
        format!("set -o pipefail; {} --project {} diff 01EditCfg | head -1", walj.display(), repo.root.display());
    let out = std::process::Command::new("bash").arg("-c").arg(&script).env("NO_COLOR", "1").output().unwrap();
    let (code, out, err) = outcome(&out);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn bad_input_is_refused_in_one_line_with_a_non_zero_status() {
    let repo = crashed();
    let cases: &[(&[&str], &str)] = &[
        (&["--project", "/does/not/exist", "recover"], "walj: --project /does/not/exist: no such folder"),
        (&["--project", "/does/not/exist", "status"], "walj: --project /does/not/exist: no such folder"),
        (&["recover", "--session", "nosuch"], "walj: no session matches \"nosuch\"; `walj sessions list` shows"),
        (&["log", "--session", "nosuch"], "walj: no session matches \"nosuch\""),
        (&["checkpoint", "--session", "nosuch"], "walj: no session matches \"nosuch\""),
        (&["handoff", "--session", "nosuch"], "walj: no session matches \"nosuch\""),
        (&["mark", "--done", "--session", "nosuch"], "walj: no session matches \"nosuch\""),
        (&["sessions", "import", "/does/not/exist.walj"], "walj: reading /does/not/exist.walj: No such file"),
    ];
    for (args, want) in cases {
        let (code, out, err) =
            outcome(&crate::common::walj_cmd().current_dir(&repo.root).args(*args).output().unwrap());
        assert_eq!(code, 1, "walj {args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "walj {args:?}: one line: {err}");
        assert!(err.starts_with(want), "walj {args:?}: {err}");
        // Each cause once.
        let cause = err.rsplit(": ").next().unwrap().trim();
        assert_eq!(err.matches(cause).count(), 1, "walj {args:?}: {err}");
        assert!(out.is_empty(), "walj {args:?}: {out}");
    }
    // A session that did not crash the journal: nothing was written by the refusals.
    assert!(repo.records().iter().all(|r| r["op"] != "audit"), "checkpoint --session nosuch wrote an audit");
}

#[test]
fn a_config_that_cannot_be_read_is_reported_by_status_recover_and_doctor() {
    let repo = crashed();
    fs::create_dir_all(repo.path(".walj/config.toml")).unwrap(); // unreadable as a file, even for root
    let config = repo.path(".walj/config.toml");
    let (code, out, err) = repo.run(&["status"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("walj: {}: Is a directory", config.display())), "{err}");
    assert!(out.contains("2 unresolved entries"), "{out}");
    let (code, out, _) = repo.run(&["status", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["config_error"].as_str().unwrap().contains("Is a directory"), "{v:#}");

    // recover still reports (the config plays no part in it), and says so on stderr.
    let (code, out, err) = repo.run(&["recover"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Recovery: 2 unresolved entries"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("walj: warning: {}: Is a directory", config.display())), "{err}");

    let (code, out, _) = repo.run(&["doctor", "--command", "walj hook"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("[error] config {}: Is a directory", config.display())), "{out}");

    // A syntax error: the place, in every one of them.
    fs::remove_dir(&config).unwrap();
    repo.write(".walj/config.toml", "[capture\n");
    let (code, _, err) = repo.run(&["status"]);
    assert_eq!(code, 1);
    assert!(err.starts_with(&format!("walj: {}:1:9: unclosed table", config.display())), "{err}");
    let (_, _, err) = repo.run(&["recover"]);
    assert!(err.contains(&format!("{}:1:9: unclosed table", config.display())), "{err}");
}

#[test]
fn recover_exit_code_says_whether_something_is_unresolved() {
    let repo = crashed();
    // Without the flag: 0 whatever is unresolved.
    assert_eq!(repo.run(&["recover"]).0, 0);
    let (code, out, _) = repo.run(&["recover", "--exit-code"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Recovery: 2 unresolved entries"), "{out}");
    assert_eq!(repo.run(&["recover", "--exit-code", "--json"]).0, 1);
    // Another session's filter: still 1 for the crashed one, and a failure is 2, not 1.
    assert_eq!(repo.run(&["recover", "--exit-code", "--session", "8f14"]).0, 1);
    let (code, _, err) = repo.run(&["recover", "--exit-code", "--session", "nosuch"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("walj: no session matches"), "{err}");
    let (code, out, err) = outcome(
        &crate::common::walj_cmd().args(["--project", "/does/not/exist", "recover", "--exit-code"]).output().unwrap(),
    );
    assert_eq!(code, 2, "{out}{err}");
    // Resolved: 0.
    repo.ok(&["mark", "--done", "--session", "8f14", "--force"]);
    let (code, out, _) = repo.run(&["recover", "--exit-code"]);
    assert_eq!(code, 0, "{out}");
}

/// `walj ARGS` with stdout a pipe and exactly the colour variables given.
fn colour_run(repo: &Repo, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut c = repo.walj(args);
    c.env_remove("NO_COLOR").env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE").env("TERM", "xterm-256color");
    for (k, v) in env {
        c.env(k, v);
    }
    let (code, out, err) = outcome(&c.output().unwrap());
    (code, format!("{out}{err}"))
}

#[test]
fn colour_follows_the_flag_then_no_color_then_clicolor_force() {
    let repo = crashed();
    let esc = |s: &str| s.contains('\x1b');
    // Into a pipe: no colour by default; CLICOLOR_FORCE turns it on; NO_COLOR wins over it.
    for args in [&["recover"][..], &["log"], &["diff", "01EditCfg"], &["doctor", "--command", "walj hook"]] {
        let (_, out) = colour_run(&repo, &[], args);
        assert!(!esc(&out), "{args:?}: {out:?}");
        let (_, out) = colour_run(&repo, &[("CLICOLOR_FORCE", "1")], args);
        assert!(esc(&out), "{args:?} with CLICOLOR_FORCE: {out:?}");
        let (_, out) = colour_run(&repo, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")], args);
        assert!(!esc(&out), "{args:?} with NO_COLOR: {out:?}");
        // The flag wins over both.
        let mut a = vec!["--color", "always"];
        a.extend_from_slice(args);
        let (_, out) = colour_run(&repo, &[("NO_COLOR", "1")], &a);
        assert!(esc(&out), "{a:?}: {out:?}");
        let mut a = vec!["--color=never"];
        a.extend_from_slice(args);
        let (_, out) = colour_run(&repo, &[("CLICOLOR_FORCE", "1")], &a);
        assert!(!esc(&out), "{a:?}: {out:?}");
    }
    // The same colours as the state table: an in-flight entry in the state's colour.
    let (_, out) = colour_run(&repo, &[], &["--color", "always", "recover"]);
    assert!(out.contains("in_flight"), "{out}");
    // clap's help follows the flag too; a bad value is a usage error.
    let (code, out) = colour_run(&repo, &[], &["--color", "always", "--help"]);
    assert_eq!(code, 0);
    assert!(esc(&out) && out.contains("--color") && out.contains("WHEN"), "{out}");
    let (code, out) = colour_run(&repo, &[("CLICOLOR_FORCE", "1")], &["--color", "never", "log", "--help"]);
    assert_eq!(code, 0);
    assert!(!esc(&out), "{out}");
    let (code, out) = colour_run(&repo, &[], &["--color", "sometimes", "status"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("[possible values: auto, always, never]"), "{out}");
}

#[test]
fn completions_for_every_shell_and_bash_completes_commands_flags_and_values() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (code, out, err) = outcome(&crate::common::walj_cmd().args(["completions", shell]).output().unwrap());
        assert_eq!(code, 0, "{shell}: {err}");
        for word in ["recover", "exit-code", "completions", "always"] {
            assert!(out.contains(word), "{shell} script lacks {word}");
        }
    }
    let (code, _, err) = outcome(&crate::common::walj_cmd().args(["completions", "tcsh"]).output().unwrap());
    assert_eq!(code, 2, "{err}");

    // The bash script, sourced in bash, completes as a user types.
    let walj = crate::common::walj_bin();
    let complete = |words: &[&str]| {
        let line = words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" ");
        let (cur, prev) = (words[words.len() - 1], words[words.len() - 2]);
        let script = format!(
            "source <('{}' completions bash); COMP_WORDS=({line}); COMP_CWORD={}; _walj walj '{cur}' '{prev}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            walj.display(),
            words.len() - 1
        );
        let out = std::process::Command::new("bash").arg("-c").arg(&script).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(complete(&["walj", "rec"]), ["recover"]);
    assert_eq!(complete(&["walj", "recover", "--ex"]), ["--exit-code"]);
    assert_eq!(complete(&["walj", "--color", ""]), ["auto", "always", "never"]);
    assert_eq!(complete(&["walj", "completions", "f"]), ["fish"]);
    assert!(complete(&["walj", "sessions", ""]).contains(&"transcript".to_string()));
}

/// Every subcommand (and sub-subcommand) documents every argument and ends its help with
/// examples of walj commands.
#[test]
fn every_subcommand_has_help_for_each_argument_and_examples() {
    use clap::CommandFactory;
    fn walk(c: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, Vec<String>)>) {
        let undocumented = c
            .get_arguments()
            .filter(|a| a.get_help().is_none() && !a.is_hide_set())
            .filter(|a| !["help", "version"].contains(&a.get_id().as_str()))
            .map(|a| a.get_id().to_string())
            .collect();
        out.push((path.clone(), undocumented));
        for s in c.get_subcommands() {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            walk(s, p, out);
        }
    }
    let mut all = vec![];
    walk(&walj::cli::Cli::command(), vec![], &mut all);
    assert!(all.len() > 25, "{}", all.len());
    for (path, undocumented) in all {
        assert!(undocumented.is_empty(), "walj {}: no help for {undocumented:?}", path.join(" "));
        if path.is_empty() || path.last().is_some_and(|p| p == "help") || path.first().is_some_and(|p| p == "help") {
            continue;
        }
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, out, err) = outcome(&crate::common::walj_cmd().args(&args).output().unwrap());
        assert_eq!(code, 0, "walj {args:?}: {err}");
        let examples =
            out.split("\nExamples:\n").nth(1).unwrap_or_else(|| panic!("walj {args:?}: no examples:\n{out}"));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!lines.is_empty() && lines.len() <= 4, "walj {args:?}: {examples}");
        let name = format!("walj {}", path.join(" "));
        for l in &lines {
            assert!(l.starts_with("  walj "), "walj {args:?}: {l}");
        }
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with(&name)),
            "walj {args:?}: no example of {name}: {examples}"
        );
    }
}

#[test]
fn triage_commands_answer_in_json_and_log_entries_name_their_session() {
    let repo = crashed();
    let session = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";
    let log = repo.json(&["log", "--json"]);
    let entries = log.as_array().unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        assert_eq!(e["session"], session, "{e}");
        assert_eq!(e["sid"], "8f14e4", "{e}");
    }

    let v = repo.json(&["revert", "01EditCfg", "--dry-run", "--json", "--force"]);
    assert_eq!(v["action"], "revert");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["changed"], false);
    let o = &v["outcomes"][0];
    assert_eq!(o["id"], "toolu_01EditCfg");
    assert_eq!(o["short"], "Edit");
    assert_eq!(o["path"], "config/settings.json");
    assert!(o["message"].as_str().unwrap().contains("config/settings.json"), "{v:#}");

    let v = repo.json(&["revert", "01EditCfg", "--json", "--force"]);
    assert_eq!((v["dry_run"].as_bool(), v["changed"].as_bool()), (Some(false), Some(true)), "{v:#}");
    assert!(repo.read("config/settings.json").contains("\"retries\": 3"));
    let v = repo.json(&["undo", "--json"]);
    assert_eq!((v["action"].as_str(), v["changed"].as_bool()), (Some("undo"), Some(true)), "{v:#}");
    assert!(repo.read("config/settings.json").contains("\"retries\": 5"));

    let v = repo.json(&["mark", "01EditCfg", "--done", "--json", "--force"]);
    assert_eq!(v["action"], "mark");
    assert_eq!(v["outcomes"][0]["id"], "toolu_01EditCfg");
    assert_eq!(v["outcomes"][0]["changed"], true);

    let v = repo.json(&["handoff", "--print", "--json", "--force"]);
    assert_eq!(v["recorded"], false);
    assert_eq!(v["action"], serde_json::Value::Null);
    assert_eq!(v["entries"], serde_json::json!(["toolu_01WriteDoc"]), "{v:#}");
    assert!(v["brief"].as_str().unwrap().contains("docs/generated-index.md"), "{v:#}");
    let v = repo.json(&["handoff", "--all", "--json", "--force"]);
    assert_eq!(v["recorded"], true);
    assert!(v["action"].is_string(), "{v:#}");
    assert_eq!(v["left_out"], serde_json::json!([]));
    assert!(v["resume_line"].as_str().unwrap().contains(session), "{v:#}");
}

#[test]
fn ids_are_typed_without_the_shared_toolu_01_and_in_any_case() {
    let repo = crashed();
    // The ids are toolu_01EditCfg and toolu_01WriteDoc.
    for typed in ["editcfg", "EDIT", "e", "01editcfg", "toolu_01EditCfg", "TOOLU_01EDITCFG"] {
        let (code, out, err) = repo.run(&["diff", typed]);
        assert_eq!(code, 0, "walj diff {typed}: {err}");
        assert!(out.contains("config/settings.json"), "walj diff {typed}: {out}");
    }
    let (code, _, err) = repo.run(&["diff", "01"]);
    assert_eq!(code, 1);
    assert!(err.contains("ambiguous") && err.contains("toolu_01EditCfg") && err.contains("toolu_01WriteDoc"), "{err}");
    let (code, _, err) = repo.run(&["diff", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("no entry matches \"x\""), "{err}");
    let v = repo.json(&["mark", "w", "--done", "--json", "--force"]);
    assert_eq!(v["outcomes"][0]["id"], "toolu_01WriteDoc");

    // What is shown: the shortest unique prefix after `toolu_01`, at least 4 characters.
    let ids = walj::fold::ShortIds::new(["toolu_01AbcDEF1", "toolu_01abcdXYZ", "toolu_01Q9", "L12", "toolu_xyz"]);
    assert_eq!(ids.short("toolu_01AbcDEF1"), "AbcDE");
    assert_eq!(ids.short("toolu_01abcdXYZ"), "abcdX");
    assert_eq!(ids.short("toolu_01Q9"), "Q9");
    assert_eq!(ids.short("L12"), "L12");
    assert_eq!(ids.short("toolu_xyz"), "xyz");
}

const SESSION: &str = "5e551011-0000-4000-8000-000000000001";

/// A project whose journal has a settled entry `toolu_01AbcdeY` (persisted: the default fold
/// drops it) and two unresolved ones, `toolu_01AbcdeX` and `toolu_01Zq`, in one session; and
/// `filler` more settled entries.
fn settled_twin(filler: usize) -> Repo {
    use walj::journal::{Blob, JournalWriter, Record, op};
    let repo = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")]);
    fs::create_dir_all(repo.path(".walj")).unwrap();
    let entry = |o: &str, id: &str, path: &str| {
        let mut r = Record::new(o, SESSION);
        r.id = id.to_string();
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r.path = path.to_string();
        r.before = Some(Blob::Absent);
        r
    };
    let mut recs = Vec::new();
    for (id, path) in [("toolu_01AbcdeY", "b.txt"), ("toolu_01AbcdeX", "a.txt"), ("toolu_01Zq", "c.txt")] {
        recs.push(entry(op::INTENT, id, path));
        recs.push(entry(op::APPLIED, id, path));
    }
    recs.push(entry(op::PERSISTED, "toolu_01AbcdeY", "b.txt"));
    for i in 0..filler {
        let id = format!("toolu_01Filler{i:06}");
        recs.push(entry(op::INTENT, &id, "b.txt"));
        recs.push(entry(op::APPLIED, &id, "b.txt"));
        recs.push(entry(op::PERSISTED, &id, "b.txt"));
    }
    JournalWriter::new(&repo.journal()).append_all(&recs).unwrap();
    repo
}

#[test]
fn listings_show_each_id_by_its_shortest_unique_start_against_every_id_of_the_journal() {
    let repo = settled_twin(0);
    // recover's fold dropped the settled AbcdeY: the shown AbcdeX is still unique against it.
    let out = repo.ok(&["recover"]);
    assert!(out.contains("    AbcdeX  applied") && out.contains("    Zq      applied"), "{out}");
    assert!(!out.contains("01Abcde") && !out.contains("Abcd "), "{out}");
    let out = repo.ok(&["log"]);
    assert!(out.contains("5e5510  persisted    AbcdeY  file_modified"), "{out}");
    assert!(out.contains("5e5510  applied      AbcdeX  file_modified"), "{out}");
    let out = repo.ok(&["sessions", "show", "5e5"]);
    assert!(out.contains("  AbcdeX  applied") && out.contains("Next: walj sessions resume 5e5510 "), "{out}");
    let out = repo.ok(&["diff", "AbcdeX"]);
    assert!(out.starts_with("entry AbcdeX · a.txt · Edit file_modified"), "{out}");
    assert!(repo.ok(&["sessions"]).contains("\n5e5510    claude"), "sessions list");
    // What is shown is what to type; a shorter start names both.
    let (code, _, err) = repo.run(&["diff", "abcde"]);
    assert_eq!(code, 1);
    assert!(err.contains("toolu_01AbcdeX") && err.contains("toolu_01AbcdeY"), "{err}");
    let v = repo.json(&["mark", "zq", "--done", "--json"]);
    assert_eq!((v["outcomes"][0]["id"].as_str(), v["outcomes"][0]["short"].as_str()), (Some("toolu_01Zq"), Some("Zq")));
    assert!(v["outcomes"][0]["message"].as_str().unwrap().starts_with("marked Zq (c.txt) done"), "{v}");
    // --json keeps full ids beside the shown one.
    let v = repo.json(&["recover", "--json"]);
    let e = &v["sessions"][0]["entries"][0];
    assert_eq!((e["id"].as_str(), e["short"].as_str()), (Some("toolu_01AbcdeX"), Some("AbcdeX")), "{v}");
    assert_eq!(v["sessions"][0]["session"], SESSION);
}

#[test]
fn the_unique_start_of_an_id_is_highlighted_in_colour() {
    let repo = settled_twin(0);
    let out = repo.ok(&["--color", "always", "log"]);
    // Zq: `Z` is unique (bold magenta), `q` the rest shown (dim); the session's `5` (bold cyan).
    assert!(out.contains("\x1b[1m\x1b[35mZ\x1b[0m\x1b[0m\x1b[2mq\x1b[0m"), "{out:?}");
    assert!(out.contains("\x1b[1m\x1b[36m5\x1b[0m\x1b[0m\x1b[36me5510\x1b[0m"), "{out:?}");
    // Without colour, the same text.
    assert!(repo.ok(&["log"]).contains("5e5510  applied      Zq      file_modified"));
}

#[test]
fn every_id_is_kept_in_a_cache_and_the_lines_after_it_are_read() {
    // Enough settled entries that the first listing reads more than 1 MB: it writes the cache.
    let repo = settled_twin(2500);
    assert!(fs::metadata(repo.journal()).unwrap().len() > 1 << 20);
    let cache = repo.path(".walj/ids.idx");
    assert!(!cache.exists());
    assert!(repo.ok(&["recover"]).contains("    AbcdeX  applied"));
    assert!(cache.exists(), "the id cache is written");
    // A settled id sharing Zq's `Z`, appended after the cache: the next listing reads the new
    // lines (Zq's unique part grows from `Z` to `Zq`).
    let zq = |repo: &Repo| {
        let out = repo.ok(&["--color", "always", "recover"]);
        (out.contains("\x1b[1m\x1b[35mZ\x1b[0m\x1b[0m\x1b[2mq"), out.contains("\x1b[1m\x1b[35mZq\x1b[0m"))
    };
    assert_eq!(zq(&repo), (true, false));
    use walj::journal::{JournalWriter, Record, op};
    let mut r = Record::new(op::APPLIED, SESSION);
    r.id = "toolu_01Zr".into();
    r.persisted = true;
    r.path = "c.txt".into();
    JournalWriter::new(&repo.journal()).append(&r).unwrap();
    assert_eq!(zq(&repo), (false, true));
    // The journal replaced (as a compaction does) by one without AbcdeY: the cache, which has
    // it, is not used.
    let journal = String::from_utf8(fs::read(repo.journal()).unwrap()).unwrap();
    let kept: String =
        journal.lines().filter(|l| !l.contains("AbcdeY") && !l.contains("Filler")).map(|l| format!("{l}\n")).collect();
    fs::remove_file(repo.journal()).unwrap();
    fs::write(repo.journal(), kept).unwrap();
    let out = repo.ok(&["recover"]);
    assert!(out.contains("    Abcd  applied      a.txt"), "{out}");
}

#[test]
fn manual_pages_are_generated_from_the_command_line() {
    let (code, out, err) = outcome(&crate::common::walj_cmd().arg("man").output().unwrap());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".TH walj 1"), "{out}");
    for sub in ["recover", "revert", "tui", "completions", "man"] {
        assert!(out.contains(&format!("walj\\-{sub}(1)")) || out.contains(sub), "{sub} missing:\n{out}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = outcome(&crate::common::walj_cmd().args(["man", "--out"]).arg(dir.path()).output().unwrap());
    assert_eq!(code, 0, "{err}");
    let page = fs::read_to_string(dir.path().join("walj-revert.1")).unwrap();
    assert!(page.contains("\\-\\-dry\\-run") && page.contains("\\-\\-prompt"), "{page}");
    assert!(dir.path().join("walj.1").is_file());
}

/// Whether `shell` runs here; else says SKIPPED (CI installs it: WALJ_E2E_REQUIRE=1 fails).
fn has_shell(shell: &str) -> bool {
    if std::process::Command::new(shell).arg("-c").arg("true").output().is_ok() {
        return true;
    }
    assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "{shell} is required (WALJ_E2E_REQUIRE=1)");
    eprintln!("SKIPPED: {shell} is not installed (scripts/setup-test-deps.sh installs it)");
    false
}

/// Runs `script` in `shell` (`-c`) in the project, with the walj under test first on PATH:
/// (exit code, stdout, stderr).
fn in_shell(shell: &str, args: &[&str], script: &str, repo: &Repo) -> (i32, String, String) {
    let bin = crate::common::walj_bin();
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new(shell)
        .args(args)
        .arg("-c")
        .arg(script)
        .current_dir(&repo.root)
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .output()
        .unwrap();
    outcome(&out)
}

/// Writes `walj completions SHELL` into the project's home: its path.
fn completion_script(repo: &Repo, shell: &str) -> std::path::PathBuf {
    let script = repo.ok(&["completions", shell]);
    let path = repo.home.join(format!("walj.{shell}"));
    fs::write(&path, script).unwrap();
    path
}

#[test]
fn bash_completes_entry_and_session_ids() {
    let repo = settled_twin(0).with_home();
    let script = completion_script(&repo, "bash");
    // What bash does on TAB: COMP_WORDS / COMP_CWORD set, the function called with
    // (command, word, previous word).
    let complete = |line: &str| -> Vec<String> {
        let test = format!(
            "source {script}; COMP_LINE={line:?}; COMP_POINT=${{#COMP_LINE}}; read -ra COMP_WORDS <<< \"$COMP_LINE\"; \
             [[ \"$COMP_LINE\" == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); \
             _walj_ids walj \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script = script.display()
        );
        let (code, out, err) = in_shell("bash", &["--norc"], &test, &repo);
        assert_eq!(code, 0, "{line}: {err}");
        out.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
    };
    // Entries not settled, as walj shows them (the settled AbcdeY is left out but counted).
    assert_eq!(complete("walj diff "), ["Zq", "AbcdeX"]);
    assert_eq!(complete("walj diff ab"), ["AbcdeX"]);
    assert_eq!(complete("walj revert --dry-run toolu_01z"), ["toolu_01Zq"]);
    assert_eq!(complete("walj mark --done Zq "), ["Zq", "AbcdeX"]);
    // Sessions, for --session and `sessions show`.
    assert_eq!(complete("walj revert --session "), ["5e5510"]);
    assert_eq!(complete("walj sessions show 5E"), ["5e5510"]);
    // Elsewhere clap's completion runs: subcommands and flags.
    assert!(complete("walj sessions ").contains(&"show".to_string()));
    assert!(complete("walj diff --ap").contains(&"--applied".to_string()));
}

#[test]
fn zsh_completes_entry_and_session_ids() {
    if !has_shell("zsh") {
        return;
    }
    let repo = settled_twin(0).with_home();
    let script = completion_script(&repo, "zsh");
    // zsh's completion system stubbed: what `_walj` hands to compadd, or that it fell back
    // to clap's function.
    let complete = |words: &str| -> String {
        let test = format!(
            "compdef() {{ :; }}; compadd() {{ print -r -- \"compadd $*\"; print -rl -- \"${{vals[@]}}\" \"${{disp[@]}}\"; }}; \
             source {script}; _walj_clap() {{ print -r -- clap; }}; \
             words=({words}); CURRENT=${{#words}}; _walj",
            script = script.display()
        );
        let (code, out, err) = in_shell("zsh", &["-f"], &test, &repo);
        assert_eq!(code, 0, "{words}: {err}");
        out
    };
    let out = complete("walj diff ''");
    assert!(out.starts_with("compadd -U -V walj-ids -l -d disp -a vals\nZq\nAbcdeX\n"), "{out}");
    assert!(out.contains("Zq  -- applied c.txt") && out.contains("AbcdeX  -- applied a.txt"), "{out}");
    assert!(complete("walj --project . revert --session=5").contains("\n--session=5e5510\n"));
    assert_eq!(complete("walj sessions ''"), "clap\n");
}

#[test]
fn fish_completes_entry_and_session_ids() {
    if !has_shell("fish") {
        return;
    }
    let repo = settled_twin(0).with_home();
    let script = completion_script(&repo, "fish");
    let complete = |line: &str| -> String {
        let test = format!("source {}; complete -C {line:?}", script.display());
        let (code, out, err) = in_shell("fish", &["--no-config"], &test, &repo);
        assert_eq!(code, 0, "{line}: {err}");
        out
    };
    assert_eq!(complete("walj diff "), "Zq\tapplied c.txt\nAbcdeX\tapplied a.txt\n");
    assert_eq!(complete("walj diff abc"), "AbcdeX\tapplied a.txt\n");
    assert!(
        complete("walj recover --session ").starts_with("5e5510\tunknown "),
        "{}",
        complete("walj recover --session ")
    );
    assert!(complete("walj sessions show 5e").starts_with("5e5510\t"));
    assert!(complete("walj sessions ").contains("show\t"));
}

/// The release binary keeps its symbols (a panic's backtrace names the functions) and no
/// debug info (issue 16: 60 MB with line tables).
#[test]
fn the_release_profile_keeps_symbols_and_drops_debug_info() {
    let manifest: toml::Value =
        toml::from_str(&fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap()).unwrap();
    let release = &manifest["profile"]["release"];
    assert_eq!(release.get("debug"), Some(&toml::Value::Boolean(false)), "{release}");
    assert_eq!(release.get("strip").and_then(|s| s.as_str()), Some("debuginfo"), "{release}");
}

/// Runs `walj --project ROOT ARGS` on a pseudo-terminal (util-linux `script`) with `env`
/// set: everything the terminal showed. `None` (skipped, with a message) without `script`.
fn on_terminal(repo: &Repo, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    if !std::process::Command::new("script")
        .args(["-qec", "true", "/dev/null"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "script(1) is required (WALJ_E2E_REQUIRE=1)");
        eprintln!("SKIPPED: script(1) from util-linux is not installed");
        return None;
    }
    let mut line = vec![
        quote(&crate::common::walj_bin().to_string_lossy()),
        "--project".into(),
        quote(&repo.root.to_string_lossy()),
    ];
    line.extend(args.iter().map(|a| quote(a)));
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line.join(" "), "/dev/null"])
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env_remove("NO_COLOR")
        .env_remove("WALJ_PAGER")
        .env("TERM", "xterm")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn long_output_goes_through_the_pager_on_a_terminal_escaped() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let c = crate::common::Claude::new(&repo, "5e55a0b1-0000-4000-8000-0000000000aa");
    // A recorded file name that would retitle the terminal if it reached it raw.
    let evil = "e\x1b]2;OWNED\x07vil.txt";
    c.write("toolu_W", evil, "x\n");
    let pager = [("PAGER", "sed s/^/PAGED:/")];
    let Some(shown) = on_terminal(&repo, &["log", "--all"], &pager) else { return };
    assert!(shown.lines().any(|l| l.starts_with("PAGED:") && l.contains("vil.txt")), "{shown:?}");
    assert!(!shown.contains("\x1b]2;OWNED"), "recorded text reaches the pager escaped: {shown:?}");
    assert!(shown.contains("\\x1b]2;OWNED\\x07"), "{shown:?}");
    assert!(shown.contains("\x1b["), "colour stays on in the pager on a colour terminal: {shown:?}");
    // The diff is paged too; NO_COLOR turns colour off in the pager as well.
    let shown = on_terminal(&repo, &["diff", "toolu_W"], &[pager[0], ("NO_COLOR", "1")]).unwrap();
    assert!(shown.lines().any(|l| l.starts_with("PAGED:+x")), "{shown:?}");
    assert!(!shown.contains('\x1b'), "no escape byte at all under NO_COLOR: {shown:?}");
    // --no-pager, WALJ_PAGER=cat and a pipe print straight out.
    let shown = on_terminal(&repo, &["--no-pager", "log"], &pager).unwrap();
    assert!(!shown.contains("PAGED:") && shown.contains("vil.txt"), "{shown:?}");
    let shown = on_terminal(&repo, &["log"], &[pager[0], ("WALJ_PAGER", "cat")]).unwrap();
    assert!(!shown.contains("PAGED:") && shown.contains("vil.txt"), "{shown:?}");
    let piped = repo.walj(&["log"]).env("PAGER", "sed s/^/PAGED:/").output().unwrap();
    assert!(!String::from_utf8_lossy(&piped.stdout).contains("PAGED:"));
}

#[test]
fn help_has_a_global_options_heading_and_sessions_json_lists() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let c = crate::common::Claude::new(&repo, "5e55a0b1-0000-4000-8000-0000000000ab");
    c.start();
    c.write("toolu_W", "b.txt", "x\n");
    let help = repo.ok(&["--help"]);
    let global = help.find("Global options:").unwrap_or_else(|| panic!("{help}"));
    for flag in ["--project", "--journal", "--color", "--no-pager"] {
        assert!(help[global..].contains(flag), "{flag} under Global options: {help}");
    }
    assert_eq!(repo.json(&["sessions", "--json"]), repo.json(&["sessions", "list", "--json"]));
    for shell in ["bash", "zsh", "fish"] {
        let script = repo.ok(&["completions", shell]);
        let listed: Vec<&str> = script
            .lines()
            .filter(|l| {
                l.contains("__complete-ids")
                    && !l.contains("__complete-ids --shell")
                    && !l.trim_start().starts_with('#')
            })
            .collect();
        assert!(listed.is_empty(), "{shell} offers the hidden command: {listed:?}");
        assert!(script.contains("__complete-ids --shell"), "{shell} still asks walj for ids");
    }
}

/// `walj tui --demo ARGS` on a pseudo-terminal with TMPDIR = `tmp`, quit with `q` once the
/// dashboard is drawn: everything the terminal showed. `None` without `script`.
fn demo_in_pty(tmp: &std::path::Path, args: &[&str]) -> Option<String> {
    use std::io::{Read, Write};
    if !std::process::Command::new("script")
        .args(["-qec", "true", "/dev/null"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "script(1) is required (WALJ_E2E_REQUIRE=1)");
        eprintln!("SKIPPED: script(1) from util-linux is not installed");
        return None;
    }
    let line = format!("'{}' tui --demo {}", crate::common::walj_bin().display(), args.join(" "));
    let mut child = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(tmp)
        .env("TMPDIR", tmp)
        .env("TERM", "xterm")
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let drawn = |s: &[u8]| String::from_utf8_lossy(s).contains("\x1b[?1049h");
    let start = std::time::Instant::now();
    while !drawn(&seen.lock().unwrap()) {
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "the demo never opened");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"q").unwrap();
    stdin.flush().unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    assert!(status.success(), "{status}");
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    Some(shown)
}

#[test]
fn tui_demo_leaves_no_temp_folder_unless_kept() {
    let (_t, tmp) = crate::common::scratch();
    let Some(shown) = demo_in_pty(&tmp, &[]) else { return };
    assert!(shown.contains("The demo project was removed"), "{shown:?}");
    let left: Vec<_> = fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "the demo left {left:?} in TMPDIR");
    let shown = demo_in_pty(&tmp, &["--keep"]).unwrap();
    let left: Vec<_> = fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(shown.contains(&format!("The demo project is in {}", left[0].display())), "{shown:?}");
}

#[test]
fn doctor_ends_with_one_verdict_and_wraps_its_lines() {
    let repo = Repo::new(&[("a.txt", "one\n")]).with_home();
    let (code, out, err) = repo.run(&["doctor"]);
    assert_eq!(code, 2, "not installed is an error: {out}{err}");
    let last = out.lines().last().unwrap_or_default();
    assert_eq!(last, "Verdict: not working: 1 error; fix the [error] lines first.", "{out}");
    assert_eq!(out.matches("Verdict:").count(), 1, "{out}");
    assert!(out.contains("walj is not installed"), "{out}");
    // On a terminal the lines are wrapped (into a pipe they stay whole, for grep).
    if let Some(shown) = on_terminal(&repo, &["doctor"], &[("NO_COLOR", "1")]) {
        let widest = shown.lines().map(|l| l.trim_end().chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "a {widest}-column line: {shown}");
        assert!(shown.contains("Verdict: not working"), "{shown}");
    }
    assert!(out.lines().any(|l| l.chars().count() > 100), "whole lines into a pipe: {out}");
    repo.ok(&["install", "--local"]);
    let (_, out, _) = repo.run(&["doctor"]);
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("Verdict: healthy") || last.starts_with("Verdict: working, with"), "{out}");
}

#[test]
fn a_wide_branch_name_keeps_the_session_columns_aligned() {
    use unicode_width::UnicodeWidthStr;
    let repo = Repo::new(&[("a.txt", "one\n")]);
    repo.commit("first");
    repo.git(&["checkout", "-q", "-b", "機能-ログイン画面の修正"]);
    let c = crate::common::Claude::new(&repo, "5e55a0b1-0000-4000-8000-0000000000ac");
    c.start();
    c.write("toolu_W", "b.txt", "x\n");
    let out = repo.ok(&["sessions"]);
    let lines: Vec<&str> = out.lines().collect();
    let row = lines.iter().find(|l| l.contains("機能")).unwrap_or_else(|| panic!("the branch is shown: {out}"));
    assert_eq!(row.width(), lines[0].width(), "header and row end at the same column:\n{out}");
    let col = |l: &str, at: usize| l[..at].width();
    let prompts_header = lines[0].find("PROMPTS").unwrap();
    assert!(col(row, row.find("機能").unwrap()) + 14 <= col(lines[0], prompts_header), "{out}");
}

/// The display column (terminal cells) where `needle` starts in `line`.
fn display_col(line: &str, needle: &str) -> usize {
    use unicode_width::UnicodeWidthStr;
    let at = line.find(needle).unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
    line[..at].width()
}

#[test]
fn wide_paths_keep_every_table_aligned_recover_log_and_session_files() {
    let repo = Repo::new(&[("a.txt", "one\n"), ("設定/日本語の設定.json", "{}\n")]);
    repo.commit("first");
    let c = crate::common::Claude::new(&repo, "5e55a0b1-0000-4000-8000-0000000000ad");
    c.start();
    c.edit("toolu_CJK", "設定/日本語の設定.json", "{}", "{\"a\": 1}");
    c.edit("toolu_ASC", "a.txt", "one", "two");
    // recover: the tool column starts at one display column on every entry row.
    let out = repo.ok(&["recover"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("toolu_") || l.contains("  Edit  ")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(display_col(rows[0], "Edit"), display_col(rows[1], "Edit"), "recover:\n{out}");
    // log: the path column after the event column, aligned.
    let out = repo.ok(&["log", "--all"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("file_modified")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(display_col(rows[0], "file_modified"), display_col(rows[1], "file_modified"), "log:\n{out}");
    let path_col = |r: &str| display_col(r, if r.contains("a.txt") { "a.txt" } else { "設定" });
    assert_eq!(path_col(rows[0]), path_col(rows[1]), "log:\n{out}");
    // sessions show: the state column of the changed files, aligned.
    let out = repo.ok(&["sessions", "show", "5e55a0"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("1 entry, last")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let state_col = |r: &str| display_col(r, "applied");
    assert_eq!(state_col(rows[0]), state_col(rows[1]), "sessions show:\n{out}");
}

#[test]
fn the_doctor_caret_sits_under_a_bad_glob_after_a_wide_value() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    // The bad glob after wide text on its line (an inline table).
    repo.write(".walj/config.toml", "events = [{ event = \"設定の変更\", glob = \"日本/{a,b\" }]\n");
    let (_, out, err) = outcome(&repo.walj(&["doctor"]).output().unwrap());
    let text = format!("{out}{err}");
    let lines: Vec<&str> = text.lines().collect();
    let i = lines.iter().position(|l| l.contains("| events = ")).unwrap_or_else(|| panic!("{text}"));
    let caret = lines[i + 1];
    assert!(caret.trim_end().ends_with('^'), "{text}");
    // Under the glob's opening quote, past the wide event name.
    assert_eq!(display_col(caret, "^"), display_col(lines[i], "\"日本"), "{text}");
}

#[test]
fn recover_from_transcripts_that_finds_none_does_not_suggest_itself() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let claude = repo.root.join("claude-config");
    fs::create_dir_all(claude.join("projects")).unwrap();
    let run = |args: &[&str]| outcome(&repo.walj(args).env("CLAUDE_CONFIG_DIR", &claude).output().unwrap());
    let (code, out, err) = run(&["recover", "--from-transcripts", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("No Claude Code transcripts"), "{err}");
    assert!(!out.contains("--from-transcripts") && !err.contains("`walj recover --from-transcripts`"), "{out}{err}");
    // A plain recover still points at it.
    let (_, out, _) = run(&["recover"]);
    assert!(out.contains("`walj recover --from-transcripts` rebuilds it"), "{out}");
}
