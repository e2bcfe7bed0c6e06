//! Delta Lake tables on a local file system: the transaction log (JSON commits and Parquet
//! checkpoints) replayed to the data files live at a version, an index that follows the table's
//! versions, and lookups at any version that never miss a file live in it, however far the
//! index lags behind.
//!
//! The index lives in `TABLE/.needle-index` (Delta readers and `VACUUM` leave hidden folders
//! alone), with the version it covers in [`VERSION_FILE`]; its partitions are the table's data
//! files (or their row groups), by their path relative to the table.

use crate::pq::{self, IndexParquetOptions, IndexReport, LookupResult, ParquetMeta};
use needle_index::{Index, Options, Value};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// File in the index directory holding the table version the index covers.
pub const VERSION_FILE: &str = "delta-version.txt";

/// Reader features that do not change which files are live or how their rows read.
const UNDERSTOOD_FEATURES: &[&str] = &["timestampNtz", "vacuumProtocolCheck", "typeWidening"];

/// Partition values of a data file, by column; `None` is a null.
pub type PartitionValues = BTreeMap<String, Option<String>>;

/// One version of a Delta table: its live data files and what the reader needs to know of its
/// metadata.
#[derive(Debug, Clone, Default)]
pub struct DeltaSnapshot {
    /// The table's folder.
    pub root: PathBuf,
    /// The version loaded.
    pub version: u64,
    /// Live data files by path relative to `root` (decoded from the log's URI form), with
    /// their partition values.
    pub files: BTreeMap<String, PartitionValues>,
    /// The table's partition columns.
    pub partition_columns: Vec<String>,
    /// The table's schema, as the log stores it (Delta's JSON schema).
    pub schema: String,
    configuration: BTreeMap<String, String>,
    min_reader_version: i64,
    reader_features: Vec<String>,
}

/// One action of the log that matters to a reader.
enum Action {
    Add {
        path: String,
        partition_values: PartitionValues,
    },
    Remove {
        path: String,
    },
    Metadata {
        partition_columns: Vec<String>,
        configuration: BTreeMap<String, String>,
        schema: String,
    },
    Protocol {
        min_reader_version: i64,
        reader_features: Vec<String>,
    },
}

/// What `_delta_log` holds: commit versions, and the complete checkpoints by version.
#[derive(Default)]
struct Listing {
    commits: BTreeSet<u64>,
    checkpoints: BTreeMap<u64, Vec<PathBuf>>,
}

impl DeltaSnapshot {
    /// Loads version `version` (default: the latest) of the table in `root`: the newest
    /// checkpoint at or before it, then every commit after that checkpoint, in order.
    ///
    /// Errors name what failed: not a Delta table, a version that does not exist or whose log
    /// was cleaned up, an unreadable commit or checkpoint, a feature this reader does not read
    /// (deletion vectors, column mapping, V2 checkpoints, anything unknown), a data file
    /// outside the table's folder.
    pub fn load(root: &Path, version: Option<u64>) -> Result<DeltaSnapshot, String> {
        let log = root.join("_delta_log");
        if !log.is_dir() {
            return Err(format!(
                "{} is not a Delta table (no _delta_log folder)",
                root.display()
            ));
        }
        let listing = list_log(&log)?;
        let latest = listing
            .commits
            .iter()
            .chain(listing.checkpoints.keys())
            .max()
            .copied()
            .ok_or_else(|| format!("{} holds no commit", log.display()))?;
        let target = version.unwrap_or(latest);
        if target > latest {
            return Err(format!(
                "{} has no version {target}; the latest is {latest}",
                root.display()
            ));
        }
        let checkpoint = listing.checkpoints.range(..=target).next_back();
        let first = checkpoint.map_or(0, |(v, _)| v + 1);
        if let Some(v) = (first..=target).find(|v| !listing.commits.contains(v)) {
            return Err(match listing.commits.first() {
                Some(&oldest) if oldest > first => format!(
                    "version {target} of {} can no longer be read: its log starts at version {oldest} \
                     and holds no checkpoint at or before {target}",
                    root.display()
                ),
                _ => format!("{}: the commit of version {v} is missing", log.display()),
            });
        }
        let mut snap = DeltaSnapshot {
            root: root.to_path_buf(),
            version: target,
            ..DeltaSnapshot::default()
        };
        if let Some((_, parts)) = checkpoint {
            for part in parts {
                for action in checkpoint_actions(part)? {
                    snap.apply(action);
                }
            }
        }
        for v in first..=target {
            let path = log.join(format!("{v:020}.json"));
            for action in commit_actions(&path)? {
                snap.apply(action);
            }
        }
        snap.check_readable()?;
        Ok(snap)
    }

