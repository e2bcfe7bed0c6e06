//! Delta Lake tables: indexing a table up to its latest version, and one version's files read
//! from the transaction log.

use std::path::PathBuf;

use arrow_ipc::writer::StreamWriter;
use needle_lake::delta;
use needle_lake::pq::IndexParquetOptions;
use needle_lake::Key;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::{err, report_dict, to_value, with_progress};

/// Brings the index of the Delta table in `table` up to its latest version on `column` (see
/// `needle.index_delta`). Returns {version, added, removed, unchanged, values}.
#[pyfunction]
#[pyo3(signature = (table, column, *, row_groups = false, index = None, buckets = None, fingerprint_bits = 16, progress = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn index_delta<'py>(
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
pub(crate) fn delta_indexed_version(index_dir: PathBuf) -> PyResult<Option<u64>> {
    delta::indexed_version(&index_dir).map_err(err)
}

/// One version of a Delta table, read from its transaction log: its live data files (by path
/// relative to the table, with their partition values), partition columns and schema.
#[pyclass(module = "needle._native", name = "DeltaSnapshot", frozen)]
pub(crate) struct DeltaSnapshot {
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
