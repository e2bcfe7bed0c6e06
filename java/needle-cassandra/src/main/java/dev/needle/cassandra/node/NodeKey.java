package dev.needle.cassandra.node;

import dev.needle.filter.Hashing;
import java.nio.ByteBuffer;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;

/**
 * How node filters name a partition: by its token, so that an owner can tell from a published key
 * alone which nodes replicate it and send each change only to them ({@link Receivers}). With
 * Murmur3Partitioner (Cassandra's default) the token's own 64 bits; with another partitioner a
 * hash of the token's bytes (such keys go to every other node, {@link Receivers#routable}).
 *
 * <p>Filters do not take the token as it is: the keys one node receives lie in a few token
 * ranges, and a filter that picks its buckets from the high bits would crowd them into a few
 * buckets. {@link #filterHash} mixes the bits first (a bijection, so no two tokens collide).
 */
final class NodeKey {
    private NodeKey() {}

    /** The node-filter key of a partition with token {@code token}. */
    static long of(Token token) {
        if (token instanceof Murmur3Partitioner.LongToken t) {
            return t.token;
        }
        ByteBuffer bytes = token.getPartitioner().getTokenFactory().toByteArray(token);
        return Hashing.hash(bytes);
    }

    /** The hash a node filter stores for {@code key}: its bits mixed (SplitMix64's finalizer). */
    static long filterHash(long key) {
        long z = key;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
