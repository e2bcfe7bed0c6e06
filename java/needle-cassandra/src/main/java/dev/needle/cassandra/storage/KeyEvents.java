package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import org.apache.cassandra.dht.Token;

/**
 * What a table's storage filter tells whoever publishes its keys to other nodes (the node
 * filter): the keys that may have become live, or stopped being live, here. Called on Cassandra's
 * threads (the write path among them): implementations must be quick and must not throw.
 */
public interface KeyEvents {
    /**
     * A write of this key was recorded in a memtable, before the write is acknowledged; {@code
     * withLiveData} when it holds data that is live at its own time (an insert or update, not
     * only deletions or expired cells).
     */
    void written(ByteBuffer key, Token token, boolean withLiveData);

    /** A feedback read proved that this key holds no live data here. */
    void provenDead(ByteBuffer key, Token token);

    /**
     * An SSTable that did not come through this node's write path (streaming, import) holds this
     * key, perhaps live; reported before the SSTable goes live where Cassandra allows it.
     */
    void arriving(Token token);
}
