//! Shown ids: the shortest start of an id that no other id of the journal starts, like git
//! and jj show commits and changes. Claude Code's ids all start with `toolu_01`; what is shown
//! is the part after it ([`typeable`]), cut where it becomes unique, never shorter than
//! [`ShortIds::MIN`] characters; the unique part can be highlighted.
//!
//! Unique against **every** id of the journal, not only the entries a listing shows: the
//! default fold drops settled entries, but `walj diff` and `walj revert` resolve a prefix
//! against every entry. The ids come from an [`IdIndex`]: 21 characters of each id (the
//! start that matters, packed into a `u128`) in sorted vectors, cached at `.walj/ids.idx`
//! like the fold snapshot (checked against the journal's device, inode, length and the
//! checksum of the bytes before its offset; only the lines after it are read). Commands
//! that print ids read it; the hook never does (it prints full typeable ids).
//!
//! The rule matches [`super::Fold::find`]: a typed prefix matches an id when it starts the
//! id in any case, with or without `toolu_` or `toolu_01`. A shown prefix is unique when no
//! other id has a form it starts. An id without a unique start (another id is, in any case,
//! the same or longer) is shown whole, with `toolu_01`: typed in full it is found exactly.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Fold;
use super::lookup::{abbrev, typeable};
use crate::journal::view::{Classified, classify_fast};
use crate::journal::{RawLine, Source, op};

/// A packed key: [`KEPT`] characters of 6 bits.
pub(super) type Key = u128;

/// Characters of an id the index keeps (6 bits each, in a [`Key`]): every character of
/// Claude Code's ids but the last, sixteen after Codex's `call_`.
pub(super) const KEPT: usize = 21;

/// The first line of the index file; the version changes with its layout.
const MAGIC: &str = "walj id index v1";

/// A lower-cased character's 6-bit code; 0 is the end of a key. Characters outside
/// `[0-9a-z_-]` share codes (never in Claude Code's ids): sharing only makes shown ids
/// longer, never ambiguous.
#[inline]
fn code(b: u8) -> Key {
    match b.to_ascii_lowercase() {
        c @ b'0'..=b'9' => 1 + Key::from(c - b'0'),
        c @ b'a'..=b'z' => 11 + Key::from(c - b'a'),
        b'_' => 37,
        b'-' => 38,
        c => 39 + Key::from(c % 25),
    }
}

/// The first [`KEPT`] characters of `s`, packed so that sorting keys sorts the strings.
#[inline]
pub(super) fn pack(s: &[u8]) -> Key {
    (0..KEPT).fold(0, |k, i| (k << 6) | s.get(i).map_or(0, |&b| code(b)))
}

/// How many keys start with `q` (as far as [`KEPT`] characters tell: a longer `q` is cut).
fn count(keys: &[Key], q: &[u8]) -> usize {
    let m = q.len().min(KEPT);
    let lo = pack(&q[..m]);
    let hi = lo + (1 << (6 * (KEPT - m)));
    keys.partition_point(|&k| k < hi) - keys.partition_point(|&k| k < lo)
}

/// How many keys are `q` (a `q` longer than [`KEPT`] characters: how many start with it).
fn count_equal(keys: &[Key], q: &[u8]) -> usize {
    if q.len() > KEPT {
        return count(keys, q);
    }
    usize::from(keys.binary_search(&pack(q)).is_ok())
}

/// Which count a lookup makes: keys starting with the typed text, or equal to it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counter {
    Prefix,
    Equal,
}

impl Counter {
    fn of(self, keys: &[Key], q: &[u8]) -> usize {
        match self {
            Counter::Prefix => count(keys, q),
            Counter::Equal => count_equal(keys, q),
        }
    }
}

