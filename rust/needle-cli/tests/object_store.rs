//! Tables and indexes on object storage, against a real S3-compatible server: lookups equal a
//! full scan of the same files, in two round trips to the index and at most two to the files; a new
//! publication replaces the last; an index whose bundle of heads is missing or not its own is
//! read from its segments; what fails says so.

mod common;

use common::s3::S3Server;
use common::{full_scan, generate, needle_on, stderr, succeeded};
use needle_index::published::HeadsBundle;
use needle_index::Value;
use needle_lake::object::{self, Location};
use needle_lake::pq;
use std::collections::BTreeMap;
use std::path::Path;

fn location(server: &S3Server, url: &str) -> Location {
    Location::with_options(url, server.env()).unwrap()
}

/// The segment objects of the index below `index_dir` (the server's directory of its prefix).
fn segment_objects(index_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for tag in std::fs::read_dir(index_dir).unwrap() {
        let tag = tag.unwrap();
        if !tag.file_type().unwrap().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(tag.path()).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".nseg") {
                out.push(format!("{}/{name}", tag.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn lookups_equal_a_full_scan_in_two_round_trips_to_the_index() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    generate(&table, 8, 3, 400);
    // By file on `id`, next to the table; by row group on `name`, at an index URL of its own.
    succeeded(needle_on(
        &server,
        &["index-parquet", "s3://lake/t", "--column", "id"],
    ));
    succeeded(needle_on(
        &server,
        &[
            "index-parquet",
            "s3://lake/t",
            "--column",
            "name",
            "--row-groups",
            "--index",
            "s3://lake/indexes/t-name",
        ],
    ));
    let t = location(&server, "s3://lake/t");
    let name_index = location(&server, "s3://lake/indexes/t-name");
    let probes: Vec<(String, Value, Option<&Location>)> = (0..5200i64)
        .step_by(89)
        .map(|v| (v.to_string(), Value::Int(v), None))
        .chain((0..720).step_by(29).map(|v| {
            let s = format!("user-{v}");
            (s.clone(), Value::Str(s), Some(&name_index))
        }))
        .collect();
    let (mut present, mut absent) = (0, 0);
    for (text, v, index) in &probes {
        let column = if index.is_some() { "name" } else { "id" };
        let want = full_scan(&table, column, v);
        let got = object::lookup(&t, *index, None, text).unwrap();
        assert_eq!(got.result.rows, want, "column {column} value {text}");
        for r in &want {
            assert!(got
                .result
                .candidates
                .iter()
                .any(|c| pq::split_id(c).0 == r.file));
        }
        // The publication and the bundle of its heads; the two rows of the value's buckets.
        assert_eq!(got.index.round_trips, 2, "value {text}: {:?}", got.index);
        assert!(got.index.requests <= 4, "value {text}: {:?}", got.index);
        if got.result.candidates.is_empty() {
            assert_eq!(got.files.requests, 0);
            absent += 1;
        } else {
            // Whatever the number of candidate files, one: their footers, at the lengths the
            // publication recorded, whose reads (the last 64 KiB) hold all of these small
            // files: the row groups need no request.
            assert_eq!(got.files.round_trips, 1, "value {text}: {:?}", got.files);
            present += !want.is_empty() as usize;
        }
    }
    assert!(
        present > probes.len() / 3 && absent > 0,
        "{present} present, {absent} absent"
    );

    // The command prints the same rows, and the requests it made.
    let o = succeeded(needle_on(&server, &["lookup", "s3://lake/t", "42"]));
    let lines = String::from_utf8(o.stdout.clone()).unwrap().lines().count();
    assert_eq!(lines, full_scan(&table, "id", &Value::Int(42)).len());
    assert!(
        stderr(&o).contains("index 4 requests in 2 round trips"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_new_publication_replaces_the_last_and_removes_its_segments() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    generate(&table, 6, 2, 300);
    let staging = tempfile::tempdir().unwrap();
    let staging_arg = staging.path().to_str().unwrap();
    let index_args = [
        "index-parquet",
        "s3://lake/t",
        "--column",
        "id",
        "--staging",
        staging_arg,
    ];
    let o = succeeded(needle_on(&server, &index_args));
    assert!(String::from_utf8_lossy(&o.stdout).contains("indexed 6 partitions"));
    let first = segment_objects(&table.join(pq::INDEX_SUBDIR));
    assert_eq!(first.len(), 1);

    // A file removed and one added: the kept staging index reads only the new one.
    std::fs::remove_file(table.join("part-002.parquet")).unwrap();
    std::fs::create_dir_all(table.join("later")).unwrap();
    std::fs::copy(
        table.join("part-004.parquet"),
        table.join("later").join("part-900.parquet"),
    )
    .unwrap();
    let o = succeeded(needle_on(&server, &index_args));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("indexed 1 partitions") && out.contains("5 unchanged, 1 removed"),
        "{out}"
    );
    let second = segment_objects(&table.join(pq::INDEX_SUBDIR));
    assert!(
        second.iter().all(|s| !first.contains(s)),
        "the earlier publication's segments are removed: {first:?} then {second:?}"
    );
    let t = location(&server, "s3://lake/t");
    for v in (0..4000i64).step_by(71) {
        let want = full_scan(&table, "id", &Value::Int(v));
        let got = object::lookup(&t, None, None, &v.to_string()).unwrap();
        assert_eq!(got.result.rows, want, "value {v}");
        assert!(got
            .result
            .candidates
            .iter()
            .all(|c| c != "part-002.parquet"));
    }
}

#[test]
fn what_fails_says_so() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    generate(&table, 2, 1, 50);

    let o = needle_on(&server, &["lookup", "s3://lake/t", "1"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("holds no published index"),
        "{}",
        stderr(&o)
    );

    let o = std::process::Command::new(env!("CARGO_BIN_EXE_needle"))
        .args(["index-parquet", "s3://lake/t", "--column", "id"])
        .envs(server.env_with_secret("not-the-secret"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot list s3://lake/t"),
        "{}",
        stderr(&o)
    );

    let o = needle_on(
        &server,
        &["index-parquet", "s3://lake/t", "--column", "nope"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("s3://lake/t/part-000.parquet has no column \"nope\""),
        "{}",
        stderr(&o)
    );

    succeeded(needle_on(
        &server,
        &["index-parquet", "s3://lake/t", "--column", "id"],
    ));
    let o = needle_on(&server, &["lookup", "s3://lake/t", "1", "--version", "3"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--version reads a Delta table indexed by `needle index-delta`"),
        "{}",
        stderr(&o)
    );

    let o = needle_on(
        &server,
        &["lookup", "s3://lake/t", "1", "--index", "/tmp/local-index"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the index is a URL too"),
        "{}",
        stderr(&o)
    );

    // A candidate file deleted behind the index's back: an error naming it, not a silent miss.
    let in_first_file = (0..1000i64)
        .find(|&v| {
            full_scan(&table, "id", &Value::Int(v))
                .iter()
                .any(|r| r.file == "part-000.parquet")
        })
        .unwrap()
        .to_string();
    std::fs::remove_file(table.join("part-000.parquet")).unwrap();
    let o = needle_on(&server, &["lookup", "s3://lake/t", &in_first_file]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("s3://lake/t/part-000.parquet (not found)"),
        "{}",
        stderr(&o)
    );

    std::fs::write(
        table.join(pq::INDEX_SUBDIR).join(object::PUBLICATION),
        b"{ not json",
    )
    .unwrap();
    let o = needle_on(&server, &["lookup", "s3://lake/t", "1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is damaged"), "{}", stderr(&o));
}

#[test]
fn an_index_of_thousands_of_partitions_is_opened_in_one_round_trip() {
    use needle_index::{Config, Index, Options};
    let server = S3Server::start();
    server.bucket("lake");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let ix = Index::create(
        &dir,
        Config {
            buckets: 64,
            fingerprint_bits: 16,
        },
        Options {
            sync: false,
            ..Options::default()
        },
    )
    .unwrap();
    // 3,000 partitions of long names: a partition table of about 200 KB, past the 64 KiB a
    // reader would guess.
    for p in 0..3000i64 {
        let id = format!("year=2026/month=11/day=27/part-{p:05}-0123456789abcdef.parquet");
        ix.append_values(&id, &[Value::Int(p)]).unwrap();
    }
    ix.flush().unwrap();
    drop(ix);
    std::fs::write(
        dir.join("parquet-column.txt"),
        "format=2\ncolumn=k\ntype=int\ngranularity=file\n",
    )
    .unwrap();
    let to = location(&server, "s3://lake/ix");
    object::publish(&dir, &to, &Default::default(), None).unwrap();

    let before = to.requests();
    let remote = object::RemoteIndex::open(&to).unwrap();
    assert_eq!((to.requests() - before).round_trips, 1);
    let local = Index::open_snapshot(&dir, Options::default()).unwrap();
    for v in ["0", "1", "1500", "2999", "5000", "-7"] {
        let key = remote.meta().kind.parse(v).unwrap();
        let before = to.requests();
        let got = remote.candidates(&key).unwrap();
        assert_eq!((to.requests() - before).round_trips, 1);
        assert_eq!(got, local.query_hash(key.hash()).unwrap(), "value {v}");
    }
}

/// Every lookup of `values` in `table` (a local directory the server serves as `url`) equals a
/// full scan; returns the index's round trips of each, and the files' of those with candidates.
fn lookups_in(server: &S3Server, table: &Path, url: &str, values: &[i64]) -> (Vec<u64>, Vec<u64>) {
    let t = location(server, url);
    let (mut index, mut files) = (Vec::new(), Vec::new());
    for &v in values {
        let want = full_scan(table, "id", &Value::Int(v));
        let got = object::lookup(&t, None, None, &v.to_string()).unwrap();
        assert_eq!(got.result.rows, want, "value {v}");
        index.push(got.index.round_trips);
        if !got.result.candidates.is_empty() {
            files.push(got.files.round_trips);
        }
    }
    (index, files)
}

#[test]
fn small_files_are_read_at_once_and_large_ones_footer_first() {
    let server = S3Server::start();
    let lake = server.bucket("lake");
    // Files of four row groups: of 8,000 rows (longer than two footer reads, and read whole) and
    // of 50,000 (longer than a file read whole: the footer, then the row groups).
    for (name, rows, trips) in [("small", 8000, 1), ("large", 50_000, 2)] {
        let table = lake.join(name);
        generate(&table, 2, 4, rows);
        for f in ["part-000.parquet", "sub/part-001.parquet"] {
            let len = std::fs::metadata(table.join(f)).unwrap().len();
            let whole = len <= object::WHOLE_FILE_BYTES;
            assert!(
                len > 2 * (64 << 10) && whole == (trips == 1),
                "{f}: {len} bytes"
            );
        }
        let url = format!("s3://lake/{name}");
        succeeded(needle_on(
            &server,
            &["index-parquet", &url, "--column", "id"],
        ));
        let values: Vec<i64> = (0..5000).step_by(251).collect();
        let (index, files) = lookups_in(&server, &table, &url, &values);
        assert!(index.iter().all(|&n| n == 2), "{name}: {index:?}");
        assert!(files.len() > values.len() / 2, "{name}: {files:?}");
        assert!(files.iter().all(|&n| n == trips), "{name}: {files:?}");
    }
}

#[test]
fn lengths_the_publication_does_not_record_or_records_wrong_are_asked_for() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    generate(&table, 4, 2, 300);
    succeeded(needle_on(
        &server,
        &["index-parquet", "s3://lake/t", "--column", "id"],
    ));
    // The bundle of heads holds every file's length, compressed.
    let dir = table.join(pq::INDEX_SUBDIR);
    let stored = std::fs::read(dir.join(object::HEADS)).unwrap();
    assert!(
        stored.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]),
        "a Zstandard frame"
    );
    let own = HeadsBundle::decode(&zstd::decode_all(&stored[..]).unwrap(), "bundle").unwrap();
    let files: Vec<String> = pq::parquet_files(&table)
        .unwrap()
        .iter()
        .map(|f| pq::file_id(&table, f))
        .collect();
    let lengths: BTreeMap<String, u64> = files
        .iter()
        .map(|f| (f.clone(), std::fs::metadata(table.join(f)).unwrap().len()))
        .collect();
    assert_eq!(own.file_lengths, lengths);
    let values: Vec<i64> = (0..5000).step_by(397).collect();
    let (_, trips) = lookups_in(&server, &table, "s3://lake/t", &values);
    assert!(
        !trips.is_empty() && trips.iter().all(|&n| n == 1),
        "{trips:?}"
    );

    // As publishers before wrote them: the bundle uncompressed, the lengths in the publication
    // instead of the bundle, no lengths at all (each asked for first, a HEAD, one round trip
    // more). Lengths that are wrong (as for a file replaced after it was indexed): shorter ones
    // are corrected from the length the first read returns and read again; a read of a longer
    // one returns the whole object, which is kept. The same answers every time.
    let publication = dir.join(object::PUBLICATION);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&publication).unwrap()).unwrap();
    assert!(json.get("file_lengths").is_none(), "{json}");
    let write = |lengths: BTreeMap<String, u64>, in_publication: bool| {
        let (mut bundle, mut p) = (own.clone(), json.clone());
        if in_publication {
            bundle.file_lengths.clear();
            p["file_lengths"] = serde_json::to_value(&lengths).unwrap();
        } else {
            bundle.file_lengths = lengths;
        }
        std::fs::write(dir.join(object::HEADS), bundle.encode()).unwrap();
        std::fs::write(&publication, serde_json::to_vec(&p).unwrap()).unwrap();
    };
    let changed = |f: &dyn Fn(u64) -> Option<u64>| -> BTreeMap<String, u64> {
        lengths
            .iter()
            .filter_map(|(k, &n)| Some((k.clone(), f(n)?)))
            .collect()
    };
    for (what, change, in_publication, expected) in [
        (
            "uncompressed",
            &Some as &dyn Fn(u64) -> Option<u64>,
            false,
            1,
        ),
        ("in the publication", &Some, true, 1),
        ("none", &|_| None, false, 2),
        ("shorter", &|n| Some(n - 100), false, 2),
        ("longer", &|n| Some(n + 100_000), true, 1),
    ] {
        write(changed(change), in_publication);
        let (_, trips) = lookups_in(&server, &table, "s3://lake/t", &values);
        assert!(
            !trips.is_empty() && trips.iter().all(|&n| n == expected),
            "{what}: {trips:?}"
        );
    }
}

#[test]
fn an_index_without_its_own_bundle_of_heads_reads_its_segments() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    let other = server.bucket("lake").join("u");
    generate(&table, 4, 2, 300);
    generate(&other, 3, 1, 200);
    for url in ["s3://lake/t", "s3://lake/u"] {
        succeeded(needle_on(
            &server,
            &["index-parquet", url, "--column", "id"],
        ));
    }
    let bundle = table.join(pq::INDEX_SUBDIR).join(object::HEADS);
    let values: Vec<i64> = (0..5000).step_by(397).collect();
    let (index, _) = lookups_in(&server, &table, "s3://lake/t", &values);
    assert!(index.iter().all(|&n| n == 2), "{index:?}");

    // Another index's bundle (as a reader sees during a new publication), a damaged one, none:
    // the same answers, the heads read from the segments in one round trip more.
    let own = std::fs::read(&bundle).unwrap();
    let mut damaged = own.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    let foreign = std::fs::read(other.join(pq::INDEX_SUBDIR).join(object::HEADS)).unwrap();
    for (what, bytes) in [
        ("foreign", Some(foreign)),
        ("damaged", Some(damaged)),
        ("missing", None),
    ] {
        match bytes {
            Some(b) => std::fs::write(&bundle, b).unwrap(),
            None => std::fs::remove_file(&bundle).unwrap(),
        }
        let (index, _) = lookups_in(&server, &table, "s3://lake/t", &values);
        assert!(index.iter().all(|&n| n == 3), "{what}: {index:?}");
    }
}
