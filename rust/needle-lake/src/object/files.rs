//! Parquet files on an object store, read with ranged requests through the Parquet reader's
//! [`ChunkReader`].

use super::location::Location;
use crate::pq::{self, ParquetFiles};
use crate::{Error, Result};
use bytes::{Buf, Bytes};
use futures::future::{join_all, try_join_all};
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
/// Largest candidate file a lookup reads whole, in one request, rather than its footer first and
/// then its row groups: a round trip to an object store (10-30 ms) is worth about 2 MB at the
/// 100 MB/s one S3 connection carries, so reading a file this small whole costs less than the
/// round trip it saves.
pub const WHOLE_FILE_BYTES: u64 = 2 << 20;

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
    /// Opens files `rels` of `location` and reads their footers. `known[i]` is the length of
    /// `rels[i]` if it is known without asking (from a listing, or recorded by the index): then
    /// the footer is read in one round trip, else the length is asked first (a `HEAD`), in two.
    /// With `whole`, a file of at most [`WHOLE_FILE_BYTES`] is read whole in that round trip
    /// (a lookup's candidates: their row groups are read next anyway).
    ///
    /// A suffix range (`bytes=-N`) would read a footer without the length, in one, but some
    /// S3-compatible servers (s3s-fs 0.14) fail one longer than the object with a server error
    /// instead of answering the whole object, as S3 does, and the client retries a server error
    /// for seconds. A length is checked against the object's length that the footer's read
    /// returns: an object replaced since its length was recorded is read again at its length
    /// now (asked for when the read fails), never read at a wrong offset. A footer read whole
    /// holds the row groups of a small file: they are not read again.
    fn open_all(
        location: &Location,
        rels: &[&str],
        known: &[Option<u64>],
        whole: bool,
    ) -> Result<Vec<RemoteFile>> {
        let file = |rel: &str, len: u64| RemoteFile {
            location: location.clone(),
            rel: rel.to_string(),
            len,
            cache: Arc::default(),
        };
        let unknown: Vec<usize> = (0..rels.len()).filter(|&i| known[i].is_none()).collect();
        let mut files: Vec<RemoteFile> = rels
            .iter()
            .zip(known)
            .map(|(rel, len)| file(rel, len.unwrap_or(0)))
            .collect();
        Self::ask_lengths(location, &mut files, &unknown)?;
        // The footers (or whole files); a recorded length that does not hold is corrected and
        // read again, unless the read holds the whole object anyway.
        let first: Vec<(usize, Range<u64>)> = (0..files.len())
            .filter(|&i| files[i].len > 0)
            .map(|i| (i, files[i].first_read(whole)))
            .collect();
        let got =
            location.round_trip(join_all(first.iter().map(|(i, r)| {
                location.get_range(&files[*i].rel, GetRange::Bounded(r.clone()))
            })));
        let (mut again, mut ask) = (Vec::new(), Vec::new());
        for ((i, range), read) in first.into_iter().zip(got) {
            match read {
                Ok((bytes, len)) if len == files[i].len => files[i].keep(range.start, bytes),
                Ok((bytes, len)) if range.start == 0 && bytes.len() as u64 == len => {
                    files[i].len = len;
                    files[i].keep(0, bytes);
                }
                Ok((_, len)) => {
                    files[i].len = len;
                    again.push(i);
                }
                Err(_) if known[i].is_some() => ask.push(i),
                Err(e) => return Err(e),
            }
        }
        Self::ask_lengths(location, &mut files, &ask)?;
        again.extend(ask);
        again.retain(|&i| files[i].len > 0);
        let reads: Vec<(&RemoteFile, Range<u64>)> = again
            .iter()
            .map(|&i| (&files[i], files[i].tail()))
            .collect();
        read_and_keep(location, &reads)?;
        Ok(files)
    }

    /// Asks the lengths of `files[i]` for every `i` of `which` (one round trip, none if empty).
    fn ask_lengths(location: &Location, files: &mut [RemoteFile], which: &[usize]) -> Result<()> {
        if which.is_empty() {
            return Ok(());
        }
        let lens = location.round_trip(try_join_all(
            which.iter().map(|&i| location.len(&files[i].rel)),
        ))?;
        for (&i, len) in which.iter().zip(lens) {
            files[i].len = len;
        }
        Ok(())
    }

    /// The bytes read first from the end of the file: its footer, for most files.
    fn tail(&self) -> Range<u64> {
        self.len.saturating_sub(FOOTER_PREFETCH)..self.len
    }

    /// The bytes read first: the whole file if `whole` and it is small enough, else its tail.
    fn first_read(&self, whole: bool) -> Range<u64> {
        if whole && self.len <= WHOLE_FILE_BYTES {
            0..self.len
        } else {
            self.tail()
        }
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
    /// Files' lengths known without asking: from [`RemoteFiles::list`], or recorded by the index.
    lengths: Mutex<HashMap<String, u64>>,
}

impl RemoteFiles {
    /// The files below `location`.
    pub fn new(location: Location) -> RemoteFiles {
        RemoteFiles {
            location,
            opened: Mutex::default(),
            lengths: Mutex::default(),
        }
    }

    /// These files, with the lengths of some of them known (as an index records them), so that
    /// opening one reads its footer without asking its length first.
    pub fn knowing(self, lengths: impl IntoIterator<Item = (String, u64)>) -> RemoteFiles {
        self.lengths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(lengths);
        self
    }

    /// The lengths of the files known so far (listed, or given by [`RemoteFiles::knowing`]).
    pub fn lengths(&self) -> HashMap<String, u64> {
        self.lengths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn known(&self, rels: &[&str]) -> Vec<Option<u64>> {
        let lengths = self.lengths.lock().unwrap_or_else(|e| e.into_inner());
        rels.iter().map(|rel| lengths.get(*rel).copied()).collect()
    }

    /// Every `*.parquet` object below the prefix, outside hidden folders (as
    /// [`pq::parquet_files`] lists a local directory), sorted. Their lengths, which the listing
    /// gives, are kept for opening them.
    pub fn list(&self) -> Result<Vec<String>> {
        let listed: Vec<(String, u64)> = self
            .location
            .round_trip(self.location.list_sized())?
            .into_iter()
            .filter(|(rel, _)| {
                rel.ends_with(".parquet") && !rel.split('/').any(|part| part.starts_with('.'))
            })
            .collect();
        let mut out: Vec<String> = listed.iter().map(|(rel, _)| rel.clone()).collect();
        self.lengths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(listed);
        out.sort();
        Ok(out)
    }

    /// Opens the files that partitions `ids` belong to and reads the row groups they name, in
    /// two round trips (footers, row groups; one for files read whole, [`WHOLE_FILE_BYTES`],
    /// or when the footers' reads hold the row groups),
    /// and one more first for the lengths of files whose lengths are not known, so reading their
    /// rows sends no request.
    pub(crate) fn prefetch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let groups = pq::by_file(ids);
        let loc = &self.location;
        let rels: Vec<&str> = groups.keys().copied().collect();
        let files = RemoteFile::open_all(loc, &rels, &self.known(&rels), true)?;
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
            None => Ok(
                RemoteFile::open_all(&self.location, &[rel], &self.known(&[rel]), false)?.remove(0),
            ),
        }
    }
    fn name(&self, rel: &str) -> String {
        self.location.url_of(rel)
    }
    fn open_ahead(&self, rels: &[String]) -> Result<()> {
        let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
        let files = RemoteFile::open_all(&self.location, &rels, &self.known(&rels), false)?;
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
