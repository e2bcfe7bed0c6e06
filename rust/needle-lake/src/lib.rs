//! The partition index in the data lake: value parsing, and indexing and looking up Parquet
//! files and Delta Lake tables, shared by the `needle` command and its front ends.

pub mod columns;
pub mod delta;
mod error;
pub mod object;
pub mod pq;
mod time;

pub use error::{Error, Result};
pub use time::{parse_instant, parse_time_of_day, NANOS_PER_DAY};

use needle_index::{hash_bytes, hash_i64, Value};

/// The unit of the integers a column of dates, times or timestamps stores, and of the integers
/// a lookup of such a column is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeUnit {
    Nanos,
    Micros,
    Millis,
    Seconds,
    Days,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub fn nanos(self) -> i128 {
        match self {
            TimeUnit::Nanos => 1,
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Days => NANOS_PER_DAY,
        }
    }

    /// Name used in files and messages: `ns`, `us`, `ms`, `s`, `day`.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Nanos => "ns",
            TimeUnit::Micros => "us",
            TimeUnit::Millis => "ms",
            TimeUnit::Seconds => "s",
            TimeUnit::Days => "day",
        }
    }

    /// Inverse of [`name`](Self::name).
    pub fn from_name(s: &str) -> Option<TimeUnit> {
        [
            TimeUnit::Nanos,
            TimeUnit::Micros,
            TimeUnit::Millis,
            TimeUnit::Seconds,
            TimeUnit::Days,
        ]
        .into_iter()
        .find(|u| u.name() == s)
    }

    fn plural(self) -> &'static str {
        match self {
            TimeUnit::Nanos => "nanoseconds",
            TimeUnit::Micros => "microseconds",
            TimeUnit::Millis => "milliseconds",
            TimeUnit::Seconds => "seconds",
            TimeUnit::Days => "days",
        }
    }
}

/// The kind of values an index holds, and how values given as text (on the command line, in
/// input files, in a request) are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// UTF-8 strings (one per line; the line without its line ending).
    String,
    /// Integers in decimal: any value of a signed or unsigned column of up to 64 bits.
    Int,
    /// Binary values written in hexadecimal.
    Hex,
    /// Instants: timestamps of any unit, with or without a time zone, and dates (their midnight,
    /// UTC). Given as ISO 8601 text or as an integer of this unit since 1970-01-01T00:00:00Z.
    Timestamp(TimeUnit),
    /// Times of day of any unit. Given as `HH:MM[:SS[.fffffffff]]` or as an integer of this unit
    /// since midnight.
    Time(TimeUnit),
}

impl ValueType {
    /// Parses `s` as a value of this type.
    pub fn parse(self, s: &str) -> Result<Key> {
        match self {
            ValueType::String => Ok(Key::Str(s.to_string())),
            ValueType::Int => parse_int(s).map(Key::Int).ok_or_else(|| {
                Error::Other(format!(
                    "{s:?} is not a 64-bit integer (from {} to {}, the largest unsigned one)",
                    i64::MIN,
                    u64::MAX
                ))
            }),
            ValueType::Hex => parse_hex(s.trim()).map(Key::Bytes),
            ValueType::Timestamp(unit) => {
                let t = s.trim();
                let ns = match t.parse::<i64>() {
                    Ok(n) => Some(n as i128 * unit.nanos()),
                    Err(_) => parse_instant(t),
                };
                ns.map(Key::Instant).ok_or_else(|| {
                    Error::Other(format!(
                        "{s:?} is not a timestamp: give YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM] \
                         (without a zone: UTC), or an integer of {} since 1970-01-01T00:00:00Z",
                        unit.plural()
                    ))
                })
            }
            ValueType::Time(unit) => {
                let t = s.trim();
                let ns = match t.parse::<i64>() {
                    Ok(n) => i64::try_from(n as i128 * unit.nanos()).ok(),
                    Err(_) => parse_time_of_day(t),
                };
                ns.map(Key::Time).ok_or_else(|| {
                    Error::Other(format!(
                        "{s:?} is not a time of day: give HH:MM[:SS[.fffffffff]], or an integer of \
                         {} since midnight",
                        unit.plural()
                    ))
                })
            }
        }
    }

    /// Name used in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Int => "int",
            ValueType::Hex => "binary",
            ValueType::Timestamp(_) => "timestamp",
            ValueType::Time(_) => "time",
        }
    }

    /// The unit of the integers this type reads (dates, times and timestamps).
    pub fn unit(self) -> Option<TimeUnit> {
        match self {
            ValueType::Timestamp(u) | ValueType::Time(u) => Some(u),
            _ => None,
        }
    }

    /// Whether integers (JSON numbers) are values of this type.
    pub fn takes_integers(self) -> bool {
        matches!(
            self,
            ValueType::Int | ValueType::Timestamp(_) | ValueType::Time(_)
        )
    }

    /// The type named `name` (as [`name`](Self::name) writes it) with `unit` for dates, times and
    /// timestamps.
    pub fn from_name(name: &str, unit: Option<TimeUnit>) -> Option<ValueType> {
        match (name, unit) {
            ("string", _) => Some(ValueType::String),
            ("int", _) => Some(ValueType::Int),
            ("binary" | "hex", _) => Some(ValueType::Hex),
            ("timestamp", Some(u)) => Some(ValueType::Timestamp(u)),
            ("time", Some(u)) if u != TimeUnit::Days => Some(ValueType::Time(u)),
            _ => None,
        }
    }

    /// Whether values of `self` and `other` are the same kind (the unit of integers aside).
    pub fn same_kind(self, other: ValueType) -> bool {
        self.name() == other.name()
    }

    /// What the type is, for messages: its name, and the unit integers are read in.
    pub fn describe(self) -> String {
        match self {
            ValueType::Timestamp(u) => format!(
                "timestamp (dates and timestamps of every unit as instants; integers in {} since 1970-01-01T00:00:00Z)",
                u.plural()
            ),
            ValueType::Time(u) => format!("time (integers in {} since midnight)", u.plural()),
            other => other.name().to_string(),
        }
    }
}

