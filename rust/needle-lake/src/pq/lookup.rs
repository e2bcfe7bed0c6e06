//! Lookups: the rows of the candidate partitions that hold a value.

use super::files::{open_reader, LocalFiles, ParquetFiles};
use super::ids::by_file;
use super::kinds::{column_key, find_column};
use super::meta::{ParquetMeta, INDEX_SUBDIR};
use crate::{Error, Key, Result};
use needle_index::{Index, Options};
use parquet::file::reader::FileReader;
use parquet::record::Row;
use std::path::Path;

/// One row found by [`lookup`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FoundRow {
    /// File path relative to the directory.
    pub file: String,
    /// Row number within the file.
    pub row: u64,
    /// The row, as the parquet crate prints it.
    pub text: String,
}

/// Result of [`lookup`].
#[derive(Debug, Clone, Default)]
pub struct LookupResult {
    /// Candidate partition ids from the index.
    pub candidates: Vec<String>,
    /// Rows whose column equals the value.
    pub rows: Vec<FoundRow>,
}

/// Finds the candidate files of `value` (text, parsed as the indexed column's type) and
/// reads the matching rows from them.
pub fn lookup(dir: &Path, index: Option<&Path>, value: &str) -> Result<LookupResult> {
    let index_path = index
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join(INDEX_SUBDIR));
    let meta = ParquetMeta::load(&index_path)?;
    let v = meta.kind.parse(value)?;
    // A snapshot takes no lock: a lookup during an indexing run answers instead of failing.
    let ix = Index::open_snapshot(&index_path, Options::default())?;
    let candidates = ix.query_hash(v.hash())?;
    drop(ix);
    read_rows(&LocalFiles(dir), &meta, &v, candidates)
}

/// [`lookup`] through an index already open (a service's snapshot): `value` is of the indexed
/// column's type (`meta.kind`).
pub fn lookup_in(dir: &Path, meta: &ParquetMeta, ix: &Index, value: &Key) -> Result<LookupResult> {
    let candidates = ix.query_hash(value.hash())?;
    read_rows(&LocalFiles(dir), meta, value, candidates)
}

/// The rows of the candidate partitions whose column equals `v`. A file without the column
/// holds no such row (a table format reads the column as nulls in files written before its
/// schema gained it).
pub(crate) fn read_rows<F: ParquetFiles>(
    files: &F,
    meta: &ParquetMeta,
    v: &Key,
    candidates: Vec<String>,
) -> Result<LookupResult> {
    let mut rows = Vec::new();
    for (file, groups) in by_file(&candidates) {
        let name = files.name(file);
        let r = open_reader(files, file)?;
        let Some((_, kind)) = find_column(&r, &name, &meta.column)? else {
            continue;
        };
        if !kind.value_type().same_kind(meta.kind) {
            return Err(Error::Other(format!(
                "column {:?} of {name} is {}, and the index holds {} values: was the file \
                 rewritten? Index it again (remove its partition, or give it a new name)",
                meta.column,
                kind.value_type().name(),
                meta.kind.name()
            )));
        }
        let read_err =
            |e: parquet::errors::ParquetError| Error::Other(format!("cannot read {name}: {e}"));
        let md = r.metadata();
        // First row number of every row group.
        let mut starts = vec![0u64];
        for g in md.row_groups() {
            starts.push(starts.last().unwrap() + g.num_rows() as u64);
        }
        let mut scan = |it: &mut dyn Iterator<Item = parquet::errors::Result<Row>>,
                        first: u64|
         -> Result<()> {
            for (i, row) in it.enumerate() {
                let row = row.map_err(read_err)?;
                let value = column_key(&row, &meta.column, kind).map_err(|why| {
                    Error::Other(format!("column {:?} of {name}: {why}", meta.column))
                })?;
                if value.as_ref() == Some(v) {
                    rows.push(FoundRow {
                        file: file.to_string(),
                        row: first + i as u64,
                        text: row.to_string(),
                    });
                }
            }
            Ok(())
        };
        if groups.contains(&None) {
            let mut it = r.get_row_iter(None).map_err(read_err)?;
            scan(&mut it, 0)?;
        } else {
            for rg in groups.into_iter().flatten() {
                let g = r.get_row_group(rg).map_err(read_err)?;
                let mut it = g.get_row_iter(None).map_err(read_err)?;
                scan(&mut it, starts[rg])?;
            }
        }
    }
    rows.sort();
    Ok(LookupResult { candidates, rows })
}
