//! Session bundles: one file that carries a session to another checkout or machine
//! (`walj sessions export` / `import`, issue 5 item 6).
//!
//! The file is `zstd(payload)`, or `age(zstd(payload))` when encrypted (a passphrase, or age
//! recipients). The payload is text headers followed by raw bytes, so `zstd -dc FILE | head`
//! shows what it holds:
//!
//! ```text
//! {"walj_bundle":1,"session":"…","records":9,"objects":2,…}   format version and summary
//! records <n>\n<n bytes: the session's journal lines, verbatim (with their checksums)>
//! object <id> <n>\n<n bytes>                                   one per object, id = git blob id
//! transcript <n>\n<n bytes: the transcript copy, uncompressed>
//! end <crc32c of every payload byte before this line>\n
//! ```
//!
//! Import reads and checks everything before it writes anything: the format version (a newer
//! one is refused with a message), the end line and checksum (truncation, tampering), every
//! object's id against its bytes, every record's checksum and parse, and every path against the
//! project (`Project::resolve_rel`). Then it writes objects, the transcript copy, and the
//! records this journal does not hold yet, so importing twice adds nothing.

use std::collections::{BTreeSet, HashSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SessionError, is_mark_for, transcript};
use crate::crypt::{self, CryptError};
pub use crate::crypt::{Keys, Protection};
use crate::fold::{Fold, FoldOptions};
use crate::fsutil;
use crate::journal::reader::{check_line, contains, scan_lines};
use crate::journal::record::{Blob, Record, check_crc, parse_record};
use crate::journal::{JournalWriter, classify, key, kind, op};
use crate::project::Project;
use crate::store::{Store, StoreError, blob_id};

/// The payload format this walj writes and the newest it reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
const AGE_ARMOR: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{path}: not a walj session bundle ({why}); nothing was imported")]
    NotABundle { path: String, why: String },
    #[error(
        "{path}: made by a newer walj (bundle format version {found}; this walj reads version {FORMAT_VERSION}). Upgrade walj and import again; nothing was imported"
    )]
    Newer { path: String, found: u64 },
    #[error("{path}: wrong passphrase (or a damaged header); nothing was imported")]
    WrongPassphrase { path: String },
    #[error(
        "{path}: none of the given identities opens it (it is encrypted to other age recipients); nothing was imported"
    )]
    NoMatchingKey { path: String },
    #[error(
        "{path}: the bundle is encrypted with a passphrase; set WALJ_PASSPHRASE or run the command in a terminal to type it; nothing was imported"
    )]
    NeedPassphrase { path: String },
    #[error(
        "{path}: the bundle is encrypted to age recipients; pass --identity FILE with a matching key; nothing was imported"
    )]
    NeedIdentity { path: String },
    #[error("{path}: truncated ({why}); copy the complete file again; nothing was imported")]
    Truncated { path: String, why: String },
    #[error("{path}: damaged or changed after export ({why}); nothing was imported")]
    Tampered { path: String, why: String },
    #[error("{path}: refused: {why}; nothing was imported")]
    Refused { path: String, why: String },
    /// Past a `[limits]` bound (a decompression bomb, or a bundle larger than allowed).
    #[error("{path}: refused: {why}; nothing was imported. {raise}")]
    TooLarge { path: String, why: String, raise: String },
    #[error("{op} {path}: {source}")]
    Io { op: String, path: String, source: io::Error },
    #[error("encrypting {path}: {why}")]
    Encrypt { path: String, why: String },
}

fn io_err(op: &str, path: &Path) -> impl FnOnce(io::Error) -> BundleError {
    let op = op.to_string();
    let path = path.display().to_string();
    move |source| BundleError::Io { op, path, source }
}

/// The payload's first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    /// Format version.
    pub walj_bundle: u32,
    pub session: String,
    pub sid: String,
    pub created: String,
    /// walj version that wrote it.
    pub walj: String,
    /// Project root where it was exported (to map recorded folders).
    pub source_root: String,
    /// The transcript path the session recorded.
    #[serde(default)]
    pub transcript_source: Option<String>,
    pub records: usize,
    pub objects: usize,
    #[serde(default)]
    pub transcript_bytes: Option<u64>,
}

