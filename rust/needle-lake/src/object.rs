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
//! whole), so a reader sees one publication or the next, never a mix. A lookup takes three round
//! trips to the index (the publication; the head of every segment; two bucket rows of every
//! segment), each of requests sent in parallel, and then two to the candidate files (their
//! footers; the row groups that may hold the value).

use crate::pq::{
    self, IndexParquetOptions, IndexReport, LookupResult, ParquetFiles, ParquetMeta, INDEX_SUBDIR,
};
use crate::{Error, Key, Result};
use bytes::{Buf, Bytes};
use futures::future::try_join_all;
use futures::TryStreamExt;
use needle_index::published::{
    Publication, PublishedHead, PublishedIndex, PublishedSegment, HEAD_PREFIX_BYTES,
};
use needle_index::{seg_name, Index, Options};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The object, inside an index's prefix, that names the segments of its current publication.
pub const PUBLICATION: &str = "needle-publication.json";
/// The version of [`PUBLICATION`]'s content.
const PUBLICATION_FORMAT: u32 = 1;
/// Bytes read from the end of a Parquet file first: its footer, in one request for most files.
const FOOTER_PREFETCH: u64 = 64 << 10;
/// Bytes read at least when a Parquet reader asks for bytes not read yet: a column chunk's pages
/// in a few requests rather than two per page.
const READ_AHEAD: u64 = 1 << 20;
/// Most bytes a file keeps of what it read.
const CACHE_BYTES: u64 = 64 << 20;

/// Whether `location` names an object store (`s3://bucket/table`, `gs://…`, `az://…`) rather
/// than a local path.
pub fn is_url(location: &str) -> bool {
    location.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// Requests made to an object store, as the client counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Requests sent.
    pub requests: u64,
    /// Bytes received and sent.
    pub bytes: u64,
    /// Round trips: batches of requests sent in parallel and awaited together.
    pub round_trips: u64,
}

impl std::ops::Sub for Requests {
    type Output = Requests;
    fn sub(self, o: Requests) -> Requests {
        Requests {
            requests: self.requests - o.requests,
            bytes: self.bytes - o.bytes,
            round_trips: self.round_trips - o.round_trips,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    requests: AtomicU64,
    bytes: AtomicU64,
    round_trips: AtomicU64,
}

/// The runtime the object store's requests run on; callers of this module are synchronous.
fn block_on<F: Future>(f: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("needle-object-store")
                .enable_all()
                .build()
                .expect("cannot start the object store's runtime")
        })
        .block_on(f)
}

/// A prefix of an object store (a table's root, an index) and the requests made through it.
#[derive(Clone)]
pub struct Location {
    store: Arc<dyn ObjectStore>,
    root: ObjectPath,
    url: String,
    counts: Arc<Counts>,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

impl Location {
    /// Opens the store a URL names, configured from the environment.
    pub fn parse(url: &str) -> Result<Location> {
        Location::with_options(url, std::env::vars())
    }

