//! Inspection: partitions, statistics, verification.

use super::*;

impl Index {
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

    /// The id of one live partition, if there is any: for a caller that needs any one of them
    /// (a file to take a table's columns from), without listing them all.
    pub fn any_live_partition(&self) -> Option<String> {
        let snap = self.state.load();
        let in_segments = snap.segs.iter().find_map(|st| {
            st.seg
                .parts
                .iter()
                .zip(st.removed.iter())
                .find(|(_, removed)| !**removed)
                .map(|(p, _)| p.id.clone())
        });
        in_segments.or_else(|| snap.mem.iter().find(|m| !m.removed).map(|m| m.id.clone()))
    }

    /// The index as a reader elsewhere needs it, with its segment files (see
    /// [`crate::published`]): every write must have been flushed first, since what is only in
    /// the write-ahead log is not in a segment.
    pub fn publication(&self) -> Result<crate::published::Publication> {
        let snap = self.state.load();
        if snap.mem.iter().any(|m| !m.removed) {
            return Err(Error::InvalidArgument(
                "the index holds writes that are not flushed to a segment yet: flush it first"
                    .into(),
            ));
        }
        Ok(crate::published::Publication {
            buckets: self.cfg.buckets,
            fingerprint_bits: self.cfg.fingerprint_bits,
            segments: snap
                .segs
                .iter()
                .map(|s| crate::published::PublishedSegment {
                    id: s.seg.id,
                    removed: removed_uids(s),
                    deleted: s.deleted.log.clone(),
                    head_bytes: s.seg.data_off,
                })
                .collect(),
        })
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

/// uids of the removed partition entries of a segment.
pub(super) fn removed_uids(s: &SegState) -> Vec<u64> {
    s.seg
        .parts
        .iter()
        .zip(s.removed.iter())
        .filter(|(_, &r)| r)
        .map(|(p, _)| p.uid)
        .collect()
}
