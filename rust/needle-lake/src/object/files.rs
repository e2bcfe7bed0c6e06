//! Parquet files on an object store, read with ranged requests through the Parquet reader's
//! [`ChunkReader`].

use super::location::Location;
use crate::pq::{self, ParquetFiles};
use crate::{Error, Result};
use bytes::{Buf, Bytes};
use futures::future::try_join_all;
use object_store::GetRange;
use parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Bytes read from the end of a Parquet file first: its footer, in one request for most files.
const FOOTER_PREFETCH: u64 = 64 << 10;
/// Bytes read at least when a Parquet reader asks for bytes not read yet: a column chunk's pages
/// in a few requests rather than two per page.
const READ_AHEAD: u64 = 1 << 20;
/// Most bytes a file keeps of what it read.
const CACHE_BYTES: u64 = 64 << 20;

/// A Parquet file on an object store, read with ranged requests; what it has read is kept (up
/// to 64 MiB), so the Parquet reader's many small reads of one column chunk are served from a
/// few requests.
#[derive(Clone)]
pub struct RemoteFile {
    location: Location,
    rel: String,
    len: u64,
    cache: Arc<Mutex<Vec<(u64, Bytes)>>>,
}

impl RemoteFile {
    /// Opens files `rels` of `location`: their lengths, then their footers, in two round trips.
    ///
    /// A suffix range (`bytes=-N`) would read a footer without the length, in one, but some
    /// S3-compatible servers (s3s-fs 0.14) fail one longer than the object with a server error
    /// instead of answering the whole object, as S3 does, and the client retries a server error
    /// for seconds. A footer read whole holds the row groups of a small file: they are not read
    /// again.
    fn open_all(location: &Location, rels: &[&str]) -> Result<Vec<RemoteFile>> {
        let lens = location.round_trip(try_join_all(rels.iter().map(|rel| location.len(rel))))?;
        let files: Vec<RemoteFile> = rels
            .iter()
            .zip(lens)
            .map(|(rel, len)| RemoteFile {
                location: location.clone(),
                rel: rel.to_string(),
                len,
                cache: Arc::default(),
            })
            .collect();
        let tails: Vec<(&RemoteFile, Range<u64>)> = files
            .iter()
            .filter(|f| f.len > 0)
            .map(|f| (f, f.len.saturating_sub(FOOTER_PREFETCH)..f.len))
            .collect();
        read_and_keep(location, &tails)?;
        Ok(files)
    }

    /// Keeps only the footer of what was read of the file's end (a copy, so the rest is freed).
    fn trim_to_footer(&self) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let Some((start, tail)) = c.last_mut() else {
            return;
        };
        let n = tail.len();
        if n < 8 || &tail[n - 4..] != b"PAR1" {
            return;
        }
        let footer = u32::from_le_bytes(tail[n - 8..n - 4].try_into().unwrap()) as usize + 8;
        if footer < n {
            *start += (n - footer) as u64;
            *tail = Bytes::copy_from_slice(&tail[n - footer..]);
        }
    }

    fn keep(&self, start: u64, bytes: Bytes) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.push((start, bytes));
        while c.len() > 1 && c.iter().map(|(_, b)| b.len() as u64).sum::<u64>() > CACHE_BYTES {
            c.remove(0);
        }
    }

    /// Bytes `start..end` if one kept read holds them all.
    fn kept(&self, start: u64, end: u64) -> Option<Bytes> {
        let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.iter().rev().find_map(|(s, b)| {
            (*s <= start && end <= s + b.len() as u64)
                .then(|| b.slice((start - s) as usize..(end - s) as usize))
        })
    }

    /// Bytes `start..end`, read (with at least [`READ_AHEAD`] bytes) if not kept.
    fn bytes(&self, start: u64, end: u64) -> parquet::errors::Result<Bytes> {
        if let Some(b) = self.kept(start, end) {
            return Ok(b);
        }
        let stop = end.max(start + READ_AHEAD).min(self.len);
        let (b, _) = self
            .location
            .round_trip(
                self.location
                    .get_range(&self.rel, GetRange::Bounded(start..stop)),
            )
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
        if (b.len() as u64) < end - start {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{} ended at {} bytes, before byte {end}",
                self.location.url_of(&self.rel),
                start + b.len() as u64
            )));
        }
        self.keep(start, b.clone());
        Ok(b.slice(..(end - start) as usize))
    }
}

impl Length for RemoteFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for RemoteFile {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // A page header: what the kept read holding `start` has from there, or a read ahead.
        let kept = {
            let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            c.iter().rev().find_map(|(s, b)| {
                (*s <= start && start < s + b.len() as u64).then(|| b.slice((start - s) as usize..))
            })
        };
        match kept {
            Some(b) => Ok(b.reader()),
            None => Ok(self
                .bytes(start, (start + READ_AHEAD).min(self.len))?
                .reader()),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, start + length as u64)
    }
}

