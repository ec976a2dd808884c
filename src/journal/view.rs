//! One borrowed view of a journal line, with the rules every reader shares, and the one line
//! classifier (DESIGN §3).
//!
//! The fold, compaction (`crate::compact`) and the session scans read lines through
//! [`classify`]: a line is readable when it is a JSON object, its checksum holds (a v2 line
//! must have one; only the proposal's v1 lines have none) and the fields of [`RecordView`]
//! have their types. Fields the view does not name are never
//! looked at (newer versions add them); `kind`, `how`, `target` and `action` of a wrong type
//! read as absent. Every reader therefore skips exactly the same lines, so a rewrite that drops
//! an unreadable line never changes what the fold saw.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::Problem;
use super::reader::check_line;
use super::record::{Blob, blob_field, op, persisted_fast, tool};

/// The borrowed partial view of one line: the fields the fold and rewrites decide on.
#[derive(Deserialize, Default, Debug, PartialEq)]
pub struct RecordView<'a> {
    #[serde(default)]
    pub v: u32,
    #[serde(default, borrow)]
    pub sid: Cow<'a, str>,
    #[serde(default, borrow)]
    pub ts: Cow<'a, str>,
    #[serde(default, borrow)]
    pub event: Cow<'a, str>,
    #[serde(default, borrow)]
    pub path: Cow<'a, str>,
    #[serde(default)]
    pub persisted: bool,
    #[serde(default, borrow)]
    pub op: Cow<'a, str>,
    #[serde(default, borrow)]
    pub id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub session: Cow<'a, str>,
    #[serde(default, borrow)]
    pub tool: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub how: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub target: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub action: Option<Cow<'a, str>>,
    #[serde(default, with = "blob_field")]
    pub before: Option<Blob>,
    #[serde(default, with = "blob_field")]
    pub after: Option<Blob>,
    #[serde(default)]
    pub nocap: Option<String>,
    #[serde(default)]
    pub outside: bool,
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub pair: bool,
    #[serde(default)]
    pub imported: bool,
    /// Derived from a Bash command that never finished (`unfinished: true`).
    #[serde(default)]
    pub unfinished: bool,
    /// `attribution` of a derived entry (`"uncertain"`).
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub attribution: Option<Cow<'a, str>>,
    /// `candidates` of an uncertain derived entry: other commands that may have made it.
    #[serde(default, deserialize_with = "lenient_ids")]
    pub candidates: Vec<String>,
    /// `candidate_commands`: the candidates' command lines (shortened), in their order, so a
    /// reader names them by what they ran rather than by tool-call ids.
    #[serde(default, deserialize_with = "lenient_ids")]
    pub candidate_commands: Vec<String>,
    /// `intended` of a file tool's intent (a blob id).
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub intended: Option<Cow<'a, str>>,
    /// `command` of a Bash command's record or of an entry derived from it.
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub command: Option<Cow<'a, str>>,
    /// `changed` of an entry derived from a killed command: when the change was made.
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub changed: Option<Cow<'a, str>>,
    /// `end_seen` of an after-stop entry: when the watcher saw Claude Code's process end.
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub end_seen: Option<Cow<'a, str>>,
    /// `watch_absent` of an after-stop entry no watcher dated: why.
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub watch_absent: Option<Cow<'a, str>>,
    /// `agent_id` of a record a subagent's event made (absent: the main thread).
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub agent_id: Option<Cow<'a, str>>,
    /// `link_before` / `link_after` of a symbolic-link entry: the link's target text.
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub link_before: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub link_after: Option<Cow<'a, str>>,
    /// `mode_before` / `mode_after` of a file entry: its mode as git writes it (`100755`).
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub mode_before: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    pub mode_after: Option<Cow<'a, str>>,
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub pstart: Option<u64>,
}

