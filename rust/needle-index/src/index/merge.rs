//! Merging segments: planning which, gathering their live entries, writing the result.

use super::*;

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
}

/// Whether merging a segment alone would change it: reclaim removed entries or deleted
/// slots, or combine entries of one id.
pub(super) fn needs_cleanup(s: &SegState) -> bool {
    let mut ids = HashSet::new();
    !s.deleted.log.is_empty()
        || s.removed.iter().any(|&r| r)
        || !s.seg.parts.iter().all(|p| ids.insert(p.id.as_str()))
}
