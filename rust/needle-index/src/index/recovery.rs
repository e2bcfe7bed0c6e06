//! Opening an index: the manifest, the segments, and the replay of the write-ahead log.

use super::*;

impl Index {
    /// Opens an index, replaying its write-ahead log (recovering from any crash) and
    /// removing files a crash left unreferenced.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Index> {
        Index::open_with(dir.as_ref(), opts, true)
    }

    /// Opens a snapshot of an index that another process may be writing: read-only and without
    /// any lock, so it never blocks that writer. It sees the index as of the moment it is opened
    /// (segments, and log records complete by then); open again to see later writes. A flush or
    /// merge that replaces files meanwhile makes it start over (up to 50 times, 10 ms apart),
    /// then the last error is returned.
    pub fn open_snapshot(dir: impl AsRef<Path>, opts: Options) -> Result<Index> {
        let opts = Options {
            read_only: true,
            ..opts
        };
        let mut attempts = 0;
        loop {
            match Index::open_with(dir.as_ref(), opts, false) {
                Err(_) if attempts < 50 => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                r => return r,
            }
        }
    }

    fn open_with(dir: &Path, opts: Options, lock: bool) -> Result<Index> {
        let dir = dir.to_path_buf();
        let lock_path = dir.join("LOCK");
        if !dir.join(MANIFEST).exists() {
            return Err(Error::io(
                &dir.join(MANIFEST),
                std::io::Error::new(std::io::ErrorKind::NotFound, "not an index (no manifest)"),
            ));
        }
        let lock_file = if !lock {
            None
        } else {
            let f = if opts.read_only {
                File::open(&lock_path)
            } else {
                File::create(&lock_path)
            }
            .map_err(|e| Error::io(&lock_path, e))?;
            let locked = if opts.read_only {
                f.try_lock_shared()
            } else {
                f.try_lock()
            };
            match locked {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked(dir.clone())),
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
            }
            Some(f)
        };
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
}

/// Applies a logged change to a snapshot (a draft, during writes; the recovering state,
/// during replay). Errors leave the draft in an unspecified state: discard it.
pub(super) fn apply(cfg: &Config, opts: &Options, snap: &mut Snapshot, rec: Record) -> Result<()> {
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