impl RecordView<'_> {
    /// A line of the proposal's hook (v1): no `op`, a finished write.
    pub(crate) fn is_v1(&self) -> bool {
        self.v <= 1 && self.op.is_empty()
    }
    /// The op, with v1 lines read as `applied`.
    pub(crate) fn op(&self) -> &str {
        if self.is_v1() { op::APPLIED } else { &self.op }
    }
    /// The session key: the full id when known, else the 6-char `sid` (v1 lines).
    pub(crate) fn session_key(&self) -> &str {
        if self.session.is_empty() { &self.sid } else { &self.session }
    }
    /// A Bash command record (not one of its file side effects, which have a path).
    pub(crate) fn is_command(&self) -> bool {
        self.tool.as_deref() == Some(tool::BASH) && self.path.is_empty()
    }
    pub(crate) fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    pub(crate) fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }
}

/// The one line classifier: a readable line's view, or why it is skipped.
///
/// Every v2 line must carry a valid checksum: a `"v":2` line (or any line naming a `crc`)
/// whose checksum tail is damaged or missing is a checksum failure, never read unchecked.
pub fn classify(line_no: u64, bytes: &[u8]) -> Result<RecordView<'_>, Problem> {
    let sealed = check_line(line_no, bytes)?;
    let view = view_unchecked(bytes).map_err(|e| Problem::Malformed { line: line_no, error: e.to_string() })?;
    unsealed(line_no, sealed, &view, bytes)?;
    Ok(view)
}

/// The checksum rule for a line without a readable checksum tail (`sealed` false).
#[inline]
fn unsealed(line_no: u64, sealed: bool, view: &RecordView<'_>, bytes: &[u8]) -> Result<(), Problem> {
    if !sealed && (view.v >= 2 || super::reader::contains(bytes, b"\"crc\"")) {
        return Err(Problem::BadChecksum { line: line_no });
    }
    Ok(())
}

/// A readable line as the fold's fast path sees it.
// Returned by value once per line: boxing the view would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Classified<'a> {
    /// A walj-written `persisted` line ([`persisted_fast`]): only settles an entry.
    Persisted {
        id: &'a str,
        session: &'a str,
    },
    View(RecordView<'a>),
}

/// [`classify`], with walj's `persisted` lines (the bulk of a long journal) recognised
/// without parsing them: only lines whose checksum passed take that fast path.
#[inline]
pub(crate) fn classify_fast(line_no: u64, bytes: &[u8]) -> Result<Classified<'_>, Problem> {
    let sealed = check_line(line_no, bytes)?;
    if sealed && let Some((id, session)) = persisted_fast(bytes) {
        return Ok(Classified::Persisted { id, session });
    }
    let view = view_unchecked(bytes).map_err(|e| Problem::Malformed { line: line_no, error: e.to_string() })?;
    unsealed(line_no, sealed, &view, bytes)?;
    Ok(Classified::View(view))
}

/// The view of a line whose checksum was already checked: the allocation-free scanner for
/// walj's own lines, serde for anything unusual (escapes, unexpected types).
#[inline]
pub(crate) fn view_unchecked(bytes: &[u8]) -> Result<RecordView<'_>, serde_json::Error> {
    match scan_view(bytes) {
        Some(v) => Ok(v),
        None => serde_json::from_slice(bytes),
    }
}

/// A string, or `None` for a value of any other type (consumed and ignored).
fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// A list of strings (`candidates`, `candidate_commands`); anything else reads as empty, and non-strings in the
/// list are left out.
fn lenient_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::Array(items) => items.into_iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    })
}

/// The fields of [`RecordView`] that must have their type (the scanner defers to serde when
/// one does not, and serde then reports the line malformed).
const STRICT_FIELDS: &[&str] = &[
    "v",
    "sid",
    "ts",
    "event",
    "path",
    "persisted",
    "op",
    "id",
    "session",
    "tool",
    "before",
    "after",
    "nocap",
    "outside",
    "parent",
    "pair",
    "imported",
    "unfinished",
    "background",
    "pid",
    "pstart",
];

