package dev.needle.cassandra.storage;

import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.sstable.Descriptor;

/**
 * One table's storage-filter state at one moment, immutable and swapped as a whole: which
 * memtables and SSTables hold the table's data, what Needle knows of each, and whether that
 * knowledge is complete. Every lookup reads one TableSources, so it never sees half of a change (an
 * SSTable added but its memtable not yet dropped, say).
 *
 * <p>The set of sources is immutable; the key sets of the memtables inside it grow as writes
 * arrive (they must: a write is visible to lookups as soon as the memtable holds it).
 *
 * <p>Invariant: every memtable and SSTable that holds the table's data on this node is either
 * represented here (a memtable key set, an SSTable's keys) or makes the sources not
 * {@linkplain #ready() ready}: an {@linkplain #untracked untracked memtable} or an {@linkplain
 * #unknown unknown SSTable}. Sources that are not ready answer LIVE for every key.
 */
final class TableSources {
    static final TableSources INITIAL =
            new TableSources(new MemtableKeys[0], Set.of(), Map.of(), Set.of(), false, false);

    /** Key sets of the memtables, each filled by the write path since the memtable was created. */
    final MemtableKeys[] memtables;
    /** Memtables that may hold writes this index did not see (they predate it, or indexing a write failed). */
    final Set<Memtable> untracked;
    /** What is known of each live SSTable, by descriptor (the same SSTable may be served by several readers over time). */
    final Map<Descriptor, SSTableKeys> sstables;

    private final SSTableKeys[] sstableArray;
    /** Live SSTables whose keys are not known yet (being scanned, or their scan failed). */
    final Set<Descriptor> unknown;
    /** The initial load or build has finished. */
    final boolean initialized;
    /** The index was dropped or the node is stopping. */
    final boolean closed;

    private final long sstableExpiryFloor;

    private TableSources(
            MemtableKeys[] memtables,
            Set<Memtable> untracked,
            Map<Descriptor, SSTableKeys> sstables,
            Set<Descriptor> unknown,
            boolean initialized,
            boolean closed) {
        this.memtables = memtables;
        this.untracked = untracked;
        this.sstables = sstables;
        this.sstableArray = sstables.values().toArray(new SSTableKeys[0]);
        this.unknown = unknown;
        this.initialized = initialized;
        this.closed = closed;
        long floor = Long.MIN_VALUE;
        for (SSTableKeys k : sstableArray) {
            floor = Math.max(floor, k.expiryFloor);
        }
        this.sstableExpiryFloor = floor;
    }

    /** Whether lookups can answer anything but LIVE. */
    boolean ready() {
        return initialized && !closed && untracked.isEmpty() && unknown.isEmpty();
    }

    /** The key set of a memtable, or null if these sources have none for it. */
    MemtableKeys keysOf(Memtable memtable) {
        for (MemtableKeys m : memtables) {
            if (m.memtable == memtable) {
                return m;
            }
        }
        return null;
    }

    /**
     * The state of a partition key on this node, for a read whose "now" is {@code nowInSec}: LIVE
     * when some source holds live-looking data for it newer than every partition deletion of it;
     * DELETED when sources hold it with nothing live; ABSENT when no source holds it. LIVE whenever
     * the sources are not ready, or the read's "now" is earlier than a judgement of expired data.
     *
     * @param token the key's token, to skip SSTables whose range cannot hold it (null: probe all)
     */
    KeyState lookup(ByteBuffer key, long hash, Token token, long nowInSec, boolean tracksDeletions) {
        if (!ready() || nowInSec < expiryFloor()) {
            return KeyState.LIVE;
        }
        if (!tracksDeletions) {
            for (MemtableKeys m : memtables) {
                if (m.get(key) != null) {
                    return KeyState.LIVE;
                }
            }
            for (SSTableKeys s : sstableArray) {
                if (s.covers(token) && s.lookup(hash) != KeyState.ABSENT) {
                    return KeyState.LIVE;
                }
            }
            return KeyState.ABSENT;
        }
        // One pass: the newest partition deletion of the key anywhere, the newest live data in a
        // memtable, and the newest timestamp of an SSTable that holds live-looking data for it.
        boolean seen = false;
        long deletedAt = Long.MIN_VALUE;
        long newestLive = Long.MIN_VALUE;
        for (MemtableKeys m : memtables) {
            MemtableKeys.Entry e = m.get(key);
            if (e != null) {
                seen = true;
                deletedAt = Math.max(deletedAt, e.deletedAt);
                newestLive = Math.max(newestLive, e.maxLiveTimestamp);
            }
        }
        for (SSTableKeys s : sstableArray) {
            if (!s.covers(token)) {
                continue;
            }
            KeyState st = s.lookup(hash);
            if (st == KeyState.ABSENT) {
                continue;
            }
            seen = true;
            if (st == KeyState.LIVE) {
                newestLive = Math.max(newestLive, s.maxTimestamp);
            }
            if (!s.tombstones.isEmpty()) {
                Tombstone t = s.tombstones.get(key);
                if (t != null) {
                    deletedAt = Math.max(deletedAt, t.markedForDeleteAt());
                }
            }
        }
        // Data no newer than a partition deletion of the key is shadowed by it.
        if (newestLive > deletedAt) {
            return KeyState.LIVE;
        }
        return seen ? KeyState.DELETED : KeyState.ABSENT;
    }

