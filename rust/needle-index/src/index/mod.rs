//! The index: its types and creation; opening and recovery, writes, queries, flush, merges and the
//! merge thread live in the submodules of those names.

use crate::error::{Error, Result};
use crate::filter::PartitionFilter;
use crate::fsutil::sync_dir;
use crate::hash::{Probe, Value};
use crate::manifest::{ManSeg, Manifest, MANIFEST};
use crate::scan::ScanImpl;
use crate::segment::{get_fp, put_fp, seg_name, SegPart, Segment, SegmentWriter};
use crate::wal::{parse_wal_name, read_wal, wal_name, Record, Wal};
use arc_swap::ArcSwap;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

mod flush;
mod inspect;
mod merge;
mod merger;
mod query;
mod recovery;
mod write;

pub use merger::MergerHandle;

/// Fixed parameters of an index, chosen at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Number of buckets B shared by every partition's filter.
    pub buckets: u32,
    /// Fingerprint width: 8, 16 or 32 bits.
    pub fingerprint_bits: u32,
}

impl Default for Config {
    /// The configuration of the blog post 'Efficiently finding candidate partitions for
    /// point queries': 38,000 buckets, 16-bit fingerprints (about 3 slots per bucket for
    /// partitions of 100,000 values).
    fn default() -> Config {
        Config {
            buckets: 38_000,
            fingerprint_bits: 16,
        }
    }
}

/// Run-time options of an open index.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Check the CRC32C of every bucket row a query reads (default true).
    pub verify_reads: bool,
    /// fsync WAL appends, segments and manifests (default true; turning it off voids crash safety).
    pub sync: bool,
    /// Flush the memtable as a segment once it holds this many bytes of fingerprints.
    pub flush_bytes: usize,
    /// Row scan implementation (default: the fastest the CPU supports).
    pub scan: ScanImpl,
    /// Open for queries only: a shared lock (several read-only processes may hold the index
    /// open at once, but no writer), no repair of a torn log tail, no clean-up; every
    /// write returns [`Error::InvalidArgument`]. Default false.
    pub read_only: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            verify_reads: true,
            sync: true,
            flush_bytes: 64 << 20,
            scan: ScanImpl::best(),
            read_only: false,
        }
    }
}

/// A partition entry as [`Index::partitions`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Index-wide unique number of the entry.
    pub uid: u64,
    /// The caller's partition id.
    pub id: String,
    /// Slots per bucket of the entry's filter.
    pub slots: u32,
    /// Values it holds (inserted minus deleted).
    pub values: u64,
    /// Removed and waiting to be reclaimed by a merge.
    pub removed: bool,
    /// Segment holding it, or `None` while in the memtable.
    pub segment: Option<u64>,
}

/// Summary numbers of an index.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Number of buckets B.
    pub buckets: u32,
    /// Fingerprint width in bits.
    pub fingerprint_bits: u32,
    /// Immutable segments.
    pub segments: usize,
    /// Live partition entries still in the memtable.
    pub memtable_partitions: usize,
    /// Live (not removed) partition entries.
    pub partitions: usize,
    /// Distinct ids among live partition entries.
    pub distinct_ids: usize,
    /// Removed entries not yet reclaimed by a merge.
    pub removed_partitions: usize,
    /// Values stored in live partitions.
    pub values: u64,
    /// Slots of live partitions (B × sum of slots per bucket).
    pub slots: u64,
    /// values / slots.
    pub occupancy: f64,
    /// Expected false-positive rate of one partition for an absent value, averaged over
    /// live partitions: occupancy × 2b / (2^f − 1) per partition.
    pub expected_fpr: f64,
    /// Bytes of segment and WAL files.
    pub bytes_on_disk: u64,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// Segments merged.
    pub inputs: usize,
    /// Partition entries written to the new segment.
    pub partitions: usize,
    /// Removed entries reclaimed.
    pub reclaimed: usize,
    /// Bytes of the new segment (0 if every input partition was removed).
    pub bytes: u64,
}

#[derive(Debug, Clone, Default)]
struct Deleted {
    /// Deleted slots (`bucket * row_slots + slot`) in the order they were deleted.
    log: Vec<u64>,
    set: HashSet<u64>,
}

#[derive(Debug, Clone)]
struct SegState {
    seg: Arc<Segment>,
    removed: Arc<Vec<bool>>,
    deleted: Arc<Deleted>,
}

#[derive(Debug, Clone)]
struct MemPart {
    uid: u64,
    id: String,
    filter: PartitionFilter,
    removed: bool,
}

/// Everything a query looks at; replaced as a whole, never mutated in place.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    segs: Vec<SegState>,
    mem: Vec<Arc<MemPart>>,
}

impl Snapshot {
    fn mem_bytes(&self) -> usize {
        self.mem.iter().map(|m| m.filter.data.len() * 4).sum()
    }
}

struct Writer {
    wal: Wal,
    next_seg_id: u64,
    next_uid: u64,
    generation: u64,
}

/// An open partition index. Share it between threads with `Arc<Index>`: queries run
/// concurrently and lock-free; writes are serialized internally.
pub struct Index {
    dir: PathBuf,
    cfg: Config,
    opts: Options,
    state: ArcSwap<Snapshot>,
    writer: Mutex<Writer>,
    merge_lock: Mutex<()>,
    /// The lock file, held (shared or exclusive) while open; None for a snapshot, which takes none.
    _lock: Option<File>,
}

/// Most fingerprints a merge rebuilds into combined or shrunk filters (8 bytes each while
/// gathered); beyond it, entries are copied unchanged.
const REBUILD_LIMIT: u64 = 16 << 20;

thread_local! {
    static SCRATCH: RefCell<(Vec<u8>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a half-applied state (snapshots are
    // swapped whole), so a poisoned lock is safe to keep using.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Index {
    /// Creates a new, empty index in directory `dir` (created if missing; must not hold an index).
    pub fn create(dir: impl AsRef<Path>, cfg: Config, opts: Options) -> Result<Index> {
        let dir = dir.as_ref();
        if !matches!(cfg.fingerprint_bits, 8 | 16 | 32) {
            return Err(Error::InvalidArgument(format!(
                "fingerprint bits must be 8, 16 or 32, not {}",
                cfg.fingerprint_bits
            )));
        }
        if cfg.buckets == 0 {
            return Err(Error::InvalidArgument(
                "bucket count must be at least 1".into(),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        if dir.join(MANIFEST).exists() {
            return Err(Error::InvalidArgument(format!(
                "{} already holds an index",
                dir.display()
            )));
        }
        drop(Wal::create(dir, 1, opts.sync)?);
        let m = Manifest {
            bits: cfg.fingerprint_bits,
            buckets: cfg.buckets,
            generation: 1,
            wal_start: 1,
            next_seg_id: 1,
            next_uid: 1,
            segments: Vec::new(),
        };
        m.store(dir, opts.sync)?;
        Index::open(dir, opts)
    }

    /// The index's fixed configuration.
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
