//! `needle serve`: the index over HTTP, read-only, while another process may write it.
//!
//! The service holds a snapshot of the index ([`needle_index::Index::open_snapshot`], no lock, so the writer
//! never waits) and opens a new one when the index's files change. Endpoints:
//!
//! - `GET /candidates?value=V` and `POST /candidates` with `{"values": [...]}`
//! - `GET /lookup?value=V` (with `--parquet DIR`): the matching rows
//! - `GET /health`, `GET /metrics` (the OpenMetrics text format, which Prometheus reads)
//!
//! With `--parquet TABLE` of a Delta table indexed by `needle index-delta`, the service follows
//! the table's log as well as the index: answers are for the latest version, or for the one a
//! request names (`version=N`, `{"version": N}`), and hold every file live in that version that
//! the index does not cover yet, so they never miss a file, whatever the index's lag.
//!
//! Bad input gets a 4xx answer whose JSON body says what was wrong.

mod handlers;
mod metrics;
mod routes;
mod snapshot;

use anyhow::{anyhow, bail, Result};
use metrics::Metrics;
use needle_lake::delta;
use needle_lake::pq::ParquetMeta;
use needle_lake::ValueType;
use snapshot::{open_snapshot, signature, DeltaTable, Snapshot};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// At most this many values in one batch request.
const MAX_BATCH: usize = 100_000;
/// At most this many bytes in a request body.
const MAX_BODY: usize = 16 << 20;

/// What `needle serve` was asked to serve.
pub struct ServeOptions {
    pub index: PathBuf,
    /// The Parquet directory the index covers (enables `/lookup`; the value type comes from it).
    pub parquet: Option<PathBuf>,
    /// The value type, for an index not built from Parquet.
    pub kind: ValueType,
    pub listen: String,
    pub threads: usize,
    pub refresh: Duration,
}

/// The running service: what it serves, the snapshot it answers from, and its metrics.
struct Service {
    opts: ServeOptions,
    meta: Option<ParquetMeta>,
    kind: ValueType,
    current: RwLock<Arc<Snapshot>>,
    /// The Delta table the index follows, if it indexes one.
    delta: Option<DeltaTable>,
    metrics: Metrics,
}

/// Starts the service and serves until the process is stopped.
pub fn serve(opts: ServeOptions) -> Result<()> {
    let meta = match &opts.parquet {
        Some(_) => Some(ParquetMeta::load(&opts.index)?),
        None => None,
    };
    let kind = meta.as_ref().map(|m| m.kind).unwrap_or(opts.kind);
    if !opts.index.join("MANIFEST").exists() {
        bail!(
            "{} is not an index (no MANIFEST); create one with `needle create` or `needle index-parquet`",
            opts.index.display()
        );
    }
    // An index made by index-delta is only right together with the table's log (files added or
    // removed since the version it covers): the service follows both.
    let delta = match (&opts.parquet, &meta) {
        (Some(root), Some(meta)) if delta::indexed_version(&opts.index)?.is_some() => {
            let table = DeltaTable::open(root)?;
            table.latest().check_column(&meta.column)?;
            Some(table)
        }
        _ => None,
    };
    let first = open_snapshot(&opts.index, delta.is_some())?;
    // A few threads take requests; the index's and the Parquet files' reads run on the blocking
    // pool, at most `--threads` at once.
    let threads = opts.threads.max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.min(2))
        .max_blocking_threads(threads)
        .enable_io()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(&opts.listen))
        .map_err(|e| {
            anyhow!(
                "cannot listen on {}: {e} (is the port in use? pass another --listen)",
                opts.listen
            )
        })?;
    let addr = listener.local_addr()?;
    let table = match &delta {
        Some(t) => format!(
            ", Delta table {} at version {}",
            t.root.display(),
            t.latest().version
        ),
        None => String::new(),
    };
    // The log of what the service could not do while it keeps serving (standard error): its own
    // events; the libraries' (the Delta kernel logs every snapshot it builds) stay out of it.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("needle_cli", tracing::Level::INFO),
                ),
        )
        .try_init();
    println!(
        "needle serve: listening on http://{addr} (index {}, {} values{table})",
        opts.index.display(),
        kind.name()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let svc = Arc::new(Service {
        meta,
        kind,
        current: RwLock::new(Arc::new(first)),
        metrics: Metrics::new(delta.is_some()),
        delta,
        opts,
    });
    let refresher = Arc::clone(&svc);
    std::thread::spawn(move || refresher.refresh_loop());
    runtime.block_on(async move { axum::serve(listener, routes::router(svc)).await })?;
    Ok(())
}

impl Service {
    fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.current.read().unwrap())
    }

    /// Opens a new snapshot whenever the index's files changed, and loads a Delta table's
    /// latest version when its log changed; keeps the old ones if it cannot.
    fn refresh_loop(&self) {
        loop {
            std::thread::sleep(self.opts.refresh);
            if let Some(table) = &self.delta {
                match table.refresh() {
                    Ok(true) => {
                        self.metrics.refreshes.inc();
                    }
                    Ok(false) => {}
                    Err(e) => {
                        self.metrics.refresh_failures.inc();
                        tracing::warn!(
                            "keeps version {} of the table; cannot load the latest: {e:#}",
                            table.latest().version
                        );
                    }
                }
            }
            let changed = match signature(&self.opts.index) {
                Ok(s) => s != self.snapshot().signature,
                Err(_) => true,
            };
            if !changed {
                continue;
            }
            match open_snapshot(&self.opts.index, self.delta.is_some()) {
                Ok(s) => {
                    *self.current.write().unwrap() = Arc::new(s);
                    self.metrics.refreshes.inc();
                }
                Err(e) => {
                    self.metrics.refresh_failures.inc();
                    tracing::warn!("keeps the previous snapshot; cannot open a new one: {e:#}");
                }
            }
        }
    }
}
