//! `needle index-delta` + `needle lookup` on Delta tables whose log is written here commit by
//! commit: at every version, lookups return exactly the rows of a full scan of the files live
//! in that version, while the index lags behind and once it has caught up; what the reader does
//! not read is refused with a message.

use needle_index::Value;
use needle_lake::delta;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod common;
use common::delta_log::{
    add, commit, data_files, hidden_row_probes, hide_rows, index_delta, metadata, protocol_with,
    remove, table_of_files, table_with_a_column_added, PROTOCOL,
};
use common::{full_scan_files, generate, needle, printed_rows, stderr};

/// The files live at `version` (a model of the log) compared with what lookups return.
fn check_version(table: &Path, version: u64, live: &BTreeSet<String>) {
    let files: Vec<PathBuf> = live.iter().map(|f| table.join(f)).collect();
    let snap = delta::DeltaSnapshot::load(table, Some(version)).unwrap();
    assert_eq!(
        snap.files.keys().cloned().collect::<BTreeSet<_>>(),
        *live,
        "live files of version {version}"
    );
    let mut nonempty = 0;
    for v in (0..5200i64).step_by(97) {
        let want = full_scan_files(table, &files, "id", &Value::Int(v));
        let got = delta::lookup(table, Some(version), None, &v.to_string()).unwrap();
        assert_eq!(got.rows, want, "version {version} value {v}");
        for c in &got.candidates {
            assert!(
                live.contains(needle_lake::pq::split_id(c).0),
                "{c} is not live in version {version}"
            );
        }
        nonempty += !want.is_empty() as usize;
    }
    assert!(
        live.is_empty() || nonempty > 5,
        "the probes should find rows"
    );
}

