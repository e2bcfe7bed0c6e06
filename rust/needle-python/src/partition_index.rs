//! `needle.PartitionIndex`: an index on disk, opened, added to, searched and closed from Python.

use std::path::PathBuf;

use needle_index::{Config, Index, Options};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{err, to_hashes, to_value};

/// A partition index on disk: which partitions may hold a value.
#[pyclass(module = "needle._native", name = "PartitionIndex")]
pub(crate) struct PartitionIndex {
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
