//! SQL through `NeedleTable` against DataFusion alone over the same files: every query's rows
//! equal, while equality and `IN` queries read only the candidate files.

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use needle_datafusion::NeedleTable;
use needle_lake::pq::{index_dir, IndexParquetOptions};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

const FILES: i64 = 12;
const ROWS: i64 = 300;

/// File `f` holds keys `f * ROWS .. (f + 1) * ROWS`, scrambled so min/max statistics prune
/// nothing, and a payload naming each key; row groups of 100 rows.
fn write_file(path: &Path, f: i64) {
    let keys: Vec<Option<i64>> = (f * ROWS..(f + 1) * ROWS)
        .map(|i| Some(scramble(i)))
        .collect();
    write_keys(path, keys);
}

fn write_keys(path: &Path, keys: Vec<Option<i64>>) {
    let names: Vec<String> = keys.iter().map(|k| format!("event-{k:?}")).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("payload", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(keys)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn scramble(i: i64) -> i64 {
    (i * 7919) % 1_000_003 - 500_000
}

fn index(dir: &Path, row_groups: bool) {
    let o = IndexParquetOptions {
        column: "k".into(),
        row_groups,
        buckets: None,
        fingerprint_bits: 16,
        index: None,
    };
    index_dir(dir, &o, |_, _, _| {}).unwrap();
}

/// `FILES` files of `ROWS` keys, indexed by file or by row group.
fn indexed_table(row_groups: bool) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in 0..FILES {
        write_file(&tmp.path().join(format!("part-{f:03}.parquet")), f);
    }
    index(tmp.path(), row_groups);
    tmp
}

/// The rows of `sql`, sorted, as text.
async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    // The rows without the header (which names the table in aggregates' columns).
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
        .collect();
    lines.sort();
    lines.join("\n")
}

