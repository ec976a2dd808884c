//! Encryption, shared by session bundles (`walj sessions export --encrypt / --recipient`) and
//! `walj sync` (`[sync] recipients` / `passphrase`): age, to X25519 recipients (`age1…`) or to
//! a passphrase (scrypt at a fixed work factor).
//!
//! - [`encrypt`] / [`decrypt_reader`] / [`decrypt`]: one piece of data, to a [`Protection`],
//!   opened with [`Keys`] (identity files, a passphrase asked for only when needed).
//! - [`DataKey`]: a random X25519 key. `walj sync` encrypts every segment, image and
//!   transcript of a journal to its journal's data key (fast: no scrypt per object), and
//!   publishes the data key itself encrypted to the user's [`Protection`].
//!
//! Errors carry no file name: callers add theirs (`BundleError`, the sync's verdicts).

use std::io::{self, Read};
use std::path::PathBuf;

/// A secret string (a passphrase, a data key's secret half): kept out of `Debug` output.
#[cfg(feature = "age")]
pub type Secret = age::secrecy::SecretString;

/// A secret string (a build without encryption keeps passphrases only to refuse them).
#[cfg(not(feature = "age"))]
#[derive(Clone)]
pub struct Secret(#[allow(dead_code)] String);

#[cfg(not(feature = "age"))]
impl From<String> for Secret {
    fn from(s: String) -> Secret {
        Secret(s)
    }
}

#[cfg(not(feature = "age"))]
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

const AGE_MAGIC: &[u8] = b"age-encryption.org/";
/// scrypt work factor of passphrase encryption (N = 2^18: about a second).
pub const SCRYPT_LOG_N: u8 = 18;
/// The largest work factor a decryption accepts (16 times the above).
pub(crate) const SCRYPT_MAX_LOG_N: u8 = 22;

/// How data is protected.
pub enum Protection {
    None,
    Passphrase(Secret),
    /// age recipients (`age1…`).
    Recipients(Vec<String>),
}

impl Protection {
    /// "not encrypted", "encrypted with a passphrase", "encrypted to age recipients".
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Protection::None => "not encrypted",
            Protection::Passphrase(_) => "encrypted with a passphrase",
            Protection::Recipients(_) => "encrypted to age recipients",
        }
    }
}

/// Keys a decryption may need; the passphrase is asked for only when the data is encrypted
/// to one.
pub struct Keys<'a> {
    /// Returns the passphrase (`WALJ_PASSPHRASE`, a prompt), or `None` when there is none.
    pub passphrase: &'a mut dyn FnMut() -> Option<Secret>,
    /// age identity files (as `age-keygen` writes them).
    pub identities: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum CryptError {
    /// This walj was built without the `age` feature.
    #[error("this build of walj has no encryption (built without the `age` feature)")]
    Unsupported,
    #[error(
        "{key:?} is not an age recipient ({why}); expected an `age1…` public key (age-keygen -y KEYFILE prints it)"
    )]
    BadRecipient { key: String, why: String },
    #[error("{0}")]
    Encrypt(String),
    #[error("wrong passphrase (or a damaged header)")]
    WrongPassphrase,
    #[error("none of the given identities opens it (it is encrypted to other age recipients)")]
    NoMatchingKey,
    #[error("it is encrypted with a passphrase, and none was given")]
    NeedPassphrase,
    #[error("it is encrypted to age recipients, and no identity file was given")]
    NeedIdentity,
    #[error(
        "its passphrase needs scrypt work 2^{required}, more than the 2^{SCRYPT_MAX_LOG_N} walj accepts; decrypt it with `age -d` first"
    )]
    ExcessiveWork { required: u8 },
    #[error("truncated ({0})")]
    Truncated(String),
    #[error("damaged or changed ({0})")]
    Tampered(String),
    #[error("reading identity {path}: {why}")]
    Identity { path: String, why: String },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Whether `bytes` are age-encrypted (binary format).
pub(crate) fn is_encrypted(bytes: &[u8]) -> bool {
    bytes.starts_with(AGE_MAGIC)
}

/// Whether this build can encrypt.
pub const fn available() -> bool {
    imp::AVAILABLE
}

/// Checks that every key is an age recipient (`age1…`).
pub(crate) fn check_recipients(keys: &[String]) -> Result<(), CryptError> {
    keys.iter().try_for_each(|k| imp::check_recipient(k))
}

