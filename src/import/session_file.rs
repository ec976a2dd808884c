//! One agent session file as its parser ([`super::codex`], [`super::gemini`],
//! [`super::copilot`]) reads it: a list of [`Step`]s (prompts, calls with their outcome, turn
//! ends, resumptions, the end), and the line reading and JSON helpers the parsers share.
//! [`super::agents`] detects the agent, calls its parser and converts the steps to records.

use std::io::{self, BufRead};
use std::path::Path;

use serde_json::Value;

use crate::agents::event::{Change, PathChange};
use crate::agents::patch::{self, Chunk, PatchOp};

/// A file's content as an agent recorded it: `None` = the file did not exist.
pub(crate) type Content = Option<String>;

/// One agent session file, parsed.
#[derive(Debug, Default)]
pub(crate) struct SessionFile {
    pub session: String,
    pub start_ts: String,
    /// The folder the session ran in (relative paths are relative to it).
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub model: Option<String>,
    /// The agent's version.
    pub version: Option<String>,
    pub steps: Vec<Step>,
    pub lines: u64,
    /// The last line was cut (the agent stopped while writing it).
    pub torn_tail: bool,
    pub malformed: u64,
    /// Lines longer than [`super::engine::MAX_LINE`]: skipped unread.
    pub oversized: u64,
}

/// What happened, in order.
#[derive(Debug)]
pub(crate) enum Step {
    Prompt {
        id: String,
        ts: String,
        text: String,
    },
    Call(Call),
    /// The agent finished its answer to the turn's prompt.
    TurnEnd {
        id: String,
        ts: String,
        message: Option<String>,
    },
    /// The session was resumed (a new process took it up).
    Resume {
        id: String,
        ts: String,
    },
    End {
        id: String,
        ts: String,
        reason: String,
    },
}

/// One tool call.
#[derive(Debug)]
pub(crate) struct Call {
    pub id: String,
    /// When the agent asked for it.
    pub ts: String,
    /// The agent's name for the tool.
    pub tool: String,
    pub kind: CallKind,
    /// `None`: no result was recorded (in flight when the file ends).
    pub outcome: Option<Outcome>,
}

#[derive(Debug)]
pub(crate) enum CallKind {
    Files(Vec<FileChange>),
    Shell { command: String, description: Option<String>, background: bool, cwd: Option<String> },
    Other,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub ts: String,
    /// Why the call failed.
    pub error: Option<String>,
}

/// One file a call changes.
#[derive(Debug, Clone)]
pub(crate) struct FileChange {
    /// As the agent gave it: absolute, or relative to the session's folder.
    pub path: String,
    pub edit: Edit,
    /// The file before the call, as the agent recorded it for this call.
    pub before: Option<Content>,
    /// The file after the call, as the agent recorded it.
    pub after: Option<Content>,
    /// The file before the turn (the agent's backup): the pre-image when no earlier call of the
    /// session touched the file.
    pub turn_before: Option<Content>,
}

impl FileChange {
    pub(crate) fn new(path: impl Into<String>, edit: Edit) -> FileChange {
        FileChange { path: path.into(), edit, before: None, after: None, turn_before: None }
    }
}

/// How a call changes a file.
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    /// The whole new content.
    Write(String),
    Replace {
        old: String,
        new: String,
        all: bool,
    },
    /// A patch's chunks.
    Patch(Vec<Chunk>),
    Delete,
    /// Created by a patch's `*** Move to:` from `from`, with these chunks applied.
    MovedFrom {
        from: String,
        chunks: Vec<Chunk>,
    },
    Unknown,
}

impl Edit {
    /// Whether the call creates the file (when it did not exist).
    pub(super) fn creates(&self) -> bool {
        matches!(self, Edit::Write(_) | Edit::MovedFrom { .. })
    }

    /// The file after the edit, from the file before (`None` = absent): `None` when it cannot
    /// be told.
    pub(super) fn apply(&self, pre: Option<&str>) -> Option<Content> {
        let change = match self {
            Edit::Write(s) => Change::Write(s.as_str().into()),
            Edit::Replace { old, new, all } => Change::Replace { old, new, all: *all },
            Edit::Patch(chunks) => Change::Update(chunks.clone()),
            Edit::Delete => Change::Delete { moved_to: None },
            Edit::MovedFrom { .. } | Edit::Unknown => return None,
        };
        let out = PathChange::new("", change).intended("", &Value::Null, pre.map(str::as_bytes))?;
        match out {
            Some(bytes) => String::from_utf8(bytes).ok().map(Some),
            None => Some(None),
        }
    }
}

/// One file change per file of an `apply_patch` patch (Codex, Copilot with GPT models); a move
/// is the old path deleted and the new one created.
pub(crate) fn patch_edits(text: &str) -> Vec<FileChange> {
    let mut out = Vec::new();
    for f in patch::parse(text) {
        match f.op {
            PatchOp::Add(content) => {
                let mut c = FileChange::new(f.path, Edit::Write(content));
                c.before = Some(None);
                out.push(c);
            }
            PatchOp::Delete => out.push(FileChange::new(f.path, Edit::Delete)),
            PatchOp::Update { move_to: None, chunks } => out.push(FileChange::new(f.path, Edit::Patch(chunks))),
            PatchOp::Update { move_to: Some(to), chunks } => {
                out.push(FileChange::new(f.path.clone(), Edit::Delete));
                out.push(FileChange::new(to, Edit::MovedFrom { from: f.path, chunks }));
            }
        }
    }
    out
}

