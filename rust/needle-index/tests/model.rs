//! Randomized operation sequences checked against a ground-truth model: appends, value
//! deletes, partition removals, flushes, merges, restarts and torn-WAL crashes. The one
//! property that must never break: no false negatives.

mod common;
use common::{create, fast_opts, Model};
use needle_index::{Index, ScanImpl};
use proptest::prelude::*;
use std::io::Write;

#[derive(Debug, Clone)]
enum Op {
    Append { part: u8, values: Vec<u16> },
    Delete { part: u8, pick: Vec<u16> },
    Remove { part: u8 },
    Flush,
    Merge,
    MaybeMerge,
    Reopen,
    TornCrash { garbage: Vec<u8> },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6, prop::collection::vec(0u16..400, 0..120)).prop_map(|(part, values)| Op::Append { part, values }),
        3 => (0u8..6, prop::collection::vec(any::<u16>(), 1..10)).prop_map(|(part, pick)| Op::Delete { part, pick }),
        1 => (0u8..6).prop_map(|part| Op::Remove { part }),
        2 => Just(Op::Flush),
        1 => Just(Op::Merge),
        1 => Just(Op::MaybeMerge),
        1 => Just(Op::Reopen),
        1 => prop::collection::vec(any::<u8>(), 1..40).prop_map(|garbage| Op::TornCrash { garbage }),
    ]
}

fn run(ops: Vec<Op>, buckets: u32, bits: u32) {
    let dir = tempfile::tempdir().unwrap();
    let mut ix = Some(create(dir.path(), buckets, bits));
    let mut m = Model::default();
    // Values are hashed from (partition universe value) so partitions share values too.
    let h = |v: u16| needle_index::hash_i64(v as i64);
    for op in ops {
        let cur = ix.as_ref().unwrap();
        match op {
            Op::Append { part, values } => {
                let id = format!("p{part}");
                let hs: Vec<u64> = values.iter().map(|&v| h(v)).collect();
                cur.append_hashes(&id, &hs).unwrap();
                m.parts.entry(id).or_default().extend(hs);
            }
            Op::Delete { part, pick } => {
                let id = format!("p{part}");
                let Some(vals) = m.parts.get_mut(&id) else {
                    continue;
                };
                if vals.is_empty() {
                    continue;
                }
                let mut del = Vec::new();
                for p in pick {
                    if vals.is_empty() {
                        break;
                    }
                    del.push(vals.swap_remove(p as usize % vals.len()));
                }
                cur.delete_hashes(&id, &del).unwrap();
            }
            Op::Remove { part } => {
                let id = format!("p{part}");
                let r = cur.remove_partition(&id);
                assert_eq!(r.is_ok(), m.parts.remove(&id).is_some(), "{r:?}");
            }
            Op::Flush => cur.flush().unwrap(),
            Op::Merge => {
                cur.merge().unwrap();
            }
            Op::MaybeMerge => {
                cur.maybe_merge(2).unwrap();
            }
            Op::Reopen => {
                drop(ix.take());
                ix = Some(Index::open(dir.path(), fast_opts()).unwrap());
            }
            Op::TornCrash { garbage } => {
                drop(ix.take());
                // A crash mid-append leaves a partial record at the end of the newest log.
                let mut wals: Vec<_> = std::fs::read_dir(dir.path())
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("wal-"))
                    .collect();
                wals.sort();
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(wals.last().unwrap())
                    .unwrap();
                // A plausible torn record: a valid length header, then too few bytes.
                let len = 1000u32.to_le_bytes();
                f.write_all(&len).unwrap();
                f.write_all(&crc32c::crc32c(&len).to_le_bytes()).unwrap();
                f.write_all(&garbage).unwrap();
                drop(f);
                ix = Some(Index::open(dir.path(), fast_opts()).unwrap());
            }
        }
        m.check(ix.as_ref().unwrap());
    }
    let ix = ix.unwrap();
    let st = ix.stats();
    assert_eq!(
        st.values,
        m.parts.values().map(|v| v.len() as u64).sum::<u64>()
    );
    assert_eq!(st.distinct_ids, m.parts.len());
    ix.flush().unwrap();
    ix.merge().unwrap();
    m.check(&ix);
    assert_eq!(ix.stats().removed_partitions, 0);
    assert!(ix.segment_count() <= 1);
    // A full merge leaves one entry per id, holding exactly the live values.
    let parts = ix.partitions();
    assert_eq!(parts.len(), m.parts.len(), "{parts:?}");
    for p in parts {
        assert_eq!(p.values, m.parts[&p.id].len() as u64, "{p:?}");
    }
}

