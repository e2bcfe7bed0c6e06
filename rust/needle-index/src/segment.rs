//! Immutable bucket-major segment files.
//!
//! Layout (all integers little-endian; see format/partition-index-v1.md):
//! a 64-byte header, the partition table and its CRC32C, zero padding to a 4096-byte
//! boundary, then one row per bucket: the slots of every partition of the segment,
//! followed by the CRC32C of (bucket number, row). A query reads one row per candidate
//! bucket: two contiguous reads, each carrying its own checksum.

use crate::codec::Dec;
use crate::error::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

mod writer;
pub(crate) use writer::SegmentWriter;

pub(crate) const SEG_MAGIC: &[u8; 8] = b"NDLSEGv1";
pub(crate) const SEG_VERSION: u32 = 1;
const HEADER_LEN: usize = 64;
const DATA_ALIGN: u64 = 4096;

/// One partition's entry in a segment's partition table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegPart {
    /// Index-wide unique number of this partition entry.
    pub uid: u64,
    /// Number of values stored when the segment was written.
    pub count: u64,
    /// Slots per bucket.
    pub slots: u32,
    /// Caller's partition id.
    pub id: String,
}

/// A segment's header and partition table, parsed from the bytes at the start of its file:
/// everything needed to find a bucket's row and to say whose fingerprints it holds, wherever
/// the file lives (a local disk, or an object store read with ranged requests).
#[derive(Debug, Clone)]
pub struct SegmentHead {
    pub(crate) id: u64,
    pub(crate) bits: u32,
    pub(crate) buckets: u32,
    pub(crate) row_slots: u64,
    pub(crate) parts: Vec<SegPart>,
    /// `offsets[k]` is the first slot of partition k in every row; `offsets[n] = row_slots`.
    pub(crate) offsets: Vec<u64>,
    pub(crate) data_off: u64,
    pub(crate) file_len: u64,
}

/// What [`SegmentHead::parse`] made of the first bytes of a segment file.
#[derive(Debug)]
pub enum HeadRead {
    /// The header and the partition table were all there.
    Complete(SegmentHead),
    /// They take this many bytes from the start of the file: read that many and parse again.
    NeedPrefix(u64),
}

impl SegmentHead {
    /// Parses the header and partition table from `prefix`, the first bytes of a segment file
    /// of `file_len` bytes named `path` (for errors). 4 KiB holds both for a few dozen
    /// partitions; when the table is longer, the answer says how many bytes to read.
    pub fn parse(prefix: &[u8], file_len: u64, path: &Path) -> Result<HeadRead> {
        if prefix.len() < HEADER_LEN {
            return if file_len < HEADER_LEN as u64 {
                Err(Error::corrupt(path, "truncated header"))
            } else {
                Ok(HeadRead::NeedPrefix(HEADER_LEN as u64))
            };
        }
        let head = &prefix[..HEADER_LEN];
        let mut d = Dec::new(head, path);
        if d.take(8)? != SEG_MAGIC {
            return Err(Error::corrupt(path, "not a segment file (bad magic)"));
        }
        let crc = u32::from_le_bytes(head[56..60].try_into().unwrap());
        if crc32c::crc32c(&head[..56]) != crc {
            return Err(Error::corrupt(path, "header checksum mismatch"));
        }
        let version = d.u32()?;
        if version != SEG_VERSION {
            return Err(Error::corrupt(
                path,
                format!("unsupported segment version {version}"),
            ));
        }
        let bits = d.u32()?;
        let buckets = d.u32()?;
        let nparts = d.u32()? as usize;
        let row_slots = d.u64()?;
        let id = d.u64()?;
        let table_len = d.u64()?;
        let data_off = d.u64()?;
        if !matches!(bits, 8 | 16 | 32) || buckets == 0 || data_off < HEADER_LEN as u64 + table_len
        {
            return Err(Error::corrupt(path, "impossible header fields"));
        }
        let row_bytes = row_slots * (bits as u64 / 8);
        let want_len = data_off
            .checked_add(buckets as u64 * if row_bytes == 0 { 0 } else { row_bytes + 4 })
            .ok_or_else(|| Error::corrupt(path, "impossible header fields"))?;
        if file_len != want_len {
            return Err(Error::corrupt(
                path,
                format!("file is {file_len} bytes, header implies {want_len} (truncated?)"),
            ));
        }
        if table_len < 4 || table_len > file_len {
            return Err(Error::corrupt(path, "impossible partition table length"));
        }
        let table_end = HEADER_LEN + table_len as usize;
        if prefix.len() < table_end {
            return Ok(HeadRead::NeedPrefix(table_end as u64));
        }
        let table = &prefix[HEADER_LEN..table_end];
        let (body, crc) = table.split_at(table.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(Error::corrupt(path, "partition table checksum mismatch"));
        }
        let mut d = Dec::new(body, path);
        let mut parts = Vec::with_capacity(nparts);
        let mut offsets = Vec::with_capacity(nparts + 1);
        let mut acc = 0u64;
        for _ in 0..nparts {
            let uid = d.u64()?;
            let count = d.u64()?;
            let slots = d.u32()?;
            let pid = d.str()?;
            offsets.push(acc);
            acc += slots as u64;
            parts.push(SegPart {
                uid,
                count,
                slots,
                id: pid,
            });
        }
        offsets.push(acc);
        if acc != row_slots || !d.done() {
            return Err(Error::corrupt(
                path,
                "partition table does not match the row width",
            ));
        }
        Ok(HeadRead::Complete(SegmentHead {
            id,
            bits,
            buckets,
            row_slots,
            parts,
            offsets,
            data_off,
            file_len,
        }))
    }

