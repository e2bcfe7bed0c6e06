//! What the SQL tests share: the table's files, the queries, and how answers are compared.
#![allow(dead_code)] // each test crate uses part of it

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::SessionContext;
use needle_datafusion::NeedleTable;
use needle_lake::pq::IndexParquetOptions;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

pub const FILES: i64 = 12;
pub const ROWS: i64 = 300;

/// File `f` holds keys `f * ROWS .. (f + 1) * ROWS`, scrambled so min/max statistics prune
/// nothing, and a payload naming each key; row groups of 100 rows.
pub fn write_file(path: &Path, f: i64) {
    let keys: Vec<Option<i64>> = (f * ROWS..(f + 1) * ROWS)
        .map(|i| Some(scramble(i)))
        .collect();
    write_keys(path, keys);
}

pub fn write_keys(path: &Path, keys: Vec<Option<i64>>) {
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

pub fn scramble(i: i64) -> i64 {
    (i * 7919) % 1_000_003 - 500_000
}

/// An index on `k`, by file or by row group.
pub fn index_options(row_groups: bool) -> IndexParquetOptions {
    IndexParquetOptions {
        column: "k".into(),
        row_groups,
        buckets: None,
        fingerprint_bits: 16,
        index: None,
    }
}

/// The rows of `sql`, sorted, as text.
pub async fn rows(ctx: &SessionContext, sql: &str) -> String {
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

/// Queries of every shape, each with the table's name left out.
pub fn queries() -> Vec<String> {
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

pub async fn check_all(ctx: &SessionContext) {
    for q in queries() {
        let want = rows(ctx, &q.replace("{t}", "plain")).await;
        let got = rows(ctx, &q.replace("{t}", "needle")).await;
        assert_eq!(got, want, "{q}");
    }
}

/// With a table indexed by row group as `needle` beside `plain`: every query answers alike, and
/// the Parquet scan of a lookup considers one row group of the 36 (12 files of 3), DataFusion
/// alone all 36 (DataFusion's own metrics say so).
pub async fn check_row_groups_read(ctx: &SessionContext, table: &NeedleTable) {
    check_all(ctx).await;
    assert_eq!(table.stats().by_index, 13);
    let q = format!("SELECT * FROM needle WHERE k = {}", scramble(1250));
    assert_eq!(row_groups_considered(ctx, &q).await, 1);
    let q = format!("SELECT * FROM plain WHERE k = {}", scramble(1250));
    assert_eq!(row_groups_considered(ctx, &q).await, 36);
}

/// The row groups the Parquet scan of `sql` had to consider (those its statistics could prune,
/// before they did): from `EXPLAIN ANALYZE`.
pub async fn row_groups_considered(ctx: &SessionContext, sql: &str) -> usize {
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

/// SplitMix64: the random test's data and queries, the same in every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
