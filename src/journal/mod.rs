//! The write-ahead journal: line format, tolerant reader, durable appender.

pub mod reader;
pub mod record;
pub mod writer;

pub use reader::{Problem, RawLine, ScanReport, scan_lines, scan_records};
pub use record::{Blob, Record, how, kind, op};
pub use writer::JournalWriter;
