//! Planning a merge: which entries are dropped, copied or rebuilt, and where each lands.

use super::*;

/// What a merge does with its inputs, decided before any row is read: which entries are
/// dropped (removed), copied slot for slot, or rebuilt into one filter (the entries of an id
/// that has several, and entries whose remaining values fit in fewer slots), and where each
/// lands in the merged segment.
pub(super) struct MergePlan {
    pub(super) inputs: Vec<SegState>,
    /// Values still live in each input entry.
    pub(super) live: Vec<Vec<u64>>,
    /// `rebuild[r]`: the input entries (input, entry) rebuilt into filter r.
    pub(super) rebuild: Vec<Vec<(usize, usize)>>,
    /// `rebuilt_of[i][k]`: which rebuilt filter input i's entry k goes into.
    pub(super) rebuilt_of: Vec<Vec<Option<usize>>>,
    pub(super) reclaimed: usize,
    // Set by lay_out:
    /// The merged segment's partition table: copied entries in input order, then rebuilt ones.
    pub(super) parts: Vec<SegPart>,
    /// `new_off[i][k]`: first slot of input i's copied entry k in the merged rows.
    pub(super) new_off: Vec<Vec<Option<u64>>>,
    /// `new_idx[i][k]`: index of input i's entry k in the merged partition table.
    pub(super) new_idx: Vec<Vec<Option<usize>>>,
    pub(super) rebuilt: Vec<PartitionFilter>,
    pub(super) rebuilt_off: Vec<u64>,
}

impl MergePlan {
    pub(super) fn new(inputs: Vec<SegState>, buckets: u32) -> MergePlan {
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
        let mut rebuilt_of: Vec<Vec<Option<usize>>> = inputs
            .iter()
            .map(|st| vec![None; st.seg.parts.len()])
            .collect();
        for id in &group_order {
            let g = &groups[id];
            let n: u64 = g.iter().map(|&(i, k)| live[i][k]).sum();
            let slots: u32 = g.iter().map(|&(i, k)| inputs[i].seg.parts[k].slots).sum();
            // A single entry is rebuilt only once a quarter of its values are deleted: an
            // entry that needed an extra slot when built would otherwise be rebuilt (to the
            // same size) by every merge.
            let written: u64 = g.iter().map(|&(i, k)| inputs[i].seg.parts[k].count).sum();
            let shrink =
                crate::filter::slots_for(n, buckets) < slots && (written - n) * 4 >= written;
            if (g.len() > 1 || shrink) && n <= budget {
                budget -= n;
                for &(i, k) in g {
                    rebuilt_of[i][k] = Some(rebuild.len());
                }
                rebuild.push(g.clone());
            }
        }
        MergePlan {
            new_off: inputs
                .iter()
                .map(|st| vec![None; st.seg.parts.len()])
                .collect(),
            new_idx: inputs
                .iter()
                .map(|st| vec![None; st.seg.parts.len()])
                .collect(),
            inputs,
            live,
            rebuild,
            rebuilt_of,
            reclaimed,
            parts: Vec::new(),
            rebuilt: Vec::new(),
            rebuilt_off: Vec::new(),
        }
    }

    /// Places every kept entry in the merged segment: copied entries in input order, then the
    /// rebuilt filters.
    pub(super) fn lay_out(&mut self, rebuilt: Vec<PartitionFilter>) {
        let mut acc = 0u64;
        for (i, st) in self.inputs.iter().enumerate() {
            for (k, p) in st.seg.parts.iter().enumerate() {
                if st.removed[k] || self.rebuilt_of[i][k].is_some() {
                    continue;
                }
                self.new_off[i][k] = Some(acc);
                self.new_idx[i][k] = Some(self.parts.len());
                acc += p.slots as u64;
                self.parts.push(SegPart {
                    uid: p.uid,
                    count: self.live[i][k],
                    slots: p.slots,
                    id: p.id.clone(),
                });
            }
        }
        for (r, f) in rebuilt.iter().enumerate() {
            let (i0, k0) = self.rebuild[r][0];
            for &(i, k) in &self.rebuild[r] {
                self.new_idx[i][k] = Some(self.parts.len());
            }
            let p0 = &self.inputs[i0].seg.parts[k0];
            self.rebuilt_off.push(acc);
            acc += f.slots as u64;
            self.parts.push(SegPart {
                uid: p0.uid,
                count: f.count,
                slots: f.slots,
                id: p0.id.clone(),
            });
        }
        self.rebuilt = rebuilt;
    }
}
