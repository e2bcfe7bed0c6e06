//! The indexing pass: the hashes of one column's values, read with the Arrow reader of the
//! `parquet` crate (only that column, decoded in batches).
//!
//! Values hash as their [`Key`] (the same as the row reader's [`crate::pq::field_key`]):
//! integers of every width and signedness as one integer (unsigned values keep their bits),
//! dates and timestamps of every unit as the instant they mean, times of day of every unit as
//! their nanoseconds, strings as UTF-8 bytes, binary as its bytes; nulls are skipped.

use crate::{Error, Key, Result, NANOS_PER_DAY};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, TimeUnit};
use needle_index::{hash_bytes, hash_i64, hash_str};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 65_536;

/// The hashes of the non-null values of top-level column `root_index` (named `column`) of a
/// file, or of one of its row groups.
/// `file` is read through `reader` and named `name` in errors.
pub fn column_hashes<R: ChunkReader + 'static>(
    reader: R,
    name: &str,
    root_index: usize,
    column: &str,
    row_group: Option<usize>,
) -> Result<Vec<u64>> {
    let read_err =
        |e: parquet::errors::ParquetError| Error::Other(format!("cannot read {name}: {e}"));
    // The Parquet schema alone decides the Arrow types (not a writer's stored Arrow schema,
    // which could turn a column into a dictionary or a view type).
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(reader, options).map_err(read_err)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [root_index]);
    let mut builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
    if let Some(rg) = row_group {
        builder = builder.with_row_groups(vec![rg]);
    }
    let mut out = Vec::new();
    for batch in builder.build().map_err(read_err)? {
        let batch = batch.map_err(|e| Error::Other(format!("cannot read {name}: {e}")))?;
        hash_array(batch.column(0).as_ref(), &mut out)
            .map_err(|why| Error::Other(format!("column {column:?} of {name}: {why}")))?;
    }
    Ok(out)
}

/// The hashes of the non-null values of a primitive array, each mapped by `hash`.
fn each<T: ArrowPrimitiveType>(a: &dyn Array, out: &mut Vec<u64>, hash: impl Fn(T::Native) -> u64) {
    out.extend(a.as_primitive::<T>().iter().flatten().map(hash));
}

/// The hash of an integer (format v1's `Int`; unsigned values keep their bits).
fn int(v: i64) -> u64 {
    hash_i64(v)
}

/// The hash of the instant `v` units after the epoch.
fn instant(v: i64, nanos_per_unit: i128) -> u64 {
    Key::Instant(v as i128 * nanos_per_unit).hash()
}

/// The hash of the time of day `v` units after midnight.
fn time(v: i64, nanos_per_unit: i64) -> u64 {
    Key::Time(v.saturating_mul(nanos_per_unit)).hash()
}

fn unit_nanos(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

fn hash_array(a: &dyn Array, out: &mut Vec<u64>) -> Result<()> {
    match a.data_type() {
        DataType::Int8 => each::<Int8Type>(a, out, |v| int(v.into())),
        DataType::Int16 => each::<Int16Type>(a, out, |v| int(v.into())),
        DataType::Int32 => each::<Int32Type>(a, out, |v| int(v.into())),
        DataType::Int64 => each::<Int64Type>(a, out, int),
        DataType::UInt8 => each::<UInt8Type>(a, out, |v| int(v.into())),
        DataType::UInt16 => each::<UInt16Type>(a, out, |v| int(v.into())),
        DataType::UInt32 => each::<UInt32Type>(a, out, |v| int(v.into())),
        DataType::UInt64 => each::<UInt64Type>(a, out, |v| int(v as i64)),
        DataType::Date32 => each::<Date32Type>(a, out, |v| instant(v.into(), NANOS_PER_DAY)),
        DataType::Date64 => each::<Date64Type>(a, out, |v| instant(v, 1_000_000)),
        DataType::Timestamp(unit, _) => {
            let n = unit_nanos(unit) as i128;
            match unit {
                TimeUnit::Second => each::<TimestampSecondType>(a, out, |v| instant(v, n)),
                TimeUnit::Millisecond => {
                    each::<TimestampMillisecondType>(a, out, |v| instant(v, n))
                }
                TimeUnit::Microsecond => {
                    each::<TimestampMicrosecondType>(a, out, |v| instant(v, n))
                }
                TimeUnit::Nanosecond => each::<TimestampNanosecondType>(a, out, |v| instant(v, n)),
            }
        }
        DataType::Time32(TimeUnit::Second) => {
            each::<Time32SecondType>(a, out, |v| time(v.into(), 1_000_000_000))
        }
        DataType::Time32(_) => each::<Time32MillisecondType>(a, out, |v| time(v.into(), 1_000_000)),
        DataType::Time64(TimeUnit::Microsecond) => {
            each::<Time64MicrosecondType>(a, out, |v| time(v, 1_000))
        }
        DataType::Time64(_) => each::<Time64NanosecondType>(a, out, |v| time(v, 1)),
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
                "values of Arrow type {other} are not indexed (strings, binary, integers, dates, \
                 times and timestamps are)"
            )))
        }
    }
    Ok(())
}
