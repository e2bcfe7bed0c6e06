//! An index read from somewhere other than a local disk (an object store), without I/O of its
//! own: the caller reads the bytes this module asks for, with whatever client it has, and hands
//! them back.
//!
//! A published index is its segment files and a [`Publication`]: the configuration and, per
//! segment, the file and the removals and deletes applied to it (what the manifest says). A
//! point query then takes two round trips, each of requests sent in parallel: the publication
//! and the heads of its segments (header and partition table, which a long-lived reader keeps),
//! bundled by the publisher in one object ([`HeadsBundle`], with the lengths of the table's files
//! that its candidates name); then the two bucket rows of every segment. Without the bundle, a
//! reader reads each segment's head after the publication.

use crate::codec::{Dec, Enc};
use crate::error::{Error, Result};
use crate::hash::Probe;
use crate::scan::ScanImpl;
use crate::segment::{HeadRead, SegmentHead};
use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::path::Path;

/// What a reader needs to know of one segment besides its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedSegment {
    /// Segment number; its file in the index directory is `seg-<16 hex digits>.nseg`.
    pub id: u64,
    /// uids of the partition entries removed from it.
    pub removed: Vec<u64>,
    /// Its deleted slots (`bucket * row_slots + slot`).
    pub deleted: Vec<u64>,
    /// Bytes from the start of its file that hold the header and the partition table (and
    /// padding): what a reader reads to know its head in one request.
    pub head_bytes: u64,
}

/// An index as a reader elsewhere sees it: configuration and segments, nothing in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// Buckets B.
    pub buckets: u32,
    /// Fingerprint width in bits.
    pub fingerprint_bits: u32,
    /// Its segments, oldest first.
    pub segments: Vec<PublishedSegment>,
}

/// Bytes to read from the start of a segment file first: the header and the partition table of
/// a segment of up to about 1,000 partitions. A longer table takes one more request.
pub const HEAD_PREFIX_BYTES: u64 = 64 << 10;

/// A segment's head, as read for a [`PublishedIndex`].
#[derive(Debug, Clone)]
pub struct PublishedHead(SegmentHead);

impl PublishedHead {
    /// Parses the first bytes of segment file `name`, which is `file_len` bytes long: the head,
    /// or how many bytes from the start of the file to read instead.
    pub fn parse(
        prefix: &[u8],
        file_len: u64,
        name: &str,
    ) -> Result<std::result::Result<Self, u64>> {
        Ok(
            match SegmentHead::parse(prefix, file_len, Path::new(name))? {
                HeadRead::Complete(h) => Ok(PublishedHead(h)),
                HeadRead::NeedPrefix(n) => Err(n),
            },
        )
    }
}

/// The first bytes of the object that bundles a publication's segment heads (§8 of the format).
const HEADS_MAGIC: &[u8; 8] = b"NDLHEADS";
/// The version of the heads bundle's layout: 2 adds the table files' lengths after the heads.
const HEADS_VERSION: u32 = 2;

/// One segment's head as a publisher bundles it: the segment's object, the length of its file,
/// and the file's first bytes (its head: header, partition table and padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundledHead {
    /// The segment's object, as the publication names it.
    pub object: String,
    /// Bytes of the segment's file.
    pub file_len: u64,
    /// The file's first bytes, at least its head.
    pub head: Vec<u8>,
}

/// What a publisher bundles in one object beside its publication, so that a reader fetches it in
/// the same round trip: the heads of the publication's segments (instead of reading every
/// segment's head after the publication) and the length of every table file the index holds
/// partitions of (so that a candidate file is read without asking its length).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadsBundle {
    /// The segments' heads, in the publication's order.
    pub heads: Vec<BundledHead>,
    /// Table files' lengths in bytes, by path (as partition ids name files); empty in a bundle
    /// of version 1.
    pub file_lengths: BTreeMap<String, u64>,
}

