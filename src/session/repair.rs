//! A repaired copy of a Claude Code transcript that a crash left damaged (`walj sessions repair`).
//!
//! What a crash leaves, and what Claude Code 2.1.328–2.1.332 does with it on `--resume`
//! (measured with the real CLI, docs/sessions.md): a torn last line and a NUL-padded tail (a
//! power cut on a journaling file system grows the file before its data lands) are skipped; a
//! line torn by the crash and glued to the next append is lost whole, with the complete line
//! inside it; a tool call cut off by the crash is shown as "Interrupted · What should Claude do
//! instead?"; a tool call with no result in the middle of a conversation is dropped from what
//! the model sees; a zeroed region (a lost page) breaks the `parentUuid` chain, and everything
//! before the break silently disappears from the resumed conversation; a prompt typed while
//! Claude worked (a `queue-operation` line) is not taken up.
//!
//! [`repair`] turns such bytes into a transcript every reader takes whole: NUL bytes removed,
//! a complete line glued behind a torn one recovered, torn and partial lines dropped, lines
//! whose parent was lost linked to the line before them, every tool call without a result
//! closed by an error result that says it was cut off, results whose call was lost kept as
//! text, and the session id of every line set to the copy's new id. It never changes the bytes
//! it was given: the caller writes the result under a new session id. Every change is listed
//! in [`Repaired::changes`]; nothing is dropped without a [`Change`] saying so.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The text of the result that closes a tool call cut off by the crash.
pub(crate) const CUT_OFF_RESULT: &str = "[walj repair: this tool call was cut off: the session ended (a crash or a kill) before its result was recorded. Whether it ran, and what it changed, is unknown: check before relying on it (`walj recover` lists the changes walj saw).]";

/// Most bytes of one damaged line searched for a complete line glued behind it.
const GLUED_SEARCH_MAX: usize = 16 << 20;

/// One thing the repair changed. `line` numbers are the source's, from 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub(crate) enum Change {
    /// NUL bytes (padding after a power cut, or a zeroed region) removed from a line.
    NulBytes { line: usize, bytes: usize },
    /// The last line was cut mid-write (no end): dropped.
    TornTail { line: usize, bytes: usize },
    /// An assistant line cut mid-write: dropped (its content never reached the file whole).
    PartialAssistant { line: usize, bytes: usize },
    /// Another line that is not a JSON object: dropped.
    Unreadable { line: usize, bytes: usize },
    /// A complete line found glued behind a torn one (the next append after a crash): kept.
    Recovered { line: usize, bytes: usize },
    /// A second copy of a line already kept (same `uuid`): dropped.
    Duplicate { line: usize, uuid: String },
    /// The line's parent is gone (torn, zeroed): linked to the line before it so the
    /// conversation before the gap stays reachable.
    Relinked { line: usize, uuid: String },
    /// A tool call that never got a result: closed by an error result saying it was cut off.
    ClosedToolCall { line: usize, tool_use_id: String, tool: String },
    /// A tool result whose call was lost: kept as text in the same message.
    OrphanResult { line: usize, tool_use_id: String },
    /// A prompt the user queued while Claude worked, never sent (reaches Claude in the brief).
    QueuedPrompt { text: String },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = |n: &usize| crate::present::plural(*n, "byte", "bytes");
        match self {
            Change::NulBytes { line, bytes } => write!(f, "line {line}: removed {} of NULs", b(bytes)),
            Change::TornTail { line, bytes } => {
                write!(f, "line {line}: dropped the torn last line ({} cut mid-write)", b(bytes))
            }
            Change::PartialAssistant { line, bytes } => {
                write!(f, "line {line}: dropped a partial assistant line ({} cut mid-write)", b(bytes))
            }
            Change::Unreadable { line, bytes } => write!(f, "line {line}: dropped an unreadable line ({})", b(bytes)),
            Change::Recovered { line, bytes } => {
                write!(f, "line {line}: kept a complete line ({}) glued behind a torn one", b(bytes))
            }
            Change::Duplicate { line, uuid } => write!(f, "line {line}: dropped a second copy of line {uuid}"),
            Change::Relinked { line, uuid } => {
                write!(f, "line {line}: its parent was lost; linked to the line before it ({uuid})")
            }
            Change::ClosedToolCall { line, tool_use_id, tool } => {
                write!(f, "line {line}: closed the {tool} call {tool_use_id}, which never got a result, as cut off")
            }
            Change::OrphanResult { line, tool_use_id } => {
                write!(f, "line {line}: kept the result of {tool_use_id}, whose call was lost, as text")
            }
            Change::QueuedPrompt { text } => write!(
                f,
                "a prompt queued when the session died was never sent ({}); the brief carries it",
                crate::present::one_line(text, 80)
            ),
        }
    }
}

