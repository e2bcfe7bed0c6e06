//! The indexing pass: the hashes of one column's values, read with the Arrow reader of the
//! `parquet` crate (only that column, decoded in batches).
//!
//! Values hash as format v1 defines (the same as the row reader's [`crate::pq::field_value`]):
//! integers of every width, dates, times and timestamps as their stored integer (unsigned
//! values keep their bits), strings as UTF-8 bytes, binary as its bytes; nulls are skipped.

use crate::{Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, TimeUnit};
use needle_index::{hash_bytes, hash_i64, hash_str};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use std::fs::File;
use std::path::Path;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 65_536;

/// The hashes of the non-null values of top-level column `root_index` (named `column`) of a
/// file, or of one of its row groups.
pub fn column_hashes(
    path: &Path,
    root_index: usize,
    column: &str,
    row_group: Option<usize>,
) -> Result<Vec<u64>> {
    let read_err = |e: parquet::errors::ParquetError| {
        Error::Other(format!("cannot read {}: {e}", path.display()))
    };
    let file = File::open(path)
        .map_err(|e| Error::Other(format!("cannot open {}: {e}", path.display())))?;
    // The Parquet schema alone decides the Arrow types (not a writer's stored Arrow schema,
    // which could turn a column into a dictionary or a view type).
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).map_err(read_err)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [root_index]);
    let mut builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
    if let Some(rg) = row_group {
        builder = builder.with_row_groups(vec![rg]);
    }
    let mut out = Vec::new();
    for batch in builder.build().map_err(read_err)? {
        let batch =
            batch.map_err(|e| Error::Other(format!("cannot read {}: {e}", path.display())))?;
        hash_array(batch.column(0).as_ref(), &mut out).map_err(|why| {
            Error::Other(format!("column {column:?} of {}: {why}", path.display()))
        })?;
    }
    Ok(out)
}

fn ints<T: ArrowPrimitiveType>(
    a: &dyn Array,
    out: &mut Vec<u64>,
    widen: impl Fn(T::Native) -> i64,
) {
    out.extend(
        a.as_primitive::<T>()
            .iter()
            .flatten()
            .map(|v| hash_i64(widen(v))),
    );
}

fn hash_array(a: &dyn Array, out: &mut Vec<u64>) -> Result<()> {
    match a.data_type() {
        DataType::Int8 => ints::<Int8Type>(a, out, i64::from),
        DataType::Int16 => ints::<Int16Type>(a, out, i64::from),
        DataType::Int32 => ints::<Int32Type>(a, out, i64::from),
        DataType::Int64 => ints::<Int64Type>(a, out, |v| v),
        DataType::UInt8 => ints::<UInt8Type>(a, out, i64::from),
        DataType::UInt16 => ints::<UInt16Type>(a, out, i64::from),
        DataType::UInt32 => ints::<UInt32Type>(a, out, i64::from),
        DataType::UInt64 => ints::<UInt64Type>(a, out, |v| v as i64),
        DataType::Date32 => ints::<Date32Type>(a, out, i64::from),
        DataType::Date64 => ints::<Date64Type>(a, out, |v| v),
        DataType::Time32(TimeUnit::Second) => ints::<Time32SecondType>(a, out, i64::from),
        DataType::Time32(_) => ints::<Time32MillisecondType>(a, out, i64::from),
        DataType::Time64(TimeUnit::Microsecond) => ints::<Time64MicrosecondType>(a, out, |v| v),
        DataType::Time64(_) => ints::<Time64NanosecondType>(a, out, |v| v),
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => ints::<TimestampSecondType>(a, out, |v| v),
            TimeUnit::Millisecond => ints::<TimestampMillisecondType>(a, out, |v| v),
            TimeUnit::Microsecond => ints::<TimestampMicrosecondType>(a, out, |v| v),
            TimeUnit::Nanosecond => ints::<TimestampNanosecondType>(a, out, |v| v),
        },
        DataType::Utf8 => out.extend(a.as_string::<i32>().iter().flatten().map(hash_str)),
        DataType::LargeUtf8 => out.extend(a.as_string::<i64>().iter().flatten().map(hash_str)),
        DataType::Utf8View => out.extend(a.as_string_view().iter().flatten().map(hash_str)),
        DataType::Binary => out.extend(a.as_binary::<i32>().iter().flatten().map(hash_bytes)),
        DataType::LargeBinary => out.extend(a.as_binary::<i64>().iter().flatten().map(hash_bytes)),
        DataType::BinaryView => out.extend(a.as_binary_view().iter().flatten().map(hash_bytes)),
        DataType::FixedSizeBinary(_) => {
            out.extend(a.as_fixed_size_binary().iter().flatten().map(hash_bytes))
        }
        other => {
            return Err(Error::Other(format!(
                "values of Arrow type {other} are not indexed (strings, binary and integers are)"
            )))
        }
    }
    Ok(())
}
