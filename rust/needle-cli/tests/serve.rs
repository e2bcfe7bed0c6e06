//! `needle serve` run as a process and asked over HTTP by a real client, while this process
//! writes the index it serves.

mod common;

use common::{full_scan, generate, needle};
use needle_index::{Config, Index, Options, Value};
use serde_json::{json, Value as Json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Each answer has the status and an `error` message containing the text expected of it.
fn assert_errors(got: &[(u16, Json)], expected: &[(u16, &str)]) {
    assert_eq!(got.len(), expected.len());
    for ((status, j), (want, text)) in got.iter().zip(expected) {
        assert_eq!(status, want, "{j}");
        assert!(j["error"].as_str().unwrap().contains(text), "{j}");
    }
}

/// Polls `done` every 20 ms until it holds; fails the test if it has not after 60 s
/// (a generous bound: `make test` runs these tests at low priority beside the cluster tests).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The service, stopped (by its pid) when dropped, also when a test fails.
struct Service {
    child: Child,
    base: String,
}

impl Service {
    fn start(args: &[&str]) -> Service {
        let mut child = Command::new(env!("CARGO_BIN_EXE_needle"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--refresh-ms", "50"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Service { child, base }
    }

    fn get(&self, path: &str) -> (u16, Json) {
        answer(ureq::get(&format!("{}{path}", self.base)).call())
    }

    fn post(&self, path: &str, body: &str) -> (u16, Json) {
        answer(
            ureq::post(&format!("{}{path}", self.base))
                .set("Content-Type", "application/json")
                .send_string(body),
        )
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn answer(r: Result<ureq::Response, ureq::Error>) -> (u16, Json) {
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("request failed: {e}"),
    };
    let status = resp.status();
    (status, resp.into_json().unwrap())
}

fn candidates(j: &Json) -> Vec<String> {
    j["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

fn values(from: i64, n: i64) -> Vec<Value> {
    (from..from + n).map(Value::Int).collect()
}

#[test]
fn serves_candidates_while_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ix");
    let cfg = Config {
        buckets: 256,
        fingerprint_bits: 16,
    };
    let writer = Index::create(&path, cfg, Options::default()).unwrap();
    writer.append_values("p0", &values(0, 100)).unwrap();
    writer.flush().unwrap();
    let svc = Service::start(&[path.to_str().unwrap(), "--type", "int"]);

    let (status, j) = svc.get("/candidates?value=5");
    assert_eq!(status, 200, "{j}");
    assert_eq!(candidates(&j), ["p0"]);

    // The writer (this process, holding the index's exclusive lock) goes on; the service
    // follows: new partitions appear, through flushes and a merge, and no request fails.
    for p in 1..=5i64 {
        writer
            .append_values(&format!("p{p}"), &values(p * 1000, 100))
            .unwrap();
        if p % 2 == 0 {
            writer.flush().unwrap();
        }
        if p == 4 {
            writer.merge().unwrap();
        }
        wait_until(&format!("p{p} appeared"), || {
            let (status, j) = svc.get(&format!("/candidates?value={}", p * 1000 + 50));
            assert_eq!(status, 200, "{j}");
            candidates(&j).contains(&format!("p{p}"))
        });
        assert!(candidates(&svc.get("/candidates?value=5").1).contains(&"p0".to_string()));
    }

    let (status, j) = svc.post("/candidates", r#"{"values": [5, "3050", 4099]}"#);
    assert_eq!(status, 200, "{j}");
    let lists = j["candidates"].as_array().unwrap();
    assert_eq!(lists.len(), 3);
    assert!(lists[0].as_array().unwrap().contains(&json!("p0")));
    assert!(lists[1].as_array().unwrap().contains(&json!("p3")));
    assert!(lists[2].as_array().unwrap().contains(&json!("p4")));

    let (status, h) = svc.get("/health");
    assert_eq!(status, 200);
    assert_eq!(h["status"], "ok");
    assert_eq!(h["partitions"], 6, "{h}");

    // Bad input: 4xx with a message that says what to do.
    let bad = [
        svc.get("/candidates"),
        svc.get("/candidates?value=abc"),
        svc.post("/candidates", "{not json"),
        svc.post("/candidates", r#"{"values": [true]}"#),
        svc.get("/nope"),
        svc.get("/lookup?value=1"),
    ];
    let expect = [
        (400, "?value="),
        (400, "not a 64-bit integer"),
        (400, "not JSON"),
        (400, "values[0]"),
        (404, "/candidates"),
        (404, "--parquet"),
    ];
    assert_errors(&bad, &expect);
    let r = ureq::delete(&format!("{}/candidates", svc.base)).call();
    assert!(matches!(r, Err(ureq::Error::Status(405, _))));

    let metrics = ureq::get(&format!("{}/metrics", svc.base))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let value_of = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
            .parse()
            .unwrap()
    };
    assert!(value_of("needle_requests_total{endpoint=\"candidates\"}") >= 10.0);
    assert!(value_of("needle_snapshot_refreshes_total") >= 5.0);
    assert_eq!(value_of("needle_client_errors_total"), 7.0);
    assert_eq!(value_of("needle_index_partitions"), 6.0);
}

/// The service of a Parquet directory written by `generate` and indexed on `id`.
fn parquet_service(dir: &Path, files: usize, groups: usize, rows: usize) -> Service {
    generate(dir, files, groups, rows);
    let out = needle(&["index-parquet", dir.to_str().unwrap(), "--column", "id"]);
    assert!(out.status.success(), "{out:?}");
    Service::start(&["--parquet", dir.to_str().unwrap()])
}

#[test]
fn looks_up_rows_of_a_parquet_directory() {
    let dir = tempfile::tempdir().unwrap();
    let svc = parquet_service(dir.path(), 4, 2, 300);
    for id in [0i64, 31, 4999, 123_456] {
        let (status, j) = svc.get(&format!("/lookup?value={id}"));
        assert_eq!(status, 200, "{j}");
        let rows: Vec<(String, u64)> = j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["file"].as_str().unwrap().to_string(),
                    r["row"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, u64)> = full_scan(dir.path(), "id", &Value::Int(id))
            .into_iter()
            .map(|r| (r.file, r.row))
            .collect();
        assert_eq!(rows, want, "id {id}");
    }
    assert_eq!(svc.get("/health").1["value_type"], "int");
}

#[test]
fn a_port_in_use_and_a_missing_index_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = needle(&["serve", dir.path().join("none").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an index"));
    let path = dir.path().join("ix");
    drop(Index::create(&path, Config::default(), Options::default()).unwrap());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = needle(&["serve", path.to_str().unwrap(), "--listen", &addr]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot listen") && err.contains("--listen"),
        "{err}"
    );
}

/// The rows a `/lookup` answer holds, as (file, row).
fn rows_of(j: &Json) -> Vec<(String, u64)> {
    j["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows in {j}"))
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["row"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn serves_a_delta_table_at_any_version_while_the_index_lags() {
    use common::delta_log::{add, commit, index_delta, remove, table_of_files};
    use common::full_scan_files;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path();
    let pool = table_of_files(table, 5, 2, 200, 3);
    let live_at: [&[usize]; 3] = [&[0, 1, 2], &[0, 2, 3], &[0, 2, 3, 4]];
    let t = table.to_str().unwrap();
    index_delta(t);
    // Version 1 (not indexed yet): a file removed, a file added.
    commit(table, 1, &[remove(&pool[1]), add(&pool[3])]);
    let svc = Service::start(&["--parquet", t]);
    let expect = |version: usize, id: i64| -> Vec<(String, u64)> {
        let files: Vec<_> = live_at[version]
            .iter()
            .map(|&i| table.join(&pool[i]))
            .collect();
        full_scan_files(table, &files, "id", &Value::Int(id))
            .into_iter()
            .map(|r| (r.file, r.row))
            .collect()
    };
    let check = |version: usize, latest: bool| {
        let mut found = 0;
        for id in (0..5000i64).step_by(61) {
            let want = expect(version, id);
            let path = if latest {
                format!("/lookup?value={id}")
            } else {
                format!("/lookup?value={id}&version={version}")
            };
            let (status, j) = svc.get(&path);
            assert_eq!(status, 200, "{j}");
            assert_eq!(j["version"], version as u64, "{j}");
            assert_eq!(rows_of(&j), want, "version {version}, id {id}");
            found += !want.is_empty() as usize;
        }
        assert!(found > 10, "the probes find rows ({found})");
    };
    check(1, true);
    check(0, false);
    let (_, h) = svc.get("/health");
    assert_eq!(h["delta"]["latest_version"], 1, "{h}");
    assert_eq!(h["delta"]["indexed_version"], 0, "{h}");
    assert_eq!(h["delta"]["live_files_not_indexed"], 1, "{h}");

    // A new commit: the service follows the log.
    commit(table, 2, &[add(&pool[4])]);
    wait_until("version 2 came", || {
        svc.get("/health").1["delta"]["latest_version"] == 2
    });
    check(2, true);
    // The index catches up while the service runs; every version still reads right.
    index_delta(t);
    wait_until("the index caught up", || {
        svc.get("/health").1["delta"]["live_files_not_indexed"] == 0
    });
    assert_eq!(svc.get("/health").1["delta"]["indexed_version"], 2);
    for v in 0..3 {
        check(v, false);
    }
    // Batches: every list holds only files live in the version asked for, and every one that
    // holds the value.
    let ids: Vec<i64> = (0..5000).step_by(397).collect();
    let (status, j) = svc.post(
        "/candidates",
        &json!({ "values": ids, "version": 1 }).to_string(),
    );
    assert_eq!(status, 200, "{j}");
    assert_eq!(j["version"], 1);
    for (id, list) in ids.iter().zip(j["candidates"].as_array().unwrap()) {
        let files: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|c| needle_lake::pq::split_id(c.as_str().unwrap()).0)
            .collect();
        for f in &files {
            assert!(
                live_at[1].iter().any(|&i| pool[i] == *f),
                "{f} is not live in version 1"
            );
        }
        for (file, _) in expect(1, *id) {
            assert!(files.contains(&file.as_str()), "{file} holds {id}");
        }
    }
    // Bad versions: 4xx with what is wrong.
    let bad = [
        svc.get("/lookup?value=1&version=9"),
        svc.get("/candidates?value=1&version=x"),
        svc.post("/candidates", r#"{"values": [1], "version": "1"}"#),
    ];
    let expect_err = [
        (404, "has no version 9; the latest is 2"),
        (400, "is not a table version"),
        (400, "give a table version as a JSON integer"),
    ];
    assert_errors(&bad, &expect_err);
}

#[test]
fn a_version_is_refused_for_a_plain_directory() {
    let dir = tempfile::tempdir().unwrap();
    let svc = parquet_service(dir.path(), 2, 1, 50);
    let (status, j) = svc.get("/lookup?value=1&version=0");
    assert_eq!(status, 400, "{j}");
    assert!(
        j["error"].as_str().unwrap().contains("reads a Delta table"),
        "{j}"
    );
    assert!(svc.get("/health").1.get("delta").is_none());
}

/// A version whose files VACUUM removed is gone (410), and a column that did not exist yet at
/// the version asked for is not there (404): each with a message that says so.
#[test]
fn removed_files_and_columns_not_there_yet_are_4xx() {
    use common::delta_log::{
        add, commit, index_delta, remove, table_of_files, table_with_a_column_added,
    };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("vacuumed");
    std::fs::create_dir(&table).unwrap();
    let pool = table_of_files(&table, 3, 1, 100, 2);
    commit(&table, 1, &[remove(&pool[0]), add(&pool[2])]);
    let t = table.to_str().unwrap();
    index_delta(t);
    std::fs::remove_file(table.join(&pool[0])).unwrap();
    let svc = Service::start(&["--parquet", t]);
    // Value 0 is in row 0 of the first file, which only version 0 reads.
    let (status, j) = svc.get("/lookup?value=0&version=0");
    assert_eq!(status, 410, "{j}");
    let e = j["error"].as_str().unwrap();
    assert!(
        e.contains(&pool[0]) && e.contains("removed") && e.contains("version 0"),
        "{e}"
    );
    assert_eq!(svc.get("/lookup?value=0").0, 200);

    let table = dir.path().join("evolved");
    std::fs::create_dir(&table).unwrap();
    table_with_a_column_added(&table);
    let t = table.to_str().unwrap();
    assert!(needle(&["index-delta", t, "--column", "n"])
        .status
        .success());
    let svc = Service::start(&["--parquet", t]);
    let (status, j) = svc.get("/lookup?value=50");
    assert_eq!(status, 200, "{j}");
    assert_eq!(rows_of(&j), [("v1.parquet".to_string(), 1)]);
    let bad = [
        svc.get("/lookup?value=50&version=0"),
        svc.get("/candidates?value=50&version=0"),
        svc.post("/candidates", r#"{"values": [50], "version": 0}"#),
    ];
    let not_there = "has no column \"n\"";
    assert_errors(
        &bad,
        &[(404, not_there), (404, not_there), (404, not_there)],
    );
}
