//! The floors of the house: which module may import which.
//!
//! walj's modules stand on five floors, from the ground up: **ground** (no knowledge of
//! Claude Code or of the journal: files, digests, git, processes, encryption, secrets),
//! **boundary** (the formats walj reads and writes: Claude Code's, the journal's, the image
//! store's, the project's and the config's), **model** (what the records mean: the fold, the
//! agents' event model, the Bash snapshots), **actions** (what walj does with them: triage,
//! sessions, sync, import, checkpoints, retention, bisect) and **faces** (what the user sees and
//! runs: reports, the hook, the TUI, doctor, the commands). A module imports only from its own
//! floor or below, so a change on a floor never has to look upward to know what it breaks.
//!
//! This test reads every file under `src/` (its `use` lines and every `crate::…`, `super::…`
//! and child-module path in code; comments and strings are skipped, so a doc link is not an
//! import) and checks each against [`FLOORS`]. [`FLOORS`] is the one place to change when the
//! house changes; an import that must still run upward is listed in [`EXCEPTIONS`] with the
//! reason, and [`NEVER`] holds the imports that must never come back whatever the floors say.
//!
//! `cargo test --test house floors:: -- --ignored --nocapture` prints the figures: the imports running
//! back up and the circles of the file graph (strongly connected sets of files).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of `src/lib.rs`, by floor, from the ground up.
const FLOORS: &[(&str, &[&str])] = &[
    ("ground", &["fsutil", "sha", "git", "procinfo", "crypt", "secrets", "sampled", "watch"]),
    ("boundary", &["claude", "journal", "store", "project", "config", "failmark"]),
    // `present` is the words and the one diff model (what a state means, the text helpers and
    // escaping, the diff of two sides): it draws nothing and imports only the model and the
    // ground, and the actions need it (a handoff's brief, a revert's binary check). Drawing
    // (`style`'s ANSI, `report`, `tui`) stays on the faces floor.
    ("model", &["agents", "fold", "bashsnap", "present"]),
    ("actions", &["triage", "session", "sync", "import", "checkpoint", "retention", "bisect"]),
    ("faces", &["report", "announce", "style", "hook", "tui", "doctor", "compact", "plugin", "mcp", "cmd", "cli"]),
];

/// Imports allowed to run upward for now: (from module, to module, why).
/// Each one is a debt: move the code to its floor and delete the line.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    // None left: add one only with the reason, as a debt to pay.
];

/// Imports that must never exist, whatever the floors: (from, to, why).
const NEVER: &[(&str, &str, &str)] = &[
    ("journal", "fold", "the line format knows nothing of what the lines mean"),
    ("agents", "import", "the live hook's event model never reaches into import code"),
    ("store", "fold", "images are addressed by content, not by fold state"),
    ("fold", "sync", "the fold reads journals; where another machine's copy lives is a path"),
];

/// Circles of files (each file reaches every other through imports) that span more than one
/// folder, by the top-level modules they join, while they last: (modules, why).
const WIDE_CIRCLES: &[(&[&str], &str)] = &[
    // None left.
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|(_, mods)| mods.contains(&module))
}

/// One reference from a file to a module of the crate.
#[derive(Debug, Clone)]
struct Import {
    /// The file that holds it, relative to the crate root (`src/fold/ids.rs`).
    file: String,
    line: usize,
    /// The module path it names, from the crate root (`["sync", "remotes"]`).
    path: Vec<String>,
}

impl Import {
    fn source_module(&self) -> String {
        module_path_of(&self.file).first().cloned().unwrap_or_default()
    }
    fn target_module(&self) -> &str {
        &self.path[0]
    }
}

// ---------------------------------------------------------------------------------------
// Reading the sources