    fn apply(&mut self, action: Action) {
        match action {
            Action::Add {
                path,
                partition_values,
            } => {
                self.files.insert(path, partition_values);
            }
            Action::Remove { path } => {
                self.files.remove(&path);
            }
            Action::Metadata {
                partition_columns,
                configuration,
                schema,
            } => {
                self.partition_columns = partition_columns;
                self.configuration = configuration;
                self.schema = schema;
            }
            Action::Protocol {
                min_reader_version,
                reader_features,
            } => {
                self.min_reader_version = min_reader_version;
                self.reader_features = reader_features;
            }
        }
    }

    /// Refuses what this reader would read wrong: rows a deletion vector hides would be
    /// returned, renamed columns would not be found, a V2 checkpoint's sidecars would be missed.
    fn check_readable(&self) -> Result<(), String> {
        let table = self.root.display();
        if self.min_reader_version > 3 {
            return Err(format!(
                "{table} needs a Delta reader of version {}, and this one reads up to 3",
                self.min_reader_version
            ));
        }
        for f in &self.reader_features {
            match f.as_str() {
                "deletionVectors" => {
                    return Err(format!(
                        "{table} uses deletion vectors, which this version does not read: rows a \
                         deletion vector hides would be returned"
                    ))
                }
                "columnMapping" => {
                    return Err(format!(
                        "{table} uses column mapping, which this version does not read"
                    ))
                }
                f if UNDERSTOOD_FEATURES.contains(&f) => {}
                f => {
                    return Err(format!(
                    "{table} uses the Delta reader feature {f:?}, which this version does not read"
                ))
                }
            }
        }
        let mapping = self.configuration.get("delta.columnMapping.mode");
        if mapping.is_some_and(|m| m != "none") {
            return Err(format!(
                "{table} uses column mapping, which this version does not read"
            ));
        }
        if let Some(p) = self
            .files
            .keys()
            .find(|p| p.contains("://") || p.starts_with('/'))
        {
            return Err(format!(
                "{table} holds a file outside its folder ({p}), which this version does not read"
            ));
        }
        Ok(())
    }

    /// Refuses to index a partition column: Delta's own partition pruning finds its files.
    pub fn check_column(&self, column: &str) -> Result<(), String> {
        if self.partition_columns.iter().any(|c| c == column) {
            return Err(format!(
                "{column:?} is a partition column of {}: Delta's own partition pruning finds its files",
                self.root.display()
            ));
        }
        Ok(())
    }

    /// The live data files, as paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.keys().map(|rel| self.root.join(rel)).collect()
    }
}

/// The index directory of a table: `index`, or `TABLE/.needle-index`.
pub fn index_dir_of(root: &Path, index: Option<&Path>) -> PathBuf {
    index
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.join(pq::INDEX_SUBDIR))
}

/// Brings the index of the table in `root` up to the table's latest version on `o.column`:
/// files the commits since the covered version added are indexed, files they removed are
/// dropped, and the new version is recorded (last: a crash before it only repeats work).
/// A first run indexes every live file. Returns the version and what changed.
pub fn index_delta(
    root: &Path,
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<(u64, IndexReport), String> {
    let snap = DeltaSnapshot::load(root, None)?;
    snap.check_column(&o.column)?;
    let report = pq::index_files(root, &snap.paths(), o, progress)?;
    let dir = index_dir_of(root, o.index.as_deref());
    let tmp = dir.join(format!("{VERSION_FILE}.tmp"));
    let done = dir.join(VERSION_FILE);
    std::fs::write(&tmp, format!("{}\n", snap.version))
        .and_then(|()| std::fs::rename(&tmp, &done))
        .map_err(|e| format!("cannot write {}: {e}", done.display()))?;
    Ok((snap.version, report))
}

/// The table version the index in `index_dir` covers, or None if it was never brought up to one.
pub fn indexed_version(index_dir: &Path) -> Result<Option<u64>, String> {
    let p = index_dir.join(VERSION_FILE);
    match std::fs::read_to_string(&p) {
        Ok(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{} is damaged: {s:?}", p.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", p.display())),
    }
}

