//! A published index: uploading one ([`publish`]) and reading one ([`RemoteIndex`]). The format
//! is section 8 of `format/partition-index-v1.md`.

use super::location::Location;
use crate::pq::{self, ParquetMeta};
use crate::{Error, Key, Result};
use bytes::Bytes;
use futures::future::try_join_all;
use needle_index::published::{
    BundledHead, HeadsBundle, Publication, PublishedHead, PublishedIndex, PublishedSegment,
    HEAD_PREFIX_BYTES,
};
use needle_index::{seg_name, Index, Options};
use object_store::GetRange;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::Path;

/// The object, inside an index's prefix, that names the segments of its current publication.
pub const PUBLICATION: &str = "needle-publication.json";
/// The object, beside [`PUBLICATION`], that bundles the heads of its segments and the lengths of
/// the table's files, so that a reader has them in the round trip that reads the publication;
/// stored compressed (a Zstandard frame).
pub const HEADS: &str = "needle-heads.bin";
/// The first bytes of a Zstandard frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Most bytes a compressed bundle may expand to (a damaged or foreign one is not inflated
/// without bound).
const BUNDLE_LIMIT: u64 = 256 << 20;
/// The version of [`PUBLICATION`]'s content.
const PUBLICATION_FORMAT: u32 = 1;

/// The content of [`PUBLICATION`].
#[derive(Debug, Serialize, Deserialize)]
struct PublicationFile {
    format: u32,
    /// What the index covers, as `parquet-column.txt` of a local index says it.
    parquet: String,
    buckets: u32,
    fingerprint_bits: u32,
    segments: Vec<SegmentEntry>,
    /// The length of every file the index holds partitions of: recorded here by publishers
    /// before the bundle of heads held them ([`HEADS`]), read when the bundle does not.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    file_lengths: BTreeMap<String, u64>,
    /// For the index of a Delta table, the table version it covers (`needle index-delta`);
    /// absent for a folder of Parquet files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delta_version: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SegmentEntry {
    /// The segment's object, relative to the index's prefix.
    object: String,
    id: u64,
    removed: Vec<u64>,
    deleted: Vec<u64>,
    /// Bytes of the head (header, partition table, padding); absent from a publication made
    /// before it was recorded, whose heads are read [`HEAD_PREFIX_BYTES`] first.
    #[serde(default)]
    head_bytes: Option<u64>,
}

/// What [`publish`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublishReport {
    /// Segments uploaded.
    pub segments: usize,
    /// Bytes of the segments uploaded.
    pub bytes: u64,
    /// Objects of earlier publications deleted.
    pub deleted: usize,
}

