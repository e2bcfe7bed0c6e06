//! Readers query while a writer appends, deletes, removes, flushes and merges: readers
//! never block, never fail and never miss a value that stays in the index.

mod common;
use common::create;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn readers_see_stable_values_throughout_writes_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let ix = Arc::new(create(dir.path(), 700, 16));
    // Values 0..20,000 in "stable" stay for the whole test.
    let stable: Vec<u64> = (0..20_000).map(needle_index::hash_i64).collect();
    ix.append_hashes("stable", &stable).unwrap();
    let stop = AtomicBool::new(false);
    let queries = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (ix, stable, stop, queries) = (&ix, &stable, &stop, &queries);
            s.spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    let c = ix.query_hash(stable[i % stable.len()]).unwrap();
                    assert!(
                        c.iter().any(|id| id == "stable"),
                        "stable value {i} missing"
                    );
                    i += 7;
                    queries.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for round in 0..60i64 {
            let hs: Vec<u64> = (0..3000)
                .map(|v| needle_index::hash_i64(1_000_000 + round * 10_000 + v))
                .collect();
            let id = format!("churn-{}", round % 7);
            ix.append_hashes(&id, &hs).unwrap();
            ix.delete_hashes(&id, &hs[..500]).unwrap();
            if round % 5 == 4 {
                ix.remove_partition(&format!("churn-{}", (round + 3) % 7))
                    .ok();
            }
            if round % 3 == 0 {
                ix.flush().unwrap();
            }
            if round % 10 == 9 {
                ix.merge().unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(queries.load(Ordering::Relaxed) > 1000);
}

/// Deletes racing merges that rebuild (combine) entries: the deletes made while a merge
/// runs are carried into the rebuilt filter, none lost and none applied twice.
#[test]
fn deletes_during_rebuilding_merges_are_carried_over() {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 500, 16);
    let mut kept: Vec<u64> = Vec::new();
    for round in 0..12i64 {
        let vals: Vec<u64> = (0..4000)
            .map(|v| needle_index::hash_i64(round * 100_000 + v))
            .collect();
        ix.append_hashes("dup", &vals[..2000]).unwrap();
        ix.append_hashes("dup", &vals[2000..]).unwrap();
        ix.flush().unwrap();
        let (del, keep) = vals.split_at(1500);
        kept.extend_from_slice(keep);
        std::thread::scope(|s| {
            let ix = &ix;
            s.spawn(move || {
                for chunk in del.chunks(25) {
                    ix.delete_hashes("dup", chunk).unwrap();
                }
            });
            for _ in 0..4 {
                ix.merge().unwrap();
            }
        });
        let total: u64 = ix
            .partitions()
            .iter()
            .filter(|p| !p.removed)
            .map(|p| p.values)
            .sum();
        assert_eq!(total, kept.len() as u64);
    }
    ix.merge().unwrap();
    assert_eq!(ix.partitions().len(), 1);
    for &h in &kept {
        assert!(ix.query_hash(h).unwrap().contains(&"dup".to_string()));
    }
    drop(ix);
    let ix = needle_index::Index::open(dir.path(), common::fast_opts()).unwrap();
    assert_eq!(ix.partitions()[0].values, kept.len() as u64);
    for &h in &kept {
        assert!(ix.query_hash(h).unwrap().contains(&"dup".to_string()));
    }
}

/// Snapshots opened without a lock while the writer appends, flushes and merges (here a thread
/// of the same process; the lock is the only thing that differs for another process): each
/// snapshot opens, and holds every partition appended before it was opened.
#[test]
fn snapshots_follow_a_writer_without_blocking_it() {
    let dir = tempfile::tempdir().unwrap();
    let ix = create(dir.path(), 500, 16);
    let done = AtomicUsize::new(0); // partitions appended and durable
    let stop = AtomicBool::new(false);
    let snapshots = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (done, stop, snapshots, path) = (&done, &stop, &snapshots, dir.path());
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = done.load(Ordering::SeqCst);
                let snap = needle_index::Index::open_snapshot(path, common::fast_opts())
                    .expect("a snapshot opens while the writer works");
                for p in 0..n {
                    let c = snap
                        .query_hash(needle_index::hash_i64(p as i64 * 1000))
                        .unwrap();
                    assert!(
                        c.contains(&format!("p{p}")),
                        "partition p{p} missing from a snapshot"
                    );
                }
                snapshots.fetch_add(1, Ordering::SeqCst);
            }
        });
        for p in 0..400usize {
            let hs: Vec<u64> = (0..200)
                .map(|v| needle_index::hash_i64(p as i64 * 1000 + v))
                .collect();
            ix.append_hashes(&format!("p{p}"), &hs).unwrap();
            done.store(p + 1, Ordering::SeqCst);
            if p % 20 == 19 {
                ix.flush().unwrap();
                // The reader may be slower than the writer on a busy machine: let it finish a
                // snapshot before writing on, so that at least 20 of them overlap the writes.
                let seen = snapshots.load(Ordering::SeqCst);
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while snapshots.load(Ordering::SeqCst) == seen
                    && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            if p % 100 == 99 {
                ix.merge().unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(
        snapshots.load(Ordering::Relaxed) > 10,
        "too few snapshots to mean anything"
    );
    // The writer never waited: it still holds its exclusive lock, and a locking reader is refused.
    assert!(matches!(
        needle_index::Index::open(
            dir.path(),
            needle_index::Options {
                read_only: true,
                ..common::fast_opts()
            }
        ),
        Err(needle_index::Error::Locked(_))
    ));
}
