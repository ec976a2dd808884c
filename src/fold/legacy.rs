//! A subfolder's journal from before one project root, folded beside the root's
//! (docs/project-root.md, "Journals from before one root").
//!
//! The contract: [`Fold::absorb_legacy`] is the one place where the two streams meet. Each
//! journal is folded on its own (its own records, its own store, its own triage records),
//! then the subfolder's entries and sessions join the root's fold:
//! - an entry keeps its own id (Claude Code's `tool_use_id`, or an id walj derived from one:
//!   unique across journals); `path` is rebased by the subfolder prefix (`a.txt` →
//!   `pkg/core/a.txt`) and [`Entry::legacy`] names the subfolder, so an action on it goes
//!   through that journal (where its record, its blobs and any earlier triage of it are) and a
//!   restart reads the same state again;
//! - a tool call both journals hold (one session, one id) stays the root's: the subfolder's
//!   entry is left out and named in the result (never two entries under one session and id;
//!   the same id in another session is another entry);
//! - a session the root's journal already knows keeps the root's record of it (a session is
//!   in one journal: one live across the upgrade kept writing where its start record was).
//!
//! Entries from a subfolder journal come after the root's, in their own journal order. Its
//! handoffs stay in it (a brief held there is delivered by `walj --project <subfolder>`).

use super::Fold;

impl Fold {
    /// Adds the entries and sessions of `other` (the fold of the journal in the subfolder
    /// `rel`, root-relative `/`-separated) to this fold, paths rebased by `rel`. Returns the
    /// ids left out because this fold already holds them (in the same session).
    pub fn absorb_legacy(&mut self, rel: &str, other: Fold) -> Vec<String> {
        let rel = rel.trim_matches('/');
        let mut clashes = Vec::new();
        for mut e in other.entries {
            if self.by_id.get(&self.entries, &e.session, &e.id).is_some() {
                clashes.push(e.id);
                continue;
            }
            if !e.outside && !rel.is_empty() {
                e.path = format!("{rel}/{}", e.path);
            }
            e.legacy = Some(rel.to_string());
            self.by_id.insert(&e.id, self.entries.len());
            self.entries.push(e);
        }
        for mut s in other.sessions {
            if let Some(&i) = self.by_session.get(&s.session) {
                // Only marks about it here (a session told at a start): the journal that
                // holds its records says what it is.
                let mine = &self.sessions[i];
                if mine.started.is_none() && mine.prompts.is_empty() && mine.commands.is_empty() {
                    s.announced |= mine.announced;
                    s.legacy = Some(rel.to_string());
                    self.sessions[i] = s;
                }
                continue;
            }
            s.legacy = Some(rel.to_string());
            self.by_session.insert(s.session.clone(), self.sessions.len());
            self.sessions.push(s);
        }
        self.records += other.records;
        self.ids = std::mem::take(&mut self.ids).with_shown(self.entries.iter().map(|e| e.id.as_str()));
        clashes
    }
}

impl Fold {
    /// This fold without what [`Fold::absorb_legacy`] added: the root journal's own entries
    /// and sessions (triage acts on a subfolder journal's entries through that journal).
    pub fn without_legacy(mut self) -> Fold {
        if self.entries.iter().all(|e| e.legacy.is_none()) && self.sessions.iter().all(|s| s.legacy.is_none()) {
            return self;
        }
        self.entries.retain(|e| e.legacy.is_none());
        self.sessions.retain(|s| s.legacy.is_none());
        self.by_session = self.sessions.iter().enumerate().map(|(i, s)| (s.session.clone(), i)).collect();
        self.last_session = None;
        self.reindex();
        self
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fold::FoldOptions;
    use crate::journal::{JournalWriter, Record, op};

    fn journal_with(dir: &std::path::Path, id: &str, path: &str, session: &str) -> Fold {
        let j = dir.join(format!("{id}.jsonl"));
        let mut r = Record::new(op::INTENT, session);
        r.id = id.into();
        r.tool = Some("Write".into());
        r.path = path.into();
        JournalWriter::new(&j).append(&r).unwrap();
        Fold::load(&j, &FoldOptions::default()).unwrap()
    }

    #[test]
    fn entries_are_rebased_keep_their_ids_and_the_root_wins_a_clash() {
        let dir = tempfile::tempdir().unwrap();
        let mut root = journal_with(dir.path(), "toolu_root", "a.txt", "s-root");
        let old = journal_with(dir.path(), "toolu_old", "a.txt", "s-old");
        assert!(root.absorb_legacy("pkg/core", old).is_empty());
        let e = root.entry("toolu_old").unwrap();
        assert_eq!((e.path.as_str(), e.legacy.as_deref()), ("pkg/core/a.txt", Some("pkg/core")));
        assert_eq!(root.entry("toolu_root").unwrap().path, "a.txt");
        assert_eq!(root.session("s-old").unwrap().legacy.as_deref(), Some("pkg/core"));
        assert!(root.find("old").is_ok());
        std::fs::create_dir(dir.path().join("x")).unwrap();
        let clash = journal_with(&dir.path().join("x"), "toolu_root", "b.txt", "s-root");
        assert_eq!(root.absorb_legacy("pkg/x", clash), ["toolu_root"]);
        assert_eq!(root.entry("toolu_root").unwrap().path, "a.txt");
        // The same id in another session is another tool call.
        std::fs::create_dir(dir.path().join("y")).unwrap();
        let other = journal_with(&dir.path().join("y"), "toolu_root", "c.txt", "s-y");
        assert!(root.absorb_legacy("pkg/y", other).is_empty());
        assert_eq!(root.entry_in("s-y", "toolu_root").unwrap().path, "pkg/y/c.txt");
        assert_eq!(root.entry("toolu_root").unwrap().path, "a.txt");
    }
}
