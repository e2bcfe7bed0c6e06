//! The metrics `/metrics` exposes.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct EndpointLabel {
    /// The route's path without its slash (`candidates`, `lookup`, `health`, `metrics`), or `other`.
    pub(super) endpoint: String,
}

/// The service's metrics, in the registry `/metrics` encodes (the OpenMetrics text format, which
/// Prometheus reads). Counters count as requests are answered; the gauges are set from the
/// served snapshot when `/metrics` is asked for.
pub(super) struct Metrics {
    pub(super) registry: Registry,
    pub(super) requests: Family<EndpointLabel, Counter>,
    pub(super) client_errors: Counter,
    pub(super) server_errors: Counter,
    pub(super) values: Counter,
    pub(super) candidates: Counter,
    pub(super) request_seconds: Counter<f64, AtomicU64>,
    pub(super) refreshes: Counter,
    pub(super) refresh_failures: Counter,
    pub(super) partitions: Gauge,
    pub(super) segments: Gauge,
    pub(super) index_values: Gauge,
    pub(super) index_bytes: Gauge,
    pub(super) snapshot_age_seconds: Gauge<f64, AtomicU64>,
    /// Of a Delta table: its latest version, the version the index covers (-1: none), and the
    /// live files of the latest version the index does not hold.
    pub(super) delta: Option<[Gauge; 3]>,
}

impl Metrics {
    pub(super) fn new(delta_table: bool) -> Metrics {
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
