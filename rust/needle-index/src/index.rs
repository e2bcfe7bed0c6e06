//! The index: snapshot management, write path (WAL, memtable, flush), merge, recovery, queries.

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
    _lock: File,
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

    /// Opens an index, replaying its write-ahead log (recovering from any crash) and
    /// removing files a crash left unreferenced.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Index> {
        let dir = dir.as_ref().to_path_buf();
        let lock_path = dir.join("LOCK");
        if !dir.join(MANIFEST).exists() {
            return Err(Error::io(
                &dir.join(MANIFEST),
                std::io::Error::new(std::io::ErrorKind::NotFound, "not an index (no manifest)"),
            ));
        }
        let lock_file = if opts.read_only {
            File::open(&lock_path)
        } else {
            File::create(&lock_path)
        }
        .map_err(|e| Error::io(&lock_path, e))?;
        let locked = if opts.read_only {
            lock_file.try_lock_shared()
        } else {
            lock_file.try_lock()
        };
        match locked {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked(dir.clone())),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        let m = Manifest::load(&dir)?;
        let cfg = Config {
            buckets: m.buckets,
            fingerprint_bits: m.bits,
        };
        let man_path = dir.join(MANIFEST);
        let mut segs = Vec::new();
        for ms in &m.segments {
            let seg = Segment::open(&dir.join(seg_name(ms.id)))?;
            if seg.bits != cfg.fingerprint_bits || seg.buckets != cfg.buckets || seg.id != ms.id {
                return Err(Error::corrupt(
                    &seg.path,
                    "segment does not match the manifest's configuration",
                ));
            }
            let by_uid: HashMap<u64, usize> = seg
                .parts
                .iter()
                .enumerate()
                .map(|(k, p)| (p.uid, k))
                .collect();
            let mut removed = vec![false; seg.parts.len()];
            for u in &ms.removed {
                let k = by_uid.get(u).ok_or_else(|| {
                    Error::corrupt(&man_path, format!("unknown partition uid {u}"))
                })?;
                removed[*k] = true;
            }
            let limit = seg.buckets as u64 * seg.row_slots;
            let mut deleted = Deleted::default();
            for &g in &ms.deleted {
                if g >= limit || !deleted.set.insert(g) {
                    return Err(Error::corrupt(
                        &man_path,
                        format!("impossible deleted slot {g}"),
                    ));
                }
                deleted.log.push(g);
            }
            segs.push(SegState {
                seg: Arc::new(seg),
                removed: Arc::new(removed),
                deleted: Arc::new(deleted),
            });
        }

        // WAL files from wal_start on, which must be consecutive.
        let mut wals = Vec::new();
        let mut orphans = Vec::new();
        let live_segs: HashSet<String> = m.segments.iter().map(|s| seg_name(s.id)).collect();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(seq) = parse_wal_name(&name) {
                if seq >= m.wal_start {
                    wals.push(seq);
                } else {
                    orphans.push(entry.path());
                }
            } else if (name.starts_with("seg-")
                && name.ends_with(".nseg")
                && !live_segs.contains(&name))
                || name == "MANIFEST.tmp"
            {
                orphans.push(entry.path());
            }
        }
        wals.sort_unstable();
        if wals.first() != Some(&m.wal_start) {
            return Err(Error::corrupt(
                &dir.join(wal_name(m.wal_start)),
                "write-ahead log named by the manifest is missing",
            ));
        }
        for (i, &s) in wals.iter().enumerate() {
            if s != m.wal_start + i as u64 {
                return Err(Error::corrupt(
                    &dir.join(wal_name(s)),
                    "gap in write-ahead log sequence",
                ));
            }
        }

        let mut snap = Snapshot {
            segs,
            mem: Vec::new(),
        };
        let mut next_uid = m.next_uid;
        let mut last_len = 0;
        for (i, &seq) in wals.iter().enumerate() {
            let path = dir.join(wal_name(seq));
            let last = i + 1 == wals.len();
            let (payloads, len) = read_wal(&path, seq, last, !opts.read_only)?;
            for p in payloads {
                let rec = Record::decode(&p, &path, cfg.fingerprint_bits, cfg.buckets)?;
                if let Record::Append { uid, .. } = &rec {
                    next_uid = next_uid.max(uid + 1);
                }
                apply(&cfg, &opts, &mut snap, rec).map_err(|e| match e {
                    Error::NotFound(m) => {
                        Error::corrupt(&path, format!("log record cannot be replayed: {m}"))
                    }
                    e => e,
                })?;
            }
            last_len = len;
        }
        let last_seq = *wals.last().unwrap();
        let wal = Wal::reopen(
            &dir.join(wal_name(last_seq)),
            last_seq,
            last_len,
            opts.sync,
            opts.read_only,
        )?;
        if !opts.read_only {
            for p in orphans {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(Index {
            dir,
            cfg,
            opts,
            state: ArcSwap::from_pointee(snap),
            writer: Mutex::new(Writer {
                wal,
                next_seg_id: m.next_seg_id,
                next_uid,
                generation: m.generation,
            }),
            merge_lock: Mutex::new(()),
            _lock: lock_file,
        })
    }

    /// The index's fixed configuration.
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds a partition entry holding `values` under `id`. Durable when this returns.
    /// Adding again under an existing id adds a second entry for the same id. If the
    /// append fills the memtable, it is flushed; an error of that flush is returned even
    /// though the append itself is already durable (retrying adds a duplicate entry, which
    /// costs space but never correctness).
    pub fn append_values(&self, id: &str, values: &[Value]) -> Result<u64> {
        let hashes: Vec<u64> = values.iter().map(Value::hash).collect();
        self.append_hashes(id, &hashes)
    }

    /// Like [`append_values`](Self::append_values), for values already hashed with [`Value::hash`].
    pub fn append_hashes(&self, id: &str, hashes: &[u64]) -> Result<u64> {
        // The filter is built before taking the writer lock: it is the CPU-heavy part.
        let f = PartitionFilter::build(hashes, self.cfg.buckets, self.cfg.fingerprint_bits);
        self.append_filter(id, f)
    }

    fn writable(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::InvalidArgument(format!(
                "index {} is open read-only",
                self.dir.display()
            )));
        }
        Ok(())
    }

    fn append_filter(&self, id: &str, f: PartitionFilter) -> Result<u64> {
        self.writable()?;
        // A log record's length is a u32, and slot positions within a row are u32.
        if f.data.len() as u64 * self.cfg.fingerprint_bits as u64 / 8
            > (u32::MAX as u64 - (1 << 20))
        {
            return Err(Error::InvalidArgument(format!(
                "partition {id:?} needs {} slots per bucket; use more buckets",
                f.slots
            )));
        }
        let mut w = lock(&self.writer);
        let uid = w.next_uid;
        let rec = Record::Append {
            uid,
            id: id.to_string(),
            count: f.count,
            slots: f.slots,
            fps: f.data,
        };
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        w.next_uid += 1;
        let mut snap = Snapshot::clone(&self.state.load());
        apply(&self.cfg, &self.opts, &mut snap, rec)?;
        let full = snap.mem_bytes() >= self.opts.flush_bytes;
        self.state.store(Arc::new(snap));
        if full {
            self.flush_locked(&mut w)?;
        }
        Ok(uid)
    }

    /// Removes one stored copy of each value from partition `id`. The caller asserts that
    /// each value was added to `id` and not deleted since (deleting a value that is not
    /// there could erase another value's fingerprint). If any value has no matching
    /// fingerprint in `id`, nothing is changed and [`Error::NotFound`] is returned.
    pub fn delete_values(&self, id: &str, values: &[Value]) -> Result<()> {
        let hashes: Vec<u64> = values.iter().map(Value::hash).collect();
        self.delete_hashes(id, &hashes)
    }

    /// Like [`delete_values`](Self::delete_values), for hashed values.
    pub fn delete_hashes(&self, id: &str, hashes: &[u64]) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        let rec = Record::DeleteValues {
            id: id.to_string(),
            hashes: hashes.to_vec(),
        };
        let mut snap = Snapshot::clone(&self.state.load());
        // Resolve against a draft first so a missing value changes nothing, then log.
        apply(&self.cfg, &self.opts, &mut snap, rec.clone())?;
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        self.state.store(Arc::new(snap));
        Ok(())
    }

    /// Removes every entry of partition `id` (a tombstone; space is reclaimed by the next
    /// merge). Returns [`Error::NotFound`] if no live entry has that id.
    pub fn remove_partition(&self, id: &str) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        let rec = Record::RemovePartition { id: id.to_string() };
        let mut snap = Snapshot::clone(&self.state.load());
        apply(&self.cfg, &self.opts, &mut snap, rec.clone())?;
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        self.state.store(Arc::new(snap));
        Ok(())
    }

    /// Candidate partition ids for a value: every partition that holds it, plus false
    /// positives. Sorted, without duplicates.
    pub fn query(&self, v: &Value) -> Result<Vec<String>> {
        self.query_hash(v.hash())
    }

    /// Candidate partition ids for a hashed value.
    pub fn query_hash(&self, h: u64) -> Result<Vec<String>> {
        let snap = self.state.load();
        let mut out = Vec::new();
        self.probe(&snap, h, &mut out)?;
        Ok(out)
    }

    /// Candidates of many hashed values against one snapshot.
    pub fn query_batch(&self, hashes: &[u64]) -> Result<Vec<Vec<String>>> {
        let snap = self.state.load();
        hashes
            .iter()
            .map(|&h| {
                let mut out = Vec::new();
                self.probe(&snap, h, &mut out).map(|_| out)
            })
            .collect()
    }

    /// Number of candidate partitions for a hashed value (no id strings are built):
    /// what a benchmark measures.
    pub fn count_candidates(&self, h: u64) -> Result<usize> {
        let snap = self.state.load();
        let mut n = 0;
        self.probe_with(&snap, h, |_| n += 1)?;
        Ok(n)
    }

    fn probe(&self, snap: &Snapshot, h: u64, out: &mut Vec<String>) -> Result<()> {
        self.probe_with(snap, h, |id| out.push(id.to_string()))?;
        out.sort_unstable();
        out.dedup();
        Ok(())
    }

    fn probe_with(&self, snap: &Snapshot, h: u64, mut hit: impl FnMut(&str)) -> Result<()> {
        let p = Probe::new(h, self.cfg.buckets, self.cfg.fingerprint_bits);
        let width = self.cfg.fingerprint_bits as usize / 8;
        SCRATCH.with(|s| {
            let (buf, hits) = &mut *s.borrow_mut();
            for st in &snap.segs {
                let seg = &st.seg;
                if seg.row_slots == 0 {
                    continue;
                }
                for (n, b) in [p.b1, p.b2].into_iter().enumerate() {
                    if n == 1 && b == p.b1 {
                        break;
                    }
                    let row = seg.read_row(b, buf, self.opts.verify_reads)?;
                    hits.clear();
                    self.opts.scan.scan(row, width, p.fp, hits);
                    for &pos in hits.iter() {
                        let k = seg.part_of(pos as u64);
                        if st.removed[k] {
                            continue;
                        }
                        if !st.deleted.set.is_empty()
                            && st
                                .deleted
                                .set
                                .contains(&(b as u64 * seg.row_slots + pos as u64))
                        {
                            continue;
                        }
                        hit(&seg.parts[k].id);
                    }
                }
            }
            Ok::<(), Error>(())
        })?;
        for m in &snap.mem {
            if !m.removed && m.filter.contains(&p) {
                hit(&m.id);
            }
        }
        Ok(())
    }

    /// Writes the memtable as a new segment and records every change so far in the
    /// manifest, so the write-ahead log can be discarded.
    pub fn flush(&self) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        self.flush_locked(&mut w)
    }

    fn flush_locked(&self, w: &mut Writer) -> Result<()> {
        let segs = self.state.load().segs.clone();
        self.commit_locked(w, segs)
    }

    /// Makes `segs` plus the memtable (written as a new segment) the durable state: a new
    /// manifest and a fresh WAL. Every change in the old WAL is then in the manifest, so
    /// replay never applies a change twice; merges commit through here for that reason.
    fn commit_locked(&self, w: &mut Writer, segs: Vec<SegState>) -> Result<()> {
        let snap = self.state.load_full();
        let mut next = Snapshot {
            segs,
            mem: Vec::new(),
        };
        let live: Vec<&MemPart> = snap
            .mem
            .iter()
            .map(|m| &**m)
            .filter(|m| !m.removed)
            .collect();
        let mut new_seg_id = None;
        if !live.is_empty() {
            let id = w.next_seg_id;
            let path = self.dir.join(seg_name(id));
            let parts: Vec<SegPart> = live
                .iter()
                .map(|m| SegPart {
                    uid: m.uid,
                    count: m.filter.count,
                    slots: m.filter.slots,
                    id: m.id.clone(),
                })
                .collect();
            let mut sw = SegmentWriter::create(
                &path,
                id,
                self.cfg.fingerprint_bits,
                self.cfg.buckets,
                &parts,
            )?;
            let width = sw.width();
            let mut row = vec![0u8; sw.row_bytes()];
            for b in 0..self.cfg.buckets as usize {
                let mut at = 0;
                for m in &live {
                    let s = m.filter.slots as usize;
                    for &fp in &m.filter.data[b * s..b * s + s] {
                        put_fp(&mut row, width, at, fp);
                        at += 1;
                    }
                }
                sw.write_row(&row)?;
            }
            sw.finish()?;
            if self.opts.sync {
                sync_dir(&self.dir)?;
            }
            next.segs.push(SegState {
                seg: Arc::new(Segment::open(&path)?),
                removed: Arc::new(vec![false; parts.len()]),
                deleted: Arc::default(),
            });
            w.next_seg_id += 1;
            new_seg_id = Some(id);
        }
        let new_wal = Wal::create(&self.dir, w.wal.seq + 1, self.opts.sync)?;
        let m = self.manifest_of(&next, w, new_wal.seq);
        if let Err(e) = m.store(&self.dir, self.opts.sync) {
            // Keep the old WAL: it still holds every change the manifest does not.
            let _ = std::fs::remove_file(&new_wal.path);
            if let Some(id) = new_seg_id {
                let _ = std::fs::remove_file(self.dir.join(seg_name(id)));
            }
            return Err(e);
        }
        w.generation += 1;
        let old = std::mem::replace(&mut w.wal, new_wal);
        self.state.store(Arc::new(next));
        let _ = std::fs::remove_file(&old.path);
        Ok(())
    }

    fn manifest_of(&self, snap: &Snapshot, w: &Writer, wal_start: u64) -> Manifest {
        Manifest {
            bits: self.cfg.fingerprint_bits,
            buckets: self.cfg.buckets,
            generation: w.generation + 1,
            wal_start,
            next_seg_id: w.next_seg_id,
            next_uid: w.next_uid,
            segments: snap
                .segs
                .iter()
                .map(|s| ManSeg {
                    id: s.seg.id,
                    removed: s
                        .seg
                        .parts
                        .iter()
                        .zip(s.removed.iter())
                        .filter(|(_, &r)| r)
                        .map(|(p, _)| p.uid)
                        .collect(),
                    deleted: s.deleted.log.clone(),
                })
                .collect(),
        }
    }

    /// Number of immutable segments.
    pub fn segment_count(&self) -> usize {
        self.state.load().segs.len()
    }

    /// Merges every segment into one, reclaiming removed partitions and deleted slots.
    /// Readers and writers keep working meanwhile; only the final swap takes the writer lock.
    pub fn merge(&self) -> Result<Option<MergeReport>> {
        self.merge_where(|segs| {
            if segs.len() >= 2 || segs.iter().any(needs_cleanup) {
                (0..segs.len()).collect()
            } else {
                Vec::new()
            }
        })
    }

    /// Merges the smaller half of the segments if there are more than `max_segments`.
    pub fn maybe_merge(&self, max_segments: usize) -> Result<Option<MergeReport>> {
        self.merge_where(|segs| {
            if segs.len() <= max_segments.max(1) {
                return Vec::new();
            }
            let mut order: Vec<usize> = (0..segs.len()).collect();
            order.sort_by_key(|&i| segs[i].seg.file_len);
            order.truncate(segs.len() / 2 + 1);
            order.sort_unstable();
            order
        })
    }

    fn merge_where(
        &self,
        pick: impl FnOnce(&[SegState]) -> Vec<usize>,
    ) -> Result<Option<MergeReport>> {
        self.writable()?;
        let _m = lock(&self.merge_lock);
        // 1. Under the writer lock: choose inputs, capture their state, reserve an id.
        let (inputs, out_id) = {
            let mut w = lock(&self.writer);
            let snap = self.state.load();
            let chosen = pick(&snap.segs);
            if chosen.is_empty() {
                return Ok(None);
            }
            let inputs: Vec<SegState> = chosen.iter().map(|&i| snap.segs[i].clone()).collect();
            let id = w.next_seg_id;
            w.next_seg_id += 1;
            (inputs, id)
        };
        // 2. Without locks: write the merged segment. Entries are copied slot for slot,
        // except that the entries of an id that has several, and entries whose remaining
        // values fit in fewer slots, are rebuilt into one filter from their fingerprints.
        let width = self.cfg.fingerprint_bits as usize / 8;
        let mut parts = Vec::new();
        // new_off[i][k]: first slot of input i's partition k in the merged rows (copied entries).
        let mut new_off: Vec<Vec<Option<u64>>> = Vec::new();
        // new_idx[i][k]: index of input i's partition k in the merged partition table.
        let mut new_idx: Vec<Vec<Option<usize>>> = Vec::new();
        // rebuilt_of[i][k]: which rebuilt group input i's partition k went into.
        let mut rebuilt_of: Vec<Vec<Option<usize>>> = Vec::new();
        let mut reclaimed = 0;
        let mut live: Vec<Vec<u64>> = Vec::new();
        let mut groups: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        let mut group_order: Vec<&str> = Vec::new();
        for (i, st) in inputs.iter().enumerate() {
            let seg = &st.seg;
            let mut dels = vec![0u64; seg.parts.len()];
            for &g in &st.deleted.log {
                dels[seg.part_of(g % seg.row_slots)] += 1;
            }
            live.push(
                seg.parts
                    .iter()
                    .zip(&dels)
                    .map(|(p, d)| p.count - d)
                    .collect(),
            );
            for (k, p) in seg.parts.iter().enumerate() {
                if st.removed[k] {
                    reclaimed += 1;
                    continue;
                }
                let g = groups.entry(p.id.as_str()).or_default();
                if g.is_empty() {
                    group_order.push(p.id.as_str());
                }
                g.push((i, k));
            }
        }
        let mut budget = REBUILD_LIMIT;
        let mut rebuild: Vec<Vec<(usize, usize)>> = Vec::new();
        for (i, st) in inputs.iter().enumerate() {
            new_off.push(vec![None; st.seg.parts.len()]);
            new_idx.push(vec![None; st.seg.parts.len()]);
            rebuilt_of.push(vec![None; st.seg.parts.len()]);
            let _ = i;
        }
        for id in &group_order {
            let g = &groups[id];
            let n: u64 = g.iter().map(|&(i, k)| live[i][k]).sum();
            let slots: u32 = g.iter().map(|&(i, k)| inputs[i].seg.parts[k].slots).sum();
            // A single entry is rebuilt only once a quarter of its values are deleted: an
            // entry that needed an extra slot when built would otherwise be rebuilt (to the
            // same size) by every merge.
            let written: u64 = g.iter().map(|&(i, k)| inputs[i].seg.parts[k].count).sum();
            let shrink = crate::filter::slots_for(n, self.cfg.buckets) < slots
                && (written - n) * 4 >= written;
            if (g.len() > 1 || shrink) && n <= budget {
                budget -= n;
                for &(i, k) in g {
                    rebuilt_of[i][k] = Some(rebuild.len());
                }
                rebuild.push(g.clone());
            }
        }
        // Pass 1 (only if something is rebuilt): gather the rebuilt groups' live fingerprints.
        let mut gathered: Vec<Vec<(u32, u32)>> = vec![Vec::new(); rebuild.len()];
        if !rebuild.is_empty() {
            let mut buf = Vec::new();
            for b in 0..self.cfg.buckets {
                for (i, st) in inputs.iter().enumerate() {
                    let seg = &st.seg;
                    if seg.row_slots == 0 || rebuilt_of[i].iter().all(Option::is_none) {
                        continue;
                    }
                    let src = seg.read_row(b, &mut buf, true)?;
                    for (k, r) in rebuilt_of[i].iter().enumerate() {
                        let Some(r) = r else { continue };
                        for pos in seg.offsets[k]..seg.offsets[k + 1] {
                            let fp = get_fp(src, width, pos as usize);
                            if fp != 0
                                && !st.deleted.set.contains(&(b as u64 * seg.row_slots + pos))
                            {
                                gathered[*r].push((b, fp));
                            }
                        }
                    }
                }
            }
        }
        let rebuilt: Vec<PartitionFilter> = gathered
            .iter()
            .map(|g| {
                PartitionFilter::build_from_slots(g, self.cfg.buckets, self.cfg.fingerprint_bits)
            })
            .collect();
        drop(gathered);
        // Output order: copied entries in input order, then the rebuilt ones.
        let mut acc = 0u64;
        for (i, st) in inputs.iter().enumerate() {
            for (k, p) in st.seg.parts.iter().enumerate() {
                if st.removed[k] || rebuilt_of[i][k].is_some() {
                    continue;
                }
                new_off[i][k] = Some(acc);
                new_idx[i][k] = Some(parts.len());
                acc += p.slots as u64;
                parts.push(SegPart {
                    uid: p.uid,
                    count: live[i][k],
                    slots: p.slots,
                    id: p.id.clone(),
                });
            }
        }
        let mut rebuilt_off = Vec::with_capacity(rebuilt.len());
        for (r, f) in rebuilt.iter().enumerate() {
            let (i0, k0) = rebuild[r][0];
            for &(i, k) in &rebuild[r] {
                new_idx[i][k] = Some(parts.len());
            }
            let p0 = &inputs[i0].seg.parts[k0];
            rebuilt_off.push(acc);
            acc += f.slots as u64;
            parts.push(SegPart {
                uid: p0.uid,
                count: f.count,
                slots: f.slots,
                id: p0.id.clone(),
            });
        }
        let out_path = self.dir.join(seg_name(out_id));
        let mut bytes = 0;
        if !parts.is_empty() {
            let res = (|| {
                let mut sw = SegmentWriter::create(
                    &out_path,
                    out_id,
                    self.cfg.fingerprint_bits,
                    self.cfg.buckets,
                    &parts,
                )?;
                let mut row = vec![0u8; sw.row_bytes()];
                let mut buf = Vec::new();
                let mut dels: Vec<Vec<u64>> = inputs
                    .iter()
                    .map(|s| {
                        let mut d = s.deleted.log.clone();
                        d.sort_unstable();
                        d
                    })
                    .collect();
                let mut cursor = vec![0usize; inputs.len()];
                for b in 0..self.cfg.buckets {
                    for (i, st) in inputs.iter().enumerate() {
                        let seg = &st.seg;
                        if seg.row_slots == 0 {
                            continue;
                        }
                        let src = seg.read_row(b, &mut buf, true)?;
                        for (k, off) in new_off[i].iter().enumerate() {
                            if let Some(o) = off {
                                let (s0, s1) = (
                                    seg.offsets[k] as usize * width,
                                    seg.offsets[k + 1] as usize * width,
                                );
                                let o = *o as usize * width;
                                row[o..o + s1 - s0].copy_from_slice(&src[s0..s1]);
                            }
                        }
                        // Deleted slots of this bucket become empty in the merged row.
                        let d = &mut dels[i];
                        while cursor[i] < d.len() && d[cursor[i]] / seg.row_slots == b as u64 {
                            let pos = d[cursor[i]] % seg.row_slots;
                            let k = seg.part_of(pos);
                            if let Some(o) = new_off[i][k] {
                                put_fp(&mut row, width, (o + pos - seg.offsets[k]) as usize, 0);
                            }
                            cursor[i] += 1;
                        }
                    }
                    for (f, &o) in rebuilt.iter().zip(&rebuilt_off) {
                        let s = f.slots as usize;
                        for (j, &fp) in f.data[b as usize * s..(b as usize + 1) * s]
                            .iter()
                            .enumerate()
                        {
                            put_fp(&mut row, width, o as usize + j, fp);
                        }
                    }
                    sw.write_row(&row)?;
                }
                sw.finish()?;
                if self.opts.sync {
                    sync_dir(&self.dir)?;
                }
                Segment::open(&out_path)
            })();
            match res {
                Ok(seg) => bytes = seg.file_len,
                Err(e) => {
                    let _ = std::fs::remove_file(&out_path);
                    return Err(e);
                }
            }
        }
        // 3. Under the writer lock: carry over deletes and removals that happened meanwhile, swap.
        let mut w = lock(&self.writer);
        let snap = self.state.load_full();
        let mut merged: Option<SegState> = if parts.is_empty() {
            None
        } else {
            Some(SegState {
                seg: Arc::new(Segment::open(&out_path)?),
                removed: Arc::new(vec![false; parts.len()]),
                deleted: Arc::default(),
            })
        };
        let mut next = Snapshot {
            segs: Vec::new(),
            mem: Vec::new(),
        };
        let input_ids: HashSet<u64> = inputs.iter().map(|s| s.seg.id).collect();
        for cur in &snap.segs {
            let Some(i) = inputs.iter().position(|s| s.seg.id == cur.seg.id) else {
                next.segs.push(cur.clone());
                continue;
            };
            let before = &inputs[i];
            let seg = &cur.seg;
            if let Some(m) = merged.as_mut() {
                let msl = m.seg.row_slots;
                let mut buf = Vec::new();
                for &g in &cur.deleted.log[before.deleted.log.len()..] {
                    let (b, pos) = (g / seg.row_slots, g % seg.row_slots);
                    let k = seg.part_of(pos);
                    if let Some(o) = new_off[i][k] {
                        let ng = b * msl + o + pos - seg.offsets[k];
                        let d = Arc::make_mut(&mut m.deleted);
                        d.log.push(ng);
                        d.set.insert(ng);
                    } else if let Some(r) = rebuilt_of[i][k] {
                        // The entry was rebuilt: delete one copy of the same fingerprint
                        // from its new filter (it holds every fingerprint live at capture).
                        let fp =
                            get_fp(seg.read_row(b as u32, &mut buf, true)?, width, pos as usize);
                        let (o, s) = (rebuilt_off[r], rebuilt[r].slots as u64);
                        let mut done = false;
                        for nb in [
                            b as u32,
                            crate::hash::alt_bucket(b as u32, fp, self.cfg.buckets),
                        ] {
                            let row = m.seg.read_row(nb, &mut buf, true)?;
                            let hit = (o..o + s).find(|&p| {
                                get_fp(row, width, p as usize) == fp
                                    && !m.deleted.set.contains(&(nb as u64 * msl + p))
                            });
                            if let Some(p) = hit {
                                let d = Arc::make_mut(&mut m.deleted);
                                d.log.push(nb as u64 * msl + p);
                                d.set.insert(nb as u64 * msl + p);
                                done = true;
                                break;
                            }
                        }
                        if !done {
                            let _ = std::fs::remove_file(&out_path);
                            return Err(Error::corrupt(
                                &m.seg.path,
                                "merged segment lacks a fingerprint of a rebuilt partition",
                            ));
                        }
                    }
                }
                for (k, nk) in new_idx[i].iter().enumerate() {
                    if cur.removed[k] && !before.removed[k] {
                        let nk = nk.expect("a live input partition is in the merged segment");
                        Arc::make_mut(&mut m.removed)[nk] = true;
                    }
                }
            }
        }
        if let Some(m) = merged {
            next.segs.push(m);
        }
        if let Err(e) = self.commit_locked(&mut w, next.segs) {
            let _ = std::fs::remove_file(&out_path);
            return Err(e);
        }
        drop(w);
        // Readers still holding the old snapshot keep their open file handles.
        for id in input_ids {
            let _ = std::fs::remove_file(self.dir.join(seg_name(id)));
        }
        Ok(Some(MergeReport {
            inputs: inputs.len(),
            partitions: parts.len(),
            reclaimed,
            bytes,
        }))
    }

    /// Starts a background thread that merges whenever there are more than
    /// `max_segments` segments, checking every `interval`.
    pub fn start_merger(self: &Arc<Self>, max_segments: usize, interval: Duration) -> MergerHandle {
        let weak: Weak<Index> = Arc::downgrade(self);
        let stop = Arc::new(AtomicBool::new(false));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let (s, errs) = (stop.clone(), errors.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Some(ix) = weak.upgrade() else { break };
                if ix.segment_count() > max_segments {
                    if let Err(e) = ix.maybe_merge(max_segments) {
                        lock(&errs).push(e.to_string());
                    }
                }
                drop(ix);
                std::thread::sleep(interval);
            }
        });
        MergerHandle {
            stop,
            thread: Some(thread),
            errors,
        }
    }

    /// Every partition entry, live or removed-but-unreclaimed.
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        let snap = self.state.load();
        let mut out = Vec::new();
        for st in &snap.segs {
            let seg = &st.seg;
            let mut dels = vec![0u64; seg.parts.len()];
            for &g in &st.deleted.log {
                dels[seg.part_of(g % seg.row_slots)] += 1;
            }
            for (k, p) in seg.parts.iter().enumerate() {
                out.push(PartitionInfo {
                    uid: p.uid,
                    id: p.id.clone(),
                    slots: p.slots,
                    values: p.count - dels[k],
                    removed: st.removed[k],
                    segment: Some(seg.id),
                });
            }
        }
        for m in &snap.mem {
            out.push(PartitionInfo {
                uid: m.uid,
                id: m.id.clone(),
                slots: m.filter.slots,
                values: m.filter.count,
                removed: m.removed,
                segment: None,
            });
        }
        out
    }

    /// Summary numbers.
    pub fn stats(&self) -> Stats {
        let parts = self.partitions();
        let live: Vec<&PartitionInfo> = parts.iter().filter(|p| !p.removed).collect();
        let b = self.cfg.buckets as f64;
        let denom = ((1u64 << self.cfg.fingerprint_bits) - 1) as f64;
        let values: u64 = live.iter().map(|p| p.values).sum();
        let slots: u64 = live
            .iter()
            .map(|p| p.slots as u64 * self.cfg.buckets as u64)
            .sum();
        let fpr_sum: f64 = live
            .iter()
            .filter(|p| p.slots > 0)
            .map(|p| {
                let occ = p.values as f64 / (p.slots as f64 * b);
                occ * 2.0 * p.slots as f64 / denom
            })
            .sum();
        let snap = self.state.load();
        let mut bytes: u64 = snap.segs.iter().map(|s| s.seg.file_len).sum();
        bytes += lock(&self.writer).wal.len;
        let distinct: HashSet<&str> = live.iter().map(|p| p.id.as_str()).collect();
        Stats {
            buckets: self.cfg.buckets,
            fingerprint_bits: self.cfg.fingerprint_bits,
            segments: snap.segs.len(),
            memtable_partitions: snap.mem.iter().filter(|m| !m.removed).count(),
            partitions: live.len(),
            distinct_ids: distinct.len(),
            removed_partitions: parts.len() - live.len(),
            values,
            slots,
            occupancy: if slots == 0 {
                0.0
            } else {
                values as f64 / slots as f64
            },
            expected_fpr: if live.is_empty() {
                0.0
            } else {
                fpr_sum / live.len() as f64
            },
            bytes_on_disk: bytes,
        }
    }

    /// Reads every row of every segment and checks its checksum.
    pub fn verify(&self) -> Result<()> {
        for st in &self.state.load().segs {
            st.seg.verify()?;
        }
        Ok(())
    }
}

