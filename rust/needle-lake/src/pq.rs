//! Indexing a directory of Parquet files on one column, and lookups that read the matching rows.

use crate::{Error, Key, Result, TimeUnit, ValueType, NANOS_PER_DAY};
use needle_index::{Config, Index, Options};
use parquet::basic::{
    ConvertedType, LogicalType, Repetition, TimeUnit as ParquetUnit, Type as PhysicalType,
};
use parquet::file::reader::{ChunkReader, FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use parquet::schema::types::{Type, TypePtr};
use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Name of the index directory inside an indexed Parquet directory (by default).
pub const INDEX_SUBDIR: &str = ".needle-index";
/// File in the index directory recording what was indexed.
const META_FILE: &str = "parquet-column.txt";
/// The version of what [`META_FILE`] describes. Version 1 (no `format` line) hashed dates, times
/// and timestamps as the integer each file stores, whatever its unit; version 2 hashes the
/// instant (the time of day) they mean, and integers of every signedness exactly.
const META_FORMAT: u32 = 2;

/// What an index over a Parquet directory covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParquetMeta {
    /// The indexed column (top-level field name).
    pub column: String,
    /// The column's logical value type.
    pub kind: ValueType,
    /// One partition per row group (true) or per file (false).
    pub row_groups: bool,
}

impl ParquetMeta {
    /// The description as `parquet-column.txt` holds it.
    pub fn to_text(&self) -> String {
        let unit = match self.kind.unit() {
            Some(u) => format!("unit={}\n", u.name()),
            None => String::new(),
        };
        format!(
            "format={META_FORMAT}\ncolumn={}\ntype={}\n{unit}granularity={}\n",
            self.column,
            self.kind.name(),
            if self.row_groups { "row-group" } else { "file" }
        )
    }

    fn store(&self, index_dir: &Path) -> Result<()> {
        let p = index_dir.join(META_FILE);
        std::fs::write(&p, self.to_text())
            .map_err(|e| Error::Other(format!("cannot write {}: {e}", p.display())))
    }

    /// Reads the description stored by [`index_dir`].
    pub fn load(index_dir: &Path) -> Result<ParquetMeta> {
        let p = index_dir.join(META_FILE);
        let text = std::fs::read_to_string(&p).map_err(|e| {
            Error::Other(format!(
                "{} is not a Parquet index ({}: {e})",
                index_dir.display(),
                p.display()
            ))
        })?;
        ParquetMeta::parse(&text, &index_dir.display().to_string())
    }

    /// Parses the description of the index `index` (a directory or URL, for errors).
    pub fn parse(text: &str, index: &str) -> Result<ParquetMeta> {
        let mut kv = BTreeMap::new();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                kv.insert(k.to_string(), v.to_string());
            }
        }
        let bad = || {
            Error::Other(format!(
                "the description of {index} ({META_FILE}) is damaged"
            ))
        };
        let format: u32 = match kv.get("format") {
            Some(f) => f.parse().map_err(|_| bad())?,
            None => 1,
        };
        let column = kv.get("column").ok_or_else(bad)?.clone();
        let type_name = kv.get("type").ok_or_else(bad)?;
        if format > META_FORMAT {
            return Err(Error::Other(format!(
                "{index} was written by a newer version of needle (format {format}; this one reads \
                 up to {META_FORMAT}): use that version, or rebuild the index with this one"
            )));
        }
        if format == 1 && type_name == "int" {
            return Err(Error::Other(format!(
                "{index} was built by an earlier version of needle, which indexed dates, times and \
                 timestamps as the integer each file stores: a lookup would miss the files that \
                 store the same instant in another unit. rebuild it: remove {index} and run \
                 `needle index-parquet DIR --column {column}` (`needle index-delta TABLE --column \
                 {column}` for a Delta table; in Python, needle.index_parquet or \
                 needle.index_delta)"
            )));
        }
        let unit = match kv.get("unit") {
            Some(u) => Some(TimeUnit::from_name(u).ok_or_else(bad)?),
            None => None,
        };
        Ok(ParquetMeta {
            column,
            kind: ValueType::from_name(type_name, unit).ok_or_else(bad)?,
            row_groups: kv.get("granularity").ok_or_else(bad)? == "row-group",
        })
    }
}

/// What one file's column holds, as its Parquet schema declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// UTF-8 strings (`STRING`, `ENUM`, `JSON`).
    Str,
    /// Binary.
    Bytes,
    /// Integers of any width, signed or unsigned.
    Int,
    /// Timestamps (with or without a time zone), in this unit since the epoch.
    Timestamp(TimeUnit),
    /// Dates: days since the epoch.
    Date,
    /// Times of day, in this unit since midnight.
    Time(TimeUnit),
}

