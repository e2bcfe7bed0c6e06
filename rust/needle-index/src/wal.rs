//! Write-ahead log: every change is appended and fsynced here before it is acknowledged.
//!
//! A file `wal-<seq>.log` is a 24-byte header followed by records
//! `[len u32][crc32c(len) u32][crc32c(payload) u32][payload]`. A crash can leave only the
//! last record incomplete (a torn tail); recovery truncates it. Any other damage is an error.

use crate::codec::{Dec, Enc};
use crate::error::{Error, Result};
use crate::fsutil::sync_dir;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const WAL_MAGIC: &[u8; 8] = b"NDLWALv1";
const WAL_VERSION: u32 = 1;
const WAL_HEADER: usize = 24;
const REC_HEADER: usize = 12;

/// One logged change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// A new partition entry with its complete filter (partition-major fingerprints).
    Append {
        uid: u64,
        id: String,
        count: u64,
        slots: u32,
        fps: Vec<u32>,
    },
    /// Remove one stored copy of each hash from the partition `id`.
    DeleteValues { id: String, hashes: Vec<u64> },
    /// Remove every entry of the partition `id`.
    RemovePartition { id: String },
}

impl Record {
    pub fn encode(&self, bits: u32) -> Vec<u8> {
        let mut e = Enc::default();
        match self {
            Record::Append {
                uid,
                id,
                count,
                slots,
                fps,
            } => {
                e.u8(1);
                e.u64(*uid);
                e.str(id);
                e.u64(*count);
                e.u32(*slots);
                let w = bits as usize / 8;
                e.0.reserve(fps.len() * w);
                for &f in fps {
                    e.bytes(&f.to_le_bytes()[..w]);
                }
            }
            Record::DeleteValues { id, hashes } => {
                e.u8(2);
                e.str(id);
                e.u32(hashes.len() as u32);
                for &h in hashes {
                    e.u64(h);
                }
            }
            Record::RemovePartition { id } => {
                e.u8(3);
                e.str(id);
            }
        }
        e.0
    }

    pub fn decode(buf: &[u8], path: &Path, bits: u32, buckets: u32) -> Result<Record> {
        let mut d = Dec::new(buf, path);
        let r = match d.u8()? {
            1 => {
                let uid = d.u64()?;
                let id = d.str()?;
                let count = d.u64()?;
                let slots = d.u32()?;
                let w = bits as usize / 8;
                let n = buckets as usize * slots as usize;
                let raw = d.take(n * w)?;
                let fps = raw
                    .chunks_exact(w)
                    .map(|c| {
                        let mut b = [0u8; 4];
                        b[..w].copy_from_slice(c);
                        u32::from_le_bytes(b)
                    })
                    .collect();
                Record::Append {
                    uid,
                    id,
                    count,
                    slots,
                    fps,
                }
            }
            2 => {
                let id = d.str()?;
                let n = d.u32()? as usize;
                let mut hashes = Vec::with_capacity(n.min(1 << 20));
                for _ in 0..n {
                    hashes.push(d.u64()?);
                }
                Record::DeleteValues { id, hashes }
            }
            3 => Record::RemovePartition { id: d.str()? },
            t => return Err(Error::corrupt(path, format!("unknown record type {t}"))),
        };
        if !d.done() {
            return Err(Error::corrupt(path, "trailing bytes in record"));
        }
        Ok(r)
    }
}

/// File name of WAL number `seq`.
pub fn wal_name(seq: u64) -> String {
    format!("wal-{seq:016x}.log")
}

/// Parses a WAL file name.
pub fn parse_wal_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    u64::from_str_radix(hex, 16).ok()
}

/// The open WAL being appended to.
pub(crate) struct Wal {
    pub seq: u64,
    pub path: PathBuf,
    file: File,
    pub len: u64,
    sync: bool,
}

impl Wal {
    /// Creates WAL `seq` in `dir` with its header, durably (file and directory synced).
    pub fn create(dir: &Path, seq: u64, sync: bool) -> Result<Wal> {
        let path = dir.join(wal_name(seq));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut h = Enc::default();
        h.bytes(WAL_MAGIC);
        h.u32(WAL_VERSION);
        h.u64(seq);
        let crc = crc32c::crc32c(&h.0);
        h.u32(crc);
        file.write_all(&h.0).map_err(|e| Error::io(&path, e))?;
        if sync {
            file.sync_all().map_err(|e| Error::io(&path, e))?;
            sync_dir(dir)?;
        }
        Ok(Wal {
            seq,
            path,
            file,
            len: WAL_HEADER as u64,
            sync,
        })
    }