/// Uploads the index in local directory `index_dir` (built by `index-parquet`) to `to`: its
/// segments, the bundle of their heads and of the `lengths` of the files the index holds
/// partitions of (those it has) ([`HEADS`]), then the publication, which records, for a Delta
/// table, the `delta_version` the index covers; then deletes the objects of earlier publications
/// there. A reader of an earlier publication that reads a deleted segment gets an error, never
/// a wrong answer; reading again finds the new one.
pub fn publish(
    index_dir: &Path,
    to: &Location,
    lengths: &HashMap<String, u64>,
    delta_version: Option<u64>,
) -> Result<PublishReport> {
    let meta = ParquetMeta::load(index_dir)?;
    let ix = Index::open_snapshot(index_dir, Options::default())?;
    let publication = ix.publication()?;
    let file_lengths: BTreeMap<String, u64> = ix
        .partitions()
        .iter()
        .filter(|p| !p.removed)
        .filter_map(|p| {
            let (file, _) = pq::split_id(&p.id);
            Some((file.to_string(), *lengths.get(file)?))
        })
        .collect();
    drop(ix);
    // A name no earlier publication used: its time in nanoseconds and this process.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tag = format!("p-{nanos:x}-{:x}", std::process::id());
    let mut report = PublishReport::default();
    let mut uploads = Vec::new();
    let mut entries = Vec::new();
    let mut heads = Vec::new();
    for s in &publication.segments {
        let file = index_dir.join(seg_name(s.id));
        let bytes = std::fs::read(&file)
            .map_err(|e| Error::Other(format!("cannot read {}: {e}", file.display())))?;
        report.segments += 1;
        report.bytes += bytes.len() as u64;
        let object = format!("{tag}/{}", seg_name(s.id));
        let head_len = usize::try_from(s.head_bytes).map_or(bytes.len(), |n| n.min(bytes.len()));
        heads.push(BundledHead {
            object: object.clone(),
            file_len: bytes.len() as u64,
            head: bytes[..head_len].to_vec(),
        });
        uploads.push((object.clone(), Bytes::from(bytes)));
        entries.push(SegmentEntry {
            object,
            id: s.id,
            removed: s.removed.clone(),
            deleted: s.deleted.clone(),
            head_bytes: Some(s.head_bytes),
        });
    }
    to.round_trip(try_join_all(uploads.into_iter().map(|(object, bytes)| {
        let to = to.clone();
        async move { to.put(&object, bytes).await }
    })))?;
    let file = PublicationFile {
        format: PUBLICATION_FORMAT,
        parquet: meta.to_text(),
        buckets: publication.buckets,
        fingerprint_bits: publication.fingerprint_bits,
        segments: entries,
        file_lengths: BTreeMap::new(),
        delta_version,
    };
    let json = serde_json::to_vec_pretty(&file).expect("a publication serializes");
    // The heads first: a reader that finds the new publication finds its heads too (one that
    // finds the old publication beside the new heads sees that they differ, and reads its own).
    let bundle = HeadsBundle {
        heads,
        file_lengths,
    }
    .encode();
    let compressed = zstd::bulk::compress(&bundle, 3)
        .map_err(|e| Error::Other(format!("cannot compress {}: {e}", to.url_of(HEADS))))?;
    to.round_trip(to.put(HEADS, Bytes::from(compressed)))?;
    to.round_trip(to.put(PUBLICATION, Bytes::from(json)))?;
    let keep: HashSet<&str> = file.segments.iter().map(|e| e.object.as_str()).collect();
    let stale: Vec<String> = to
        .round_trip(to.list())?
        .into_iter()
        .filter(|rel| rel != PUBLICATION && rel != HEADS && !keep.contains(rel.as_str()))
        .collect();
    report.deleted = stale.len();
    to.round_trip(try_join_all(stale.iter().map(|rel| to.delete(rel))))?;
    Ok(report)
}

/// A published index, opened: what it covers, and the heads of its segments.
pub struct RemoteIndex {
    location: Location,
    meta: ParquetMeta,
    objects: Vec<String>,
    index: PublishedIndex,
    file_lengths: BTreeMap<String, u64>,
    delta_version: Option<u64>,
}

impl RemoteIndex {
    /// Reads the publication at `location` and the head of every segment it names: one round
    /// trip, the publication and the bundle of its heads ([`HEADS`]) read at once. Two when the
    /// bundle is missing (an index published before there were bundles) or is not this
    /// publication's (read while a new one was being published): each segment's head is then
    /// read from its file; three for a publication that does not record its heads' lengths, when
    /// a segment's partition table is longer than [`HEAD_PREFIX_BYTES`].
    pub fn open(location: &Location) -> Result<RemoteIndex> {
        let (json, bundle) = location.round_trip(async {
            futures::join!(location.get(PUBLICATION), location.get_if_present(HEADS))
        });
        let json = json.map_err(|e| {
            Error::Other(format!(
                "{} holds no published index ({e}); build one with `needle index-parquet`",
                location.url_of("")
            ))
        })?;
        let file: PublicationFile = serde_json::from_slice(&json).map_err(|e| {
            Error::Other(format!("{} is damaged: {e}", location.url_of(PUBLICATION)))
        })?;
        if file.format > PUBLICATION_FORMAT {
            return Err(Error::Other(format!(
                "{} was published by a newer version of needle (format {}; this one reads up to \
                 {PUBLICATION_FORMAT})",
                location.url_of(PUBLICATION),
                file.format
            )));
        }
        let meta = ParquetMeta::parse(&file.parquet, &location.url_of(PUBLICATION))?;
        let objects: Vec<String> = file.segments.iter().map(|e| e.object.clone()).collect();
        // The bundle if it is this publication's (a damaged or foreign one is not used: the
        // segments' own heads are the truth), else each segment's own head.
        let bundle = match bundle.ok().flatten() {
            Some(b) => bundled(&b, &objects, &location.url_of(HEADS)),
            None => None,
        };
        let (heads, mut file_lengths) = match bundle {
            Some(b) => b,
            None => (read_heads(location, &file)?, BTreeMap::new()),
        };
        if file_lengths.is_empty() {
            file_lengths = file.file_lengths.clone();
        }
        let publication = Publication {
            buckets: file.buckets,
            fingerprint_bits: file.fingerprint_bits,
            segments: file
                .segments
                .iter()
                .map(|e| PublishedSegment {
                    id: e.id,
                    removed: e.removed.clone(),
                    deleted: e.deleted.clone(),
                    head_bytes: e.head_bytes.unwrap_or(HEAD_PREFIX_BYTES),
                })
                .collect(),
        };
        let index = PublishedIndex::new(&publication, heads)?;
        Ok(RemoteIndex {
            location: location.clone(),
            meta,
            objects,
            index,
            file_lengths,
            delta_version: file.delta_version,
        })
    }

