//! The native module of the `needle` Python package: the partition index (create, open, add,
//! remove, candidates), the indexing of a directory of Parquet files, and Delta Lake tables
//! (the transaction log read, indexed and looked up at any version). The Python layer
//! (`python/needle`) builds row lookups and the DuckDB helper on top of it.
//!
//! Long calls release the GIL. Every error of the index or of a Parquet file becomes a
//! `needle.NeedleError` carrying the same message as the `needle` command prints.

use std::path::PathBuf;

use arrow_ipc::writer::StreamWriter;
use needle_index::{Config, Index, Options, Value};
use needle_lake::delta;
use needle_lake::pq::{self, IndexParquetOptions, ParquetMeta};
use needle_lake::Key;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyString};

create_exception!(
    needle,
    NeedleError,
    PyException,
    "An index or a Parquet file could not be read or written; the message says which and why."
);

fn err(e: impl ToString) -> PyErr {
    NeedleError::new_err(e.to_string())
}

/// A Python value as the index hashes it: `int` (64-bit; unsigned values above 2^63 keep
/// their bits), `str` or `bytes`. Anything else is a `TypeError`.
fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "bool values are not indexed (format v1 takes integers, strings and bytes)",
        ));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.to_owned()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Bytes(b.as_bytes().to_vec()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Int(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Int(u as i64));
        }
        return Err(PyValueError::new_err(format!(
            "{obj} does not fit in 64 bits"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "values are int, str or bytes, not {}",
        obj.get_type().name()?
    )))
}

fn to_hashes(values: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if values.is_instance_of::<PyString>() || values.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "expected an iterable of values, not a single str or bytes",
        ));
    }
    values
        .try_iter()?
        .map(|v| Ok(to_value(&v?)?.hash()))
        .collect()
}

/// A partition index on disk: which partitions may hold a value.
#[pyclass(module = "needle._native", name = "PartitionIndex")]
struct PartitionIndex {
    inner: Option<Index>,
    path: PathBuf,
}

impl PartitionIndex {
    fn ix(&self) -> PyResult<&Index> {
        self.inner.as_ref().ok_or_else(|| {
            PyValueError::new_err(format!("the index {} is closed", self.path.display()))
        })
    }
}