    /// Reopens an existing, already validated WAL of `len` bytes for appending.
    pub fn reopen(path: &Path, seq: u64, len: u64, sync: bool, read_only: bool) -> Result<Wal> {
        let file = if read_only {
            OpenOptions::new().read(true).open(path)
        } else {
            OpenOptions::new().append(true).open(path)
        }
        .map_err(|e| Error::io(path, e))?;
        Ok(Wal {
            seq,
            path: path.to_path_buf(),
            file,
            len,
            sync,
        })
    }

    /// Appends one record and fsyncs; when this returns Ok the record survives a crash.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        let mut buf = Vec::with_capacity(REC_HEADER + payload.len());
        let len = payload.len() as u32;
        buf.extend_from_slice(&len.to_le_bytes());
        buf.extend_from_slice(&crc32c::crc32c(&len.to_le_bytes()).to_le_bytes());
        buf.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        buf.extend_from_slice(payload);
        // One write call per record: after a crash only a prefix of it can be on disk.
        self.file
            .write_all(&buf)
            .map_err(|e| Error::io(&self.path, e))?;
        if self.sync {
            self.file
                .sync_data()
                .map_err(|e| Error::io(&self.path, e))?;
        }
        self.len += buf.len() as u64;
        Ok(())
    }
}

/// Reads every record of a WAL file. If `last` (the newest WAL) and its final record is
/// incomplete, the file is truncated to its last complete record; damage anywhere else is
/// a [`Error::Corrupt`]. With `repair` false (read-only opens) the torn tail is ignored but
/// left in place. Returns the payloads and the valid length.
pub(crate) fn read_wal(
    path: &Path,
    seq: u64,
    last: bool,
    repair: bool,
) -> Result<(Vec<Vec<u8>>, u64)> {
    let buf = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if buf.len() < WAL_HEADER {
        // The header is written and synced before the file is referenced by anything;
        // a short header can only come from a crash during creation of the newest file.
        if last {
            if repair {
                drop(Wal::create(path.parent().unwrap(), seq, true)?);
            }
            return Ok((Vec::new(), WAL_HEADER as u64));
        }
        return Err(Error::corrupt(path, "truncated header"));
    }
    if &buf[..8] != WAL_MAGIC {
        return Err(Error::corrupt(path, "not a write-ahead log (bad magic)"));
    }
    let hcrc = u32::from_le_bytes(buf[20..24].try_into().unwrap());
    if crc32c::crc32c(&buf[..20]) != hcrc {
        return Err(Error::corrupt(path, "header checksum mismatch"));
    }
    let version = u32::from_le_bytes(buf[8..12].try_into().unwrap());
    let fseq = u64::from_le_bytes(buf[12..20].try_into().unwrap());
    if version != WAL_VERSION || fseq != seq {
        return Err(Error::corrupt(
            path,
            format!("unexpected version {version} or sequence {fseq}"),
        ));
    }
    let mut pos = WAL_HEADER;
    let mut out = Vec::new();
    let mut torn = None;
    while pos < buf.len() {
        let rest = buf.len() - pos;
        if rest < REC_HEADER {
            torn = Some(format!("incomplete record header at offset {pos}"));
            break;
        }
        let lenb: [u8; 4] = buf[pos..pos + 4].try_into().unwrap();
        let lcrc = u32::from_le_bytes(buf[pos + 4..pos + 8].try_into().unwrap());
        if crc32c::crc32c(&lenb) != lcrc {
            return Err(Error::corrupt(
                path,
                format!("record length checksum mismatch at offset {pos}"),
            ));
        }
        let len = u32::from_le_bytes(lenb) as usize;
        let pcrc = u32::from_le_bytes(buf[pos + 8..pos + 12].try_into().unwrap());
        if rest - REC_HEADER < len {
            torn = Some(format!("incomplete record at offset {pos}"));
            break;
        }
        let payload = &buf[pos + REC_HEADER..pos + REC_HEADER + len];
        if crc32c::crc32c(payload) != pcrc {
            if pos + REC_HEADER + len == buf.len() {
                torn = Some(format!("checksum mismatch in final record at offset {pos}"));
                break;
            }
            return Err(Error::corrupt(
                path,
                format!("record checksum mismatch at offset {pos}"),
            ));
        }
        out.push(payload.to_vec());
        pos += REC_HEADER + len;
    }
    if let Some(why) = torn {
        if !last {
            return Err(Error::corrupt(
                path,
                format!("{why} in a log that is not the newest"),
            ));
        }
        if !repair {
            return Ok((out, pos as u64));
        }
        // A torn tail is a write that was never acknowledged: drop it.
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        f.set_len(pos as u64).map_err(|e| Error::io(path, e))?;
        f.sync_all().map_err(|e| Error::io(path, e))?;
    }
    Ok((out, pos as u64))
}
