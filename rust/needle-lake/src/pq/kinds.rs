//! What a file's column holds, as its Parquet schema declares it, and the keys of its values.

use super::files::open_parquet;
use crate::{Error, Key, Result, TimeUnit, ValueType, NANOS_PER_DAY};
use parquet::basic::{
    ConvertedType, LogicalType, Repetition, TimeUnit as ParquetUnit, Type as PhysicalType,
};
use parquet::file::reader::{ChunkReader, FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use parquet::schema::types::{Type, TypePtr};
use std::fs::File;
use std::path::Path;

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
pub(super) fn common_value_type(
    column: &str,
    kinds: &[(ColumnKind, String)],
) -> Result<Option<ValueType>> {
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

/// The top-level field `column` of a file's schema and what it holds; `None` if the file has no
/// such column.
pub(super) fn find_column<R: ChunkReader + 'static>(
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
pub(super) fn column_of<R: ChunkReader + 'static>(
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

pub(super) fn column_key(row: &Row, column: &str, kind: ColumnKind) -> Result<Option<Key>> {
    match row.get_column_iter().find(|(n, _)| n.as_str() == column) {
        Some((_, f)) => field_key(f, kind),
        None => Ok(None),
    }
}
