//! Symbolic links in snapshots: a link is recorded by its own target text, never by what it
//! points at (a link to `/etc/passwd` or to a FIFO is only the bytes of its target).
//!
//! A link's image is its target text: the snapshot keeps it (`FileState::link`) with a tagged
//! id ([`crate::journal::entry_kind::link_id`]), and the child entry of a change carries
//! `kind: "symlink"` with the target text on each side (`link_before` / `link_after`,
//! `fsutil::name`-encoded so a target that is not UTF-8 reads back as the same bytes). Nothing
//! goes into the store (the text is the image; a walj that does not know links finds no
//! object to write back as a file). A tracked link's target before a command comes from
//! git's object (an index entry of mode 120000). A change between a regular file and a link
//! is one entry too: the side with a blob and no link text was the file.

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
