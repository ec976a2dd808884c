use std::io::Write;
use walj::journal::{Blob, Record, op};
fn main() {
    let p = std::path::PathBuf::from("/tmp/probe-journal.jsonl");
    if !p.exists() {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        let blob = |i: usize| Blob::Id(format!("{:040x}", i));
        let calls = 333_340;
        for i in 0..calls {
            let session = format!("{:08x}-bench-session-{}", i / 5000, i / 5000);
            let mut r = Record::new(op::INTENT, &session);
            r.id = format!("toolu_{i:012}");
            r.tool = Some("Edit".into());
            r.event = "file_modified".into();
            r.path = format!("src/module_{}/file_{}.rs", i % 97, i % 1013);
            r.before = Some(blob(i));
            r.pid = Some(4242);
            r.pstart = Some(1);
            f.write_all(&r.to_line()).unwrap();
            r.op = op::APPLIED.into();
            r.before = None;
            r.after = Some(blob(i + 1));
            f.write_all(&r.to_line()).unwrap();
            if i + 20 < calls {
                r.op = op::PERSISTED.into();
                r.persisted = true;
                f.write_all(&r.to_line()).unwrap();
            }
        }
    }
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let mut n = 0u64;
        walj::journal::scan_lines(&p, |_| n += 1).unwrap();
        println!("scan_lines: {:?} ({n})", t.elapsed());
        let t = std::time::Instant::now();
        let mut n = 0u64;
        walj::journal::scan_lines(&p, |l| if walj::journal::record::check_crc(l.bytes) == Some(true) { n += 1 }).unwrap();
        println!("scan+crc: {:?} ({n})", t.elapsed());
        let t = std::time::Instant::now();
        let f = walj::fold::Fold::load(&p, &Default::default()).unwrap();
        println!("fold: {:?} ({} entries)", t.elapsed(), f.entries.len());
    }
}
