//! Indexing a directory of Parquet files, and what its index says about itself.

use std::path::PathBuf;

use needle_lake::pq::{self, IndexParquetOptions, ParquetMeta};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::{err, report_dict, with_progress};

/// Indexes every Parquet file under `directory` on `column` (files already indexed are left
/// alone, partitions of files that are gone are removed). `progress(done, total, file)` is
/// called after each file. Returns {added, removed, unchanged, values}.
#[pyfunction]
#[pyo3(signature = (directory, column, *, row_groups = false, index = None, buckets = None, fingerprint_bits = 16, progress = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn index_parquet<'py>(
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

/// What the index in `index_dir` covers: {column, type ("string", "int", "binary", "timestamp"
/// or "time"), unit (of the integers given for a timestamp or time: "ns", "us", "ms", "s",
/// "day"; None for other types), granularity ("file" or "row-group")}.
#[pyfunction]
pub(crate) fn parquet_index_info<'py>(
    py: Python<'py>,
    index_dir: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
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
pub(crate) fn instant_key<'py>(py: Python<'py>, nanos: i128) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &needle_lake::instant_bytes(nanos))
}

/// The subdirectory of a Parquet directory that holds its index unless told otherwise.
#[pyfunction]
pub(crate) fn default_index_dir(directory: PathBuf) -> PathBuf {
    directory.join(pq::INDEX_SUBDIR)
}

/// Splits a partition id of a Parquet index into (file relative to the directory, row group
/// or None).
#[pyfunction]
pub(crate) fn split_partition_id(id: &str) -> (String, Option<usize>) {
    let (file, rg) = pq::split_id(id);
    (file.to_string(), rg)
}
