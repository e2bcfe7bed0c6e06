//! Delta Lake logs written by hand, commit by commit, for the tests of Delta tables.

use needle_index::Value;
use needle_lake::pq::FoundRow;
use std::path::{Path, PathBuf};

/// The data files under `table` (as `generate` writes them), relative to it: what the log names.
pub fn data_files(table: &Path) -> Vec<String> {
    needle_lake::pq::parquet_files(table)
        .unwrap()
        .iter()
        .map(|f| {
            f.strip_prefix(table)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// A Delta table in `table` of `files` data files (`groups` row groups of `rows` rows each, as
/// `generate` writes them) whose version 0 adds the first `live` of them; returns every data
/// file, relative to the table, in the order `data_files` gives.
pub fn table_of_files(
    table: &Path,
    files: usize,
    groups: usize,
    rows: usize,
    live: usize,
) -> Vec<String> {
    super::generate(table, files, groups, rows);
    let pool = data_files(table);
    let mut actions = vec![PROTOCOL.to_string(), metadata("", "")];
    actions.extend(pool[..live].iter().map(|f| add(f)));
    commit(table, 0, &actions);
    pool
}

/// Runs `needle index-delta TABLE --column id --row-groups` and asserts that it succeeded.
pub fn index_delta(table: &str) -> std::process::Output {
    let o = super::needle(&["index-delta", table, "--column", "id", "--row-groups"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// A table whose column `n` was added by schema evolution: version 0's schema has `id` alone and
/// its file `v0.parquet` no `n`; version 1 adds `n` to the schema and the file `v1.parquet`
/// (ids 4, 5, 6 with n 40, 50, 60).
pub fn table_with_a_column_added(table: &Path) {
    use super::{write_columns, Col};
    write_columns(
        &table.join("v0.parquet"),
        "message t { required int64 id; }",
        &[Col::I64(vec![1, 2, 3])],
    );
    write_columns(
        &table.join("v1.parquet"),
        "message t { required int64 id; required int64 n; }",
        &[Col::I64(vec![4, 5, 6]), Col::I64(vec![40, 50, 60])],
    );
    commit(
        table,
        0,
        &[PROTOCOL.into(), metadata("", ""), add("v0.parquet")],
    );
    let with_n = metadata("", "").replace(
        r#"\"metadata\":{}}]}"#,
        r#"\"metadata\":{}},{\"name\":\"n\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}"#,
    );
    assert_ne!(with_n, metadata("", ""));
    commit(table, 1, &[with_n, add("v1.parquet")]);
}

/// A protocol action readers of version 1 read.
pub const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
const SCHEMA: &str = r#"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":false,\"metadata\":{}}]}"#;

/// A metadata action: one `id` column of longs, with these partition columns and configuration
/// (JSON fragments).
pub fn metadata(partition_columns: &str, configuration: &str) -> String {
    format!(
        r#"{{"metaData":{{"id":"t","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{SCHEMA}","partitionColumns":[{partition_columns}],"configuration":{{{configuration}}},"createdTime":0}}}}"#
    )
}

/// A path as the log writes it: a relative URI.
pub fn uri(path: &str) -> String {
    path.replace('%', "%25").replace(' ', "%20")
}

/// An add action of the data file `path` (relative to the table).
pub fn add(path: &str) -> String {
    format!(
        r#"{{"add":{{"path":"{}","partitionValues":{{}},"size":1,"modificationTime":0,"dataChange":true}}}}"#,
        uri(path)
    )
}

/// A remove action of the data file `path`.
pub fn remove(path: &str) -> String {
    format!(
        r#"{{"remove":{{"path":"{}","deletionTimestamp":0,"dataChange":true}}}}"#,
        uri(path)
    )
}

/// Writes commit `version` of the table with `actions`, one per line.
pub fn commit(table: &Path, version: u64, actions: &[String]) {
    let log = table.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let mut text = actions.join("\n");
    text.push('\n');
    std::fs::write(log.join(format!("{version:020}.json")), text).unwrap();
}

/// A deletion vector stored inline in the log (`storageType` "i") that hides the rows at
/// `positions` (fewer than 4,096, an even number of them), as the JSON of its descriptor: the
/// portable serialization of a 64-bit Roaring bitmap (one 32-bit bitmap of one array container)
/// after its magic number, Z85-encoded, as the Delta protocol specifies.
pub fn inline_deletion_vector(positions: &[u16]) -> String {
    assert!(positions.len().is_multiple_of(2) && !positions.is_empty() && positions.len() < 4096);
    let mut sorted = positions.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), positions.len(), "distinct positions");
    let mut b = Vec::new();
    b.extend_from_slice(&1_681_511_377u32.to_le_bytes()); // portable RoaringBitmapArray magic
    b.extend_from_slice(&1u64.to_le_bytes()); // one 32-bit bitmap
    b.extend_from_slice(&0u32.to_le_bytes()); // for the high 32 bits 0
    b.extend_from_slice(&12_346u32.to_le_bytes()); // no run containers
    b.extend_from_slice(&1u32.to_le_bytes()); // one container
    b.extend_from_slice(&0u16.to_le_bytes()); // key 0
    b.extend_from_slice(&(sorted.len() as u16 - 1).to_le_bytes());
    b.extend_from_slice(&16u32.to_le_bytes()); // the container's offset in the bitmap
    for p in &sorted {
        b.extend_from_slice(&p.to_le_bytes());
    }
    format!(
        r#"{{"storageType":"i","pathOrInlineDv":"{}","sizeInBytes":{},"cardinality":{}}}"#,
        z85(&b),
        b.len(),
        sorted.len()
    )
}

/// Z85 (ZeroMQ's Base85) of bytes whose length is a multiple of 4.
fn z85(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] =
        b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
    assert!(bytes.len().is_multiple_of(4));
    let mut out = String::new();
    for chunk in bytes.chunks(4) {
        let mut v = u32::from_be_bytes(chunk.try_into().unwrap());
        let mut five = [0u8; 5];
        for c in five.iter_mut().rev() {
            *c = ALPHABET[(v % 85) as usize];
            v /= 85;
        }
        out.push_str(std::str::from_utf8(&five).unwrap());
    }
    out
}

/// An add action of `path` that carries the deletion vector `descriptor` (JSON).
pub fn add_with_deletion_vector(path: &str, descriptor: &str) -> String {
    add(path).replace(
        r#""dataChange":true"#,
        &format!(r#""dataChange":true,"deletionVector":{descriptor}"#),
    )
}

/// A protocol action that turns on `feature` (readers and writers).
pub fn protocol_with(feature: &str) -> String {
    format!(
        r#"{{"protocol":{{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["{feature}"],"writerFeatures":["{feature}"]}}}}"#
    )
}

/// Writes commit `version` of a table of `generate`'s files with row groups of 100 rows: it hides
/// 40 rows of `file` (the first file written), in every row group, through an inline deletion
/// vector. Returns the hidden rows' positions, sorted.
pub fn hide_rows(table: &Path, version: u64, file: &str) -> Vec<u64> {
    let hidden: Vec<u16> = (0..40).map(|i| i * 7 + 3).collect();
    commit(
        table,
        version,
        &[
            protocol_with("deletionVectors"),
            remove(file),
            add_with_deletion_vector(file, &inline_deletion_vector(&hidden)),
        ],
    );
    hidden.iter().map(|&p| p as u64).collect()
}

/// Values to probe in the table of [`hide_rows`]: the ids of the hidden rows (as `generate`
/// writes its first file) and every `step`-th id, each with the rows a full scan of `files`
/// finds, all of them and without those hidden in `file`.
pub fn hidden_row_probes(
    table: &Path,
    files: &[PathBuf],
    file: &str,
    hidden: &[u64],
    step: usize,
) -> Vec<(i64, Vec<FoundRow>, Vec<FoundRow>)> {
    let mut probes: Vec<i64> = hidden
        .iter()
        .map(|&p| ((p as i64 / 100) * 104_729 + (p as i64 % 100) * 31) % 5000)
        .collect();
    probes.extend((0..5000i64).step_by(step));
    probes
        .into_iter()
        .map(|v| {
            let all = super::full_scan_files(table, files, "id", &Value::Int(v));
            let kept = all
                .iter()
                .filter(|r| !(r.file == file && hidden.contains(&r.row)))
                .cloned()
                .collect();
            (v, all, kept)
        })
        .collect()
}
