//! The HEAD side of a diff (`walj diff --head`): the blob committed at the entry's path, for
//! files ([`super::diff`]) and links ([`super::link`]) alike.

use crate::fold::Entry;
use crate::project::Project;

use super::Side;

/// What HEAD holds at `entry`'s path; a side with a `note` when the project is no git
/// repository or HEAD cannot be read, never an error.
pub(super) fn head_side(project: &Project, entry: &Entry) -> Side {
    let label = "HEAD".to_string();
    if git2::Repository::open(&project.root).is_err() {
        return Side { label, bytes: None, note: Some("the project is not a git repository".into()) };
    }
    match crate::git::head_blob(&project.root, &entry.path) {
        Ok(b) => Side { label, bytes: b, note: None },
        Err(e) => Side { label, bytes: None, note: Some(format!("reading HEAD: {}", e.message())) },
    }
}