/// Reads the top-level members of a JSON object line into a [`RecordView`] without
/// allocating. Returns `None` (the caller then uses serde) on string escapes, non-UTF-8, a
/// known field of an unexpected type, or anything that is not a plain object.
#[inline]
pub(crate) fn scan_view(line: &[u8]) -> Option<RecordView<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let b = text.as_bytes();
    let mut view = RecordView::default();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(view);
    }
    loop {
        let (key, next) = raw_string(text, i)?;
        i = ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        match *b.get(i)? {
            b'"' => {
                let (v, next) = raw_string(text, i)?;
                i = next;
                let c = Cow::Borrowed(v);
                match key {
                    "sid" => view.sid = c,
                    "ts" => view.ts = c,
                    "event" => view.event = c,
                    "path" => view.path = c,
                    "op" => view.op = c,
                    "id" => view.id = c,
                    "session" => view.session = c,
                    "tool" => view.tool = Some(c),
                    "kind" => view.kind = Some(c),
                    "how" => view.how = Some(c),
                    "target" => view.target = Some(c),
                    "action" => view.action = Some(c),
                    "attribution" => view.attribution = Some(c),
                    "intended" => view.intended = Some(c),
                    "agent_id" => view.agent_id = Some(c),
                    "command" => view.command = Some(c),
                    "changed" => view.changed = Some(c),
                    "end_seen" => view.end_seen = Some(c),
                    "watch_absent" => view.watch_absent = Some(c),
                    "link_before" => view.link_before = Some(c),
                    "link_after" => view.link_after = Some(c),
                    "mode_before" => view.mode_before = Some(c),
                    "mode_after" => view.mode_after = Some(c),
                    "before" => view.before = Some(Blob::Id(v.to_string())),
                    "after" => view.after = Some(Blob::Id(v.to_string())),
                    "nocap" => view.nocap = Some(v.to_string()),
                    "parent" => view.parent = Some(v.to_string()),
                    "v" | "persisted" | "outside" | "pair" | "imported" | "unfinished" | "background" | "pid"
                    | "pstart" => {
                        return None;
                    }
                    _ => {}
                }
            }
            b'{' | b'[' => {
                // `candidates` (rare: uncertain derived entries) is read by serde.
                if STRICT_FIELDS.contains(&key) || key == "candidates" || key == "candidate_commands" {
                    return None;
                }
                i = skip_nested(b, i)?;
                lenient_reset(&mut view, key);
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b'}') && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                let v = &text[start..i];
                let flag = || match v {
                    "true" => Some(true),
                    "false" | "null" => Some(false),
                    _ => None,
                };
                match key {
                    "v" => view.v = v.parse().ok()?,
                    "persisted" => view.persisted = flag()?,
                    "outside" => view.outside = flag()?,
                    "pair" => view.pair = flag()?,
                    "imported" => view.imported = flag()?,
                    "unfinished" => view.unfinished = flag()?,
                    "background" => view.background = flag()?,
                    "pid" => view.pid = if v == "null" { None } else { Some(v.parse().ok()?) },
                    "pstart" => view.pstart = if v == "null" { None } else { Some(v.parse().ok()?) },
                    "before" | "after" if v == "null" => {
                        let absent = Some(Blob::Absent);
                        if key == "before" { view.before = absent } else { view.after = absent }
                    }
                    k if STRICT_FIELDS.contains(&k) && v != "null" => return None,
                    _ => {
                        // Any other scalar must at least look like JSON.
                        if v.is_empty() {
                            return None;
                        }
                        lenient_reset(&mut view, key);
                    }
                }
            }
        }
        i = ws(b, i);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return (ws(b, i + 1) == b.len()).then_some(view),
            _ => return None,
        }
    }
}

