//! Benchmark driver for the partition index, reproducing the experiments of the blog post
//! 'Efficiently finding candidate partitions for point queries' on synthetic partitions of
//! consecutive integers (partition p holds p·E .. (p+1)·E − 1), so every answer is checkable.
//! Each command prints one JSON object on stdout (`bench/partition-index/run.sh` collects them).

use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use needle_index::filter::PartitionFilter;
use needle_index::{hash_i64, Config, Index, Options};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "needle-index-bench",
    about = "Benchmarks of the partition index; one JSON object per run on stdout"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Occupancy of one partition's filter against the number of buckets.
    Occupancy {
        /// Values in the partition.
        #[arg(long, default_value_t = 100_000)]
        values: u64,
    },
    /// Adds partitions up to --partitions (continuing an index in DIR), then flushes and merges.
    Build {
        dir: PathBuf,
        #[arg(long, default_value_t = 1000)]
        partitions: u64,
        /// Values per partition.
        #[arg(long, default_value_t = 100_000)]
        values: u64,
        #[arg(long, default_value_t = 38_000)]
        buckets: u32,
        /// Fingerprint bits.
        #[arg(long, default_value_t = 16)]
        bits: u32,
    },
    /// Query latency and throughput: half present values (no false negative allowed), half absent.
    Query {
        dir: PathBuf,
        #[arg(long, default_value_t = 1000)]
        partitions: u64,
        #[arg(long, default_value_t = 100_000)]
        values: u64,
        #[arg(long, default_value_t = 20_000)]
        queries: usize,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Drop the page cache first (needs root).
        #[arg(long)]
        cold: bool,
        /// Do not check the rows' checksums on reads.
        #[arg(long)]
        no_verify: bool,
    },
    /// Appends --count partitions with full durability (a WAL fsync per append), then flushes.
    Append {
        dir: PathBuf,
        #[arg(long, default_value_t = 50)]
        count: u64,
        #[arg(long, default_value_t = 100_000)]
        values: u64,
        #[arg(long, default_value_t = 38_000)]
        buckets: u32,
    },
}

fn main() {
    let out = match Cli::parse().command {
        Command::Occupancy { values } => occupancy(values),
        Command::Build {
            dir,
            partitions,
            values,
            buckets,
            bits,
        } => build(
            &dir,
            partitions,
            values,
            Config {
                buckets,
                fingerprint_bits: bits,
            },
        ),
        Command::Query {
            dir,
            partitions,
            values,
            queries,
            threads,
            cold,
            no_verify,
        } => query(&dir, partitions, values, queries, threads, cold, !no_verify),
        Command::Append {
            dir,
            count,
            values,
            buckets,
        } => append(&dir, count, values, buckets),
    };
    println!("{out}");
}

/// Occupancy of one partition of `n` values against the number of buckets.
fn occupancy(n: u64) -> serde_json::Value {
    let hs: Vec<u64> = (0..n as i64).map(hash_i64).collect();
    let rows: Vec<_> = (100u32..100_000)
        .step_by(500)
        .map(|b| {
            let fl = PartitionFilter::build(&hs, b, 16);
            json!([b, fl.slots, n as f64 / (b as f64 * fl.slots as f64)])
        })
        .collect();
    json!({"experiment": "occupancy", "values": n, "columns": ["buckets", "slots", "occupancy"], "rows": rows})
}

fn hashes_of(p: u64, e: u64) -> Vec<u64> {
    ((p * e) as i64..((p + 1) * e) as i64)
        .map(hash_i64)
        .collect()
}

/// Adds partitions up to `p` (continuing an existing index), then flushes and merges into one segment.
fn build(dir: &Path, p: u64, e: u64, cfg: Config) -> serde_json::Value {
    // Bulk load: no fsync per append (the final flush and merge are synced by the
    // manifest protocol); a crash during a bulk load means rerunning it.
    let opts = Options {
        sync: false,
        flush_bytes: 512 << 20,
        ..Options::default()
    };
    let ix = if dir.join("MANIFEST").exists() {
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
    json!({
        "experiment": "build",
        "partitions": p,
        "added": p - start,
        "values_per_partition": e,
        "buckets": cfg.buckets,
        "bits": cfg.fingerprint_bits,
        "append_seconds": append_s,
        "append_values_per_second": ((p - start) * e) as f64 / append_s,
        "segments_before_merge": segs_before,
        "merge_inputs": inputs,
        "merge_seconds": merge_s,
        "merge_read_bytes": bytes_before,
        "merge_written_bytes": merged_bytes,
        "merge_mb_per_second": (bytes_before + merged_bytes) as f64 / 1e6 / merge_s.max(1e-9),
        "values": st.values,
        "occupancy": st.occupancy,
        "bytes_on_disk": st.bytes_on_disk,
        "bytes_per_value": st.bytes_on_disk as f64 / st.values.max(1) as f64,
        "avg_slots": st.slots as f64 / st.buckets as f64 / st.partitions.max(1) as f64,
    })
}

fn drop_caches() {
    let _ = std::process::Command::new("sync").status();
    if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        eprintln!("cannot drop the page cache ({e}); the cold run is not cold");
    }
}