/// `data` encrypted to `protection` (`Protection::None`: a copy).
pub(crate) fn encrypt(data: &[u8], protection: &Protection) -> Result<Vec<u8>, CryptError> {
    match protection {
        Protection::None => Ok(data.to_vec()),
        p => imp::encrypt(data, p),
    }
}

/// A reader of the plain text of age-encrypted `bytes`. Errors while reading are
/// [`io::Error`]s; [`stream_error`] tells a cut file from a changed one.
pub(crate) fn decrypt_reader<'r>(bytes: &'r [u8], keys: &mut Keys<'_>) -> Result<Box<dyn Read + 'r>, CryptError> {
    imp::decrypt_reader(bytes, keys)
}

/// The plain text of age-encrypted `bytes`, read whole.
pub(crate) fn decrypt(bytes: &[u8], keys: &mut Keys<'_>) -> Result<Vec<u8>, CryptError> {
    let mut r = decrypt_reader(bytes, keys)?;
    let mut out = Vec::with_capacity(bytes.len());
    r.read_to_end(&mut out).map_err(stream_error)?;
    Ok(out)
}

/// What a read error of a decrypting reader means: age's STREAM fails to authenticate a chunk
/// that was cut or changed alike.
pub(crate) fn stream_error(e: io::Error) -> CryptError {
    let msg = e.to_string().to_ascii_lowercase();
    if msg.contains("decryption error") || msg.contains("last chunk") {
        return CryptError::Tampered("the encrypted data does not authenticate: cut short or changed".to_string());
    }
    if e.kind() == io::ErrorKind::UnexpectedEof {
        return CryptError::Truncated(e.to_string());
    }
    CryptError::Io(e)
}

/// A random X25519 key pair: what `walj sync` encrypts a journal's objects to.
pub struct DataKey {
    inner: imp::Key,
    recipient: String,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey").field("recipient", &self.recipient).finish_non_exhaustive()
    }
}

impl DataKey {
    /// A new random key.
    pub(crate) fn generate() -> Result<DataKey, CryptError> {
        let inner = imp::Key::generate()?;
        let recipient = inner.recipient();
        Ok(DataKey { inner, recipient })
    }

    /// The key written by [`DataKey::secret`] (`AGE-SECRET-KEY-1…`).
    pub(crate) fn parse(secret: &str) -> Result<DataKey, CryptError> {
        let inner = imp::Key::parse(secret.trim())?;
        let recipient = inner.recipient();
        Ok(DataKey { inner, recipient })
    }

    /// Its public half (`age1…`): what the manifest names.
    pub(crate) fn recipient(&self) -> &str {
        &self.recipient
    }

    /// Its secret half, as an age identity file line.
    pub(crate) fn secret(&self) -> String {
        self.inner.secret()
    }

    /// `data` encrypted to this key.
    pub(crate) fn encrypt(&self, data: &[u8]) -> Result<Vec<u8>, CryptError> {
        self.inner.encrypt(data)
    }

    /// The plain text of `bytes`, encrypted to this key.
    pub(crate) fn decrypt(&self, bytes: &[u8]) -> Result<Vec<u8>, CryptError> {
        self.inner.decrypt(bytes)
    }

    /// A keyed digest of `data` (40 hex digits): names and checks what was encrypted without
    /// publishing a hash of its plain text (a plain hash confirms a guessed content).
    pub(crate) fn digest(&self, what: &str, data: &[u8]) -> String {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        h.update(b"walj keyed digest\0");
        h.update(what.as_bytes());
        h.update(b"\0");
        h.update(self.secret().as_bytes());
        h.update(b"\0");
        h.update(data);
        h.finalize().iter().take(20).map(|b| format!("{b:02x}")).collect()
    }
}

/// Without the `age` feature: every operation says this build has no encryption.
#[cfg(not(feature = "age"))]
mod imp {
    use std::io::Read;

    use super::{CryptError, Keys, Protection};

    pub(crate) const AVAILABLE: bool = false;

    pub(crate) fn check_recipient(_: &str) -> Result<(), CryptError> {
        Err(CryptError::Unsupported)
    }

    pub(crate) fn encrypt(_: &[u8], _: &Protection) -> Result<Vec<u8>, CryptError> {
        Err(CryptError::Unsupported)
    }