/// The partition ids (files, or row groups of files) of `snap` that may hold `value`: the
/// index's candidates among the files live in `snap`, plus every live file the index does not
/// hold (written after its last run, or dropped from it since), whole. Sorted.
pub fn candidates(
    snap: &DeltaSnapshot,
    index_dir: &Path,
    value: &Value,
) -> Result<Vec<String>, String> {
    let ix = Index::open(
        index_dir,
        Options {
            read_only: true,
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let ids = ix.query(value).map_err(|e| e.to_string())?;
    let covered: HashSet<String> = ix
        .partitions()
        .into_iter()
        .filter(|p| !p.removed)
        .map(|p| pq::split_id(&p.id).0.to_string())
        .collect();
    drop(ix);
    let mut out: Vec<String> = ids
        .into_iter()
        .filter(|id| snap.files.contains_key(pq::split_id(id).0))
        .collect();
    out.extend(snap.files.keys().filter(|f| !covered.contains(*f)).cloned());
    out.sort();
    Ok(out)
}

/// Finds the candidate files of `value` (text, parsed as the indexed column's type) in version
/// `version` (default: the latest) of the table and reads the matching rows from them.
pub fn lookup(
    root: &Path,
    version: Option<u64>,
    index: Option<&Path>,
    value: &str,
) -> Result<LookupResult, String> {
    let index_dir = index_dir_of(root, index);
    let meta = ParquetMeta::load(&index_dir)?;
    let snap = DeltaSnapshot::load(root, version)?;
    snap.check_column(&meta.column)?;
    let v = meta.kind.parse(value)?;
    let found = candidates(&snap, &index_dir, &v)?;
    pq::read_rows(root, &meta, &v, found)
}

/// `_delta_log`'s commits and complete checkpoints (single-file, or every part of a
/// multi-part one). Other files (CRC files, compacted logs, V2 checkpoints) are not needed.
fn list_log(log: &Path) -> Result<Listing, String> {
    let read_err = |e: std::io::Error| format!("cannot list {}: {e}", log.display());
    let mut listing = Listing::default();
    // (version, parts) -> the parts found, by number.
    let mut multipart: BTreeMap<(u64, u32), BTreeMap<u32, PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(log).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((version, rest)) = name.split_at_checked(20) else {
            continue;
        };
        let Ok(version) = version.parse::<u64>() else {
            continue;
        };
        match rest.split('.').collect::<Vec<_>>()[..] {
            ["", "json"] => {
                listing.commits.insert(version);
            }
            ["", "checkpoint", "parquet"] => {
                listing.checkpoints.insert(version, vec![path.clone()]);
            }
            ["", "checkpoint", part, parts, "parquet"] if part.len() == 10 && parts.len() == 10 => {
                if let (Ok(part), Ok(parts)) = (part.parse(), parts.parse()) {
                    multipart
                        .entry((version, parts))
                        .or_default()
                        .insert(part, path.clone());
                }
            }
            _ => {}
        }
    }
    for ((version, parts), found) in multipart {
        if found.keys().copied().eq(1..=parts) {
            listing
                .checkpoints
                .entry(version)
                .or_insert_with(|| found.into_values().collect());
        }
    }
    Ok(listing)
}

/// The actions of one JSON commit file (one action per line).
fn commit_actions(path: &Path) -> Result<Vec<Action>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| format!("{} line {}: {why}", path.display(), n + 1);
        let json: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        if let Some(action) = json_action(&json).map_err(bad)? {
            out.push(action);
        }
    }
    Ok(out)
}

