//! SQL through `NeedleTable` against DataFusion alone over the same files: every query's rows
//! equal, while equality and `IN` queries read only the candidate files.

mod common;

use common::{
    check_all, check_row_groups_read, index_options, rows, scramble, write_file, write_keys, Rng,
    FILES, ROWS,
};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use needle_datafusion::NeedleTable;
use needle_lake::pq::index_dir;
use std::path::Path;
use std::sync::Arc;

fn index(dir: &Path, row_groups: bool) {
    index_dir(dir, &index_options(row_groups), |_, _, _| {}).unwrap();
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
    check_row_groups_read(&ctx, &table).await;
}

#[tokio::test]
async fn a_directory_without_an_index_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    write_file(&tmp.path().join("a.parquet"), 0);
    let ctx = SessionContext::new();
    let e = NeedleTable::open(&ctx, tmp.path(), None).await.unwrap_err();
    assert!(e.to_string().contains("is not a Parquet index"), "{e}");
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
