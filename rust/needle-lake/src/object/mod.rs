//! Tables and partition indexes on object storage, through the `object_store` crate: S3 and
//! S3-compatible servers, Google Cloud Storage, Azure Blob Storage.
//!
//! Credentials and endpoints come from the environment, as each store's own tools read them: for
//! S3, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` (a server
//! other than AWS) and `AWS_ALLOW_HTTP=true` (an endpoint without TLS).
//!
//! An index on object storage is *published*: built on a local disk (where the write-ahead log,
//! merges and locks live), then uploaded as its segment files and one small object,
//! [`PUBLICATION`], that names them. Segments are uploaded under a name of their own for every
//! publication and the publication object is replaced last (one `PUT`, which object stores apply
//! whole), so a reader sees one publication or the next, never a mix. A lookup takes two round
//! trips to the index (the publication and [`HEADS`], the bundle of its segments' heads; two
//! bucket rows of every segment), each of requests sent in parallel, and then, if there are
//! candidates, two to their files (footers, at the lengths the publication recorded; the row
//! groups that may hold the value, unless the footers' reads hold them).
//!
//! `location` is where objects are and how requests are counted, `files` the Parquet files
//! read through ranged requests, `publication` publishing and reading an index; this module
//! joins them into indexing and lookups.

mod files;
mod location;
mod publication;

pub use files::{RemoteFile, RemoteFiles};
pub use location::{Location, Requests};
pub use publication::{publish, PublishReport, RemoteIndex, HEADS, PUBLICATION};

use crate::pq::{self, IndexParquetOptions, IndexReport, LookupResult, INDEX_SUBDIR};
use crate::{Error, Result};
use needle_index::Options;
use std::path::Path;

/// Whether `location` names an object store (`s3://bucket/table`, `gs://…`, `az://…`) rather
/// than a local path.
pub fn is_url(location: &str) -> bool {
    location.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// Indexes the Parquet files below `table` on one column and publishes the index to
/// `TABLE/.needle-index` (or `o.index`, a URL). The index is built in `staging` (a local
/// directory kept between runs, so a later run reads only new files), or in a temporary
/// directory removed afterwards.
pub fn index_parquet(
    table: &Location,
    index: Option<&Location>,
    staging: Option<&Path>,
    o: &IndexParquetOptions,
    progress: impl FnMut(usize, usize, &str),
) -> Result<(IndexReport, PublishReport)> {
    let files = RemoteFiles::new(table.clone());
    let rels = files.list()?;
    let temporary = match staging {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("needle-staging-")
                .tempdir()
                .map_err(|e| Error::Other(format!("cannot create a staging directory: {e}")))?,
        ),
    };
    let dir = staging.unwrap_or_else(|| temporary.as_ref().expect("made above").path());
    let index_dir = dir.join(INDEX_SUBDIR);
    let report = pq::index_files_with(
        &files,
        &index_dir,
        &rels,
        o,
        Options::default(),
        pq::Missing::Refused,
        progress,
    )?;
    let published = publish(&index_dir, &index_of(table, index)?, &files.lengths())?;
    Ok((report, published))
}

/// The index of `table`: `index`, or `TABLE/.needle-index`.
fn index_of(table: &Location, index: Option<&Location>) -> Result<Location> {
    match index {
        Some(l) => Ok(l.clone()),
        None => table.child(INDEX_SUBDIR),
    }
}

/// A lookup on object storage: the rows, and the requests it took to the index and to the
/// table's files.
#[derive(Debug, Clone)]
pub struct RemoteLookup {
    /// Candidates and rows, as a local lookup gives them.
    pub result: LookupResult,
    /// Requests to the index (opening it included).
    pub index: Requests,
    /// Requests to the candidate files.
    pub files: Requests,
}

/// Finds the rows of `value` in the table at `table`, through its published index
/// (`TABLE/.needle-index`, or `index`).
pub fn lookup(table: &Location, index: Option<&Location>, value: &str) -> Result<RemoteLookup> {
    let index = index_of(table, index)?;
    // Each phase counts on its own location (the index's prefix may share the table's counts).
    let before = index.requests();
    let ix = RemoteIndex::open(&index)?;
    let v = ix.meta().kind.parse(value)?;
    let candidates = ix.candidates(&v)?;
    let index_requests = index.requests() - before;
    let before = table.requests();
    // The candidates' lengths only: the publication has every file's.
    let lengths = ix.file_lengths();
    let files = RemoteFiles::new(table.clone()).knowing(candidates.iter().filter_map(|id| {
        let (rel, _) = pq::split_id(id);
        Some((rel.to_string(), *lengths.get(rel)?))
    }));
    files.prefetch(&candidates)?;
    let result = pq::read_rows(&files, ix.meta(), &v, candidates)?;
    Ok(RemoteLookup {
        result,
        index: index_requests,
        files: table.requests() - before,
    })
}
