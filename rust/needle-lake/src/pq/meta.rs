//! What an index over a Parquet directory covers, as its directory records it.

use crate::{Error, Result, TimeUnit, ValueType};
use std::collections::BTreeMap;
use std::path::Path;

/// Name of the index directory inside an indexed Parquet directory (by default).
pub const INDEX_SUBDIR: &str = ".needle-index";
/// File in the index directory recording what was indexed.
const META_FILE: &str = "parquet-column.txt";
/// The version of what [`META_FILE`] describes. Version 1 (no `format` line) hashed dates, times
/// and timestamps as the integer each file stores, whatever its unit; version 2 hashes the
/// instant (the time of day) they mean, and integers of every signedness exactly.
const META_FORMAT: u32 = 2;

/// What an index over a Parquet directory covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParquetMeta {
    /// The indexed column (top-level field name).
    pub column: String,
    /// The column's logical value type.
    pub kind: ValueType,
    /// One partition per row group (true) or per file (false).
    pub row_groups: bool,
}

impl ParquetMeta {
    /// The description as `parquet-column.txt` holds it.
    pub fn to_text(&self) -> String {
        let unit = match self.kind.unit() {
            Some(u) => format!("unit={}\n", u.name()),
            None => String::new(),
        };
        format!(
            "format={META_FORMAT}\ncolumn={}\ntype={}\n{unit}granularity={}\n",
            self.column,
            self.kind.name(),
            if self.row_groups { "row-group" } else { "file" }
        )
    }

    pub(super) fn store(&self, index_dir: &Path) -> Result<()> {
        let p = index_dir.join(META_FILE);
        std::fs::write(&p, self.to_text())
            .map_err(|e| Error::Other(format!("cannot write {}: {e}", p.display())))
    }

    /// Reads the description stored by [`index_dir`].
    pub fn load(index_dir: &Path) -> Result<ParquetMeta> {
        let p = index_dir.join(META_FILE);
        let text = std::fs::read_to_string(&p).map_err(|e| {
            Error::Other(format!(
                "{} is not a Parquet index ({}: {e})",
                index_dir.display(),
                p.display()
            ))
        })?;
        ParquetMeta::parse(&text, &index_dir.display().to_string())
    }

    /// Parses the description of the index `index` (a directory or URL, for errors).
    pub fn parse(text: &str, index: &str) -> Result<ParquetMeta> {
        let mut kv = BTreeMap::new();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                kv.insert(k.to_string(), v.to_string());
            }
        }
        let bad = || {
            Error::Other(format!(
                "the description of {index} ({META_FILE}) is damaged"
            ))
        };
        let format: u32 = match kv.get("format") {
            Some(f) => f.parse().map_err(|_| bad())?,
            None => 1,
        };
        let column = kv.get("column").ok_or_else(bad)?.clone();
        let type_name = kv.get("type").ok_or_else(bad)?;
        if format > META_FORMAT {
            return Err(Error::Other(format!(
                "{index} was written by a newer version of needle (format {format}; this one reads \
                 up to {META_FORMAT}): use that version, or rebuild the index with this one"
            )));
        }
        if format == 1 && type_name == "int" {
            return Err(Error::Other(format!(
                "{index} was built by an earlier version of needle, which indexed dates, times and \
                 timestamps as the integer each file stores: a lookup would miss the files that \
                 store the same instant in another unit. rebuild it: remove {index} and run \
                 `needle index-parquet DIR --column {column}` (`needle index-delta TABLE --column \
                 {column}` for a Delta table; in Python, needle.index_parquet or \
                 needle.index_delta)"
            )));
        }
        let unit = match kv.get("unit") {
            Some(u) => Some(TimeUnit::from_name(u).ok_or_else(bad)?),
            None => None,
        };
        Ok(ParquetMeta {
            column,
            kind: ValueType::from_name(type_name, unit).ok_or_else(bad)?,
            row_groups: kv.get("granularity").ok_or_else(bad)? == "row-group",
        })
    }
}
