//! What the service answers from: a snapshot of the index, opened again when its files change,
//! and the versions of the Delta table the index follows.

use super::handlers::{failure, Failure};
use anyhow::{Context, Result};
use needle_index::{Index, Options};
use needle_lake::delta::{self, DeltaSnapshot};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

/// Versions of a Delta table other than the latest kept loaded for requests that name them.
const KEPT_VERSIONS: usize = 4;

/// An open snapshot of the index, with what its files looked like when it was opened.
pub(super) struct Snapshot {
    pub(super) index: Index,
    pub(super) opened: Instant,
    /// What the index's files looked like when it was opened.
    pub(super) signature: Vec<(String, u64, Option<SystemTime>)>,
    /// Of a Delta table's index: the data files it holds whole ([`delta::covered_files`]).
    pub(super) covered: HashSet<String>,
}

/// The names, sizes and modification times of the index's files: a change means new data.
pub(super) fn signature(dir: &Path) -> Result<Vec<(String, u64, Option<SystemTime>)>> {
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

/// Opens a snapshot of the index in `dir`; of a Delta table's index, with the files it holds whole.
pub(super) fn open_snapshot(dir: &Path, of_delta: bool) -> Result<Snapshot> {
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

/// the last few other versions requests asked for.
pub(super) struct DeltaTable {
    pub(super) root: PathBuf,
    pub(super) latest: RwLock<Arc<DeltaSnapshot>>,
    /// The log's file names when `latest` was loaded.
    pub(super) log: Mutex<Vec<String>>,
    pub(super) others: Mutex<VecDeque<Arc<DeltaSnapshot>>>,
}

impl DeltaTable {
    pub(super) fn open(root: &Path) -> Result<DeltaTable> {
        let log = log_signature(root)?;
        let latest = DeltaSnapshot::load(root, None)?;
        Ok(DeltaTable {
            root: root.to_path_buf(),
            latest: RwLock::new(Arc::new(latest)),
            log: Mutex::new(log),
            others: Mutex::new(VecDeque::new()),
        })
    }

    pub(super) fn latest(&self) -> Arc<DeltaSnapshot> {
        Arc::clone(&self.latest.read().unwrap())
    }

    /// Version `version` (None: the latest) of the table.
    pub(super) fn at(&self, version: Option<u64>) -> Result<Arc<DeltaSnapshot>, Failure> {
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
    pub(super) fn refresh(&self) -> Result<bool> {
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
