//! Errors. Every error about a file names the file.

use std::path::{Path, PathBuf};

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O call on `path` failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `path` is damaged: a checksum mismatch, a truncated file, an impossible field.
    #[error("corrupt file {}: {detail}", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What exactly is wrong.
        detail: String,
    },
    /// A delete named a partition or value that the index does not hold.
    #[error("not found: {0}")]
    NotFound(String),
    /// A caller-supplied argument is out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another process holds the index open for writing.
    #[error("index {} is in use by another process", .0.display())]
    Locked(PathBuf),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub(crate) fn corrupt(path: &Path, detail: impl Into<String>) -> Error {
        Error::Corrupt {
            path: path.to_path_buf(),
            detail: detail.into(),
        }
    }
}
