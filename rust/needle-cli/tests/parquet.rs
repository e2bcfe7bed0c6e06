//! `needle index-parquet` + `needle lookup` on generated Parquet files return exactly the
//! rows a full scan returns; bad input gets clear errors.

use needle_lake::pq;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::data_type::{ByteArray, FixedLenByteArrayType};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::sync::Arc;

mod common;
use common::{full_scan, generate, generate_with, needle};

#[test]
fn lookups_return_exactly_the_rows_of_a_full_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir, 8, 3, 400);
    let d = dir.to_str().unwrap();
    for (column, granularity, index) in [
        ("id", false, "ix-id"),
        ("name", true, "ix-name"),
        ("raw", false, "ix-raw"),
    ] {
        let ixp = dir.join(".").join(format!(".{index}"));
        let ixs = ixp.to_str().unwrap();
        let mut args = vec!["index-parquet", d, "--column", column, "--index", ixs];
        if granularity {
            args.push("--row-groups");
        }
        let o = needle(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let probes: Vec<(String, needle_index::Value)> = match column {
            "id" => (0..5200)
                .step_by(37)
                .map(|v: i64| (v.to_string(), needle_index::Value::Int(v)))
                .collect(),
            "name" => (0..720)
                .step_by(13)
                .map(|v| {
                    (
                        format!("user-{v}"),
                        needle_index::Value::Str(format!("user-{v}")),
                    )
                })
                .collect(),
            _ => (0..260)
                .step_by(9)
                .map(|v| {
                    (
                        format!("{:02x}03", v % 256),
                        needle_index::Value::Bytes(vec![(v % 256) as u8, 3]),
                    )
                })
                .collect(),
        };
        let mut nonempty = 0;
        for (text, v) in &probes {
            let want = full_scan(dir, column, v);
            let got = pq::lookup(dir, Some(&ixp), text).unwrap();
            assert_eq!(got.rows, want, "column {column} value {text}");
            // Every file holding the value is a candidate.
            for r in &want {
                assert!(got.candidates.iter().any(|c| pq::split_id(c).0 == r.file));
            }
            nonempty += !want.is_empty() as usize;
        }
        assert!(
            nonempty > probes.len() / 3,
            "test values should mostly be present"
        );
    }
    // The CLI prints the same rows.
    let o = needle(&[
        "lookup",
        d,
        "42",
        "--index",
        dir.join(".ix-id").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let lines = String::from_utf8(o.stdout).unwrap().lines().count();
    assert_eq!(
        lines,
        full_scan(dir, "id", &needle_index::Value::Int(42)).len()
    );
}

#[test]
fn reindexing_picks_up_new_and_removed_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir, 3, 1, 100);
    let d = dir.to_str().unwrap();
    assert!(needle(&["index-parquet", d, "--column", "id"])
        .status
        .success());
    std::fs::remove_file(dir.join("part-000.parquet")).unwrap();
    let o = needle(&["index-parquet", d, "--column", "id"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("0 partitions") && out.contains("2 unchanged, 1 removed"),
        "{out}"
    );
    for v in 0..300i64 {
        assert_eq!(
            pq::lookup(dir, None, &v.to_string()).unwrap().rows,
            full_scan(dir, "id", &needle_index::Value::Int(v))
        );
    }
}

#[test]
fn bad_input_gets_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir, 2, 1, 50);
    let d = dir.to_str().unwrap();
    let err = |args: &[&str]| {
        let o = needle(args);
        assert!(!o.status.success());
        String::from_utf8(o.stderr).unwrap()
    };
    let e = err(&["index-parquet", d, "--column", "nope"]);
    assert!(
        e.contains("no column \"nope\"") && e.contains("part-000.parquet"),
        "{e}"
    );
    let e = err(&["index-parquet", d, "--column", "x"]);
    assert!(e.contains("not supported"), "{e}");
    std::fs::write(dir.join("broken.parquet"), b"not parquet at all").unwrap();
    let e = err(&["index-parquet", d, "--column", "id"]);
    assert!(e.contains("broken.parquet"), "{e}");
    std::fs::remove_file(dir.join("broken.parquet")).unwrap();
    assert!(needle(&["index-parquet", d, "--column", "id"])
        .status
        .success());
    let e = err(&["lookup", d, "not-a-number"]);
    assert!(e.contains("not a 64-bit integer"), "{e}");
    let e = err(&["lookup", "/nonexistent-dir", "1"]);
    assert!(e.contains("not a Parquet index"), "{e}");
}

/// Files written with every codec Parquet writers use are indexed and looked up alike.
#[test]
fn every_codec_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    for codec in [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4,
        Compression::LZ4_RAW,
        Compression::ZSTD(ZstdLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
    ] {
        let dir = tmp.path().join(codec.to_string());
        generate_with(&dir, 2, 2, 300, codec);
        let d = dir.to_str().unwrap();
        let o = needle(&["index-parquet", d, "--column", "id"]);
        assert!(
            o.status.success(),
            "{codec}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut found = 0;
        for v in (0..5000i64).step_by(97) {
            let want = full_scan(&dir, "id", &needle_index::Value::Int(v));
            let got = pq::lookup(&dir, None, &v.to_string()).unwrap();
            assert_eq!(got.rows, want, "{codec}: value {v}");
            found += want.len();
        }
        assert!(found > 0, "{codec}: no probe found a row");
    }
}

/// A FLOAT16 column is refused with a message, not indexed with its values dropped.
#[test]
fn float16_columns_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = Arc::new(
        parse_message_type("message t { required fixed_len_byte_array(2) h (FLOAT16); }").unwrap(),
    );
    let file = std::fs::File::create(tmp.path().join("h.parquet")).unwrap();
    let mut w = SerializedFileWriter::new(file, schema, Default::default()).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut c = rg.next_column().unwrap().unwrap();
    let values: Vec<parquet::data_type::FixedLenByteArray> =
        vec![ByteArray::from(vec![0u8, 0x3c]).into(); 10];
    c.typed::<FixedLenByteArrayType>()
        .write_batch(&values, None, None)
        .unwrap();
    c.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();
    let o = needle(&[
        "index-parquet",
        tmp.path().to_str().unwrap(),
        "--column",
        "h",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("FLOAT16") && e.contains("h.parquet"), "{e}");
}
