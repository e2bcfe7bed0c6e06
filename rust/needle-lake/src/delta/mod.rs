//! Delta Lake tables: the data files live at a version (the transaction log replayed by the Delta
//! kernel), an index that follows the table's versions, and lookups at any version that never
//! miss a file live in it, however far the index lags behind. This module keeps the index on a
//! local file system; [`crate::object::index_delta`] publishes one for a table on object storage.
//!
//! The index lives in `TABLE/.needle-index` (Delta readers and `VACUUM` leave hidden folders
//! alone), with the version it covers in [`VERSION_FILE`]; its partitions are the table's data
//! files (or their row groups), by their path relative to the table.

mod load_errors;
mod snapshot;

pub use snapshot::{DeltaSnapshot, PartitionValues};

use crate::pq::{self, IndexParquetOptions, IndexReport, LookupResult, ParquetMeta};
use crate::{Error, Key, Result};
use needle_index::{Index, Options};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// File in the index directory holding the table version the index covers.
pub const VERSION_FILE: &str = "delta-version.txt";

/// The index directory of a table: `index`, or `TABLE/.needle-index`.
pub fn index_dir_of(root: &Path, index: Option<&Path>) -> PathBuf {
    index
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.join(pq::INDEX_SUBDIR))
}

/// Brings the index of the table in `root` up to the table's latest version on `o.column`:
/// files the commits since the covered version added are indexed, files they removed are
/// dropped, and the new version is recorded (last: a crash before it only repeats work).
/// A first run indexes every live file. Returns the version and what changed.
pub fn index_delta(
    root: &Path,
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<(u64, IndexReport)> {
    let snap = DeltaSnapshot::load(root, None)?;
    snap.check_column(&o.column)?;
    // Files written before schema evolution added the column hold no value of it.
    let declared = snap.declared_kind(&o.column);
    let report = pq::index_table_files(root, &snap.paths(), o, declared, progress)?;
    let dir = index_dir_of(root, o.index.as_deref());
    let tmp = dir.join(format!("{VERSION_FILE}.tmp"));
    let done = dir.join(VERSION_FILE);
    std::fs::write(&tmp, format!("{}\n", snap.version))
        .and_then(|()| std::fs::rename(&tmp, &done))
        .map_err(|e| Error::Other(format!("cannot write {}: {e}", done.display())))?;
    Ok((snap.version, report))
}

/// The table version the index in `index_dir` covers, or None if it was never brought up to one.
pub fn indexed_version(index_dir: &Path) -> Result<Option<u64>> {
    let p = index_dir.join(VERSION_FILE);
    match std::fs::read_to_string(&p) {
        Ok(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::Other(format!("{} is damaged: {s:?}", p.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Other(format!("cannot read {}: {e}", p.display()))),
    }
}

/// The partition ids (files, or row groups of files) of `snap` that may hold `value`: the
/// index's candidates among the files live in `snap`, plus every live file the index does not
/// hold (written after its last run, or dropped from it since), whole. Sorted.
pub fn candidates(snap: &DeltaSnapshot, index_dir: &Path, value: &Key) -> Result<Vec<String>> {
    // A snapshot takes no lock: a lookup during an indexing run answers instead of failing.
    let ix = Index::open_snapshot(index_dir, Options::default())?;
    let ids = ix.query_hash(value.hash())?;
    let covered = covered_files(&ix);
    drop(ix);
    Ok(candidates_among(snap, &covered, ids))
}

/// The data files an index holds whole, by path relative to the table: those with a live
/// marker entry (the file, or its row group 0, [`pq::marks_file`]). A file live in a version and
/// not among them (not indexed yet, or left half-indexed by a crash or by a run still going)
/// has to be read whole.
pub fn covered_files(ix: &Index) -> HashSet<String> {
    ix.partitions()
        .into_iter()
        .filter(|p| !p.removed && pq::marks_file(&p.id))
        .map(|p| pq::split_id(&p.id).0.to_string())
        .collect()
}

/// The candidates of one value in `snap`, from the index's answer `ids` (taken from an index
/// that holds the files `covered`): the ids of files live in `snap`, plus every live file the
/// index does not hold. Sorted. However far the index lags behind `snap`, no live file that may
/// hold the value is left out.
pub fn candidates_among(
    snap: &DeltaSnapshot,
    covered: &HashSet<String>,
    ids: Vec<String>,
) -> Vec<String> {
    let mut out: Vec<String> = ids
        .into_iter()
        .filter(|id| snap.files.contains_key(pq::split_id(id).0))
        .collect();
    out.extend(snap.files.keys().filter(|f| !covered.contains(*f)).cloned());
    out.sort();
    out
}

/// Live files of `snap` the index does not hold (they are read whole by every lookup).
pub fn files_not_covered(snap: &DeltaSnapshot, covered: &HashSet<String>) -> usize {
    snap.files.keys().filter(|f| !covered.contains(*f)).count()
}

/// Finds the candidate files of `value` (text, parsed as the indexed column's type) in version
/// `version` (default: the latest) of the table and reads the matching rows from them.
pub fn lookup(
    root: &Path,
    version: Option<u64>,
    index: Option<&Path>,
    value: &str,
) -> Result<LookupResult> {
    let index_dir = index_dir_of(root, index);
    let meta = ParquetMeta::load(&index_dir)?;
    let snap = DeltaSnapshot::load(root, version)?;
    snap.check_column(&meta.column)?;
    let v = meta.kind.parse(value)?;
    let found = candidates(&snap, &index_dir, &v)?;
    snap.read(&meta, &v, found)
}

/// [`lookup`] in `snap` through an index already open (a service's snapshot) that holds the
/// files `covered`: `value` is of the indexed column's type (`meta.kind`).
pub fn lookup_in(
    snap: &DeltaSnapshot,
    meta: &ParquetMeta,
    ix: &Index,
    covered: &HashSet<String>,
    value: &Key,
) -> Result<LookupResult> {
    snap.check_column(&meta.column)?;
    let ids = ix.query_hash(value.hash())?;
    snap.read(meta, value, candidates_among(snap, covered, ids))
}