/// A session's material.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    pub meta: Meta,
    /// Journal lines, each `\n`-terminated, verbatim.
    pub records: Vec<u8>,
    /// (id, bytes), ids unique.
    pub objects: Vec<(String, Vec<u8>)>,
    pub transcript: Option<Vec<u8>>,
    /// Problems met while collecting (damaged objects left out).
    pub warnings: Vec<String>,
}

/// Gathers a session's records (and the marks other sessions wrote about it), the objects they
/// name, and its transcript copy (else the original transcript, when it still exists).
///
/// The transcript is redacted as `walj sync` publishes it (secret-looking tokens replaced,
/// never-captured files' contents withheld: [`crate::session::redact::sanitise`]) unless
/// `keep_transcript_secrets` (`--keep-transcript-secrets`).
pub(crate) fn collect(
    project: &Project,
    session: &str,
    keep_transcript_secrets: bool,
) -> Result<Contents, SessionError> {
    let fold =
        Fold::load(&project.journal, &FoldOptions::default()).map_err(SessionError::io("reading", &project.journal))?;
    let info = fold.session(session).ok_or_else(|| SessionError::Unknown(session.to_string()))?;
    let actions: BTreeSet<String> =
        fold.handoffs.iter().filter(|h| h.session == session).map(|h| h.action.clone()).collect();
    let needle: Vec<u8> = session.chars().take(6).collect::<String>().into_bytes();
    let mut records = Vec::new();
    let mut count = 0usize;
    let mut ids: BTreeSet<String> = BTreeSet::new();
    scan_lines(&project.journal, |raw| {
        let maybe_mark = contains(raw.bytes, b"\"target\"");
        if !maybe_mark && !contains(raw.bytes, &needle) {
            return;
        }
        // The fold's classifier, then the full record (an import checks every field).
        if classify(raw.line_no, raw.bytes).is_err() {
            return;
        }
        let Ok(rec) = parse_record(raw.bytes) else { return };
        let mine = rec.session_key() == session
            || (rec.op() == op::SESSION && is_mark_for(rec.kind.as_deref(), rec.target.as_deref(), session, &actions));
        if !mine {
            return;
        }
        records.extend_from_slice(raw.bytes);
        records.push(b'\n');
        count += 1;
        for id in super::hex_ids(raw.bytes) {
            ids.insert(id.to_string());
        }
    })
    .map_err(SessionError::io("reading", &project.journal))?;
    let store = Store::new(project.store_dir());
    let mut objects = Vec::new();
    let mut warnings = Vec::new();
    for id in ids {
        match store.get(&id) {
            Ok(bytes) => objects.push((id, bytes)),
            Err(StoreError::Missing(_)) => {} // ids of files never captured, commits, …
            Err(e) => warnings.push(format!("left out: {e}")),
        }
    }
    let transcript = match transcript::read_copy(project, session).map_err(|e| SessionError::Io {
        op: "reading the transcript copy".into(),
        path: project.dir.clone(),
        source: e,
    })? {
        Some(t) => Some(t),
        None => info.transcript.as_deref().and_then(|p| std::fs::read(p).ok()),
    };
    let transcript = match transcript {
        Some(t) if !keep_transcript_secrets => {
            let (_, matcher) = crate::config::Config::load_or_default(&project.config_path(), |_| {});
            let matcher = matcher.or_else(|| crate::config::Config::default().matcher().ok());
            match matcher {
                Some(m) => Some(crate::session::redact::sanitise(&t, &project.root.to_string_lossy(), &m)),
                None => Some(t),
            }
        }
        other => other,
    };
    let meta = Meta {
        walj_bundle: FORMAT_VERSION,
        session: session.to_string(),
        sid: info.sid.clone(),
        created: crate::journal::record::now_ts(),
        walj: env!("CARGO_PKG_VERSION").to_string(),
        source_root: project.root.display().to_string(),
        transcript_source: info.transcript.clone(),
        records: count,
        objects: objects.len(),
        transcript_bytes: transcript.as_ref().map(|t| t.len() as u64),
    };
    warnings.extend(crate::secrets::bundle_warnings(&records, &objects, transcript.as_deref()));
    Ok(Contents { meta, records, objects, transcript, warnings })
}