    /**
     * What each source says of a key, for an operator asking why a read was or was not skipped:
     * one line per memtable holding the key and per SSTable whose filter matches it, as
     * {source, answer, detail}.
     */
    List<String[]> explain(ByteBuffer key, long hash, Token token) {
        List<String[]> out = new ArrayList<>();
        for (MemtableKeys m : memtables) {
            MemtableKeys.Entry e = m.get(key);
            if (e != null) {
                out.add(new String[] {
                    "memtable " + Integer.toHexString(System.identityHashCode(m.memtable)),
                    e.maxLiveTimestamp > e.deletedAt ? "LIVE" : "DELETED",
                    "newest live data " + time(e.maxLiveTimestamp) + ", partition deletion " + time(e.deletedAt)
                });
            }
        }
        for (Map.Entry<Descriptor, SSTableKeys> en : sstables.entrySet()) {
            SSTableKeys s = en.getValue();
            if (!s.covers(token)) {
                continue;
            }
            KeyState st = s.lookup(hash);
            if (st != KeyState.ABSENT) {
                Tombstone t = s.tombstones.get(key);
                out.add(new String[] {
                    en.getKey().baseFile().name(),
                    st.name(),
                    "newest timestamp " + time(s.maxTimestamp)
                            + (t == null ? "" : ", partition deletion " + time(t.markedForDeleteAt()))
                });
            }
        }
        for (Memtable m : untracked) {
            out.add(new String[] {
                "memtable " + Integer.toHexString(System.identityHashCode(m)),
                "UNTRACKED",
                "may hold writes the index did not see: nothing is skipped until it is flushed"
            });
        }
        for (Descriptor d : unknown) {
            out.add(new String[] {d.baseFile().name(), "UNKNOWN", "keys not read yet: nothing is skipped until they are"
            });
        }
        return out;
    }

    private static String time(long micros) {
        return micros == Long.MIN_VALUE ? "none" : micros == Long.MAX_VALUE ? "unknown" : String.valueOf(micros);
    }

    /** Reads whose "now" is earlier than this may see data that a judgement here called expired. */
    long expiryFloor() {
        long floor = sstableExpiryFloor;
        for (MemtableKeys m : memtables) {
            floor = Math.max(floor, m.expiryFloor());
        }
        return floor;
    }

    SSTableKeys[] sstableArray() {
        return sstableArray;
    }

    Editor edit() {
        return new Editor(this);
    }

    /** A copy of the sources being changed; {@link #build()} makes the next TableSources. */
    static final class Editor {
        private final Map<Memtable, MemtableKeys> memtables = new IdentityHashMap<>();
        private final Set<Memtable> untracked = Collections.newSetFromMap(new IdentityHashMap<>());
        private final Map<Descriptor, SSTableKeys> sstables;
        private final Set<Descriptor> unknown;
        private boolean initialized;
        private boolean closed;
        /** Something now holds data whose keys Needle has not seen (an unknown SSTable, an untracked memtable). */
        boolean unseenData;

        private Editor(TableSources v) {
            for (MemtableKeys m : v.memtables) {
                memtables.put(m.memtable, m);
            }
            untracked.addAll(v.untracked);
            sstables = new LinkedHashMap<>(v.sstables);
            unknown = new LinkedHashSet<>(v.unknown);
            initialized = v.initialized;
            closed = v.closed;
        }

        Editor addMemtable(MemtableKeys keys) {
            memtables.put(keys.memtable, keys);
            return this;
        }

        /** The memtable's data is now in SSTables (or discarded): its key set goes, and so does its untracked mark. */
        Editor removeMemtable(Memtable m) {
            memtables.remove(m);
            untracked.remove(m);
            return this;
        }

        Editor untrack(Memtable m) {
            untracked.add(m);
            unseenData = true;
            return this;
        }

        Iterable<Memtable> memtablesAndUntracked() {
            Set<Memtable> all = Collections.newSetFromMap(new IdentityHashMap<>());
            all.addAll(memtables.keySet());
            all.addAll(untracked);
            return all;
        }

        Editor putSSTable(Descriptor d, SSTableKeys keys) {
            sstables.put(d, keys);
            unknown.remove(d);
            return this;
        }

        /** A live SSTable whose keys are not known: nothing is skipped until they are. */
        Editor markUnknown(Descriptor d) {
            sstables.remove(d);
            unknown.add(d);
            unseenData = true;
            return this;
        }

        Editor removeSSTable(Descriptor d) {
            sstables.remove(d);
            unknown.remove(d);
            return this;
        }

        boolean has(Descriptor d) {
            return sstables.containsKey(d) || unknown.contains(d);
        }

        boolean isUnknown(Descriptor d) {
            return unknown.contains(d);
        }

        Set<Descriptor> descriptors() {
            Set<Descriptor> all = new LinkedHashSet<>(sstables.keySet());
            all.addAll(unknown);
            return all;
        }

        Editor initialized() {
            initialized = true;
            return this;
        }

        Editor closed() {
            closed = true;
            return this;
        }

        TableSources build() {
            return new TableSources(
                    memtables.values().toArray(new MemtableKeys[0]),
                    untracked.isEmpty() ? Set.of() : Collections.unmodifiableSet(untracked),
                    Collections.unmodifiableMap(sstables),
                    Collections.unmodifiableSet(unknown),
                    initialized,
                    closed);
        }
    }
}
