//! One partition's cuckoo filter, built in memory (partition-major) before it joins a
//! segment, where the same slots are stored bucket-major.

use crate::hash::{alt_bucket, Probe};

/// Highest load a filter of `slots` slots per bucket is sized for. Partial-key cuckoo
/// insertion fails increasingly often above these loads (Fan et al. report ~50%, 84%,
/// 95% for 1, 2, 4 slots); a failed build is retried with one more slot.
pub fn max_load(slots: u32) -> f64 {
    match slots {
        0 | 1 => 0.50,
        2 => 0.84,
        3 => 0.91,
        _ => 0.95,
    }
}

/// Smallest slots-per-bucket that keeps `n` values at or below [`max_load`] with `buckets` buckets.
pub fn slots_for(n: u64, buckets: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let mut s = ((n as f64) / (buckets as f64 * 0.95)).ceil().max(1.0) as u32;
    while (n as f64) > max_load(s) * s as f64 * buckets as f64 {
        s += 1;
    }
    s
}

/// Largest number of eviction steps before an insertion gives up.
const MAX_KICKS: u32 = 1000;

/// A single partition's filter: `buckets` buckets of `slots` fingerprints, partition-major
/// (`data[i * slots + j]` is slot `j` of bucket `i`); 0 is an empty slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFilter {
    /// Slots per bucket.
    pub slots: u32,
    /// Number of buckets (the index's B).
    pub buckets: u32,
    /// Fingerprint width in bits.
    pub bits: u32,
    /// Fingerprints, partition-major.
    pub data: Vec<u32>,
    /// Number of stored fingerprints (values inserted minus values deleted).
    pub count: u64,
}

impl PartitionFilter {
    /// An empty filter.
    pub fn empty(buckets: u32, bits: u32, slots: u32) -> PartitionFilter {
        PartitionFilter {
            slots,
            buckets,
            bits,
            data: vec![0; buckets as usize * slots as usize],
            count: 0,
        }
    }

    /// Builds a filter holding every hash in `hashes` (duplicates are stored as often as
    /// they occur), starting at [`slots_for`] and adding a slot per bucket whenever an
    /// insertion fails.
    pub fn build(hashes: &[u64], buckets: u32, bits: u32) -> PartitionFilter {
        let mut slots = slots_for(hashes.len() as u64, buckets);
        loop {
            if let Some(f) = Self::try_build(hashes, buckets, bits, slots) {
                return f;
            }
            slots += 1;
        }
    }

    /// Builds a filter from stored fingerprints, each given with the bucket it occupied in
    /// some other filter with the same number of buckets: partial-key cuckoo hashing needs
    /// nothing else (the other candidate bucket is `alt(bucket, fp)`). Used by merges to
    /// combine or shrink filters without the original values.
    pub fn build_from_slots(slots_in: &[(u32, u32)], buckets: u32, bits: u32) -> PartitionFilter {
        let probes: Vec<Probe> = slots_in
            .iter()
            .map(|&(b, fp)| Probe {
                fp,
                b1: b,
                b2: alt_bucket(b, fp, buckets),
            })
            .collect();
        let mut slots = slots_for(probes.len() as u64, buckets);
        loop {
            if let Some(f) = Self::try_build_probes(&probes, buckets, bits, slots) {
                return f;
            }
            slots += 1;
        }
    }

    fn try_build(hashes: &[u64], buckets: u32, bits: u32, slots: u32) -> Option<PartitionFilter> {
        let probes: Vec<Probe> = hashes
            .iter()
            .map(|&h| Probe::new(h, buckets, bits))
            .collect();
        Self::try_build_probes(&probes, buckets, bits, slots)
    }

    fn try_build_probes(
        probes: &[Probe],
        buckets: u32,
        bits: u32,
        slots: u32,
    ) -> Option<PartitionFilter> {
        let mut f = PartitionFilter::empty(buckets, bits, slots);
        if probes.is_empty() {
            return Some(f);
        }
        // Buckets fill from the front while building (nothing is deleted yet), so a
        // per-bucket fill count makes each placement O(1) even for many slots.
        let mut fill = vec![0u32; buckets as usize];
        let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ probes.len() as u64;
        for &p in probes {
            if !f.place(p, &mut fill, &mut rng) {
                return None;
            }
        }
        f.count = probes.len() as u64;
        Some(f)
    }

