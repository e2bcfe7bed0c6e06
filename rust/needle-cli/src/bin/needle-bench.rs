//! Benchmark driver for the partition index, reproducing the experiments of the blog post
//! 'Efficiently finding candidate partitions for point queries' on synthetic partitions of
//! consecutive integers (partition p holds p·E .. (p+1)·E − 1), so every answer is checkable.
//! Each command prints one JSON object on stdout.
//!
//! ```text
//! needle-bench occupancy [--values N]
//! needle-bench build DIR --partitions P --values E --buckets B [--bits F]
//! needle-bench query DIR --partitions P --values E --queries N [--threads T] [--cold] [--no-verify]
//! needle-bench append DIR --count C --values E --buckets B
//! ```

use needle_index::filter::PartitionFilter;
use needle_index::{hash_i64, Config, Index, Options};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn args() -> (String, Vec<String>, HashMap<String, String>) {
    let mut pos = Vec::new();
    let mut flags = HashMap::new();
    let mut it = std::env::args().skip(1).peekable();
    let cmd = it.next().expect("command");
    while let Some(a) = it.next() {
        if let Some(k) = a.strip_prefix("--") {
            let v = match it.peek() {
                Some(n) if !n.starts_with("--") => it.next().unwrap(),
                _ => "true".to_string(),
            };
            flags.insert(k.to_string(), v);
        } else {
            pos.push(a);
        }
    }
    (cmd, pos, flags)
}

fn flag<T: std::str::FromStr>(f: &HashMap<String, String>, k: &str, d: T) -> T {
    f.get(k)
        .map(|v| v.parse().unwrap_or_else(|_| panic!("bad --{k}")))
        .unwrap_or(d)
}

fn main() {
    let (cmd, pos, f) = args();
    match cmd.as_str() {
        "occupancy" => occupancy(flag(&f, "values", 100_000u64)),
        "build" => build(&pos[0], &f),
        "query" => query(&pos[0], &f),
        "append" => append(&pos[0], &f),
        c => panic!("unknown command {c}"),
    }
}

/// Occupancy of one partition of N values against the number of buckets.
fn occupancy(n: u64) {
    let hs: Vec<u64> = (0..n as i64).map(hash_i64).collect();
    let mut rows = Vec::new();
    let mut b = 100u32;
    while b < 100_000 {
        let fl = PartitionFilter::build(&hs, b, 16);
        rows.push(format!(
            "[{b},{},{:.4}]",
            fl.slots,
            n as f64 / (b as f64 * fl.slots as f64)
        ));
        b += 500;
    }
    println!("{{\"experiment\":\"occupancy\",\"values\":{n},\"columns\":[\"buckets\",\"slots\",\"occupancy\"],\"rows\":[{}]}}", rows.join(","));
}

fn hashes_of(p: u64, e: u64) -> Vec<u64> {
    ((p * e) as i64..((p + 1) * e) as i64)
        .map(hash_i64)
        .collect()
}

