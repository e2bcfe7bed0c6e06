//! Delta tables on object storage: the index is built in a local staging directory from the
//! files live in the table's latest version and published next to the table with the version
//! it covers; a lookup at any version reads the index, then the table's log and its candidate
//! files, and never misses a file live in that version, however far the index lags behind.

use super::files::RemoteFiles;
use super::publication::{publish, PublishReport, RemoteIndex};
use super::{index_of, staged, Location};
use crate::delta::{self, DeltaSnapshot};
use crate::pq::{self, IndexParquetOptions, IndexReport, LookupResult};
use crate::{Key, Result};
use needle_index::Options;
use std::collections::HashSet;
use std::path::Path;

/// Brings the published index of the Delta table at `table` (`TABLE/.needle-index`, or `index`)
/// up to the table's latest version on `o.column`, as [`delta::index_delta`] does a local
/// one: the index is built in `staging` (kept between runs, so a later run reads only the files
/// added since), or in a temporary directory, then published with the version it covers.
/// Returns the version, what changed and what was published.
pub fn index_delta(
    table: &Location,
    index: Option<&Location>,
    staging: Option<&Path>,
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<(u64, IndexReport, PublishReport)> {
    let snap = DeltaSnapshot::load_from_store(table, None)?;
    snap.check_column(&o.column)?;
    // Files written before schema evolution added the column hold no value of it.
    let declared = snap.declared_kind(&o.column);
    let files = RemoteFiles::new(table.clone()).knowing(snap.sizes.clone());
    let rels: Vec<String> = snap.files.keys().cloned().collect();
    let (report, published) = staged(staging, |index_dir| {
        let report = pq::index_files_with(
            &files,
            index_dir,
            &rels,
            o,
            Options::default(),
            pq::Missing::Nulls { declared },
            progress,
        )?;
        let lengths = snap.sizes.clone().into_iter().collect();
        let to = index_of(table, index)?;
        Ok((
            report,
            publish(index_dir, &to, &lengths, Some(snap.version))?,
        ))
    })?;
    Ok((snap.version, report, published))
}

/// The rows of `value` in version `version` (default: the latest) of the Delta table at
/// `table`, from `ids`, the candidates of the published index `ix` (which covers an earlier or
/// the same version): those among the files live in that version, plus every live file the
/// index does not hold, read whole; rows deletion vectors hide are left out.
pub(super) fn read_version(
    table: &Location,
    ix: &RemoteIndex,
    version: Option<u64>,
    value: &Key,
    ids: Vec<String>,
) -> Result<LookupResult> {
    let snap = DeltaSnapshot::load_from_store(table, version)?;
    snap.check_column(&ix.meta().column)?;
    let covered: HashSet<String> = ix
        .partition_ids()
        .filter(|id| pq::marks_file(id))
        .map(|id| pq::split_id(id).0.to_string())
        .collect();
    snap.read(
        ix.meta(),
        value,
        delta::candidates_among(&snap, &covered, ids),
    )
}