/// The uncompressed payload.
pub(crate) fn encode(c: &Contents) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        c.records.len()
            + c.objects.iter().map(|o| o.1.len() + 64).sum::<usize>()
            + c.transcript.as_ref().map_or(0, Vec::len)
            + 512,
    );
    let mut meta = c.meta.clone();
    meta.records = c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    meta.objects = c.objects.len();
    meta.transcript_bytes = c.transcript.as_ref().map(|t| t.len() as u64);
    // Serializing a struct of strings and numbers cannot fail.
    out.extend_from_slice(&serde_json::to_vec(&meta).unwrap_or_default());
    out.push(b'\n');
    out.extend_from_slice(format!("records {}\n", c.records.len()).as_bytes());
    out.extend_from_slice(&c.records);
    for (id, bytes) in &c.objects {
        out.extend_from_slice(format!("object {id} {}\n", bytes.len()).as_bytes());
        out.extend_from_slice(bytes);
    }
    if let Some(t) = &c.transcript {
        out.extend_from_slice(format!("transcript {}\n", t.len()).as_bytes());
        out.extend_from_slice(t);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(format!("end {crc:08x}\n").as_bytes());
    out
}

/// Writes a bundle file atomically (temp, fsync, rename): a failed export leaves nothing.
/// Returns the file's size.
pub fn write(path: &Path, c: &Contents, protection: &Protection) -> Result<u64, BundleError> {
    let payload = encode(c);
    let compressed = compress(&payload).map_err(io_err("compressing", path))?;
    let bytes = crypt::encrypt(&compressed, protection)
        .map_err(|e| BundleError::Encrypt { path: path.display().to_string(), why: e.to_string() })?;
    fsutil::atomic_write(path, &bytes, Some(0o600)).map_err(io_err("writing", path))?;
    Ok(bytes.len() as u64)
}

fn compress(payload: &[u8]) -> io::Result<Vec<u8>> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3)?;
    enc.include_checksum(true)?;
    enc.write_all(payload)?;
    enc.finish()
}

/// Whether a file is an encrypted bundle.
pub(crate) fn is_encrypted(bytes: &[u8]) -> bool {
    crypt::is_encrypted(bytes)
}

/// Reads and checks a bundle file's structure (decrypts, decompresses, parses, checksums)
/// within the default [`Limits`]. Does not look at the project: see [`verify`].
pub fn read(path: &Path, keys: &mut Keys<'_>) -> Result<Contents, BundleError> {
    read_within(path, keys, &Limits::default())
}