#[test]
fn lookups_at_every_version_equal_a_full_scan_of_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path();
    generate(table, 12, 2, 150);
    // A name the log must percent-encode.
    std::fs::rename(
        table.join("sub/part-003.parquet"),
        table.join("sub/part 003%.parquet"),
    )
    .unwrap();
    let pool: Vec<String> = data_files(table);
    assert_eq!(pool.len(), 12);
    // Commits: the first adds three files; each later one adds one or two files not live
    // and removes up to two live ones (a file may come back in a later commit: the protocol
    // leaves an add and a remove of one path in one commit to deletion-vector updates).
    let mut rnd = 0x1234_5678_u64;
    let mut next = |n: u64| {
        rnd = rnd
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rnd >> 33) % n
    };
    let mut live: BTreeSet<String> = pool[..3].iter().cloned().collect();
    let mut versions = vec![live.clone()];
    let mut logs = vec![vec![
        PROTOCOL.to_string(),
        metadata("", ""),
        add(&pool[0]),
        add(&pool[1]),
        add(&pool[2]),
    ]];
    for _ in 1..=12 {
        let mut actions = Vec::new();
        let mut removed = BTreeSet::new();
        for _ in 0..next(3) {
            let gone: Vec<String> = live.iter().cloned().collect();
            if let Some(f) = gone.get(next(gone.len().max(1) as u64) as usize) {
                live.remove(f);
                removed.insert(f.clone());
                actions.push(remove(f));
            }
        }
        for _ in 0..1 + next(2) {
            let f = &pool[next(pool.len() as u64) as usize];
            if !removed.contains(f) && live.insert(f.clone()) {
                actions.push(add(f));
            }
        }
        versions.push(live.clone());
        logs.push(actions);
    }
    // The index is made at version 4 and lags behind the eight commits after it.
    for (v, actions) in logs.iter().enumerate().take(5) {
        commit(table, v as u64, actions);
    }
    let t = table.to_str().unwrap();
    let o = needle(&["index-delta", t, "--column", "id"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("version 4: indexed "));
    for (v, actions) in logs.iter().enumerate().skip(5) {
        commit(table, v as u64, actions);
    }
    let index_dir = table.join(".needle-index");
    assert_eq!(delta::indexed_version(&index_dir).unwrap(), Some(4));
    for (v, files) in versions.iter().enumerate() {
        check_version(table, v as u64, files);
    }
    // Caught up: the latest version and every older one (time travel).
    let o = needle(&["index-delta", t, "--column", "id"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(delta::indexed_version(&index_dir).unwrap(), Some(12));
    for (v, files) in versions.iter().enumerate() {
        check_version(table, v as u64, files);
    }
    // The command prints the rows of the version asked for.
    let files: Vec<PathBuf> = versions[7].iter().map(|f| table.join(f)).collect();
    let value = (0..5000i64)
        .find(|v| !full_scan_files(table, &files, "id", &Value::Int(*v)).is_empty())
        .unwrap();
    let o = needle(&["lookup", t, &value.to_string(), "--version", "7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap().lines().count(),
        full_scan_files(table, &files, "id", &Value::Int(value)).len()
    );
}

#[test]
fn what_the_reader_does_not_read_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let refused = |actions: &[String], column: &str, want: &str| {
        let table = tempfile::tempdir_in(tmp.path()).unwrap();
        generate(table.path(), 1, 1, 20);
        commit(table.path(), 0, actions);
        let o = needle(&[
            "index-delta",
            table.path().to_str().unwrap(),
            "--column",
            column,
        ]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(want), "{want:?} in {}", stderr(&o));
        assert!(!table.path().join(".needle-index").exists());
    };
    let data = add("part-000.parquet");
    refused(
        &[
            protocol_with("someFutureFeature"),
            metadata("", ""),
            data.clone(),
        ],
        "id",
        "someFutureFeature",
    );
    refused(
        &[
            r#"{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}"#.into(),
            metadata("", r#""delta.columnMapping.mode":"name","delta.columnMapping.maxColumnId":"1""#)
                .replace(
                    r#"\"metadata\":{}"#,
                    r#"\"metadata\":{\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-1\"}"#,
                ),
            data.clone(),
        ],
        "id",
        "column mapping",
    );
    refused(
        &[PROTOCOL.into(), metadata(r#""id""#, ""), data.clone()],
        "id",
        "is a partition column",
    );
    refused(
        &[
            PROTOCOL.into(),
            metadata("", ""),
            add("/elsewhere/x.parquet"),
        ],
        "id",
        "outside its folder",
    );
    refused(
        &[PROTOCOL.into(), metadata("", ""), "{not json".into()],
        "id",
        "00000000000000000000.json line 3: not JSON",
    );

    // Not a table; versions that do not exist or whose log is gone.
    let o = needle(&[
        "index-delta",
        tmp.path().to_str().unwrap(),
        "--column",
        "id",
    ]);
    assert!(stderr(&o).contains("is not a Delta table (no _delta_log folder)"));
    let table = tmp.path().join("t");
    generate(&table, 2, 1, 20);
    commit(
        &table,
        0,
        &[PROTOCOL.into(), metadata("", ""), add("part-000.parquet")],
    );
    commit(&table, 1, &[add("sub/part-001.parquet")]);
    let t = table.to_str().unwrap();
    assert!(needle(&["index-delta", t, "--column", "id"])
        .status
        .success());
    let o = needle(&["lookup", t, "1", "--version", "9"]);
    assert!(
        stderr(&o).contains("has no version 9; the latest is 1"),
        "{}",
        stderr(&o)
    );
    // With its first commit gone and no checkpoint, no version of the table can be rebuilt.
    std::fs::remove_file(table.join("_delta_log/00000000000000000000.json")).unwrap();
    let o = needle(&["lookup", t, "1", "--version", "1"]);
    assert!(
        stderr(&o).contains("cannot read version 1 of")
            && stderr(&o).contains("No table metadata or protocol found"),
        "{}",
        stderr(&o)
    );
    // A plain Parquet index has no versions.
    let plain = tmp.path().join("plain");
    generate(&plain, 1, 1, 20);
    let p = plain.to_str().unwrap();
    assert!(needle(&["index-parquet", p, "--column", "id"])
        .status
        .success());
    let o = needle(&["lookup", p, "1", "--version", "0"]);
    assert!(
        stderr(&o).contains("--version reads a Delta table"),
        "{}",
        stderr(&o)
    );
}

/// Every state a crash (or a run still going) can leave while `index-delta --row-groups` adds
/// or removes a file of several row groups: lookups at every version still equal a full scan.
/// A file counts as indexed only once all its row groups are in; until then it is read whole.
#[test]
fn a_file_half_added_or_half_removed_is_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path();
    let pool = table_of_files(table, 3, 4, 150, 3);
    commit(table, 1, &[remove(&pool[2])]);
    let t = table.to_str().unwrap();
    // Version 0 indexed: three files of four row groups each.
    std::fs::rename(
        table.join("_delta_log/00000000000000000001.json"),
        table.join("v1"),
    )
    .unwrap();
    index_delta(t);
    let index_dir = table.join(".needle-index");
    let v0: BTreeSet<String> = pool.iter().cloned().collect();
    let open = || needle_index::Index::open(&index_dir, needle_index::Options::default()).unwrap();
    let ids_of = |file: &str| -> Vec<String> {
        let mut ids: Vec<String> = open()
            .partitions()
            .into_iter()
            .filter(|p| !p.removed && needle_lake::pq::split_id(&p.id).0 == file)
            .map(|p| p.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids_of(&pool[0]).len(), 4);
    // A run that stopped after the first k of a file's appends: the entries after them are
    // missing (removed here; the next run adds them again, in the same order).
    let order: Vec<String> = needle_lake::pq::append_order(4)
        .map(|g| needle_lake::pq::partition_id(&pool[0], Some(g)))
        .collect();
    for k in 0..order.len() {
        {
            let ix = open();
            for id in &order[k..] {
                ix.remove_partition(id).unwrap();
            }
            ix.flush().unwrap();
        }
        check_version(table, 0, &v0);
        index_delta(t);
        assert_eq!(ids_of(&pool[0]).len(), 4, "the next run completes the file");
    }
    // Version 1 removes a file: a run that stopped after the first k of its removals.
    std::fs::rename(
        table.join("v1"),
        table.join("_delta_log/00000000000000000001.json"),
    )
    .unwrap();
    let v1: BTreeSet<String> = pool[..2].iter().cloned().collect();
    let removals = needle_lake::pq::removal_order(ids_of(&pool[2]));
    assert!(
        needle_lake::pq::marks_file(&removals[0]),
        "the marker goes first"
    );
    for k in 1..removals.len() {
        {
            let ix = open();
            for id in &removals[..k] {
                ix.remove_partition(id).unwrap();
            }
            ix.flush().unwrap();
        }
        check_version(table, 0, &v0);
        check_version(table, 1, &v1);
        // Back to version 0's index: the file's entries added again.
        std::fs::rename(
            table.join("_delta_log/00000000000000000001.json"),
            table.join("v1"),
        )
        .unwrap();
        index_delta(t);
        std::fs::rename(
            table.join("v1"),
            table.join("_delta_log/00000000000000000001.json"),
        )
        .unwrap();
    }
    index_delta(t);
    assert!(ids_of(&pool[2]).is_empty());
    check_version(table, 0, &v0);
    check_version(table, 1, &v1);
}

/// Rows a deletion vector hides are not returned, by `needle lookup` at the version that has it;
/// the version before it still returns them. The index needs no change (the file's path stays).
#[test]
fn rows_a_deletion_vector_hides_are_not_returned() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path();
    let pool = table_of_files(table, 2, 3, 100, 2);
    let t = table.to_str().unwrap();
    index_delta(t);
    // Version 1 deletes 40 rows of the first file, in every row group, through a vector.
    let hidden = hide_rows(table, 1, &pool[0]);
    let snap = delta::DeltaSnapshot::load(table, Some(1)).unwrap();
    assert_eq!(snap.deleted_rows(&pool[0]).unwrap(), hidden);
    assert!(snap.deleted_rows(&pool[1]).unwrap().is_empty());
    let files: Vec<PathBuf> = pool.iter().map(|f| table.join(f)).collect();
    let mut gone = 0;
    for (v, all, kept) in hidden_row_probes(table, &files, &pool[0], &hidden, 97) {
        gone += all.len() - kept.len();
        let at = |version| {
            delta::lookup(table, Some(version), None, &v.to_string())
                .unwrap()
                .rows
        };
        assert_eq!(at(1), kept, "{v}");
        assert_eq!(at(0), all, "{v}");
    }
    assert!(gone >= hidden.len(), "every hidden row was probed ({gone})");
    // Re-indexing at version 1 changes nothing: the file keeps its path.
    let o = index_delta(t);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("version 1"),
        "{o:?}"
    );
}

/// A column that schema evolution added: its files from before hold none of its values (the
/// table reads them as nulls), and a lookup at a version before the column existed is an error
/// that says so, not an empty answer.
#[test]
fn a_column_added_by_schema_evolution_does_not_exist_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path();
    table_with_a_column_added(table);
    let t = table.to_str().unwrap();
    let o = needle(&["index-delta", t, "--column", "n"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let found = vec![("v1.parquet".to_string(), 1)];
    assert_eq!(printed_rows(&needle(&["lookup", t, "50"])), found);
    assert_eq!(
        printed_rows(&needle(&["lookup", t, "50", "--version", "1"])),
        found
    );
    for value in ["50", "2"] {
        let o = needle(&["lookup", t, value, "--version", "0"]);
        assert!(
            !o.status.success(),
            "{value}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let e = stderr(&o);
        assert!(
            e.contains("version 0") && e.contains("has no column \"n\""),
            "{e}"
        );
    }
    let e = delta::lookup(table, Some(0), None, "50").unwrap_err();
    assert!(
        matches!(e, needle_lake::Error::NoSuchColumn { version: 0, .. }),
        "{e}"
    );
}

/// The files of a version that VACUUM removed: a lookup at that version says so.
#[test]
fn a_version_whose_files_were_removed_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path();
    let pool = table_of_files(table, 3, 1, 100, 2);
    commit(table, 1, &[remove(&pool[0]), add(&pool[2])]);
    let t = table.to_str().unwrap();
    index_delta(t);
    std::fs::remove_file(table.join(&pool[0])).unwrap();
    // Value 0 is in row 0 of the first file, which only version 0 reads.
    let o = needle(&["lookup", t, "0", "--version", "0"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains(&pool[0]) && e.contains("removed") && e.contains("version 0"),
        "{e}"
    );
    assert!(matches!(
        delta::lookup(table, Some(0), None, "0").unwrap_err(),
        needle_lake::Error::FilesRemoved { version: 0, .. }
    ));
    assert!(needle(&["lookup", t, "0"]).status.success());
}
