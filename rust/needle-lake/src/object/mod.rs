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
//! candidates, one or two to their files (a file of at most [`WHOLE_FILE_BYTES`] whole, at the
//! length the index recorded; a larger one's footer, then the row groups that may hold the
//! value).
//!
//! `location` is where objects are and how requests are counted, `files` the Parquet files
//! read through ranged requests, `publication` publishing and reading an index; this module
//! joins them into indexing and lookups.

mod delta;
mod files;
mod location;
mod publication;

pub use delta::index_delta;
pub use files::{RemoteFile, RemoteFiles, WHOLE_FILE_BYTES};
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
    staged(staging, |index_dir| {
        let report = pq::index_files_with(
            &files,
            index_dir,
            &rels,
            o,
            Options::default(),
            pq::Missing::Refused,
            progress,
        )?;
        let to = index_of(table, index)?;
        Ok((report, publish(index_dir, &to, &files.lengths(), None)?))
    })
}

/// Runs `build` on the index directory inside `staging`, or inside a temporary directory
/// removed afterwards.
fn staged<T>(staging: Option<&Path>, build: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    match staging {
        Some(dir) => build(&dir.join(INDEX_SUBDIR)),
        None => {
            let temporary = tempfile::Builder::new()
                .prefix("needle-staging-")
                .tempdir()
                .map_err(|e| Error::Other(format!("cannot create a staging directory: {e}")))?;
            build(&temporary.path().join(INDEX_SUBDIR))
        }
    }
}

/// The index of `table`: `index`, or `TABLE/.needle-index`.
pub(crate) fn index_of(table: &Location, index: Option<&Location>) -> Result<Location> {
    match index {
        Some(l) => Ok(l.clone()),
        None => table.child(INDEX_SUBDIR),
    }
}

/// A lookup on object storage: the rows, and the requests it took to the index and to the
/// table.
#[derive(Debug, Clone)]
pub struct RemoteLookup {
    /// Candidates and rows, as a local lookup gives them.
    pub result: LookupResult,
    /// Requests to the index (opening it included).
    pub index: Requests,
    /// Requests to the table: the candidate files (and, for a Delta table, its log).
    pub files: Requests,
}

/// Finds the rows of `value` in the table at `table`, through its published index
/// (`TABLE/.needle-index`, or `index`): a folder of Parquet files, or a Delta table indexed by
/// [`index_delta`], at `version` (default: its latest).
pub fn lookup(
    table: &Location,
    index: Option<&Location>,
    version: Option<u64>,
    value: &str,
) -> Result<RemoteLookup> {
    let index = index_of(table, index)?;
    // Each phase counts on its own location (the index's prefix may share the table's counts).
    let before = index.requests();
    let ix = RemoteIndex::open(&index)?;
    let v = ix.meta().kind.parse(value)?;
    if version.is_some() && ix.delta_version().is_none() {
        return Err(Error::Other(format!(
            "--version reads a Delta table indexed by `needle index-delta`, and the index at \
             {index:?} is of Parquet files"
        )));
    }
    let candidates = ix.candidates(&v)?;
    let index_requests = index.requests() - before;
    let before = table.requests();
    let result = if ix.delta_version().is_some() {
        delta::read_version(table, &ix, version, &v, candidates)?
    } else {
        // The candidates' lengths only: the index has every file's.
        let lengths = ix.file_lengths();
        let files = RemoteFiles::new(table.clone()).knowing(candidates.iter().filter_map(|id| {
            let (rel, _) = pq::split_id(id);
            Some((rel.to_string(), *lengths.get(rel)?))
        }));
        files.prefetch(&candidates)?;
        pq::read_rows(&files, ix.meta(), &v, candidates)?
    };
    Ok(RemoteLookup {
        result,
        index: index_requests,
        files: table.requests() - before,
    })
}