/// (on-CPU ns, ns waiting for a CPU) of the calling thread, from the scheduler's statistics.
fn schedstat() -> (u64, u64) {
    let t = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut it = t.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// The 1-minute load average.
fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Latencies in nanoseconds, from 1 ns to a minute (longer ones count as a minute), 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// One thread's queries: latencies (ns), false candidates, CPU ns and run-queue wait ns.
struct ThreadResult {
    latency: Histogram<u64>,
    false_candidates: u64,
    cpu_ns: u64,
    wait_ns: u64,
}

/// Query latency and throughput: half present values (checked: no false negatives), half
/// absent (false positives counted).
fn query(
    dir: &Path,
    p: u64,
    e: u64,
    n: usize,
    threads: usize,
    cold: bool,
    verify: bool,
) -> serde_json::Value {
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
                    let mut latency = histogram();
                    let mut rng = 0x243F_6A88_85A3_08D3u64 ^ ((t as u64 + 1) * 0x9E37_79B9);
                    let mut false_candidates = 0u64;
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
                        latency.saturating_record(q.elapsed().as_nanos() as u64);
                        if present {
                            let want = format!("p{}", v as u64 / e);
                            assert!(c.contains(&want), "false negative for {v}");
                            false_candidates += c.len() as u64 - 1;
                        } else {
                            false_candidates += c.len() as u64;
                        }
                    }
                    let s1 = schedstat();
                    ThreadResult {
                        latency,
                        false_candidates,
                        cpu_ns: s1.0 - s0.0,
                        wait_ns: s1.1 - s0.1,
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    let mut lat = histogram();
    for r in &results {
        lat.add(&r.latency).expect("histograms of the same range");
    }
    let queries = lat.len() as f64;
    let fc: u64 = results.iter().map(|r| r.false_candidates).sum();
    let cpu_ns: u64 = results.iter().map(|r| r.cpu_ns).sum();
    let wait_ns: u64 = results.iter().map(|r| r.wait_ns).sum();
    let us = |q: f64| lat.value_at_quantile(q) as f64 / 1000.0;
    let mean = lat.mean() / 1000.0;
    let qps = queries / wall;
    // Each query reads and scans two rows per segment.
    let bytes_per_query = 2.0 * row_bytes;
    json!({
        "experiment": "query",
        "partitions": p,
        "values_per_partition": e,
        "indexed_values": st.values,
        "buckets": st.buckets,
        "segments": st.segments,
        "threads": threads,
        "cold": cold,
        "verify_reads": verify,
        "queries": lat.len(),
        "latency_us": {"mean": mean, "p50": us(0.5), "p90": us(0.9), "p99": us(0.99), "max": lat.max() as f64 / 1000.0},
        "queries_per_second": qps,
        "bytes_per_query": bytes_per_query,
        "read_mb_per_second": qps * bytes_per_query / 1e6,
        "scan_gb_per_second_per_thread": bytes_per_query / (mean * 1000.0),
        "false_candidates_per_query": fc as f64 / queries,
        "measured_fpr_per_partition": fc as f64 / (queries * p as f64),
        "expected_fpr_per_partition": st.expected_fpr,
        "occupancy": st.occupancy,
        "bytes_on_disk": st.bytes_on_disk,
        "cpu_us_per_query": cpu_ns as f64 / queries / 1000.0,
        "runqueue_wait_us_per_query": wait_ns as f64 / queries / 1000.0,
        "loadavg_1m_before": load,
    })
}

/// Appends `c` new partitions of `e` values each with full durability (WAL fsync per append),
/// then flushes: the amortized cost of adding a partition.
fn append(dir: &Path, c: u64, e: u64, buckets: u32) -> serde_json::Value {
    let cfg = Config {
        buckets,
        fingerprint_bits: 16,
    };
    let _ = std::fs::remove_dir_all(dir);
    let ix = Index::create(dir, cfg, Options::default()).unwrap();
    let inputs: Vec<Vec<u64>> = (0..c).map(|i| hashes_of(i, e)).collect();
    let mut lat = histogram();
    let t0 = Instant::now();
    for (i, hs) in inputs.iter().enumerate() {
        let q = Instant::now();
        ix.append_hashes(&format!("p{i}"), hs).unwrap();
        lat.saturating_record(q.elapsed().as_nanos() as u64);
    }
    let appended = t0.elapsed().as_secs_f64();
    let tf = Instant::now();
    ix.flush().unwrap();
    let flush_s = tf.elapsed().as_secs_f64();
    let total = t0.elapsed().as_secs_f64();
    let t_build = Instant::now();
    for hs in inputs.iter().take(10) {
        std::hint::black_box(PartitionFilter::build(hs, cfg.buckets, 16));
    }
    let build_ms = t_build.elapsed().as_secs_f64() * 1000.0 / 10f64.min(c as f64);
    let ms = |q: f64| lat.value_at_quantile(q) as f64 / 1e6;
    json!({
        "experiment": "append",
        "partitions": c,
        "values_per_partition": e,
        "buckets": cfg.buckets,
        "durable": true,
        "append_ms": {"mean": lat.mean() / 1e6, "p50": ms(0.5), "p99": ms(0.99)},
        "filter_build_ms": build_ms,
        "flush_seconds": flush_s,
        "amortized_ms_per_partition": total * 1000.0 / c as f64,
        "appends_only_seconds": appended,
    })
}
