//! Encrypted syncs (`[sync] recipients` / `passphrase`; docs/sync.md, "Encryption").
//!
//! Each journal has a random *data key* (an age X25519 key, `.walj/sync/key`, made at the
//! first encrypted sync). Every segment, image and transcript segment it publishes is encrypted
//! to that key: one cheap X25519 step per object, whatever protects the key. The data key's
//! secret half is published once per commit tree as `key.age`, encrypted with the same code as
//! session bundles ([`crate::crypt`]) to the user's recipients or passphrase; so a passphrase
//! is needed only when `key.age` is written (the first encrypted sync, or when the recipients
//! change) and, on other machines, once per journal key (the opened key is kept in
//! `.walj/sync/keys/<id>`).
//!
//! Tree entries of encrypted images are named by a keyed digest of the image id, and the
//! manifest's digests of the journal are keyed too: nothing published lets someone confirm a
//! guessed file content.

use std::path::PathBuf;

use git2::{Repository, Tree};

use super::manifest::{Encryption, Manifest};
use super::{Paths, SyncError};
use crate::config::SyncConfig;
use crate::crypt::{self, DataKey, Keys, Protection, Secret};

/// The tree entry holding the data key's secret half, encrypted.
pub(crate) const KEY_ENTRY: &str = "key.age";
/// `encryption.scheme`.
pub(crate) const SCHEME: &str = "age";
pub(crate) const BY_RECIPIENTS: &str = "recipients";
pub(crate) const BY_PASSPHRASE: &str = "passphrase";

/// What `[sync]` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wanted {
    Plain,
    Recipients(Vec<String>),
    Passphrase,
}

impl Wanted {
    pub(crate) fn from_config(c: &SyncConfig) -> Result<Wanted, SyncError> {
        let recipients: Vec<String> =
            c.recipients.iter().map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect();
        let wanted = match (recipients.is_empty(), c.passphrase) {
            (true, false) => return Ok(Wanted::Plain),
            (false, true) => {
                return Err(SyncError::Refused(
                    "[sync] sets both recipients and passphrase in .walj/config.toml: choose one; nothing was done"
                        .into(),
                ));
            }
            (false, false) => Wanted::Recipients(recipients),
            (true, true) => Wanted::Passphrase,
        };
        if !crypt::available() {
            return Err(SyncError::Refused(format!(
                "[sync] asks for encryption, and {}; nothing was done",
                crypt::CryptError::Unsupported
            )));
        }
        if let Wanted::Recipients(r) = &wanted {
            crypt::check_recipients(r).map_err(|e| SyncError::Refused(format!("[sync] recipients: {e}")))?;
        }
        Ok(wanted)
    }

    pub(crate) fn sealed(&self) -> bool {
        *self != Wanted::Plain
    }
}

/// How this checkout seals what it publishes.
#[derive(Debug)]
pub struct Seal {
    pub key: DataKey,
    /// What the manifest says about it.
    pub encryption: Encryption,
}

impl Seal {
    /// A keyed digest (see [`DataKey::digest`]).
    pub(crate) fn digest(&self, what: &str, data: &[u8]) -> String {
        self.key.digest(what, data)
    }

    /// The tree name of image `id` (40 hex digits, fanned out like an object id).
    pub(crate) fn image_name(&self, id: &str) -> String {
        self.key.digest("image", id.as_bytes())
    }

    pub(crate) fn encrypt(&self, data: &[u8]) -> Result<Vec<u8>, SyncError> {
        self.key.encrypt(data).map_err(|e| SyncError::Refused(format!("encrypting for the sync: {e}")))
    }
}