/// How `Fold::find` sees an id: Claude Code's (`toolu_01` + key), another `toolu_` one
/// (`toolu_` + key), or any other (the id is its key).
enum Kind<'a> {
    Claude(&'a str),
    Toolu(&'a str),
    Plain(&'a str),
}

fn kind(id: &str) -> Kind<'_> {
    if let Some(k) = id.strip_prefix("toolu_01") {
        Kind::Claude(k)
    } else if let Some(k) = id.strip_prefix("toolu_") {
        Kind::Toolu(k)
    } else {
        Kind::Plain(id)
    }
}

/// Every entry id and session of a journal, compact: the start of each id ([`KEPT`]
/// characters, lower-cased) in one sorted vector per [`Kind`], the sessions in full.
///
/// Ids whose first [`KEPT`] characters are equal in any case are one key: shown prefixes of
/// theirs can be ambiguous, and `walj` then refuses them naming both (never the wrong one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdIndex {
    claude: Vec<Key>,
    toolu: Vec<Key>,
    plain: Vec<Key>,
    /// Session keys, lower-cased.
    sessions: Vec<String>,
}

impl IdIndex {
    /// The index of `ids` alone.
    pub(crate) fn of<'a>(ids: impl IntoIterator<Item = &'a str>) -> IdIndex {
        let mut ix = IdIndex::default();
        for id in ids {
            ix.add_id(id);
        }
        ix.finish();
        ix
    }

    /// How many ids the index holds (ids sharing their first [`KEPT`] characters count once).
    pub fn len(&self) -> usize {
        self.claude.len() + self.toolu.len() + self.plain.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn add_id(&mut self, id: &str) {
        match kind(id) {
            Kind::Claude(k) => self.claude.push(pack(k.as_bytes())),
            Kind::Toolu(k) => self.toolu.push(pack(k.as_bytes())),
            Kind::Plain(k) => self.plain.push(pack(k.as_bytes())),
        }
    }

    fn add_session(&mut self, s: &str) {
        if !s.is_empty() && self.sessions.last().is_none_or(|l| !l.eq_ignore_ascii_case(s)) {
            self.sessions.push(s.to_ascii_lowercase());
        }
    }

    /// Sorted, each key once.
    fn finish(&mut self) {
        for v in [&mut self.claude, &mut self.toolu, &mut self.plain] {
            v.sort_unstable();
            v.dedup();
        }
        self.sessions.sort_unstable();
        self.sessions.dedup();
    }

    /// Adds another index's keys (both finished).
    fn merge(&mut self, other: IdIndex) {
        fn merged<T: Ord>(a: Vec<T>, b: Vec<T>) -> Vec<T> {
            if b.is_empty() {
                return a;
            }
            let mut out = Vec::with_capacity(a.len() + b.len());
            let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
            loop {
                let next = match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) if x < y => a.next(),
                    (Some(x), Some(y)) if x > y => b.next(),
                    (Some(_), Some(_)) => {
                        b.next();
                        a.next()
                    }
                    (Some(_), None) => a.next(),
                    (None, Some(_)) => b.next(),
                    (None, None) => break,
                };
                out.extend(next);
            }
            out
        }
        let IdIndex { claude, toolu, plain, sessions } = other;
        self.claude = merged(std::mem::take(&mut self.claude), claude);
        self.toolu = merged(std::mem::take(&mut self.toolu), toolu);
        self.plain = merged(std::mem::take(&mut self.plain), plain);
        self.sessions = merged(std::mem::take(&mut self.sessions), sessions);
    }

    /// Takes the ids and the session of one journal line: every id an entry or a command can
    /// have (the id of an intent or outcome, `L<line>` for lines without one, as the fold names
    /// them). More ids than the fold keeps only make shown ids longer.
    fn add_line(&mut self, raw: &RawLine<'_>, last_session: &mut String) {
        let view = match classify_fast(raw.line_no, raw.bytes) {
            // A persisted line names an entry an intent or outcome named before.
            Ok(Classified::Persisted { .. }) | Err(_) => return,
            Ok(Classified::View(v)) => v,
        };
        let key = view.session_key();
        if key != last_session.as_str() {
            self.add_session(key);
            last_session.clear();
            last_session.push_str(key);
        }
        if matches!(view.op(), op::INTENT | op::APPLIED | op::FAILED) {
            if view.id.is_empty() {
                self.add_id(&format!("L{}", raw.line_no));
            } else {
                self.add_id(&view.id);
            }
        }
    }

    /// How many ids have a form (the id, without `toolu_`, without `toolu_01`) that starts
    /// with `q` (lower case), one count per form.
    fn matching(&self, q: &[u8]) -> usize {
        self.forms(q, Counter::Prefix)
    }

    /// How many ids have a form equal to `q` (lower case), one count per form.
    fn equal(&self, q: &[u8]) -> usize {
        self.forms(q, Counter::Equal)
    }

    fn forms(&self, q: &[u8], n: Counter) -> usize {
        // Keys: the id's form without `toolu_01`, `toolu_`, or the whole id.
        let keys = n.of(&self.claude, q) + n.of(&self.toolu, q) + n.of(&self.plain, q);
        keys + self.with_01(q, n) + self.with_toolu(q, n)
    }

    /// Claude ids whose form without `toolu_` (`01` + key) starts with (or is) `q`.
    fn with_01(&self, q: &[u8], n: Counter) -> usize {
        match q.strip_prefix(b"01") {
            Some(rest) => n.of(&self.claude, rest),
            None if b"01".starts_with(q) && n == Counter::Prefix => self.claude.len(),
            None => 0,
        }
    }

    /// `toolu_` ids whose whole id starts with (or is) `q`.
    fn with_toolu(&self, q: &[u8], n: Counter) -> usize {
        match q.strip_prefix(b"toolu_") {
            Some(rest) => self.with_01(rest, n) + n.of(&self.toolu, rest),
            None if b"toolu_".starts_with(q) && n == Counter::Prefix => self.claude.len() + self.toolu.len(),
            None => 0,
        }
    }

    /// Whether `id`'s key is in the index.
    fn holds(&self, id: &str) -> bool {
        let (keys, k) = match kind(id) {
            Kind::Claude(k) => (&self.claude, k),
            Kind::Toolu(k) => (&self.toolu, k),
            Kind::Plain(k) => (&self.plain, k),
        };
        keys.binary_search(&pack(k.as_bytes())).is_ok()
    }

    /// The longest common start (in characters, any case) of `session` and another session.
    fn session_overlap(&self, session: &str) -> usize {
        let s = session.to_ascii_lowercase();
        let common = |o: &String| s.chars().zip(o.chars()).take_while(|(a, b)| a == b).count();
        let at = self.sessions.partition_point(|o| o < &s);
        let before = at.checked_sub(1).and_then(|i| self.sessions.get(i)).map_or(0, common);
        let after = self.sessions[at..].iter().find(|o| **o != s).map_or(0, common);
        before.max(after)
    }

    // ------------------------------------------------------------------ the cached index

    /// Every id and session `journal` names (with its side files' records): from the cache
    /// next to a project's journal and the lines after it. The cache is written anew when
    /// more than [`super::snapshot::WRITE_AFTER`] bytes had to be read past it.
    pub(crate) fn load(journal: &Path) -> io::Result<IdIndex> {
        Self::load_with(journal, super::snapshot::WRITE_AFTER)
    }

    /// [`IdIndex::load`], writing the cache after reading more than `write_after` bytes.
    pub(crate) fn load_with(journal: &Path, write_after: u64) -> io::Result<IdIndex> {
        Self::load_at(journal, path(journal), write_after)
    }

    /// [`IdIndex::load_with`] with the cache kept at `cache` (`None`: read in full, nothing
    /// written): another machine's copy is cached outside its folder (`crate::sync::remotes`).
    pub fn load_at(journal: &Path, cache: Option<PathBuf>, write_after: u64) -> io::Result<IdIndex> {
        let file = match crate::fsutil::open_regular(journal) {
            Ok((f, _)) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(IdIndex::default()),
            Err(e) => return Err(e),
        };
        let (mut ix, from, lines) = cache.as_deref().and_then(|c| read(c, &file)).unwrap_or_default();
        let mut tail = IdIndex::default();
        let mut last = String::new();
        let report = Source::tail_with_sides(journal, from, lines).scan(|raw| tail.add_line(&raw, &mut last))?;
        tail.finish();
        ix.merge(tail);
        // Side files' records are not the journal's yet: a cache never holds them.
        if let Some(c) = cache
            && report.pending == 0
            && report.end.saturating_sub(from) > write_after
        {
            let same = fs::metadata(journal).ok().map(|m| crate::journal::identity(&m))
                == file.metadata().ok().map(|m| crate::journal::identity(&m));
            if same {
                let _ = write(&c, &file, &ix, report.end, report.lines);
            }
        }
        Ok(ix)
    }
}

