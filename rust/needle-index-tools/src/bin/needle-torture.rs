//! Stress writer for crash tests: performs random appends, value deletes, partition
//! removals, flushes and merges (with a background merger running) on an index, printing
//! `B <op>` before each operation and `A` once it is acknowledged (durable), until killed.
//!
//! Usage: `needle-torture INDEX SEED`

use clap::Parser;
use needle_index::{hash_i64, Config, Index, Options};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Random durable writes on an index until killed, each announced before and after.
#[derive(Parser)]
#[command(name = "needle-torture")]
struct Args {
    /// The index folder (created if it has no MANIFEST, opened otherwise).
    index: PathBuf,
    /// Seed of the random operations.
    seed: u64,
}

fn main() {
    let args = Args::parse();
    let (dir, seed) = (args.index.as_path(), args.seed);
    let ix = if dir.join("MANIFEST").exists() {
        Index::open(
            dir,
            Options {
                flush_bytes: 1 << 20,
                ..Options::default()
            },
        )
        .unwrap()
    } else {
        Index::create(
            dir,
            Config {
                buckets: 1000,
                fingerprint_bits: 16,
            },
            Options {
                flush_bytes: 1 << 20,
                ..Options::default()
            },
        )
        .unwrap()
    };
    let ix = Arc::new(ix);
    let _merger = ix.start_merger(3, std::time::Duration::from_millis(2));
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Values this run appended and may delete.
    let mut mine: HashMap<String, Vec<i64>> = HashMap::new();
    let out = std::io::stdout();
    let mut opno = 0u64;
    loop {
        opno += 1;
        let id = format!("p{}", next() % 12);
        let line = match next() % 20 {
            0..=9 => {
                let base = (seed * 1_000_000 + opno) as i64 * 10_000;
                let n = next() % 3000;
                let vals: Vec<i64> = (0..n as i64).map(|i| base + i).collect();
                let hs: Vec<u64> = vals.iter().map(|&v| hash_i64(v)).collect();
                emit(&out, &format!("B append {id} {base} {n}"));
                ix.append_hashes(&id, &hs).unwrap();
                mine.entry(id).or_default().extend(vals);
                None
            }
            10..=13 => {
                let Some(v) = mine.get_mut(&id) else { continue };
                let k = (next() % 40) as usize;
                let del: Vec<i64> = (0..k.min(v.len())).map(|_| v.swap_remove(0)).collect();
                if del.is_empty() {
                    continue;
                }
                let list: Vec<String> = del.iter().map(|d| d.to_string()).collect();
                emit(&out, &format!("B delete {id} {}", list.join(",")));
                let hs: Vec<u64> = del.iter().map(|&v| hash_i64(v)).collect();
                ix.delete_hashes(&id, &hs).unwrap();
                None
            }
            14 => {
                emit(&out, &format!("B remove {id}"));
                // Another run may have added the partition; only this run's view is known.
                match ix.remove_partition(&id) {
                    Ok(()) | Err(needle_index::Error::NotFound(_)) => {}
                    Err(e) => panic!("{e}"),
                }
                mine.remove(&id);
                None
            }
            15..=17 => Some(("B flush", 0)),
            _ => Some(("B merge", 1)),
        };
        if let Some((l, k)) = line {
            emit(&out, l);
            if k == 0 {
                ix.flush().unwrap();
            } else {
                ix.merge().unwrap();
            }
        }
        emit(&out, "A");
    }
}

fn emit(out: &std::io::Stdout, line: &str) {
    let mut o = out.lock();
    writeln!(o, "{line}").unwrap();
    o.flush().unwrap();
}
