//! Symbolic links in snapshots: a link is recorded by its own target text, never by what it
//! points at (a link to `/etc/passwd` or to a FIFO is only the bytes of its target).
//!
//! As git stores a link (mode 120000), a link's content is its target's bytes: the snapshot
//! keeps their blob id (`FileState::link`), the store keeps the bytes (they are a few dozen,
//! and revert re-points the link from them), and the child entry of a change carries
//! `kind: "symlink"` with the target text on each side (`link_before` / `link_after`,
//! `fsutil::name`-encoded so a target that is not UTF-8 reads back as the same bytes). A
//! change between a regular file and a link is one entry too: the side with a blob and no
//! link text was the file.

use std::io;
use std::path::Path;

/// The target of the link at `abs`, as bytes (the link is read, never followed).
pub(super) fn read_target(abs: &Path) -> io::Result<Vec<u8>> {
    let t = std::fs::read_link(abs)?;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Ok(t.into_os_string().into_vec())
    }
    #[cfg(not(unix))]
    {
        Ok(t.to_string_lossy().into_owned().into_bytes())
    }
}

/// A target's bytes as record text (lossless, [`crate::fsutil::name::encode`]).
pub(super) fn text(bytes: &[u8]) -> String {
    crate::fsutil::name::encode(bytes).into_owned()
}

/// An index entry's mode is a symbolic link's (120000).
pub(super) fn is_link_mode(mode: u32) -> bool {
    mode & 0o170000 == 0o120000
}