/// What [`repair`] made.
#[derive(Debug, Clone, Default)]
pub(crate) struct Repaired {
    /// The repaired transcript: complete JSON lines, each ending in `\n`.
    pub bytes: Vec<u8>,
    pub changes: Vec<Change>,
    /// Lines read (non-empty segments of the source) and written.
    pub lines_in: usize,
    pub lines_out: usize,
    /// Lines whose `sessionId` was set to the new id.
    pub session_ids: usize,
}

impl Repaired {
    /// Whether the transcript needed anything beyond the new session id.
    #[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
    pub(crate) fn changed(&self) -> bool {
        self.changes.iter().any(|c| !matches!(c, Change::QueuedPrompt { .. }))
    }
}

/// One kept line: its value, its bytes when unchanged, and where it came from.
struct Line {
    v: Value,
    raw: Option<Vec<u8>>,
    src: usize,
}

impl Line {
    fn str_field(&self, k: &str) -> Option<&str> {
        self.v.get(k).and_then(Value::as_str)
    }
    fn uuid(&self) -> Option<&str> {
        self.str_field("uuid")
    }
    fn is_type(&self, t: &str) -> bool {
        self.str_field("type") == Some(t)
    }
    fn blocks(&self) -> &[Value] {
        self.v.pointer("/message/content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
    }
    fn edit(&mut self) -> &mut Value {
        self.raw = None;
        &mut self.v
    }
}

/// A version-4 UUID derived from `seed` (hashed): Claude Code's line and session ids have
/// this form.
pub(crate) fn uuid_from(seed: &[u8]) -> String {
    let h = Sha256::digest(seed);
    let mut b = [0u8; 16];
    b.copy_from_slice(&h[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// A fresh session id (random enough: time, process and a counter, hashed).
pub(crate) fn new_session_id(old: &str) -> String {
    let seed = format!("{old}:{}", crate::journal::record::new_id("repair-"));
    uuid_from(seed.as_bytes())
}

/// Repairs `src`, the transcript of session `old`, as the transcript of session `new`.
pub(crate) fn repair(src: &[u8], old: &str, new: &str) -> Repaired {
    let mut out = Repaired::default();
    let mut lines = read_lines(src, &mut out);
    dedupe(&mut lines, &mut out.changes);
    relink(&mut lines, &mut out.changes);
    orphan_results(&mut lines, &mut out.changes);
    close_tool_calls(&mut lines, new, &mut out.changes);
    for text in crate::claude::transcript::queued_prompts(src, old) {
        out.changes.push(Change::QueuedPrompt { text });
    }
    let old_field = format!("\"sessionId\":{}", Value::from(old));
    let new_field = format!("\"sessionId\":{}", Value::from(new));
    for l in &mut lines {
        if l.str_field("sessionId") != Some(old) {
            // Still a JSON object: write it as it was.
        } else {
            out.session_ids += 1;
            match &mut l.raw {
                Some(raw) if memchr::memmem::find(raw, old_field.as_bytes()).is_some() => {
                    *raw = replace_all(raw, old_field.as_bytes(), new_field.as_bytes());
                }
                _ => {
                    l.edit()["sessionId"] = Value::from(new);
                }
            }
        }
        match &l.raw {
            Some(raw) => out.bytes.extend_from_slice(raw),
            None => out.bytes.extend_from_slice(&serde_json::to_vec(&l.v).unwrap_or_default()),
        }
        out.bytes.push(b'\n');
    }
    out.lines_out = lines.len();
    out
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

fn parse_object(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(bytes).ok().filter(Value::is_object)
}

/// Splits the source into JSON lines: NULs removed, torn and unreadable pieces dropped, a
/// complete line glued behind a torn one recovered.
fn read_lines(src: &[u8], out: &mut Repaired) -> Vec<Line> {
    let mut lines = Vec::new();
    let segments: Vec<&[u8]> = src.split(|&b| b == b'\n').collect();
    let terminated = src.last() == Some(&b'\n');
    let count = segments.len();
    for (i, seg) in segments.into_iter().enumerate() {
        let no = i + 1;
        let at_end = i + 1 == count && !terminated;
        if seg.iter().all(u8::is_ascii_whitespace) && !seg.is_empty() {
            continue;
        }
        if seg.is_empty() {
            continue;
        }
        out.lines_in += 1;
        let nuls = seg.iter().filter(|&&b| b == 0).count();
        if nuls > 0 {
            out.changes.push(Change::NulBytes { line: no, bytes: nuls });
        }
        let pieces: Vec<&[u8]> = seg.split(|&b| b == 0).filter(|p| !p.iter().all(u8::is_ascii_whitespace)).collect();
        let last_piece = pieces.len().saturating_sub(1);
        for (j, piece) in pieces.into_iter().enumerate() {
            let piece = piece.trim_ascii();
            if let Some(v) = parse_object(piece) {
                lines.push(Line { v, raw: Some(piece.to_vec()), src: no });
                continue;
            }
            let (fragment, glued) = match glued_line(piece) {
                Some((at, v)) => (&piece[..at], Some((v, &piece[at..]))),
                None => (piece, None),
            };
            let end = at_end && j == last_piece && glued.is_none();
            out.changes.push(damaged(fragment, no, end));
            if let Some((v, bytes)) = glued {
                out.changes.push(Change::Recovered { line: no, bytes: bytes.len() });
                lines.push(Line { v, raw: Some(bytes.to_vec()), src: no });
            }
        }
    }
    lines
}

/// What a piece that is no JSON object was: a partial assistant line, a torn tail, or else.
fn damaged(fragment: &[u8], line: usize, at_end: bool) -> Change {
    let bytes = fragment.len();
    let assistant = memchr::memmem::find(fragment, b"\"type\":\"assistant\"").is_some()
        || memchr::memmem::find(fragment, b"\"role\":\"assistant\"").is_some();
    if assistant {
        Change::PartialAssistant { line, bytes }
    } else if at_end {
        Change::TornTail { line, bytes }
    } else {
        Change::Unreadable { line, bytes }
    }
}

/// The longest suffix of a damaged piece that is a whole transcript line (an object with a
/// `type`), starting at a `{"`: the line the next append glued behind a torn one.
fn glued_line(piece: &[u8]) -> Option<(usize, Value)> {
    if piece.len() > GLUED_SEARCH_MAX {
        return None;
    }
    let mut from = 1;
    while let Some(k) = memchr::memmem::find(piece.get(from..)?, b"{\"") {
        let at = from + k;
        if let Some(v) = parse_object(&piece[at..]).filter(|v| v.get("type").is_some()) {
            return Some((at, v));
        }
        from = at + 1;
    }
    None
}

/// A line whose `uuid` an earlier line has is a second copy (a line appended again after the
/// original was rewritten): only the first is kept.
fn dedupe(lines: &mut Vec<Line>, changes: &mut Vec<Change>) {
    let mut seen = HashSet::new();
    lines.retain(|l| match l.uuid() {
        Some(u) if !seen.insert(u.to_string()) => {
            changes.push(Change::Duplicate { line: l.src, uuid: u.to_string() });
            false
        }
        _ => true,
    });
}

/// Lines whose `parentUuid` names a line that is gone are linked to the nearest line before
/// them (of the same chain: main or sidechain) that has a `uuid`.
fn relink(lines: &mut [Line], changes: &mut Vec<Change>) {
    let uuids: HashSet<String> = lines.iter().filter_map(|l| l.uuid().map(str::to_string)).collect();
    let mut last: HashMap<bool, String> = HashMap::new();
    for l in lines.iter_mut() {
        let side = l.v.get("isSidechain").and_then(Value::as_bool).unwrap_or(false);
        if let Some(p) = l.str_field("parentUuid")
            && !uuids.contains(p)
        {
            let to = last.get(&side).cloned();
            changes.push(Change::Relinked { line: l.src, uuid: to.clone().unwrap_or_else(|| "none".into()) });
            l.edit()["parentUuid"] = to.map_or(Value::Null, Value::from);
        }
        if let Some(u) = l.uuid() {
            last.insert(side, u.to_string());
        }
    }
}

fn tool_use_ids(l: &Line) -> Vec<(String, String)> {
    if !l.is_type("assistant") {
        return Vec::new();
    }
    l.blocks()
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|b| {
            let id = b.get("id").and_then(Value::as_str)?;
            Some((id.to_string(), b.get("name").and_then(Value::as_str).unwrap_or("tool").to_string()))
        })
        .collect()
}

fn result_ids(l: &Line) -> Vec<String> {
    if !l.is_type("user") {
        return Vec::new();
    }
    l.blocks()
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Tool results whose call is gone (its line torn or zeroed) would be refused by the API:
/// each becomes a text block holding what the result said.
fn orphan_results(lines: &mut [Line], changes: &mut Vec<Change>) {
    let calls: HashSet<String> = lines.iter().flat_map(|l| tool_use_ids(l).into_iter().map(|(id, _)| id)).collect();
    for l in lines.iter_mut() {
        let orphans: Vec<String> = result_ids(l).into_iter().filter(|id| !calls.contains(id)).collect();
        if orphans.is_empty() {
            continue;
        }
        let src = l.src;
        let v = l.edit();
        if let Some(blocks) = v.pointer_mut("/message/content").and_then(Value::as_array_mut) {
            for b in blocks.iter_mut() {
                let Some(id) = b.get("tool_use_id").and_then(Value::as_str).map(str::to_string) else { continue };
                if !orphans.contains(&id) || b.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let content = match b.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                *b = json!({"type": "text", "text": format!("[walj repair: the result of tool call {id}, whose call was lost from the transcript:]\n{content}")});
                changes.push(Change::OrphanResult { line: src, tool_use_id: id });
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.remove("toolUseResult");
            o.remove("sourceToolAssistantUUID");
        }
    }
}

/// Every tool call without a result gets one: an error result saying it was cut off, on a
/// user line placed after the call's message and the results it has, with the line that
/// followed there re-parented to it (so the chain stays one line).
fn close_tool_calls(lines: &mut Vec<Line>, session: &str, changes: &mut Vec<Change>) {
    let answered: HashSet<String> = lines.iter().flat_map(result_ids).collect();
    let open: Vec<(usize, String, String)> = lines
        .iter()
        .enumerate()
        .flat_map(|(i, l)| tool_use_ids(l).into_iter().map(move |(id, name)| (i, id, name)))
        .filter(|(_, id, _)| !answered.contains(id))
        .collect();
    let mut inserted: HashSet<String> = HashSet::new();
    for (_, id, name) in open {
        let Some(call) = lines.iter().position(|l| tool_use_ids(l).iter().any(|(i, _)| *i == id)) else { continue };
        let msg_id = lines[call].v.pointer("/message/id").and_then(Value::as_str).map(str::to_string);
        // The calls of the same message: the assistant lines next to the call sharing its id.
        let same = |l: &Line| {
            msg_id.is_some()
                && l.is_type("assistant")
                && l.v.pointer("/message/id").and_then(Value::as_str) == msg_id.as_deref()
        };
        let first =
            (0..call).rev().take_while(|&i| same(&lines[i]) || lines[i].uuid().is_none()).last().unwrap_or(call);
        let ids_of_msg: HashSet<String> = lines[first..]
            .iter()
            .take_while(|l| same(l) || l.uuid().is_none())
            .flat_map(tool_use_ids)
            .map(|(i, _)| i)
            .chain(std::iter::once(id.clone()))
            .collect();
        // After the last line of the call's message or of its results (ours included) that
        // follow it without another message between (message ids can repeat across turns).
        let mut at = call;
        for (i, l) in lines.iter().enumerate().skip(call + 1) {
            let same_msg = msg_id.is_some()
                && l.is_type("assistant")
                && l.v.pointer("/message/id").and_then(Value::as_str) == msg_id.as_deref()
                && tool_use_ids(l).iter().all(|(t, _)| ids_of_msg.contains(t));
            let its_result = !result_ids(l).is_empty() && result_ids(l).iter().all(|r| ids_of_msg.contains(r));
            if same_msg || its_result {
                at = i;
            } else if l.uuid().is_some() && (l.is_type("user") || l.is_type("assistant")) {
                break;
            }
        }
        let parent = lines[at].uuid().map(str::to_string);
        let from = &lines[call];
        let uuid = uuid_from(format!("{session}:{id}:closed").as_bytes());
        let mut o = Map::new();
        o.insert("parentUuid".into(), parent.clone().map_or(Value::Null, Value::from));
        o.insert("isSidechain".into(), from.v.get("isSidechain").cloned().unwrap_or(Value::Bool(false)));
        o.insert("type".into(), json!("user"));
        o.insert(
            "message".into(),
            json!({"role": "user", "content": [{"tool_use_id": id, "type": "tool_result", "content": CUT_OFF_RESULT, "is_error": true}]}),
        );
        o.insert("uuid".into(), json!(uuid));
        o.insert("timestamp".into(), from.v.get("timestamp").cloned().unwrap_or(Value::Null));
        o.insert("toolUseResult".into(), json!(format!("Error: {CUT_OFF_RESULT}")));
        if let Some(u) = from.uuid() {
            o.insert("sourceToolAssistantUUID".into(), json!(u));
        }
        for k in ["userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch"] {
            if let Some(v) = from.v.get(k) {
                o.insert(k.into(), v.clone());
            }
        }
        let src = from.src;
        // The line that followed the insertion point now follows the closing result.
        if let Some(p) = &parent {
            for l in lines.iter_mut().skip(at + 1) {
                if l.str_field("parentUuid") == Some(p.as_str()) && !inserted.contains(l.uuid().unwrap_or("")) {
                    l.edit()["parentUuid"] = Value::from(uuid.clone());
                }
            }
        }
        lines.insert(at + 1, Line { v: Value::Object(o), raw: None, src });
        inserted.insert(uuid);
        changes.push(Change::ClosedToolCall { line: src, tool_use_id: id, tool: name });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const OLD: &str = "11111111-1111-4111-8111-111111111111";
    const NEW: &str = "22222222-2222-4222-8222-222222222222";

    fn line(v: Value) -> String {
        let mut v = v;
        v["sessionId"] = json!(OLD);
        format!("{}\n", serde_json::to_string(&v).unwrap())
    }
    fn user(uuid: &str, parent: Option<&str>, text: &str) -> String {
        line(
            json!({"parentUuid": parent, "isSidechain": false, "type": "user", "message": {"role": "user", "content": text}, "uuid": uuid}),
        )
    }
    fn call(uuid: &str, parent: &str, msg: &str, id: &str) -> String {
        line(
            json!({"parentUuid": parent, "isSidechain": false, "type": "assistant", "message": {"id": msg, "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "x"}}]}, "uuid": uuid}),
        )
    }
    fn result(uuid: &str, parent: &str, id: &str) -> String {
        line(
            json!({"parentUuid": parent, "isSidechain": false, "type": "user", "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result", "content": "ok"}]}, "uuid": uuid, "toolUseResult": {"stdout": "ok"}}),
        )
    }
    fn text(uuid: &str, parent: &str, t: &str) -> String {
        line(
            json!({"parentUuid": parent, "isSidechain": false, "type": "assistant", "message": {"id": "m9", "role": "assistant", "content": [{"type": "text", "text": t}]}, "uuid": uuid}),
        )
    }
    fn parsed(r: &Repaired) -> Vec<Value> {
        r.bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect()
    }
    /// The parent chain from the last line back, as uuids.
    fn chain(vs: &[Value]) -> Vec<String> {
        let by: HashMap<&str, &Value> = vs.iter().filter_map(|v| Some((v["uuid"].as_str()?, v))).collect();
        let mut out = Vec::new();
        let mut cur = vs.iter().rev().find(|v| v["uuid"].is_string());
        while let Some(v) = cur {
            out.push(v["uuid"].as_str().unwrap().to_string());
            cur = v["parentUuid"].as_str().and_then(|p| by.get(p).copied());
        }
        out.reverse();
        out
    }

    #[test]
    fn a_clean_transcript_only_gets_the_new_session_id() {
        let src =
            [user("u1", None, "hi"), call("a1", "u1", "m1", "t1"), result("r1", "a1", "t1"), text("a2", "r1", "done")]
                .concat();
        let r = repair(src.as_bytes(), OLD, NEW);
        assert!(!r.changed(), "{:?}", r.changes);
        assert_eq!(r.bytes, src.replace(OLD, NEW).as_bytes());
        assert_eq!((r.lines_in, r.lines_out, r.session_ids), (4, 4, 4));
    }

    #[test]
    fn torn_and_nul_padded_tails_are_cut() {
        let good = [user("u1", None, "hi"), text("a2", "u1", "done")].concat();
        let torn = format!("{good}{}", &user("u2", Some("a2"), "next")[..20]);
        let r = repair(torn.as_bytes(), OLD, NEW);
        assert_eq!(r.changes, vec![Change::TornTail { line: 3, bytes: 20 }]);
        assert_eq!(parsed(&r).len(), 2);
        let mut padded = good.clone().into_bytes();
        padded.extend(std::iter::repeat_n(0u8, 4096));
        let r = repair(&padded, OLD, NEW);
        assert_eq!(r.changes, vec![Change::NulBytes { line: 3, bytes: 4096 }]);
        assert_eq!(r.bytes, good.replace(OLD, NEW).as_bytes());
        let mut both = torn.into_bytes();
        both.extend(std::iter::repeat_n(0u8, 100));
        let r = repair(&both, OLD, NEW);
        assert_eq!(r.changes, vec![Change::NulBytes { line: 3, bytes: 100 }, Change::TornTail { line: 3, bytes: 20 }]);
    }

    #[test]
    fn a_partial_assistant_line_is_dropped_and_the_line_glued_to_it_kept() {
        let a = text("a2", "u1", "the answer");
        let next = user("u2", Some("a2"), "thanks");
        let src = format!("{}{}{}", user("u1", None, "hi"), &a[..a.len() / 2], next);
        let r = repair(src.as_bytes(), OLD, NEW);
        assert_eq!(
            r.changes,
            vec![
                Change::PartialAssistant { line: 2, bytes: a.len() / 2 },
                Change::Recovered { line: 2, bytes: next.len() - 1 },
                Change::Relinked { line: 2, uuid: "u1".into() },
            ]
        );
        let vs = parsed(&r);
        assert_eq!(chain(&vs), ["u1", "u2"]);
    }

    #[test]
    fn an_open_tool_call_is_closed_as_cut_off_and_the_chain_goes_through_it() {
        // The call's result line was lost; the conversation went on after it.
        let src = [user("u1", None, "hi"), call("a1", "u1", "m1", "t1"), text("a2", "r-lost", "done")].concat();
        let r = repair(src.as_bytes(), OLD, NEW);
        let vs = parsed(&r);
        assert_eq!(vs.len(), 4);
        let closing = &vs[2];
        assert_eq!(closing["message"]["content"][0]["tool_use_id"], "t1");
        assert_eq!(closing["message"]["content"][0]["is_error"], true);
        assert!(closing["message"]["content"][0]["content"].as_str().unwrap().contains("cut off"));
        assert_eq!(closing["sessionId"], NEW);
        let c = chain(&vs);
        assert_eq!(c.len(), 4, "{c:?}");
        assert!(r.changes.contains(&Change::ClosedToolCall { line: 2, tool_use_id: "t1".into(), tool: "Bash".into() }));
    }

    #[test]
    fn parallel_calls_with_one_result_get_the_other_closed_after_it() {
        let src = [
            user("u1", None, "hi"),
            call("a1", "u1", "m1", "t1"),
            call("a2", "a1", "m1", "t2"),
            result("r1", "a2", "t1"),
        ]
        .concat();
        let vs = parsed(&repair(src.as_bytes(), OLD, NEW));
        assert_eq!(vs.len(), 5);
        assert_eq!(vs[4]["message"]["content"][0]["tool_use_id"], "t2");
        assert_eq!(vs[4]["parentUuid"], "r1");
        assert_eq!(chain(&vs).len(), 5);
    }

    #[test]
    fn a_result_whose_call_was_lost_becomes_text() {
        let src = [user("u1", None, "hi"), result("r1", "a-lost", "t9"), text("a2", "r1", "done")].concat();
        let r = repair(src.as_bytes(), OLD, NEW);
        let vs = parsed(&r);
        assert_eq!(vs[1]["message"]["content"][0]["type"], "text");
        assert!(vs[1].get("toolUseResult").is_none());
        assert!(r.changes.contains(&Change::OrphanResult { line: 2, tool_use_id: "t9".into() }));
        assert_eq!(chain(&vs), ["u1", "r1", "a2"]);
    }

    #[test]
    fn queued_prompts_are_reported() {
        let q = line(json!({"type": "queue-operation", "operation": "enqueue", "content": "do this next"}));
        let src = [user("u1", None, "hi"), q].concat();
        let r = repair(src.as_bytes(), OLD, NEW);
        assert_eq!(r.changes, vec![Change::QueuedPrompt { text: "do this next".into() }]);
        assert!(!r.changed());
    }

    #[test]
    fn uuids_have_the_v4_form() {
        let u = uuid_from(b"x");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(new_session_id(OLD), new_session_id(OLD));
    }
}