#[pymethods]
impl PartitionIndex {
    /// Creates an empty index in `path` (a new or empty directory).
    #[staticmethod]
    #[pyo3(signature = (path, *, buckets = 38_000, fingerprint_bits = 16, sync = true))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        buckets: u32,
        fingerprint_bits: u32,
        sync: bool,
    ) -> PyResult<PartitionIndex> {
        let cfg = Config {
            buckets,
            fingerprint_bits,
        };
        let opts = Options {
            sync,
            ..Options::default()
        };
        let p = path.clone();
        let ix = py.detach(|| Index::create(&p, cfg, opts)).map_err(err)?;
        Ok(PartitionIndex {
            inner: Some(ix),
            path,
        })
    }

    /// Opens the index in `path`; with `read_only`, for queries alone (several readers may
    /// hold it open while no writer does).
    #[staticmethod]
    #[pyo3(signature = (path, *, read_only = false))]
    fn open(py: Python<'_>, path: PathBuf, read_only: bool) -> PyResult<PartitionIndex> {
        let opts = Options {
            read_only,
            ..Options::default()
        };
        let p = path.clone();
        let ix = py.detach(|| Index::open(&p, opts)).map_err(err)?;
        Ok(PartitionIndex {
            inner: Some(ix),
            path,
        })
    }

    /// Opens a snapshot of the index in `path` for queries alone: no lock, so a writer in
    /// another process (an `index_parquet` run) is never blocked, and the snapshot sees the
    /// index as of this call; open another to see later writes.
    #[staticmethod]
    fn snapshot(py: Python<'_>, path: PathBuf) -> PyResult<PartitionIndex> {
        let p = path.clone();
        let ix = py
            .detach(|| Index::open_snapshot(&p, Options::default()))
            .map_err(err)?;
        Ok(PartitionIndex {
            inner: Some(ix),
            path,
        })
    }

    /// The index's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Adds `values` to partition `partition_id` (created if new); returns the entry's number.
    fn add(&self, py: Python<'_>, partition_id: &str, values: &Bound<'_, PyAny>) -> PyResult<u64> {
        let hashes = to_hashes(values)?;
        let ix = self.ix()?;
        py.detach(|| ix.append_hashes(partition_id, &hashes))
            .map_err(err)
    }

    /// Deletes `values` from partition `partition_id` (each must have been added).
    fn delete(
        &self,
        py: Python<'_>,
        partition_id: &str,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let hashes = to_hashes(values)?;
        let ix = self.ix()?;
        py.detach(|| ix.delete_hashes(partition_id, &hashes))
            .map_err(err)
    }

    /// Removes partition `partition_id` and all its values.
    fn remove(&self, py: Python<'_>, partition_id: &str) -> PyResult<()> {
        let ix = self.ix()?;
        py.detach(|| ix.remove_partition(partition_id)).map_err(err)
    }

    /// The partitions that may hold `value`: never misses one that holds it.
    fn candidates(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let h = to_value(value)?.hash();
        let ix = self.ix()?;
        py.detach(|| ix.query_hash(h)).map_err(err)
    }

    /// The candidates of each of `values`, from one consistent view of the index.
    fn candidates_batch(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Vec<String>>> {
        let hashes = to_hashes(values)?;
        let ix = self.ix()?;
        py.detach(|| ix.query_batch(&hashes)).map_err(err)
    }

    /// Writes the values held in memory to a segment (they are durable in the log already).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let ix = self.ix()?;
        py.detach(|| ix.flush()).map_err(err)
    }

    /// Merges all segments into one, reclaiming removed partitions; returns whether it ran.
    fn merge(&self, py: Python<'_>) -> PyResult<bool> {
        let ix = self.ix()?;
        py.detach(|| ix.merge()).map(|r| r.is_some()).map_err(err)
    }

    /// Summary numbers: buckets, fingerprint_bits, segments, partitions, values, occupancy,
    /// expected_fpr, bytes_on_disk, ...
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.ix()?.stats();
        let d = PyDict::new(py);
        d.set_item("buckets", s.buckets)?;
        d.set_item("fingerprint_bits", s.fingerprint_bits)?;
        d.set_item("segments", s.segments)?;
        d.set_item("memtable_partitions", s.memtable_partitions)?;
        d.set_item("partitions", s.partitions)?;
        d.set_item("distinct_ids", s.distinct_ids)?;
        d.set_item("removed_partitions", s.removed_partitions)?;
        d.set_item("values", s.values)?;
        d.set_item("slots", s.slots)?;
        d.set_item("occupancy", s.occupancy)?;
        d.set_item("expected_fpr", s.expected_fpr)?;
        d.set_item("bytes_on_disk", s.bytes_on_disk)?;
        Ok(d)
    }

    /// The ids of the live partitions (each once, though every `add` makes an entry of its own).
    fn partitions(&self) -> PyResult<Vec<String>> {
        let mut seen = std::collections::HashSet::new();
        Ok(self
            .ix()?
            .partitions()
            .into_iter()
            .filter(|p| !p.removed && seen.insert(p.id.clone()))
            .map(|p| p.id)
            .collect())
    }

    /// The id of one live partition, or None if there is none; cheaper than `partitions()`
    /// when any one will do.
    fn any_partition(&self) -> PyResult<Option<String>> {
        Ok(self.ix()?.any_live_partition())
    }

    /// Closes the index (releases its lock); later calls raise `ValueError`.
    fn close(&mut self) {
        self.inner = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "PartitionIndex({:?}{})",
            self.path.display(),
            if self.inner.is_none() { ", closed" } else { "" }
        )
    }
}

/// Indexes every Parquet file under `directory` on `column` (files already indexed are left
/// alone, partitions of files that are gone are removed). `progress(done, total, file)` is
/// called after each file. Returns {added, removed, unchanged, values}.
#[pyfunction]
#[pyo3(signature = (directory, column, *, row_groups = false, index = None, buckets = None, fingerprint_bits = 16, progress = None))]
#[allow(clippy::too_many_arguments)]
fn index_parquet<'py>(
    py: Python<'py>,
    directory: PathBuf,
    column: String,
    row_groups: bool,
    index: Option<PathBuf>,
    buckets: Option<u32>,
    fingerprint_bits: u32,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let o = IndexParquetOptions {
        column,
        row_groups,
        buckets,
        fingerprint_bits,
        index,
    };
    let report = with_progress(py, progress, |p| pq::index_dir(&directory, &o, p))?;
    report_dict(py, &report)
}