/// What reading a file counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub lines: u64,
    /// The last line was cut.
    pub torn_tail: bool,
    /// Lines that were not JSON (other than a cut last line).
    pub malformed: u64,
    /// Lines longer than [`super::engine::MAX_LINE`]: skipped unread.
    pub oversized: u64,
}

impl SessionFile {
    pub(super) fn counted(mut self, c: Counts) -> SessionFile {
        self.lines = c.lines;
        self.torn_tail = c.torn_tail;
        self.malformed = c.malformed;
        self.oversized = c.oversized;
        self
    }
}

/// Calls `f` with every complete JSON line of `path`.
/// Only a regular file is read (a FIFO or a device could block or never end); a line longer
/// than [`super::engine::MAX_LINE`] is skipped and counted.
pub(crate) fn read_lines(path: &Path, mut f: impl FnMut(Value)) -> io::Result<Counts> {
    let (file, _) = crate::fsutil::open_regular(path)?;
    let reader = io::BufReader::with_capacity(1 << 20, file);
    read_from(reader, &mut f, super::engine::MAX_LINE)
}

pub(super) fn read_from(mut reader: impl BufRead, f: &mut impl FnMut(Value), max: usize) -> io::Result<Counts> {
    let mut c = Counts::default();
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        let Some(cut) = super::engine::read_line_capped(&mut reader, &mut buf, max)? else { return Ok(c) };
        c.lines += 1;
        if cut {
            c.oversized += 1;
            continue;
        }
        let complete = buf.last() == Some(&b'\n');
        let body = if complete { &buf[..buf.len() - 1] } else { &buf[..] };
        // NUL bytes around a line: a file padded by a crash (its size extended before the
        // bytes were written, as Copilot CLI's can be) is read like the journal is.
        let body = trim_nul(body);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => f(v),
            Err(_) if !complete => {
                c.torn_tail = true;
                return Ok(c);
            }
            Err(_) => c.malformed += 1,
        }
    }
}

/// `line` without the NUL bytes at its ends.
pub(super) fn trim_nul(line: &[u8]) -> &[u8] {
    let start = line.iter().position(|&b| b != 0).unwrap_or(line.len());
    let end = line.iter().rposition(|&b| b != 0).map_or(start, |i| i + 1);
    &line[start..end.max(start)]
}

/// The first JSON line of `path` (the session's header in every agent's format).
pub(super) fn first_line(path: &Path) -> Option<Value> {
    let (f, _) = crate::fsutil::open_regular(path).ok()?;
    for line in io::BufReader::new(io::Read::take(f, super::engine::MAX_LINE as u64)).split(b'\n').take(20) {
        let line = line.ok()?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return serde_json::from_slice(&line).ok();
    }
    None
}

/// The text parts of a content value: a string, or a list of `{text}` / `{type: text, text}`.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

/// `v[k]` as a string.
pub(super) fn s<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// `v[k]` as an owned string.
pub(super) fn owned(v: &Value, k: &str) -> Option<String> {
    s(v, k).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply() {
        let r = Edit::Replace { old: "b".into(), new: "B".into(), all: false };
        assert_eq!(r.apply(Some("abcb")), Some(Some("aBcb".into())));
        assert_eq!(r.apply(Some("zz")), None);
        assert_eq!(Edit::Delete.apply(Some("x")), Some(None));
        assert_eq!(Edit::Write("n\n".into()).apply(None), Some(Some("n\n".into())));
        assert_eq!(Edit::Unknown.apply(Some("x")), None);
        let p = patch_edits("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** End Patch\n");
        assert_eq!(p.len(), 2);
        assert!(matches!(p[0].edit, Edit::Delete) && matches!(&p[1].edit, Edit::MovedFrom { from, .. } if from == "a"));
    }

    #[test]
    fn a_cut_last_line_is_torn_and_bad_lines_are_counted() {
        let mut n = 0;
        let c = read_from(&b"{\"a\":1}\nnot json\n\n{\"b\":2}\n{\"c\":"[..], &mut |_| n += 1, 1 << 20).unwrap();
        assert_eq!((n, c), (2, Counts { lines: 5, torn_tail: true, malformed: 1, oversized: 0 }));
    }

    /// A line over the cap is skipped and counted, holding at most the cap; the lines after it
    /// are read.
    #[test]
    fn a_line_over_the_cap_is_skipped_and_counted() {
        let mut seen = Vec::new();
        let long = format!("{{\"x\":\"{}\"}}\n", "a".repeat(5000));
        let text = format!("{{\"a\":1}}\n{long}{{\"b\":2}}\n");
        let c = read_from(io::BufReader::with_capacity(64, text.as_bytes()), &mut |v| seen.push(v), 1000).unwrap();
        assert_eq!(c, Counts { lines: 3, torn_tail: false, malformed: 0, oversized: 1 });
        assert_eq!(seen, vec![serde_json::json!({"a": 1}), serde_json::json!({"b": 2})]);
    }

    /// A file that ends in NUL bytes (a crash after its size grew) reads like one without them.
    #[test]
    fn nul_padding_is_neither_torn_nor_malformed() {
        let mut n = 0;
        let c = read_from(&b"{\"a\":1}\n\0\0\0\0{\"b\":2}\n\0\0\0\0\0\0"[..], &mut |_| n += 1, 1 << 20).unwrap();
        assert_eq!((n, c), (2, Counts { lines: 3, torn_tail: false, malformed: 0, oversized: 0 }));
    }
}
