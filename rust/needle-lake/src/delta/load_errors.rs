//! What a user reads when the Delta kernel cannot load a table's version: a version past the
//! latest, one whose log was cleaned up, or the commit line that is not JSON.

use crate::Error;
use delta_kernel::{Engine, Snapshot};
use std::path::{Path, PathBuf};
use url::Url;

/// The kernel's error for a snapshot that could not be built, with what a user needs first:
/// a version past the latest ([`Error::NoSuchVersion`]), or one whose log was cleaned up
/// ([`Error::VersionGone`]).
pub(super) fn explain_load_error(
    root: &Path,
    url: &Url,
    engine: &dyn Engine,
    version: Option<u64>,
    e: delta_kernel::KernelError,
) -> Error {
    let table = root.display();
    let Some(v) = version else {
        return with_bad_json(root, format!("cannot read {table}: {e}")).into();
    };
    match Snapshot::builder_for(url.as_str()).build(engine) {
        Ok(latest) if v > latest.version() => Error::NoSuchVersion {
            table: root.to_path_buf(),
            version: v,
            latest: latest.version(),
        },
        Ok(_) => Error::VersionGone {
            table: root.to_path_buf(),
            version: v,
            detail: e.to_string(),
        },
        Err(_) => with_bad_json(root, format!("cannot read version {v} of {table}: {e}")).into(),
    }
}

/// `message`, followed by the first line of a commit in `_delta_log` that is not JSON, if
/// there is one: the kernel's JSON errors do not name the file.
pub(super) fn with_bad_json(root: &Path, message: String) -> String {
    let log = root.join("_delta_log");
    let Ok(entries) = std::fs::read_dir(&log) else {
        return message;
    };
    let mut commits: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    commits.sort();
    for path in commits {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(line) {
                if !line.trim().is_empty() {
                    return format!(
                        "{message} ({} line {}: not JSON: {e})",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
    }
    message
}
