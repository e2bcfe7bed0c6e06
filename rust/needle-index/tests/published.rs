//! A published index read through byte ranges answers as the index itself does.

use needle_index::published::{
    BundledHead, HeadsBundle, PublishedHead, PublishedIndex, HEAD_PREFIX_BYTES,
};
use needle_index::{seg_name, Config, Index, Options, Value};
use std::path::Path;

/// Reads a segment's head the way a remote reader does: a prefix first, more if it asks.
fn head(dir: &Path, id: u64) -> PublishedHead {
    let name = seg_name(id);
    let bytes = std::fs::read(dir.join(&name)).unwrap();
    let len = bytes.len() as u64;
    let mut want = HEAD_PREFIX_BYTES.min(len);
    loop {
        match PublishedHead::parse(&bytes[..want as usize], len, &name).unwrap() {
            Ok(h) => return h,
            Err(n) => {
                assert!(n > want, "asks for more than it was given");
                want = n;
            }
        }
    }
}

/// The published form of `ix`, and its segment ids in publication order.
fn published(dir: &Path, ix: &Index) -> (PublishedIndex, Vec<u64>) {
    let publication = ix.publication().unwrap();
    let ids: Vec<u64> = publication.segments.iter().map(|s| s.id).collect();
    let heads = ids.iter().map(|&id| head(dir, id)).collect();
    (PublishedIndex::new(&publication, heads).unwrap(), ids)
}

/// The bytes of every row a query for `h` reads.
fn rows(dir: &Path, (p, ids): &(PublishedIndex, Vec<u64>), h: u64) -> Vec<Vec<u8>> {
    p.rows_for(h)
        .into_iter()
        .map(|r| {
            let bytes = std::fs::read(dir.join(seg_name(ids[r.segment]))).unwrap();
            bytes[r.range.start as usize..r.range.end as usize].to_vec()
        })
        .collect()
}

#[test]
fn reads_of_byte_ranges_answer_as_the_index_does_through_removals_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let cfg = Config {
        buckets: 128,
        fingerprint_bits: 8,
    };
    let ix = Index::create(&dir, cfg, Options::default()).unwrap();
    for f in 0..40i64 {
        let values: Vec<Value> = (f * 50..f * 50 + 50).map(Value::Int).collect();
        ix.append_values(&format!("file-{f:03}.parquet"), &values)
            .unwrap();
        if f % 13 == 12 {
            ix.flush().unwrap();
        }
    }
    ix.flush().unwrap();
    ix.remove_partition("file-005.parquet").unwrap();
    ix.delete_values("file-020.parquet", &[Value::Int(1_000), Value::Int(1_001)])
        .unwrap();
    ix.flush().unwrap();
    let p = published(&dir, &ix);
    assert!(ix.publication().unwrap().segments.len() >= 3);
    let mut with_candidates = 0;
    for v in -200..2_200i64 {
        let h = Value::Int(v).hash();
        let want = ix.query_hash(h).unwrap();
        let got = p.0.candidates(h, &rows(&dir, &p, h)).unwrap();
        assert_eq!(got, want, "value {v}");
        with_candidates += usize::from(!want.is_empty());
    }
    assert!(with_candidates > 1_900, "the values written are found");
}

#[test]
fn unflushed_writes_cannot_be_published() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = Index::create(tmp.path().join("ix"), Config::default(), Options::default()).unwrap();
    ix.append_values("a", &[Value::Int(1)]).unwrap();
    let err = ix.publication().unwrap_err().to_string();
    assert!(err.contains("flush it first"), "{err}");
}

#[test]
fn a_damaged_row_is_an_error_not_an_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let ix = Index::create(&dir, Config::default(), Options::default()).unwrap();
    ix.append_values("a", &[Value::Int(1)]).unwrap();
    ix.flush().unwrap();
    let p = published(&dir, &ix);
    let h = Value::Int(1).hash();
    let mut damaged = rows(&dir, &p, h);
    damaged[0][0] ^= 0xff;
    let err = p.0.candidates(h, &damaged).unwrap_err().to_string();
    assert!(err.contains("checksum mismatch"), "{err}");
}

