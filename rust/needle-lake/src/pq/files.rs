//! Where a table's Parquet files are read from, and opening them.

use crate::{Error, Result};
use parquet::file::reader::{ChunkReader, SerializedFileReader};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a table's Parquet files are read from: a local directory, or a prefix of an object store
/// ([`crate::object::RemoteFiles`]). Files are named by their path relative to the table's root,
/// with `/` between directories, as partition ids name them.
pub trait ParquetFiles {
    /// What a file is read through (a clone reads the same file).
    type Reader: ChunkReader + Clone + 'static;
    /// Opens file `rel`.
    fn open(&self, rel: &str) -> Result<Self::Reader>;
    /// File `rel` as messages name it: its path or URL.
    fn name(&self, rel: &str) -> String;
    /// Opens files `rels` ahead of reading them in this order, as many at once as the source
    /// gains from (an object store: a batch per round trip; a local directory: nothing to do).
    fn open_ahead(&self, _rels: &[String]) -> Result<()> {
        Ok(())
    }
}

/// The Parquet files under a local directory.
#[derive(Debug, Clone, Copy)]
pub struct LocalFiles<'a>(pub &'a Path);

/// A local file, shared by the readers of one indexing pass.
#[derive(Debug, Clone)]
pub struct LocalFile(Arc<File>);

impl parquet::file::reader::Length for LocalFile {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl ChunkReader for LocalFile {
    type T = <File as ChunkReader>::T;
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.0.get_read(start)
    }
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

impl ParquetFiles for LocalFiles<'_> {
    type Reader = LocalFile;
    fn open(&self, rel: &str) -> Result<LocalFile> {
        let path = self.0.join(rel);
        File::open(&path)
            .map(|f| LocalFile(Arc::new(f)))
            .map_err(|e| Error::Other(format!("cannot open {}: {e}", path.display())))
    }
    fn name(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

/// Every `*.parquet` file under `dir` (recursively, skipping hidden directories), sorted.
pub fn parquet_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d)
            .map_err(|e| Error::Other(format!("cannot read directory {}: {e}", d.display())))?;
        for e in rd {
            let e =
                e.map_err(|e| Error::Other(format!("cannot read directory {}: {e}", d.display())))?;
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

pub(super) fn open_reader<F: ParquetFiles>(
    files: &F,
    rel: &str,
) -> Result<SerializedFileReader<F::Reader>> {
    open_parquet(files.open(rel)?, &files.name(rel))
}

/// Reads the footer of Parquet file `name` through `reader`.
pub(super) fn open_parquet<R: ChunkReader + 'static>(
    reader: R,
    name: &str,
) -> Result<SerializedFileReader<R>> {
    SerializedFileReader::new(reader)
        .map_err(|e| Error::Other(format!("{name} is not a readable Parquet file: {e}")))
}