    /// What the index covers.
    pub fn meta(&self) -> &ParquetMeta {
        &self.meta
    }

    /// The lengths of the table's files the index recorded, in its bundle of heads (or in the
    /// publication, from an earlier publisher); empty if neither did.
    pub fn file_lengths(&self) -> &BTreeMap<String, u64> {
        &self.file_lengths
    }

    /// The Delta table version the index covers; `None` for an index of Parquet files.
    pub fn delta_version(&self) -> Option<u64> {
        self.delta_version
    }

    /// The ids of the partitions the index holds (files, or files' row groups).
    pub fn partition_ids(&self) -> impl Iterator<Item = &str> {
        self.index.partition_ids()
    }

    /// The candidate partitions of `value`: one round trip, two ranged reads per segment.
    pub fn candidates(&self, value: &Key) -> Result<Vec<String>> {
        let h = value.hash();
        let reads = self.index.rows_for(h);
        let loc = &self.location;
        let rows = loc.round_trip(try_join_all(reads.iter().map(|r| {
            let range: Range<u64> = r.range.clone();
            loc.get_range(&self.objects[r.segment], GetRange::Bounded(range))
        })))?;
        let rows: Vec<Bytes> = rows.into_iter().map(|(b, _)| b).collect();
        Ok(self.index.candidates(h, &rows)?)
    }
}

/// The heads of `objects` and the table files' lengths from a bundle (compressed, or not as
/// publishers before compression wrote it), if it parses and bundles exactly those objects, in
/// order.
fn bundled(
    bytes: &[u8],
    objects: &[String],
    name: &str,
) -> Option<(Vec<PublishedHead>, BTreeMap<String, u64>)> {
    let inflated;
    let bytes = if bytes.starts_with(&ZSTD_MAGIC) {
        inflated = inflate(bytes)?;
        &inflated[..]
    } else {
        bytes
    };
    let bundle = HeadsBundle::decode(bytes, name).ok()?;
    let heads = &bundle.heads;
    if heads.len() != objects.len() || heads.iter().zip(objects).any(|(h, o)| &h.object != o) {
        return None;
    }
    let parsed = heads
        .iter()
        .map(|h| PublishedHead::parse(&h.head, h.file_len, name).ok()?.ok())
        .collect::<Option<Vec<_>>>()?;
    Some((parsed, bundle.file_lengths))
}

/// A Zstandard frame, decompressed, if it is one and expands to at most [`BUNDLE_LIMIT`] bytes.
fn inflate(frame: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(frame)
        .ok()?
        .take(BUNDLE_LIMIT + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= BUNDLE_LIMIT).then_some(out)
}

/// The head of every segment of `file`, read from the start of each segment's object.
fn read_heads(location: &Location, file: &PublicationFile) -> Result<Vec<PublishedHead>> {
    let objects: Vec<&str> = file.segments.iter().map(|e| e.object.as_str()).collect();
    // Each head as long as the publication says; a guess for one made before it said.
    let mut prefixes = location.round_trip(try_join_all(file.segments.iter().map(|e| {
        let head = e.head_bytes.unwrap_or(HEAD_PREFIX_BYTES).max(1);
        location.get_range(&e.object, GetRange::Bounded(0..head))
    })))?;
    let mut heads: Vec<Option<PublishedHead>> = vec![None; objects.len()];
    loop {
        let mut more = Vec::new();
        for (i, (prefix, len)) in prefixes.iter().enumerate() {
            if heads[i].is_some() {
                continue;
            }
            match PublishedHead::parse(prefix, *len, &location.url_of(objects[i]))? {
                Ok(h) => heads[i] = Some(h),
                Err(need) => more.push((i, need)),
            }
        }
        if more.is_empty() {
            break;
        }
        let got = location
            .round_trip(try_join_all(more.iter().map(|(i, need)| {
                location.get_range(objects[*i], GetRange::Bounded(0..*need))
            })))?;
        for ((i, _), read) in more.iter().zip(got) {
            prefixes[*i] = read;
        }
    }
    Ok(heads.into_iter().flatten().collect())
}
