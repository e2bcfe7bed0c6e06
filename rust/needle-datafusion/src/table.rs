//! [`NeedleTable`]: a directory of Parquet files as a DataFusion table, scanned through the index.

use crate::narrow::{read_row_groups, Held, RowGroups};
use crate::predicate::values_of;
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use needle_index::{Index, Options};
use needle_lake::object::{Location, RemoteFiles, RemoteIndex};
use needle_lake::pq::{self, ParquetMeta, INDEX_SUBDIR};
use needle_lake::Key;
use object_store::path::Path as ObjectPath;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A directory of Parquet files indexed by `needle index-parquet`, as a DataFusion table: on a
/// local disk ([`NeedleTable::open`]) or below a prefix of an object store
/// ([`NeedleTable::open_url`]).
///
/// A scan whose filters say the indexed column equals one of a few values (`=`, `IN`, `OR`s of
/// those) reads only the files the index names for those values (only their row groups, for an
/// index built with `--row-groups`), plus any file the index does not cover (added after it was
/// built), so no row is missed. DataFusion's own pruning and filtering then run on those files
/// as on any Parquet table; the index only chooses the files. Every other scan reads every file,
/// as a [`ListingTable`] over the directory does.
///
/// The index is opened again for each scan (a snapshot, no lock; on an object store, its current
/// publication), so a query sees the index as its last run of `needle index-parquet` left it,
/// and the files as they are when it runs.
#[derive(Debug)]
pub struct NeedleTable {
    source: Source,
    meta: ParquetMeta,
    /// Every file of the directory: the schema, the options, and the scans the index cannot narrow.
    all: Arc<ListingTable>,
    counters: Counters,
}

/// Where the files and the index are.
#[derive(Debug)]
enum Source {
    /// A local directory and its index's directory.
    Local { dir: PathBuf, index_dir: PathBuf },
    /// A prefix of an object store and its published index.
    Remote { table: Location, index: Location },
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
        let url = format!("{}/", dir.display());
        NeedleTable::with_source(ctx, Source::Local { dir, index_dir }, meta, &url).await
    }

    /// Opens the Parquet files below `table`, a prefix of an object store (`s3://bucket/events`;
    /// `gs://` and `az://` too), and the index `needle index-parquet` published for them
    /// (`index`, by default `TABLE/.needle-index`). The store is configured from the environment
    /// as its own tools are (for S3: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
    /// `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`).
    pub async fn open_url(
        ctx: &SessionContext,
        table: &str,
        index: Option<&str>,
    ) -> DfResult<NeedleTable> {
        let table = Location::parse(table).map_err(df_err)?;
        let index = index.map(Location::parse).transpose().map_err(df_err)?;
        NeedleTable::open_location(ctx, table, index).await
    }

    /// [`NeedleTable::open_url`] with the stores opened by the caller (for example with
    /// [`Location::with_options`], credentials not from the environment). The table's store is
    /// registered with `ctx` for its bucket, so DataFusion reads the files through the same
    /// client.
    pub async fn open_location(
        ctx: &SessionContext,
        table: Location,
        index: Option<Location>,
    ) -> DfResult<NeedleTable> {
        let index = match index {
            Some(l) => l,
            None => table.child(INDEX_SUBDIR).map_err(df_err)?,
        };
        ctx.register_object_store(&table.store_url().map_err(df_err)?, table.store());
        let opened = index.clone();
        let meta = blocking(move || RemoteIndex::open(&opened).map(|ix| ix.meta().clone())).await?;
        let url = table.url_of(""); // the prefix with its trailing `/`, as a directory
        NeedleTable::with_source(ctx, Source::Remote { table, index }, meta, &url).await
    }

    async fn with_source(
        ctx: &SessionContext,
        source: Source,
        meta: ParquetMeta,
        url: &str,
    ) -> DfResult<NeedleTable> {
        let state = ctx.state();
        let url = ListingTableUrl::parse(url)?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let schema = options.infer_schema(&state, &url).await?;
        if schema.field_with_name(&meta.column).is_err() {
            return Err(DataFusionError::Plan(format!(
                "the index {} is on column {:?}, which no file of {} has",
                source.index_name(),
                meta.column,
                url
            )));
        }
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .with_schema(schema);
        let all = ListingTable::try_new(config)?
            .with_cache(state.runtime_env().cache_manager.get_file_statistic_cache());
        Ok(NeedleTable {
            source,
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
    async fn candidates(
        &self,
        values: &[Key],
    ) -> DfResult<(BTreeMap<String, Option<RowGroups>>, u64)> {
        match &self.source {
            Source::Local { dir, index_dir } => {
                // A snapshot takes no lock: a query during an indexing run answers instead of failing.
                let ix = Index::open_snapshot(index_dir, Options::default())
                    .map_err(|e| df_err(e.into()))?;
                let mut found = Vec::new();
                for v in values {
                    found.extend(ix.query_hash(v.hash()).map_err(|e| df_err(e.into()))?);
                }
                let held = Held::of(
                    ix.partitions()
                        .iter()
                        .filter(|p| !p.removed)
                        .map(|p| p.id.as_str()),
                );
                drop(ix);
                let files = pq::parquet_files(dir)
                    .map_err(df_err)?
                    .iter()
                    .map(|path| pq::file_id(dir, path))
                    .collect();
                Ok(held.narrow(found, files))
            }
            Source::Remote { table, index } => {
                // The index's two round trips and the listing at once.
                let (index, values) = (index.clone(), values.to_vec());
                let asked = blocking(move || {
                    let ix = RemoteIndex::open(&index)?;
                    let mut found = Vec::new();
                    for v in &values {
                        found.extend(ix.candidates(v)?);
                    }
                    Ok((Held::of(ix.partition_ids()), found))
                });
                let files = RemoteFiles::new(table.clone());
                let listed = blocking(move || files.list());
                let ((held, found), files) = futures::try_join!(asked, listed)?;
                Ok(held.narrow(found, files))
            }
        }
    }

    /// The file (relative path) of an object DataFusion scans.
    fn file_of(&self, object: &ObjectPath) -> Option<String> {
        match &self.source {
            // Object store paths of local files have no leading `/`; the directory's own path does.
            Source::Local { dir, .. } => {
                Some(pq::file_id(dir, &Path::new("/").join(object.as_ref())))
            }
            Source::Remote { table, .. } => table.relative(object),
        }
    }

    /// The URL DataFusion reads file `rel` at.
    fn url_of(&self, rel: &str) -> DfResult<ListingTableUrl> {
        match &self.source {
            Source::Local { dir, .. } => {
                ListingTableUrl::parse(dir.join(rel).display().to_string())
            }
            Source::Remote { table, .. } => ListingTableUrl::parse(table.url_of(rel)),
        }
    }
}

impl Source {
    fn index_name(&self) -> String {
        match self {
            Source::Local { index_dir, .. } => index_dir.display().to_string(),
            Source::Remote { index, .. } => index.url_of(""),
        }
    }
}

/// Runs `f`, which blocks on the object store's own runtime, off DataFusion's.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> needle_lake::Result<T> + Send + 'static,
) -> DfResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .map_err(df_err)
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
        let (files, not_indexed) = self.candidates(&values).await?;
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
            .map(|rel| self.url_of(rel))
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
        read_row_groups(plan, |object| self.file_of(object), &files)
    }
}