    /// Bytes of fingerprints per row (without the row checksum).
    pub(crate) fn row_bytes(&self) -> usize {
        self.row_slots as usize * (self.bits as usize / 8)
    }

    /// The partition holding slot `pos` of a row.
    pub(crate) fn part_of(&self, pos: u64) -> usize {
        self.offsets.partition_point(|&o| o <= pos) - 1
    }

    /// Where row `bucket` lies in the file, its checksum included (empty when the segment's
    /// rows hold no slots).
    pub fn row_range(&self, bucket: u32) -> std::ops::Range<u64> {
        let rb = self.row_bytes() as u64;
        if rb == 0 {
            return self.data_off..self.data_off;
        }
        let off = self.data_off + bucket as u64 * (rb + 4);
        off..off + rb + 4
    }

    /// The fingerprints of row `bucket` as read from [`Self::row_range`], its checksum checked
    /// if `verify`.
    pub(crate) fn check_row<'b>(
        &self,
        bucket: u32,
        bytes: &'b [u8],
        verify: bool,
        path: &Path,
    ) -> Result<&'b [u8]> {
        let rb = self.row_bytes();
        if rb == 0 {
            return Ok(&bytes[..0]);
        }
        if bytes.len() != rb + 4 {
            return Err(Error::corrupt(
                path,
                format!("truncated in row of bucket {bucket}"),
            ));
        }
        if verify {
            let want = u32::from_le_bytes(bytes[rb..rb + 4].try_into().unwrap());
            if row_crc(bucket, &bytes[..rb]) != want {
                return Err(Error::corrupt(
                    path,
                    format!("checksum mismatch in row of bucket {bucket}"),
                ));
            }
        }
        Ok(&bytes[..rb])
    }
}

/// An open segment file.
#[derive(Debug)]
pub struct Segment {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) head: SegmentHead,
}

/// A segment is read as its head describes it: the index's code reads `seg.row_slots` and the
/// like directly.
impl std::ops::Deref for Segment {
    type Target = SegmentHead;
    fn deref(&self) -> &SegmentHead {
        &self.head
    }
}

/// File name of segment `id`.
pub fn seg_name(id: u64) -> String {
    format!("seg-{id:016x}.nseg")
}

impl Segment {
    /// Reads row `bucket` into `buf` (resized) and, if `verify`, checks its CRC.
    pub(crate) fn read_row<'b>(
        &self,
        bucket: u32,
        buf: &'b mut Vec<u8>,
        verify: bool,
    ) -> Result<&'b [u8]> {
        let range = self.row_range(bucket);
        buf.resize((range.end - range.start) as usize, 0);
        if buf.is_empty() {
            return Ok(&buf[..0]);
        }
        self.file
            .read_exact_at(&mut buf[..], range.start)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    Error::corrupt(&self.path, format!("truncated in row of bucket {bucket}"))
                } else {
                    Error::io(&self.path, e)
                }
            })?;
        self.head.check_row(bucket, buf, verify, &self.path)
    }

    /// Opens and validates a segment: header, partition table, file length.
    pub fn open(path: &Path) -> Result<Segment> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut prefix = Vec::new();
        loop {
            match SegmentHead::parse(&prefix, file_len, path)? {
                HeadRead::Complete(head) => {
                    return Ok(Segment {
                        path: path.to_path_buf(),
                        file,
                        head,
                    })
                }
                HeadRead::NeedPrefix(n) => {
                    prefix.resize(n as usize, 0);
                    file.read_exact_at(&mut prefix, 0).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::UnexpectedEof {
                            Error::corrupt(path, "truncated header")
                        } else {
                            Error::io(path, e)
                        }
                    })?;
                }
            }
        }
    }

    /// Reads every row and checks its checksum.
    pub fn verify(&self) -> Result<()> {
        let mut buf = Vec::new();
        for b in 0..self.buckets {
            self.read_row(b, &mut buf, true)?;
        }
        Ok(())
    }
}

/// CRC32C of a row, seeded with its bucket number so a misplaced row is caught too.
pub(crate) fn row_crc(bucket: u32, row: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&bucket.to_le_bytes()), row)
}

/// Writes fingerprint `fp` into slot `i` of a little-endian row of `width`-byte slots.
#[inline]
pub(crate) fn put_fp(row: &mut [u8], width: usize, i: usize, fp: u32) {
    row[i * width..(i + 1) * width].copy_from_slice(&fp.to_le_bytes()[..width]);
}

/// Reads fingerprint `i` of a little-endian row of `width`-byte slots.
#[inline]
pub(crate) fn get_fp(row: &[u8], width: usize, i: usize) -> u32 {
    let mut b = [0u8; 4];
    b[..width].copy_from_slice(&row[i * width..(i + 1) * width]);
    u32::from_le_bytes(b)
}
