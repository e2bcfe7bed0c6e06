//! What the command's integration tests share: Parquet files to index, a full scan to compare
//! with, and the `needle` binary.
#![allow(dead_code)] // each test crate uses part of it

pub mod delta_log;
pub mod s3;

use needle_lake::pq;
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::parser::parse_message_type;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

pub const SCHEMA: &str = "message t { required int64 id; optional binary name (UTF8); required int32 n; required binary raw; required double x; }";

/// Writes `files` files of `groups` row groups of `rows` rows; ids repeat across files.
pub fn generate(dir: &Path, files: usize, groups: usize, rows: usize) {
    generate_with(dir, files, groups, rows, Compression::UNCOMPRESSED);
}

/// As [`generate`], every column compressed with `codec`.
pub fn generate_with(dir: &Path, files: usize, groups: usize, rows: usize, codec: Compression) {
    let schema = Arc::new(parse_message_type(SCHEMA).unwrap());
    for f in 0..files {
        let sub = if f % 2 == 0 {
            dir.to_path_buf()
        } else {
            dir.join("sub")
        };
        std::fs::create_dir_all(&sub).unwrap();
        let file = std::fs::File::create(sub.join(format!("part-{f:03}.parquet"))).unwrap();
        let props = Arc::new(
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(rows))
                .set_compression(codec)
                .build(),
        );
        let mut w = SerializedFileWriter::new(file, schema.clone(), props).unwrap();
        for g in 0..groups {
            let ids: Vec<i64> = (0..rows)
                .map(|r| ((f * 7919 + g * 104_729 + r * 31) % 5000) as i64)
                .collect();
            let names: Vec<ByteArray> = (0..rows)
                .filter(|r| r % 5 != 0)
                .map(|r| ByteArray::from(format!("user-{}", (f + r) % 700).as_str()))
                .collect();
            let defs: Vec<i16> = (0..rows).map(|r| if r % 5 != 0 { 1 } else { 0 }).collect();
            let ns: Vec<i32> = (0..rows).map(|r| r as i32).collect();
            let raws: Vec<ByteArray> = (0..rows)
                .map(|r| ByteArray::from(vec![(r % 256) as u8, f as u8]))
                .collect();
            let mut rg = w.next_row_group().unwrap();
            let mut c = rg.next_column().unwrap().unwrap();
            c.typed::<Int64Type>()
                .write_batch(&ids, None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = rg.next_column().unwrap().unwrap();
            c.typed::<ByteArrayType>()
                .write_batch(&names, Some(&defs), None)
                .unwrap();
            c.close().unwrap();
            let mut c = rg.next_column().unwrap().unwrap();
            c.typed::<Int32Type>().write_batch(&ns, None, None).unwrap();
            c.close().unwrap();
            let mut c = rg.next_column().unwrap().unwrap();
            c.typed::<ByteArrayType>()
                .write_batch(&raws, None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = rg.next_column().unwrap().unwrap();
            c.typed::<parquet::data_type::DoubleType>()
                .write_batch(&vec![0.5; rows], None, None)
                .unwrap();
            c.close().unwrap();
            rg.close().unwrap();
        }
        w.close().unwrap();
    }
}

/// The rows whose `column` equals `value`, by reading every row of every file.
pub fn full_scan(dir: &Path, column: &str, value: &needle_index::Value) -> Vec<pq::FoundRow> {
    full_scan_files(dir, &pq::parquet_files(dir).unwrap(), column, value)
}

/// As [`full_scan`], over the given files (under `dir`) alone.
pub fn full_scan_files(
    dir: &Path,
    files: &[std::path::PathBuf],
    column: &str,
    value: &needle_index::Value,
) -> Vec<pq::FoundRow> {
    let value = needle_lake::Key::from(value.clone());
    let mut out = Vec::new();
    for f in files {
        let Some(kind) = pq::file_column_kind(f, column).unwrap() else {
            continue;
        };
        let r = SerializedFileReader::new(std::fs::File::open(f).unwrap()).unwrap();
        for (i, row) in r.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            let hit = row.get_column_iter().any(|(n, fld)| {
                n == column
                    && !matches!(fld, Field::Null)
                    && pq::field_key(fld, kind).unwrap().as_ref() == Some(&value)
            });
            if hit {
                let rel = f.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push(pq::FoundRow {
                    file: rel,
                    row: i as u64,
                    text: row.to_string(),
                });
            }
        }
    }
    out.sort();
    out
}

/// A column of [`write_columns`]: its values, in the physical type its schema declares.
pub enum Col {
    I32(Vec<i32>),
    I64(Vec<i64>),
    Str(Vec<&'static str>),
}

/// Writes one Parquet file of one row group: `message` is its schema (required columns, in the
/// order of `columns`).
pub fn write_columns(path: &Path, message: &str, columns: &[Col]) {
    let schema = Arc::new(parse_message_type(message).unwrap());
    let file = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(file, schema, Default::default()).unwrap();
    let mut rg = w.next_row_group().unwrap();
    for col in columns {
        let mut c = rg.next_column().unwrap().unwrap();
        match col {
            Col::I32(v) => c.typed::<Int32Type>().write_batch(v, None, None),
            Col::I64(v) => c.typed::<Int64Type>().write_batch(v, None, None),
            Col::Str(v) => {
                let v: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(*s)).collect();
                c.typed::<ByteArrayType>().write_batch(&v, None, None)
            }
        }
        .unwrap();
        c.close().unwrap();
    }
    rg.close().unwrap();
    w.close().unwrap();
}

/// The lines `needle lookup` printed (one per row), as (file, row).
pub fn printed_rows(o: &std::process::Output) -> Vec<(String, u64)> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let mut parts = l.split('\t');
            let file = parts.next().unwrap().to_string();
            let row = parts
                .next()
                .and_then(|r| r.parse().ok())
                .unwrap_or_else(|| panic!("not a row: {l:?}"));
            (file, row)
        })
        .collect()
}

/// What a run of the command wrote on stderr.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `o`, after asserting that its run succeeded (its stderr in the message if not).
pub fn succeeded(o: std::process::Output) -> std::process::Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// Asserts that the run `o` failed with a message holding every one of `words`.
pub fn failed_saying(o: std::process::Output, words: &[&str]) {
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let e = stderr(&o);
    assert!(words.iter().all(|w| e.contains(w)), "{words:?}: {e}");
}

/// Runs `needle` with the environment of the S3 server `server`.
pub fn needle_on(server: &s3::S3Server, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_needle"))
        .args(args)
        .envs(server.env())
        .output()
        .unwrap()
}

pub fn needle(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_needle"))
        .args(args)
        .output()
        .unwrap()
}