/// Reads every range of `reads` (of its file) that its file has not kept, in one round trip, and
/// keeps them in their files.
fn read_and_keep(location: &Location, reads: &[(&RemoteFile, Range<u64>)]) -> Result<()> {
    let reads: Vec<&(&RemoteFile, Range<u64>)> = reads
        .iter()
        .filter(|(f, r)| f.kept(r.start, r.end).is_none())
        .collect();
    if reads.is_empty() {
        return Ok(());
    }
    let got = location.round_trip(try_join_all(
        reads
            .iter()
            .map(|(f, r)| location.get_range(&f.rel, GetRange::Bounded(r.clone()))),
    ))?;
    for ((f, r), (bytes, _)) in reads.iter().zip(got) {
        f.keep(r.start, bytes);
    }
    Ok(())
}

/// The Parquet files below a prefix of an object store. Files opened ahead (for a lookup, or
/// the next batch of an indexing run) are kept until read.
pub struct RemoteFiles {
    location: Location,
    opened: Mutex<HashMap<String, RemoteFile>>,
}

impl RemoteFiles {
    /// The files below `location`.
    pub fn new(location: Location) -> RemoteFiles {
        RemoteFiles {
            location,
            opened: Mutex::default(),
        }
    }

    /// Every `*.parquet` object below the prefix, outside hidden folders (as
    /// [`pq::parquet_files`] lists a local directory), sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .location
            .round_trip(self.location.list())?
            .into_iter()
            .filter(|rel| {
                rel.ends_with(".parquet") && !rel.split('/').any(|part| part.starts_with('.'))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Opens the files that partitions `ids` belong to and reads the row groups they name, in
    /// three round trips (lengths, footers, row groups; two when the footers' reads hold the row
    /// groups), so reading their rows sends no request.
    pub(super) fn prefetch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let groups = pq::by_file(ids);
        let loc = &self.location;
        let rels: Vec<&str> = groups.keys().copied().collect();
        let files = RemoteFile::open_all(loc, &rels)?;
        let mut reads = Vec::new();
        for (f, wanted) in files.iter().zip(groups.values()) {
            let name = loc.url_of(&f.rel);
            let reader = SerializedFileReader::new(f.clone())
                .map_err(|e| Error::Other(format!("{name} is not a readable Parquet file: {e}")))?;
            let md = reader.metadata();
            let which: Vec<usize> = if wanted.contains(&None) {
                (0..md.num_row_groups()).collect()
            } else {
                wanted.iter().flatten().copied().collect()
            };
            // The row groups' bytes, adjacent ones in one read.
            let mut ranges: Vec<Range<u64>> = which
                .iter()
                .filter_map(|&g| md.row_groups().get(g))
                .filter_map(|rg| {
                    let chunks = rg.columns().iter().map(|c| c.byte_range());
                    let start = chunks.clone().map(|(s, _)| s).min()?;
                    let end = chunks.map(|(s, l)| s + l).max()?;
                    (end > start).then_some(start..end)
                })
                .collect();
            ranges.sort_by_key(|r| r.start);
            let mut merged: Vec<Range<u64>> = Vec::new();
            for r in ranges {
                match merged.last_mut() {
                    Some(last) if r.start <= last.end + READ_AHEAD => {
                        last.end = last.end.max(r.end)
                    }
                    _ => merged.push(r),
                }
            }
            reads.extend(merged.into_iter().map(|r| (f, r)));
        }
        read_and_keep(loc, &reads)?;
        self.keep_opened(files);
        Ok(())
    }
}

impl ParquetFiles for RemoteFiles {
    type Reader = RemoteFile;
    fn open(&self, rel: &str) -> Result<RemoteFile> {
        let opened = self
            .opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(rel);
        match opened {
            Some(f) => Ok(f),
            None => Ok(RemoteFile::open_all(&self.location, &[rel])?.remove(0)),
        }
    }
    fn name(&self, rel: &str) -> String {
        self.location.url_of(rel)
    }
    fn open_ahead(&self, rels: &[String]) -> Result<()> {
        let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
        let files = RemoteFile::open_all(&self.location, &rels)?;
        // Kept by the hundred: only their footers, not the 64 KiB read to find them.
        for f in &files {
            f.trim_to_footer();
        }
        self.keep_opened(files);
        Ok(())
    }
}

impl RemoteFiles {
    fn keep_opened(&self, files: Vec<RemoteFile>) {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        for f in files {
            opened.insert(f.rel.clone(), f);
        }
    }
}