    /// Opens the store a URL names, configured by `options`: the `object_store` crate's keys
    /// (`aws_access_key_id`, `aws_endpoint`, `aws_allow_http`, …) or the environment variables
    /// of the same names in capitals.
    pub fn with_options<K: AsRef<str>, V: Into<String>>(
        url: &str,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Location> {
        let parsed =
            url::Url::parse(url).map_err(|e| Error::Other(format!("{url} is not a URL: {e}")))?;
        let (store, root) = object_store::parse_url_opts(&parsed, options)
            .map_err(|e| Error::Other(format!("cannot open {url}: {e}")))?;
        Ok(Location {
            store: Arc::from(store),
            root,
            url: url.trim_end_matches('/').to_string(),
            counts: Arc::default(),
        })
    }

    /// The prefix `rel` (`/`-separated) below this one, on the same store, counted with it.
    pub fn child(&self, rel: &str) -> Result<Location> {
        Ok(Location {
            root: self.path(rel)?,
            url: self.url_of(rel),
            ..self.clone()
        })
    }

    /// The URL of `rel` below this prefix.
    pub fn url_of(&self, rel: &str) -> String {
        format!("{}/{rel}", self.url)
    }

    /// Requests made through this location (and those it was made from, or made) so far.
    pub fn requests(&self) -> Requests {
        Requests {
            requests: self.counts.requests.load(Ordering::Relaxed),
            bytes: self.counts.bytes.load(Ordering::Relaxed),
            round_trips: self.counts.round_trips.load(Ordering::Relaxed),
        }
    }

    fn path(&self, rel: &str) -> Result<ObjectPath> {
        let rel = ObjectPath::parse(rel)
            .map_err(|e| Error::Other(format!("{}: {e}", self.url_of(rel))))?;
        Ok(self.root.parts().chain(rel.parts()).collect())
    }

    fn counted(&self, bytes: u64) {
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Runs a batch of requests in parallel: one round trip.
    fn round_trip<T>(&self, batch: impl Future<Output = T>) -> T {
        self.counts.round_trips.fetch_add(1, Ordering::Relaxed);
        block_on(batch)
    }

    fn failed(&self, rel: &str, what: &str, e: object_store::Error) -> Error {
        let hint = match e {
            object_store::Error::NotFound { .. } => " (not found)",
            _ => "",
        };
        Error::Other(format!("cannot {what} {}{hint}: {e}", self.url_of(rel)))
    }

    /// Bytes `range` of object `rel`, the range clipped to the object's end, and the object's
    /// length.
    async fn get_range(&self, rel: &str, range: GetRange) -> Result<(Bytes, u64)> {
        let options = GetOptions {
            range: Some(range),
            ..GetOptions::default()
        };
        let r = self.store.get_opts(&self.path(rel)?, options).await;
        self.counted(0);
        let r = r.map_err(|e| self.failed(rel, "read", e))?;
        let len = r.meta.size;
        let bytes = r.bytes().await.map_err(|e| self.failed(rel, "read", e))?;
        self.counts
            .bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok((bytes, len))
    }

    /// The length of object `rel`.
    async fn len(&self, rel: &str) -> Result<u64> {
        let meta = self.store.head(&self.path(rel)?).await;
        self.counted(0);
        Ok(meta.map_err(|e| self.failed(rel, "read", e))?.size)
    }

    /// The whole of object `rel`.
    async fn get(&self, rel: &str) -> Result<Bytes> {
        let r = self
            .store
            .get(&self.path(rel)?)
            .await
            .map_err(|e| self.failed(rel, "read", e))?;
        let bytes = r.bytes().await.map_err(|e| self.failed(rel, "read", e))?;
        self.counted(bytes.len() as u64);
        Ok(bytes)
    }

    async fn put(&self, rel: &str, bytes: Bytes) -> Result<()> {
        let n = bytes.len() as u64;
        self.store
            .put(&self.path(rel)?, PutPayload::from(bytes))
            .await
            .map_err(|e| self.failed(rel, "write", e))?;
        self.counted(n);
        Ok(())
    }

    async fn delete(&self, rel: &str) -> Result<()> {
        self.store
            .delete(&self.path(rel)?)
            .await
            .map_err(|e| self.failed(rel, "delete", e))?;
        self.counted(0);
        Ok(())
    }

    /// Every object below this prefix: its path relative to it, `/`-separated.
    async fn list(&self) -> Result<Vec<String>> {
        let metas: Vec<_> = self
            .store
            .list(Some(&self.root))
            .try_collect()
            .await
            .map_err(|e| Error::Other(format!("cannot list {}: {e}", self.url)))?;
        self.counted(0);
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let rel: Vec<String> = m
                    .location
                    .prefix_match(&self.root)?
                    .map(|p| p.as_ref().to_string())
                    .collect();
                Some(rel.join("/"))
            })
            .collect())
    }
}

/// A Parquet file on an object store, read with ranged requests; what it has read is kept (up
/// to [`CACHE_BYTES`]), so the Parquet reader's many small reads of one column chunk are served
/// from a few requests.
#[derive(Clone)]
pub struct RemoteFile {
    location: Location,
    rel: String,
    len: u64,
    cache: Arc<Mutex<Vec<(u64, Bytes)>>>,
}