/// The cache of `journal`'s ids: `ids.idx` next to a project's `.walj/journal.jsonl`; `None`
/// for any other journal (`--journal` files are read in full each time, as the fold reads
/// them; other machines' copies are cached elsewhere, [`IdIndex::load_at`]).
pub(crate) fn path(journal: &Path) -> Option<PathBuf> {
    let dir = journal.parent()?.file_name()?;
    (journal.file_name()? == "journal.jsonl" && dir == ".walj").then(|| journal.with_file_name("ids.idx"))
}

/// The body: the three key vectors (little-endian `u128`s, each after its `u64` length),
/// then the sessions (each a `u32` length and its bytes).
fn encode(ix: &IdIndex) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 * ix.len() + 24 + ix.sessions.iter().map(|s| s.len() + 4).sum::<usize>());
    for v in [&ix.claude, &ix.toolu, &ix.plain] {
        b.extend_from_slice(&(v.len() as u64).to_le_bytes());
        for k in v {
            b.extend_from_slice(&k.to_le_bytes());
        }
    }
    for s in &ix.sessions {
        b.extend_from_slice(&(s.len() as u32).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b
}

fn decode(mut b: &[u8]) -> Option<IdIndex> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    let mut keys = || -> Option<Vec<Key>> {
        let n = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
        let raw = take(&mut b, usize::try_from(n).ok()?.checked_mul(16)?)?;
        let v: Vec<Key> = raw.chunks_exact(16).map(|c| Key::from_le_bytes(c.try_into().unwrap_or_default())).collect();
        v.is_sorted().then_some(v)
    };
    let (claude, toolu, plain) = (keys()?, keys()?, keys()?);
    let mut sessions = Vec::new();
    while !b.is_empty() {
        let n = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?);
        sessions.push(String::from_utf8(take(&mut b, n as usize)?.to_vec()).ok()?);
    }
    sessions.is_sorted().then_some(IdIndex { claude, toolu, plain, sessions })
}

