//! A bounded fuzz test of the journal reader (issue 13): proptest cases that run in CI, a
//! few seconds each. `WALJ_FUZZ_CASES` sets the number of cases per property (default 300).
//!
//! - One damaged byte anywhere in a walj line is never read as a record (CRC32C finds every
//!   burst of up to 32 bits, and a damaged checksum tail is a checksum failure).
//! - A journal of whole lines, damaged lines, random bytes and zeroed blocks never makes the
//!   reader or the fold panic; every whole line is read, once, in order; every damaged one is
//!   reported.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use proptest::prelude::*;
use walj::fold::{Fold, FoldOptions};
use walj::journal::{Blob, Problem, Record, classify, op, scan_lines};

fn cases() -> u32 {
    std::env::var("WALJ_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

/// A walj line (without its `\n`) from a few fuzzed fields.
fn walj_line(n: u32, op_name: &str, path: &str, text: &str) -> Vec<u8> {
    let mut r = Record::new(op_name, &format!("session-{}", n % 3));
    r.id = format!("toolu_{n}");
    r.path = path.to_string();
    r.tool = Some("Edit".into());
    r.before = Some(if n.is_multiple_of(2) { Blob::Absent } else { Blob::Id(format!("{n:040x}")) });
    r.persisted = op_name == op::PERSISTED;
    let mut line = r.with("note", text).to_line();
    line.pop();
    line
}

fn op_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![op::INTENT, op::APPLIED, op::PERSISTED, op::FAILED, op::SESSION, op::RESOLVED])
}

/// One piece of a fuzzed journal.
#[derive(Debug, Clone)]
enum Piece {
    /// A whole walj line.
    Good(u32, &'static str, String, String),
    /// A walj line with one byte replaced (never by `\n`, which would make two lines).
    Damaged(u32, &'static str, usize, u8),
    /// Random bytes, then a newline.
    Junk(Vec<u8>),
    /// A zeroed block.
    Zeros(usize),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => (any::<u32>(), op_name(), "[a-z/._é]{0,24}", "\\PC{0,40}").prop_map(|(n, o, p, t)| Piece::Good(n, o, p, t)),
        2 => (any::<u32>(), op_name(), any::<usize>(), any::<u8>()).prop_map(|(n, o, at, b)| Piece::Damaged(n, o, at, b)),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Piece::Junk),
        1 => (1usize..5000).prop_map(Piece::Zeros),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// One damaged byte in a walj line: never a record.
    #[test]
    fn one_damaged_byte_is_never_read_as_a_record(
        n in any::<u32>(),
        o in op_name(),
        path in "[a-z/._]{0,24}",
        text in "\\PC{0,60}",
        at in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let line = walj_line(n, o, &path, &text);
        prop_assert!(classify(1, &line).is_ok());
        let at = at % line.len();
        prop_assume!(line[at] != byte);
        let mut bad = line.clone();
        bad[at] = byte;
        prop_assert!(classify(1, &bad).is_err(), "read as a record: {}", String::from_utf8_lossy(&bad));
    }

    /// A fuzzed journal: no panic, whole lines read once and in order, damage reported.
    #[test]
    fn a_damaged_journal_is_read_as_far_as_it_is_whole(pieces in prop::collection::vec(piece(), 0..40)) {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.jsonl");
        let mut bytes = Vec::new();
        let mut good = Vec::new();
        let mut damaged = 0usize;
        for p in &pieces {
            match p {
                Piece::Good(n, o, path, text) => {
                    let line = walj_line(*n, o, path, text);
                    bytes.extend_from_slice(&line);
                    good.push(line);
                }
                Piece::Damaged(n, o, at, b) => {
                    let mut line = walj_line(*n, o, "a.txt", "x");
                    let at = at % line.len();
                    if line[at] == *b || *b == b'\n' {
                        continue;
                    }
                    line[at] = *b;
                    bytes.extend_from_slice(&line);
                    damaged += 1;
                }
                Piece::Junk(j) => bytes.extend(j.iter().map(|&b| if b == b'\n' { b' ' } else { b })),
                Piece::Zeros(z) => bytes.extend(std::iter::repeat_n(0u8, *z)),
            }
            bytes.push(b'\n');
        }
        std::fs::write(&journal, &bytes).unwrap();
        let mut read = Vec::new();
        let rep = scan_lines(&journal, |raw| {
            if classify(raw.line_no, raw.bytes).is_ok() {
                read.push(raw.bytes.to_vec());
            }
        })
        .unwrap();
        // Junk may happen to be a readable line (`{}`): every whole line is read, in order.
        let mut it = read.iter();
        for g in &good {
            prop_assert!(it.any(|r| r == g), "a whole line was not read: {}", String::from_utf8_lossy(g));
        }
        prop_assert!(read.len() <= good.len() + pieces.iter().filter(|p| matches!(p, Piece::Junk(_))).count());
        let zeroed = rep.problems.iter().filter(|p| matches!(p, Problem::Zeroed { .. })).count();
        if pieces.iter().any(|p| matches!(p, Piece::Zeros(_))) {
            prop_assert!(zeroed > 0, "a zeroed block was not reported");
        }
        // Every damaged line is reported (by the classifier), never read.
        let mut unreadable = 0usize;
        scan_lines(&journal, |raw| unreadable += usize::from(classify(raw.line_no, raw.bytes).is_err())).unwrap();
        prop_assert!(unreadable >= damaged);
        // The fold never panics and reads the same records.
        let fold = Fold::load(&journal, &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() }).unwrap();
        prop_assert_eq!(fold.records as usize, read.len());
    }
}
