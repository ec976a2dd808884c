//! Reading `walj recover`'s text as a user does: an entry's line and the notes it names.

/// The marks `walj recover` gives the entry line `line` of its text `text`: its inline marks, or,
/// when they went below as numbered notes (`[1] [2]`), the text of each note it names.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn recover_marks(text: &str, line: &str) -> String {
    let mut marks = vec![line.to_string()];
    for word in line.split_whitespace().filter(|w| {
        w.len() > 2 && w.starts_with('[') && w.ends_with(']') && w[1..w.len() - 1].bytes().all(|b| b.is_ascii_digit())
    }) {
        let note = text.lines().map(str::trim_start).find(|l| l.starts_with(&format!("{word} ")));
        marks.push(note.unwrap_or_else(|| panic!("note {word} of {line:?} is missing:\n{text}")).to_string());
    }
    marks.join("\n")
}

/// Whether `walj recover`'s text `text` says a command cut off by a crash, `head` (what walj
/// says of it, up to the colon: "command never finished (Claude Code stopped while it ran)"),
/// whose line starts with `command`, and what became of it, starting with `detail` ("no changes
/// found", "still running ("): on one line when it fits, else the command on the next line.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn says_cut_off(text: &str, head: &str, command: &str, detail: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(i, l)| {
        let l = l.trim_start();
        let one = l.starts_with(&format!("{head}: {command}")) && l.contains(&format!(" — {detail}"));
        let two = l.starts_with(&format!("{head} — {detail}"))
            && lines.get(i + 1).is_some_and(|n| n.trim_start().starts_with(command));
        one || two
    })
}
