//! The write path: appends, deletes and removals, logged before they are applied.

use super::recovery::apply;
use super::*;

impl Index {
    /// Adds a partition entry holding `values` under `id`. Durable when this returns.
    /// Adding again under an existing id adds a second entry for the same id. If the
    /// append fills the memtable, it is flushed; an error of that flush is returned even
    /// though the append itself is already durable (retrying adds a duplicate entry, which
    /// costs space but never correctness).
    pub fn append_values(&self, id: &str, values: &[Value]) -> Result<u64> {
        let hashes: Vec<u64> = values.iter().map(Value::hash).collect();
        self.append_hashes(id, &hashes)
    }

    /// Like [`append_values`](Self::append_values), for values already hashed with [`Value::hash`].
    pub fn append_hashes(&self, id: &str, hashes: &[u64]) -> Result<u64> {
        // The filter is built before taking the writer lock: it is the CPU-heavy part.
        let f = PartitionFilter::build(hashes, self.cfg.buckets, self.cfg.fingerprint_bits);
        self.append_filter(id, f)
    }

    pub(super) fn writable(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::InvalidArgument(format!(
                "index {} is open read-only",
                self.dir.display()
            )));
        }
        Ok(())
    }

    pub(super) fn append_filter(&self, id: &str, f: PartitionFilter) -> Result<u64> {
        self.writable()?;
        // A log record's length is a u32, and slot positions within a row are u32.
        if f.data.len() as u64 * self.cfg.fingerprint_bits as u64 / 8
            > (u32::MAX as u64 - (1 << 20))
        {
            return Err(Error::InvalidArgument(format!(
                "partition {id:?} needs {} slots per bucket; use more buckets",
                f.slots
            )));
        }
        let mut w = lock(&self.writer);
        let uid = w.next_uid;
        let rec = Record::Append {
            uid,
            id: id.to_string(),
            count: f.count,
            slots: f.slots,
            fps: f.data,
        };
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        w.next_uid += 1;
        let mut snap = Snapshot::clone(&self.state.load());
        apply(&self.cfg, &self.opts, &mut snap, rec)?;
        let full = snap.mem_bytes() >= self.opts.flush_bytes;
        self.state.store(Arc::new(snap));
        if full {
            self.flush_locked(&mut w)?;
        }
        Ok(uid)
    }

    /// Removes one stored copy of each value from partition `id`. The caller asserts that
    /// each value was added to `id` and not deleted since (deleting a value that is not
    /// there could erase another value's fingerprint). If any value has no matching
    /// fingerprint in `id`, nothing is changed and [`Error::NotFound`] is returned.
    pub fn delete_values(&self, id: &str, values: &[Value]) -> Result<()> {
        let hashes: Vec<u64> = values.iter().map(Value::hash).collect();
        self.delete_hashes(id, &hashes)
    }

    /// Like [`delete_values`](Self::delete_values), for hashed values.
    pub fn delete_hashes(&self, id: &str, hashes: &[u64]) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        let rec = Record::DeleteValues {
            id: id.to_string(),
            hashes: hashes.to_vec(),
        };
        let mut snap = Snapshot::clone(&self.state.load());
        // Resolve against a draft first so a missing value changes nothing, then log.
        apply(&self.cfg, &self.opts, &mut snap, rec.clone())?;
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        self.state.store(Arc::new(snap));
        Ok(())
    }

    /// Removes every entry of partition `id` (a tombstone; space is reclaimed by the next
    /// merge). Returns [`Error::NotFound`] if no live entry has that id.
    pub fn remove_partition(&self, id: &str) -> Result<()> {
        self.writable()?;
        let mut w = lock(&self.writer);
        let rec = Record::RemovePartition { id: id.to_string() };
        let mut snap = Snapshot::clone(&self.state.load());
        apply(&self.cfg, &self.opts, &mut snap, rec.clone())?;
        w.wal.append(&rec.encode(self.cfg.fingerprint_bits))?;
        self.state.store(Arc::new(snap));
        Ok(())
    }
}
