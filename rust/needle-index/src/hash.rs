//! Value hashing and the derived quantities (fingerprint, buckets).
//!
//! Every value is reduced to one 64-bit hash: XXH64 with seed 0 over a canonical byte
//! encoding of the value (see [`Value`]). Everything stored in the index derives from that
//! hash, so the same value of the same logical type always lands in the same place.

use xxhash_rust::xxh64::xxh64;

/// A value of one of the supported logical types.
///
/// Canonical encodings hashed by [`Value::hash`]:
/// - `Str`: the UTF-8 bytes of the string, no length prefix or terminator;
/// - `Int`: the 8-byte little-endian two's-complement encoding of the value as `i64`
///   (so an `INT32` column value 7 and an `INT64` value 7 hash the same);
/// - `Bytes`: the bytes themselves.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A UTF-8 string.
    Str(String),
    /// A signed integer of any width, widened to `i64`.
    Int(i64),
    /// Raw binary.
    Bytes(Vec<u8>),
}

impl Value {
    /// The 64-bit hash of the value's canonical encoding.
    pub fn hash(&self) -> u64 {
        match self {
            Value::Str(s) => hash_bytes(s.as_bytes()),
            Value::Int(i) => hash_i64(*i),
            Value::Bytes(b) => hash_bytes(b),
        }
    }
}

/// XXH64 (seed 0) of raw bytes; the hash of a `Str` or `Bytes` value.
#[inline]
pub fn hash_bytes(b: &[u8]) -> u64 {
    xxh64(b, 0)
}

/// The hash of an `Int` value: XXH64 of its 8 little-endian bytes.
#[inline]
pub fn hash_i64(v: i64) -> u64 {
    xxh64(&v.to_le_bytes(), 0)
}

/// The hash of a string value.
#[inline]
pub fn hash_str(s: &str) -> u64 {
    hash_bytes(s.as_bytes())
}

/// Maps a 32-bit value uniformly onto `[0, n)` without a division.
#[inline]
pub(crate) fn reduce(x: u32, n: u32) -> u32 {
    ((x as u64 * n as u64) >> 32) as u32
}

/// Fingerprint of a hash for a width of `bits` (8, 16 or 32): uniform over `1..2^bits`
/// (0 marks an empty slot and is never produced).
#[inline]
pub fn fingerprint(h: u64, bits: u32) -> u32 {
    let hi = h >> 32;
    let modulus = (1u64 << bits) - 1;
    (hi % modulus) as u32 + 1
}

/// First candidate bucket of a hash among `buckets`.
#[inline]
pub fn bucket1(h: u64, buckets: u32) -> u32 {
    reduce(h as u32, buckets)
}

/// The other candidate bucket of a fingerprint stored in bucket `i`.
///
/// `alt(i) = (H(fp) - i) mod B` is an involution for every B, so the alternate bucket of
/// an entry can be computed from its fingerprint and current bucket alone.
#[inline]
pub fn alt_bucket(i: u32, fp: u32, buckets: u32) -> u32 {
    let hfp = reduce(
        ((fp as u64).wrapping_mul(0xC4CE_B9FE_1A85_EC53) >> 32) as u32,
        buckets,
    );
    let v = hfp as i64 - i as i64;
    v.rem_euclid(buckets as i64) as u32
}

/// Fingerprint and both candidate buckets of a hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The fingerprint, never 0.
    pub fp: u32,
    /// First candidate bucket.
    pub b1: u32,
    /// Second candidate bucket (may equal `b1`).
    pub b2: u32,
}

impl Probe {
    /// Derives the probe of hash `h` for an index of `buckets` buckets and `bits`-bit fingerprints.
    #[inline]
    pub fn new(h: u64, buckets: u32, bits: u32) -> Probe {
        let fp = fingerprint(h, bits);
        let b1 = bucket1(h, buckets);
        Probe {
            fp,
            b1,
            b2: alt_bucket(b1, fp, buckets),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_matches_shared_vectors() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../format/vectors/xxh64.txt"
        );
        let text = std::fs::read_to_string(path).expect("format/vectors/xxh64.txt");
        let mut n = 0;
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let (kind, rest) = line.split_once(' ').unwrap();
            let (input, hex) = rest.rsplit_once(' ').unwrap();
            let want = u64::from_str_radix(hex, 16).unwrap();
            let got = match kind {
                "bytes" => {
                    let len: usize = input.parse().unwrap();
                    let b: Vec<u8> = (0..len).map(|i| ((i * 7 + 3) % 256) as u8).collect();
                    hash_bytes(&b)
                }
                "utf8" => hash_str(input.trim_matches('\'')),
                other => panic!("unknown kind {other}"),
            };
            assert_eq!(got, want, "{line}");
            n += 1;
        }
        assert!(n > 60);
    }

    #[test]
    fn derived_values_match_the_format_document() {
        let cases = [
            ("key-0", 38_000, 16, (835, 3265, 32105)),
            ("key-0", 1000, 8, (70, 85, 729)),
            ("Needle", 38_000, 16, (27189, 1514, 11520)),
            ("Needle", 7, 32, (153_248_019, 0, 4)),
            ("abc", 1000, 8, (36, 677, 999)),
        ];
        for (s, b, f, (fp, b1, b2)) in cases {
            assert_eq!(
                Probe::new(hash_str(s), b, f),
                Probe { fp, b1, b2 },
                "{s} B={b} f={f}"
            );
        }
    }

    #[test]
    fn alt_is_involution_for_odd_bucket_counts() {
        for &b in &[1u32, 2, 3, 7, 1000, 38_000, 65_537] {
            for fp in 1..500u32 {
                for i in [0, b / 3, b - 1] {
                    let j = alt_bucket(i, fp, b);
                    assert!(j < b);
                    assert_eq!(alt_bucket(j, fp, b), i);
                }
            }
        }
    }

    #[test]
    fn fingerprints_never_zero() {
        for bits in [8, 16, 32] {
            for h in [0u64, u64::MAX, 0xFFFF_FFFF_0000_0000, 1 << 40] {
                let f = fingerprint(h, bits);
                assert!(f >= 1 && (f as u64) < (1u64 << bits));
            }
        }
    }
}
