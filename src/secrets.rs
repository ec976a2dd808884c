//! What walj never keeps: secret files, private keys, tokens (issue 13, item 10).
//!
//! Every capture decision asks this module, so the rules live in one place:
//! - [`secret_path`]: the default never-capture globs. They always apply; a user's
//!   `[capture] never` list adds to them (`config::Matcher::never_capture`). Public halves
//!   (`*.pub`) and `known_hosts` are not secrets.
//! - [`secret_content`]: a sniff of a file's first [`SNIFF_BYTES`] for a private key block
//!   (`-----BEGIN … PRIVATE KEY-----`), for files whose name says nothing.
//! - [`redact`]: secret-looking tokens in command lines and prompts (cloud keys, GitHub,
//!   Anthropic and OpenAI tokens, `Bearer …`, `password=…`) are replaced before a record is
//!   built (`journal::build`), so neither the journal nor a bundle carries them.
//! - [`findings`]: what looks secret in text about to leave the machine (`walj sessions
//!   export` warns).
//!
//! The path rules are matched by hand (no glob compiled in a hook); the sniff reads a few KB;
//! redaction is one pass over the text with no allocation when nothing matches. The hook
//! stays fast.

use std::borrow::Cow;

/// Files never captured, whatever the config says (matched case-insensitively on the path
/// relative to the project and on the file name).
pub const NEVER: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.ppk",
    "**/.ssh/*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "**/.aws/credentials",
    "*credentials*.json",
    "*secret*.{json,yaml,yml,toml,env,ini}",
    "*.keystore",
    "*.jks",
    "**/.docker/config.json",
    ".dockercfg",
    "**/.kube/config",
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.backup",
    "**/.terraform/**",
    "*.kdbx",
    "**/.gnupg/**",
    "*.ovpn",
    ".vault-token",
    ".htpasswd",
];

/// Exceptions to [`NEVER`]: public keys and host keys say nothing secret.
#[cfg_attr(not(test), allow(dead_code))] // named by the docs above; only the unit tests read it
pub(crate) const NOT_SECRET: &[&str] = &["*.pub", "known_hosts", "known_hosts.old"];

/// How much of a file [`secret_content`] reads.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// True when `rel` (a `/`-separated path inside the project) names a file the defaults never
/// capture: the globs of [`NEVER`] less [`NOT_SECRET`], matched on the path and on the file
/// name, ignoring case (a test pins that this equals those globs compiled with globset).
/// Matched by hand: it runs in every file hook, and compiling the globs costs more than the
/// whole match.
pub(crate) fn secret_path(rel: &str) -> bool {
    let path = rel.to_ascii_lowercase();
    let name = path.rsplit('/').next().unwrap_or(&path);
    if name.ends_with(".pub") || name == "known_hosts" || name == "known_hosts.old" {
        return false;
    }
    let dirs: Vec<&str> = path.split('/').collect();
    let parent = dirs.len().checked_sub(2).map(|i| dirs[i]);
    let (stem, ext) = match path.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => (stem, ext),
        _ => (path.as_str(), ""),
    };
    name == ".env"
        || name.starts_with(".env.")
        || matches!(ext, "pem" | "key" | "p12" | "pfx" | "ppk" | "keystore" | "jks")
        || ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"].iter().any(|p| name.starts_with(p))
        || dirs[..dirs.len() - 1].contains(&".ssh")
        || matches!(name, ".netrc" | "_netrc" | ".npmrc" | ".pypirc" | ".pgpass" | ".git-credentials" | ".dockercfg")
        || (name == "credentials" && parent == Some(".aws"))
        || (name == "config.json" && parent == Some(".docker"))
        || (name == "config" && parent == Some(".kube"))
        || matches!(ext, "tfvars" | "tfstate" | "kdbx" | "ovpn")
        || name.ends_with(".tfvars.json")
        || name.ends_with(".tfstate.backup")
        || dirs[..dirs.len() - 1].iter().any(|d| matches!(*d, ".terraform" | ".gnupg"))
        || matches!(name, ".vault-token" | ".htpasswd")
        || (ext == "json" && stem.contains("credentials"))
        || (matches!(ext, "json" | "yaml" | "yml" | "toml" | "env" | "ini") && stem.contains("secret"))
}

