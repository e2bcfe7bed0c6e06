//! The measured false-positive rate matches occupancy × 2b / (2^f − 1) on ≥ 1M absent values.

mod common;
use common::create;

fn absent_hashes(n: usize, seed: u64) -> impl Iterator<Item = u64> {
    let mut s = seed;
    (0..n).map(move |_| {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

fn check(bits: u32, buckets: u32, parts: u64, per: u64, tolerance: f64) {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), buckets, bits);
    for p in 0..parts {
        // Synthetic partitions of consecutive values, as in the blog post's benchmarks.
        let hs: Vec<u64> = (p * per..(p + 1) * per)
            .map(|v| needle_index::hash_i64(v as i64))
            .collect();
        ix.append_hashes(&format!("p{p}"), &hs).unwrap();
    }
    ix.flush().unwrap();
    let st = ix.stats();
    let probes = 1_000_000usize;
    // Matching slots per (query, partition): its expectation is exactly occupancy × 2b / (2^f − 1).
    let mut hits = 0usize;
    let mut candidates = 0usize;
    for h in absent_hashes(probes, bits as u64) {
        hits += ix.count_candidates(h).unwrap();
        if bits == 16 && h % 8 == 0 {
            candidates += ix.query_hash(h).unwrap().len();
        }
    }
    let measured = hits as f64 / (probes as f64 * parts as f64);
    let expected = st.expected_fpr;
    eprintln!("f={bits} B={buckets} occupancy={:.3} expected={expected:.3e} measured={measured:.3e} ({hits} matches)", st.occupancy);
    assert!(
        (measured / expected - 1.0).abs() < tolerance,
        "measured {measured} vs expected {expected}"
    );
    if bits == 16 {
        let distinct = candidates as f64 / (probes as f64 / 8.0 * parts as f64);
        assert!(
            (distinct / expected - 1.0).abs() < 0.3,
            "distinct-partition rate {distinct} vs {expected}"
        );
    }
}

#[test]
fn fpr_8_bit_fingerprints() {
    check(8, 2000, 16, 5_000, 0.03);
}

#[test]
fn fpr_16_bit_fingerprints() {
    // ~2,400 expected matches: a 10% tolerance is > 4 standard deviations.
    check(16, 1000, 16, 2_500, 0.10);
}

#[test]
fn fpr_32_bit_fingerprints_is_negligible() {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 1000, 32);
    let hs: Vec<u64> = (0..2_500).map(needle_index::hash_i64).collect();
    ix.append_hashes("p", &hs).unwrap();
    ix.flush().unwrap();
    let hits: usize = absent_hashes(1_000_000, 5)
        .map(|h| ix.count_candidates(h).unwrap())
        .sum();
    assert!(hits <= 2, "{hits}");
}