/// Runs an indexing pass without the GIL, calling `progress(done, total, file)` (with the GIL)
/// after each file; the first exception the callback raises stops the calls and is re-raised.
fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    job: impl Send + FnOnce(&mut dyn FnMut(usize, usize, &str)) -> needle_lake::Result<T>,
) -> PyResult<T> {
    let mut callback_error: Option<PyErr> = None;
    let result = py.detach(|| {
        job(&mut |done, total, file| {
            if let (Some(cb), None) = (&progress, &callback_error) {
                Python::attach(|py| {
                    if let Err(e) = cb.call1(py, (done, total, file)) {
                        callback_error = Some(e);
                    }
                });
            }
        })
    });
    if let Some(e) = callback_error {
        return Err(e);
    }
    result.map_err(err)
}

fn report_dict<'py>(py: Python<'py>, report: &pq::IndexReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("added", report.added)?;
    d.set_item("removed", report.removed)?;
    d.set_item("unchanged", report.unchanged)?;
    d.set_item("values", report.values)?;
    Ok(d)
}

/// Brings the index of the Delta table in `table` up to its latest version on `column` (see
/// `needle.index_delta`). Returns {version, added, removed, unchanged, values}.
#[pyfunction]
#[pyo3(signature = (table, column, *, row_groups = false, index = None, buckets = None, fingerprint_bits = 16, progress = None))]
#[allow(clippy::too_many_arguments)]
fn index_delta<'py>(
    py: Python<'py>,
    table: PathBuf,
    column: String,
    row_groups: bool,
    index: Option<PathBuf>,
    buckets: Option<u32>,
    fingerprint_bits: u32,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let o = IndexParquetOptions {
        column,
        row_groups,
        buckets,
        fingerprint_bits,
        index,
    };
    let (version, report) = with_progress(py, progress, |p| delta::index_delta(&table, &o, p))?;
    let d = report_dict(py, &report)?;
    d.set_item("version", version)?;
    Ok(d)
}

/// The table version the index in `index_dir` covers, or None.
#[pyfunction]
fn delta_indexed_version(index_dir: PathBuf) -> PyResult<Option<u64>> {
    delta::indexed_version(&index_dir).map_err(err)
}

/// One version of a Delta table, read from its transaction log: its live data files (by path
/// relative to the table, with their partition values), partition columns and schema.
#[pyclass(module = "needle._native", name = "DeltaSnapshot", frozen)]
struct DeltaSnapshot {
    inner: delta::DeltaSnapshot,
}

#[pymethods]
impl DeltaSnapshot {
    /// Loads `version` (default: the latest) of the table in `table`.
    #[staticmethod]
    #[pyo3(signature = (table, version = None))]
    fn load(py: Python<'_>, table: PathBuf, version: Option<u64>) -> PyResult<DeltaSnapshot> {
        let inner = py
            .detach(|| delta::DeltaSnapshot::load(&table, version))
            .map_err(err)?;
        Ok(DeltaSnapshot { inner })
    }

    #[getter]
    fn version(&self) -> u64 {
        self.inner.version
    }

    #[getter]
    fn root(&self) -> PathBuf {
        self.inner.root.clone()
    }