/// The checkout read: this one, or `WALJ_FLOORS_ROOT` (the figures of another checkout, e.g.
/// `git archive` of an older commit unpacked in a temp folder).
fn crate_root() -> PathBuf {
    std::env::var_os("WALJ_FLOORS_ROOT").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn src_dir() -> PathBuf {
    crate_root().join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/fold/ids.rs` → `["fold", "ids"]`; `src/fold/mod.rs` → `["fold"]`; `src/lib.rs` → `[]`.
fn module_path_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_prefix("src/").unwrap_or(rel);
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// The tokens of Rust source that matter to paths: identifiers (with `$crate` as `crate`),
/// `::`, and single punctuation. Comments, strings, chars and lifetimes are dropped.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

fn lex(src: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let n = b.len();
    while i < n {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && i + 1 < n && b[i + 1] == '/' {
            while i < n && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && i + 1 < n && b[i + 1] == '*' {
            let mut depth = 0;
            while i < n {
                if b[i] == '/' && i + 1 < n && b[i + 1] == '*' {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && i + 1 < n && b[i + 1] == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if (c == 'r' || c == 'b') && raw_string_start(&b, i).is_some() {
            let (hashes, body) = raw_string_start(&b, i).unwrap_or((0, i));
            i = body;
            while i < n {
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                if b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' || (c == 'b' && b.get(i + 1) == Some(&'"')) {
            i += if c == 'b' { 2 } else { 1 };
            while i < n && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < n && b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < n && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' || (c == '$' && b.get(i + 1) == Some(&'c')) {
            let start = if c == '$' { i + 1 } else { i };
            i = start;
            while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let word: String = b[start..i].iter().collect();
            let word = word.strip_prefix("r#").map(str::to_string).unwrap_or(word);
            out.push((Tok::Ident(word), line));
        } else if c.is_ascii_digit() {
            while i < n && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                if b[i] == '.' && b.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// `r"`, `r#"`, `br"`, `br#"` at `i`: the number of `#` and where the body starts.
fn raw_string_start(b: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b.get(j) == Some(&'b') {
        j += 1;
    }
    if b.get(j) != Some(&'r') {
        return None;
    }
    // Not the tail of an identifier (`bar"` is not a raw string, `for` is not either).
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

/// The module paths a path expression at `toks[i..]` names, starting after its root: for
/// `a::b::{c, d::e}` → `[a, b, c]`, `[a, b, d, e]` (identifiers only; the caller trims them to
/// files). `i` points at the first identifier or `{`.
fn path_tails(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(i) {
            Some((Tok::Ident(w), _)) => {
                path.push(w.clone());
                if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) {
                    i += 2;
                    continue;
                }
                out.push(path);
                return;
            }
            Some((Tok::Punct('{'), _)) => {
                // Each item of the group starts after `{` or a `,` at depth 1.
                let mut depth = 0;
                let mut j = i;
                let mut item_start = true;
                while let Some((t, _)) = toks.get(j) {
                    match t {
                        Tok::Punct('{') => {
                            depth += 1;
                            if depth == 1 {
                                item_start = true;
                                j += 1;
                                continue;
                            }
                        }
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Punct(',') if depth == 1 => {
                            item_start = true;
                            j += 1;
                            continue;
                        }
                        _ => {}
                    }
                    if item_start && depth == 1 {
                        item_start = false;
                        if matches!(t, Tok::Ident(w) if w != "self") {
                            path_tails(toks, j, path.clone(), out);
                        } else if !path.is_empty() {
                            out.push(path.clone());
                        }
                    }
                    j += 1;
                }
                return;
            }
            _ => {
                if !path.is_empty() {
                    out.push(path);
                }
                return;
            }
        }
    }
}

/// Every reference a file makes to a module path of the crate, resolved from the crate root.
fn imports_of(rel: &str, src: &str) -> Vec<Import> {
    let toks = lex(src);
    let file_path = module_path_of(rel);
    // Child modules declared in this file (`mod model;`) are reachable by their bare name.
    let mut children = BTreeSet::new();
    for w in toks.windows(3) {
        if let [(Tok::Ident(m), _), (Tok::Ident(name), _), (Tok::Punct(';'), _)] = w
            && m == "mod"
        {
            children.insert(name.clone());
        }
    }
    // Inline modules (`mod tests { … }`) shift what `super` means: a stack of (name, depth).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let prev_is_path = i > 0 && toks[i - 1].0 == Tok::Path;
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) = (toks.get(i + 1), toks.get(i + 2)) {
                    inline.push((name.clone(), depth));
                }
            }
            Tok::Ident(w) if !prev_is_path && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) => {
                let here: Vec<String> =
                    file_path.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
                let (root, start) = match w.as_str() {
                    "crate" => (Some(Vec::new()), i + 2),
                    "self" => (Some(here.clone()), i + 2),
                    "super" => {
                        let mut at = here.clone();
                        let mut j = i;
                        let mut ok = true;
                        while matches!(toks.get(j), Some((Tok::Ident(s), _)) if s == "super")
                            && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::Path)
                        {
                            ok &= at.pop().is_some();
                            j += 2;
                        }
                        (ok.then_some(at), j)
                    }
                    // A child module by its bare name, from the file that declares it.
                    name if inline.is_empty() && children.contains(name) => (Some(file_path.clone()), i),
                    _ => (None, i),
                };
                if let Some(root) = root {
                    let mut tails = Vec::new();
                    path_tails(&toks, start, root, &mut tails);
                    for path in tails {
                        if !path.is_empty() {
                            out.push(Import { file: rel.to_string(), line: *line, path });
                        }
                    }
                    // Skip past the path we just read (its idents are not new roots).
                    i = start.max(i + 1);
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

struct Crate {
    /// Top-level modules declared in `src/lib.rs`.
    modules: Vec<String>,
    /// Files relative to the crate root, with their text.
    files: BTreeMap<String, String>,
    imports: Vec<Import>,
}

fn read_crate() -> Crate {
    let root = crate_root();
    let mut paths = Vec::new();
    rust_files(&src_dir(), &mut paths);
    let mut files = BTreeMap::new();
    for p in paths {
        let rel = p.strip_prefix(&root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
        // The binary is walj's outermost face: it only calls `walj::cli` and friends.
        if rel == "src/main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
        files.insert(rel, text);
    }
    let lib = files.get("src/lib.rs").cloned().unwrap_or_default();
    let modules = lex(&lib)
        .windows(3)
        .filter_map(|w| match w {
            [(Tok::Ident(m), _), (Tok::Ident(name), _), (Tok::Punct(';'), _)] if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect();
    let mut imports = Vec::new();
    for (rel, text) in &files {
        if rel == "src/lib.rs" {
            continue;
        }
        imports.extend(imports_of(rel, text));
    }
    Crate { modules, files, imports }
}

impl Crate {
    /// The file a module path names: the deepest prefix that is a file of the crate.
    fn file_of(&self, path: &[String]) -> Option<String> {
        for len in (1..=path.len()).rev() {
            let p = path[..len].join("/");
            for cand in [format!("src/{p}.rs"), format!("src/{p}/mod.rs")] {
                if self.files.contains_key(&cand) {
                    return Some(cand);
                }
            }
        }
        None
    }

    /// References between two different top-level modules.
    fn cross(&self) -> impl Iterator<Item = &Import> {
        self.imports.iter().filter(|imp| {
            self.modules.iter().any(|m| m == imp.target_module()) && imp.source_module() != imp.target_module()
        })
    }

    /// Distinct (file, target module) pairs that run from a lower floor to a higher one.
    fn upward(&self) -> BTreeMap<(String, String), usize> {
        let mut up = BTreeMap::new();
        for imp in self.cross() {
            let (from, to) = (imp.source_module(), imp.target_module().to_string());
            if let (Some(f), Some(t)) = (floor_of(&from), floor_of(&to))
                && t > f
            {
                up.entry((imp.file.clone(), to)).or_insert(imp.line);
            }
        }
        up
    }

    /// The file graph's circles: strongly connected sets of more than one file (Tarjan).
    fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.files.keys().collect();
        let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut edges = vec![BTreeSet::new(); names.len()];
        for imp in &self.imports {
            if let (Some(&from), Some(to)) = (index.get(&imp.file), self.file_of(&imp.path))
                && let Some(&to) = index.get(&to)
                && to != from
            {
                edges[from].insert(to);
            }
        }
        tarjan(&edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
                c.sort();
                c
            })
            .collect()
    }
}

fn tarjan(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct St<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut St, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        let succ: Vec<usize> = s.edges[v].iter().copied().collect();
        for w in succ {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let n = edges.len();
    let mut s = St {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The folders `files` are in, a module's root file counting as in its folder
/// (`src/bashsnap.rs` is in `src/bashsnap`, as `src/fold/mod.rs` is in `src/fold`).
fn folders(files: &[String]) -> BTreeSet<String> {
    let root = crate_root();
    files
        .iter()
        .map(|f| {
            let own = f.strip_suffix(".rs").unwrap_or(f);
            if root.join(own).is_dir() {
                own.to_string()
            } else {
                Path::new(f).parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The rules

#[test]
fn every_module_of_lib_rs_is_on_exactly_one_floor() {
    let krate = read_crate();
    assert!(krate.modules.len() > 20, "src/lib.rs read as {:?}", krate.modules);
    let mut problems = Vec::new();
    for m in &krate.modules {
        let on: Vec<&str> = FLOORS.iter().filter(|(_, mods)| mods.contains(&m.as_str())).map(|(f, _)| *f).collect();
        if on.len() != 1 {
            problems.push(format!("`{m}` is on {} floors {on:?}: put it on one in tests/house/floors.rs", on.len()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_import_runs_up_a_floor_except_the_listed_ones() {
    let krate = read_crate();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for ((file, to), line) in krate.upward() {
        let from = module_path_of(&file)[0].clone();
        if let Some(e) = EXCEPTIONS.iter().find(|(f, t, _)| *f == from && *t == to) {
            used.insert((e.0, e.1));
            continue;
        }
        problems.push(format!(
            "{file}:{line}: `{from}` ({}) imports `{to}` ({}), a higher floor",
            FLOORS[floor_of(&from).unwrap_or(0)].0,
            FLOORS[floor_of(&to).unwrap_or(0)].0,
        ));
    }
    for (f, t, _) in EXCEPTIONS {
        if !used.contains(&(*f, *t)) {
            problems.push(format!("exception `{f}` → `{t}` is no longer needed: delete it"));
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_imports_that_must_never_come_back_are_absent() {
    let krate = read_crate();
    let mut problems = Vec::new();
    for imp in krate.cross() {
        let from = imp.source_module();
        if EXCEPTIONS.iter().any(|(f, t, _)| *f == from && *t == imp.target_module()) {
            continue;
        }
        if let Some((_, _, why)) = NEVER.iter().find(|(f, t, _)| *f == from && *t == imp.target_module()) {
            problems.push(format!("{}:{}: `{from}` imports `{}`: {why}", imp.file, imp.line, imp.path.join("::")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_circle_of_files_spans_more_than_one_folder_except_the_listed_ones() {
    let krate = read_crate();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for c in krate.circles() {
        let f = folders(&c);
        if f.len() < 2 {
            continue;
        }
        let mods: BTreeSet<String> = c.iter().map(|file| module_path_of(file)[0].clone()).collect();
        if let Some(w) =
            WIDE_CIRCLES.iter().find(|(m, _)| m.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>() == mods)
        {
            seen.insert(w.0);
            continue;
        }
        problems.push(format!("a circle of {} files over {} folders {f:?}: {}", c.len(), f.len(), c.join(", ")));
    }
    for (mods, _) in WIDE_CIRCLES {
        if !seen.contains(mods) {
            problems.push(format!("the circle over {mods:?} is gone: delete it from WIDE_CIRCLES"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The reader itself: it must see every form of import the crate uses.
#[test]
fn the_reader_sees_every_form_of_import() {
    let src = r##"
        //! [`crate::tui`] in a doc comment is a link, not an import.
        use crate::journal::{self, record::{op, key}};
        use crate::{fold::Fold, store};
        use super::sibling::Thing;
        mod child;
        fn f() {
            let s = "crate::sync::remotes"; // a string, and crate::tui in a comment
            let r = r#"crate::cmd"#;
            let c = '{';
            crate::git::run();
            child::go();
            super::super::procinfo::alive();
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            use super::super::other;
        }
    "##;
    let got: BTreeSet<String> = imports_of("src/triage/x.rs", src).into_iter().map(|i| i.path.join("::")).collect();
    let want: BTreeSet<String> = [
        "journal",
        "journal::record::op",
        "journal::record::key",
        "fold::Fold",
        "store",
        "triage::sibling::Thing",
        "triage::x::child::go",
        "git::run",
        "procinfo::alive",
        "triage::x",
        "triage::other",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(got, want);
}

/// `cargo test --test house floors:: -- --ignored --nocapture`: the imports running back up and the
/// circles, as the figures the issue asks for.
#[test]
#[ignore = "prints figures"]
fn floor_figures() {
    let krate = read_crate();
    let up = krate.upward();
    let pairs: BTreeSet<(String, String)> =
        up.keys().map(|(file, to)| (module_path_of(file)[0].clone(), to.clone())).collect();
    println!("imports running back up: {} (file → module), {} (module → module)", up.len(), pairs.len());
    for ((file, to), line) in &up {
        println!("  {file}:{line} → {to}");
    }
    let circles = krate.circles();
    println!("circles: {}", circles.len());
    for c in &circles {
        println!("  {} files, {} folders: {}", c.len(), folders(c).len(), c.join(" "));
    }
}
