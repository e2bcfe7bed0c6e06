//! Indexing a table's Parquet files on one column.

use super::files::{open_parquet, open_reader, parquet_files, LocalFiles, ParquetFiles};
use super::ids::{append_order, partition_id, removal_order};
use super::kinds::{column_of, common_value_type, find_column, ColumnKind};
use super::meta::{ParquetMeta, INDEX_SUBDIR};
use crate::{Error, Result, ValueType};
use needle_index::{Config, Index, Options};
use parquet::file::reader::FileReader;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files an indexing pass asks its [`ParquetFiles`] to open ahead at a time.
const OPEN_AHEAD: usize = 256;

/// Options of [`index_dir`].
#[derive(Debug, Clone)]
pub struct IndexParquetOptions {
    /// Column to index.
    pub column: String,
    /// One partition per row group instead of per file.
    pub row_groups: bool,
    /// Buckets; None sizes B so a median-sized partition gets about 3 slots per bucket.
    pub buckets: Option<u32>,
    /// Fingerprint width.
    pub fingerprint_bits: u32,
    /// Index directory; None means `DIR/.needle-index`.
    pub index: Option<PathBuf>,
}

/// Result of [`index_dir`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexReport {
    /// Partitions added.
    pub added: usize,
    /// Partitions removed because their file disappeared.
    pub removed: usize,
    /// Files already indexed and left alone.
    pub unchanged: usize,
    /// Values indexed.
    pub values: u64,
}

/// Indexes every Parquet file of `dir` not yet in the index on one column, and removes
/// partitions whose file is gone. `progress` is called after each file with (done, total).
pub fn index_dir(
    dir: &Path,
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    index_files(dir, &parquet_files(dir)?, o, progress)
}

/// Makes the index of the files under `dir` cover exactly `files` (paths under `dir`): files
/// not yet indexed are indexed, and partitions of files not listed are removed. Every listed
/// file is checked before anything is written; one without the column is refused. `progress`
/// is called after each file with (done, total, file).
pub fn index_files(
    dir: &Path,
    files: &[PathBuf],
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    index_files_with(
        &LocalFiles(dir),
        &index_path_of(dir, o),
        &relative(dir, files),
        o,
        Options::default(),
        Missing::Refused,
        progress,
    )
}

/// The index directory `o` names, or `DIR/.needle-index`.
pub(super) fn index_path_of(dir: &Path, o: &IndexParquetOptions) -> PathBuf {
    o.index.clone().unwrap_or_else(|| dir.join(INDEX_SUBDIR))
}

/// Paths of files under `dir`, relative to it.
pub(super) fn relative(dir: &Path, files: &[PathBuf]) -> Vec<String> {
    files.iter().map(|f| file_id(dir, f)).collect()
}

/// The name partition ids give the file `path` under `dir`: its path relative to `dir`.
pub fn file_id(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// [`index_files`] for the files live in one version of a table format (a Delta table), whose
/// schema may have gained the column after some of them were written: a file without the column
/// holds no value of it (the table reads it as nulls) and is indexed as an empty partition.
/// `declared` is the column's kind in the table's schema, taken when no file has the column.
pub fn index_table_files(
    dir: &Path,
    files: &[PathBuf],
    o: &IndexParquetOptions,
    declared: Option<ValueType>,
    progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    let missing = Missing::Nulls { declared };
    let index_path = index_path_of(dir, o);
    let rels = relative(dir, files);
    index_files_with(
        &LocalFiles(dir),
        &index_path,
        &rels,
        o,
        Options::default(),
        missing,
        progress,
    )
}

/// What indexing does with a file that lacks the column.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Missing {
    /// Refuse it, naming the file and its columns.
    Refused,
    /// Index it as holding no value; the column's kind in the table's schema, if known.
    Nulls { declared: Option<ValueType> },
}