/// A lenient field met with a non-string value reads as absent (as serde's [`lenient`] does;
/// a repeated key keeps the last value).
fn lenient_reset(view: &mut RecordView<'_>, key: &str) {
    match key {
        "kind" => view.kind = None,
        "how" => view.how = None,
        "target" => view.target = None,
        "action" => view.action = None,
        "attribution" => view.attribution = None,
        "intended" => view.intended = None,
        "agent_id" => view.agent_id = None,
        "command" => view.command = None,
        "changed" => view.changed = None,
        "end_seen" => view.end_seen = None,
        "watch_absent" => view.watch_absent = None,
        "link_before" => view.link_before = None,
        "link_after" => view.link_after = None,
        "mode_before" => view.mode_before = None,
        "mode_after" => view.mode_after = None,
        _ => {}
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The contents of the string starting at `text[i] == '"'` and the index after its closing
/// quote; `None` when it has escapes (serde decodes those).
fn raw_string(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = i + 1 + memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
    if b[end] != b'"' {
        return None;
    }
    Some((&text[i + 1..end], end + 1))
}

/// Skips a nested object or array starting at `b[i]`; returns the index after it.
fn skip_nested(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                // Strings may hold brackets and escaped quotes.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::record::{Record, op};
    use proptest::prelude::*;

    fn serde_view(line: &[u8]) -> RecordView<'_> {
        serde_json::from_slice(line).unwrap()
    }

    proptest! {
        /// The allocation-free scanner reads every walj line exactly as serde does (or defers).
        #[test]
        fn scanner_agrees_with_serde(
            path in "\\PC{0,20}",
            id in "[a-zA-Z0-9_\\\\\"]{0,12}",
            op in prop::sample::select(vec!["intent", "applied", "failed", "persisted", "session", "x"]),
            before in prop::option::of(prop::option::of("[0-9a-f]{40}")),
            pid in prop::option::of(any::<u32>()),
            outside in any::<bool>(),
            kind in prop::option::of(prop::sample::select(vec!["\"start\"", "5", "null", "[1]", "{\"a\":1}", "true"])),
            extra in "\\PC{0,10}",
        ) {
            let mut r = Record::new(op, "sess-ion");
            r.path = path;
            r.id = id;
            r.before = before.map(|b| b.map_or(Blob::Absent, Blob::Id));
            r.pid = pid;
            r.outside = outside;
            r = r.with("nested", serde_json::json!({"a": [1, "]}", {"b": extra.clone()}]})).with("note", extra);
            if let Some(k) = kind {
                r = r.with("target", serde_json::from_str::<serde_json::Value>(k).unwrap());
            }
            let line = r.to_line();
            let line = &line[..line.len() - 1];
            if let Some(fast) = scan_view(line) {
                prop_assert_eq!(fast, serde_view(line));
            }
        }
    }

    #[test]
    fn scanner_handles_walj_lines_and_defers_on_escapes() {
        let mut r = Record::new(op::INTENT, "s");
        r.path = "a/b.rs".into();
        r.before = Some(Blob::Absent);
        let line = r.to_line();
        let l = scan_view(&line[..line.len() - 1]).expect("plain line scans");
        assert_eq!(l.before, Some(Blob::Absent));
        assert_eq!(l.path, "a/b.rs");
        r.path = "a\"b".into();
        let line = r.to_line();
        assert!(scan_view(&line[..line.len() - 1]).is_none());
        assert!(scan_view(b"{\"v\":\"2\"}").is_none());
        assert!(scan_view(b"{\"v\":2} trailing").is_none());
        assert!(scan_view(b"[1]").is_none());
    }

    /// Unknown fields and wrongly typed lenient fields are tolerated; a wrongly typed field
    /// the fold relies on makes the line malformed; both ways the same for every reader.
    /// `text` with its checksum tail, as walj writes it.
    fn sealed(text: &str) -> Vec<u8> {
        let mut b = text.as_bytes().to_vec();
        crate::journal::record::seal(&mut b);
        b
    }

    #[test]
    fn classifier_tolerance() {
        let line = sealed(r#"{"v":2,"op":"session","session":"s","kind":5,"target":[1],"future":{"x":1}}"#);
        let ok = classify(1, &line).unwrap();
        assert_eq!((ok.op(), ok.kind(), ok.target()), ("session", None, None));
        assert!(matches!(classify(2, br#"{"v":"2","op":"intent"}"#), Err(Problem::Malformed { line: 2, .. })));
        assert!(matches!(classify(3, b"not json"), Err(Problem::Malformed { line: 3, .. })));
        let mut sealed = Record::new(op::INTENT, "s").to_line();
        sealed.pop();
        assert!(classify(4, &sealed).is_ok());
        sealed[3] ^= 1;
        assert!(matches!(classify(4, &sealed), Err(Problem::BadChecksum { line: 4 })));
    }

    /// Issue 13 item 6: a v2 line whose checksum tail is damaged (or gone) is a checksum
    /// failure, never read unchecked; the `persisted` fast path runs only on checked lines.
    #[test]
    fn a_v2_line_without_a_valid_checksum_is_a_checksum_failure() {
        let mut r = Record::new(op::PERSISTED, "s");
        r.id = "toolu_1".into();
        let line = r.to_line();
        let line = &line[..line.len() - 1];
        assert!(matches!(classify_fast(1, line), Ok(Classified::Persisted { id: "toolu_1", .. })));
        let n = line.len();
        let damaged: Vec<Vec<u8>> = vec![
            // A flipped hex digit of the checksum: not hex any more.
            [&line[..n - 3], b"g\"}"].concat(),
            // The tag damaged: `"crx"`.
            line.iter().enumerate().map(|(i, &b)| if i == n - 14 { b'x' } else { b }).collect(),
            // The checksum gone.
            [&line[..n - 18], b"}"].concat(),
            // A digit too few.
            [&line[..n - 3], b"\"}"].concat(),
        ];
        for d in &damaged {
            let text = String::from_utf8_lossy(d);
            assert!(matches!(classify(7, d), Err(Problem::BadChecksum { line: 7 })), "{text}");
            assert!(matches!(classify_fast(7, d), Err(Problem::BadChecksum { line: 7 })), "{text}");
        }
        // An upper-case hex digit (found by the fuzz test): the same number, not the same bytes.
        let upper = (0..)
            .map(|i| {
                let mut r = Record::new(op::INTENT, "s");
                r.id = format!("t{i}");
                r.to_line()
            })
            .find(|l| l[l.len() - 11..l.len() - 3].iter().any(u8::is_ascii_lowercase))
            .unwrap();
        let n = upper.len() - 1;
        let upper: Vec<u8> =
            upper[..n].iter().enumerate().map(|(i, b)| if i >= n - 10 { b.to_ascii_uppercase() } else { *b }).collect();
        assert!(matches!(classify(7, &upper), Err(Problem::BadChecksum { line: 7 })));
        // A v1 line has no checksum, and needs none.
        assert!(classify(8, br#"{"v":1,"sid":"a","ts":"t","event":"e","path":"p","persisted":false}"#).is_ok());
    }

    #[test]
    fn shared_rules() {
        let v1 = classify(1, br#"{"v":1,"sid":"a1b2c3","ts":"t","event":"e","path":"p","persisted":false}"#).unwrap();
        assert!(v1.is_v1());
        assert_eq!((v1.op(), v1.session_key()), (op::APPLIED, "a1b2c3"));
        let line = sealed(r#"{"v":2,"op":"intent","session":"full-id","sid":"full-i","tool":"Bash"}"#);
        let cmd = classify(2, &line).unwrap();
        assert!(cmd.is_command() && !cmd.is_v1());
        assert_eq!(cmd.session_key(), "full-id");
        let line = sealed(r#"{"v":2,"op":"intent","tool":"Bash","path":"a.txt"}"#);
        let side = classify(3, &line).unwrap();
        assert!(!side.is_command());
    }
}