proptest! {
    // PROPTEST_CASES=1000 for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_false_negatives_f8(ops in prop::collection::vec(op(), 1..40)) {
        run(ops, 61, 8);
    }

    #[test]
    fn no_false_negatives_f16(ops in prop::collection::vec(op(), 1..40)) {
        run(ops, 128, 16);
    }

    #[test]
    fn no_false_negatives_f32(ops in prop::collection::vec(op(), 1..30)) {
        run(ops, 7, 32);
    }
}

#[test]
fn long_sequence_with_background_merger() {
    let dir = tempfile::tempdir().unwrap();
    let ix = std::sync::Arc::new(create(dir.path(), 500, 16));
    let merger = ix.start_merger(3, std::time::Duration::from_millis(1));
    let mut m = Model::default();
    let mut st = 42u64;
    let mut next = || {
        st = st
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        st >> 11
    };
    for round in 0..300u64 {
        let id = format!("part-{}", next() % 40);
        match next() % 10 {
            0..=5 => {
                let hs: Vec<u64> = (0..next() % 2000)
                    .map(|i| needle_index::hash_i64((round * 10_000 + i) as i64))
                    .collect();
                ix.append_hashes(&id, &hs).unwrap();
                m.parts.entry(id).or_default().extend(hs);
            }
            6 | 7 => {
                if let Some(v) = m.parts.get_mut(&id) {
                    let n = (v.len() / 3).min(50);
                    let del: Vec<u64> = v.drain(..n).collect();
                    ix.delete_hashes(&id, &del).unwrap();
                }
            }
            8 => {
                if m.parts.remove(&id).is_some() {
                    ix.remove_partition(&id).unwrap();
                }
            }
            _ => ix.flush().unwrap(),
        }
        if round % 25 == 0 {
            m.check(&ix);
        }
    }
    m.check(&ix);
    assert!(merger.errors().is_empty(), "{:?}", merger.errors());
    merger.stop();
    let ix = std::sync::Arc::try_unwrap(ix).ok().unwrap();
    drop(ix);
    let ix = Index::open(dir.path(), fast_opts()).unwrap();
    m.check(&ix);
}

#[test]
fn simd_and_portable_scans_answer_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 300, 8);
    for p in 0..50 {
        let hs: Vec<u64> = (0..500)
            .map(|i| needle_index::hash_i64(p * 1000 + i))
            .collect();
        ix.append_hashes(&format!("p{p}"), &hs).unwrap();
    }
    ix.flush().unwrap();
    drop(ix);
    let mut answers = Vec::new();
    for imp in [ScanImpl::Portable, ScanImpl::Sse2, ScanImpl::Avx2] {
        if !imp.supported() {
            continue;
        }
        let ix = Index::open(
            dir.path(),
            needle_index::Options {
                scan: imp,
                ..fast_opts()
            },
        )
        .unwrap();
        let a: Vec<Vec<String>> = (0..20_000)
            .map(|v| ix.query_hash(needle_index::hash_i64(v)).unwrap())
            .collect();
        answers.push(a);
    }
    for a in &answers[1..] {
        assert_eq!(a, &answers[0]);
    }
}

#[test]
fn merge_shrinks_partitions_after_deletes_and_combines_entries() {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 1000, 16);
    let hs: Vec<u64> = (0..20_000).map(needle_index::hash_i64).collect();
    ix.append_hashes("big", &hs).unwrap();
    ix.append_hashes("split", &hs[..3000]).unwrap();
    ix.flush().unwrap();
    ix.append_hashes("split", &hs[3000..6000]).unwrap();
    ix.flush().unwrap();
    let before: u32 = ix
        .partitions()
        .iter()
        .filter(|p| p.id == "big")
        .map(|p| p.slots)
        .sum();
    ix.delete_hashes("big", &hs[..18_000]).unwrap();
    ix.merge().unwrap();
    let parts = ix.partitions();
    let big = parts.iter().find(|p| p.id == "big").unwrap();
    assert!(
        big.slots < before,
        "{} slots before, {} after",
        before,
        big.slots
    );
    assert_eq!(big.values, 2000);
    assert_eq!(parts.iter().filter(|p| p.id == "split").count(), 1);
    for &h in &hs[18_000..] {
        assert!(ix.query_hash(h).unwrap().contains(&"big".to_string()));
    }
    for &h in &hs[..6000] {
        assert!(ix.query_hash(h).unwrap().contains(&"split".to_string()));
    }
    drop(ix);
    let ix = needle_index::Index::open(dir.path(), fast_opts()).unwrap();
    for &h in &hs[18_000..] {
        assert!(ix.query_hash(h).unwrap().contains(&"big".to_string()));
    }
}