/// Whether merging a segment alone would change it: reclaim removed entries or deleted
/// slots, or combine entries of one id.
fn needs_cleanup(s: &SegState) -> bool {
    let mut ids = HashSet::new();
    !s.deleted.log.is_empty()
        || s.removed.iter().any(|&r| r)
        || !s.seg.parts.iter().all(|p| ids.insert(p.id.as_str()))
}

/// Applies a logged change to a snapshot (a draft, during writes; the recovering state,
/// during replay). Errors leave the draft in an unspecified state: discard it.
fn apply(cfg: &Config, opts: &Options, snap: &mut Snapshot, rec: Record) -> Result<()> {
    match rec {
        Record::Append {
            uid,
            id,
            count,
            slots,
            fps,
        } => {
            let filter = PartitionFilter {
                slots,
                buckets: cfg.buckets,
                bits: cfg.fingerprint_bits,
                data: fps,
                count,
            };
            snap.mem.push(Arc::new(MemPart {
                uid,
                id,
                filter,
                removed: false,
            }));
        }
        Record::RemovePartition { id } => {
            let mut n = 0;
            for m in snap.mem.iter_mut() {
                if !m.removed && m.id == id {
                    Arc::make_mut(m).removed = true;
                    n += 1;
                }
            }
            for st in snap.segs.iter_mut() {
                for k in 0..st.seg.parts.len() {
                    if !st.removed[k] && st.seg.parts[k].id == id {
                        Arc::make_mut(&mut st.removed)[k] = true;
                        n += 1;
                    }
                }
            }
            if n == 0 {
                return Err(Error::NotFound(format!("partition {id:?}")));
            }
        }
        Record::DeleteValues { id, hashes } => {
            let width = cfg.fingerprint_bits as usize / 8;
            let seg_idx: Vec<usize> = (0..snap.segs.len())
                .filter(|&i| {
                    snap.segs[i]
                        .seg
                        .parts
                        .iter()
                        .zip(snap.segs[i].removed.iter())
                        .any(|(p, &r)| !r && p.id == id)
                })
                .collect();
            let mut buf = Vec::new();
            let mut hits = Vec::new();
            'values: for h in hashes {
                let p = Probe::new(h, cfg.buckets, cfg.fingerprint_bits);
                for m in snap.mem.iter_mut() {
                    if !m.removed && m.id == id && m.filter.contains(&p) {
                        Arc::make_mut(m).filter.remove(&p);
                        continue 'values;
                    }
                }
                for &i in &seg_idx {
                    let st = &mut snap.segs[i];
                    for b in [p.b1, p.b2] {
                        let row = st.seg.read_row(b, &mut buf, true)?;
                        hits.clear();
                        opts.scan.scan(row, width, p.fp, &mut hits);
                        for &pos in &hits {
                            let k = st.seg.part_of(pos as u64);
                            let g = b as u64 * st.seg.row_slots + pos as u64;
                            if !st.removed[k]
                                && st.seg.parts[k].id == id
                                && !st.deleted.set.contains(&g)
                            {
                                let d = Arc::make_mut(&mut st.deleted);
                                d.log.push(g);
                                d.set.insert(g);
                                continue 'values;
                            }
                        }
                    }
                }
                return Err(Error::NotFound(format!(
                    "value with hash {h:#018x} in partition {id:?}"
                )));
            }
        }
    }
    Ok(())
}

/// Controls the background merge thread of [`Index::start_merger`]; stops it when dropped.
pub struct MergerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl MergerHandle {
    /// Errors the background merges ran into (a failed merge changes nothing).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.errors).clone()
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MergerHandle {
    fn drop(&mut self) {
        self.halt();
    }
}
