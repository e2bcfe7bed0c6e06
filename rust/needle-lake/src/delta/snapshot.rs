//! One version of a Delta table read from its transaction log by the Delta kernel: its live
//! files, partition values, schema and deletion vectors, and the rows of its candidate files;
//! on a local file system or on object storage.

use super::load_errors::{explain_load_error, with_bad_json};
use crate::object::{Location, RemoteFiles};
use crate::pq::{self, LookupResult, ParquetMeta};
use crate::{Error, Key, Result, TimeUnit, ValueType};
use arrow_schema::Schema as ArrowSchema;
use delta_kernel::engine::arrow_conversion::TryFromKernel;
use delta_kernel::object_store::local::LocalFileSystem;
use delta_kernel::scan::state::{DvInfo, ScanFile};
use delta_kernel::schema::{DataType, PrimitiveType, SchemaRef};
use delta_kernel::table_features::ColumnMappingMode;
use delta_kernel::{Engine, Snapshot};
use delta_kernel_default_engine::executor::tokio::TokioBackgroundExecutor;
use delta_kernel_default_engine::{DefaultEngine, DefaultEngineBuilder};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use url::Url;

/// Partition values of a data file, by column; `None` is a null.
pub type PartitionValues = BTreeMap<String, Option<String>>;

/// One version of a Delta table: its live data files and what the reader needs to know of its
/// metadata.
#[derive(Debug, Clone)]
pub struct DeltaSnapshot {
    /// The table's folder; for a table on object storage, its URL (as messages name it).
    pub root: PathBuf,
    /// The version loaded.
    pub version: u64,
    /// Live data files by path relative to `root` (decoded from the log's URI form), with
    /// their partition values.
    pub files: BTreeMap<String, PartitionValues>,
    /// The table's partition columns.
    pub partition_columns: Vec<String>,
    /// The table's schema, as the kernel reads it from the log.
    pub schema: SchemaRef,
    /// The deletion vectors of the live files that carry one (rows deleted without rewriting
    /// the file), by path relative to `root`; read when a lookup finds rows in the file.
    pub deletion_vectors: BTreeMap<String, DvInfo>,
    /// The length of every live file, as the log records it (so a file on object storage is
    /// read without asking its length first).
    pub sizes: BTreeMap<String, u64>,
    /// The table as a URL of a directory, which the log's relative paths resolve against.
    url: Url,
    storage: Storage,
}

/// Where a table's files are, and the kernel's engine that reads them.
#[derive(Clone)]
enum Storage {
    Local,
    Remote {
        location: Location,
        engine: Arc<DefaultEngine<TokioBackgroundExecutor>>,
    },
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Storage::Local => f.write_str("Local"),
            Storage::Remote { location, .. } => write!(f, "Remote({location:?})"),
        }
    }
}

impl DeltaSnapshot {
    /// Loads version `version` (default: the latest) of the table in `root`, through the Delta
    /// kernel: the newest checkpoint at or before it and the commits after, as the protocol
    /// specifies (JSON commits, classic, multi-part and V2 checkpoints, log compaction).
    ///
    /// Errors name what failed: not a Delta table, a version that does not exist or whose log
    /// was cleaned up, an unreadable commit or checkpoint, a table feature the kernel does not
    /// read, what Needle does not read (column mapping), a data file outside the table's folder.
    pub fn load(root: &Path, version: Option<u64>) -> Result<DeltaSnapshot> {
        if !root.join("_delta_log").is_dir() {
            return Err(Error::Other(format!(
                "{} is not a Delta table (no _delta_log folder)",
                root.display()
            )));
        }
        Self::load_from(root, table_url(root)?, Storage::Local, version)
    }

    /// [`DeltaSnapshot::load`] for a table on object storage (`s3://bucket/table`): the log and
    /// the deletion vectors are read through the same store and credentials as the files.
    ///
    /// Whether the prefix is a Delta table at all is asked only when the log cannot be read (a
    /// listing of `_delta_log/`), not in every lookup: the kernel lists the log anyway.
    pub fn load_from_store(table: &Location, version: Option<u64>) -> Result<DeltaSnapshot> {
        let text = format!("{table:?}/");
        let url =
            Url::parse(&text).map_err(|e| Error::Other(format!("{text} is not a URL: {e}")))?;
        let engine = Arc::new(DefaultEngineBuilder::new(table.store()).build());
        let storage = Storage::Remote {
            location: table.clone(),
            engine,
        };
        let loaded = Self::load_from(&PathBuf::from(format!("{table:?}")), url, storage, version);
        match loaded {
            Err(_) if !table.child("_delta_log")?.exists_below()? => Err(Error::Other(format!(
                "{table:?} is not a Delta table (no objects below {})",
                table.url_of("_delta_log/")
            ))),
            loaded => loaded,
        }
    }