impl RemoteFile {
    /// Opens files `rels` of `location`: their lengths, then their footers, in two round trips.
    ///
    /// A suffix range (`bytes=-N`) would read a footer without the length, in one, but some
    /// S3-compatible servers (s3s-fs 0.14) fail one longer than the object instead of answering
    /// the whole object, as S3 does.
    fn open_all(location: &Location, rels: &[&str]) -> Result<Vec<RemoteFile>> {
        let lens = location.round_trip(try_join_all(rels.iter().map(|rel| location.len(rel))))?;
        let files: Vec<RemoteFile> = rels
            .iter()
            .zip(lens)
            .map(|(rel, len)| RemoteFile {
                location: location.clone(),
                rel: rel.to_string(),
                len,
                cache: Arc::default(),
            })
            .collect();
        let tails = files
            .iter()
            .filter(|f| f.len > 0)
            .map(|f| f.len.saturating_sub(FOOTER_PREFETCH)..f.len);
        let reads: Vec<(&RemoteFile, Range<u64>)> =
            files.iter().filter(|f| f.len > 0).zip(tails).collect();
        let got = location.round_trip(try_join_all(
            reads
                .iter()
                .map(|(f, r)| location.get_range(&f.rel, GetRange::Bounded(r.clone()))),
        ))?;
        for ((f, r), (bytes, _)) in reads.iter().zip(got) {
            f.keep(r.start, bytes);
        }
        Ok(files)
    }

    /// Keeps only the footer of what was read of the file's end (a copy, so the rest is freed).
    fn trim_to_footer(&self) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let Some((start, tail)) = c.last_mut() else {
            return;
        };
        let n = tail.len();
        if n < 8 || &tail[n - 4..] != b"PAR1" {
            return;
        }
        let footer = u32::from_le_bytes(tail[n - 8..n - 4].try_into().unwrap()) as usize + 8;
        if footer < n {
            *start += (n - footer) as u64;
            *tail = Bytes::copy_from_slice(&tail[n - footer..]);
        }
    }

    fn keep(&self, start: u64, bytes: Bytes) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.push((start, bytes));
        while c.len() > 1 && c.iter().map(|(_, b)| b.len() as u64).sum::<u64>() > CACHE_BYTES {
            c.remove(0);
        }
    }

    /// Bytes `start..end` if one kept read holds them all.
    fn kept(&self, start: u64, end: u64) -> Option<Bytes> {
        let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.iter().rev().find_map(|(s, b)| {
            (*s <= start && end <= s + b.len() as u64)
                .then(|| b.slice((start - s) as usize..(end - s) as usize))
        })
    }

    /// Bytes `start..end`, read (with at least [`READ_AHEAD`] bytes) if not kept.
    fn bytes(&self, start: u64, end: u64) -> parquet::errors::Result<Bytes> {
        if let Some(b) = self.kept(start, end) {
            return Ok(b);
        }
        let stop = end.max(start + READ_AHEAD).min(self.len);
        let (b, _) = self
            .location
            .round_trip(
                self.location
                    .get_range(&self.rel, GetRange::Bounded(start..stop)),
            )
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
        if (b.len() as u64) < end - start {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{} ended at {} bytes, before byte {end}",
                self.location.url_of(&self.rel),
                start + b.len() as u64
            )));
        }
        self.keep(start, b.clone());
        Ok(b.slice(..(end - start) as usize))
    }
}

impl Length for RemoteFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for RemoteFile {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // A page header: what the kept read holding `start` has from there, or a read ahead.
        let kept = {
            let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            c.iter().rev().find_map(|(s, b)| {
                (*s <= start && start < s + b.len() as u64).then(|| b.slice((start - s) as usize..))
            })
        };
        match kept {
            Some(b) => Ok(b.reader()),
            None => Ok(self
                .bytes(start, (start + READ_AHEAD).min(self.len))?
                .reader()),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, start + length as u64)
    }
}

/// The Parquet files below a prefix of an object store. Files opened ahead (for a lookup, or
/// the next batch of an indexing run) are kept until read.
pub struct RemoteFiles {
    location: Location,
    opened: Mutex<HashMap<String, RemoteFile>>,
}

