//! Delta tables on object storage, against a real S3-compatible server: `needle index-delta
//! s3://…` publishes an index with the version it covers, and lookups at every version equal a
//! full scan of the files live in it, while the index lags behind and once it has caught up;
//! deletion vectors are applied; what fails says so.

mod common;

use common::delta_log::{
    add, commit, hidden_row_probes, hide_rows, remove, table_of_files, table_with_a_column_added,
};
use common::s3::S3Server;
use common::{failed_saying, full_scan_files, needle_on, printed_rows, succeeded};
use needle_index::Value;
use needle_lake::delta::DeltaSnapshot;
use needle_lake::object::{self, Location};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lookups at `version` through the published index equal a full scan of the `live` files.
fn check_version(t: &Location, table: &Path, version: u64, live: &BTreeSet<String>) {
    let snap = DeltaSnapshot::load_from_store(t, Some(version)).unwrap();
    assert_eq!(
        snap.files.keys().cloned().collect::<BTreeSet<_>>(),
        *live,
        "live files of version {version}"
    );
    // The log written here records every file's size as 1: each read corrects it from the
    // length the first response reports, as for a file replaced after it was logged.
    assert!(snap.sizes.values().all(|&n| n == 1), "{:?}", snap.sizes);
    let files: Vec<PathBuf> = live.iter().map(|f| table.join(f)).collect();
    let mut found = 0;
    for v in (0..5200i64).step_by(251) {
        let want = full_scan_files(table, &files, "id", &Value::Int(v));
        let got = object::lookup(t, None, Some(version), &v.to_string()).unwrap();
        assert_eq!(got.result.rows, want, "version {version} value {v}");
        assert_eq!(got.index.round_trips, 2, "{:?}", got.index);
        found += !want.is_empty() as usize;
    }
    assert!(
        live.is_empty() || found >= 3,
        "the probes should find rows ({found})"
    );
}

#[test]
fn lookups_at_every_version_equal_a_full_scan_of_its_files() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("t");
    let pool = table_of_files(&table, 10, 2, 300, 3);
    // A name the log must percent-encode.
    let odd = pool[3].replace("part-", "part %");
    std::fs::rename(table.join(&pool[3]), table.join(&odd)).unwrap();
    let mut pool = pool;
    pool[3] = odd;
    // Versions 1-8: each removes a live file (from version 3 on) and adds one not live.
    let mut live: BTreeSet<String> = pool[..3].iter().cloned().collect();
    let mut versions = vec![live.clone()];
    let mut logs = Vec::new();
    for v in 1..=8usize {
        let mut actions = Vec::new();
        if v >= 3 {
            let gone = live.iter().nth(v % live.len()).unwrap().clone();
            live.remove(&gone);
            actions.push(remove(&gone));
        }
        let new = pool
            .iter()
            .find(|f| !live.contains(*f) && !actions.contains(&remove(f)));
        let new = new.unwrap().clone();
        actions.push(add(&new));
        live.insert(new);
        versions.push(live.clone());
        logs.push(actions);
    }
    for (v, actions) in logs.iter().enumerate().take(3) {
        commit(&table, v as u64 + 1, actions);
    }
    let staging = tempfile::tempdir().unwrap();
    let s = staging.path().to_str().unwrap();
    let args = [
        "index-delta",
        "s3://lake/t",
        "--column",
        "id",
        "--staging",
        s,
    ];
    let o = succeeded(needle_on(&server, &args));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("version 3: indexed "),
        "{o:?}"
    );
    for (v, actions) in logs.iter().enumerate().skip(3) {
        commit(&table, v as u64 + 1, actions);
    }
    let t = Location::with_options("s3://lake/t", server.env()).unwrap();
    // The index covers version 3 and lags behind five commits: every version is still exact.
    for (v, files) in versions.iter().enumerate() {
        check_version(&t, &table, v as u64, files);
    }
    // Caught up, from the kept staging directory: only the files added since are read.
    let o = succeeded(needle_on(&server, &args));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let (then, now) = (&versions[3], &versions[8]);
    let expected = format!(
        "version 8: indexed {} partitions",
        now.difference(then).count()
    );
    let rest = format!(
        "; {} unchanged, {} removed",
        now.intersection(then).count(),
        then.difference(now).count()
    );
    assert!(out.starts_with(&expected) && out.contains(&rest), "{out}");
    for v in [0, 5, 8] {
        check_version(&t, &table, v as u64, &versions[v]);
    }
    // The command prints the rows of the version asked for.
    let files: Vec<PathBuf> = versions[5].iter().map(|f| table.join(f)).collect();
    let value = (0..5000i64)
        .find(|v| !full_scan_files(&table, &files, "id", &Value::Int(*v)).is_empty())
        .unwrap();
    let o = succeeded(needle_on(
        &server,
        &[
            "lookup",
            "s3://lake/t",
            &value.to_string(),
            "--version",
            "5",
        ],
    ));
    let want: Vec<(String, u64)> = full_scan_files(&table, &files, "id", &Value::Int(value))
        .into_iter()
        .map(|r| (r.file, r.row))
        .collect();
    assert_eq!(printed_rows(&o), want);
    // Versions that are not there, and a version of a folder of Parquet files.
    failed_saying(
        needle_on(&server, &["lookup", "s3://lake/t", "1", "--version", "99"]),
        &["version 99", "latest is 8"],
    );
    let other = server.bucket("lake").join("plain");
    common::generate(&other, 2, 1, 50);
    succeeded(needle_on(
        &server,
        &["index-parquet", "s3://lake/plain", "--column", "id"],
    ));
    failed_saying(
        needle_on(
            &server,
            &["lookup", "s3://lake/plain", "1", "--version", "0"],
        ),
        &["--version reads a Delta table", "Parquet files"],
    );
    failed_saying(
        needle_on(
            &server,
            &["index-delta", "s3://lake/plain", "--column", "id"],
        ),
        &["s3://lake/plain is not a Delta table", "_delta_log/"],
    );
}