/// True when the first [`SNIFF_BYTES`] of `bytes` hold a private key block: a line
/// `-----BEGIN <anything> PRIVATE KEY-----` (PEM, OpenSSH, PKCS#8, encrypted) or a PGP
/// private key block.
pub(crate) fn secret_content(bytes: &[u8]) -> bool {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&head[at..], BEGIN) {
        let rest = &head[at + i + BEGIN.len()..];
        let line = &rest[..rest.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(rest.len()).min(64)];
        if memchr::memmem::find(line, b"PRIVATE KEY").is_some() {
            return true;
        }
        at += i + BEGIN.len();
    }
    false
}

/// What replaces a secret (the token's kind stays readable before it).
pub(crate) const REDACTED: &str = "[redacted]";

/// Token kinds recognised by a fixed prefix: (prefix, kind, shortest rest).
const PREFIXED: &[(&str, &str, usize)] = &[
    ("sk-ant-", "Anthropic key", 20),
    ("github_pat_", "GitHub token", 20),
    ("ghp_", "GitHub token", 20),
    ("gho_", "GitHub token", 20),
    ("ghu_", "GitHub token", 20),
    ("ghs_", "GitHub token", 20),
    ("ghr_", "GitHub token", 20),
    ("glpat-", "GitLab token", 20),
    ("sk-", "OpenAI key", 20),
    ("xoxb-", "Slack token", 10),
    ("xoxp-", "Slack token", 10),
    ("xoxa-", "Slack token", 10),
    ("sk_live_", "Stripe key", 16),
    ("rk_live_", "Stripe key", 16),
    ("AKIA", "AWS access key", 16),
    ("ASIA", "AWS access key", 16),
    ("AIza", "Google API key", 30),
];

/// Names whose value is a secret in `name=value` / `name: value` (matched as the end of the
/// name, case-insensitively: `DB_PASSWORD`, `--password`, `aws_secret_access_key`).
const SECRET_NAMES: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "secret_key",
    "secret_access_key",
    "client_secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "private_key",
    "auth",
];

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// One secret found in a text: its byte range (the part to hide) and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: &'static str,
}

/// Every secret-looking token of `text`, in order, not overlapping.
pub(crate) fn find(text: &str) -> Vec<Finding> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Most bytes start nothing [`at`] looks for: skip them without its checks (every hook
        // scans the file images it stores).
        if !STARTS[usize::from(b[i])] {
            i += 1;
            continue;
        }
        if let Some(f) = at(b, i) {
            i = f.end.max(i + 1);
            out.push(f);
        } else {
            i += 1;
        }
    }
    out
}

/// The bytes at which [`at`] can find something: a prefixed token's first letter
/// ([`PREFIXED`]), `Bearer`'s, and the `:` or `=` of a URL or a `name=value`.
const STARTS: [bool; 256] = {
    let mut t = [false; 256];
    let starts = b"sgxrABb:=";
    let mut k = 0;
    while k < starts.len() {
        t[starts[k] as usize] = true;
        k += 1;
    }
    t
};