    fn load_from(
        root: &Path,
        url: Url,
        storage: Storage,
        version: Option<u64>,
    ) -> Result<DeltaSnapshot> {
        let table = root.display();
        let engine = storage.engine();
        let mut builder = Snapshot::builder_for(url.as_str());
        if let Some(v) = version {
            builder = builder.at_version(v);
        }
        let snapshot = builder
            .build(engine)
            .map_err(|e| explain_load_error(root, &url, engine, version, e))?;
        let config = snapshot.table_configuration();
        if config.column_mapping_mode() != ColumnMappingMode::None {
            return Err(Error::Other(format!(
                "{table} uses column mapping, which this version does not read"
            )));
        }
        let partition_columns = config.logical_partition_columns().to_vec();
        let schema = snapshot.schema();
        let version = snapshot.version();
        let kernel_err = |e: delta_kernel::KernelError| {
            with_bad_json(
                root,
                format!("cannot read version {version} of {table}: {e}"),
            )
        };
        let scan = snapshot.scan_builder().build().map_err(kernel_err)?;
        let mut found: Vec<ScanFile> = Vec::new();
        for meta in scan.scan_metadata(engine).map_err(kernel_err)? {
            found = meta
                .map_err(kernel_err)?
                .visit_scan_files(found, |files, f| files.push(f))
                .map_err(kernel_err)?;
        }
        let mut files = BTreeMap::new();
        let mut deletion_vectors = BTreeMap::new();
        let mut sizes = BTreeMap::new();
        for f in found {
            let rel = relative_path(root, &url, &f.path)?;
            sizes.insert(rel.clone(), f.size.max(0) as u64);
            if f.dv_info.has_vector() {
                deletion_vectors.insert(rel.clone(), f.dv_info.clone());
            }
            let values: PartitionValues = partition_columns
                .iter()
                .map(|c| (c.clone(), f.partition_values.get(c).cloned()))
                .collect();
            files.insert(rel, values);
        }
        Ok(DeltaSnapshot {
            root: root.to_path_buf(),
            version,
            files,
            partition_columns,
            schema,
            deletion_vectors,
            sizes,
            url,
            storage,
        })
    }

    /// The table's schema as Arrow types, by the kernel's own mapping of Delta types (the one
    /// its readers use: `timestamp` is microseconds in UTC, `timestamp_ntz` without a zone).
    pub fn arrow_schema(&self) -> Result<ArrowSchema> {
        ArrowSchema::try_from_kernel(self.schema.as_ref()).map_err(|e| {
            Error::Other(format!(
                "{}: the table's schema has no Arrow form: {e}",
                self.root.display()
            ))
        })
    }

    /// The rows (0-based positions in the file) that the deletion vector of the live file
    /// `file` hides, sorted; none for a file without one.
    pub fn deleted_rows(&self, file: &str) -> Result<Vec<u64>> {
        let Some(dv) = self.deletion_vectors.get(file) else {
            return Ok(Vec::new());
        };
        let mut rows = dv
            .get_row_indexes(self.storage.engine(), &self.url)
            .map_err(|e| {
                Error::Other(format!(
                    "cannot read the deletion vector of {file} in version {} of {}: {e}",
                    self.version,
                    self.root.display()
                ))
            })?
            .unwrap_or_default();
        rows.sort_unstable();
        Ok(rows)
    }

    /// `r` without the rows deletion vectors hide (each vector read once).
    fn without_deleted(&self, mut r: LookupResult) -> Result<LookupResult> {
        let mut hidden: HashMap<String, HashSet<u64>> = HashMap::new();
        for row in &r.rows {
            if self.deletion_vectors.contains_key(&row.file) && !hidden.contains_key(&row.file) {
                let rows = self.deleted_rows(&row.file)?;
                hidden.insert(row.file.clone(), rows.into_iter().collect());
            }
        }
        r.rows
            .retain(|row| !hidden.get(&row.file).is_some_and(|h| h.contains(&row.row)));
        Ok(r)
    }

    /// Refuses a column the table does not have at this version ([`Error::NoSuchColumn`]: one
    /// that schema evolution added later is not there at the versions before it), and a partition
    /// column (Delta's own partition pruning finds its files).
    pub fn check_column(&self, column: &str) -> Result<()> {
        if self.schema.field(column).is_none() {
            let columns: Vec<&str> = self.schema.field_names().map(String::as_str).collect();
            return Err(Error::NoSuchColumn {
                table: self.root.clone(),
                version: self.version,
                column: column.to_string(),
                columns: columns.join(", "),
            });
        }
        if self.partition_columns.iter().any(|c| c == column) {
            return Err(Error::Other(format!(
                "{column:?} is a partition column of {}: Delta's own partition pruning finds its files",
                self.root.display()
            )));
        }
        Ok(())
    }

