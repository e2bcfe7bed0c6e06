//! The partition index in the data lake: value parsing, and indexing and looking up Parquet
//! files and Delta Lake tables, shared by the `needle` command and its front ends.

pub mod columns;
pub mod delta;
mod error;
pub mod pq;

pub use error::{Error, Result};

use needle_index::Value;

/// How text values given on the command line or in input files are interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// UTF-8 strings (one per line; the line without its line ending).
    String,
    /// Signed 64-bit integers in decimal.
    Int,
    /// Binary values written in hexadecimal.
    Hex,
}

impl ValueType {
    /// Parses `s` as a value of this type.
    pub fn parse(self, s: &str) -> Result<Value> {
        match self {
            ValueType::String => Ok(Value::Str(s.to_string())),
            ValueType::Int => s
                .trim()
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|e| Error::Other(format!("{s:?} is not a 64-bit integer: {e}"))),
            ValueType::Hex => parse_hex(s.trim()).map(Value::Bytes),
        }
    }

    /// Name used in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Int => "int",
            ValueType::Hex => "binary",
        }
    }

    /// Inverse of [`name`](Self::name).
    pub fn from_name(s: &str) -> Option<ValueType> {
        match s {
            "string" => Some(ValueType::String),
            "int" => Some(ValueType::Int),
            "binary" | "hex" => Some(ValueType::Hex),
            _ => None,
        }
    }
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
