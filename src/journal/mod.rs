//! The write-ahead journal: the line format and its vocabulary, the one line classifier,
//! the tolerant reader, the durable appender, and the only code that rewrites it.

pub mod build;
pub mod reader;
pub mod record;
pub mod rewrite;
pub mod side;
pub mod view;
pub mod writer;

pub use reader::{Problem, RawLine, RevScan, ScanReport, Source, scan_file, scan_lines, scan_lines_rev, scan_records};
pub use record::{Blob, Record, attribution, event, how, key, kind, nocap, op, tool};
pub use view::{RecordView, classify};
pub use writer::JournalWriter;