#[test]
fn a_bundle_of_heads_gives_back_the_heads_and_refuses_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ix");
    let ix = Index::create(&dir, Config::default(), Options::default()).unwrap();
    for p in 0..3 {
        ix.append_values(&format!("part-{p}"), &[Value::Int(p)])
            .unwrap();
        ix.flush().unwrap();
    }
    let publication = ix.publication().unwrap();
    let heads: Vec<BundledHead> = publication
        .segments
        .iter()
        .map(|s| {
            let bytes = std::fs::read(dir.join(seg_name(s.id))).unwrap();
            BundledHead {
                object: format!("p-1/{}", seg_name(s.id)),
                file_len: bytes.len() as u64,
                head: bytes[..s.head_bytes as usize].to_vec(),
            }
        })
        .collect();
    assert_eq!(heads.len(), 3);
    let lengths = [("part-0.parquet", 1234u64), ("sub/part 1.parquet", 1 << 40)];
    let whole = HeadsBundle {
        heads: heads.clone(),
        file_lengths: lengths.iter().map(|(f, n)| (f.to_string(), *n)).collect(),
    };
    let bundle = whole.encode();
    assert_eq!(HeadsBundle::decode(&bundle, "b").unwrap(), whole);
    // The heads it gives back make the same index as the segments' own.
    let from_bundle: Vec<PublishedHead> = heads
        .iter()
        .map(|h| {
            PublishedHead::parse(&h.head, h.file_len, &h.object)
                .unwrap()
                .unwrap()
        })
        .collect();
    let bundled = PublishedIndex::new(&publication, from_bundle).unwrap();
    let own = published(&dir, &ix);
    for v in 0..3 {
        let h = Value::Int(v).hash();
        let r = rows(&dir, &own, h);
        assert_eq!(
            bundled.candidates(h, &r).unwrap(),
            own.0.candidates(h, &r).unwrap()
        );
        assert_eq!(
            bundled.candidates(h, &r).unwrap(),
            vec![format!("part-{v}")]
        );
    }
    // Any flipped byte, a truncation, or something else entirely is an error.
    for at in [0, 9, 20, bundle.len() / 2, bundle.len() - 1] {
        let mut damaged = bundle.clone();
        damaged[at] ^= 0x01;
        assert!(
            HeadsBundle::decode(&damaged, "b").is_err(),
            "byte {at} flipped"
        );
    }
    assert!(HeadsBundle::decode(&bundle[..bundle.len() - 5], "b").is_err());
    assert!(HeadsBundle::decode(b"{ \"format\": 1 }", "b").is_err());
    let empty = HeadsBundle::default();
    assert_eq!(HeadsBundle::decode(&empty.encode(), "b").unwrap(), empty);
    // A bundle of version 1 (heads alone, as publishers before the table files' lengths wrote
    // it) is read; a later version is refused.
    let mut v1 = bundle[..8].to_vec();
    v1.extend_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&bundle[12..bundle.len() - 4]);
    let lengths_section = 4 + lengths.iter().map(|(f, _)| 4 + f.len() + 8).sum::<usize>();
    v1.truncate(v1.len() - lengths_section);
    let crc = crc32c::crc32c(&v1);
    v1.extend_from_slice(&crc.to_le_bytes());
    let read = HeadsBundle::decode(&v1, "b").unwrap();
    assert_eq!((read.heads, read.file_lengths.len()), (heads, 0));
    let mut v3 = bundle[..bundle.len() - 4].to_vec();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    let crc = crc32c::crc32c(&v3);
    v3.extend_from_slice(&crc.to_le_bytes());
    let e = HeadsBundle::decode(&v3, "b").unwrap_err().to_string();
    assert!(e.contains("version 3"), "{e}");
}
