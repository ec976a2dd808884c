//! Sampled identities of files over the capture cap (issue 13, item 3).
//!
//! Hashing a file in full costs its whole size (a 4 GB file took 13–15 s, past Claude
//! Code's 10 s hook timeout). A file over the cap is never stored anyway, so the hook and
//! every disk check record and compare a cheap identity instead of its git blob id:
//! `sampled:<size>:<mtime ns>:<inode>:<sha1>`, where the SHA-1 covers the size and 16 evenly
//! spaced 4 KiB samples (the first and the last included). It costs one `fstat` and at most
//! 64 KiB of reads whatever the size. Such an id is never a git blob id ([`is_sampled`],
//! `store::is_id` is false): it names no object, and it matches only the same file left
//! untouched (a rewrite with the same bytes, or a `touch`, reads as a change). The full
//! git blob id, if ever needed, is computed by a command (`git hash-object FILE`).

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

use crate::fsutil;

/// What every sampled identity starts with.
pub(crate) const PREFIX: &str = "sampled:";

/// Samples read, and their size.
const SAMPLES: u64 = 16;
const SAMPLE: u64 = 4096;

/// True when `id` is a sampled identity, not a git blob id.
pub(crate) fn is_sampled(id: &str) -> bool {
    id.starts_with(PREFIX)
}

/// The sampled identity of the open regular file `f` (`meta` from its descriptor).
pub(crate) fn identity(f: &File, meta: &Metadata) -> io::Result<String> {
    let size = meta.len();
    let mut h = crate::sha::Sha1::new();
    h.update(format!("sampled {size}\0").as_bytes());
    let mut buf = vec![0u8; SAMPLE as usize];
    let span = size.saturating_sub(SAMPLE);
    let mut last = None;
    for i in 0..SAMPLES {
        let off = span * i / (SAMPLES - 1);
        if last == Some(off) {
            continue;
        }
        last = Some(off);
        let n = read_at(f, &mut buf, off)?;
        h.update(&off.to_le_bytes());
        h.update(&buf[..n]);
    }
    Ok(format!("{PREFIX}{size}:{}:{}:{}", mtime_ns(meta), inode(meta), h.hex()))
}

/// The sampled identity of the regular file at `path` ([`fsutil::open_regular`]: a FIFO or
/// a device is refused, never read).
pub(crate) fn identity_of(path: &Path) -> io::Result<String> {
    let (f, meta) = fsutil::open_regular(path)?;
    identity(&f, &meta)
}

/// The size a sampled identity records.
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn size(id: &str) -> Option<u64> {
    id.strip_prefix(PREFIX)?.split(':').next()?.parse().ok()
}

/// Fills `buf` from offset `off` (fewer bytes at the end of the file).
fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        #[cfg(unix)]
        let r = std::os::unix::fs::FileExt::read_at(f, &mut buf[done..], off + done as u64);
        #[cfg(windows)]
        let r = std::os::windows::fs::FileExt::seek_read(f, &mut buf[done..], off + done as u64);
        match r {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn mtime_ns(meta: &Metadata) -> u128 {
    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
}

#[cfg(unix)]
fn inode(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn identities_change_with_content_and_stay_cheap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        let f = File::create(&p).unwrap();
        // Sparse: 4 GB on paper, nothing on disk; the identity reads 64 KiB of it.
        f.set_len(4 << 30).unwrap();
        drop(f);
        let t = std::time::Instant::now();
        let a = identity_of(&p).unwrap();
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "{:?}", t.elapsed());
        assert!(is_sampled(&a));
        assert_eq!(size(&a), Some(4 << 30));
        assert_eq!(identity_of(&p).unwrap(), a, "stable while untouched");
        // A byte changed inside a sample (the last one) changes it.
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, b"x", (4 << 30) - 1).unwrap();
        drop(f);
        assert_ne!(identity_of(&p).unwrap(), a);
        // Small files are read whole.
        std::fs::write(&p, b"short").unwrap();
        assert_eq!(size(&identity_of(&p).unwrap()), Some(5));
    }
}
