//! The data lake's errors: the cases a caller acts on (a Delta version that is not there, or
//! no longer readable; the index's own errors) have variants of their own; the rest carry a
//! message that names the file or table and what failed.

use std::path::PathBuf;

/// An error of the data-lake layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Delta version past the table's latest.
    #[error("{} has no version {version}; the latest is {latest}", table.display())]
    NoSuchVersion {
        table: PathBuf,
        version: u64,
        latest: u64,
    },
    /// A Delta version older than the log's retention: the commits and checkpoints it is rebuilt
    /// from were removed.
    #[error(
        "version {version} of {} can no longer be read (log retention may have removed the \
         commits and checkpoints it is rebuilt from): {detail}",
        table.display()
    )]
    VersionGone {
        table: PathBuf,
        version: u64,
        detail: String,
    },
    /// A column the table's schema does not have at this version (a column added later by
    /// schema evolution is not there at the versions before it).
    #[error(
        "version {version} of {} has no column {column:?} (its columns: {columns}); a column \
         added by schema evolution does not exist at the versions before it",
        table.display()
    )]
    NoSuchColumn {
        table: PathBuf,
        version: u64,
        column: String,
        columns: String,
    },
    /// A data file live in a version was removed (by `VACUUM`, once the version was older than
    /// the table's retention): the version can no longer be read.
    #[error(
        "version {version} of {} can no longer be read: its data file {file} was removed \
         (VACUUM removes the files of versions older than the table's retention); read a later \
         version",
        table.display()
    )]
    FilesRemoved {
        table: PathBuf,
        version: u64,
        file: String,
    },
    /// The partition index failed (its message names the index file).
    #[error(transparent)]
    Index(#[from] needle_index::Error),
    /// Anything else: what failed, naming the file or table.
    #[error("{0}")]
    Other(String),
}

/// The data lake's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::Other(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::Other(message.to_string())
    }
}