    /// {relative path: {partition column: value as the log writes it, or None}}.
    #[getter]
    fn files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (path, values) in &self.inner.files {
            let v = PyDict::new(py);
            for (k, x) in values {
                v.set_item(k, x)?;
            }
            d.set_item(path, v)?;
        }
        Ok(d)
    }

    #[getter]
    fn partition_columns(&self) -> Vec<String> {
        self.inner.partition_columns.clone()
    }

    /// The table's schema as Arrow types (the Delta kernel's mapping), serialized as an Arrow
    /// IPC stream without batches: `pyarrow.ipc.open_stream(...).schema` reads it.
    fn arrow_schema_ipc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let schema = self.inner.arrow_schema().map_err(err)?;
        let mut w = StreamWriter::try_new(Vec::new(), &schema).map_err(err)?;
        w.finish().map_err(err)?;
        let bytes = w.into_inner().map_err(err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The rows (0-based positions in the file) that the deletion vector of the live file `file`
    /// (relative to the table) hides, sorted; empty for a file without one.
    fn deleted_rows(&self, py: Python<'_>, file: &str) -> PyResult<Vec<u64>> {
        py.detach(|| self.inner.deleted_rows(file)).map_err(err)
    }

    /// The live files that carry a deletion vector, relative to the table.
    #[getter]
    fn files_with_deletion_vectors(&self) -> Vec<String> {
        self.inner.deletion_vectors.keys().cloned().collect()
    }

    /// Raises `NeedleError` if the table has no column `column` at this version (schema
    /// evolution added it later), or if it is a partition column.
    fn check_column(&self, column: &str) -> PyResult<()> {
        self.inner.check_column(column).map_err(err)
    }

    /// The partition ids of this version that may hold `value`, given as the index hashes it:
    /// the index's candidates among the live files, plus every live file it does not hold.
    fn candidates(
        &self,
        py: Python<'_>,
        index_dir: PathBuf,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<String>> {
        let v = Key::from(to_value(value)?);
        py.detach(|| delta::candidates(&self.inner, &index_dir, &v))
            .map_err(err)
    }

    /// Raises `NeedleError` if a data file among the partition ids `candidates` that this
    /// version reads was removed (by VACUUM): the version can no longer be read.
    fn check_files(&self, candidates: Vec<String>) -> PyResult<()> {
        self.inner
            .check_files(candidates.iter().map(String::as_str))
            .map_err(err)
    }

    fn __repr__(&self) -> String {
        format!(
            "DeltaSnapshot({:?}, version={}, files={})",
            self.inner.root,
            self.inner.version,
            self.inner.files.len()
        )
    }
}

/// What the index in `index_dir` covers: {column, type ("string", "int", "binary", "timestamp"
/// or "time"), unit (of the integers given for a timestamp or time: "ns", "us", "ms", "s",
/// "day"; None for other types), granularity ("file" or "row-group")}.
#[pyfunction]
fn parquet_index_info<'py>(py: Python<'py>, index_dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let m = ParquetMeta::load(&index_dir).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("column", m.column)?;
    d.set_item("type", m.kind.name())?;
    d.set_item("unit", m.kind.unit().map(|u| u.name()))?;
    d.set_item(
        "granularity",
        if m.row_groups { "row-group" } else { "file" },
    )?;
    Ok(d)
}

/// The value `PartitionIndex.candidates` takes for an instant (a date or timestamp of any unit),
/// given as nanoseconds since 1970-01-01T00:00:00Z: the bytes the index hashes it as.
#[pyfunction]
fn instant_key<'py>(py: Python<'py>, nanos: i128) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &needle_lake::instant_bytes(nanos))
}

/// The subdirectory of a Parquet directory that holds its index unless told otherwise.
#[pyfunction]
fn default_index_dir(directory: PathBuf) -> PathBuf {
    directory.join(pq::INDEX_SUBDIR)
}

/// Splits a partition id of a Parquet index into (file relative to the directory, row group
/// or None).
#[pyfunction]
fn split_partition_id(id: &str) -> (String, Option<usize>) {
    let (file, rg) = pq::split_id(id);
    (file.to_string(), rg)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NeedleError", m.py().get_type::<NeedleError>())?;
    m.add_class::<PartitionIndex>()?;
    m.add_class::<DeltaSnapshot>()?;
    m.add_function(wrap_pyfunction!(index_delta, m)?)?;
    m.add_function(wrap_pyfunction!(delta_indexed_version, m)?)?;
    m.add_function(wrap_pyfunction!(index_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_index_info, m)?)?;
    m.add_function(wrap_pyfunction!(default_index_dir, m)?)?;
    m.add_function(wrap_pyfunction!(split_partition_id, m)?)?;
    m.add_function(wrap_pyfunction!(instant_key, m)?)?;
    Ok(())
}
