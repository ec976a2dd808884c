//! The write-ahead journal: the line format and its vocabulary, the one line classifier,
//! the tolerant reader and the durable appender. The only code that rewrites it is
//! [`crate::compact`], on the top floor (it needs the fold and the sessions to decide).

pub mod build;
pub mod reader;
pub mod record;
pub mod side;
pub mod view;
pub mod writer;

pub(crate) use reader::scan_lines_rev;
pub use reader::{Problem, Source};
pub(crate) use reader::{RawLine, ScanReport};
pub use reader::{scan_file, scan_lines, scan_records};
pub use record::{Blob, Record};
pub use record::{attribution, entry_kind, event, how, key, kind, nocap, op, tool};
pub use view::classify;
pub use writer::JournalWriter;

/// A journal file's identity (device, inode): what tells the same file grown from one replaced
/// by a rename (a rewrite, another machine's new copy). The fold snapshot, the id index, the
/// store's index of carried images and sync's copy signatures all key on it (`(0, 0)` off
/// Unix).
pub(crate) fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}
