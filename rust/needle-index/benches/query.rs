//! Micro-benchmarks: the fingerprint row scan (per implementation), row checksums, filter
//! builds, and point queries against a small index in the page cache.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use needle_index::filter::PartitionFilter;
use needle_index::{hash_i64, Config, Index, Options, ScanImpl};
use std::hint::black_box;

fn scan(c: &mut Criterion) {
    let mut g = c.benchmark_group("row_scan");
    // A row of the blog post's configuration at 10,000 partitions: ~32,000 16-bit slots.
    let row: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    g.throughput(Throughput::Bytes(row.len() as u64));
    for imp in [ScanImpl::Portable, ScanImpl::Sse2, ScanImpl::Avx2] {
        if !imp.supported() {
            continue;
        }
        for width in [1usize, 2, 4] {
            g.bench_with_input(
                BenchmarkId::new(format!("{imp:?}"), width * 8),
                &width,
                |b, &w| {
                    let mut out = Vec::new();
                    b.iter(|| {
                        out.clear();
                        imp.scan(black_box(&row), w, 0xFFFF_FFFF, &mut out);
                        black_box(out.len())
                    })
                },
            );
        }
    }
    g.bench_function("crc32c", |b| b.iter(|| crc32c::crc32c(black_box(&row))));
    g.finish();
}

fn build(c: &mut Criterion) {
    let hs: Vec<u64> = (0..100_000).map(hash_i64).collect();
    let mut g = c.benchmark_group("filter_build");
    g.sample_size(10);
    g.throughput(Throughput::Elements(hs.len() as u64));
    g.bench_function("100k_values_38000_buckets", |b| {
        b.iter(|| PartitionFilter::build(black_box(&hs), 38_000, 16))
    });
    g.finish();
}

fn query(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ix = Index::create(
        dir.path(),
        Config {
            buckets: 4_000,
            fingerprint_bits: 16,
        },
        Options {
            sync: false,
            ..Options::default()
        },
    )
    .unwrap();
    for p in 0..200i64 {
        let hs: Vec<u64> = (p * 10_000..(p + 1) * 10_000).map(hash_i64).collect();
        ix.append_hashes(&format!("p{p}"), &hs).unwrap();
    }
    ix.flush().unwrap();
    ix.merge().unwrap();
    let mut g = c.benchmark_group("query_200x10k");
    let mut v = 0i64;
    g.bench_function("present", |b| {
        b.iter(|| {
            v = (v + 7919) % 2_000_000;
            ix.count_candidates(hash_i64(v)).unwrap()
        })
    });
    g.bench_function("absent", |b| {
        b.iter(|| {
            v += 1;
            ix.count_candidates(hash_i64(-v)).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, scan, build, query);
criterion_main!(benches);
