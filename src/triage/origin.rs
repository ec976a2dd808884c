//! Where a journal record came from, told by where it was read, never by its fields.
//!
//! - **own**: written here by this checkout's hooks and commands;
//! - **bundle**: inside an import range. `walj sessions import` appends a bundle's records in
//!   one write and ends it with its own `session`/`imported` record (`records` = how many
//!   lines it added, `bundle` = the file): the `records` lines right before such a record are
//!   the bundle's. A bundle cannot forge that record (import refuses session-less records and
//!   `imported` marks in a bundle), and any field a record carries (an `origin: "local"`, a
//!   `by`) proves nothing;
//! - **synced** entries are never in this journal: they are read from `remotes/<id>/` (the
//!   sync module's `RemoteJournal`), so their origin is the journal they were read from.
//!
//! Triage acts on a bundle's entries only by id, with a confirmation that names the bundle,
//! never through `--all`/`--session`, and `walj undo` without an id undoes this checkout's
//! own last command only (a bundle's forged triage record may well be the journal's last line).

use std::path::Path;

use serde_json::Value;

use crate::fold::{Action, Entry};
use crate::journal::reader::{contains, scan_lines};
use crate::journal::record::parse_record;
use crate::journal::{key, kind, op};

/// Where a record came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Written here by this checkout's hooks or commands.
    Own,
    /// Imported from a bundle (its file name, as the `imported` record names it).
    Bundle(String),
}

impl Origin {
    pub(crate) fn is_own(&self) -> bool {
        matches!(self, Origin::Own)
    }

    /// `from bundle X`, for confirmations and refusals (empty for own records).
    #[allow(clippy::wrong_self_convention)] // a phrase (`from bundle X`), not a conversion
    pub(crate) fn from_what(&self) -> String {
        match self {
            Origin::Own => String::new(),
            Origin::Bundle(b) => format!("from bundle {b}"),
        }
    }
}

/// The import ranges of a journal: which lines came from which bundle.
#[derive(Debug, Clone, Default)]
pub(crate) struct Provenance {
    /// (first line, last line, bundle), in journal order.
    ranges: Vec<(u64, u64, String)>,
}

impl Provenance {
    /// Reads the import ranges of `journal` (lines holding an `imported` mark; an unreadable
    /// journal has none). Through the line index where it applies: only the lines that mark an
    /// import and the ones the classifier refuses are read (`fold::located::scan_imports`),
    /// the same lines a whole scan would find marks among; else the whole journal.
    pub(crate) fn load(journal: &Path) -> Provenance {
        let mut ranges = Vec::new();
        let mut each = |raw: crate::journal::RawLine<'_>| {
            if !contains(raw.bytes, b"\"imported\"") || !contains(raw.bytes, b"\"records\"") {
                return;
            }
            let Ok(rec) = parse_record(raw.bytes) else { return };
            if let Some(n) = import_mark(&rec) {
                let first = raw.line_no.saturating_sub(n);
                let bundle = rec.get_str(key::BUNDLE).unwrap_or("a bundle").to_string();
                if n > 0 {
                    ranges.push((first, raw.line_no - 1, bundle));
                }
            }
        };
        if crate::fold::located::scan_imports(journal, &mut each).is_none() {
            let _ = scan_lines(journal, each);
        }
        Provenance { ranges }
    }

    /// The origin of the record at `line`.
    pub(crate) fn of_line(&self, line: u64) -> Origin {
        match self.ranges.iter().find(|(a, b, _)| (*a..=*b).contains(&line)) {
            Some((_, _, bundle)) => Origin::Bundle(bundle.clone()),
            None => Origin::Own,
        }
    }

    /// The origin of an entry: that of its first record.
    pub(crate) fn of_entry(&self, e: &Entry) -> Origin {
        self.of_line(e.line)
    }

    /// The origin of a triage action: that of its record.
    pub(crate) fn of_action(&self, a: &Action) -> Origin {
        self.of_line(a.line)
    }
}

/// `Some(records)` when `rec` is the mark walj writes after a bundle's records: a session
/// record of no session (`kind: imported`, `target` = the bundle's session).
pub(crate) fn import_mark(rec: &crate::journal::Record) -> Option<u64> {
    (rec.op() == op::SESSION && rec.kind.as_deref() == Some(kind::IMPORTED) && rec.session_key().is_empty())
        .then(|| rec.extra.get(key::RECORDS).and_then(Value::as_u64).unwrap_or(0))
}

/// Whether an entry came from elsewhere, and so is left out of `--all` / `--session`: the
/// entries kept and how many were left out.
pub(crate) fn own_only<'f>(prov: &Provenance, entries: Vec<&'f Entry>) -> (Vec<&'f Entry>, Vec<(&'f Entry, Origin)>) {
    let mut own = Vec::new();
    let mut skipped = Vec::new();
    for e in entries {
        match prov.of_entry(e) {
            Origin::Own => own.push(e),
            o => skipped.push((e, o)),
        }
    }
    (own, skipped)
}

/// The line that says why entries were left out of `--all`/`--session`.
pub(crate) fn skipped_line(n: usize, what: &str) -> String {
    format!(
        "{n} entr{} from imported bundles left out: {what} acts on this checkout's own entries only. \
         Name an imported entry by its id to act on it (walj asks first)",
        if n == 1 { "y" } else { "ies" }
    )
}
