package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.cassandra.dht.Murmur3Partitioner;
import org.junit.jupiter.api.Test;

/** A partition's node-filter key and filter hash, as format/node-filter-sync-v2.md gives them. */
class NodeKeyTest {
    @Test
    void aMurmur3TokenIsItsOwnKey() {
        assertEquals(-42L, NodeKey.of(new Murmur3Partitioner.LongToken(-42)));
    }

    @Test
    void theFilterHashMatchesTheTestVectors() {
        assertEquals(0x5692161d100b05e5L, NodeKey.filterHash(1));
        assertEquals(0x5a682afe7965debdL, NodeKey.filterHash(0x7fffffffffffffffL));
        assertEquals(0xda26e52fa3730902L, NodeKey.filterHash(-2));
    }
}