/// [`index_files`] from any [`ParquetFiles`] into the index at `index_path`, with the index's own
/// options (tests flush small memtables); `rels` are the files to cover.
pub(crate) fn index_files_with<F: ParquetFiles>(
    files: &F,
    index_path: &Path,
    rels: &[String],
    o: &IndexParquetOptions,
    index_options: Options,
    missing: Missing,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    // Check the column in every file first: a bad file fails the run before anything is written.
    // Readers are not kept open between the passes: a directory may hold more files than
    // the process may have open.
    let mut sizes: Vec<i64> = Vec::new();
    let mut kinds: Vec<(ColumnKind, String)> = Vec::new();
    for (i, rel) in rels.iter().enumerate() {
        if i % OPEN_AHEAD == 0 {
            files.open_ahead(&rels[i..rels.len().min(i + OPEN_AHEAD)])?;
        }
        let name = files.name(rel);
        let r = open_reader(files, rel)?;
        match (find_column(&r, &name, &o.column)?, missing) {
            (Some((_, k)), _) => kinds.push((k, name)),
            (None, Missing::Nulls { .. }) => {}
            (None, Missing::Refused) => {
                column_of(&r, &name, &o.column)?;
            }
        }
        let md = r.metadata();
        if o.row_groups {
            sizes.extend(md.row_groups().iter().map(|g| g.num_rows()));
        } else {
            sizes.push(md.file_metadata().num_rows());
        }
    }
    let found = common_value_type(&o.column, &kinds)?;
    let declared = match missing {
        Missing::Nulls { declared } => declared,
        Missing::Refused => None,
    };
    let mut meta = ParquetMeta {
        column: o.column.clone(),
        kind: found.or(declared).unwrap_or(ValueType::String),
        row_groups: o.row_groups,
    };
    let created = !index_path.join("MANIFEST").exists();
    let ix = if !created {
        let old = ParquetMeta::load(index_path)?;
        // The unit integers are read in stays the one chosen when the index was made.
        let same_kind = found.is_none_or(|k| k.same_kind(old.kind));
        if old.column != meta.column || old.row_groups != meta.row_groups || !same_kind {
            return Err(Error::Other(format!(
                "{} indexes {:?} ({}{}), not {:?} ({}{}); use another --index",
                index_path.display(),
                old.column,
                old.kind.name(),
                if old.row_groups { ", by row group" } else { "" },
                o.column,
                meta.kind.name(),
                if o.row_groups { ", by row group" } else { "" },
            )));
        }
        meta.kind = old.kind;
        let ix = Index::open(index_path, index_options)?;
        // Under the index's lock: an index described in an earlier format whose hashing is
        // unchanged (strings, binary) is described in the current one.
        meta.store(index_path)?;
        ix
    } else {
        let buckets = match o.buckets {
            Some(b) => b,
            None => {
                sizes.sort_unstable();
                let median = sizes.get(sizes.len() / 2).copied().unwrap_or(1000).max(1);
                ((median as f64 / 2.7).ceil() as u32).max(16)
            }
        };
        let ix = Index::create(
            index_path,
            Config {
                buckets,
                fingerprint_bits: o.fingerprint_bits,
            },
            index_options,
        )?;
        meta.store(index_path)?;
        ix
    };
    let ix = Arc::new(ix);
    let existing: HashSet<String> = ix
        .partitions()
        .into_iter()
        .filter(|p| !p.removed)
        .map(|p| p.id)
        .collect();
    let mut report = IndexReport::default();
    let mut present = HashSet::new();
    for (n, rel) in rels.iter().enumerate() {
        if n % OPEN_AHEAD == 0 {
            files.open_ahead(&rels[n..rels.len().min(n + OPEN_AHEAD)])?;
        }
        let name = files.name(rel);
        let reader = files.open(rel)?;
        let r = &open_parquet(reader.clone(), &name)?;
        // A file without the column (of a table whose schema gained it later) holds no value.
        let root_index = match find_column(r, &name, &o.column)? {
            Some(_) => r
                .metadata()
                .file_metadata()
                .schema_descr()
                .root_schema()
                .get_fields()
                .iter()
                .position(|c| c.name() == o.column),
            None if matches!(missing, Missing::Nulls { .. }) => None,
            None => return Err(column_of(r, &name, &o.column).expect_err("no such column")),
        };
        let groups: Vec<Option<usize>> = if o.row_groups {
            append_order(r.num_row_groups()).map(Some).collect()
        } else {
            vec![None]
        };
        for g in groups {
            let id = partition_id(rel, g);
            present.insert(id.clone());
            if existing.contains(&id) {
                report.unchanged += 1;
                continue;
            }
            let hashes = match root_index {
                Some(i) => crate::columns::column_hashes(reader.clone(), &name, i, &o.column, g)?,
                None => Vec::new(),
            };
            report.values += hashes.len() as u64;
            ix.append_hashes(&id, &hashes)?;
            report.added += 1;
        }
        progress(n + 1, rels.len(), rel);
    }
    for id in removal_order(existing.difference(&present).cloned().collect()) {
        ix.remove_partition(&id)?;
        report.removed += 1;
    }
    ix.flush()?;
    // A query reads two buckets per segment: a first build, which flushes a segment per 64 MiB
    // of filters, ends merged into one. Later runs merge only once segments pile up, so that
    // adding a few files does not rewrite the whole index.
    if created {
        ix.merge()
    } else {
        ix.maybe_merge(8)
    }?;
    Ok(report)
}