/// Adds partitions up to P (continuing an existing index), then flushes and merges into one segment.
fn build(dir: &str, f: &HashMap<String, String>) {
    let p: u64 = flag(f, "partitions", 1000);
    let e: u64 = flag(f, "values", 100_000);
    let cfg = Config {
        buckets: flag(f, "buckets", 38_000),
        fingerprint_bits: flag(f, "bits", 16),
    };
    // Bulk load: no fsync per append (the final flush and merge are synced by the
    // manifest protocol); a crash during a bulk load means rerunning it.
    let opts = Options {
        sync: false,
        flush_bytes: 512 << 20,
        ..Options::default()
    };
    let ix = if std::path::Path::new(dir).join("MANIFEST").exists() {
        Index::open(dir, opts).unwrap()
    } else {
        Index::create(dir, cfg, opts).unwrap()
    };
    let start = ix.stats().distinct_ids as u64;
    let ix = Arc::new(ix);
    let next = AtomicUsize::new(start as usize);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as u64;
                if i >= p {
                    break;
                }
                ix.append_hashes(&format!("p{i}"), &hashes_of(i, e))
                    .unwrap();
            });
        }
    });
    ix.flush().unwrap();
    let append_s = t0.elapsed().as_secs_f64();
    let segs_before = ix.segment_count();
    let bytes_before = ix.stats().bytes_on_disk;
    let t1 = Instant::now();
    let m = ix.merge().unwrap();
    let merge_s = t1.elapsed().as_secs_f64();
    let st = ix.stats();
    let (inputs, merged_bytes) = m.map(|m| (m.inputs, m.bytes)).unwrap_or((0, 0));
    println!(
        "{{\"experiment\":\"build\",\"partitions\":{p},\"added\":{},\"values_per_partition\":{e},\"buckets\":{},\"bits\":{},\"append_seconds\":{append_s:.3},\"append_values_per_second\":{:.0},\"segments_before_merge\":{segs_before},\"merge_inputs\":{inputs},\"merge_seconds\":{merge_s:.3},\"merge_read_bytes\":{bytes_before},\"merge_written_bytes\":{merged_bytes},\"merge_mb_per_second\":{:.1},\"values\":{},\"occupancy\":{:.4},\"bytes_on_disk\":{},\"bytes_per_value\":{:.3},\"avg_slots\":{:.3}}}",
        p - start,
        cfg.buckets,
        cfg.fingerprint_bits,
        ((p - start) * e) as f64 / append_s,
        (bytes_before + merged_bytes) as f64 / 1e6 / merge_s.max(1e-9),
        st.values,
        st.occupancy,
        st.bytes_on_disk,
        st.bytes_on_disk as f64 / st.values.max(1) as f64,
        st.slots as f64 / st.buckets as f64 / st.partitions.max(1) as f64,
    );
}

fn drop_caches() {
    sync_disks();
    if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        eprintln!("cannot drop the page cache ({e}); the cold run is not cold");
    }
}

fn sync_disks() {
    let _ = std::process::Command::new("sync").status();
}

/// (on-CPU ns, ns waiting for a CPU) of the calling thread, from the scheduler's statistics.
fn schedstat() -> (u64, u64) {
    let t = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut it = t.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("0")
        .to_string()
}