    pub(crate) fn decrypt_reader<'r>(_: &'r [u8], _: &mut Keys<'_>) -> Result<Box<dyn Read + 'r>, CryptError> {
        Err(CryptError::Unsupported)
    }

    /// No key can exist in this build.
    pub enum Key {}

    impl Key {
        pub(crate) fn generate() -> Result<Key, CryptError> {
            Err(CryptError::Unsupported)
        }
        pub(crate) fn parse(_: &str) -> Result<Key, CryptError> {
            Err(CryptError::Unsupported)
        }
        pub(crate) fn recipient(&self) -> String {
            match *self {}
        }
        pub(crate) fn secret(&self) -> String {
            match *self {}
        }
        pub(crate) fn encrypt(&self, _: &[u8]) -> Result<Vec<u8>, CryptError> {
            match *self {}
        }
        pub(crate) fn decrypt(&self, _: &[u8]) -> Result<Vec<u8>, CryptError> {
            match *self {}
        }
    }
}

#[cfg(feature = "age")]
mod imp {
    use std::io::{Read, Write};

    use age::secrecy::ExposeSecret;

    use super::{CryptError, Keys, Protection, SCRYPT_LOG_N, SCRYPT_MAX_LOG_N};

    pub(crate) const AVAILABLE: bool = true;

    fn parse_recipient(k: &str) -> Result<age::x25519::Recipient, CryptError> {
        k.trim()
            .parse::<age::x25519::Recipient>()
            .map_err(|e| CryptError::BadRecipient { key: k.to_string(), why: e.to_string() })
    }

    pub(crate) fn check_recipient(k: &str) -> Result<(), CryptError> {
        parse_recipient(k).map(|_| ())
    }

    fn write_all(enc: age::Encryptor, data: &[u8]) -> Result<Vec<u8>, CryptError> {
        let mut out = Vec::with_capacity(data.len() + 1024);
        let mut w = enc.wrap_output(&mut out)?;
        w.write_all(data)?;
        w.finish()?;
        Ok(out)
    }

    pub(crate) fn encrypt(data: &[u8], protection: &Protection) -> Result<Vec<u8>, CryptError> {
        let enc = match protection {
            Protection::None => return Ok(data.to_vec()),
            Protection::Passphrase(p) => {
                // A fixed work factor: age's default is measured on the spot, so a busy machine
                // would pick a weak one, and an idle one a factor a busy reader refuses.
                let mut r = age::scrypt::Recipient::new(p.clone());
                r.set_work_factor(SCRYPT_LOG_N);
                age::Encryptor::with_recipients(std::iter::once(&r as &dyn age::Recipient))
                    .map_err(|e| CryptError::Encrypt(e.to_string()))?
            }
            Protection::Recipients(keys) => {
                let parsed = keys.iter().map(|k| parse_recipient(k)).collect::<Result<Vec<_>, _>>()?;
                age::Encryptor::with_recipients(parsed.iter().map(|r| r as &dyn age::Recipient))
                    .map_err(|e| CryptError::Encrypt(e.to_string()))?
            }
        };
        write_all(enc, data)
    }