impl HeadsBundle {
    /// Encodes the bundle: magic, version, count, then per segment its object name, file length
    /// and head bytes; count, then per table file its path and length; then a CRC-32C of all
    /// that precedes.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.bytes(HEADS_MAGIC);
        e.u32(HEADS_VERSION);
        e.u32(self.heads.len() as u32);
        for h in &self.heads {
            e.str(&h.object);
            e.u64(h.file_len);
            e.u64(h.head.len() as u64);
            e.bytes(&h.head);
        }
        e.u32(self.file_lengths.len() as u32);
        for (path, len) in &self.file_lengths {
            e.str(path);
            e.u64(*len);
        }
        let crc = crc32c::crc32c(&e.0);
        e.u32(crc);
        e.0
    }

    /// Decodes what [`HeadsBundle::encode`] encoded (or a bundle of version 1, heads alone);
    /// `name` names it in errors. A bundle that is damaged, truncated or of a later version is
    /// an error (the reader then reads the segments' heads).
    pub fn decode(bytes: &[u8], name: &str) -> Result<HeadsBundle> {
        let path = Path::new(name);
        if bytes.len() < HEADS_MAGIC.len() + 12 || &bytes[..HEADS_MAGIC.len()] != HEADS_MAGIC {
            return Err(Error::corrupt(path, "not a bundle of segment heads"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(Error::corrupt(path, "checksum mismatch"));
        }
        let mut d = Dec::new(body, path);
        d.take(HEADS_MAGIC.len())?;
        let version = d.u32()?;
        if version == 0 || version > HEADS_VERSION {
            return Err(Error::corrupt(
                path,
                format!("version {version}, this reader reads 1 to {HEADS_VERSION}"),
            ));
        }
        let n = d.u32()? as usize;
        let mut heads = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let object = d.str()?;
            let file_len = d.u64()?;
            let len = usize::try_from(d.u64()?)
                .map_err(|_| Error::corrupt(path, "a head longer than memory"))?;
            let head = d.take(len)?.to_vec();
            heads.push(BundledHead {
                object,
                file_len,
                head,
            });
        }
        let mut file_lengths = BTreeMap::new();
        if version >= 2 {
            for _ in 0..d.u32()? {
                let file = d.str()?;
                file_lengths.insert(file, d.u64()?);
            }
        }
        if !d.done() {
            return Err(Error::corrupt(path, "bytes after the last entry"));
        }
        Ok(HeadsBundle {
            heads,
            file_lengths,
        })
    }
}

struct Seg {
    name: String,
    head: SegmentHead,
    removed: Vec<bool>,
    deleted: HashSet<u64>,
}

/// One row a query needs: which segment of the publication, and which bytes of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRead {
    /// Position of the segment in [`Publication::segments`].
    pub segment: usize,
    /// The bucket the row belongs to.
    pub bucket: u32,
    /// The bytes of the segment file to read.
    pub range: Range<u64>,
}

/// A published index whose segment heads are known: it says which rows a query needs, and
/// which partitions the rows name.
pub struct PublishedIndex {
    buckets: u32,
    bits: u32,
    segs: Vec<Seg>,
    scan: ScanImpl,
}

impl PublishedIndex {
    /// Assembles an index from its publication and the head of each of its segments (in the
    /// publication's order), checking that they belong together.
    pub fn new(publication: &Publication, heads: Vec<PublishedHead>) -> Result<PublishedIndex> {
        if heads.len() != publication.segments.len() {
            return Err(Error::InvalidArgument(format!(
                "{} segment heads for a publication of {} segments",
                heads.len(),
                publication.segments.len()
            )));
        }
        let mut segs = Vec::with_capacity(heads.len());
        for (s, PublishedHead(head)) in publication.segments.iter().zip(heads) {
            let name = crate::segment::seg_name(s.id);
            if head.id != s.id
                || head.bits != publication.fingerprint_bits
                || head.buckets != publication.buckets
            {
                return Err(Error::corrupt(
                    Path::new(&name),
                    format!(
                        "segment {} of {} buckets and {}-bit fingerprints does not belong to an \
                         index of {} buckets and {}-bit fingerprints (published twice at once?)",
                        head.id,
                        head.buckets,
                        head.bits,
                        publication.buckets,
                        publication.fingerprint_bits
                    ),
                ));
            }
            let removed_uids: HashSet<u64> = s.removed.iter().copied().collect();
            let removed = head
                .parts
                .iter()
                .map(|p| removed_uids.contains(&p.uid))
                .collect();
            segs.push(Seg {
                name,
                head,
                removed,
                deleted: s.deleted.iter().copied().collect(),
            });
        }
        Ok(PublishedIndex {
            buckets: publication.buckets,
            bits: publication.fingerprint_bits,
            segs,
            scan: ScanImpl::best(),
        })
    }

