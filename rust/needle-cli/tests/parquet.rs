//! `needle index-parquet` + `needle lookup` on generated Parquet files return exactly the
//! rows a full scan returns; bad input gets clear errors.

use needle_lake::pq;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::data_type::{ByteArray, FixedLenByteArrayType};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::path::Path;
use std::sync::Arc;

mod common;
use common::{full_scan, generate, generate_with, needle, printed_rows, write_columns, Col};

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

/// 2024-01-02T03:04:05.678901Z in microseconds since the epoch.
const INSTANT_US: i64 = 1_704_164_645_678_901;
/// 2024-01-02T00:00:00Z in microseconds since the epoch.
const MIDNIGHT_US: i64 = 1_704_153_600_000_000;

/// Files that store one instant in different units, with and without a time zone, and a file of
/// dates: a value means one instant whatever the unit, as DuckDB compares them (a date is its
/// midnight).
fn files_of_every_time_unit(dir: &Path) {
    let ts = |unit: &str, utc: bool| {
        format!("message t {{ required int64 ts (TIMESTAMP({unit},{utc})); required int32 n; }}")
    };
    write_columns(
        &dir.join("a-micros.parquet"),
        &ts("MICROS", false),
        &[
            Col::I64(vec![INSTANT_US, INSTANT_US + 1, MIDNIGHT_US]),
            Col::I32(vec![0, 1, 2]),
        ],
    );
    write_columns(
        &dir.join("b-nanos.parquet"),
        &ts("NANOS", false),
        &[
            Col::I64(vec![
                INSTANT_US * 1000,
                INSTANT_US * 1000 + 1,
                MIDNIGHT_US * 1000,
            ]),
            Col::I32(vec![0, 1, 2]),
        ],
    );
    write_columns(
        &dir.join("c-millis-utc.parquet"),
        &ts("MILLIS", true),
        &[
            Col::I64(vec![INSTANT_US / 1000, MIDNIGHT_US / 1000]),
            Col::I32(vec![0, 1]),
        ],
    );
    write_columns(
        &dir.join("d-date.parquet"),
        "message t { required int32 ts (DATE); required int32 n; }",
        &[Col::I32(vec![19_724, 19_725]), Col::I32(vec![0, 1])],
    );
}

#[test]
fn a_timestamp_is_one_instant_whatever_the_files_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    files_of_every_time_unit(dir);
    let d = dir.to_str().unwrap();
    let o = needle(&["index-parquet", d, "--column", "ts"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = |value: &str| printed_rows(&needle(&["lookup", d, value]));
    let at = |f: &str, r: u64| (f.to_string(), r);
    // The files' units differ: integers are microseconds since the epoch.
    let instant = vec![at("a-micros.parquet", 0), at("b-nanos.parquet", 0)];
    assert_eq!(rows(&INSTANT_US.to_string()), instant);
    assert_eq!(rows("2024-01-02T03:04:05.678901Z"), instant);
    assert_eq!(rows("2024-01-02 05:04:05.678901+02:00"), instant);
    // A nanosecond only the file of nanoseconds can hold.
    assert_eq!(
        rows("2024-01-02T03:04:05.678901001"),
        [at("b-nanos.parquet", 1)]
    );
    // Midnight: in every file, the date's included.
    let midnight = vec![
        at("a-micros.parquet", 2),
        at("b-nanos.parquet", 2),
        at("c-millis-utc.parquet", 1),
        at("d-date.parquet", 0),
    ];
    assert_eq!(rows(&MIDNIGHT_US.to_string()), midnight);
    assert_eq!(rows("2024-01-02"), midnight);
    assert_eq!(rows("2024-01-03"), [at("d-date.parquet", 1)]);
    // The millisecond file holds 03:04:05.678, not .678901.
    assert_eq!(
        rows("2024-01-02T03:04:05.678Z"),
        [at("c-millis-utc.parquet", 0)]
    );
    let o = needle(&["lookup", d, "2024-13-02"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("2024-13-02") && e.contains("timestamp"), "{e}");
}

/// A folder whose files share one unit reads integers in that unit, as the files store them.
#[test]
fn integers_are_in_the_files_unit_when_they_share_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (name, values) in [
        ("x.parquet", [INSTANT_US * 1000, 7]),
        ("y.parquet", [8, INSTANT_US * 1000]),
    ] {
        write_columns(
            &dir.join(name),
            "message t { required int64 ts (TIMESTAMP(NANOS,true)); }",
            &[Col::I64(values.to_vec())],
        );
    }
    let d = dir.to_str().unwrap();
    assert!(needle(&["index-parquet", d, "--column", "ts"])
        .status
        .success());
    let both = vec![("x.parquet".to_string(), 0), ("y.parquet".to_string(), 1)];
    assert_eq!(
        printed_rows(&needle(&["lookup", d, &(INSTANT_US * 1000).to_string()])),
        both
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "2024-01-02T03:04:05.678901Z"])),
        both
    );
}

