//! Indexing a directory of Parquet files on one column, and lookups that read the matching rows.

use crate::ValueType;
use crate::{Error, Result};
use needle_index::{Config, Index, Options, Value};
use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as PhysicalType};
use parquet::file::reader::{FileReader, SerializedFileReader};
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
    fn store(&self, index_dir: &Path) -> Result<()> {
        let text = format!(
            "column={}\ntype={}\ngranularity={}\n",
            self.column,
            self.kind.name(),
            if self.row_groups { "row-group" } else { "file" }
        );
        let p = index_dir.join(META_FILE);
        std::fs::write(&p, text)
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
        let mut kv = BTreeMap::new();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                kv.insert(k.to_string(), v.to_string());
            }
        }
        let bad = || Error::Other(format!("{} is damaged", p.display()));
        Ok(ParquetMeta {
            column: kv.get("column").ok_or_else(bad)?.clone(),
            kind: ValueType::from_name(kv.get("type").ok_or_else(bad)?).ok_or_else(bad)?,
            row_groups: kv.get("granularity").ok_or_else(bad)? == "row-group",
        })
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

fn open_reader(path: &Path) -> Result<SerializedFileReader<File>> {
    let f = File::open(path)
        .map_err(|e| Error::Other(format!("cannot open {}: {e}", path.display())))?;
    SerializedFileReader::new(f).map_err(|e| {
        Error::Other(format!(
            "{} is not a readable Parquet file: {e}",
            path.display()
        ))
    })
}

/// The top-level field `column` of a file's schema and its value type.
fn column_of(
    reader: &SerializedFileReader<File>,
    path: &Path,
    column: &str,
) -> Result<(TypePtr, ValueType)> {
    let root = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema_ptr();
    let field = root
        .get_fields()
        .iter()
        .find(|f| f.name() == column)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = root.get_fields().iter().map(|f| f.name()).collect();
            format!(
                "{} has no column {column:?} (columns: {})",
                path.display(),
                names.join(", ")
            )
        })?;
    let kind = value_type(&field)
        .map_err(|why| Error::Other(format!("column {column:?} of {}: {why}", path.display())))?;
    Ok((field, kind))
}

/// The value type a column is indexed as, or why it cannot be.
fn value_type(field: &Type) -> Result<ValueType> {
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
                ValueType::String
            } else {
                ValueType::Hex
            })
        }
        PhysicalType::INT32 | PhysicalType::INT64 => {
            if matches!(logical, Some(LogicalType::Decimal { .. }))
                || conv == ConvertedType::DECIMAL
            {
                return Err("decimal columns are not supported".into());
            }
            Ok(ValueType::Int)
        }
        t => Err(Error::Other(format!(
            "type {t} is not supported (supported: strings, binary, integers)"
        ))),
    }
}

/// The indexable value of a field: `None` for null, an error for a kind of value the index
/// does not take (never dropped silently).
pub fn field_value(f: &Field) -> Result<Option<Value>> {
    Ok(Some(match f {
        Field::Null => return Ok(None),
        Field::Str(s) => Value::Str(s.clone()),
        Field::Bytes(b) => Value::Bytes(b.data().to_vec()),
        Field::Byte(v) => Value::Int(*v as i64),
        Field::Short(v) => Value::Int(*v as i64),
        Field::Int(v) => Value::Int(*v as i64),
        Field::Long(v) => Value::Int(*v),
        Field::UByte(v) => Value::Int(*v as i64),
        Field::UShort(v) => Value::Int(*v as i64),
        Field::UInt(v) => Value::Int(*v as i64),
        // Values above i64::MAX keep their bits: the canonical encoding is the same 8 bytes.
        Field::ULong(v) => Value::Int(*v as i64),
        Field::Date(v) | Field::TimeMillis(v) => Value::Int(*v as i64),
        Field::TimeMicros(v) | Field::TimestampMillis(v) | Field::TimestampMicros(v) => {
            Value::Int(*v)
        }
        other => {
            return Err(Error::Other(format!(
                "a value {other} of a kind the index does not take (strings, binary and integers)"
            )))
        }
    }))
}

