//! [`NeedleTable`]: a directory of Parquet files as a DataFusion table, scanned through the index.

use crate::predicate::values_of;
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use needle_index::{Index, Options};
use needle_lake::pq::{self, ParquetMeta, INDEX_SUBDIR};
use needle_lake::Key;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A directory of Parquet files indexed by `needle index-parquet`, as a DataFusion table.
///
/// A scan whose filters say the indexed column equals one of a few values (`=`, `IN`, `OR`s of
/// those) reads only the files the index names for those values (only their row groups, for an
/// index built with `--row-groups`), plus any file the index does not cover (added after it was
/// built), so no row is missed. DataFusion's own pruning and filtering then run on those files
/// as on any Parquet table; the index only chooses the files. Every other scan reads every file,
/// as a [`ListingTable`] over the directory does.
///
/// The index is opened again for each scan (a snapshot, no lock), so a query sees the index as
/// its last run of `needle index-parquet` left it, and the files as they are when it runs.
#[derive(Debug)]
pub struct NeedleTable {
    dir: PathBuf,
    index_dir: PathBuf,
    meta: ParquetMeta,
    /// Every file of the directory: the schema, the options, and the scans the index cannot narrow.
    all: Arc<ListingTable>,
    counters: Counters,
}

/// What the scans of a [`NeedleTable`] have read so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ScanStats {
    /// Scans the index narrowed.
    pub by_index: u64,
    /// Scans that read every file (no equality or `IN` on the indexed column).
    pub full: u64,
    /// Files handed to DataFusion by the scans the index narrowed.
    pub files_read: u64,
    /// Of those, files the index does not cover (read whole, whatever the values).
    pub files_not_indexed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    by_index: AtomicU64,
    full: AtomicU64,
    files_read: AtomicU64,
    files_not_indexed: AtomicU64,
}

