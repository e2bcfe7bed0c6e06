//! The manifest: which segments make up the index, the deletes and removals applied to
//! them, and where WAL replay starts. Replaced atomically (temp file, fsync, rename, fsync dir).

use crate::codec::{Dec, Enc};
use crate::error::{Error, Result};
use crate::fsutil::sync_dir;
use std::io::Write;
use std::path::Path;

pub(crate) const MANIFEST: &str = "MANIFEST";
const MANIFEST_TMP: &str = "MANIFEST.tmp";
const MAN_MAGIC: &[u8; 8] = b"NDLMANv1";
const MAN_VERSION: u32 = 1;

/// A segment as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ManSeg {
    pub id: u64,
    /// uids of removed partition entries.
    pub removed: Vec<u64>,
    /// Deleted slots: `bucket * row_slots + slot`.
    pub deleted: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Manifest {
    pub bits: u32,
    pub buckets: u32,
    pub generation: u64,
    pub wal_start: u64,
    pub next_seg_id: u64,
    pub next_uid: u64,
    pub segments: Vec<ManSeg>,
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.bytes(MAN_MAGIC);
        e.u32(MAN_VERSION);
        e.u32(self.bits);
        e.u32(self.buckets);
        e.u64(self.generation);
        e.u64(self.wal_start);
        e.u64(self.next_seg_id);
        e.u64(self.next_uid);
        e.u32(self.segments.len() as u32);
        for s in &self.segments {
            e.u64(s.id);
            e.u32(s.removed.len() as u32);
            for &u in &s.removed {
                e.u64(u);
            }
            e.u64(s.deleted.len() as u64);
            for &d in &s.deleted {
                e.u64(d);
            }
        }
        let crc = crc32c::crc32c(&e.0);
        e.u32(crc);
        e.0
    }

    pub fn decode(buf: &[u8], path: &Path) -> Result<Manifest> {
        if buf.len() < 12 {
            return Err(Error::corrupt(path, "truncated"));
        }
        if &buf[..8] != MAN_MAGIC {
            return Err(Error::corrupt(path, "not a manifest (bad magic)"));
        }
        let (body, crc) = buf.split_at(buf.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(Error::corrupt(
                path,
                "checksum mismatch (damaged or truncated)",
            ));
        }
        let mut d = Dec::new(body, path);
        d.take(8)?;
        let version = d.u32()?;
        if version != MAN_VERSION {
            return Err(Error::corrupt(
                path,
                format!("unsupported manifest version {version}"),
            ));
        }
        let mut m = Manifest {
            bits: d.u32()?,
            buckets: d.u32()?,
            generation: d.u64()?,
            wal_start: d.u64()?,
            next_seg_id: d.u64()?,
            next_uid: d.u64()?,
            segments: Vec::new(),
        };
        let n = d.u32()?;
        for _ in 0..n {
            let id = d.u64()?;
            let nr = d.u32()?;
            let mut removed = Vec::new();
            for _ in 0..nr {
                removed.push(d.u64()?);
            }
            let nd = d.u64()?;
            let mut deleted = Vec::new();
            for _ in 0..nd {
                deleted.push(d.u64()?);
            }
            m.segments.push(ManSeg {
                id,
                removed,
                deleted,
            });
        }
        if !d.done() {
            return Err(Error::corrupt(path, "trailing bytes"));
        }
        if !matches!(m.bits, 8 | 16 | 32) || m.buckets == 0 {
            return Err(Error::corrupt(path, "impossible configuration"));
        }
        Ok(m)
    }

    /// Atomically replaces `dir/MANIFEST` with this manifest.
    pub fn store(&self, dir: &Path, sync: bool) -> Result<()> {
        let tmp = dir.join(MANIFEST_TMP);
        let dst = dir.join(MANIFEST);
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(&self.encode())
            .map_err(|e| Error::io(&tmp, e))?;
        if sync {
            f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        }
        drop(f);
        std::fs::rename(&tmp, &dst).map_err(|e| Error::io(&dst, e))?;
        if sync {
            sync_dir(dir)?;
        }
        Ok(())
    }

    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST);
        let buf = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        Manifest::decode(&buf, &path)
    }
}