/// Rows a deletion vector hides are not returned at the version that has it (the vector read
/// through the object store); a column that schema evolution added does not exist before it;
/// a file of a version that was vacuumed is named.
#[test]
fn deletion_vectors_new_columns_and_removed_files() {
    let server = S3Server::start();
    let table = server.bucket("lake").join("dv");
    let pool = table_of_files(&table, 2, 3, 100, 2);
    let hidden = hide_rows(&table, 1, &pool[0]);
    succeeded(needle_on(
        &server,
        &[
            "index-delta",
            "s3://lake/dv",
            "--column",
            "id",
            "--row-groups",
        ],
    ));
    let t = Location::with_options("s3://lake/dv", server.env()).unwrap();
    let files: Vec<PathBuf> = pool.iter().map(|f| table.join(f)).collect();
    let mut gone = 0;
    for (v, all, kept) in hidden_row_probes(&table, &files, &pool[0], &hidden, 211) {
        gone += all.len() - kept.len();
        let at = |version| {
            object::lookup(&t, None, Some(version), &v.to_string())
                .unwrap()
                .result
                .rows
        };
        assert_eq!(at(1), kept, "{v}");
        assert_eq!(at(0), all, "{v}");
    }
    assert!(gone >= hidden.len(), "every hidden row was probed ({gone})");

    let table = server.bucket("lake").join("evolved");
    std::fs::create_dir_all(&table).unwrap();
    table_with_a_column_added(&table);
    succeeded(needle_on(
        &server,
        &["index-delta", "s3://lake/evolved", "--column", "n"],
    ));
    let found = vec![("v1.parquet".to_string(), 1)];
    assert_eq!(
        printed_rows(&needle_on(&server, &["lookup", "s3://lake/evolved", "50"])),
        found
    );
    failed_saying(
        needle_on(
            &server,
            &["lookup", "s3://lake/evolved", "50", "--version", "0"],
        ),
        &["version 0", "has no column \"n\""],
    );

    let table = server.bucket("lake").join("vacuumed");
    let pool = table_of_files(&table, 3, 1, 100, 2);
    commit(&table, 1, &[remove(&pool[0]), add(&pool[2])]);
    succeeded(needle_on(
        &server,
        &["index-delta", "s3://lake/vacuumed", "--column", "id"],
    ));
    std::fs::remove_file(table.join(&pool[0])).unwrap();
    // Value 0 is in row 0 of the first file, which only version 0 reads.
    failed_saying(
        needle_on(
            &server,
            &["lookup", "s3://lake/vacuumed", "0", "--version", "0"],
        ),
        &[pool[0].as_str(), "removed", "version 0"],
    );
    succeeded(needle_on(&server, &["lookup", "s3://lake/vacuumed", "0"]));
}