/// The cached index when it matches the journal open as `file`: the index and the
/// (offset, lines) it covers. Anything doubtful is `None` (the journal is read in full).
fn read(cache: &Path, file: &fs::File) -> Option<(IdIndex, u64, u64)> {
    let (raw, start, offset, lines) = super::snapshot::read_cache(cache, MAGIC, file).ok()?;
    Some((decode(&raw[start..])?, offset, lines))
}

/// Writes the cache (temp file, rename; not synced: a cache). Best effort.
fn write(cache: &Path, file: &fs::File, ix: &IdIndex, offset: u64, lines: u64) -> io::Result<()> {
    super::snapshot::write_cache(cache, MAGIC, ".ids.idx.tmp-", file, &encode(ix), offset, lines)
}

/// How ids are shown: the shortest unique start of each, after `toolu_01`.
///
/// Without an index (the hook, or a journal that could not be read) every id is shown whole
/// (its [`typeable`] form) and every session by its first six characters.
#[derive(Debug, Clone, Default)]
pub struct ShortIds {
    index: Option<Arc<IdIndex>>,
    /// Ids shown that the index does not hold: the changes of a command a crash cut off
    /// (not journal lines yet).
    extra: IdIndex,
}

impl ShortIds {
    /// Shown ids are never shorter than this, so they stay unique longer as the journal grows
    /// (the unique start may be shorter: it is the highlighted part).
    pub(crate) const MIN: usize = 4;
    /// Shown sessions are never shorter than this: the `sid` of the journal's lines.
    pub(crate) const SESSION_MIN: usize = 6;