impl ColumnKind {
    /// The kind of values the index holds for such a column (with the unit of the file's own
    /// integers).
    pub fn value_type(self) -> ValueType {
        match self {
            ColumnKind::Str => ValueType::String,
            ColumnKind::Bytes => ValueType::Hex,
            ColumnKind::Int => ValueType::Int,
            ColumnKind::Timestamp(u) => ValueType::Timestamp(u),
            ColumnKind::Date => ValueType::Timestamp(TimeUnit::Days),
            ColumnKind::Time(u) => ValueType::Time(u),
        }
    }

    /// The key of the integer `v` stored in such a column.
    fn key_of_int(self, v: i128) -> Key {
        match self {
            ColumnKind::Timestamp(u) => Key::Instant(v * u.nanos()),
            ColumnKind::Date => Key::Instant(v * NANOS_PER_DAY),
            ColumnKind::Time(u) => {
                Key::Time((v * u.nanos()).clamp(i64::MIN as i128, i64::MAX as i128) as i64)
            }
            ColumnKind::Int | ColumnKind::Str | ColumnKind::Bytes => Key::Int(v),
        }
    }
}

/// The kind of values an index holds for a column stored as `kinds` in its files: the kind they
/// share, and for dates, times and timestamps the unit integers are given in: the files' own if
/// they share one, microseconds (DuckDB's and Delta's) if not. Dates count only when the column
/// holds nothing else (days). An error names a file whose kind differs from the others'.
fn common_value_type(column: &str, kinds: &[(ColumnKind, String)]) -> Result<Option<ValueType>> {
    let Some(&(first, _)) = kinds.first() else {
        return Ok(None);
    };
    for (k, name) in kinds {
        if !k.value_type().same_kind(first.value_type()) {
            return Err(Error::Other(format!(
                "column {column:?} is {} in some files and {} in {name}",
                first.value_type().name(),
                k.value_type().name(),
            )));
        }
    }
    let mut units: Vec<TimeUnit> = kinds
        .iter()
        .filter_map(|(k, _)| match k {
            ColumnKind::Timestamp(u) | ColumnKind::Time(u) => Some(*u),
            _ => None,
        })
        .collect();
    units.sort();
    units.dedup();
    let unit = match units.as_slice() {
        [] => TimeUnit::Days,
        [one] => *one,
        _ => TimeUnit::Micros,
    };
    Ok(Some(match first.value_type() {
        ValueType::Timestamp(_) => ValueType::Timestamp(unit),
        ValueType::Time(_) => ValueType::Time(unit),
        other => other,
    }))
}

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

fn open_reader<F: ParquetFiles>(files: &F, rel: &str) -> Result<SerializedFileReader<F::Reader>> {
    open_parquet(files.open(rel)?, &files.name(rel))
}

/// Reads the footer of Parquet file `name` through `reader`.
fn open_parquet<R: ChunkReader + 'static>(
    reader: R,
    name: &str,
) -> Result<SerializedFileReader<R>> {
    SerializedFileReader::new(reader)
        .map_err(|e| Error::Other(format!("{name} is not a readable Parquet file: {e}")))
}

/// The top-level field `column` of a file's schema and what it holds; `None` if the file has no
/// such column.
fn find_column<R: ChunkReader + 'static>(
    reader: &SerializedFileReader<R>,
    name: &str,
    column: &str,
) -> Result<Option<(TypePtr, ColumnKind)>> {
    let root = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema_ptr();
    let Some(field) = root
        .get_fields()
        .iter()
        .find(|f| f.name() == column)
        .cloned()
    else {
        return Ok(None);
    };
    let kind = column_kind(&field)
        .map_err(|why| Error::Other(format!("column {column:?} of {name}: {why}")))?;
    Ok(Some((field, kind)))
}

/// The top-level field `column` of a file's schema and what it holds; an error naming the
/// file's columns if it has no such column.
fn column_of<R: ChunkReader + 'static>(
    reader: &SerializedFileReader<R>,
    name: &str,
    column: &str,
) -> Result<(TypePtr, ColumnKind)> {
    find_column(reader, name, column)?.ok_or_else(|| {
        let root = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .root_schema_ptr();
        let names: Vec<&str> = root.get_fields().iter().map(|f| f.name()).collect();
        Error::Other(format!(
            "{name} has no column {column:?} (columns: {})",
            names.join(", ")
        ))
    })
}

/// What column `column` of the Parquet file `path` holds, or `None` if it has no such column.
pub fn file_column_kind(path: &Path, column: &str) -> Result<Option<ColumnKind>> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::Other(format!("cannot open {name}: {e}")))?;
    let r = open_parquet(file, &name)?;
    Ok(find_column(&r, &name, column)?.map(|(_, k)| k))
}

