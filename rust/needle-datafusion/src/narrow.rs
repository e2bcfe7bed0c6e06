//! What a narrowed scan reads: of the table's files, the candidates the index names (only their
//! candidate row groups, for an index by row group) and every file the index does not cover.

use datafusion::common::Result as DfResult;
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use needle_lake::pq;
use object_store::path::Path as ObjectPath;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What an index holds: the files it covers whole (their mark is in), and how many row groups
/// each file indexed by row group has.
pub(crate) struct Held {
    covered: BTreeSet<String>,
    row_groups: BTreeMap<String, usize>,
}

impl Held {
    pub(crate) fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Held {
        let mut held = Held {
            covered: BTreeSet::new(),
            row_groups: BTreeMap::new(),
        };
        for id in ids {
            let (file, rg) = pq::split_id(id);
            if pq::marks_file(id) {
                held.covered.insert(file.to_string());
            }
            if let Some(g) = rg {
                let n = held.row_groups.entry(file.to_string()).or_default();
                *n = (*n).max(g + 1);
            }
        }
        held
    }

    /// The files to read, of `files` (the table's files now), for candidate partitions `found`:
    /// the candidates still there, and every file the index does not cover (added, or indexed
    /// in part by an interrupted run), read whole; and how many of those there are.
    pub(crate) fn narrow(
        &self,
        found: Vec<String>,
        files: Vec<String>,
    ) -> (BTreeMap<String, Option<RowGroups>>, u64) {
        let mut candidates: BTreeMap<String, Option<RowGroups>> = BTreeMap::new();
        for id in &found {
            let (file, rg) = pq::split_id(id);
            let entry = candidates.entry(file.to_string()).or_insert_with(|| {
                rg.map(|_| RowGroups {
                    count: self.row_groups.get(file).copied().unwrap_or(0),
                    read: BTreeSet::new(),
                })
            });
            if let (Some(groups), Some(g)) = (entry.as_mut(), rg) {
                groups.read.insert(g);
            }
        }
        let mut out = BTreeMap::new();
        let mut not_indexed = 0;
        for rel in files {
            if !self.covered.contains(&rel) {
                out.insert(rel, None);
                not_indexed += 1;
            } else if let Some(groups) = candidates.remove(&rel) {
                out.insert(rel, groups);
            }
        }
        (out, not_indexed)
    }
}

/// The row groups of one file a scan reads, of `count`.
#[derive(Debug)]
pub(crate) struct RowGroups {
    count: usize,
    read: BTreeSet<usize>,
}

/// `plan` (a Parquet scan of whole files) reading only the row groups `files` names.
pub(crate) fn read_row_groups(
    plan: Arc<dyn ExecutionPlan>,
    file_of: impl Fn(&ObjectPath) -> Option<String>,
    files: &BTreeMap<String, Option<RowGroups>>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let Some(exec) = plan.downcast_ref::<DataSourceExec>() else {
        return Ok(plan);
    };
    let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>() else {
        return Ok(plan);
    };
    let mut groups = Vec::with_capacity(config.file_groups.len());
    for group in &config.file_groups {
        let mut out = Vec::with_capacity(group.len());
        for file in group.iter() {
            let mut file = file.clone();
            let rel = file_of(&file.object_meta.location);
            if let Some(Some(rg)) = rel.and_then(|rel| files.get(&rel)) {
                let mut access = ParquetAccessPlan::new_none(rg.count);
                for &g in rg.read.iter().filter(|&&g| g < rg.count) {
                    access.scan(g);
                }
                file = file.with_extension(access);
                // The file's statistics describe every row group: no longer exact.
                file.statistics = file
                    .statistics
                    .map(|s| Arc::new(s.as_ref().clone().to_inexact()));
            }
            out.push(file);
        }
        groups.push(FileGroup::new(out));
    }
    let narrowed = FileScanConfigBuilder::from(config.clone())
        .with_file_groups(groups)
        .with_statistics(config.statistics().to_inexact())
        .build();
    Ok(DataSourceExec::from_data_source(narrowed))
}
