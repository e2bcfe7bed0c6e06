//! Point queries: two bucket rows per segment, and the in-memory partitions.

use super::*;
use crate::published::{bucket_pair, row_hits};

impl Index {
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

    pub(super) fn probe(&self, snap: &Snapshot, h: u64, out: &mut Vec<String>) -> Result<()> {
        self.probe_with(snap, h, |id| out.push(id.to_string()))?;
        out.sort_unstable();
        out.dedup();
        Ok(())
    }

    pub(super) fn probe_with(
        &self,
        snap: &Snapshot,
        h: u64,
        mut hit: impl FnMut(&str),
    ) -> Result<()> {
        let p = Probe::new(h, self.cfg.buckets, self.cfg.fingerprint_bits);
        let width = self.cfg.fingerprint_bits as usize / 8;
        SCRATCH.with(|s| {
            let (buf, hits) = &mut *s.borrow_mut();
            for st in &snap.segs {
                let seg = &st.seg;
                if seg.row_slots == 0 {
                    continue;
                }
                for b in bucket_pair(&p) {
                    let row = seg.read_row(b, buf, self.opts.verify_reads)?;
                    row_hits(
                        seg,
                        &st.removed,
                        &st.deleted.set,
                        b,
                        row,
                        (width, p.fp, self.opts.scan),
                        hits,
                        &mut hit,
                    );
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
}