    /// Short ids unique among `ids` alone.
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> ShortIds {
        ShortIds { index: Some(Arc::new(IdIndex::of(ids))), extra: IdIndex::default() }
    }

    /// Short ids unique among every id `journal` names ([`IdIndex::load`]).
    pub(crate) fn load(journal: &Path) -> io::Result<ShortIds> {
        Ok(ShortIds { index: Some(Arc::new(IdIndex::load(journal)?)), extra: IdIndex::default() })
    }

    /// Also unique against `ids` (those shown that are not in the journal).
    pub(crate) fn with_shown<'a>(mut self, ids: impl IntoIterator<Item = &'a str>) -> ShortIds {
        let Some(index) = &self.index else { return self };
        let new: Vec<&str> = ids.into_iter().filter(|id| !index.holds(id) && !self.extra.holds(id)).collect();
        if !new.is_empty() {
            self.extra.merge(IdIndex::of(new));
        }
        self
    }

    /// Also unique against every id of `other` (another journal's index), each counted once.
    pub(crate) fn with_index(mut self, mut other: IdIndex) -> ShortIds {
        let Some(index) = self.index.clone() else { return self };
        for (mine, extra, theirs) in [
            (&index.claude, &self.extra.claude, &mut other.claude),
            (&index.toolu, &self.extra.toolu, &mut other.toolu),
            (&index.plain, &self.extra.plain, &mut other.plain),
        ] {
            theirs.retain(|k| mine.binary_search(k).is_err() && extra.binary_search(k).is_err());
        }
        other.sessions.retain(|s| index.sessions.binary_search(s).is_err());
        self.extra.merge(other);
        self
    }

    /// Whether ids are shortened (an index was loaded).
    pub fn known(&self) -> bool {
        self.index.is_some()
    }

    /// The length of the shortest start of `id`'s typeable form that no other id has a form
    /// starting with; `None` when there is none.
    fn unique_len(&self, index: &IdIndex, id: &str) -> Option<usize> {
        let t = typeable(id).to_ascii_lowercase();
        let held = index.holds(id) || self.extra.holds(id);
        let own = IdIndex::of([id]);
        let unique = |n: usize| {
            let q = &t.as_bytes()[..n];
            let all = index.matching(q) + self.extra.matching(q);
            let others = if held { all.saturating_sub(own.matching(q)) } else { all };
            others == 0
        };
        // Counts are exact up to KEPT characters; past them nothing more is known.
        (1..=t.len().min(KEPT)).find(|&n| unique(n))
    }

    /// Whether no other id has a form equal to `id`'s typeable form (typed whole, `find`
    /// takes the id whose form it is).
    fn typeable_is_exact(&self, index: &IdIndex, id: &str) -> bool {
        let t = typeable(id).to_ascii_lowercase();
        let held = index.holds(id) || self.extra.holds(id);
        let all = index.equal(t.as_bytes()) + self.extra.equal(t.as_bytes());
        let own = if held { IdIndex::of([id]).equal(t.as_bytes()) } else { 0 };
        !t.is_empty() && all.saturating_sub(own) == 0
    }

    /// `id` as shown, split into its unique start and the rest shown after it: the typeable
    /// form's shortest unique start, together at least [`Self::MIN`] characters; when no start
    /// is unique (another id is longer), the whole typeable form if no other id has that form,
    /// else the whole id; the whole typeable form without an index.
    pub(crate) fn split<'a>(&self, id: &'a str) -> (&'a str, &'a str) {
        let t = typeable(id);
        let Some(index) = self.index.as_deref() else { return (t, "") };
        match self.unique_len(index, id).filter(|_| t.is_ascii()) {
            Some(n) => (&t[..n], &t[n..n.max(Self::MIN).min(t.len())]),
            None if self.typeable_is_exact(index, id) => (t, ""),
            None => (id, ""),
        }
    }

    /// `id` as shown (see [`Self::split`]).
    pub fn short<'a>(&self, id: &'a str) -> &'a str {
        let (unique, rest) = self.split(id);
        // `unique` starts the id (shown whole) or its typeable form.
        let from = if unique.len() == id.len() { 0 } else { id.len() - typeable(id).len() };
        &id[from..from + unique.len() + rest.len()]
    }

    /// A session as shown, split like [`Self::split`]: its unique start and the rest (together
    /// at least [`Self::SESSION_MIN`] characters).
    pub(crate) fn session_split<'a>(&self, session: &'a str) -> (&'a str, &'a str) {
        let Some(index) = self.index.as_deref() else { return (abbrev(session, Self::SESSION_MIN), "") };
        let n = index.session_overlap(session) + 1;
        let unique = abbrev(session, n);
        let shown = abbrev(session, n.max(Self::SESSION_MIN));
        (unique, &shown[unique.len()..])
    }

    /// A session as shown.
    pub(crate) fn session<'a>(&self, session: &'a str) -> &'a str {
        let (u, rest) = self.session_split(session);
        &session[..u.len() + rest.len()]
    }
}

