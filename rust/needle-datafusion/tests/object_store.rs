//! `NeedleTable` over a real S3-compatible server: every query's rows equal DataFusion alone
//! reading the same objects, equality and `IN` queries read only the candidate files (or row
//! groups), files published after the index are read, and a prefix without an index says so.

mod common;
#[path = "../../needle-cli/tests/common/s3.rs"]
#[allow(dead_code)] // the command's tests use the rest
mod s3;

use common::{check_all, check_row_groups_read, index_options, rows, scramble, write_file, FILES};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use needle_datafusion::NeedleTable;
use needle_lake::object::{self, Location};
use s3::S3Server;
use std::sync::Arc;

fn location(server: &S3Server, url: &str) -> Location {
    Location::with_options(url, server.env()).unwrap()
}

/// `FILES` files of the shared table in bucket `lake`, prefix `t`, written where the server
/// keeps its objects.
fn table_on(server: &S3Server) {
    let dir = server.bucket("lake").join("t");
    std::fs::create_dir_all(&dir).unwrap();
    for f in 0..FILES {
        write_file(&dir.join(format!("part-{f:03}.parquet")), f);
    }
}

/// Indexes `s3://lake/t` and publishes the index (at `index`, by default next to the table).
fn index_on(server: &S3Server, row_groups: bool, index: Option<&str>) {
    let index = index.map(|url| location(server, url));
    // Indexing blocks on the object store's own runtime, not the test's.
    tokio::task::block_in_place(|| {
        object::index_parquet(
            &location(server, "s3://lake/t"),
            index.as_ref(),
            None,
            &index_options(row_groups),
            |_, _, _| {},
        )
    })
    .unwrap();
}

/// A context with the table as `needle` (through the index at `index`) and as `plain`
/// (DataFusion alone, through the store `needle` registered).
async fn contexts(server: &S3Server, index: Option<&str>) -> (SessionContext, Arc<NeedleTable>) {
    let ctx = SessionContext::new();
    let table = NeedleTable::open_location(
        &ctx,
        location(server, "s3://lake/t"),
        index.map(|url| location(server, url)),
    )
    .await
    .unwrap();
    let table = Arc::new(table);
    ctx.register_table("needle", table.clone()).unwrap();
    ctx.register_parquet("plain", "s3://lake/t/", ParquetReadOptions::default())
        .await
        .unwrap();
    (ctx, table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_datafusion_alone_reading_only_candidates() {
    let server = S3Server::start();
    table_on(&server);
    index_on(&server, false, None);
    let (ctx, table) = contexts(&server, None).await;
    check_all(&ctx).await;
    let s = table.stats();
    assert_eq!((s.by_index, s.full), (13, 3), "{s:?}");
    assert_eq!(s.files_not_indexed, 0);
    assert!(s.files_read <= 20, "{s:?}");

    // A file published after the index, in a deeper prefix, and one removed: still equal, the
    // new file read by every narrowed scan.
    let dir = server.bucket("lake").join("t");
    std::fs::create_dir(dir.join("later")).unwrap();
    write_file(&dir.join("later/part-new.parquet"), FILES);
    std::fs::remove_file(dir.join("part-000.parquet")).unwrap();
    let (ctx, table) = contexts(&server, None).await;
    check_all(&ctx).await;
    let s = table.stats();
    assert_eq!(s.files_not_indexed, s.by_index, "{s:?}");
    // Published again: the new file is a candidate like the others.
    index_on(&server, false, None);
    let before = table.stats();
    let q = format!(
        "SELECT * FROM needle WHERE k = {}",
        scramble(FILES * 300 + 3)
    );
    assert_eq!(rows(&ctx, &q).await.lines().count(), 1);
    let after = table.stats();
    assert_eq!(after.files_not_indexed, before.files_not_indexed);
    assert_eq!(after.files_read - before.files_read, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_by_row_group_elsewhere_reads_only_its_row_groups() {
    let server = S3Server::start();
    table_on(&server);
    server.bucket("indexes");
    let at = Some("s3://indexes/t-k");
    index_on(&server, true, at);
    let (ctx, table) = contexts(&server, at).await;
    check_row_groups_read(&ctx, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_without_an_index_is_a_clear_error() {
    let server = S3Server::start();
    table_on(&server);
    let ctx = SessionContext::new();
    let e = NeedleTable::open_location(&ctx, location(&server, "s3://lake/t"), None)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("s3://lake/t/.needle-index") && text.contains("needle index-parquet"),
        "{text}"
    );
}
