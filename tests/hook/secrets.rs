//! No secret leaves the machine. Through the real binary: secret files and
//! private keys are recorded by id only, a user's `never` list adds to the defaults, tokens in
//! command lines and prompts never reach the journal, and `walj sessions export` warns.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Claude, Repo};
use serde_json::json;
use walj::journal::{Blob, JournalWriter, Record, nocap, op};
use walj::store::Store;

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n";
const TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const ANTHROPIC: &str = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345";

/// (nocap, whether the store holds the bytes) of the Write `id`'s post-image.
fn captured(repo: &Repo, id: &str) -> (Option<String>, bool) {
    let r = repo.journal_records().into_iter().find(|r| r.id == id && r.op == op::APPLIED).unwrap();
    let stored = match &r.after {
        Some(Blob::Id(b)) => Store::new(repo.root.join(".walj/store")).get(b).is_ok(),
        _ => false,
    };
    (r.nocap, stored)
}

#[test]
fn secret_files_and_private_keys_are_never_stored() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let claude = Claude::new(&repo, "s-secrets");
    claude.start();
    let secret = |rel: &str, content: &str| (rel.to_string(), content.to_string(), true);
    let plain = |rel: &str, content: &str| (rel.to_string(), content.to_string(), false);
    let cases = [
        secret("home/.ssh/id_ed25519", KEY),
        secret("home/.ssh/config", "Host x\n"),
        secret("deploy/.env", "DB=1\n"),
        secret("config/secrets.yaml", "db: x\n"),
        secret("home/.aws/credentials", "[default]\n"),
        secret("gcp-credentials.json", "{}\n"),
        secret(".npmrc", "//registry/:_authToken=x\n"),
        secret("android/release.keystore", "x"),
        // A private key under a name that says nothing: the content sniff.
        secret("notes/backup.txt", KEY),
        plain("home/.ssh/id_ed25519.pub", "ssh-ed25519 AAAA me\n"),
        plain("home/.ssh/known_hosts", "host ssh-ed25519 AAAA\n"),
        plain("src/secrets.rs", "pub fn f() {}\n"),
    ];
    for (i, (rel, content, is_secret)) in cases.iter().enumerate() {
        let id = format!("t-{i}");
        claude.write(&id, rel, content);
        let (nc, stored) = captured(&repo, &id);
        if *is_secret {
            assert_eq!((nc.as_deref(), stored), (Some(nocap::NEVER_CAPTURE), false), "{rel}");
        } else {
            assert_eq!((nc, stored), (None, true), "{rel}");
        }
    }
    // Nothing of the key is anywhere in the store: its pre-image from `originalFile` neither.
    claude.write("t-again", "notes/backup.txt", "replaced\n");
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-again" && r.op == op::APPLIED).unwrap();
    if let Some(Blob::Id(b)) = &r.before {
        assert!(Store::new(repo.root.join(".walj/store")).get(b).is_err(), "the old key's bytes were stored");
    }
}

#[test]
fn a_users_never_list_adds_to_the_defaults() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    std::fs::create_dir_all(repo.root.join(".walj")).unwrap();
    std::fs::write(repo.root.join(".walj/config.toml"), "[capture]\nnever = [\"private/**\"]\n").unwrap();
    let claude = Claude::new(&repo, "s-never");
    claude.start();
    claude.write("t-env", ".env", "TOKEN=1\n");
    claude.write("t-own", "private/notes.txt", "mine\n");
    claude.write("t-ok", "src/main.rs", "fn main() {}\n");
    assert_eq!(captured(&repo, "t-env"), (Some(nocap::NEVER_CAPTURE.into()), false), "the default list still applies");
    assert_eq!(captured(&repo, "t-own"), (Some(nocap::NEVER_CAPTURE.into()), false));
    assert_eq!(captured(&repo, "t-ok"), (None, true));
}

#[test]
fn tokens_in_commands_and_prompts_never_reach_the_journal() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let claude = Claude::new(&repo, "s-tokens");
    claude.start();
    claude.prompt(&format!("use my key {ANTHROPIC} and push with {TOKEN}"));
    let bash = |event: &str| {
        json!({
            "session_id": "s-tokens", "cwd": repo.root, "hook_event_name": event, "tool_name": "Bash",
            "tool_use_id": "t-bash",
            "tool_input": {"command": format!("curl -H 'Authorization: Bearer {TOKEN}' -d password=hunter2 https://x"),
                           "description": format!("call the API with {TOKEN}")},
            "tool_response": {"stdout": "", "stderr": ""},
            "error": format!("Exit code 1\nbad credentials for {TOKEN}"),
        })
        .to_string()
    };
    repo.hook(&bash("PreToolUse"));
    repo.hook(&bash("PostToolUseFailure"));
    let journal = String::from_utf8(repo.journal_bytes()).unwrap();
    for secret in [TOKEN, ANTHROPIC, "hunter2"] {
        assert!(!journal.contains(secret), "{secret} reached the journal:\n{journal}");
    }
    assert!(journal.contains("sk-ant-[redacted]") && journal.contains("Bearer [redacted]"), "{journal}");
    assert!(journal.contains("password=[redacted]"), "{journal}");
    // The redacted text is what every reader shows.
    let show = repo.ok(&["sessions", "show", "s-toke"]);
    assert!(show.contains("use my key sk-ant-[redacted]"), "{show}");
}

#[test]
fn export_warns_when_a_bundle_would_carry_a_secret() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let claude = Claude::new(&repo, "s-export");
    claude.start();
    claude.write("t-clean", "b.txt", "b\n");
    let out = repo.root.join("clean.walj");
    let (code, _, err) = repo.run(&["sessions", "export", "s-expo", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("looks secret"), "{err}");
    // What an older walj kept: a token in a record, a private key's image.
    let store = Store::new(repo.root.join(".walj/store"));
    let key_id = store.put(KEY.as_bytes()).unwrap();
    let mut r = Record::new(op::APPLIED, "s-export");
    r.id = "t-old".into();
    r.path = "notes/key.txt".into();
    r.tool = Some("Write".into());
    r.after = Some(Blob::Id(key_id));
    let r = r.with("note", format!("pushed with {TOKEN}"));
    JournalWriter::new(&repo.journal()).append(&r).unwrap();
    let out = repo.root.join("secret.walj");
    let (code, _, err) = repo.run(&["sessions", "export", "s-expo", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("looks secret in journal records (GitHub token)"), "{err}");
    assert!(err.contains("looks secret in 1 file image (private key)"), "{err}");
}
