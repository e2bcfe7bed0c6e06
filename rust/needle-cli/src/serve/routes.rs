//! The service's HTTP side: its routes, each answered on the blocking pool, every request
//! counted, every error answered as JSON.

use super::handlers::Failure;
use super::metrics::EndpointLabel;
use super::{Service, MAX_BODY};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, MatchedPath, RawQuery, Request, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value as Json};
use std::sync::Arc;
use std::time::Instant;

/// The service's routes, each request counted ([`count`]) and every error answered as JSON.
pub(super) fn router(svc: Arc<Service>) -> Router {
    Router::new()
        .route("/candidates", get(candidates_get).post(candidates_post))
        .route("/lookup", get(lookup))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(no_endpoint)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&svc), count))
        .with_state(svc)
}

async fn candidates_get(State(svc): State<Arc<Service>>, RawQuery(q): RawQuery) -> Response {
    answer(svc, move |s| s.candidates_get(q.as_deref().unwrap_or(""))).await
}

async fn candidates_post(State(svc): State<Arc<Service>>, body: Bytes) -> Response {
    answer(svc, move |s| s.candidates_post(&body)).await
}

async fn lookup(State(svc): State<Arc<Service>>, RawQuery(q): RawQuery) -> Response {
    answer(svc, move |s| s.lookup(q.as_deref().unwrap_or(""))).await
}

async fn health(State(svc): State<Arc<Service>>) -> Response {
    answer(svc, |s| Ok(s.health())).await
}

async fn metrics(State(svc): State<Arc<Service>>) -> Response {
    match tokio::task::spawn_blocking(move || svc.prometheus()).await {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => Failure(500, format!("the metrics could not be read: {e}")).into_response(),
    }
}

async fn no_endpoint(uri: Uri) -> Response {
    Failure(
        404,
        format!(
            "no endpoint {}; use /candidates, /lookup, /health or /metrics",
            uri.path()
        ),
    )
    .into_response()
}

async fn wrong_method(method: Method, uri: Uri) -> Response {
    Failure(405, format!("{} does not take {method}", uri.path())).into_response()
}

/// Runs `work` on the blocking pool (it reads the index and Parquet files) and answers its JSON,
/// or its failure.
async fn answer(
    svc: Arc<Service>,
    work: impl FnOnce(&Service) -> Result<Json, Failure> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(move || work(&svc)).await {
        Ok(Ok(j)) => json_response(StatusCode::OK, &j),
        Ok(Err(f)) => f.into_response(),
        Err(e) => Failure(500, format!("the request failed: {e}")).into_response(),
    }
}

fn json_response(status: StatusCode, j: &Json) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        j.to_string(),
    )
        .into_response()
}

/// Counts each request by the route it took, its time and its errors. An error answered before
/// a handler ran (a body over the limit) gets the JSON body of every other error.
async fn count(State(svc): State<Arc<Service>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let endpoint = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("other", |p| p.as_str().trim_start_matches('/'))
        .to_string();
    let m = &svc.metrics;
    m.requests.get_or_create(&EndpointLabel { endpoint }).inc();
    let mut response = next.run(req).await;
    let status = response.status();
    if status.is_server_error() {
        m.server_errors.inc();
    } else if status.is_client_error() {
        m.client_errors.inc();
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if (status.is_client_error() || status.is_server_error()) && !json {
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the body exceeds {MAX_BODY} bytes")
        } else {
            let text = axum::body::to_bytes(
                std::mem::replace(response.body_mut(), Body::empty()),
                64 << 10,
            )
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
            format!("{}: {text}", status.canonical_reason().unwrap_or("error"))
        };
        response = Failure(status.as_u16(), message).into_response();
    }
    m.request_seconds.inc_by(started.elapsed().as_secs_f64());
    response
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(status, &json!({ "error": self.1 }))
    }
}
