//! Whether git's stored bytes of a clean tracked file are the bytes on disk.
//!
//! A clean file's pre-image is taken from git's object database only when they are: git
//! stores a file in another form than the working tree's where a `filter` (git-lfs above
//! all: the blob is a pointer), a `text`/`eol` conversion to CRLF, an `ident` expansion or a
//! `working-tree-encoding` applies, under `core.autocrlf = true`, and for entries git does
//! not compare with the disk (skip-worktree, assume-unchanged). walj never runs a filter to
//! find out: such a pre-image is recorded as not captured (`nocap: git_form`), and every
//! reader says so, instead of a revert writing LF text or an LFS pointer over the user's file.

use super::gitindex;

/// What the repository's configuration says, read once per hook call.
#[derive(Debug, Clone)]
pub(crate) struct GitForm {
    /// `core.autocrlf = true`: git converts text to CRLF on checkout.
    autocrlf: bool,
    /// `core.eol = crlf`: files with the `text` attribute get CRLF on checkout.
    eol_crlf: bool,
    /// An attributes file may apply (tracked or present `.gitattributes`, `info/attributes`,
    /// `core.attributesFile`): each path is looked up.
    attributes: bool,
}

impl GitForm {
    /// Reads the configuration of `repo`; `index` (the current one) tells whether any
    /// `.gitattributes` is tracked.
    pub(crate) fn of(repo: &git2::Repository, index: Option<&[gitindex::Entry]>) -> GitForm {
        let cfg = repo.config().ok();
        let get = |k: &str| cfg.as_ref().and_then(|c| c.get_string(k).ok()).map(|v| v.to_ascii_lowercase());
        let autocrlf = get("core.autocrlf").is_some_and(|v| matches!(v.as_str(), "true" | "yes" | "on" | "1"));
        let eol_crlf = get("core.eol").as_deref() == Some("crlf");
        let tracked =
            index.is_some_and(|i| i.iter().any(|e| e.path == ".gitattributes" || e.path.ends_with("/.gitattributes")));
        let present = repo.workdir().is_some_and(|w| w.join(".gitattributes").exists())
            || repo.path().join("info").join("attributes").exists()
            || get("core.attributesfile").is_some()
            || global_attributes_exist();
        GitForm { autocrlf, eol_crlf, attributes: tracked || present }
    }

    /// True when git's blob of `path` (relative to the work tree, `entry` its index entry)
    /// holds the bytes a checkout leaves on disk.
    pub(crate) fn same_bytes(&self, repo: &git2::Repository, path: &str, entry: Option<&gitindex::Entry>) -> bool {
        if entry.is_some_and(|e| e.skip_worktree || e.assume_valid) || self.autocrlf {
            return false;
        }
        if !self.attributes {
            return true;
        }
        let p = std::path::Path::new(path);
        let attr = |name: &str| {
            repo.get_attr(p, name, git2::AttrCheckFlags::FILE_THEN_INDEX)
                .map(git2::AttrValue::from_string)
                .unwrap_or(git2::AttrValue::String("?"))
        };
        use git2::AttrValue as V;
        let set = |v: &V| !matches!(v, V::Unspecified | V::False);
        if set(&attr("filter")) || matches!(attr("ident"), V::True) || set(&attr("working-tree-encoding")) {
            return false;
        }
        // A CRLF conversion on checkout: `eol=crlf`, or `text` (or the old `crlf`) under
        // `core.eol = crlf`. `text` alone on this system checks out LF, as git stores it.
        let eol = attr("eol");
        if matches!(eol, V::String(v) if v.eq_ignore_ascii_case("crlf")) || matches!(eol, V::String("?")) {
            return false;
        }
        let text = attr("text");
        let crlf = attr("crlf");
        !(self.eol_crlf && (set(&text) || set(&crlf)))
    }
}

/// Git's default global attributes file (`$XDG_CONFIG_HOME/git/attributes`, else
/// `~/.config/git/attributes`) exists.
fn global_attributes_exist() -> bool {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()).map(std::path::PathBuf::from);
    let dir = xdg.or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")));
    dir.is_some_and(|d| d.join("git").join("attributes").exists())
}