impl Fold {
    /// Reads the ids `journal` names, so this fold's ids are shown short ([`Fold::ids`]).
    /// Best effort: without them ids are shown whole.
    pub(crate) fn load_short_ids(&mut self, journal: &Path) {
        if let Ok(ids) = ShortIds::load(journal) {
            self.ids = ids.with_shown(self.entries.iter().map(|e| e.id.as_str()));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_their_strings_and_count_by_prefix() {
        let mut words = ["ab", "abc", "abd", "b", "a", "a_", "a-", "0z", "zz"];
        let mut keys: Vec<Key> = words.iter().map(|w| pack(w.as_bytes())).collect();
        keys.sort_unstable();
        words.sort_by_key(|w| pack(w.as_bytes()));
        let again: Vec<Key> = words.iter().map(|w| pack(w.as_bytes())).collect();
        assert_eq!(keys, again);
        assert_eq!(count(&keys, b"ab"), 3);
        assert_eq!(count(&keys, b"AB"), 3);
        assert_eq!(count(&keys, b"abc"), 1);
        assert_eq!(count(&keys, b"a"), 6);
        assert_eq!(count(&keys, b""), keys.len());
        assert_eq!(count(&keys, b"c"), 0);
    }

    #[test]
    fn shown_ids_are_unique_against_every_form_find_matches() {
        // `01ab…` is the typeable form of toolu_0101ab…; it is also how toolu_01ab… starts
        // without `toolu_`: typing `01ab` would match both.
        let ids = ShortIds::new(["toolu_0101abX", "toolu_01abY"]);
        assert_eq!(ids.split("toolu_0101abX"), ("01abX", ""));
        assert_eq!(ids.split("toolu_01abY"), ("a", "bY"));
        assert_eq!(ids.short("toolu_01abY"), "abY");
        // A non-Claude id starting `tool`: every `toolu_` id starts with it too.
        let ids = ShortIds::new(["toolbox1", "toolu_01zz"]);
        assert_eq!(ids.short("toolbox1"), "toolb");
        // Case never tells ids apart.
        let ids = ShortIds::new(["toolu_01AbcDEF1", "toolu_01abcdXYZ"]);
        assert_eq!(ids.split("toolu_01AbcDEF1"), ("AbcDE", ""));
        assert_eq!(ids.split("toolu_01abcdXYZ"), ("abcdX", ""));
    }

    #[test]
    fn the_unique_part_is_split_from_the_rest_shown() {
        let ids = ShortIds::new(["toolu_01EditCfg", "toolu_01WriteDoc", "toolu_01WrongOne"]);
        assert_eq!(ids.split("toolu_01EditCfg"), ("E", "dit"));
        assert_eq!(ids.split("toolu_01WriteDoc"), ("Wri", "t"));
        assert_eq!(ids.short("toolu_01WrongOne"), "Wron");
        // An id the index does not hold is still unique against every id it does.
        assert_eq!(ids.split("toolu_01Wreck"), ("Wre", "c"));
        // Another journal's ids count once, however many journals hold them.
        let twice = ids.clone().with_index(IdIndex::of(["toolu_01EditCfg", "toolu_01EditX"]));
        assert_eq!(twice.split("toolu_01EditCfg"), ("EditC", ""));
        assert_eq!(twice.split("toolu_01WriteDoc"), ("Wri", "t"));
        let ids = ids.with_shown(["toolu_01Wreck", "toolu_01EditCfg"]);
        assert_eq!(ids.split("toolu_01WriteDoc"), ("Wri", "t"));
        assert_eq!(ids.split("toolu_01Wreck"), ("Wre", "c"));
        assert_eq!(ids.split("toolu_01WrongOne"), ("Wro", "n"));
        // No index: whole typeable ids.
        assert_eq!(ShortIds::default().split("toolu_01EditCfg"), ("EditCfg", ""));
        // No unique start: the whole id, which `find` matches exactly.
        let ids = ShortIds::new(["toolu_01ab", "ab", "toolu_01abc"]);
        assert_eq!(ids.short("toolu_01ab"), "toolu_01ab");
        assert_eq!(ids.short("ab"), "ab");
        assert_eq!(ids.split("toolu_01abc"), ("abc", ""));
        // A start of another id, but no other id is it: its typeable form, found exactly.
        let ids = ShortIds::new(["toolu_01EditServer", "toolu_01EditServer2"]);
        assert_eq!(ids.split("toolu_01EditServer"), ("EditServer", ""));
        assert_eq!(ids.split("toolu_01EditServer2"), ("EditServer2", ""));
    }

    #[test]
    fn sessions_are_shown_by_their_unique_start_at_least_six_characters() {
        let mut ix = IdIndex::default();
        for s in ["8f14e45f-aaaa", "8f14e46f-bbbb", "c0ffee00-cccc"] {
            ix.add_session(s);
        }
        ix.finish();
        let ids = ShortIds { index: Some(Arc::new(ix)), extra: IdIndex::default() };
        assert_eq!(ids.session_split("8f14e45f-aaaa"), ("8f14e45", ""));
        assert_eq!(ids.session_split("c0ffee00-cccc"), ("c", "0ffee"));
        assert_eq!(ShortIds::default().session_split("c0ffee00-cccc"), ("c0ffee", ""));
    }

    #[test]
    fn the_body_round_trips() {
        let mut ix = IdIndex::of(["toolu_01a", "toolu_b", "c", "L12"]);
        ix.add_session("s-1");
        ix.finish();
        assert_eq!(decode(&encode(&ix)), Some(ix));
        assert_eq!(decode(b"\x01\x00"), None);
    }

    /// A journal at `.walj/journal.jsonl` in a temp folder, with intents of `ids`.
    fn journal(ids: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join(".walj").join("journal.jsonl");
        fs::create_dir_all(j.parent().unwrap()).unwrap();
        append(&j, ids, "sess-a");
        (dir, j)
    }

    fn append(j: &Path, ids: &[&str], session: &str) {
        let w = crate::journal::JournalWriter::new(j);
        for id in ids {
            let mut r = crate::journal::Record::new(op::INTENT, session);
            r.id = (*id).to_string();
            w.append(&r).unwrap();
        }
    }

    /// The index a full read of `j` gives (a copy outside `.walj/` is never cached).
    fn full(j: &Path) -> IdIndex {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.jsonl");
        fs::copy(j, &copy).unwrap();
        IdIndex::load_with(&copy, 0).unwrap()
    }

    #[test]
    fn the_cache_covers_the_journal_and_the_lines_after_it_are_read() {
        let (_d, j) = journal(&["toolu_01AbcdeX", "toolu_01Q", "call_1"]);
        let cache = path(&j).unwrap();
        assert!(!cache.exists());
        let first = IdIndex::load_with(&j, 0).unwrap();
        assert!(cache.exists(), "written after reading more than 0 bytes");
        assert_eq!(first.len(), 3);
        assert_eq!(first, full(&j));
        // Lines appended after the cache: read, and the cache is kept as it was (1 MB rule).
        let before = fs::read(&cache).unwrap();
        append(&j, &["toolu_01AbcdeY"], "sess-b");
        let second = IdIndex::load(&j).unwrap();
        assert_eq!(second, full(&j));
        assert_eq!(second.len(), 4);
        assert_eq!(second.sessions, vec!["sess-a".to_string(), "sess-b".to_string()]);
        assert_eq!(fs::read(&cache).unwrap(), before);
        // What is shown is unique against the id only the tail named.
        let ids = ShortIds { index: Some(Arc::new(second)), extra: IdIndex::default() };
        assert_eq!(ids.split("toolu_01AbcdeX"), ("AbcdeX", ""));
    }

    #[test]
    fn a_cache_that_does_not_match_the_journal_is_not_used() {
        let (_d, j) = journal(&["toolu_01Aaaa", "toolu_01Bbbb"]);
        IdIndex::load_with(&j, 0).unwrap();
        // The journal replaced (a compaction): another inode, other ids.
        let tmp = j.with_file_name("new.jsonl");
        append(&tmp, &["toolu_01Cccc"], "sess-c");
        fs::rename(&tmp, &j).unwrap();
        let ix = IdIndex::load_with(&j, u64::MAX).unwrap();
        assert_eq!(ix, full(&j));
        assert_eq!(ix.len(), 1);
        // A damaged cache: read in full.
        IdIndex::load_with(&j, 0).unwrap();
        let cache = path(&j).unwrap();
        let mut raw = fs::read(&cache).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        fs::write(&cache, raw).unwrap();
        assert_eq!(IdIndex::load_with(&j, u64::MAX).unwrap(), full(&j));
    }

    #[test]
    fn records_waiting_in_side_files_count_but_are_never_cached() {
        let (_d, j) = journal(&["toolu_01Aaaa"]);
        let side = crate::journal::JournalWriter::new(&j).side_dir().to_path_buf();
        fs::create_dir_all(&side).unwrap();
        let mut r = crate::journal::Record::new(op::INTENT, "sess-a");
        r.id = "toolu_01Aaab".into();
        fs::write(side.join("1-1.jsonl"), r.to_line()).unwrap();
        let ix = IdIndex::load_with(&j, 0).unwrap();
        assert_eq!(ix.len(), 2, "{ix:?}");
        assert!(!path(&j).unwrap().exists(), "no cache while side files wait");
    }

    proptest::proptest! {
        /// Whatever the ids, typing an id as shown, or only its unique start, finds that id with
        /// `Fold::find`'s rule (any case, with or without `toolu_` / `toolu_01`).
        #[test]
        fn a_shown_id_and_its_unique_start_find_that_id(
            raw in proptest::collection::vec(
                (proptest::sample::select(vec!["toolu_01", "toolu_", "", "toolu_0101", "tool", "01", "TOOLU_01", "call_"]),
                 "[aAbB01_]{1,6}"),
                1..24,
            )
        ) {
            let mut ids: Vec<String> = raw.into_iter().map(|(p, b)| format!("{p}{b}")).collect();
            ids.sort_by_key(|i| i.to_ascii_lowercase());
            ids.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
            let shown = ShortIds::new(ids.iter().map(String::as_str));
            for id in &ids {
                let (unique, rest) = shown.split(id);
                let short = shown.short(id);
                proptest::prop_assert_eq!(format!("{unique}{rest}"), short.to_string());
                for typed in [short, unique] {
                    let found = super::super::lookup::find_by_prefix(&ids, typed, |s| s.as_str());
                    proptest::prop_assert_eq!(found.map(|i| &ids[i]), Ok(id), "typed {:?} for {:?} in {:?}", typed, id, ids);
                }
            }
        }
    }
}