fn column_value(row: &Row, column: &str) -> Result<Option<Value>> {
    match row.get_column_iter().find(|(n, _)| n.as_str() == column) {
        Some((_, f)) => field_value(f),
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

/// Makes the index of the files under `dir` cover exactly `files` (paths under `dir`, such as
/// the files live in one version of a table format): files not yet indexed are indexed, and
/// partitions of files not listed are removed. Every listed file is checked before anything
/// is written. `progress` is called after each file with (done, total, file).
pub fn index_files(
    dir: &Path,
    files: &[PathBuf],
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    index_files_with(dir, files, o, Options::default(), progress)
}

/// [`index_files`] with the index's own options (tests flush small memtables).
fn index_files_with(
    dir: &Path,
    files: &[PathBuf],
    o: &IndexParquetOptions,
    index_options: Options,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<IndexReport> {
    let index_path = o.index.clone().unwrap_or_else(|| dir.join(INDEX_SUBDIR));
    // Check the column in every file first: a bad file fails the run before anything is written.
    // Readers are not kept open between the passes: a directory may hold more files than
    // the process may have open.
    let mut sizes: Vec<i64> = Vec::new();
    let mut kind: Option<ValueType> = None;
    for f in files {
        let r = open_reader(f)?;
        let (_, k) = column_of(&r, f, &o.column)?;
        let md = r.metadata();
        if o.row_groups {
            sizes.extend(md.row_groups().iter().map(|g| g.num_rows()));
        } else {
            sizes.push(md.file_metadata().num_rows());
        }
        if let Some(prev) = kind {
            if prev != k {
                return Err(Error::Other(format!(
                    "column {:?} is {} in some files and {} in {}",
                    o.column,
                    prev.name(),
                    k.name(),
                    f.display()
                )));
            }
        }
        kind = Some(k);
    }
    let kind = kind.unwrap_or(ValueType::String);
    let meta = ParquetMeta {
        column: o.column.clone(),
        kind,
        row_groups: o.row_groups,
    };
    let created = !index_path.join("MANIFEST").exists();
    let ix = if !created {
        let old = ParquetMeta::load(&index_path)?;
        if old != meta {
            return Err(Error::Other(format!(
                "{} indexes {:?} ({}), not {:?}; use another --index",
                index_path.display(),
                old.column,
                old.kind.name(),
                o.column
            )));
        }
        Index::open(&index_path, index_options)?
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
            &index_path,
            Config {
                buckets,
                fingerprint_bits: o.fingerprint_bits,
            },
            index_options,
        )?;
        meta.store(&index_path)?;
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
    for (n, f) in files.iter().enumerate() {
        let rel = f
            .strip_prefix(dir)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let r = &open_reader(f)?;
        column_of(r, f, &o.column)?;
        let root_index = r
            .metadata()
            .file_metadata()
            .schema_descr()
            .root_schema()
            .get_fields()
            .iter()
            .position(|c| c.name() == o.column)
            .expect("column_of found it");
        let groups: Vec<Option<usize>> = if o.row_groups {
            append_order(r.num_row_groups()).map(Some).collect()
        } else {
            vec![None]
        };
        for g in groups {
            let id = partition_id(&rel, g);
            present.insert(id.clone());
            if existing.contains(&id) {
                report.unchanged += 1;
                continue;
            }
            let hashes = crate::columns::column_hashes(f, root_index, &o.column, g)?;
            report.values += hashes.len() as u64;
            ix.append_hashes(&id, &hashes)?;
            report.added += 1;
        }
        progress(n + 1, files.len(), &rel);
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
    let candidates = ix.query(&v)?;
    drop(ix);
    read_rows(dir, &meta, &v, candidates)
}

/// [`lookup`] through an index already open (a service's snapshot): `value` is of the indexed
/// column's type (`meta.kind`).
pub fn lookup_in(
    dir: &Path,
    meta: &ParquetMeta,
    ix: &Index,
    value: &Value,
) -> Result<LookupResult> {
    let candidates = ix.query(value)?;
    read_rows(dir, meta, value, candidates)
}

/// The rows of the candidate partitions whose column equals `v`.
pub(crate) fn read_rows(
    dir: &Path,
    meta: &ParquetMeta,
    v: &Value,
    candidates: Vec<String>,
) -> Result<LookupResult> {
    // Group row groups of one file so each file is opened once.
    let mut by_file: BTreeMap<&str, Vec<Option<usize>>> = BTreeMap::new();
    for id in &candidates {
        let (file, rg) = split_id(id);
        by_file.entry(file).or_default().push(rg);
    }
    let mut rows = Vec::new();
    for (file, groups) in by_file {
        let path = dir.join(file);
        let r = open_reader(&path)?;
        let read_err = |e: parquet::errors::ParquetError| {
            Error::Other(format!("cannot read {}: {e}", path.display()))
        };
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
                let value = column_value(&row, &meta.column).map_err(|why| {
                    Error::Other(format!(
                        "column {:?} of {}: {why}",
                        meta.column,
                        path.display()
                    ))
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
        for i in 0..4 {
            write_file(
                &dir.path().join(format!("f{i}.parquet")),
                i * 100..i * 100 + 100,
            );
        }
        let files = parquet_files(dir.path()).unwrap();
        let r = index_files_with(dir.path(), &files, &o, tiny(), |_, _, _| {}).unwrap();
        assert_eq!(r.added, 4);
        assert_eq!(segments(), 1);

        write_file(&dir.path().join("f4.parquet"), 400..500);
        let files = parquet_files(dir.path()).unwrap();
        let r = index_files_with(dir.path(), &files, &o, tiny(), |_, _, _| {}).unwrap();
        assert_eq!((r.added, r.unchanged), (1, 4));
        assert_eq!(
            segments(),
            2,
            "one new file adds a segment, without rewriting the index"
        );

        let ix = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        for (v, file) in [(7, "f0.parquet"), (450, "f4.parquet")] {
            assert!(ix
                .query(&Value::Int(v))
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
        index_files_with(dir.path(), &files, &o, Options::default(), |_, _, _| {}).unwrap();
        let _writer = Index::open(dir.path().join(INDEX_SUBDIR), Options::default()).unwrap();
        let found = lookup(dir.path(), None, "42").expect("a lookup takes no lock");
        assert_eq!(found.rows.len(), 1);
    }
}