/// An index whose description predates the hashing of instants is refused with what to do,
/// never read with the old meaning (a false negative for files of other units).
#[test]
fn an_index_of_an_earlier_version_is_refused_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    files_of_every_time_unit(dir);
    let d = dir.to_str().unwrap();
    assert!(needle(&["index-parquet", d, "--column", "ts"])
        .status
        .success());
    // The description an earlier version wrote: no format line, timestamps as plain integers.
    let meta = dir.join(".needle-index/parquet-column.txt");
    std::fs::write(&meta, "column=ts\ntype=int\ngranularity=file\n").unwrap();
    for args in [
        vec!["lookup", d, "1"],
        vec!["index-parquet", d, "--column", "ts"],
    ] {
        let o = needle(&args);
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("earlier version") && e.contains("rebuild") && e.contains("index-parquet"),
            "{args:?}: {e}"
        );
    }
    // Strings hash as they did: an earlier index of a string column is still read.
    let names = tmp.path().join("names");
    std::fs::create_dir(&names).unwrap();
    write_columns(
        &names.join("n.parquet"),
        "message t { required binary s (UTF8); }",
        &[Col::Str(vec!["a", "b"])],
    );
    let n = names.to_str().unwrap();
    assert!(needle(&["index-parquet", n, "--column", "s"])
        .status
        .success());
    std::fs::write(
        names.join(".needle-index/parquet-column.txt"),
        "column=s\ntype=string\ngranularity=file\n",
    )
    .unwrap();
    assert_eq!(
        printed_rows(&needle(&["lookup", n, "b"])),
        [("n.parquet".to_string(), 1)]
    );
}

/// A value is data: one that looks like a flag is looked up with `--value V` or after `--`,
/// negative numbers need neither, and every value an unsigned 64-bit column holds is taken.
#[test]
fn values_that_look_like_flags_are_looked_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_columns(
        &dir.join("f.parquet"),
        "message t { required binary s (UTF8); required int64 i; required int64 u (INTEGER(64,false)); }",
        &[
            Col::Str(vec!["--help", "-5", "-x", "plain"]),
            Col::I64(vec![-5, i64::MIN, 5, i64::MAX]),
            // u64::MAX, 2^63 and 5, as the file stores them (the same bits).
            Col::I64(vec![-1, i64::MIN, 5, 0]),
        ],
    );
    let d = dir.to_str().unwrap();
    for c in ["s", "i", "u"] {
        let ix = dir.join(format!(".ix-{c}"));
        let o = needle(&[
            "index-parquet",
            d,
            "--column",
            c,
            "--index",
            ix.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let ix = |c: &str| dir.join(format!(".ix-{c}")).to_str().unwrap().to_string();
    let (s, i, u) = (ix("s"), ix("i"), ix("u"));
    let row = |r: u64| vec![("f.parquet".to_string(), r)];
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "--value", "--help", "--index", &s])),
        row(0)
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "--index", &s, "--", "--help"])),
        row(0)
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "--value=-x", "--index", &s])),
        row(2)
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "--index", &s, "--", "-5"])),
        row(1)
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "-5", "--index", &i])),
        row(0)
    );
    assert_eq!(
        printed_rows(&needle(&[
            "lookup",
            d,
            "--value",
            "-9223372036854775808",
            "--index",
            &i
        ])),
        row(1)
    );
    assert_eq!(
        printed_rows(&needle(&[
            "lookup",
            d,
            "18446744073709551615",
            "--index",
            &u
        ])),
        row(0)
    );
    assert_eq!(
        printed_rows(&needle(&[
            "lookup",
            d,
            "9223372036854775808",
            "--index",
            &u
        ])),
        row(1)
    );
    // Exact: a signed column holds no 2^64 - 1 (the bits of -1), an unsigned one no -1.
    assert_eq!(
        printed_rows(&needle(&[
            "lookup",
            d,
            "18446744073709551615",
            "--index",
            &i
        ])),
        []
    );
    assert_eq!(
        printed_rows(&needle(&["lookup", d, "-1", "--index", &u])),
        []
    );
    // What no 64-bit column holds is refused, saying so.
    let o = needle(&["lookup", d, "18446744073709551616", "--index", &u]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("18446744073709551616"));
    // The help says how to give such values.
    let o = needle(&["lookup", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("--value") && help.contains("--"), "{help}");
    // A value and --value together are refused.
    assert!(!needle(&["lookup", d, "a", "--value", "b", "--index", &s])
        .status
        .success());
}
