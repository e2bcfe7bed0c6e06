//! Merging segments: planning which, gathering their live entries, writing the result.

use super::*;

mod plan;
use plan::MergePlan;

impl Index {
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

    pub(super) fn merge_where(
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
        // 2. Without locks: plan, gather the entries to rebuild, lay out and write the segment.
        let mut plan = MergePlan::new(inputs, self.cfg.buckets);
        let rebuilt = self.gather(&plan)?;
        plan.lay_out(rebuilt);
        let out_path = self.dir.join(seg_name(out_id));
        let bytes = if plan.parts.is_empty() {
            0
        } else {
            match self.write_merged(&plan, out_id, &out_path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    let _ = std::fs::remove_file(&out_path);
                    return Err(e);
                }
            }
        };
        // 3. Under the writer lock: carry over what changed meanwhile, swap.
        if let Err(e) = self.commit_merge(&plan, &out_path) {
            let _ = std::fs::remove_file(&out_path);
            return Err(e);
        }
        // Readers still holding the old snapshot keep their open file handles.
        for st in &plan.inputs {
            let _ = std::fs::remove_file(self.dir.join(seg_name(st.seg.id)));
        }
        Ok(Some(MergeReport {
            inputs: plan.inputs.len(),
            partitions: plan.parts.len(),
            reclaimed: plan.reclaimed,
            bytes,
        }))
    }

    /// Reads the live fingerprints of the entries the plan rebuilds (one pass over the input
    /// rows, only if something is rebuilt) and builds their new filters.
    fn gather(&self, plan: &MergePlan) -> Result<Vec<PartitionFilter>> {
        let width = self.cfg.fingerprint_bits as usize / 8;
        let mut gathered: Vec<Vec<(u32, u32)>> = vec![Vec::new(); plan.rebuild.len()];
        if !plan.rebuild.is_empty() {
            let mut buf = Vec::new();
            for b in 0..self.cfg.buckets {
                for (i, st) in plan.inputs.iter().enumerate() {
                    let seg = &st.seg;
                    if seg.row_slots == 0 || plan.rebuilt_of[i].iter().all(Option::is_none) {
                        continue;
                    }
                    let src = seg.read_row(b, &mut buf, true)?;
                    for (k, r) in plan.rebuilt_of[i].iter().enumerate() {
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
        Ok(gathered
            .iter()
            .map(|g| {
                PartitionFilter::build_from_slots(g, self.cfg.buckets, self.cfg.fingerprint_bits)
            })
            .collect())
    }

    /// Writes the merged segment: copied entries slot for slot (deleted slots emptied), then
    /// the rebuilt filters. Returns its size in bytes.
    fn write_merged(&self, plan: &MergePlan, out_id: u64, out_path: &Path) -> Result<u64> {
        let width = self.cfg.fingerprint_bits as usize / 8;
        let mut sw = SegmentWriter::create(
            out_path,
            out_id,
            self.cfg.fingerprint_bits,
            self.cfg.buckets,
            &plan.parts,
        )?;
        let mut row = vec![0u8; sw.row_bytes()];
        let mut buf = Vec::new();
        let mut dels: Vec<Vec<u64>> = plan
            .inputs
            .iter()
            .map(|s| {
                let mut d = s.deleted.log.clone();
                d.sort_unstable();
                d
            })
            .collect();
        let mut cursor = vec![0usize; plan.inputs.len()];
        for b in 0..self.cfg.buckets {
            for (i, st) in plan.inputs.iter().enumerate() {
                let seg = &st.seg;
                if seg.row_slots == 0 {
                    continue;
                }
                let src = seg.read_row(b, &mut buf, true)?;
                for (k, off) in plan.new_off[i].iter().enumerate() {
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
                    if let Some(o) = plan.new_off[i][k] {
                        put_fp(&mut row, width, (o + pos - seg.offsets[k]) as usize, 0);
                    }
                    cursor[i] += 1;
                }
            }
            for (f, &o) in plan.rebuilt.iter().zip(&plan.rebuilt_off) {
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
        Ok(Segment::open(out_path)?.file_len)
    }

    /// Under the writer lock: applies to the merged segment the deletes and removals made in
    /// the inputs since they were captured, and swaps the inputs for it.
    fn commit_merge(&self, plan: &MergePlan, out_path: &Path) -> Result<()> {
        let width = self.cfg.fingerprint_bits as usize / 8;
        let mut w = lock(&self.writer);
        let snap = self.state.load_full();
        let mut merged: Option<SegState> = if plan.parts.is_empty() {
            None
        } else {
            Some(SegState {
                seg: Arc::new(Segment::open(out_path)?),
                removed: Arc::new(vec![false; plan.parts.len()]),
                deleted: Arc::default(),
            })
        };
        let mut segs = Vec::new();
        for cur in &snap.segs {
            let Some(i) = plan.inputs.iter().position(|s| s.seg.id == cur.seg.id) else {
                segs.push(cur.clone());
                continue;
            };
            let Some(m) = merged.as_mut() else { continue };
            let before = &plan.inputs[i];
            let seg = &cur.seg;
            let msl = m.seg.row_slots;
            let mut buf = Vec::new();
            for &g in &cur.deleted.log[before.deleted.log.len()..] {
                let (b, pos) = (g / seg.row_slots, g % seg.row_slots);
                let k = seg.part_of(pos);
                if let Some(o) = plan.new_off[i][k] {
                    let ng = b * msl + o + pos - seg.offsets[k];
                    let d = Arc::make_mut(&mut m.deleted);
                    d.log.push(ng);
                    d.set.insert(ng);
                } else if let Some(r) = plan.rebuilt_of[i][k] {
                    // The entry was rebuilt: delete one copy of the same fingerprint from its
                    // new filter (it holds every fingerprint live at capture).
                    let fp = get_fp(seg.read_row(b as u32, &mut buf, true)?, width, pos as usize);
                    let (o, s) = (plan.rebuilt_off[r], plan.rebuilt[r].slots as u64);
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
                        return Err(Error::corrupt(
                            &m.seg.path,
                            "merged segment lacks a fingerprint of a rebuilt partition",
                        ));
                    }
                }
            }
            for (k, nk) in plan.new_idx[i].iter().enumerate() {
                if cur.removed[k] && !before.removed[k] {
                    let nk = nk.expect("a live input partition is in the merged segment");
                    Arc::make_mut(&mut m.removed)[nk] = true;
                }
            }
        }
        if let Some(m) = merged {
            segs.push(m);
        }
        self.commit_locked(&mut w, segs)
    }
}

/// Whether merging a segment alone would change it: reclaim removed entries or deleted
/// slots, or combine entries of one id.
pub(super) fn needs_cleanup(s: &SegState) -> bool {
    let mut ids = HashSet::new();
    !s.deleted.log.is_empty()
        || s.removed.iter().any(|&r| r)
        || !s.seg.parts.iter().all(|p| ids.insert(p.id.as_str()))
}