/// This journal's data key, made (and kept in `.walj/sync/key`, 0600) on first use.
pub(crate) fn own_key(paths: &Paths) -> Result<DataKey, SyncError> {
    match std::fs::read_to_string(&paths.key) {
        Ok(text) => DataKey::parse(&text).map_err(|e| {
            SyncError::Refused(format!(
                "{} is damaged ({e}); remove it to start a new key (the next sync publishes a new epoch)",
                paths.key.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let k = DataKey::generate().map_err(|e| SyncError::Refused(e.to_string()))?;
            crate::fsutil::create_private_dir(&paths.dir)
                .map_err(SyncError::io(format!("creating {}", paths.dir.display())))?;
            crate::fsutil::atomic_write(&paths.key, format!("{}\n", k.secret()).as_bytes(), Some(0o600))
                .map_err(SyncError::io(format!("writing {}", paths.key.display())))?;
            Ok(k)
        }
        Err(e) => Err(SyncError::Io { what: format!("reading {}", paths.key.display()), source: e }),
    }
}

/// The seal for `wanted` (`None`: plain text).
pub(crate) fn seal(paths: &Paths, wanted: &Wanted) -> Result<Option<Seal>, SyncError> {
    let (protection, recipients) = match wanted {
        Wanted::Plain => return Ok(None),
        Wanted::Recipients(r) => (BY_RECIPIENTS, r.clone()),
        Wanted::Passphrase => (BY_PASSPHRASE, Vec::new()),
    };
    let key = own_key(paths)?;
    let encryption = Encryption {
        scheme: SCHEME.to_string(),
        key: key.recipient().to_string(),
        protection: protection.to_string(),
        recipients,
    };
    Ok(Some(Seal { key, encryption }))
}

/// `key.age`: the data key's secret half encrypted to the user's recipients or passphrase
/// (the bundle encryption). `passphrase` is asked only in passphrase mode.
pub(crate) fn wrap(
    seal: &Seal,
    wanted: &Wanted,
    passphrase: &mut dyn FnMut() -> Option<Secret>,
) -> Result<Vec<u8>, SyncError> {
    let protection = match wanted {
        Wanted::Plain => return Err(SyncError::Refused("internal: wrapping a key for a plain sync".into())),
        Wanted::Recipients(r) => Protection::Recipients(r.clone()),
        Wanted::Passphrase => match passphrase() {
            Some(p) => Protection::Passphrase(p),
            None => {
                return Err(SyncError::NotConfirmed(
                    "not synced: [sync] passphrase is set and no passphrase was given (set WALJ_PASSPHRASE, or run `walj sync` in a terminal once); nothing was changed"
                        .into(),
                ));
            }
        },
    };
    crypt::encrypt(format!("{}\n", seal.key.secret()).as_bytes(), &protection)
        .map_err(|e| SyncError::Refused(format!("encrypting the sync key: {e}")))
}

/// Opens other journals' data keys: from `.walj/sync/keys/<id>` when the manifest names the
/// key kept there, else from the commit's `key.age` with the identity files or the passphrase
/// (asked at most once per sync), then kept.
pub(crate) struct Opener<'a> {
    pub paths: &'a Paths,
    pub identities: Vec<PathBuf>,
    pub passphrase: &'a mut dyn FnMut() -> Option<Secret>,
}

impl Opener<'_> {
    fn kept(&self, id: &str) -> PathBuf {
        self.paths.keys.join(id)
    }

    /// The data key of journal `id`'s commit (`tree`, `m`); `Ok(None)` when it is not sealed.
    /// `Err`: why it cannot be opened here (one line).
    pub(crate) fn open(
        &mut self,
        repo: &Repository,
        tree: &Tree<'_>,
        id: &str,
        m: &Manifest,
    ) -> Result<Option<DataKey>, String> {
        let Some(enc) = &m.encryption else { return Ok(None) };
        if enc.scheme != SCHEME {
            return Err(format!("encrypted with {:?}, which this walj does not know", enc.scheme));
        }
        if !crypt::available() {
            return Err(format!("encrypted, and {}", crypt::CryptError::Unsupported));
        }
        if let Ok(text) = std::fs::read_to_string(self.kept(id))
            && let Ok(k) = DataKey::parse(&text)
            && k.recipient() == enc.key
        {
            return Ok(Some(k));
        }
        let entry = tree.get_name(KEY_ENTRY).ok_or("encrypted, but its commit has no key.age")?;
        let blob = repo.find_blob(entry.id()).map_err(|_| "its key.age is missing or not a file".to_string())?;
        let how = if enc.protection == BY_PASSPHRASE {
            "set WALJ_PASSPHRASE (or run `walj sync` in a terminal) with the sync passphrase"
        } else {
            "name an age identity file of one of its recipients in [sync] identity"
        };
        let mut keys = Keys { passphrase: &mut *self.passphrase, identities: self.identities.clone() };
        let plain = crypt::decrypt(blob.content(), &mut keys).map_err(|e| format!("encrypted: {e}; {how}"))?;
        let text = String::from_utf8(plain).map_err(|_| "its key.age does not hold a key".to_string())?;
        let k = DataKey::parse(&text).map_err(|e| format!("its key.age does not hold a key ({e})"))?;
        if k.recipient() != enc.key {
            return Err("its key.age holds another key than its manifest names".to_string());
        }
        let _ = crate::fsutil::create_private_dir(&self.paths.keys);
        let _ = crate::fsutil::atomic_write(&self.kept(id), format!("{}\n", k.secret()).as_bytes(), Some(0o600));
        Ok(Some(k))
    }
}