    fn place(&mut self, p: Probe, fill: &mut [u32], rng: &mut u64) -> bool {
        let s = self.slots;
        for b in [p.b1, p.b2] {
            if fill[b as usize] < s {
                self.data[(b * s + fill[b as usize]) as usize] = p.fp;
                fill[b as usize] += 1;
                return true;
            }
        }
        let mut fp = p.fp;
        let mut b = if next(rng) & 1 == 0 { p.b1 } else { p.b2 };
        for _ in 0..MAX_KICKS {
            let j = (next(rng) % s as u64) as u32;
            let idx = (b * s + j) as usize;
            std::mem::swap(&mut fp, &mut self.data[idx]);
            b = alt_bucket(b, fp, self.buckets);
            if fill[b as usize] < s {
                self.data[(b * s + fill[b as usize]) as usize] = fp;
                fill[b as usize] += 1;
                return true;
            }
        }
        false
    }

    /// Whether bucket `p.b1` or `p.b2` holds fingerprint `p.fp`.
    pub fn contains(&self, p: &Probe) -> bool {
        self.find(p).is_some()
    }

    /// Index into `data` of a slot holding `p.fp` in one of its two buckets.
    pub fn find(&self, p: &Probe) -> Option<usize> {
        let s = self.slots as usize;
        if s == 0 {
            return None;
        }
        for b in [p.b1, p.b2] {
            let start = b as usize * s;
            if let Some(j) = self.data[start..start + s].iter().position(|&x| x == p.fp) {
                return Some(start + j);
            }
        }
        None
    }

    /// Removes one copy of `p.fp` from its buckets; false if there is none.
    pub fn remove(&mut self, p: &Probe) -> bool {
        match self.find(p) {
            Some(i) => {
                self.data[i] = 0;
                self.count -= 1;
                true
            }
            None => false,
        }
    }

    /// Number of occupied slots.
    pub fn occupied(&self) -> u64 {
        self.data.iter().filter(|&&x| x != 0).count() as u64
    }
}

/// splitmix64: a tiny deterministic generator, so a build is reproducible.
pub(crate) fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_configuration_gets_about_three_slots() {
        assert_eq!(slots_for(100_000, 38_000), 3);
        assert_eq!(slots_for(0, 38_000), 0);
        assert_eq!(slots_for(1, 38_000), 1);
    }

    #[test]
    fn rebuild_from_slots_keeps_every_fingerprint_findable() {
        let mut st = 9u64;
        let hs: Vec<u64> = (0..30_000).map(|_| next(&mut st)).collect();
        let (a, b) = hs.split_at(12_000);
        let fa = PartitionFilter::build(a, 5_000, 16);
        let fb = PartitionFilter::build(b, 5_000, 16);
        let mut pairs = Vec::new();
        for f in [&fa, &fb] {
            let s = f.slots as usize;
            for (i, &fp) in f.data.iter().enumerate() {
                if fp != 0 {
                    pairs.push(((i / s) as u32, fp));
                }
            }
        }
        let merged = PartitionFilter::build_from_slots(&pairs, 5_000, 16);
        assert_eq!(merged.count, hs.len() as u64);
        assert!(merged.slots < fa.slots + fb.slots || merged.slots <= 7);
        for &h in &hs {
            assert!(merged.contains(&Probe::new(h, 5_000, 16)));
        }
    }

    #[test]
    fn build_holds_every_value() {
        let mut st = 7u64;
        let hs: Vec<u64> = (0..50_000).map(|_| next(&mut st)).collect();
        for bits in [8, 16, 32] {
            let f = PartitionFilter::build(&hs, 10_000, bits);
            assert_eq!(f.count, hs.len() as u64);
            assert_eq!(f.occupied(), hs.len() as u64);
            for &h in &hs {
                assert!(f.contains(&Probe::new(h, 10_000, bits)));
            }
        }
    }
}
