//! The native module of the `needle` Python package: the partition index (create, open, add,
//! remove, candidates), the indexing of a directory of Parquet files, and Delta Lake tables
//! (the transaction log read, indexed and looked up at any version). The Python layer
//! (`python/needle`) builds row lookups and the DuckDB helper on top of it.
//!
//! Long calls release the GIL. Every error of the index or of a Parquet file becomes a
//! `needle.NeedleError` carrying the same message as the `needle` command prints.

mod delta_table;
mod parquet;
mod partition_index;

use needle_index::Value;
use needle_lake::pq;
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

pub(crate) fn err(e: impl ToString) -> PyErr {
    NeedleError::new_err(e.to_string())
}

/// A Python value as the index hashes it: `int` (64-bit; unsigned values above 2^63 keep
/// their bits), `str` or `bytes`. Anything else is a `TypeError`.
pub(crate) fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
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

pub(crate) fn to_hashes(values: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
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

/// Runs an indexing pass without the GIL, calling `progress(done, total, file)` (with the GIL)
/// after each file; the first exception the callback raises stops the calls and is re-raised.
pub(crate) fn with_progress<T: Send>(
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

pub(crate) fn report_dict<'py>(
    py: Python<'py>,
    report: &pq::IndexReport,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("added", report.added)?;
    d.set_item("removed", report.removed)?;
    d.set_item("unchanged", report.unchanged)?;
    d.set_item("values", report.values)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NeedleError", m.py().get_type::<NeedleError>())?;
    m.add_class::<partition_index::PartitionIndex>()?;
    m.add_class::<delta_table::DeltaSnapshot>()?;
    m.add_function(wrap_pyfunction!(delta_table::index_delta, m)?)?;
    m.add_function(wrap_pyfunction!(delta_table::delta_indexed_version, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::index_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::parquet_index_info, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::default_index_dir, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::split_partition_id, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::instant_key, m)?)?;
    Ok(())
}
