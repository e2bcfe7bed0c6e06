//! Shared helpers of the integration tests.
#![allow(dead_code)]

use needle_index::{Config, Index, Options};
use std::collections::HashMap;
use std::path::Path;

/// Ground truth: live partitions and the multiset of values each holds.
#[derive(Default, Debug, Clone)]
pub struct Model {
    pub parts: HashMap<String, Vec<u64>>,
}

impl Model {
    /// Checks that every live value finds its partition and no removed partition shows up.
    pub fn check(&self, ix: &Index) {
        for (id, vals) in &self.parts {
            for &h in vals {
                let c = ix.query_hash(h).unwrap();
                assert!(
                    c.contains(id),
                    "false negative: value {h:#x} of partition {id} not found; got {c:?}"
                );
                for other in &c {
                    assert!(
                        self.parts.contains_key(other),
                        "removed partition {other} returned"
                    );
                }
            }
        }
        match ix.any_live_partition() {
            Some(id) => assert!(
                self.parts.contains_key(&id),
                "removed partition {id} named live"
            ),
            None => assert!(
                self.parts.is_empty(),
                "no live partition named: {:?}",
                self.parts.keys()
            ),
        }
    }
}

pub fn fast_opts() -> Options {
    Options {
        sync: false,
        flush_bytes: 1 << 16,
        ..Options::default()
    }
}

pub fn create(dir: &Path, buckets: u32, bits: u32) -> Index {
    Index::create(
        dir,
        Config {
            buckets,
            fingerprint_bits: bits,
        },
        fast_opts(),
    )
    .unwrap()
}
