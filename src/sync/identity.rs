//! Who publishes: the journal id (random, made at the first sync), its name for people
//! (`host:path`, or `[sync] name`), and the machine id (two journals of one machine share it).
//!
//! The id and the consent to publish in plain text live in walj's state folder, which git
//! never carries (`<git dir>/walj/sync/`, [`crate::project::trust::state_dir`]): a repository
//! that commits `.walj/sync/id` and `.walj/sync/consent` must not make a clone publish. Ids
//! kept in `.walj/sync/` by older walj are moved there once, the same id ([`migrate`]: a new
//! one would publish a second journal, and the lease would refuse the old ref).

use std::io::Read;

use super::{Paths, SyncError};
use crate::project::Project;

/// One journal as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// 32 lowercase hex digits.
    pub id: String,
    /// `host:path`, or `[sync] name`.
    pub name: String,
    /// First 16 hex digits of the SHA-1 of `/etc/machine-id` (else of the host name).
    pub machine: String,
    pub host: String,
}

/// Whether `s` has the form of a journal id.
pub(crate) fn is_journal_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Moves the id and the consent from `.walj/sync/` (where older walj kept them) to the state
/// folder, once: only regular files (never a link), only when the new place has none, and the
/// old file is removed once the new one is durable. Walj's own `.walj/` only: the caller
/// reached here through a trusted folder (a refused one is never read).
pub(crate) fn migrate(paths: &Paths) {
    for (old, new) in [(&paths.legacy_id, &paths.id), (&paths.legacy_consent, &paths.consent)] {
        if old == new || std::fs::symlink_metadata(new).is_ok() {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(old) else { continue };
        if !meta.file_type().is_file() {
            continue;
        }
        let Ok(bytes) = crate::fsutil::read_regular(old) else { continue };
        let moved = new
            .parent()
            .map_or(Ok(()), crate::fsutil::create_private_dir)
            .and_then(|()| crate::fsutil::atomic_write(new, &bytes, Some(0o600)));
        if moved.is_ok() {
            let _ = std::fs::remove_file(old);
        }
    }
}

/// The journal id, when this checkout has synced before.
pub(crate) fn read_id(paths: &Paths) -> Option<String> {
    migrate(paths);
    let text = std::fs::read_to_string(&paths.id).ok()?;
    let id = text.trim();
    is_journal_id(id).then(|| id.to_string())
}

/// The identity, making the id on first use.
pub(crate) fn ensure(project: &Project, paths: &Paths, name: Option<&str>) -> Result<Identity, SyncError> {
    let id = match read_id(paths) {
        Some(id) => id,
        None => {
            let dir = paths.id.parent().unwrap_or(&paths.dir);
            crate::fsutil::create_private_dir(dir).map_err(SyncError::io(format!("creating {}", dir.display())))?;
            let id = random_id();
            crate::fsutil::atomic_write(&paths.id, format!("{id}\n").as_bytes(), Some(0o600))
                .map_err(SyncError::io(format!("writing {}", paths.id.display())))?;
            id
        }
    };
    let host = hostname();
    let name = match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => format!("{host}:{}", project.root.display()),
    };
    Ok(Identity { id, name, machine: machine_id(&host), host })
}

/// 16 random bytes as hex (the kernel's random source; a hash of time, pid and address
/// where there is none).
fn random_id() -> String {
    let mut buf = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).is_ok();
    if !ok {
        let mut h = crate::sha::Sha1::new();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        h.update(format!("{now:?}{}{:p}", std::process::id(), &buf).as_bytes());
        buf.copy_from_slice(&h.bytes()[..16]);
    }
    crate::sha::hex(&buf)
}

/// The host name (`/proc/sys/kernel/hostname`, `/etc/hostname`, `$HOSTNAME`, `$COMPUTERNAME`).
pub(crate) fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .chain(["HOSTNAME", "COMPUTERNAME"].iter().filter_map(|v| std::env::var(v).ok()))
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown-host".to_string())
}

fn machine_id(host: &str) -> String {
    let source = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| host.to_string());
    let mut h = crate::sha::Sha1::new();
    h.update(b"walj machine ");
    h.update(source.as_bytes());
    h.hex()[..16].to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_and_well_formed() {
        let (a, b) = (random_id(), random_id());
        assert!(is_journal_id(&a) && is_journal_id(&b), "{a} {b}");
        assert_ne!(a, b);
        assert!(!is_journal_id("../../etc"));
        assert!(!is_journal_id(&a.to_uppercase()));
    }
}