fn unit_of(u: &ParquetUnit) -> TimeUnit {
    match u {
        ParquetUnit::MILLIS => TimeUnit::Millis,
        ParquetUnit::MICROS => TimeUnit::Micros,
        ParquetUnit::NANOS => TimeUnit::Nanos,
    }
}

/// What a column holds, or why it cannot be indexed.
fn column_kind(field: &Type) -> Result<ColumnKind> {
    if !field.is_primitive() {
        return Err("nested columns are not supported".into());
    }
    let info = field.get_basic_info();
    if info.has_repetition() && info.repetition() == Repetition::REPEATED {
        return Err("repeated columns are not supported".into());
    }
    let logical = info.logical_type_ref();
    let conv = info.converted_type();
    match field.get_physical_type() {
        PhysicalType::FIXED_LEN_BYTE_ARRAY if matches!(logical, Some(LogicalType::Float16)) => Err(
            "FLOAT16 columns are not supported: format v1 defines no canonical encoding for \
             floating-point values (strings, binary and integers are)"
                .into(),
        ),
        PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            let text = matches!(
                logical,
                Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
            ) || matches!(
                conv,
                ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON
            );
            if matches!(logical, Some(LogicalType::Decimal { .. }))
                || conv == ConvertedType::DECIMAL
            {
                return Err("decimal columns are not supported".into());
            }
            Ok(if text {
                ColumnKind::Str
            } else {
                ColumnKind::Bytes
            })
        }
        PhysicalType::INT32 | PhysicalType::INT64 => {
            if matches!(logical, Some(LogicalType::Decimal { .. }))
                || conv == ConvertedType::DECIMAL
            {
                return Err("decimal columns are not supported".into());
            }
            Ok(match (logical, conv) {
                (Some(LogicalType::Timestamp(t)), _) => ColumnKind::Timestamp(unit_of(&t.unit)),
                (Some(LogicalType::Time(t)), _) => ColumnKind::Time(unit_of(&t.unit)),
                (Some(LogicalType::Date), _) => ColumnKind::Date,
                (Some(_), _) => ColumnKind::Int,
                (None, ConvertedType::DATE) => ColumnKind::Date,
                (None, ConvertedType::TIME_MILLIS) => ColumnKind::Time(TimeUnit::Millis),
                (None, ConvertedType::TIME_MICROS) => ColumnKind::Time(TimeUnit::Micros),
                (None, ConvertedType::TIMESTAMP_MILLIS) => ColumnKind::Timestamp(TimeUnit::Millis),
                (None, ConvertedType::TIMESTAMP_MICROS) => ColumnKind::Timestamp(TimeUnit::Micros),
                (None, _) => ColumnKind::Int,
            })
        }
        t => Err(Error::Other(format!(
            "type {t} is not supported (supported: strings, binary, integers, dates, times and \
             timestamps)"
        ))),
    }
}

/// The key of a field of a column that holds `kind` (the stored integer of a date, time or
/// timestamp means an instant or a time of day in the column's unit): `None` for null, an error
/// for a kind of value the index does not take (never dropped silently).
pub fn field_key(f: &Field, kind: ColumnKind) -> Result<Option<Key>> {
    let int = |v: i128| Ok(Some(kind.key_of_int(v)));
    match f {
        Field::Null => Ok(None),
        Field::Str(s) => Ok(Some(Key::Str(s.clone()))),
        Field::Bytes(b) => Ok(Some(Key::Bytes(b.data().to_vec()))),
        Field::Byte(v) => int(*v as i128),
        Field::Short(v) => int(*v as i128),
        Field::Int(v) => int(*v as i128),
        Field::Long(v) => int(*v as i128),
        Field::UByte(v) => int(*v as i128),
        Field::UShort(v) => int(*v as i128),
        Field::UInt(v) => int(*v as i128),
        Field::ULong(v) => int(*v as i128),
        Field::Date(v) | Field::TimeMillis(v) => int(*v as i128),
        Field::TimeMicros(v) | Field::TimestampMillis(v) | Field::TimestampMicros(v) => {
            int(*v as i128)
        }
        other => Err(Error::Other(format!(
            "a value {other} of a kind the index does not take (strings, binary, integers, \
             dates, times and timestamps)"
        ))),
    }
}

fn column_key(row: &Row, column: &str, kind: ColumnKind) -> Result<Option<Key>> {
    match row.get_column_iter().find(|(n, _)| n.as_str() == column) {
        Some((_, f)) => field_key(f, kind),
        None => Ok(None),
    }
}

/// Partition id of a file (path relative to the directory) or of one of its row groups.
pub fn partition_id(rel: &str, row_group: Option<usize>) -> String {
    match row_group {
        Some(rg) => format!("{rel}#rg={rg}"),
        None => rel.to_string(),
    }
}

