//! SHA-1 as git uses it (object ids, the index's trailer) and for walj's own short digests.
//! The `sha1` crate uses the CPU's SHA instructions where it has them (detected once per
//! process): hashing a 10 KB image is on every file hook's path.

use sha1::Digest;

/// An incremental SHA-1.
#[derive(Clone, Default)]
pub(crate) struct Sha1(sha1::Sha1);

impl Sha1 {
    pub(crate) fn new() -> Sha1 {
        Sha1::default()
    }

    /// The SHA-1 of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Sha1 {
        let mut h = Sha1::new();
        h.update(bytes);
        h
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The 20-byte digest.
    pub(crate) fn bytes(self) -> [u8; 20] {
        self.0.finalize().into()
    }

    /// The digest as 40 lowercase hex digits.
    pub(crate) fn hex(self) -> String {
        hex(&self.bytes())
    }
}

/// `bytes` as lowercase hex digits.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &x in bytes {
        s.push(H[usize::from(x >> 4)] as char);
        s.push(H[usize::from(x & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::Sha1;

    #[test]
    fn known_digests() {
        assert_eq!(Sha1::of(b"").hex(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(Sha1::of(b"abc").hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let mut h = Sha1::new();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.clone().bytes(), Sha1::of(b"abc").bytes());
    }
}