/// A context with the directory as `needle` (through the index) and as `plain` (DataFusion alone).
async fn contexts(dir: &Path) -> (SessionContext, Arc<NeedleTable>) {
    let ctx = SessionContext::new();
    let table = Arc::new(NeedleTable::open(&ctx, dir, None).await.unwrap());
    ctx.register_table("needle", table.clone()).unwrap();
    ctx.register_parquet(
        "plain",
        dir.to_str().unwrap(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    (ctx, table)
}

/// Queries of every shape, each with the table's name left out.
fn queries() -> Vec<String> {
    let present = |i: i64| scramble(i);
    let mut q = Vec::new();
    for i in [0, 1, 299, 300, 1234, FILES * ROWS - 1] {
        q.push(format!("SELECT * FROM {{t}} WHERE k = {}", present(i)));
    }
    for absent in [-1_000_000i64, 777_777, 499_999] {
        q.push(format!("SELECT * FROM {{t}} WHERE k = {absent}"));
    }
    q.push(format!(
        "SELECT payload FROM {{t}} WHERE k IN ({}, {}, {}, 42424242)",
        present(5),
        present(905),
        present(3301)
    ));
    q.push(format!(
        "SELECT k FROM {{t}} WHERE k = {} OR k = {}",
        present(17),
        present(2017)
    ));
    q.push(format!(
        "SELECT * FROM {{t}} WHERE k = {} AND payload LIKE 'event-%'",
        present(44)
    ));
    q.push(format!(
        "SELECT count(*) FROM {{t}} WHERE k IN ({}, {})",
        present(8),
        present(9)
    ));
    q.push("SELECT * FROM {t} WHERE k = NULL".into());
    q.push("SELECT count(*) FROM {t} WHERE k > 400000".into());
    q.push(format!(
        "SELECT * FROM {{t}} WHERE payload = 'event-{}'",
        present(77)
    ));
    q.push("SELECT count(*), sum(k) FROM {t}".into());
    q
}

async fn check_all(ctx: &SessionContext) {
    for q in queries() {
        let want = rows(ctx, &q.replace("{t}", "plain")).await;
        let got = rows(ctx, &q.replace("{t}", "needle")).await;
        assert_eq!(got, want, "{q}");
    }
}

#[tokio::test]
async fn answers_equal_datafusion_alone_reading_only_candidates() {
    let tmp = indexed_table(false);
    let dir = tmp.path();
    let (ctx, table) = contexts(dir).await;
    check_all(&ctx).await;
    let s = table.stats();
    // Every equality, IN and OR query was narrowed; the range, payload and count(*) ones were not.
    assert_eq!((s.by_index, s.full), (13, 3), "{s:?}");
    assert_eq!(s.files_not_indexed, 0);
    // One file per present value, rarely a false positive: far fewer than 13 queries x 12 files.
    assert!(s.files_read <= 20, "{s:?}");

    // One query, the plan: a single file handed to DataFusion.
    let before = table.stats().files_read;
    let q = format!("SELECT * FROM needle WHERE k = {}", scramble(650));
    assert!(rows(&ctx, &q)
        .await
        .contains(&format!("event-Some({})", scramble(650))));
    assert_eq!(table.stats().files_read - before, 1);
}

#[tokio::test]
async fn files_the_index_does_not_cover_are_read_and_removed_ones_skipped() {
    let tmp = indexed_table(false);
    let dir = tmp.path();
    // After indexing: a file added in a subdirectory, one removed.
    std::fs::create_dir(dir.join("later")).unwrap();
    write_file(&dir.join("later/part-new.parquet"), FILES);
    std::fs::remove_file(dir.join("part-000.parquet")).unwrap();
    let (ctx, table) = contexts(dir).await;
    check_all(&ctx).await;
    let q = format!(
        "SELECT * FROM needle WHERE k = {}",
        scramble(FILES * ROWS + 3)
    );
    assert_eq!(
        rows(&ctx, &q).await.lines().count(),
        1,
        "a row of the new file"
    );
    let s = table.stats();
    assert_eq!(
        s.files_not_indexed, s.by_index,
        "the new file, in every narrowed scan"
    );
    // Indexed again: the new file is a candidate like the others.
    index(dir, false);
    let before = table.stats();
    assert_eq!(rows(&ctx, &q).await.lines().count(), 1);
    let after = table.stats();
    assert_eq!(after.files_not_indexed, before.files_not_indexed);
    assert_eq!(after.files_read - before.files_read, 1);
}

#[tokio::test]
async fn row_groups_the_index_names_are_the_only_ones_read() {
    let tmp = indexed_table(true);
    let dir = tmp.path();
    let (ctx, table) = contexts(dir).await;
    check_all(&ctx).await;
    assert_eq!(table.stats().by_index, 13);
    // The Parquet scan considers one row group of the 36 (12 files of 3), DataFusion alone all
    // 36: DataFusion's own metrics say so.
    let q = format!("SELECT * FROM needle WHERE k = {}", scramble(1250));
    assert_eq!(row_groups_considered(&ctx, &q).await, 1);
    let q = format!("SELECT * FROM plain WHERE k = {}", scramble(1250));
    assert_eq!(row_groups_considered(&ctx, &q).await, 36);
}

/// The row groups the Parquet scan of `sql` had to consider (those its statistics could prune,
/// before they did): from `EXPLAIN ANALYZE`.
async fn row_groups_considered(ctx: &SessionContext, sql: &str) -> usize {
    let batches = ctx
        .sql(&format!("EXPLAIN ANALYZE {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let metric = "row_groups_pruned_statistics=";
    let (_, rest) = text
        .split_once(metric)
        .unwrap_or_else(|| panic!("no {metric} in {text}"));
    let n = rest.split(' ').next().unwrap();
    n.parse()
        .unwrap_or_else(|_| panic!("{metric}{n} is not a count"))
}

#[tokio::test]
async fn a_directory_without_an_index_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    write_file(&tmp.path().join("a.parquet"), 0);
    let ctx = SessionContext::new();
    let e = NeedleTable::open(&ctx, tmp.path(), None).await.unwrap_err();
    assert!(e.to_string().contains("is not a Parquet index"), "{e}");
}

/// SplitMix64: the random test's data and queries, the same in every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[tokio::test]
async fn random_lookups_equal_datafusion_alone() {
    for row_groups in [false, true] {
        let mut rng = Rng(if row_groups { 7 } else { 3 });
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // Keys from a small domain, so a value is in several files, and some nulls.
        for f in 0..20 {
            let n = 50 + rng.below(250) as usize;
            let keys = (0..n)
                .map(|_| (rng.below(20) > 0).then(|| rng.below(3000) as i64))
                .collect();
            write_keys(&dir.join(format!("f{f:02}.parquet")), keys);
        }
        index(dir, row_groups);
        let (ctx, table) = contexts(dir).await;
        for _ in 0..300 {
            let values: Vec<String> = (0..1 + rng.below(4))
                .map(|_| (rng.below(4000) as i64 - 500).to_string())
                .collect();
            let filter = match rng.below(3) {
                0 => format!("k = {}", values[0]),
                1 => format!("k IN ({})", values.join(", ")),
                _ => values
                    .iter()
                    .map(|v| format!("k = {v}"))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            };
            let q = format!("SELECT k, payload FROM {{t}} WHERE {filter}");
            let want = rows(&ctx, &q.replace("{t}", "plain")).await;
            let got = rows(&ctx, &q.replace("{t}", "needle")).await;
            assert_eq!(got, want, "{q} (row groups: {row_groups})");
        }
        let s = table.stats();
        assert_eq!(s.by_index, 300);
        // The index narrowed the scans: far fewer than 300 x 20 files.
        assert!(s.files_read < 300 * 20 / 2, "{s:?}");
    }
}
