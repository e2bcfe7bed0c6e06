//! `needle serve`: the index over HTTP, read-only, while another process may write it.
//!
//! The service holds a snapshot of the index ([`Index::open_snapshot`], no lock, so the writer
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

use anyhow::{anyhow, bail, Context, Result};
use needle_index::{Index, Options};
use needle_lake::delta::{self, DeltaSnapshot};
use needle_lake::pq::{self, ParquetMeta};
use needle_lake::{Key, ValueType};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::{json, Value as Json};
use std::collections::{HashSet, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tiny_http::{Header, Method, Request, Response, Server};

/// At most this many values in one batch request.
const MAX_BATCH: usize = 100_000;
/// At most this many bytes in a request body.
const MAX_BODY: u64 = 16 << 20;
/// Versions of a Delta table other than the latest kept loaded for requests that name them.
const KEPT_VERSIONS: usize = 4;

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

struct Snapshot {
    index: Index,
    opened: Instant,
    /// What the index's files looked like when it was opened.
    signature: Vec<(String, u64, Option<SystemTime>)>,
    /// Of a Delta table's index: the data files it holds whole ([`delta::covered_files`]).
    covered: HashSet<String>,
}

/// The Delta table an index follows: its latest version, loaded again when the log changes, and
/// the last few other versions requests asked for.
struct DeltaTable {
    root: PathBuf,
    latest: RwLock<Arc<DeltaSnapshot>>,
    /// The log's file names when `latest` was loaded.
    log: Mutex<Vec<String>>,
    others: Mutex<VecDeque<Arc<DeltaSnapshot>>>,
}

impl DeltaTable {
    fn open(root: &Path) -> Result<DeltaTable> {
        let log = log_signature(root)?;
        let latest = DeltaSnapshot::load(root, None)?;
        Ok(DeltaTable {
            root: root.to_path_buf(),
            latest: RwLock::new(Arc::new(latest)),
            log: Mutex::new(log),
            others: Mutex::new(VecDeque::new()),
        })
    }

    fn latest(&self) -> Arc<DeltaSnapshot> {
        Arc::clone(&self.latest.read().unwrap())
    }

    /// Version `version` (None: the latest) of the table.
    fn at(&self, version: Option<u64>) -> Result<Arc<DeltaSnapshot>, Failure> {
        let latest = self.latest();
        let v = match version {
            None => return Ok(latest),
            Some(v) if v == latest.version => return Ok(latest),
            Some(v) => v,
        };
        if let Some(s) = self.others.lock().unwrap().iter().find(|s| s.version == v) {
            return Ok(Arc::clone(s));
        }
        let snap = Arc::new(DeltaSnapshot::load(&self.root, Some(v)).map_err(failure)?);
        let mut others = self.others.lock().unwrap();
        if others.len() == KEPT_VERSIONS {
            others.pop_front();
        }
        others.push_back(Arc::clone(&snap));
        Ok(snap)
    }

    /// Loads the latest version again if the log changed; whether it did.
    fn refresh(&self) -> Result<bool> {
        let now = log_signature(&self.root)?;
        if *self.log.lock().unwrap() == now {
            return Ok(false);
        }
        let latest = DeltaSnapshot::load(&self.root, None)?;
        *self.latest.write().unwrap() = Arc::new(latest);
        *self.log.lock().unwrap() = now;
        Ok(true)
    }
}

/// The names of a Delta table's log files: a new commit or checkpoint changes them.
fn log_signature(root: &Path) -> Result<Vec<String>> {
    let log = root.join("_delta_log");
    let rd = std::fs::read_dir(&log).with_context(|| format!("cannot read {}", log.display()))?;
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The service's endpoints, by path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Candidates,
    Lookup,
    Health,
    Metrics,
    /// Any other path (answered 404).
    Other,
}

impl Endpoint {
    fn of(path: &str) -> Endpoint {
        match path {
            "/candidates" => Endpoint::Candidates,
            "/lookup" => Endpoint::Lookup,
            "/health" => Endpoint::Health,
            "/metrics" => Endpoint::Metrics,
            _ => Endpoint::Other,
        }
    }

    /// The `endpoint` label of its requests in `/metrics`.
    fn label(self) -> &'static str {
        match self {
            Endpoint::Candidates => "candidates",
            Endpoint::Lookup => "lookup",
            Endpoint::Health => "health",
            Endpoint::Metrics => "metrics",
            Endpoint::Other => "other",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabel {
    endpoint: &'static str,
}

/// The service's metrics, in the registry `/metrics` encodes (the OpenMetrics text format, which
/// Prometheus reads). Counters count as requests are answered; the gauges are set from the
/// served snapshot when `/metrics` is asked for.
struct Metrics {
    registry: Registry,
    requests: Family<EndpointLabel, Counter>,
    client_errors: Counter,
    server_errors: Counter,
    values: Counter,
    candidates: Counter,
    request_seconds: Counter<f64, AtomicU64>,
    refreshes: Counter,
    refresh_failures: Counter,
    partitions: Gauge,
    segments: Gauge,
    index_values: Gauge,
    index_bytes: Gauge,
    snapshot_age_seconds: Gauge<f64, AtomicU64>,
    /// Of a Delta table: its latest version, the version the index covers (-1: none), and the
    /// live files of the latest version the index does not hold.
    delta: Option<[Gauge; 3]>,
}

impl Metrics {
    fn new(delta_table: bool) -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<EndpointLabel, Counter>::default();
        registry.register(
            "needle_requests",
            "HTTP requests by endpoint",
            requests.clone(),
        );
        let counter = |registry: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let client_errors = counter(
            &mut registry,
            "needle_client_errors",
            "Requests answered 4xx",
        );
        let server_errors = counter(
            &mut registry,
            "needle_server_errors",
            "Requests answered 5xx",
        );
        let values = counter(&mut registry, "needle_values_looked_up", "Values looked up");
        let candidates = counter(
            &mut registry,
            "needle_candidates_returned",
            "Candidate partitions returned",
        );
        let refreshes = counter(
            &mut registry,
            "needle_snapshot_refreshes",
            "New snapshots of the index opened",
        );
        let refresh_failures = counter(
            &mut registry,
            "needle_snapshot_refresh_failures",
            "Snapshots that could not be opened",
        );
        let request_seconds = Counter::<f64, AtomicU64>::default();
        registry.register(
            "needle_request_seconds",
            "Time spent answering requests",
            request_seconds.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let g = Gauge::default();
            registry.register(name, help, g.clone());
            g
        };
        let partitions = gauge(
            &mut registry,
            "needle_index_partitions",
            "Live partitions in the served snapshot",
        );
        let segments = gauge(
            &mut registry,
            "needle_index_segments",
            "Segments in the served snapshot",
        );
        let index_values = gauge(
            &mut registry,
            "needle_index_values",
            "Values in the served snapshot",
        );
        let index_bytes = gauge(
            &mut registry,
            "needle_index_bytes",
            "Bytes of the index's files",
        );
        let snapshot_age_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "needle_snapshot_age_seconds",
            "Age of the served snapshot",
            snapshot_age_seconds.clone(),
        );
        let delta = delta_table.then(|| {
            [
                gauge(
                    &mut registry,
                    "needle_delta_latest_version",
                    "The Delta table's latest version",
                ),
                gauge(
                    &mut registry,
                    "needle_delta_indexed_version",
                    "The table version the index covers (-1: none)",
                ),
                gauge(
                    &mut registry,
                    "needle_delta_live_files_not_indexed",
                    "Live files of the latest version the index does not hold (read whole)",
                ),
            ]
        });
        Metrics {
            registry,
            requests,
            client_errors,
            server_errors,
            values,
            candidates,
            request_seconds,
            refreshes,
            refresh_failures,
            partitions,
            segments,
            index_values,
            index_bytes,
            snapshot_age_seconds,
            delta,
        }
    }
}

struct Service {
    opts: ServeOptions,
    meta: Option<ParquetMeta>,
    kind: ValueType,
    current: RwLock<Arc<Snapshot>>,
    /// The Delta table the index follows, if it indexes one.
    delta: Option<DeltaTable>,
    metrics: Metrics,
}

/// The names, sizes and modification times of the index's files: a change means new data.
fn signature(dir: &Path) -> Result<Vec<(String, u64, Option<SystemTime>)>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "MANIFEST" || name.starts_with("wal-") {
            if let Ok(m) = e.metadata() {
                out.push((name, m.len(), m.modified().ok()));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn open_snapshot(dir: &Path, of_delta: bool) -> Result<Snapshot> {
    let signature = signature(dir)?;
    let index = Index::open_snapshot(dir, Options::default())?;
    let covered = if of_delta {
        delta::covered_files(&index)
    } else {
        HashSet::new()
    };
    Ok(Snapshot {
        index,
        opened: Instant::now(),
        signature,
        covered,
    })
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
    let server = Server::http(&opts.listen).map_err(|e| {
        anyhow!(
            "cannot listen on {}: {e} (is the port in use? pass another --listen)",
            opts.listen
        )
    })?;
    let addr = server
        .server_addr()
        .to_ip()
        .map(|a| a.to_string())
        .unwrap_or_else(|| opts.listen.clone());
    let table = match &delta {
        Some(t) => format!(
            ", Delta table {} at version {}",
            t.root.display(),
            t.latest().version
        ),
        None => String::new(),
    };
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
    let server = Arc::new(server);
    let workers: Vec<_> = (0..svc.opts.threads.max(1))
        .map(|_| {
            let (server, svc) = (Arc::clone(&server), Arc::clone(&svc));
            std::thread::spawn(move || loop {
                match server.recv() {
                    Ok(req) => svc.handle(req),
                    Err(e) => eprintln!("needle serve: cannot accept a request: {e}"),
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
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
                        eprintln!(
                            "needle serve: keeps version {} of the table; cannot load the latest: {e:#}",
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
                    eprintln!(
                        "needle serve: keeps the previous snapshot; cannot open a new one: {e:#}"
                    );
                }
            }
        }
    }

    fn handle(&self, mut req: Request) {
        let started = Instant::now();
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let endpoint = Endpoint::of(path);
        self.metrics
            .requests
            .get_or_create(&EndpointLabel {
                endpoint: endpoint.label(),
            })
            .inc();
        let result = match (endpoint, req.method()) {
            (Endpoint::Candidates, Method::Get) => self.candidates_get(query),
            (Endpoint::Candidates, Method::Post) => self.candidates_post(&mut req),
            (Endpoint::Lookup, Method::Get) => self.lookup(query),
            (Endpoint::Health, Method::Get) => Ok(self.health()),
            (Endpoint::Metrics, Method::Get) => {
                let body = self.prometheus();
                let _ = req.respond(Response::from_string(body).with_header(header(
                    "Content-Type",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )));
                return;
            }
            (Endpoint::Other, _) => Err(Failure(
                404,
                format!("no endpoint {path}; use /candidates, /lookup, /health or /metrics"),
            )),
            (_, method) => Err(Failure(405, format!("{path} does not take {method}"))),
        };
        let (status, body) = match result {
            Ok(j) => (200, j),
            Err(Failure(status, msg)) => {
                if status >= 500 {
                    self.metrics.server_errors.inc();
                } else {
                    self.metrics.client_errors.inc();
                }
                (status, json!({ "error": msg }))
            }
        };
        self.metrics
            .request_seconds
            .inc_by(started.elapsed().as_secs_f64());
        let _ = req.respond(
            Response::from_string(body.to_string())
                .with_status_code(status)
                .with_header(header("Content-Type", "application/json")),
        );
    }

    fn value_param(&self, query: &str) -> Result<(String, Key), Failure> {
        let text = query_param(query, "value")
            .ok_or_else(|| Failure(400, "the query needs ?value=...".into()))?;
        let v = self
            .kind
            .parse(&text)
            .map_err(|e| Failure(400, format!("value: {e}")))?;
        Ok((text, v))
    }

    /// The version a request names (`version=N`), which only a Delta table has.
    fn version_param(&self, version: Option<String>) -> Result<Option<u64>, Failure> {
        let Some(text) = version else {
            return Ok(None);
        };
        if self.delta.is_none() {
            return Err(Failure(
                400,
                "version=... reads a Delta table indexed by `needle index-delta`, and this index is not one".into(),
            ));
        }
        text.trim().parse().map(Some).map_err(|_| {
            Failure(
                400,
                format!("version: {text:?} is not a table version (0, 1, 2, ...)"),
            )
        })
    }

    /// The table version a request reads (None for an index of a plain directory); 404 if the
    /// indexed column does not exist at that version (schema evolution added it later).
    fn table_at(&self, version: Option<u64>) -> Result<Option<Arc<DeltaSnapshot>>, Failure> {
        let Some(table) = &self.delta else {
            return Ok(None);
        };
        let snap = table.at(version)?;
        if let Some(meta) = &self.meta {
            snap.check_column(&meta.column).map_err(failure)?;
        }
        Ok(Some(snap))
    }

    /// The answer `ids` of the index, for the table version `table` if there is one.
    fn candidates_of(
        snap: &Snapshot,
        table: Option<&DeltaSnapshot>,
        ids: Vec<String>,
    ) -> Vec<String> {
        match table {
            Some(t) => delta::candidates_among(t, &snap.covered, ids),
            None => ids,
        }
    }

    fn candidates_get(&self, query: &str) -> Result<Json, Failure> {
        let (text, v) = self.value_param(query)?;
        let table = self.table_at(self.version_param(query_param(query, "version"))?)?;
        let snap = self.snapshot();
        let ids = snap
            .index
            .query_hash(v.hash())
            .map_err(|e| Failure(500, e.to_string()))?;
        let c = Self::candidates_of(&snap, table.as_deref(), ids);
        self.count(1, c.len());
        let mut answer = json!({ "value": text, "candidates": c });
        if let Some(t) = table {
            answer["version"] = json!(t.version);
        }
        Ok(answer)
    }

    fn candidates_post(&self, req: &mut Request) -> Result<Json, Failure> {
        let mut body = String::new();
        req.as_reader()
            .take(MAX_BODY + 1)
            .read_to_string(&mut body)
            .map_err(|e| Failure(400, format!("cannot read the body as UTF-8 text: {e}")))?;
        if body.len() as u64 > MAX_BODY {
            return Err(Failure(413, format!("the body exceeds {MAX_BODY} bytes")));
        }
        let doc: Json = serde_json::from_str(&body)
            .map_err(|e| Failure(400, format!("the body is not JSON: {e}")))?;
        let values = doc
            .get("values")
            .and_then(Json::as_array)
            .ok_or_else(|| Failure(400, "the body must be {\"values\": [...]}".into()))?;
        let version = match doc.get("version") {
            None | Some(Json::Null) => None,
            Some(Json::Number(n)) => Some(n.to_string()),
            Some(other) => {
                return Err(Failure(
                    400,
                    format!("version is {other}; give a table version as a JSON integer"),
                ))
            }
        };
        let table = self.table_at(self.version_param(version)?)?;
        if values.len() > MAX_BATCH {
            return Err(Failure(
                413,
                format!(
                    "{} values in one request; at most {MAX_BATCH}",
                    values.len()
                ),
            ));
        }
        let mut hashes = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let text = match v {
                Json::String(s) => s.clone(),
                Json::Number(n) if self.kind.takes_integers() => n.to_string(),
                other => {
                    return Err(Failure(
                        400,
                        format!(
                            "values[{i}] is {other}; give {} values as JSON strings{}",
                            self.kind.name(),
                            if self.kind.takes_integers() {
                                " or integers"
                            } else {
                                ""
                            }
                        ),
                    ))
                }
            };
            let value = self
                .kind
                .parse(&text)
                .map_err(|e| Failure(400, format!("values[{i}]: {e}")))?;
            hashes.push(value.hash());
        }
        let snap = self.snapshot();
        let c: Vec<Vec<String>> = snap
            .index
            .query_batch(&hashes)
            .map_err(|e| Failure(500, e.to_string()))?
            .into_iter()
            .map(|ids| Self::candidates_of(&snap, table.as_deref(), ids))
            .collect();
        self.count(hashes.len(), c.iter().map(Vec::len).sum());
        let mut answer = json!({ "candidates": c });
        if let Some(t) = table {
            answer["version"] = json!(t.version);
        }
        Ok(answer)
    }

    fn lookup(&self, query: &str) -> Result<Json, Failure> {
        let (Some(dir), Some(meta)) = (&self.opts.parquet, &self.meta) else {
            return Err(Failure(
                404,
                "/lookup needs a Parquet directory: start the service with --parquet DIR".into(),
            ));
        };
        let (text, v) = self.value_param(query)?;
        let table = self.table_at(self.version_param(query_param(query, "version"))?)?;
        let snap = self.snapshot();
        let r = match &table {
            Some(t) => delta::lookup_in(t, meta, &snap.index, &snap.covered, &v),
            None => pq::lookup_in(dir, meta, &snap.index, &v),
        }
        .map_err(failure)?;
        self.count(1, r.candidates.len());
        let rows: Vec<Json> = r
            .rows
            .iter()
            .map(|row| json!({ "file": row.file, "row": row.row, "text": row.text }))
            .collect();
        let mut answer = json!({ "value": text, "candidates": r.candidates, "rows": rows });
        if let Some(t) = table {
            answer["version"] = json!(t.version);
        }
        Ok(answer)
    }

    /// Of a Delta table: its latest version, the version the index covers, and how many live
    /// files the index does not hold (read whole by every lookup).
    fn delta_state(&self, snap: &Snapshot) -> Option<(u64, Option<u64>, usize)> {
        let table = self.delta.as_ref()?;
        let latest = table.latest();
        let indexed = delta::indexed_version(&self.opts.index).ok().flatten();
        Some((
            latest.version,
            indexed,
            delta::files_not_covered(&latest, &snap.covered),
        ))
    }

    fn health(&self) -> Json {
        let snap = self.snapshot();
        let st = snap.index.stats();
        let mut h = json!({
            "status": "ok",
            "index": self.opts.index.display().to_string(),
            "value_type": self.kind.name(),
            "partitions": st.partitions,
            "segments": st.segments,
            "values": st.values,
            "snapshot_age_ms": snap.opened.elapsed().as_millis() as u64,
        });
        if let Some(unit) = self.kind.unit() {
            // The unit integers given for dates, times and timestamps are read in.
            h["value_unit"] = json!(unit.name());
        }
        if let Some((latest, indexed, missing)) = self.delta_state(&snap) {
            h["delta"] = json!({
                "table": self.delta.as_ref().map(|t| t.root.display().to_string()),
                "latest_version": latest,
                "indexed_version": indexed,
                "live_files_not_indexed": missing,
            });
        }
        h
    }

    fn count(&self, values: usize, candidates: usize) {
        self.metrics.values.inc_by(values as u64);
        self.metrics.candidates.inc_by(candidates as u64);
    }

    /// The metrics, with the gauges set from the served snapshot now.
    fn prometheus(&self) -> String {
        let m = &self.metrics;
        let snap = self.snapshot();
        let st = snap.index.stats();
        m.partitions.set(st.partitions as i64);
        m.segments.set(st.segments as i64);
        m.index_values.set(st.values as i64);
        m.index_bytes.set(st.bytes_on_disk as i64);
        m.snapshot_age_seconds
            .set(snap.opened.elapsed().as_secs_f64());
        if let (Some(g), Some((latest, indexed, missing))) = (&m.delta, self.delta_state(&snap)) {
            g[0].set(latest as i64);
            g[1].set(indexed.map_or(-1, |v| v as i64));
            g[2].set(missing as i64);
        }
        let mut out = String::new();
        encode(&mut out, &m.registry).expect("writing to a String cannot fail");
        out
    }
}

/// An answer other than 200: status and message.
struct Failure(u16, String);

/// The answer to a failure of the data-lake layer: a version past the latest, or a column the
/// version does not have, is not there (404); a version whose log was cleaned up, or whose data
/// files were removed (VACUUM), is gone (410); anything else is the service's failure.
fn failure(e: needle_lake::Error) -> Failure {
    let status = match e {
        needle_lake::Error::NoSuchVersion { .. } | needle_lake::Error::NoSuchColumn { .. } => 404,
        needle_lake::Error::VersionGone { .. } | needle_lake::Error::FilesRemoved { .. } => 410,
        _ => 500,
    };
    Failure(status, e.to_string())
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}

/// The decoded value of `name` in a query string (`a=1&b=x%20y`; `+` is a space).
fn query_param(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_are_decoded() {
        assert_eq!(
            query_param("value=a%20b&x=1", "value").as_deref(),
            Some("a b")
        );
        assert_eq!(
            query_param("x=1&value=%E6%97%A5+z", "value").as_deref(),
            Some("日 z")
        );
        assert_eq!(query_param("value=", "value").as_deref(), Some(""));
        assert_eq!(query_param("value=100%", "value").as_deref(), Some("100%"));
        assert_eq!(query_param("x=1", "value"), None);
    }
}