/// Partition ids grouped by file: each file's row groups (`None` for the whole file), in file
/// order, so each file is opened once.
pub(crate) fn by_file(ids: &[String]) -> BTreeMap<&str, Vec<Option<usize>>> {
    let mut out: BTreeMap<&str, Vec<Option<usize>>> = BTreeMap::new();
    for id in ids {
        let (file, rg) = split_id(id);
        out.entry(file).or_default().push(rg);
    }
    out
}

/// Splits a partition id into the relative file path and the row group, if any.
pub fn split_id(id: &str) -> (&str, Option<usize>) {
    if let Some((file, rg)) = id.rsplit_once("#rg=") {
        if let Ok(n) = rg.parse() {
            return (file, Some(n));
        }
    }
    (id, None)
}

/// The order in which a file's row groups enter the index: the last first, row group 0 last.
/// An entry of row group 0 (or of the whole file) marks the file as indexed whole (see
/// [`marks_file`]): the index shows its changes in the order they were made, so a reader that
/// sees the marker sees every row group, and a reader of an index that a crash or a concurrent
/// run left half-way through a file reads that file whole instead of missing rows.
pub fn append_order(row_groups: usize) -> impl Iterator<Item = usize> {
    (0..row_groups).rev()
}

/// Whether partition `id` marks its file as indexed whole: the file itself, or its row group 0
/// (the last of the file's row groups to be added, the first to be removed).
pub fn marks_file(id: &str) -> bool {
    matches!(split_id(id).1, None | Some(0))
}

/// Partition ids in the order they leave the index: every file's marker first, so a file is
/// no longer taken as indexed before any of its row groups is gone.
pub fn removal_order(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_by_cached_key(|id| (!marks_file(id), id.clone()));
    ids
}

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
fn index_path_of(dir: &Path, o: &IndexParquetOptions) -> PathBuf {
    o.index.clone().unwrap_or_else(|| dir.join(INDEX_SUBDIR))
}

/// Paths of files under `dir`, relative to it.
fn relative(dir: &Path, files: &[PathBuf]) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;

    fn write_file(path: &Path, values: std::ops::Range<i64>) {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(values))],
        )
        .unwrap();
        let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// Whole files indexed on column `k`, in a small index.
    fn options_on_k() -> IndexParquetOptions {
        IndexParquetOptions {
            column: "k".into(),
            row_groups: false,
            buckets: Some(64),
            fingerprint_bits: 16,
            index: None,
        }
    }

    #[test]
    fn a_first_build_ends_in_one_segment_and_later_runs_merge_only_when_segments_pile_up() {
        let dir = tempfile::tempdir().unwrap();
        let o = options_on_k();
        // A memtable of one byte: every file's filter is flushed as a segment of its own.
        let tiny = || Options {
            flush_bytes: 1,
            sync: false,
            ..Options::default()
        };
        let segments = || {
            Index::open(dir.path().join(INDEX_SUBDIR), Options::default())
                .unwrap()
                .segment_count()
        };
        let index_all = || {
            let files = parquet_files(dir.path()).unwrap();
            index_files_with(
                &LocalFiles(dir.path()),
                &dir.path().join(INDEX_SUBDIR),
                &relative(dir.path(), &files),
                &o,
                tiny(),
                Missing::Refused,
                |_, _, _| {},
            )
            .unwrap()
        };
        for i in 0..4 {
            write_file(
                &dir.path().join(format!("f{i}.parquet")),
                i * 100..i * 100 + 100,
            );
        }
        let r = index_all();
        assert_eq!(r.added, 4);
        assert_eq!(segments(), 1);

        write_file(&dir.path().join("f4.parquet"), 400..500);
        let r = index_all();
        assert_eq!((r.added, r.unchanged), (1, 4));
        assert_eq!(
            segments(),
            2,
            "one new file adds a segment, without rewriting the index"
        );

        let ix = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        for (v, file) in [(7, "f0.parquet"), (450, "f4.parquet")] {
            assert!(ix
                .query(&needle_index::Value::Int(v))
                .unwrap()
                .contains(&file.to_string()));
        }
    }

    #[test]
    fn a_lookup_answers_while_a_writer_holds_the_index() {
        let dir = tempfile::tempdir().unwrap();
        write_file(&dir.path().join("f0.parquet"), 0..100);
        let o = options_on_k();
        let files = parquet_files(dir.path()).unwrap();
        index_files_with(
            &LocalFiles(dir.path()),
            &dir.path().join(INDEX_SUBDIR),
            &relative(dir.path(), &files),
            &o,
            Options::default(),
            Missing::Refused,
            |_, _, _| {},
        )
        .unwrap();
        let _writer = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        let found = lookup(dir.path(), None, "42").expect("a lookup takes no lock");
        assert_eq!(found.rows.len(), 1);
    }
}
