//! Where objects are: a prefix of an object store, the requests made through it, and the runtime
//! they run on.

use crate::{Error, Result};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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

    /// The object store this prefix is on (shared, so a query engine's requests go through the
    /// same client and credentials).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// The URL that names the store itself (`s3://bucket`), under which query engines such as
    /// DataFusion register it.
    pub fn store_url(&self) -> Result<url::Url> {
        let parsed = url::Url::parse(&self.url)
            .map_err(|e| Error::Other(format!("{} is not a URL: {e}", self.url)))?;
        let base = format!("{}://{}", parsed.scheme(), parsed.authority());
        url::Url::parse(&base).map_err(|e| Error::Other(format!("{base} is not a URL: {e}")))
    }

    /// The path of object `p` relative to this prefix (`/`-separated), if it is below it.
    pub fn relative(&self, p: &ObjectPath) -> Option<String> {
        let rel: Vec<String> = p
            .prefix_match(&self.root)?
            .map(|part| part.as_ref().to_string())
            .collect();
        Some(rel.join("/"))
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

    pub(super) fn path(&self, rel: &str) -> Result<ObjectPath> {
        let rel = ObjectPath::parse(rel)
            .map_err(|e| Error::Other(format!("{}: {e}", self.url_of(rel))))?;
        Ok(self.root.parts().chain(rel.parts()).collect())
    }

    pub(super) fn counted(&self, bytes: u64) {
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Runs a batch of requests in parallel: one round trip.
    pub(super) fn round_trip<T>(&self, batch: impl Future<Output = T>) -> T {
        self.counts.round_trips.fetch_add(1, Ordering::Relaxed);
        block_on(batch)
    }

    pub(super) fn failed(&self, rel: &str, what: &str, e: object_store::Error) -> Error {
        let hint = match e {
            object_store::Error::NotFound { .. } => " (not found)",
            _ => "",
        };
        Error::Other(format!("cannot {what} {}{hint}: {e}", self.url_of(rel)))
    }

    /// Bytes `range` of object `rel`, the range clipped to the object's end, and the object's
    /// length.
    pub(super) async fn get_range(&self, rel: &str, range: GetRange) -> Result<(Bytes, u64)> {
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

    /// Whether there is at least one object below this prefix (one listing request, the first
    /// page only).
    pub fn exists_below(&self) -> Result<bool> {
        let first = self.round_trip(async {
            self.store
                .list(Some(&self.root))
                .try_next()
                .await
                .map_err(|e| Error::Other(format!("cannot list {}: {e}", self.url)))
        })?;
        self.counted(0);
        Ok(first.is_some())
    }

    /// Whether each object of `rels` exists (a `HEAD` each, in one round trip).
    pub fn exist(&self, rels: &[&str]) -> Result<Vec<bool>> {
        self.round_trip(futures::future::try_join_all(rels.iter().map(
            |rel| async move {
                let path = self.path(rel)?;
                let r = self.store.head(&path).await;
                self.counted(0);
                match r {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(self.failed(rel, "read", e)),
                }
            },
        )))
    }

    /// The length of object `rel`.
    pub(super) async fn len(&self, rel: &str) -> Result<u64> {
        let meta = self.store.head(&self.path(rel)?).await;
        self.counted(0);
        Ok(meta.map_err(|e| self.failed(rel, "read", e))?.size)
    }

    /// The whole of object `rel`.
    pub(super) async fn get(&self, rel: &str) -> Result<Bytes> {
        let r = self
            .store
            .get(&self.path(rel)?)
            .await
            .map_err(|e| self.failed(rel, "read", e))?;
        let bytes = r.bytes().await.map_err(|e| self.failed(rel, "read", e))?;
        self.counted(bytes.len() as u64);
        Ok(bytes)
    }

    /// The whole of object `rel`, or `None` if there is no such object.
    pub(super) async fn get_if_present(&self, rel: &str) -> Result<Option<Bytes>> {
        match self.store.get(&self.path(rel)?).await {
            Ok(r) => {
                let bytes = r.bytes().await.map_err(|e| self.failed(rel, "read", e))?;
                self.counted(bytes.len() as u64);
                Ok(Some(bytes))
            }
            Err(object_store::Error::NotFound { .. }) => {
                self.counted(0);
                Ok(None)
            }
            Err(e) => Err(self.failed(rel, "read", e)),
        }
    }

    pub(super) async fn put(&self, rel: &str, bytes: Bytes) -> Result<()> {
        let n = bytes.len() as u64;
        self.store
            .put(&self.path(rel)?, PutPayload::from(bytes))
            .await
            .map_err(|e| self.failed(rel, "write", e))?;
        self.counted(n);
        Ok(())
    }

    pub(super) async fn delete(&self, rel: &str) -> Result<()> {
        self.store
            .delete(&self.path(rel)?)
            .await
            .map_err(|e| self.failed(rel, "delete", e))?;
        self.counted(0);
        Ok(())
    }

    /// Every object below this prefix: its path relative to it, `/`-separated.
    pub(super) async fn list(&self) -> Result<Vec<String>> {
        Ok(self
            .list_sized()
            .await?
            .into_iter()
            .map(|(rel, _)| rel)
            .collect())
    }

    /// Every object below this prefix and its length, as the listing gives them.
    pub(super) async fn list_sized(&self) -> Result<Vec<(String, u64)>> {
        let metas: Vec<_> = self
            .store
            .list(Some(&self.root))
            .try_collect()
            .await
            .map_err(|e| Error::Other(format!("cannot list {}: {e}", self.url)))?;
        self.counted(0);
        Ok(metas
            .into_iter()
            .filter_map(|m| Some((self.relative(&m.location)?, m.size)))
            .collect())
    }
}
