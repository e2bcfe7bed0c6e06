//! The answers to requests: candidates, lookups, health and metrics, and the failures.

use super::snapshot::Snapshot;
use super::{Service, MAX_BATCH};
use needle_lake::delta::{self, DeltaSnapshot};
use needle_lake::pq;
use needle_lake::Key;
use prometheus_client::encoding::text::encode;
use serde_json::{json, Value as Json};
use std::sync::Arc;

impl Service {
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

    pub(super) fn candidates_get(&self, query: &str) -> Result<Json, Failure> {
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

    pub(super) fn candidates_post(&self, body: &[u8]) -> Result<Json, Failure> {
        let body = std::str::from_utf8(body)
            .map_err(|e| Failure(400, format!("cannot read the body as UTF-8 text: {e}")))?;
        let doc: Json = serde_json::from_str(body)
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

    pub(super) fn lookup(&self, query: &str) -> Result<Json, Failure> {
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

    pub(super) fn health(&self) -> Json {
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
    pub(super) fn prometheus(&self) -> String {
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

/// An answer other than 200: status and message, answered as `{"error": message}`.
pub(super) struct Failure(pub(super) u16, pub(super) String);

/// The answer to a failure of the data-lake layer: a version past the latest, or a column the
/// version does not have, is not there (404); a version whose log was cleaned up, or whose data
/// files were removed (VACUUM), is gone (410); anything else is the service's failure.
pub(super) fn failure(e: needle_lake::Error) -> Failure {
    let status = match e {
        needle_lake::Error::NoSuchVersion { .. } | needle_lake::Error::NoSuchColumn { .. } => 404,
        needle_lake::Error::VersionGone { .. } | needle_lake::Error::FilesRemoved { .. } => 410,
        _ => 500,
    };
    Failure(status, e.to_string())
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
