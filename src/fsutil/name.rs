//! File names that are not UTF-8, carried losslessly in walj's text records.
//!
//! A record's path is a `String` (JSON text), but a Unix file name is any bytes but `/` and
//! NUL: `touch $'bad\xff.txt'` makes one git and Bash handle and `into_string` refuses.
//! [`encode`] maps such a name to text and [`decode`] maps the text back to the very same
//! bytes, so the name is journaled, diffed and reverted like any other:
//!
//! - valid UTF-8 is kept as it is (every name walj recorded before reads as before);
//! - a byte that is not part of valid UTF-8 (always ≥ 0x80) becomes the private-use char
//!   U+10FF00 + byte (U+10FF80 ..= U+10FFFF), which [`raw_byte`] recognizes;
//! - so that no text is ambiguous, a name that really holds one of those 128 private-use
//!   chars has each of that char's UTF-8 bytes mapped the same way (decoded, they give back
//!   the char's own bytes).
//!
//! `decode(encode(b)) == b` for every byte string `b`. Before the mapping existed walj left
//! non-UTF-8 names out; a record written then that holds a char of the reserved range (a
//! real name using plane-16 private-use chars, which no known system does) would now read as
//! the bytes it stands for. Screens show a mapped byte as `\xNN` (`present::text::safe`).
//!
//! On Unix the bytes are the name. Elsewhere (Windows: UTF-16 names) a name that is not
//! Unicode is carried through its encoded bytes and turned back into a path lossily.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::Path;

/// The first char of the reserved range: byte `b` (≥ 0x80) is `BASE + b`.
const BASE: u32 = 0x10FF00;

/// The byte a reserved char stands for (U+10FF80 ..= U+10FFFF → 0x80 ..= 0xFF), `None` for
/// any other char.
pub(crate) fn raw_byte(c: char) -> Option<u8> {
    let n = c as u32;
    (n >= BASE + 0x80).then(|| (n - BASE) as u8)
}

fn mapped(b: u8) -> char {
    // BASE + 0x80 ..= BASE + 0xFF are valid scalar values (below U+110000, not surrogates).
    char::from_u32(BASE + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// `bytes` as record text: borrowed when they are UTF-8 holding no reserved char.
pub fn encode(bytes: &[u8]) -> Cow<'_, str> {
    if bytes.is_ascii()
        && let Ok(s) = std::str::from_utf8(bytes)
    {
        return Cow::Borrowed(s);
    }
    if let Ok(s) = std::str::from_utf8(bytes)
        && !s.chars().any(|c| raw_byte(c).is_some())
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if raw_byte(c).is_some() {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(mapped));
            } else {
                out.push(c);
            }
        }
        out.extend(chunk.invalid().iter().copied().map(mapped));
    }
    Cow::Owned(out)
}

/// A file name (or root-relative path) as record text, losslessly.
pub(crate) fn encode_os(name: &OsStr) -> Cow<'_, str> {
    match name.to_str() {
        Some(s) if s.is_ascii() || !s.chars().any(|c| raw_byte(c).is_some()) => Cow::Borrowed(s),
        _ => Cow::Owned(encode(name.as_encoded_bytes()).into_owned()),
    }
}

/// The bytes record text `s` stands for: borrowed when it holds no reserved char.
pub fn decode(s: &str) -> Cow<'_, [u8]> {
    // ASCII first (most paths): checked a word at a time, and no mapped char is ASCII.
    if s.is_ascii() || !s.chars().any(|c| raw_byte(c).is_some()) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match raw_byte(c) {
            Some(b) => out.push(b),
            None => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    Cow::Owned(out)
}

/// The path record text `s` names (relative when `s` is): borrowed unless it holds a
/// mapped byte.
pub fn to_path(s: &str) -> Cow<'_, Path> {
    match decode(s) {
        Cow::Borrowed(_) => Cow::Borrowed(Path::new(s)),
        Cow::Owned(bytes) => Cow::Owned(bytes_to_path(bytes)),
    }
}

#[cfg(unix)]
fn bytes_to_path(bytes: Vec<u8>) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes).into()
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: Vec<u8>) -> std::path::PathBuf {
    String::from_utf8_lossy(&bytes).into_owned().into()
}

/// True when record text `s` holds a byte that is not UTF-8 (a mapped char).
pub fn has_raw(s: &str) -> bool {
    s.chars().any(|c| raw_byte(c).is_some())
}

/// A project-relative path (`/`-separated, raw bytes escaped) split into its folder and its
/// name, when it is a plain relative path: not empty, no `..`, `.`, root or prefix.
pub(crate) fn split_plain(rel: &str) -> Option<(std::path::PathBuf, std::ffi::OsString)> {
    let p = to_path(rel);
    if rel.is_empty() || !p.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
        return None;
    }
    let name = p.file_name()?.to_os_string();
    Some((p.parent().map(Path::to_path_buf).unwrap_or_default(), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_kept_as_they_are() {
        for s in ["a.txt", "dir/ü €.rs", "", "\u{10ff7f}"] {
            assert!(matches!(encode(s.as_bytes()), Cow::Borrowed(b) if b == s));
            assert!(matches!(decode(s), Cow::Borrowed(b) if b == s.as_bytes()));
        }
    }

    #[test]
    fn every_byte_string_round_trips() {
        let cases: Vec<Vec<u8>> = vec![
            b"bad\xff.txt".to_vec(),
            b"\x80\x81\xfe".to_vec(),
            b"half \xe2\x82 euro".to_vec(),
            "lit \u{10ff80}\u{10ffff} x".as_bytes().to_vec(),
            b"\xf4\x8f\xbe\x80".to_vec(),
            (0u8..=255).collect(),
        ];
        for b in cases {
            let e = encode(&b);
            assert_eq!(&*decode(&e), &b[..], "{e:?}");
        }
        let e = encode(b"bad\xff.txt");
        assert_eq!(e, "bad\u{10ffff}.txt");
        assert!(has_raw(&e));
        assert_eq!(raw_byte('\u{10ffff}'), Some(0xff));
        assert_eq!(raw_byte('\u{10ff7f}'), None);
    }

    #[cfg(unix)]
    #[test]
    fn paths_carry_the_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let p = to_path("d/bad\u{10ffff}.txt");
        assert_eq!(p.as_os_str().as_bytes(), b"d/bad\xff.txt");
        assert_eq!(encode_os(p.as_os_str()), "d/bad\u{10ffff}.txt");
    }
}
