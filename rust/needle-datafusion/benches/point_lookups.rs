//! Point lookups in a directory of Parquet files: DataFusion alone against DataFusion with Needle.
//!
//! The table is the data-lake benchmark's (`bench/data-lake/tables.py`): files of `rows` rows
//! whose `key` column holds `i * A mod P` for row number `i`, indexed by `needle index-parquet`.
//! Each query looks up one present or absent key with `SELECT * FROM t WHERE key = v`, through:
//!
//! - `datafusion`: a `SessionContext` kept across queries, the table registered once with
//!   `register_parquet` (DataFusion's own pruning: statistics, and Bloom filters where present);
//! - `needle+datafusion`: the same with the table registered as a `NeedleTable`;
//! - `datafusion-new` and `needle+datafusion-new`: a new context for each query, the table
//!   registered in it (what a short-lived process pays).
//!
//! Methods run in a random order for each query; every answer is checked (one row for a present
//! key, none for an absent one). One JSON object per query and method goes to `--out`.
//!
//! The table may be a prefix of an object store (`--table s3://bucket/t`, the store configured
//! from the environment as `needle` reads it); DataFusion alone then reads it through the same
//! `object_store` client.
//!
//! ```text
//! cargo bench -p needle-datafusion --bench point_lookups -- --table DIR --rows 20000 --files 5000 \
//!     --queries 50 --new-queries 5 --out results.jsonl
//! ```

use clap::Parser;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use needle_datafusion::NeedleTable;
use needle_lake::object::{self, Location};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

const A: u128 = 11400714819323198485 % 9223372036854775783;
const P: u128 = 9223372036854775783;

fn key_of(i: u64) -> i64 {
    (i as u128 * A % P) as i64
}

/// Point lookups: DataFusion alone against DataFusion with Needle.
#[derive(Parser)]
struct Args {
    /// The table: a directory of Parquet files indexed by `needle index-parquet --column key`,
    /// or a prefix of an object store (`s3://bucket/t`) with a published index.
    #[arg(long)]
    table: String,
    /// Rows per file.
    #[arg(long, default_value_t = 20_000)]
    rows: u64,
    /// Files in the table.
    #[arg(long)]
    files: u64,
    /// Queries per kind (present, absent) with a context kept across queries.
    #[arg(long, default_value_t = 50)]
    queries: usize,
    /// Of those, queries also run in a new context.
    #[arg(long, default_value_t = 5)]
    new_queries: usize,
    /// Where the measurements go, one JSON object per line.
    #[arg(long, default_value = "point_lookups.jsonl")]
    out: PathBuf,
    /// DataFusion's target partitions (its files read at once).
    #[arg(long, default_value_t = 2)]
    partitions: usize,
    /// Seed of the queries' keys and of the methods' order.
    #[arg(long, default_value_t = 2024)]
    seed: u64,
    /// Passed by `cargo bench` to every benchmark.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A small deterministic generator (SplitMix64): the same queries for every method and run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn context(partitions: usize) -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions))
}

async fn plain(ctx: &SessionContext, table: &str) {
    let mut path = table.to_string();
    if object::is_url(table) {
        let store = Location::parse(table).expect("open the object store");
        ctx.register_object_store(&store.store_url().expect("a store URL"), store.store());
        path = format!("{}/", table.trim_end_matches('/'));
    }
    ctx.register_parquet("t", &path, ParquetReadOptions::default())
        .await
        .expect("register the table");
}

async fn needle(ctx: &SessionContext, table: &str) {
    let t = if object::is_url(table) {
        NeedleTable::open_url(ctx, table, None).await
    } else {
        NeedleTable::open(ctx, table, None).await
    };
    let t = t.expect("open the table and its index");
    ctx.register_table("t", Arc::new(t)).expect("register");
}

async fn count(ctx: &SessionContext, key: i64) -> usize {
    let df = ctx
        .sql(&format!("SELECT * FROM t WHERE key = {key}"))
        .await
        .expect("plan");
    df.collect()
        .await
        .expect("run")
        .iter()
        .map(|b| b.num_rows())
        .sum()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = Args::parse();
    let table = a.table.clone();
    let total = a.files * a.rows;
    let mut rng = Rng(a.seed);
    let mut out = std::fs::File::create(&a.out).expect("create --out");

    let kept_plain = context(a.partitions);
    let t = Instant::now();
    plain(&kept_plain, &table).await;
    let plain_open = t.elapsed().as_secs_f64() * 1e3;
    let kept_needle = context(a.partitions);
    let t = Instant::now();
    needle(&kept_needle, &table).await;
    let needle_open = t.elapsed().as_secs_f64() * 1e3;
    eprintln!("registered: datafusion {plain_open:.0} ms, needle+datafusion {needle_open:.0} ms");
    let registration = json!({"registration": true, "files": a.files,
        "datafusion_ms": plain_open, "needle_ms": needle_open});
    writeln!(out, "{registration}").unwrap();

    for (kind, n) in [("present", a.queries), ("absent", a.queries)] {
        for q in 0..n {
            let i = if kind == "present" {
                rng.below(total)
            } else {
                total + rng.below(1_000_000_000)
            };
            let key = key_of(i);
            let mut methods = vec!["datafusion", "needle+datafusion"];
            if q < a.new_queries {
                methods.extend(["datafusion-new", "needle+datafusion-new"]);
            }
            // A random order for each query (Fisher-Yates).
            for j in (1..methods.len()).rev() {
                methods.swap(j, rng.below(j as u64 + 1) as usize);
            }
            for m in methods {
                if q == 0 && !m.ends_with("-new") {
                    // The first query of each kind warms the page cache and the context.
                    let ctx = if m == "datafusion" {
                        &kept_plain
                    } else {
                        &kept_needle
                    };
                    count(ctx, key).await;
                }
                let t = Instant::now();
                let rows = match m {
                    "datafusion" => count(&kept_plain, key).await,
                    "needle+datafusion" => count(&kept_needle, key).await,
                    "datafusion-new" => {
                        let ctx = context(a.partitions);
                        plain(&ctx, &table).await;
                        count(&ctx, key).await
                    }
                    _ => {
                        let ctx = context(a.partitions);
                        needle(&ctx, &table).await;
                        count(&ctx, key).await
                    }
                };
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let want = usize::from(kind == "present");
                assert_eq!(rows, want, "{m}: key {key} ({kind}) returned {rows} rows");
                let row = json!({"files": a.files, "kind": kind, "method": m, "ms": ms});
                writeln!(out, "{row}").unwrap();
            }
        }
        eprintln!("{kind}: {n} queries done");
    }
}
