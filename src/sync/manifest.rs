//! `manifest.json`: what a published commit says about its journal.

use serde::{Deserialize, Serialize};

/// The manifest of one published commit (docs/sync.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The journal id (the ref's last component).
    pub journal: String,
    pub name: String,
    pub machine: String,
    pub host: String,
    pub walj_version: String,
    /// 0 for the first history; + 1 each time the journal was rewritten.
    pub epoch: u64,
    /// The head this epoch replaced (a new epoch's root commit), else null.
    #[serde(default)]
    pub previous: Option<String>,
    pub synced_at: String,
    /// Journal bytes published (up to its last complete line).
    pub journal_bytes: u64,
    /// Bytes in sealed segments (the open segment starts here).
    pub sealed_bytes: u64,
    /// Segments in the tree, and how many of them are sealed.
    pub segments: u64,
    pub sealed: u64,
    /// How many leading bytes `prefix` covers, and their blob id: a rewritten journal is
    /// told from a grown one without reading it all.
    pub prefix_len: u64,
    pub prefix: String,
    /// Sessions as the publishing machine saw them when it synced.
    #[serde(default)]
    pub sessions: Vec<SessionState>,
    /// The publishing checkout's project root (what `walj sessions resume` rewrites to this
    /// checkout's), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Digest of the open segment's (plain) bytes: a blob id, or a keyed digest when sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<String>,
    /// Set when segments, images and transcripts are encrypted (`format` 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    /// Transcripts published (safe copies, secrets removed), one per session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcripts: Vec<TranscriptState>,
}

/// How a sealed commit is encrypted (docs/sync.md, "Encryption").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Encryption {
    /// `age`.
    pub scheme: String,
    /// The journal's data key (its public half, `age1…`): every segment, image and transcript
    /// segment is encrypted to it.
    pub key: String,
    /// How `key.age` (the data key's secret half) is encrypted: `recipients` or `passphrase`.
    pub protection: String,
    /// The recipients `key.age` is encrypted to (empty for a passphrase).
    #[serde(default)]
    pub recipients: Vec<String>,
}

/// One published transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptState {
    pub session: String,
    /// The safe copy when it was published (transcript bytes it held, its file's length):
    /// an unchanged copy is not read again.
    pub source_bytes: u64,
    pub source_zst: u64,
    /// Bytes published (the copy with secrets removed), in segments like the journal's.
    pub bytes: u64,
    pub sealed_bytes: u64,
    pub segments: u64,
    pub sealed: u64,
    /// Digest of all bytes published (blob id, or keyed when sealed).
    pub digest: String,
}

/// A session's state at sync time, as its machine saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    pub session: String,
    pub sid: String,
    /// live / ended / crashed / unknown.
    pub state: String,
    pub last_ts: String,
    pub unresolved: usize,
}

impl Manifest {
    /// The manifest's bytes, as committed.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// The same journal content and session states (ignores when it was synced).
    pub(crate) fn same_content(&self, other: &Manifest) -> bool {
        let mut a = self.clone();
        a.synced_at.clone_from(&other.synced_at);
        a == *other
    }
}