/// [`read`] within `limits`: the decoded payload is read through `Read::take`, so a bundle
/// that inflates past `max_decoded`, past `max_ratio` times its own size (above
/// [`Limits::RATIO_FLOOR`]) or with a section over `max_object` is refused
/// ([`BundleError::TooLarge`]) having held at most the limit in memory, never aborting.
pub(crate) fn read_within(path: &Path, keys: &mut Keys<'_>, limits: &Limits) -> Result<Contents, BundleError> {
    let p = path.display().to_string();
    let (mut file, meta) = fsutil::open_regular(path).map_err(io_err("reading", path))?;
    if meta.len() > limits.max_decoded {
        return Err(too_large(
            &p,
            format!("the file is {} bytes, over max_decoded ({})", meta.len(), limits.max_decoded),
            "--max-decoded",
            "max_decoded",
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&mut file).take(limits.max_decoded).read_to_end(&mut bytes).map_err(io_err("reading", path))?;
    let bound = Bound::new(limits, bytes.len() as u64);
    if bytes.starts_with(AGE_ARMOR) {
        return Err(BundleError::NotABundle {
            path: p,
            why: "an ASCII-armored age file; decrypt it with `age -d` first, or export without --armor".into(),
        });
    }
    if is_encrypted(&bytes) {
        let reader = crypt::decrypt_reader(&bytes, keys).map_err(|e| crypt_err(&p, e))?;
        return parse_stream(&p, reader, &bound);
    }
    if !bytes.starts_with(&ZSTD_MAGIC) {
        return Err(BundleError::NotABundle { path: p, why: "neither zstd nor age data".into() });
    }
    parse_stream(&p, &bytes[..], &bound)
}

pub(crate) use crate::config::Limits;

/// The limits of one bundle, its size known.
struct Bound {
    limits: Limits,
    /// Most decoded bytes: `max_decoded`, or less by the ratio.
    decoded: u64,
    by_ratio: bool,
    file_len: u64,
}

impl Bound {
    fn new(limits: &Limits, file_len: u64) -> Bound {
        let ratio = file_len.saturating_mul(limits.max_ratio).max(Limits::RATIO_FLOOR);
        Bound {
            limits: *limits,
            decoded: ratio.min(limits.max_decoded),
            by_ratio: ratio < limits.max_decoded,
            file_len,
        }
    }

    fn refusal(&self, path: &str) -> BundleError {
        let file_len = self.file_len;
        if self.by_ratio {
            too_large(
                path,
                format!(
                    "it inflates to more than {} bytes, over {} times its {file_len} bytes (max_ratio): a decompression bomb, or a bundle of unusually repetitive data",
                    self.decoded, self.limits.max_ratio
                ),
                "--max-ratio",
                "max_ratio",
            )
        } else {
            too_large(
                path,
                format!("it inflates to more than {} bytes (max_decoded)", self.decoded),
                "--max-decoded",
                "max_decoded",
            )
        }
    }
}

fn too_large(path: &str, why: String, flag: &str, key: &str) -> BundleError {
    BundleError::TooLarge {
        path: path.to_string(),
        why,
        raise: format!(
            "If you trust it, raise the limit: {flag} N, or `{key} = N` under [limits] in .walj/config.toml"
        ),
    }
}

/// A decryption failure, in the bundle's words.
fn crypt_err(path: &str, e: CryptError) -> BundleError {
    let path = path.to_string();
    match e {
        CryptError::WrongPassphrase => BundleError::WrongPassphrase { path },
        CryptError::NoMatchingKey => BundleError::NoMatchingKey { path },
        CryptError::NeedPassphrase => BundleError::NeedPassphrase { path },
        CryptError::NeedIdentity => BundleError::NeedIdentity { path },
        CryptError::Truncated(why) => BundleError::Truncated { path, why },
        CryptError::Tampered(why) => BundleError::Tampered { path, why },
        CryptError::Io(source) => BundleError::Io { op: "reading".into(), path, source },
        CryptError::Identity { path: id, why } => {
            BundleError::Io { op: "reading identity".into(), path: id, source: io::Error::other(why) }
        }
        other @ (CryptError::Unsupported
        | CryptError::ExcessiveWork { .. }
        | CryptError::BadRecipient { .. }
        | CryptError::Encrypt(_)) => BundleError::Refused { path, why: other.to_string() },
    }
}

fn stream_err(path: &str, stage: &str, e: io::Error) -> BundleError {
    let msg = e.to_string().to_ascii_lowercase();
    if msg.contains("decryption error") || msg.contains("last chunk") {
        // age's STREAM: a chunk that does not authenticate, cut or changed alike.
        let why = "the encrypted data does not authenticate: the file was cut short or changed".to_string();
        return BundleError::Tampered { path: path.to_string(), why };
    }
    let why = format!("{stage}: {e}");
    if e.kind() == io::ErrorKind::UnexpectedEof || msg.contains("truncat") || msg.contains("incomplete") {
        BundleError::Truncated { path: path.to_string(), why }
    } else {
        BundleError::Tampered { path: path.to_string(), why }
    }
}

/// Largest header line read before giving up (a bundle header is a few hundred bytes).
const MAX_HEADER: u64 = 64 * 1024;

fn parse_stream(path: &str, input: impl Read, bound: &Bound) -> Result<Contents, BundleError> {
    let dec = zstd::stream::read::Decoder::new(input).map_err(|e| stream_err(path, "zstd", e))?;
    // One byte more than allowed: reading it means the payload is over the bound.
    let mut r = BufReader::new(dec.take(bound.decoded.saturating_add(1)));
    let mut first = Vec::new();
    (&mut r).take(MAX_HEADER).read_until(b'\n', &mut first).map_err(|e| stream_err(path, "zstd", e))?;
    if first.last() != Some(&b'\n') {
        return Err(BundleError::NotABundle { path: path.into(), why: "no header line".into() });
    }
    let head: Value = serde_json::from_slice(&first)
        .map_err(|e| BundleError::NotABundle { path: path.into(), why: format!("header: {e}") })?;
    let version = head.get("walj_bundle").and_then(Value::as_u64).ok_or_else(|| BundleError::NotABundle {
        path: path.into(),
        why: "no walj_bundle version in the header".into(),
    })?;
    if version > u64::from(FORMAT_VERSION) {
        return Err(BundleError::Newer { path: path.into(), found: version });
    }
    let meta: Meta = serde_json::from_value(head)
        .map_err(|e| BundleError::Tampered { path: path.into(), why: format!("header: {e}") })?;
    let mut payload = first;
    let body_start = payload.len();
    r.read_to_end(&mut payload).map_err(|e| stream_err(path, "zstd", e))?;
    if payload.len() as u64 > bound.decoded {
        return Err(bound.refusal(path));
    }
    parse_body(path, meta, &payload, body_start, &bound.limits)
}

fn parse_body(
    path: &str,
    meta: Meta,
    payload: &[u8],
    mut pos: usize,
    limits: &Limits,
) -> Result<Contents, BundleError> {
    let tampered = |why: String| BundleError::Tampered { path: path.into(), why };
    let truncated = |why: &str| BundleError::Truncated { path: path.into(), why: why.into() };
    let mut records = None;
    let mut objects: Vec<(String, Vec<u8>)> = Vec::new();
    let mut transcript = None;
    loop {
        let Some(nl) = payload[pos..].iter().position(|&b| b == b'\n') else {
            return Err(truncated("the end marker is missing"));
        };
        let header = std::str::from_utf8(&payload[pos..pos + nl])
            .map_err(|_| tampered("a section header is not text".into()))?;
        let line_start = pos;
        pos += nl + 1;
        let parts: Vec<&str> = header.split(' ').collect();
        let take = |pos: &mut usize, n: &str| -> Result<Vec<u8>, BundleError> {
            let n: usize = n.parse().map_err(|_| tampered(format!("bad length in {header:?}")))?;
            if n as u64 > limits.max_object {
                let what = header.split(' ').next().unwrap_or("section");
                return Err(too_large(
                    path,
                    format!("a {what} of {n} bytes, over max_object ({})", limits.max_object),
                    "--max-object",
                    "max_object",
                ));
            }
            if payload.len() - *pos < n {
                return Err(truncated("a section is cut short"));
            }
            let v = payload[*pos..*pos + n].to_vec();
            *pos += n;
            Ok(v)
        };
        match parts.as_slice() {
            ["records", n] if records.is_none() => records = Some(take(&mut pos, n)?),
            ["object", id, n] => {
                let bytes = take(&mut pos, n)?;
                objects.push((id.to_string(), bytes));
            }
            ["transcript", n] if transcript.is_none() => transcript = Some(take(&mut pos, n)?),
            ["end", crc] => {
                let want = u32::from_str_radix(crc, 16).map_err(|_| tampered("bad end checksum".into()))?;
                if crc32c::crc32c(&payload[..line_start]) != want {
                    return Err(tampered("payload checksum mismatch".into()));
                }
                if pos != payload.len() {
                    return Err(tampered("bytes after the end marker".into()));
                }
                break;
            }
            _ => return Err(tampered(format!("unknown section {:?}", header.chars().take(40).collect::<String>()))),
        }
    }
    let records = records.unwrap_or_default();
    let nrec = records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    if nrec != meta.records || objects.len() != meta.objects {
        return Err(tampered(format!(
            "header says {} records and {} objects, found {nrec} and {}",
            meta.records,
            meta.objects,
            objects.len()
        )));
    }
    Ok(Contents { meta, records, objects, transcript, warnings: Vec::new() })
}

/// Checks a bundle against the project before anything is written: object ids, record
/// checksums and parses, record sessions, paths inside the project.
pub(crate) fn verify(project: &Project, c: &Contents, path: &str) -> Result<(), BundleError> {
    let refused = |why: String| BundleError::Refused { path: path.into(), why };
    let tampered = |why: String| BundleError::Tampered { path: path.into(), why };
    let session = c.meta.session.as_str();
    if session.is_empty() {
        return Err(tampered("no session id in the header".into()));
    }
    // The short id may be absent; the session id may not.
    for (what, id, may_be_empty) in [("session id", session, false), ("short session id", c.meta.sid.as_str(), true)] {
        if !(is_session_id(id) || may_be_empty && id.is_empty()) {
            return Err(refused(format!(
                "its {what} {:?} is not one walj accepts (1 to 128 of A-Z a-z 0-9 . _ -)",
                id.chars().take(64).collect::<String>()
            )));
        }
    }
    let mut seen = HashSet::new();
    for (id, bytes) in &c.objects {
        if !seen.insert(id.as_str()) {
            return Err(tampered(format!("object {id} appears twice")));
        }
        if !crate::store::is_id(id) || blob_id(bytes) != *id {
            return Err(tampered(format!("object {id} does not match its bytes")));
        }
    }
    // Handoff actions of the session: deliveries of them may ride along.
    let mut actions = BTreeSet::new();
    let mut parsed = Vec::new();
    for (i, line) in c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
        let n = i + 1;
        if check_crc(line) == Some(false) {
            return Err(tampered(format!("record {n}: checksum mismatch")));
        }
        check_line(n as u64, line).map_err(|p| tampered(format!("record {p}")))?;
        let rec = parse_record(line).map_err(|e| tampered(format!("record {n}: {e}")))?;
        if rec.op() == op::HANDOFF
            && rec.session_key() == session
            && let Some(a) = &rec.action
        {
            actions.insert(a.clone());
        }
        parsed.push((n, rec));
    }
    for (n, rec) in &parsed {
        let mark = rec.op() == op::SESSION
            && matches!(rec.kind.as_deref(), Some(kind::ANNOUNCED | kind::DELIVERED))
            && is_mark_for(rec.kind.as_deref(), rec.target.as_deref(), session, &actions);
        if rec.session_key() != session && !mark {
            return Err(refused(format!("record {n} belongs to another session ({})", rec.session_key())));
        }
        if !rec.sid.is_empty() && !is_session_id(&rec.sid) {
            return Err(refused(format!("record {n}: its session id is not one walj accepts")));
        }
        check_path(project, rec).map_err(|why| refused(format!("record {n}: {why}")))?;
    }
    Ok(())
}

/// A session id walj accepts from others (bundles, synced journals): 1 to 128 of
/// `A-Za-z0-9._-`, and not `.` or `..` (it names files).
pub(crate) fn is_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id != "."
        && id != ".."
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Records only this checkout may write, never taken from a bundle: the marks of a brief's
/// delivery and release, of an announcement, of an import, and any record of no session.
fn only_ours(rec: &Record) -> bool {
    rec.session_key().is_empty()
        || (rec.op() == op::SESSION
            && matches!(rec.kind.as_deref(), Some(kind::ANNOUNCED | kind::DELIVERED | kind::RELEASED | kind::IMPORTED)))
}

/// Why a bundle's record path is refused (each names the path).
#[derive(Debug, thiserror::Error)]
enum RecordPathError {
    #[error("{0} is outside the project but carries file images")]
    OutsideWithImages(String),
    #[error("path {0}")]
    Refused(crate::project::PathError),
}

fn check_path(project: &Project, rec: &Record) -> Result<(), RecordPathError> {
    if rec.path.is_empty() {
        return Ok(());
    }
    if rec.outside {
        // Recorded as outside: nothing was captured, and walj never writes there. A record
        // that is outside *and* carries file images is not one walj writes.
        let images = [&rec.before, &rec.after].into_iter().any(|b| matches!(b, Some(Blob::Id(_))));
        return if images { Err(RecordPathError::OutsideWithImages(rec.path.clone())) } else { Ok(()) };
    }
    // A `.git/` path is taken (shown, diffable) but never written for a bundle's entry:
    // revert and undo refuse git's folders for anything not made here.
    project.resolve_recorded(&rec.path).map(|_| ()).map_err(RecordPathError::Refused)
}

/// Refuses, before anything is written, a bundle that would add records to a session this
/// checkout's own hooks recorded (its records here lie outside every import range), or whose
/// records reuse the id of an entry recorded here: its records would change what this
/// checkout's own entries say. A bundle whose records are all here already passes (nothing is
/// added).
fn check_against_journal(project: &Project, c: &Contents, bundle_name: &str) -> Result<(), BundleError> {
    let refused = |why: String| BundleError::Refused { path: bundle_name.into(), why };
    let session = c.meta.session.as_str();
    let lines: HashSet<&[u8]> = c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let prov = crate::triage::origin::Provenance::load(&project.journal);
    let mut own_session_line = None;
    let mut own_ids: HashSet<String> = HashSet::new();
    let mut present: HashSet<Vec<u8>> = HashSet::new();
    scan_lines(&project.journal, |raw| {
        if lines.contains(raw.bytes) {
            present.insert(raw.bytes.to_vec());
        }
        if !prov.of_line(raw.line_no).is_own() {
            return;
        }
        let Ok(view) = classify(raw.line_no, raw.bytes) else { return };
        if view.session_key() == session && own_session_line.is_none() {
            own_session_line = Some(raw.line_no);
        }
        if !view.id.is_empty() {
            own_ids.insert(view.id.to_string());
        }
    })
    .map_err(|e| BundleError::Io {
        op: "reading".into(),
        path: project.journal.display().to_string(),
        source: e,
    })?;
    let new: Vec<&[u8]> = lines.iter().copied().filter(|l| !present.contains(*l)).collect();
    let new_records: Vec<Record> = new.iter().filter_map(|l| parse_record(l).ok()).filter(|r| !only_ours(r)).collect();
    if new_records.is_empty() {
        return Ok(());
    }
    if let Some(line) = own_session_line {
        return Err(refused(format!(
            "session {session} was recorded here by this checkout's own hooks (journal line {line}); a bundle cannot add to it"
        )));
    }
    if let Some(r) = new_records.iter().find(|r| !r.id.is_empty() && own_ids.contains(&r.id)) {
        return Err(refused(format!(
            "a record reuses the id {} of an entry recorded here; a bundle cannot change this checkout's own entries",
            r.id.chars().take(64).collect::<String>()
        )));
    }
    Ok(())
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SaveReport {
    pub session: String,
    pub sid: String,
    pub records_added: usize,
    pub records_present: usize,
    pub objects_added: usize,
    pub objects_present: usize,
    /// `none`, `installed`, `present`, `updated`, `kept_existing`.
    pub transcript: String,
    /// Where the bundle's transcript went when a different copy was already here.
    pub transcript_side: Option<PathBuf>,
    /// Records left out: ones only this checkout may write (deliveries, releases,
    /// announcements, import marks, records of no session).
    pub records_left_out: usize,
}

/// [`save`], naming the bundle file in messages and in the `imported` record.
pub(crate) fn save_from(project: &Project, c: &Contents, bundle_name: &str) -> Result<SaveReport, SessionError> {
    save_or_plan(project, c, bundle_name, true)
}

/// What [`save_from`] would do, checked the same way (a bundle it would refuse is refused
/// here), writing nothing: `walj sessions import --dry-run` and the question before an import.
pub(crate) fn plan(project: &Project, c: &Contents, bundle_name: &str) -> Result<SaveReport, SessionError> {
    save_or_plan(project, c, bundle_name, false)
}

fn save_or_plan(project: &Project, c: &Contents, bundle_name: &str, write: bool) -> Result<SaveReport, SessionError> {
    verify(project, c, bundle_name)?;
    check_against_journal(project, c, bundle_name)?;
    let session = c.meta.session.clone();
    let mut rep = SaveReport {
        session: session.clone(),
        sid: c.meta.sid.clone(),
        transcript: "none".into(),
        ..Default::default()
    };
    if write {
        project.ensure_dir().map_err(SessionError::io("creating", &project.dir))?;
    }
    let store = Store::new(project.store_dir());
    for (id, bytes) in &c.objects {
        if store.contains(id) {
            rep.objects_present += 1;
        } else if !write {
            rep.objects_added += 1;
        } else {
            store.put_with_id(id, bytes).map_err(|e| SessionError::Io {
                op: "storing object".into(),
                path: store.object_path(id),
                source: io::Error::other(e.to_string()),
            })?;
            rep.objects_added += 1;
        }
    }
    if let Some(t) = &c.transcript {
        let tp = transcript::paths(project, &session);
        let existing = transcript::read_copy(project, &session).map_err(SessionError::io("reading", &tp.copy))?;
        let install = |rep: &mut SaveReport, what: &str| -> Result<(), SessionError> {
            if write {
                transcript::install(project, &session, c.meta.transcript_source.as_deref(), t)
                    .map_err(SessionError::io("writing", &tp.copy))?;
            }
            rep.transcript = what.into();
            Ok(())
        };
        match existing {
            None => install(&mut rep, "installed")?,
            Some(e) if e == *t || e.starts_with(t) => rep.transcript = "present".into(),
            Some(e) if t.starts_with(&e) => install(&mut rep, "updated")?,
            Some(_) => {
                // Both hold lines the other lacks: keep ours, put the bundle's beside it.
                let side = tp.copy.with_file_name(format!(
                    "{}.{:08x}.imported.jsonl.zst",
                    super::file_stem(&session),
                    crc32c::crc32c(t)
                ));
                if write {
                    let z = zstd::stream::encode_all(&t[..], 3).map_err(SessionError::io("compressing", &side))?;
                    fsutil::atomic_write(&side, &z, Some(0o600)).map_err(SessionError::io("writing", &side))?;
                }
                rep.transcript = "kept_existing".into();
                rep.transcript_side = Some(side);
            }
        }
    }
    // Records: those whose exact line is not in the journal yet.
    let mut have: HashSet<Vec<u8>> = HashSet::new();
    let lines: Vec<&[u8]> = c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let wanted: HashSet<&[u8]> = lines.iter().copied().collect();
    scan_lines(&project.journal, |raw| {
        if wanted.contains(raw.bytes) {
            have.insert(raw.bytes.to_vec());
        }
    })
    .map_err(SessionError::io("reading", &project.journal))?;
    let mut out = Vec::new();
    let mut added = HashSet::new();
    for l in &lines {
        if parse_record(l).is_ok_and(|r| only_ours(&r)) {
            rep.records_left_out += 1;
        } else if have.contains(*l) || !added.insert(*l) {
            rep.records_present += 1;
        } else {
            out.extend_from_slice(l);
            out.push(b'\n');
            rep.records_added += 1;
        }
    }
    if rep.records_added > 0 && write {
        let mut r = Record::new(op::SESSION, "");
        r.event = crate::journal::event::SESSION.into();
        r.kind = Some(kind::IMPORTED.into());
        r.target = Some(session.clone());
        let r = r
            .with(key::SOURCE_ROOT, c.meta.source_root.clone())
            .with(key::BUNDLE, bundle_name)
            .with(key::EXPORTED, c.meta.created.clone())
            .with(key::RECORDS, rep.records_added);
        out.extend_from_slice(&r.to_line());
        JournalWriter::new(&project.journal)
            .append_bytes(&out)
            .map_err(SessionError::io("appending to", &project.journal))?;
    }
    Ok(rep)
}
