//! Writing a segment file, in one pass: header and partition table, then rows in bucket order.

use super::{row_crc, SegPart, DATA_ALIGN, HEADER_LEN, SEG_MAGIC, SEG_VERSION};
use crate::codec::Enc;
use crate::error::{Error, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Streams a segment file: header and table first, then rows in bucket order.
pub(crate) struct SegmentWriter {
    path: PathBuf,
    out: BufWriter<File>,
    width: usize,
    row_bytes: usize,
    buckets: u32,
    next_bucket: u32,
}

impl SegmentWriter {
    /// Creates `path` (which must not exist) for partitions `parts`.
    pub fn create(
        path: &Path,
        id: u64,
        bits: u32,
        buckets: u32,
        parts: &[SegPart],
    ) -> Result<SegmentWriter> {
        let row_slots: u64 = parts.iter().map(|p| p.slots as u64).sum();
        if row_slots >= u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!(
                "a segment row of {row_slots} slots is too wide; use more buckets"
            )));
        }
        let mut t = Enc::default();
        for p in parts {
            t.u64(p.uid);
            t.u64(p.count);
            t.u32(p.slots);
            t.str(&p.id);
        }
        let crc = crc32c::crc32c(&t.0);
        t.u32(crc);
        let table_len = t.0.len() as u64;
        let data_off = (HEADER_LEN as u64 + table_len).div_ceil(DATA_ALIGN) * DATA_ALIGN;
        let mut h = Enc::default();
        h.bytes(SEG_MAGIC);
        h.u32(SEG_VERSION);
        h.u32(bits);
        h.u32(buckets);
        h.u32(parts.len() as u32);
        h.u64(row_slots);
        h.u64(id);
        h.u64(table_len);
        h.u64(data_off);
        let crc = crc32c::crc32c(&h.0);
        h.u32(crc);
        h.u32(0);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let io = |e| Error::io(path, e);
        out.write_all(&h.0).map_err(io)?;
        out.write_all(&t.0).map_err(io)?;
        out.write_all(&vec![
            0u8;
            (data_off - HEADER_LEN as u64 - table_len) as usize
        ])
        .map_err(io)?;
        let width = bits as usize / 8;
        Ok(SegmentWriter {
            path: path.to_path_buf(),
            out,
            width,
            row_bytes: row_slots as usize * width,
            buckets,
            next_bucket: 0,
        })
    }

    /// Bytes each row must have.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Fingerprint width in bytes.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Appends the next row (bucket `next_bucket`).
    pub fn write_row(&mut self, row: &[u8]) -> Result<()> {
        assert_eq!(row.len(), self.row_bytes);
        if self.row_bytes == 0 {
            self.next_bucket += 1;
            return Ok(());
        }
        let crc = row_crc(self.next_bucket, row);
        self.out
            .write_all(row)
            .map_err(|e| Error::io(&self.path, e))?;
        self.out
            .write_all(&crc.to_le_bytes())
            .map_err(|e| Error::io(&self.path, e))?;
        self.next_bucket += 1;
        Ok(())
    }

    /// Flushes and fsyncs the file.
    pub fn finish(self) -> Result<()> {
        assert_eq!(self.next_bucket, self.buckets, "every row must be written");
        let path = self.path.clone();
        let f = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&path, e))
    }
}