/// A secret starting at `i`, if any.
fn at(b: &[u8], i: usize) -> Option<Finding> {
    let boundary = i == 0 || !word_char(b[i - 1]);
    let c = b[i];
    // Prefixed tokens.
    if boundary && matches!(c, b's' | b'g' | b'x' | b'r' | b'A') {
        for &(prefix, kind, min) in PREFIXED {
            if b[i..].starts_with(prefix.as_bytes()) {
                let start = i + prefix.len();
                let aws = prefix.starts_with('A');
                let end = start
                    + b[start..]
                        .iter()
                        .take_while(
                            |&&c| if aws { c.is_ascii_uppercase() || c.is_ascii_digit() } else { token_char(c) },
                        )
                        .count();
                if end - start >= min && (end == b.len() || !word_char(b[end])) {
                    return Some(Finding { start, end, kind });
                }
            }
        }
    }
    // `Bearer <token>` (HTTP authorization headers).
    if boundary && (c == b'B' || c == b'b') && b.len() > i + 7 && b[i..i + 6].eq_ignore_ascii_case(b"bearer") {
        let mut start = i + 6;
        if !b[start].is_ascii_whitespace() {
            return None;
        }
        while start < b.len() && b[start] == b' ' {
            start += 1;
        }
        let end = start
            + b[start..]
                .iter()
                .take_while(|&&c| token_char(c) || matches!(c, b'.' | b'~' | b'+' | b'/' | b'='))
                .count();
        if end - start >= 8 {
            return Some(Finding { start, end, kind: "bearer token" });
        }
        return None;
    }
    // `scheme://user:password@host`.
    if c == b':' && b[i..].starts_with(b"://") {
        let auth_start = i + 3;
        let auth_len = b[auth_start..].iter().take_while(|&&c| !c.is_ascii_whitespace() && c != b'/').count();
        let auth = &b[auth_start..auth_start + auth_len];
        if let Some(at_sign) = auth.iter().rposition(|&c| c == b'@')
            && let Some(colon) = auth[..at_sign].iter().position(|&c| c == b':')
            && at_sign > colon + 1
        {
            return Some(Finding {
                start: auth_start + colon + 1,
                end: auth_start + at_sign,
                kind: "password in a URL",
            });
        }
    }
    // `name=value`, `name: value`, `"name": "value"`.
    if c == b'=' || c == b':' {
        let name_end = if i > 0 && b[i - 1] == b'"' { i - 1 } else { i };
        let name_start = name_end - b[..name_end].iter().rev().take_while(|&&c| token_char(c) || c == b'.').count();
        let name = &b[name_start..name_end];
        let secret_name = SECRET_NAMES.iter().any(|n| {
            name.len() >= n.len()
                && name[name.len() - n.len()..].eq_ignore_ascii_case(n.as_bytes())
                && (name.len() == n.len() || !name[name.len() - n.len() - 1].is_ascii_alphabetic())
        });
        if !secret_name {
            return None;
        }
        let mut start = i + 1;
        while start < b.len() && b[start] == b' ' {
            start += 1;
        }
        // A quoted value runs to its closing quote, spaces included.
        let quote = b.get(start).copied().filter(|&q| q == b'"' || q == b'\'');
        if quote.is_some() {
            start += 1;
        }
        let end = start
            + b[start..]
                .iter()
                .take_while(|&&c| match quote {
                    Some(q) => c != q,
                    None => !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b'&' | b',' | b';' | b'}' | b')'),
                })
                .count();
        // `token: is missing` in prose is not a secret: with `:`, a value must look like one.
        let value = &b[start..end];
        let looks =
            if c == b'=' { !value.is_empty() } else { value.len() >= 8 && value.iter().any(u8::is_ascii_digit) };
        if looks && !value.starts_with(REDACTED.as_bytes()) && !value.starts_with(b"$") {
            return Some(Finding { start, end, kind: "password or key" });
        }
    }
    None
}

/// `text` with every secret-looking token replaced by [`REDACTED`] (borrowed when none).
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for f in found {
        out.push_str(&text[last..f.start]);
        out.push_str(REDACTED);
        last = f.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// The kinds of secret found in `bytes` (read as text), each once, for a warning.
pub(crate) fn findings(bytes: &[u8]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    if secret_content(bytes) || memchr::memmem::find(bytes, b"PRIVATE KEY-----").is_some() {
        kinds.push("private key");
    }
    // Valid UTF-8 (nearly every file) is checked far faster than a lossy pass reads it.
    let text = std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed);
    for f in find(&text) {
        if !kinds.contains(&f.kind) {
            kinds.push(f.kind);
        }
    }
    kinds
}