impl RemoteFiles {
    /// The files below `location`.
    pub fn new(location: Location) -> RemoteFiles {
        RemoteFiles {
            location,
            opened: Mutex::default(),
        }
    }

    /// Every `*.parquet` object below the prefix, outside hidden folders (as
    /// [`pq::parquet_files`] lists a local directory), sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .location
            .round_trip(self.location.list())?
            .into_iter()
            .filter(|rel| {
                rel.ends_with(".parquet") && !rel.split('/').any(|part| part.starts_with('.'))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Opens the files that partitions `ids` belong to and reads the row groups they name, in
    /// three round trips (lengths, footers, row groups), so reading their rows sends no request.
    fn prefetch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut groups: BTreeMap<&str, Vec<Option<usize>>> = BTreeMap::new();
        for id in ids {
            let (file, rg) = pq::split_id(id);
            groups.entry(file).or_default().push(rg);
        }
        let loc = &self.location;
        let rels: Vec<&str> = groups.keys().copied().collect();
        let files = RemoteFile::open_all(loc, &rels)?;
        let mut reads = Vec::new();
        for (f, wanted) in files.iter().zip(groups.values()) {
            let name = loc.url_of(&f.rel);
            let reader = SerializedFileReader::new(f.clone())
                .map_err(|e| Error::Other(format!("{name} is not a readable Parquet file: {e}")))?;
            let md = reader.metadata();
            let which: Vec<usize> = if wanted.contains(&None) {
                (0..md.num_row_groups()).collect()
            } else {
                wanted.iter().flatten().copied().collect()
            };
            // The row groups' bytes, adjacent ones in one read.
            let mut ranges: Vec<Range<u64>> = which
                .iter()
                .filter_map(|&g| md.row_groups().get(g))
                .filter_map(|rg| {
                    let chunks = rg.columns().iter().map(|c| c.byte_range());
                    let start = chunks.clone().map(|(s, _)| s).min()?;
                    let end = chunks.map(|(s, l)| s + l).max()?;
                    (end > start).then_some(start..end)
                })
                .collect();
            ranges.sort_by_key(|r| r.start);
            let mut merged: Vec<Range<u64>> = Vec::new();
            for r in ranges {
                match merged.last_mut() {
                    Some(last) if r.start <= last.end + READ_AHEAD => {
                        last.end = last.end.max(r.end)
                    }
                    _ => merged.push(r),
                }
            }
            reads.extend(merged.into_iter().map(|r| (f, r)));
        }
        let got = loc.round_trip(try_join_all(
            reads
                .iter()
                .map(|(f, r)| loc.get_range(&f.rel, GetRange::Bounded(r.clone()))),
        ))?;
        for ((f, r), (bytes, _)) in reads.iter().zip(got) {
            f.keep(r.start, bytes);
        }
        self.keep_opened(files);
        Ok(())
    }
}

impl ParquetFiles for RemoteFiles {
    type Reader = RemoteFile;
    fn open(&self, rel: &str) -> Result<RemoteFile> {
        let opened = self
            .opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(rel);
        match opened {
            Some(f) => Ok(f),
            None => Ok(RemoteFile::open_all(&self.location, &[rel])?.remove(0)),
        }
    }
    fn name(&self, rel: &str) -> String {
        self.location.url_of(rel)
    }
    fn open_ahead(&self, rels: &[String]) -> Result<()> {
        let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
        let files = RemoteFile::open_all(&self.location, &rels)?;
        // Kept by the hundred: only their footers, not the 64 KiB read to find them.
        for f in &files {
            f.trim_to_footer();
        }
        self.keep_opened(files);
        Ok(())
    }
}

impl RemoteFiles {
    fn keep_opened(&self, files: Vec<RemoteFile>) {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        for f in files {
            opened.insert(f.rel.clone(), f);
        }
    }
}

/// The content of [`PUBLICATION`].
#[derive(Debug, Serialize, Deserialize)]
struct PublicationFile {
    format: u32,
    /// What the index covers, as `parquet-column.txt` of a local index says it.
    parquet: String,
    buckets: u32,
    fingerprint_bits: u32,
    segments: Vec<SegmentEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SegmentEntry {
    /// The segment's object, relative to the index's prefix.
    object: String,
    id: u64,
    removed: Vec<u64>,
    deleted: Vec<u64>,
    /// Bytes of the head (header, partition table, padding); absent from a publication made
    /// before it was recorded, whose heads are read [`HEAD_PREFIX_BYTES`] first.
    #[serde(default)]
    head_bytes: Option<u64>,
}

/// What [`publish`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// Segments uploaded.
    pub segments: usize,
    /// Bytes of the segments uploaded.
    pub bytes: u64,
    /// Objects of earlier publications deleted.
    pub deleted: usize,
}

/// Uploads the index in local directory `index_dir` (built by `index-parquet`) to `to`, then
/// deletes the objects of earlier publications there. A reader of an earlier publication that
/// reads a deleted segment gets an error, never a wrong answer; reading again finds the new one.
pub fn publish(index_dir: &Path, to: &Location) -> Result<PublishReport> {
    let meta = ParquetMeta::load(index_dir)?;
    let ix = Index::open_snapshot(index_dir, Options::default())?;
    let publication = ix.publication()?;
    drop(ix);
    // A name no earlier publication used: its time in nanoseconds and this process.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tag = format!("p-{nanos:x}-{:x}", std::process::id());
    let mut report = PublishReport::default();
    let mut uploads = Vec::new();
    let mut entries = Vec::new();
    for s in &publication.segments {
        let file = index_dir.join(seg_name(s.id));
        let bytes = std::fs::read(&file)
            .map_err(|e| Error::Other(format!("cannot read {}: {e}", file.display())))?;
        report.segments += 1;
        report.bytes += bytes.len() as u64;
        let object = format!("{tag}/{}", seg_name(s.id));
        uploads.push((object.clone(), Bytes::from(bytes)));
        entries.push(SegmentEntry {
            object,
            id: s.id,
            removed: s.removed.clone(),
            deleted: s.deleted.clone(),
            head_bytes: Some(s.head_bytes),
        });
    }
    to.round_trip(try_join_all(uploads.into_iter().map(|(object, bytes)| {
        let to = to.clone();
        async move { to.put(&object, bytes).await }
    })))?;
    let file = PublicationFile {
        format: PUBLICATION_FORMAT,
        parquet: meta.to_text(),
        buckets: publication.buckets,
        fingerprint_bits: publication.fingerprint_bits,
        segments: entries,
    };
    let json = serde_json::to_vec_pretty(&file).expect("a publication serializes");
    to.round_trip(to.put(PUBLICATION, Bytes::from(json)))?;
    let keep: HashSet<&str> = file.segments.iter().map(|e| e.object.as_str()).collect();
    let stale: Vec<String> = to
        .round_trip(to.list())?
        .into_iter()
        .filter(|rel| rel != PUBLICATION && !keep.contains(rel.as_str()))
        .collect();
    report.deleted = stale.len();
    to.round_trip(try_join_all(stale.iter().map(|rel| to.delete(rel))))?;
    Ok(report)
}

/// A published index, opened: what it covers, and the heads of its segments.
pub struct RemoteIndex {
    location: Location,
    meta: ParquetMeta,
    objects: Vec<String>,
    index: PublishedIndex,
}

impl RemoteIndex {
    /// Reads the publication at `location` and the head of every segment it names: two round
    /// trips (three for a publication that does not record its heads' lengths, when a segment's
    /// partition table is longer than [`HEAD_PREFIX_BYTES`]).
    pub fn open(location: &Location) -> Result<RemoteIndex> {
        let json = location
            .round_trip(location.get(PUBLICATION))
            .map_err(|e| {
                Error::Other(format!(
                    "{} holds no published index ({e}); build one with `needle index-parquet`",
                    location.url_of("")
                ))
            })?;
        let file: PublicationFile = serde_json::from_slice(&json).map_err(|e| {
            Error::Other(format!("{} is damaged: {e}", location.url_of(PUBLICATION)))
        })?;
        if file.format > PUBLICATION_FORMAT {
            return Err(Error::Other(format!(
                "{} was published by a newer version of needle (format {}; this one reads up to \
                 {PUBLICATION_FORMAT})",
                location.url_of(PUBLICATION),
                file.format
            )));
        }
        let meta = ParquetMeta::parse(&file.parquet, &location.url_of(PUBLICATION))?;
        let objects: Vec<String> = file.segments.iter().map(|e| e.object.clone()).collect();
        // Each head as long as the publication says; a guess for one made before it said.
        let mut prefixes = location.round_trip(try_join_all(file.segments.iter().map(|e| {
            let head = e.head_bytes.unwrap_or(HEAD_PREFIX_BYTES).max(1);
            location.get_range(&e.object, GetRange::Bounded(0..head))
        })))?;
        let mut heads: Vec<Option<PublishedHead>> = vec![None; objects.len()];
        loop {
            let mut more = Vec::new();
            for (i, (prefix, len)) in prefixes.iter().enumerate() {
                if heads[i].is_some() {
                    continue;
                }
                match PublishedHead::parse(prefix, *len, &location.url_of(&objects[i]))? {
                    Ok(h) => heads[i] = Some(h),
                    Err(need) => more.push((i, need)),
                }
            }
            if more.is_empty() {
                break;
            }
            let got = location
                .round_trip(try_join_all(more.iter().map(|(i, need)| {
                    location.get_range(&objects[*i], GetRange::Bounded(0..*need))
                })))?;
            for ((i, _), read) in more.iter().zip(got) {
                prefixes[*i] = read;
            }
        }
        let publication = Publication {
            buckets: file.buckets,
            fingerprint_bits: file.fingerprint_bits,
            segments: file
                .segments
                .iter()
                .map(|e| PublishedSegment {
                    id: e.id,
                    removed: e.removed.clone(),
                    deleted: e.deleted.clone(),
                    head_bytes: e.head_bytes.unwrap_or(HEAD_PREFIX_BYTES),
                })
                .collect(),
        };
        let index = PublishedIndex::new(&publication, heads.into_iter().flatten().collect())?;
        Ok(RemoteIndex {
            location: location.clone(),
            meta,
            objects,
            index,
        })
    }