    /// The ids of the partitions the index holds (not removed), in segment order; an id held by
    /// several segments comes once per segment.
    pub fn partition_ids(&self) -> impl Iterator<Item = &str> {
        self.segs.iter().flat_map(|s| {
            s.head
                .parts
                .iter()
                .zip(&s.removed)
                .filter(|(_, &removed)| !removed)
                .map(|(p, _)| p.id.as_str())
        })
    }

    /// The rows a query for hashed value `h` reads: at most two per segment.
    pub fn rows_for(&self, h: u64) -> Vec<RowRead> {
        let p = Probe::new(h, self.buckets, self.bits);
        let mut out = Vec::new();
        for (i, s) in self.segs.iter().enumerate() {
            if s.head.row_slots == 0 {
                continue;
            }
            for b in bucket_pair(&p) {
                out.push(RowRead {
                    segment: i,
                    bucket: b,
                    range: s.head.row_range(b),
                });
            }
        }
        out
    }

    /// The candidate partition ids of hashed value `h`, from the bytes of the rows
    /// [`Self::rows_for`] asked for (in its order): sorted, without duplicates.
    pub fn candidates(&self, h: u64, rows: &[impl AsRef<[u8]>]) -> Result<Vec<String>> {
        let reads = self.rows_for(h);
        if reads.len() != rows.len() {
            return Err(Error::InvalidArgument(format!(
                "{} rows given for a query that reads {}",
                rows.len(),
                reads.len()
            )));
        }
        let p = Probe::new(h, self.buckets, self.bits);
        let width = self.bits as usize / 8;
        let mut hits = Vec::new();
        let mut out = Vec::new();
        for (r, bytes) in reads.iter().zip(rows) {
            let s = &self.segs[r.segment];
            let row = s
                .head
                .check_row(r.bucket, bytes.as_ref(), true, Path::new(&s.name))?;
            row_hits(
                &s.head,
                &s.removed,
                &s.deleted,
                r.bucket,
                row,
                (width, p.fp, self.scan),
                &mut hits,
                |id| out.push(id.to_string()),
            );
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// The one or two buckets a probe reads.
pub(crate) fn bucket_pair(p: &Probe) -> impl Iterator<Item = u32> {
    let second = (p.b2 != p.b1).then_some(p.b2);
    std::iter::once(p.b1).chain(second)
}

/// Calls `hit` with the partition of every slot of `row` (bucket `bucket` of a segment with head
/// `head`) that holds fingerprint `fp`, except removed partitions and deleted slots. `scan` is
/// (slot width in bytes, fingerprint, scan implementation); `hits` is scratch space.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row_hits(
    head: &SegmentHead,
    removed: &[bool],
    deleted: &HashSet<u64>,
    bucket: u32,
    row: &[u8],
    (width, fp, scan): (usize, u32, ScanImpl),
    hits: &mut Vec<u32>,
    mut hit: impl FnMut(&str),
) {
    hits.clear();
    scan.scan(row, width, fp, hits);
    for &pos in hits.iter() {
        let k = head.part_of(pos as u64);
        if removed[k] {
            continue;
        }
        if !deleted.is_empty() && deleted.contains(&(bucket as u64 * head.row_slots + pos as u64)) {
            continue;
        }
        hit(&head.parts[k].id);
    }
}