    /// The kind of values the index holds for `column`, as the table's schema types it (the
    /// integers of Delta's dates are days, of its timestamps microseconds); `None` for a type
    /// the index does not take.
    pub fn declared_kind(&self, column: &str) -> Option<ValueType> {
        match self.schema.field(column)?.data_type() {
            DataType::Primitive(p) => match p {
                PrimitiveType::String => Some(ValueType::String),
                PrimitiveType::Binary => Some(ValueType::Hex),
                PrimitiveType::Long
                | PrimitiveType::Integer
                | PrimitiveType::Short
                | PrimitiveType::Byte => Some(ValueType::Int),
                PrimitiveType::Date => Some(ValueType::Timestamp(TimeUnit::Days)),
                PrimitiveType::Timestamp | PrimitiveType::TimestampNtz => {
                    Some(ValueType::Timestamp(TimeUnit::Micros))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// An error if a file of `candidates` (partition ids) that this version reads was removed
    /// ([`Error::FilesRemoved`]); what a failed read of them is reported as. On object storage
    /// each is asked for (a request each, in one round trip).
    pub fn check_files<'a>(&self, candidates: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let live: Vec<&str> = candidates
            .into_iter()
            .map(|id| pq::split_id(id).0)
            .filter(|file| self.files.contains_key(*file))
            .collect();
        let present: Vec<bool> = match &self.storage {
            Storage::Local => live.iter().map(|f| self.root.join(f).exists()).collect(),
            Storage::Remote { location, .. } => location.exist(&live)?,
        };
        for (file, present) in live.into_iter().zip(present) {
            if !present {
                return Err(Error::FilesRemoved {
                    table: self.root.clone(),
                    version: self.version,
                    file: file.to_string(),
                });
            }
        }
        Ok(())
    }

    /// The rows of the partitions `candidates` of this version whose column equals `value`,
    /// without those deletion vectors hide. A file of the version that is gone is reported as
    /// [`Error::FilesRemoved`].
    pub(crate) fn read(
        &self,
        meta: &ParquetMeta,
        value: &Key,
        candidates: Vec<String>,
    ) -> Result<LookupResult> {
        let ids = candidates.clone();
        let read = match &self.storage {
            Storage::Local => {
                self.check_files(candidates.iter().map(String::as_str))?;
                pq::read_rows(&pq::LocalFiles(&self.root), meta, value, candidates)
            }
            // The files' lengths from the log: each candidate read in one or two round trips,
            // all of them at once (a missing one is looked for only if the read fails).
            Storage::Remote { location, .. } => {
                // The candidates' lengths only, not a copy of every live file's.
                let sizes = candidates.iter().filter_map(|id| {
                    let file = pq::split_id(id).0;
                    Some((file.to_string(), *self.sizes.get(file)?))
                });
                let files = RemoteFiles::new(location.clone()).knowing(sizes);
                files
                    .prefetch(&candidates)
                    .and_then(|()| pq::read_rows(&files, meta, value, candidates))
            }
        };
        match read {
            Ok(r) => self.without_deleted(r),
            // Removed while it was read.
            Err(e) => Err(self
                .check_files(ids.iter().map(String::as_str))
                .err()
                .unwrap_or(e)),
        }
    }

    /// The live data files, as paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.keys().map(|rel| self.root.join(rel)).collect()
    }
}

impl Storage {
    /// The kernel's engine: on the local file system, one shared by every table (it runs one
    /// background thread for its I/O); on object storage, the table's own.
    fn engine(&self) -> &dyn Engine {
        static LOCAL: LazyLock<DefaultEngine<TokioBackgroundExecutor>> =
            LazyLock::new(|| DefaultEngineBuilder::new(Arc::new(LocalFileSystem::new())).build());
        match self {
            Storage::Local => &*LOCAL,
            Storage::Remote { engine, .. } => engine.as_ref(),
        }
    }
}

/// The table's folder as the `file://` URL of a directory (the form the kernel resolves the
/// log's relative paths against).
fn table_url(root: &Path) -> Result<Url> {
    let abs = std::path::absolute(root)
        .map_err(|e| Error::Other(format!("cannot resolve the path {}: {e}", root.display())))?;
    Url::from_directory_path(&abs)
        .map_err(|()| Error::Other(format!("{} cannot be written as a file URL", abs.display())))
}

/// A data file's path as the log writes it (a URI, relative to the table and percent-encoded,
/// or absolute) as a path relative to the table (`url`, a directory's URL), decoded; a file
/// outside it is refused.
fn relative_path(root: &Path, url: &Url, log_path: &str) -> Result<String> {
    let outside = || {
        Error::Other(format!(
            "{} holds a file outside its folder ({log_path}), which this version does not read",
            root.display()
        ))
    };
    let file = url.join(log_path).map_err(|_| outside())?;
    if file.scheme() != url.scheme() || file.authority() != url.authority() {
        return Err(outside());
    }
    let rel = file.path().strip_prefix(url.path()).ok_or_else(outside)?;
    if rel.is_empty() {
        return Err(outside());
    }
    percent_encoding::percent_decode_str(rel)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| {
            Error::Other(format!(
                "the data file path {log_path:?} is not UTF-8 once decoded"
            ))
        })
}
