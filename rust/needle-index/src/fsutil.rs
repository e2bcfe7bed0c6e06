//! File-system helpers.

use crate::error::{Error, Result};
use std::path::Path;

/// `fsync` of a directory, so a rename or a new file in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}
