//! # needle-index: which of a million partitions may hold this value, in two reads
//!
//! An on-disk index of one cuckoo filter per partition (a file, a row group, a shard).
//! Every filter has the same number of buckets B and its own number of slots per bucket,
//! and filters are stored bucket-major: the slots of bucket i of every partition of a
//! segment are contiguous. A point query hashes the value once, reads the two candidate
//! bucket rows of each segment (two contiguous reads) and compares every fingerprint in
//! them at once, with SIMD where the CPU has it.
//!
//! Writes go to a write-ahead log and an in-memory buffer, are flushed as new immutable
//! segments and merged in the background; readers query a consistent snapshot and never
//! block writers. The on-disk format is specified in `format/partition-index-v1.md`.
//!
//! ```no_run
//! use needle_index::{Config, Index, Options, Value};
//! let ix = Index::create("/tmp/ix", Config::default(), Options::default())?;
//! ix.append_values("file-0001.parquet", &[Value::Str("alice".into()), Value::Int(42)])?;
//! ix.flush()?;
//! let candidates = ix.query(&Value::Str("alice".into()))?;
//! assert!(candidates.contains(&"file-0001.parquet".to_string()));
//! # Ok::<(), needle_index::Error>(())
//! ```

mod codec;
mod error;
pub mod filter;
mod fsutil;
pub mod hash;
mod index;
mod manifest;
pub mod published;
pub mod scan;
mod segment;
mod wal;

pub use error::{Error, Result};
pub use hash::{hash_bytes, hash_i64, hash_str, Probe, Value};
pub use index::{Config, Index, MergeReport, MergerHandle, Options, PartitionInfo, Stats};
pub use scan::ScanImpl;
pub use segment::seg_name;