fn df_err(e: needle_lake::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl NeedleTable {
    /// Opens the Parquet directory `dir` and its index (`index`, by default `dir/.needle-index`),
    /// reading the schema of its files as [`SessionContext::register_parquet`] does (the schemas
    /// of all files, merged).
    pub async fn open(
        ctx: &SessionContext,
        dir: impl AsRef<Path>,
        index: Option<&Path>,
    ) -> DfResult<NeedleTable> {
        let dir = std::path::absolute(dir.as_ref())?;
        let index_dir = index
            .map(std::path::absolute)
            .transpose()?
            .unwrap_or_else(|| dir.join(INDEX_SUBDIR));
        let meta = ParquetMeta::load(&index_dir).map_err(df_err)?;
        let state = ctx.state();
        let url = ListingTableUrl::parse(format!("{}/", dir.display()))?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let schema = options.infer_schema(&state, &url).await?;
        if schema.field_with_name(&meta.column).is_err() {
            return Err(DataFusionError::Plan(format!(
                "the index {} is on column {:?}, which no file of {} has",
                index_dir.display(),
                meta.column,
                dir.display()
            )));
        }
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .with_schema(schema);
        let all = ListingTable::try_new(config)?
            .with_cache(state.runtime_env().cache_manager.get_file_statistic_cache());
        Ok(NeedleTable {
            dir,
            index_dir,
            meta,
            all: Arc::new(all),
            counters: Counters::default(),
        })
    }

    /// The indexed column.
    pub fn column(&self) -> &str {
        &self.meta.column
    }

    /// What the scans so far have read.
    pub fn stats(&self) -> ScanStats {
        let c = &self.counters;
        ScanStats {
            by_index: c.by_index.load(Ordering::Relaxed),
            full: c.full.load(Ordering::Relaxed),
            files_read: c.files_read.load(Ordering::Relaxed),
            files_not_indexed: c.files_not_indexed.load(Ordering::Relaxed),
        }
    }

    /// The files (relative paths) that may hold `values`, each with the row groups to read
    /// (`None`: the whole file), and how many of them the index does not cover.
    fn candidates(&self, values: &[Key]) -> DfResult<(BTreeMap<String, Option<RowGroups>>, u64)> {
        // A snapshot takes no lock: a query during an indexing run answers instead of failing.
        let ix = Index::open_snapshot(&self.index_dir, Options::default())
            .map_err(|e| df_err(e.into()))?;
        // The files indexed whole (their mark is in), and their row groups.
        let mut covered = BTreeSet::new();
        let mut row_groups: BTreeMap<String, usize> = BTreeMap::new();
        for p in ix.partitions().into_iter().filter(|p| !p.removed) {
            let (file, rg) = pq::split_id(&p.id);
            if pq::marks_file(&p.id) {
                covered.insert(file.to_string());
            }
            if let Some(g) = rg {
                let n = row_groups.entry(file.to_string()).or_default();
                *n = (*n).max(g + 1);
            }
        }
        let mut found: BTreeMap<String, Option<RowGroups>> = BTreeMap::new();
        for v in values {
            for id in ix.query_hash(v.hash()).map_err(|e| df_err(e.into()))? {
                let (file, rg) = pq::split_id(&id);
                let entry = found.entry(file.to_string()).or_insert_with(|| {
                    rg.map(|_| RowGroups {
                        count: row_groups.get(file).copied().unwrap_or(0),
                        read: BTreeSet::new(),
                    })
                });
                if let (Some(groups), Some(g)) = (entry.as_mut(), rg) {
                    groups.read.insert(g);
                }
            }
        }
        drop(ix);
        // The files as they are now: the candidates still there, and every file the index does
        // not cover (added, or indexed in part by an interrupted run), read whole.
        let mut out = BTreeMap::new();
        let mut not_indexed = 0;
        for path in pq::parquet_files(&self.dir).map_err(df_err)? {
            let rel = pq::file_id(&self.dir, &path);
            if !covered.contains(&rel) {
                out.insert(rel, None);
                not_indexed += 1;
            } else if let Some(groups) = found.remove(&rel) {
                out.insert(rel, groups);
            }
        }
        Ok((out, not_indexed))
    }
}

/// The row groups of one file a scan reads, of `count`.
#[derive(Debug)]
struct RowGroups {
    count: usize,
    read: BTreeSet<usize>,
}

#[async_trait]
impl TableProvider for NeedleTable {
    fn schema(&self) -> SchemaRef {
        self.all.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Inexact: the index narrows the files, DataFusion still filters their rows.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let values = filters
            .iter()
            .filter_map(|f| values_of(f, &self.meta.column, self.meta.kind))
            .min_by_key(Vec::len);
        let Some(values) = values else {
            self.counters.full.fetch_add(1, Ordering::Relaxed);
            return self.all.scan(state, projection, filters, limit).await;
        };
        let (files, not_indexed) = self.candidates(&values)?;
        let c = &self.counters;
        c.by_index.fetch_add(1, Ordering::Relaxed);
        c.files_read
            .fetch_add(files.len() as u64, Ordering::Relaxed);
        c.files_not_indexed
            .fetch_add(not_indexed, Ordering::Relaxed);
        if files.is_empty() {
            let schema = datafusion::common::project_schema(&self.schema(), projection)?;
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        let urls = files
            .keys()
            .map(|rel| ListingTableUrl::parse(self.dir.join(rel).display().to_string()))
            .collect::<DfResult<Vec<_>>>()?;
        let config = ListingTableConfig::new_with_multi_paths(urls)
            .with_listing_options(self.all.options().clone())
            .with_schema(self.all.schema());
        let candidates = ListingTable::try_new(config)?
            .with_cache(state.runtime_env().cache_manager.get_file_statistic_cache());
        let plan = candidates.scan(state, projection, filters, limit).await?;
        if files.values().all(Option::is_none) {
            return Ok(plan);
        }
        read_row_groups(plan, &self.dir, &files)
    }
}

/// `plan` (a Parquet scan of whole files) reading only the row groups `files` names.
fn read_row_groups(
    plan: Arc<dyn ExecutionPlan>,
    dir: &Path,
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
            // Object store paths have no leading `/`; the directory's own path does.
            let path = Path::new("/").join(file.object_meta.location.as_ref());
            if let Some(Some(rg)) = files.get(&pq::file_id(dir, &path)) {
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