fn pct(sorted: &[u64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0
}

/// Per thread: latencies (ns), false candidates, absent queries, (CPU ns, run-queue wait ns).
type ThreadResult = (Vec<u64>, u64, u64, (u64, u64));

/// Query latency and throughput: half present values (checked: no false negatives), half
/// absent (false positives counted).
fn query(dir: &str, f: &HashMap<String, String>) {
    let p: u64 = flag(f, "partitions", 1000);
    let e: u64 = flag(f, "values", 100_000);
    let n: usize = flag(f, "queries", 20_000);
    let threads: usize = flag(f, "threads", 1);
    let cold = f.contains_key("cold");
    let verify = !f.contains_key("no-verify");
    let ix = Index::open(
        dir,
        Options {
            verify_reads: verify,
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    let st = ix.stats();
    let width = st.fingerprint_bits as f64 / 8.0;
    let row_bytes = st.slots as f64 / st.buckets as f64 * width;
    if cold {
        drop_caches();
    } else {
        // Warm-up: touch every row once so the page cache holds the index.
        for v in 0..(st.buckets as i64 * 4) {
            ix.count_candidates(hash_i64(-(v + 1))).unwrap();
        }
    }
    let per = n / threads;
    let t0 = Instant::now();
    let load = loadavg();
    let results: Vec<ThreadResult> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let ix = &ix;
                s.spawn(move || {
                    let mut lat = Vec::with_capacity(per);
                    let mut rng = 0x243F_6A88_85A3_08D3u64 ^ ((t as u64 + 1) * 0x9E37_79B9);
                    let (mut false_cands, mut absent) = (0u64, 0u64);
                    let s0 = schedstat();
                    for i in 0..per {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let present = i % 2 == 0;
                        let v = if present {
                            (rng % (p * e)) as i64
                        } else {
                            (p * e + 1_000_000_000_000 + rng % (1 << 40)) as i64
                        };
                        let q = Instant::now();
                        let c = ix.query_hash(hash_i64(v)).unwrap();
                        lat.push(q.elapsed().as_nanos() as u64);
                        if present {
                            let want = format!("p{}", v as u64 / e);
                            assert!(c.contains(&want), "false negative for {v}");
                            false_cands += c.len() as u64 - 1;
                        } else {
                            absent += 1;
                            false_cands += c.len() as u64;
                        }
                    }
                    let s1 = schedstat();
                    (lat, false_cands, absent, (s1.0 - s0.0, s1.1 - s0.1))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    let mut lat: Vec<u64> = results.iter().flat_map(|r| r.0.iter().copied()).collect();
    let fc: u64 = results.iter().map(|r| r.1).sum();
    let cpu_ns: u64 = results.iter().map(|r| r.3 .0).sum();
    let wait_ns: u64 = results.iter().map(|r| r.3 .1).sum();
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len() as f64 / 1000.0;
    let qps = lat.len() as f64 / wall;
    // Each query reads and scans two rows per segment.
    let bytes_per_query = 2.0 * row_bytes;
    println!(
        "{{\"experiment\":\"query\",\"partitions\":{p},\"values_per_partition\":{e},\"indexed_values\":{},\"buckets\":{},\"segments\":{},\"threads\":{threads},\"cold\":{cold},\"verify_reads\":{verify},\"queries\":{},\"latency_us\":{{\"mean\":{mean:.2},\"p50\":{:.2},\"p90\":{:.2},\"p99\":{:.2},\"max\":{:.2}}},\"queries_per_second\":{qps:.1},\"bytes_per_query\":{bytes_per_query:.0},\"read_mb_per_second\":{:.1},\"scan_gb_per_second_per_thread\":{:.2},\"false_candidates_per_query\":{:.4},\"measured_fpr_per_partition\":{:.3e},\"expected_fpr_per_partition\":{:.3e},\"occupancy\":{:.4},\"bytes_on_disk\":{},\"cpu_us_per_query\":{:.2},\"runqueue_wait_us_per_query\":{:.2},\"loadavg_1m_before\":{load}}}",
        st.values,
        st.buckets,
        st.segments,
        lat.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        *lat.last().unwrap() as f64 / 1000.0,
        qps * bytes_per_query / 1e6,
        bytes_per_query / (mean * 1000.0),
        fc as f64 / lat.len() as f64,
        fc as f64 / (lat.len() as f64 * p as f64),
        st.expected_fpr,
        st.occupancy,
        st.bytes_on_disk,
        cpu_ns as f64 / lat.len() as f64 / 1000.0,
        wait_ns as f64 / lat.len() as f64 / 1000.0,
    );
}

/// Appends C new partitions of E values each with full durability (WAL fsync per append),
/// then flushes: the amortized cost of adding a partition.
fn append(dir: &str, f: &HashMap<String, String>) {
    let c: u64 = flag(f, "count", 50);
    let e: u64 = flag(f, "values", 100_000);
    let cfg = Config {
        buckets: flag(f, "buckets", 38_000),
        fingerprint_bits: 16,
    };
    let _ = std::fs::remove_dir_all(dir);
    let ix = Index::create(dir, cfg, Options::default()).unwrap();
    let inputs: Vec<Vec<u64>> = (0..c).map(|i| hashes_of(i, e)).collect();
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for (i, hs) in inputs.iter().enumerate() {
        let q = Instant::now();
        ix.append_hashes(&format!("p{i}"), hs).unwrap();
        lat.push(q.elapsed().as_nanos() as u64);
    }
    let appended = t0.elapsed().as_secs_f64();
    let tf = Instant::now();
    ix.flush().unwrap();
    let flush_s = tf.elapsed().as_secs_f64();
    let total = t0.elapsed().as_secs_f64();
    lat.sort_unstable();
    let t_build = Instant::now();
    for hs in inputs.iter().take(10) {
        std::hint::black_box(PartitionFilter::build(hs, cfg.buckets, 16));
    }
    let build_ms = t_build.elapsed().as_secs_f64() * 1000.0 / 10f64.min(c as f64);
    println!(
        "{{\"experiment\":\"append\",\"partitions\":{c},\"values_per_partition\":{e},\"buckets\":{},\"durable\":true,\"append_ms\":{{\"mean\":{:.3},\"p50\":{:.3},\"p99\":{:.3}}},\"filter_build_ms\":{build_ms:.3},\"flush_seconds\":{flush_s:.3},\"amortized_ms_per_partition\":{:.3},\"appends_only_seconds\":{appended:.3}}}",
        cfg.buckets,
        lat.iter().sum::<u64>() as f64 / lat.len() as f64 / 1e6,
        pct(&lat, 0.5) / 1000.0,
        pct(&lat, 0.99) / 1000.0,
        total * 1000.0 / c as f64,
    );
}