/// What `walj sessions export` says before a bundle leaves the machine: each part of the
/// bundle (journal records, file images, transcript) that holds something secret-looking.
pub(crate) fn bundle_warnings(records: &[u8], objects: &[(String, Vec<u8>)], transcript: Option<&[u8]>) -> Vec<String> {
    let mut parts = Vec::new();
    let list = |kinds: Vec<&str>| kinds.join(", ");
    let kinds = findings(records);
    if !kinds.is_empty() {
        parts.push(format!("journal records ({})", list(kinds)));
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut images = 0;
    for (_, bytes) in objects {
        let found = findings(bytes);
        if !found.is_empty() {
            images += 1;
        }
        for k in found {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    if images > 0 {
        parts.push(format!("{images} file image{} ({})", if images == 1 { "" } else { "s" }, list(kinds)));
    }
    if let Some(t) = transcript {
        let kinds = findings(t);
        if !kinds.is_empty() {
            parts.push(format!("the transcript ({})", list(kinds)));
        }
    }
    parts
        .into_iter()
        .map(|p| {
            format!("the bundle carries something that looks secret in {p}: whoever can read the bundle can read it")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte [`at`] can return a finding for is in [`STARTS`]: the skip in [`find`]
    /// changes nothing (a scan calling `at` at every byte finds the same).
    #[test]
    fn the_skip_finds_what_a_scan_of_every_byte_finds() {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec![
            "sk-ant-abcdefghijklmnopqrstu",
            "ghp_ABCDEFGHIJKLMNOPQRSTUV",
            "xoxb-1234567890ab",
            "AKIA",
            "AKIAABCDEFGHIJKLMNOP",
            "Bearer abcdefgh1234",
            "bearer  x",
            "https://u:pw@h/",
            "a://b@c",
            "token=",
            "password = \"s3cr3t pass\"",
            "\"api_key\": \"12345678x\"",
            "key: is missing",
            "secret=$VAR",
            " ",
            "\n",
            "x",
            "=",
            ":",
            "é",
            "sk_live_0123456789abcdef",
            "rk_live_",
        ]);
        proptest!(ProptestConfig::with_cases(400), |(parts in prop::collection::vec(piece, 0..12))| {
            let text: String = parts.concat();
            let b = text.as_bytes();
            let mut every = Vec::new();
            let mut i = 0;
            while i < b.len() {
                if let Some(f) = at(b, i) {
                    i = f.end.max(i + 1);
                    every.push((f.start, f.end, f.kind));
                } else {
                    i += 1;
                }
            }
            let skipped: Vec<_> = find(&text).into_iter().map(|f| (f.start, f.end, f.kind)).collect();
            prop_assert_eq!(skipped, every);
        });
    }

    use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

    fn compile(globs: &[&str]) -> GlobSet {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            b.add(GlobBuilder::new(g).case_insensitive(true).build().unwrap());
        }
        b.build().unwrap()
    }

    /// The hand matcher is the documented globs, compiled (path or file name, any case).
    #[test]
    fn secret_path_is_the_never_globs() {
        let (never, except) = (compile(NEVER), compile(NOT_SECRET));
        let by_glob = |rel: &str| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            (never.is_match(rel) || never.is_match(name)) && !(except.is_match(rel) || except.is_match(name))
        };
        let dirs = [
            "",
            "a/",
            "a/b/",
            ".ssh/",
            "x/.ssh/",
            ".aws/",
            "u/.aws/",
            ".docker/",
            ".kube/",
            "k/.kube/",
            ".terraform/",
            "infra/.terraform/providers/",
            ".gnupg/",
            "h/.gnupg/private-keys-v1.d/",
            "secrets/",
            "my-credentials/",
            "Keys/",
        ];
        let names = [
            ".env",
            ".ENV",
            ".env.local",
            "env",
            ".envrc",
            "x.env",
            "server.pem",
            "tls.KEY",
            "a.key.txt",
            "c.p12",
            "c.pfx",
            "id_rsa",
            "id_rsa.pub",
            "ID_RSA_old",
            "id_dsa",
            "id_ecdsa_sk",
            "id_ed25519",
            "id_ed25519.pub",
            "me.ppk",
            "config",
            "known_hosts",
            "known_hosts.old",
            "authorized_keys",
            "prod.tfvars",
            "prod.TFVARS.json",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            "main.tf",
            "vault.kdbx",
            "office.ovpn",
            ".vault-token",
            ".htpasswd",
            "pubring.kbx",
            "kubeconfig",
            ".netrc",
            "_netrc",
            ".npmrc",
            ".pypirc",
            ".pgpass",
            ".git-credentials",
            "credentials",
            "credentials.json",
            "gcp-credentials-prod.json",
            "credentials.rs",
            "secrets.rs",
            "secret.json",
            "Secrets.YAML",
            "app-secret.env",
            "secret.ini",
            "secret.txt",
            "config.json",
            "release.keystore",
            "app.jks",
            ".dockercfg",
            "main.rs",
            "readme.md",
            "x.pub",
        ];
        for d in dirs {
            for n in names {
                let rel = format!("{d}{n}");
                assert_eq!(secret_path(&rel), by_glob(&rel), "{rel}");
            }
        }
    }

    #[test]
    fn secret_paths() {
        for p in [
            ".env",
            "deploy/.env.prod",
            "keys/server.pem",
            "tls.key",
            "id_rsa",
            "home/.ssh/id_ed25519",
            "home/.ssh/id_ecdsa_sk",
            "home/.ssh/config",
            ".ssh/authorized_keys",
            "putty/me.ppk",
            ".netrc",
            ".npmrc",
            "pkg/.pypirc",
            ".pgpass",
            ".git-credentials",
            "home/.aws/credentials",
            "gcp-credentials.json",
            "service_credentials_prod.json",
            "config/secrets.yaml",
            "Secret.JSON",
            "app-secret.env",
            "release.keystore",
            "android/app.jks",
            "home/.docker/config.json",
            "cert.p12",
        ] {
            assert!(secret_path(p), "{p} is a secret");
        }
        for p in [
            "src/secrets.rs",
            "src/env.rs",
            "home/.ssh/id_rsa.pub",
            "home/.ssh/id_ed25519.pub",
            "home/.ssh/known_hosts",
            "docs/secret-handling.md",
            "credentials.rs",
            "config.json",
            "docker/config.json",
        ] {
            assert!(!secret_path(p), "{p} is not a secret");
        }
    }

    #[test]
    fn private_keys_are_sniffed() {
        for k in [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl",
            "-----BEGIN PRIVATE KEY-----\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\r\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
            "config:\n  key: |\n    -----BEGIN RSA PRIVATE KEY-----\n",
        ] {
            assert!(secret_content(k.as_bytes()), "{k:?}");
        }
        for k in ["-----BEGIN CERTIFICATE-----\n", "-----BEGIN PUBLIC KEY-----\n", "let s = \"PRIVATE KEY\";"] {
            assert!(!secret_content(k.as_bytes()), "{k:?}");
        }
        // Only the head is read.
        let mut late = vec![b'x'; SNIFF_BYTES + 10];
        late.extend_from_slice(b"\n-----BEGIN RSA PRIVATE KEY-----\n");
        assert!(!secret_content(&late));
    }

    /// The redaction table: input → what the journal keeps.
    #[test]
    fn redaction_table() {
        let cases: &[(&str, &str)] = &[
            ("ls -la", "ls -la"),
            ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "export AWS_ACCESS_KEY_ID=AKIA[redacted]"),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY aws s3 ls",
                "AWS_SECRET_ACCESS_KEY=[redacted] aws s3 ls",
            ),
            (
                "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r",
                "git clone https://ghp_[redacted]@github.com/o/r",
            ),
            (
                "GH_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz gh pr list",
                "GH_TOKEN=[redacted] gh pr list",
            ),
            ("use github_pat_11ABCDEFG0123456789_abcdefghijkl please", "use github_pat_[redacted] please"),
            ("my key is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345-xyz", "my key is sk-ant-[redacted]"),
            (
                "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx1234 python run.py",
                "OPENAI_API_KEY=[redacted] python run.py",
            ),
            ("call with sk-abcdefghijklmnopqrstuvwxyz123456", "call with sk-[redacted]"),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig' https://api",
                "curl -H 'Authorization: Bearer [redacted]' https://api",
            ),
            ("mysql --password=hunter2 -u root", "mysql --password=[redacted] -u root"),
            ("psql \"host=db password=s3cr3t dbname=x\"", "psql \"host=db password=[redacted] dbname=x\""),
            ("{\"api_key\": \"abc123def456ghi\"}", "{\"api_key\": \"[redacted]\"}"),
            ("DB_PASSWORD='correct horse' ./run", "DB_PASSWORD='[redacted]' ./run"),
            ("git push https://me:hunter2@example.com/r.git", "git push https://me:[redacted]@example.com/r.git"),
            ("PWD=/tmp/x make", "PWD=/tmp/x make"),
            ("xoxb-123456789012-abcdefghij slack", "xoxb-[redacted] slack"),
            // Not secrets.
            ("the token: is missing from the request", "the token: is missing from the request"),
            ("cargo build --package task-skeleton", "cargo build --package task-skeleton"),
            ("rm -rf disk-abcdefghijklmnopqrstuvwxyz", "rm -rf disk-abcdefghijklmnopqrstuvwxyz"),
            ("echo $PASSWORD; PASSWORD=$SECRET ./x", "echo $PASSWORD; PASSWORD=$SECRET ./x"),
            ("Bearer of bad news", "Bearer of bad news"),
            ("use AKIA for aws", "use AKIA for aws"),
            ("password=[redacted]", "password=[redacted]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), *want, "{input}");
        }
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn findings_name_kinds_once() {
        let text = b"ghp_abcdefghijklmnopqrstuvwxyz0123456789 and ghp_abcdefghijklmnopqrstuvwxyz0123456780\n-----BEGIN OPENSSH PRIVATE KEY-----";
        assert_eq!(findings(text), vec!["private key", "GitHub token"]);
        assert!(findings(b"plain text").is_empty());
    }
}

#[cfg(test)]
mod more_kinds {
    use super::secret_path;

    /// Cluster, infrastructure, password-manager, GnuPG, VPN and Vault files (issue 26 item 7).
    #[test]
    fn infrastructure_and_vault_files_are_secrets() {
        for rel in [
            ".kube/config",
            "home/.kube/config",
            "prod.tfvars",
            "env/prod.auto.tfvars.json",
            "terraform.tfstate",
            "infra/terraform.tfstate.backup",
            ".terraform/providers/x/terraform-provider-aws",
            "infra/.terraform/terraform.tfstate",
            "keys.kdbx",
            ".gnupg/private-keys-v1.d/AB12.key",
            "h/.gnupg/pubring.kbx",
            "vpn/office.ovpn",
            ".vault-token",
            "site/.htpasswd",
        ] {
            assert!(secret_path(rel), "{rel}");
        }
        for rel in ["main.tf", "kube/config", "config", "variables.tf", "docs/terraform.md"] {
            assert!(!secret_path(rel), "{rel}");
        }
    }
}