    /// What the index covers.
    pub fn meta(&self) -> &ParquetMeta {
        &self.meta
    }

    /// The candidate partitions of `value`: one round trip, two ranged reads per segment.
    pub fn candidates(&self, value: &Key) -> Result<Vec<String>> {
        let h = value.hash();
        let reads = self.index.rows_for(h);
        let loc = &self.location;
        let rows = loc.round_trip(try_join_all(reads.iter().map(|r| {
            let range: Range<u64> = r.range.clone();
            loc.get_range(&self.objects[r.segment], GetRange::Bounded(range))
        })))?;
        let rows: Vec<Bytes> = rows.into_iter().map(|(b, _)| b).collect();
        Ok(self.index.candidates(h, &rows)?)
    }
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
    let missing = pq::Missing::Refused;
    let report = pq::index_files_with(
        &files,
        &index_dir,
        &rels,
        o,
        Options::default(),
        missing,
        progress,
    )?;
    let to = match index {
        Some(l) => l.clone(),
        None => table.child(INDEX_SUBDIR)?,
    };
    let published = publish(&index_dir, &to)?;
    Ok((report, published))
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
    let index = match index {
        Some(l) => l.clone(),
        None => table.child(INDEX_SUBDIR)?,
    };
    // Each phase counts on its own location (the index's prefix may share the table's counts).
    let before = index.requests();
    let ix = RemoteIndex::open(&index)?;
    let v = ix.meta().kind.parse(value)?;
    let candidates = ix.candidates(&v)?;
    let index_requests = index.requests() - before;
    let before = table.requests();
    let files = RemoteFiles::new(table.clone());
    files.prefetch(&candidates)?;
    let result = pq::read_rows(&files, ix.meta(), &v, candidates)?;
    Ok(RemoteLookup {
        result,
        index: index_requests,
        files: table.requests() - before,
    })
}