fn json_action(json: &serde_json::Value) -> Result<Option<Action>, String> {
    use serde_json::Value as J;
    let text = |v: &J, key: &str, of: &str| -> Result<String, String> {
        v.get(key)
            .and_then(J::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{of} action without {key}"))
    };
    let strings = |v: Option<&J>| -> Vec<String> {
        v.and_then(J::as_array)
            .map(|a| a.iter().filter_map(J::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    // A map of strings; a value that is not a string (a null partition value) is None.
    let map = |v: Option<&J>| -> PartitionValues {
        v.and_then(J::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(add) = json.get("add") {
        return Ok(Some(Action::Add {
            path: decode_path(&text(add, "path", "add")?)?,
            partition_values: map(add.get("partitionValues")),
        }));
    }
    if let Some(remove) = json.get("remove") {
        return Ok(Some(Action::Remove {
            path: decode_path(&text(remove, "path", "remove")?)?,
        }));
    }
    if let Some(meta) = json.get("metaData") {
        return Ok(Some(Action::Metadata {
            partition_columns: strings(meta.get("partitionColumns")),
            configuration: without_nulls(map(meta.get("configuration"))),
            schema: text(meta, "schemaString", "metaData")?,
        }));
    }
    if let Some(protocol) = json.get("protocol") {
        return Ok(Some(Action::Protocol {
            min_reader_version: protocol
                .get("minReaderVersion")
                .and_then(J::as_i64)
                .ok_or("protocol action without minReaderVersion")?,
            reader_features: strings(protocol.get("readerFeatures")),
        }));
    }
    Ok(None)
}

/// The actions of one checkpoint file (one action per row, in the column named after it).
fn checkpoint_actions(path: &Path) -> Result<Vec<Action>, String> {
    let bad = |e: String| format!("cannot read the checkpoint {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let reader = SerializedFileReader::new(file).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for row in reader.get_row_iter(None).map_err(|e| bad(e.to_string()))? {
        let row = row.map_err(|e| bad(e.to_string()))?;
        for (name, field) in row.get_column_iter() {
            let Field::Group(g) = field else { continue };
            let action = match name.as_str() {
                "add" => Action::Add {
                    path: decode_path(
                        &group_str(g, "path").ok_or_else(|| bad("add without path".into()))?,
                    )
                    .map_err(bad)?,
                    partition_values: group_map(g, "partitionValues"),
                },
                "remove" => Action::Remove {
                    path: decode_path(
                        &group_str(g, "path").ok_or_else(|| bad("remove without path".into()))?,
                    )
                    .map_err(bad)?,
                },
                "metaData" => Action::Metadata {
                    partition_columns: group_list(g, "partitionColumns"),
                    configuration: without_nulls(group_map(g, "configuration")),
                    schema: group_str(g, "schemaString").unwrap_or_default(),
                },
                "protocol" => Action::Protocol {
                    min_reader_version: group_field(g, "minReaderVersion")
                        .and_then(|f| match f {
                            Field::Int(i) => Some(*i as i64),
                            Field::Long(i) => Some(*i),
                            _ => None,
                        })
                        .ok_or_else(|| bad("protocol without minReaderVersion".into()))?,
                    reader_features: group_list(g, "readerFeatures"),
                },
                _ => continue,
            };
            out.push(action);
        }
    }
    Ok(out)
}

fn group_field<'a>(g: &'a Row, key: &str) -> Option<&'a Field> {
    g.get_column_iter().find(|(k, _)| *k == key).map(|(_, f)| f)
}

fn group_str(g: &Row, key: &str) -> Option<String> {
    match group_field(g, key)? {
        Field::Str(s) => Some(s.clone()),
        _ => None,
    }
}

fn group_list(g: &Row, key: &str) -> Vec<String> {
    match group_field(g, key) {
        Some(Field::ListInternal(l)) => l
            .elements()
            .iter()
            .filter_map(|f| match f {
                Field::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn group_map(g: &Row, key: &str) -> PartitionValues {
    match group_field(g, key) {
        Some(Field::MapInternal(m)) => m
            .entries()
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Field::Str(k), Field::Str(v)) => Some((k.clone(), Some(v.clone()))),
                (Field::Str(k), _) => Some((k.clone(), None)),
                _ => None,
            })
            .collect(),
        _ => PartitionValues::new(),
    }
}

/// A map's entries that have a value.
fn without_nulls(m: PartitionValues) -> BTreeMap<String, String> {
    m.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
}

/// A path as the log writes it (a relative URI, percent-encoded) as a file path.
fn decode_path(uri: &str) -> Result<String, String> {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = uri
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in the path {uri:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the path {uri:?} is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_decoded() {
        assert_eq!(
            decode_path("day=2026-01-01/part%20one%3A1.parquet").unwrap(),
            "day=2026-01-01/part one:1.parquet"
        );
        assert_eq!(decode_path("caf%C3%A9.parquet").unwrap(), "café.parquet");
        assert!(decode_path("bad%2").is_err());
        assert!(decode_path("bad%zz.parquet").is_err());
        assert!(decode_path("%FF.parquet").is_err());
    }
}
