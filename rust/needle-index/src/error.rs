//! Errors. Every error about a file names the file.

use std::fmt;
use std::path::{Path, PathBuf};

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What can go wrong.
#[derive(Debug)]
pub enum Error {
    /// An I/O call on `path` failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `path` is damaged: a checksum mismatch, a truncated file, an impossible field.
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What exactly is wrong.
        detail: String,
    },
    /// A delete named a partition or value that the index does not hold.
    NotFound(String),
    /// A caller-supplied argument is out of range.
    InvalidArgument(String),
    /// Another process holds the index open for writing.
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "I/O error on {}: {source}", path.display()),
            Error::Corrupt { path, detail } => {
                write!(f, "corrupt file {}: {detail}", path.display())
            }
            Error::NotFound(m) => write!(f, "not found: {m}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Locked(p) => write!(f, "index {} is in use by another process", p.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Little-endian encoder.
#[derive(Default)]
pub(crate) struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    /// u32 length, then the UTF-8 bytes.
    pub fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
    }
}

/// Bounds-checked little-endian decoder; every failure is a corruption of `path`.
pub(crate) struct Dec<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub path: &'a Path,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], path: &'a Path) -> Dec<'a> {
        Dec { buf, pos: 0, path }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(Error::corrupt(
                self.path,
                format!("truncated: need {n} bytes at offset {}", self.pos),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn str(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| Error::corrupt(self.path, "partition id is not UTF-8"))
    }
    pub fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// `fsync` of a directory, so a rename or a new file in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}
