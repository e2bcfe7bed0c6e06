//! Flushing the in-memory partitions as a segment, and committing a new manifest.

use super::*;

impl Index {
    /// Writes the memtable as a new segment and records every change so far in the
    /// manifest, so the write-ahead log can be discarded.
    pub fn flush(&self) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        self.flush_locked(&mut w)
    }

    pub(super) fn flush_locked(&self, w: &mut Writer) -> Result<()> {
        let segs = self.state.load().segs.clone();
        self.commit_locked(w, segs)
    }

    /// Makes `segs` plus the memtable (written as a new segment) the durable state: a new
    /// manifest and a fresh WAL. Every change in the old WAL is then in the manifest, so
    /// replay never applies a change twice; merges commit through here for that reason.
    pub(super) fn commit_locked(&self, w: &mut Writer, segs: Vec<SegState>) -> Result<()> {
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

    pub(super) fn manifest_of(&self, snap: &Snapshot, w: &Writer, wal_start: u64) -> Manifest {
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
                    removed: super::inspect::removed_uids(s),
                    deleted: s.deleted.log.clone(),
                })
                .collect(),
        }
    }
}