    fn decrypt_err(e: age::DecryptError) -> CryptError {
        match e {
            age::DecryptError::DecryptionFailed | age::DecryptError::KeyDecryptionFailed => CryptError::WrongPassphrase,
            age::DecryptError::NoMatchingKeys => CryptError::NoMatchingKey,
            age::DecryptError::ExcessiveWork { required, .. } => CryptError::ExcessiveWork { required },
            age::DecryptError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                CryptError::Truncated(e.to_string())
            }
            other => CryptError::Tampered(format!("age: {other}")),
        }
    }

    pub(crate) fn decrypt_reader<'r>(bytes: &'r [u8], keys: &mut Keys<'_>) -> Result<Box<dyn Read + 'r>, CryptError> {
        let dec = age::Decryptor::new_buffered(bytes).map_err(decrypt_err)?;
        if dec.is_scrypt() {
            let Some(pass) = (keys.passphrase)() else { return Err(CryptError::NeedPassphrase) };
            let mut id = age::scrypt::Identity::new(pass);
            id.set_max_work_factor(SCRYPT_MAX_LOG_N);
            let r = dec.decrypt(std::iter::once(&id as &dyn age::Identity)).map_err(decrypt_err)?;
            return Ok(Box::new(r));
        }
        if keys.identities.is_empty() {
            return Err(CryptError::NeedIdentity);
        }
        let mut ids: Vec<Box<dyn age::Identity + Send + Sync>> = Vec::new();
        for f in &keys.identities {
            let path = f.display().to_string();
            let file = age::IdentityFile::from_file(path.clone())
                .map_err(|e| CryptError::Identity { path: path.clone(), why: e.to_string() })?;
            let mut got = file.into_identities().map_err(|e| CryptError::Identity { path, why: e.to_string() })?;
            ids.append(&mut got);
        }
        let r = dec.decrypt(ids.iter().map(|b| b.as_ref() as &dyn age::Identity)).map_err(decrypt_err)?;
        Ok(Box::new(r))
    }

    pub struct Key(age::x25519::Identity);

    impl Key {
        pub(crate) fn generate() -> Result<Key, CryptError> {
            Ok(Key(age::x25519::Identity::generate()))
        }
        pub(crate) fn parse(s: &str) -> Result<Key, CryptError> {
            s.parse::<age::x25519::Identity>()
                .map(Key)
                .map_err(|e| CryptError::Tampered(format!("not an age secret key: {e}")))
        }
        pub(crate) fn recipient(&self) -> String {
            self.0.to_public().to_string()
        }
        pub(crate) fn secret(&self) -> String {
            self.0.to_string().expose_secret().to_string()
        }
        pub(crate) fn encrypt(&self, data: &[u8]) -> Result<Vec<u8>, CryptError> {
            let r = self.0.to_public();
            let enc = age::Encryptor::with_recipients(std::iter::once(&r as &dyn age::Recipient))
                .map_err(|e| CryptError::Encrypt(e.to_string()))?;
            write_all(enc, data)
        }
        pub(crate) fn decrypt(&self, bytes: &[u8]) -> Result<Vec<u8>, CryptError> {
            let dec = age::Decryptor::new_buffered(bytes).map_err(decrypt_err)?;
            let mut r = dec.decrypt(std::iter::once(&self.0 as &dyn age::Identity)).map_err(decrypt_err)?;
            let mut out = Vec::with_capacity(bytes.len());
            r.read_to_end(&mut out).map_err(super::stream_error)?;
            Ok(out)
        }
    }
}

#[cfg(all(test, feature = "age"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn data_keys_round_trip_and_digests_are_keyed() {
        let k = DataKey::generate().unwrap();
        assert!(k.recipient().starts_with("age1"), "{}", k.recipient());
        let c = k.encrypt(b"hello").unwrap();
        assert!(is_encrypted(&c));
        assert_eq!(k.decrypt(&c).unwrap(), b"hello");
        let again = DataKey::parse(&k.secret()).unwrap();
        assert_eq!(again.recipient(), k.recipient());
        assert_eq!(again.decrypt(&c).unwrap(), b"hello");
        let other = DataKey::generate().unwrap();
        assert!(other.decrypt(&c).is_err());
        assert_eq!(k.digest("x", b"a"), again.digest("x", b"a"));
        assert_ne!(k.digest("x", b"a"), other.digest("x", b"a"));
        assert_ne!(k.digest("x", b"a"), k.digest("y", b"a"));
        assert_eq!(k.digest("x", b"a").len(), 40);
    }

    #[test]
    fn recipients_and_passphrases_round_trip() {
        let k = DataKey::generate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let idf = dir.path().join("id.txt");
        std::fs::write(&idf, format!("{}\n", k.secret())).unwrap();
        let c = encrypt(b"data", &Protection::Recipients(vec![k.recipient().to_string()])).unwrap();
        let mut none = || None;
        let mut keys = Keys { passphrase: &mut none, identities: vec![idf] };
        assert_eq!(decrypt(&c, &mut keys).unwrap(), b"data");
        let mut keys = Keys { passphrase: &mut none, identities: vec![] };
        assert!(matches!(decrypt(&c, &mut keys), Err(CryptError::NeedIdentity)));
        let bad = encrypt(b"x", &Protection::Recipients(vec!["age1nope".into()]));
        assert!(matches!(bad, Err(CryptError::BadRecipient { .. })));
    }
}