/// A value of an indexed column, exactly: what lookups compare rows with, and what the index
/// hashes. One value of a column is one key whatever the type a file stores it as: integers of
/// every width and signedness are one integer, dates and timestamps of every unit, with or
/// without a time zone, one instant (a date is its midnight, UTC, as DuckDB compares a date with
/// a timestamp), times of every unit one time of day.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A string.
    Str(String),
    /// Binary.
    Bytes(Vec<u8>),
    /// An integer of a signed or unsigned column of up to 64 bits.
    Int(i128),
    /// An instant: nanoseconds since 1970-01-01T00:00:00Z.
    Instant(i128),
    /// A time of day: nanoseconds since midnight.
    Time(i64),
}

impl Key {
    /// The 64-bit hash the index stores: strings and binary as format v1's `Str` and `Bytes`,
    /// integers as its `Int` (unsigned values above 2^63 - 1 keep their bits), an instant as
    /// XXH64 of the 16 little-endian bytes of its nanoseconds (an `i128`), a time of day as the
    /// `Int` of its nanoseconds.
    pub fn hash(&self) -> u64 {
        match self {
            Key::Str(s) => hash_bytes(s.as_bytes()),
            Key::Bytes(b) => hash_bytes(b),
            Key::Int(i) => hash_i64(*i as i64),
            Key::Instant(ns) => hash_bytes(&instant_bytes(*ns)),
            Key::Time(ns) => hash_i64(*ns),
        }
    }
}

/// The bytes an instant (nanoseconds since the epoch) is hashed as: its 16 little-endian bytes.
pub fn instant_bytes(ns: i128) -> [u8; 16] {
    ns.to_le_bytes()
}

impl From<Value> for Key {
    fn from(v: Value) -> Key {
        match v {
            Value::Str(s) => Key::Str(s),
            Value::Int(i) => Key::Int(i as i128),
            Value::Bytes(b) => Key::Bytes(b),
        }
    }
}

/// An integer of a signed or unsigned 64-bit column: from `i64::MIN` to `u64::MAX`.
fn parse_int(s: &str) -> Option<i128> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let v: i128 = t.parse().ok()?;
    (i64::MIN as i128..=u64::MAX as i128)
        .contains(&v)
        .then_some(v)
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Other(format!(
            "{s:?} is not an even-length hexadecimal string"
        )));
    }
    Ok((0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_every_value_of_a_64_bit_column() {
        let int = |s: &str| ValueType::Int.parse(s).ok();
        assert_eq!(
            int("-9223372036854775808"),
            Some(Key::Int(i64::MIN as i128))
        );
        assert_eq!(
            int("18446744073709551615"),
            Some(Key::Int(u64::MAX as i128))
        );
        assert_eq!(int(" 42 "), Some(Key::Int(42)));
        assert_eq!(int("18446744073709551616"), None);
        assert_eq!(int("-9223372036854775809"), None);
        // An unsigned value keeps its bits in the index: the hash of the same 8 bytes.
        assert_eq!(
            Key::Int(u64::MAX as i128).hash(),
            Value::Int(-1).hash(),
            "format v1's Int"
        );
        assert_ne!(Key::Int(u64::MAX as i128), Key::Int(-1));
    }

    #[test]
    fn timestamps_read_integers_in_their_unit_and_iso_text() {
        let us = ValueType::Timestamp(TimeUnit::Micros);
        let want = Key::Instant(1_704_164_645_678_901_000);
        assert_eq!(us.parse("1704164645678901").unwrap(), want);
        assert_eq!(us.parse("2024-01-02T03:04:05.678901Z").unwrap(), want);
        assert_eq!(
            ValueType::Timestamp(TimeUnit::Nanos)
                .parse("1704164645678901000")
                .unwrap(),
            want
        );
        assert_eq!(
            ValueType::Timestamp(TimeUnit::Days).parse("19724").unwrap(),
            us.parse("2024-01-02").unwrap()
        );
        let e = us.parse("yesterday").unwrap_err().to_string();
        assert!(e.contains("microseconds since 1970"), "{e}");
        let t = ValueType::Time(TimeUnit::Millis);
        assert_eq!(t.parse("1000").unwrap(), Key::Time(1_000_000_000));
        assert_eq!(t.parse("00:00:01").unwrap(), Key::Time(1_000_000_000));
    }
}
