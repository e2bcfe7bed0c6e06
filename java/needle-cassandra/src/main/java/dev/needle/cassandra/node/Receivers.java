package dev.needle.cassandra.node;

import dev.needle.cassandra.base.NeedleOptions.CopyScope;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.AbstractReplicationStrategy;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.TokenMetadata;
import org.apache.cassandra.schema.ReplicationParams;
import org.apache.cassandra.service.StorageService;

/**
 * Which other nodes receive an owner's changes of a key, for one keyspace's replication and one
 * ring: with {@link CopyScope#REPLICAS}, the key's replicas other than this node (a coordinator
 * that replicates a key holds the copies its reads need, and no other); with {@link
 * CopyScope#ALL}, every other node. Immutable; an owner publishes one epoch to one set of
 * receivers and starts a new epoch when they change (a node joins, leaves or moves, the replication
 * changes).
 *
 * <p>Every node computes the same {@link #fingerprint} from the same ring: an owner sends it with
 * each snapshot, and a coordinator trusts a copy only while its own receivers have the same one (both
 * then agree on which keys the copy holds).
 */
final class Receivers {
    /** Identifies the ring and the replica sets (or, for ALL, the members): equal on every node that sees the same ring. */
    final long fingerprint;
    /** The nodes that receive changes, by receiver index. */
    final UUID[] hostIds;

    final InetAddressAndPort[] endpoints;
    /** Range ends, sorted: range i holds the keys in (tokens[i-1], tokens[i]], range 0 also those above the last. */
    private final long[] tokens;
    /** Receiver indexes of each range; null when every key goes to every receiver. */
    private final int[][] byRange;

    private final int[] all;

    Receivers(long fingerprint, UUID[] hostIds, InetAddressAndPort[] endpoints, long[] tokens, int[][] byRange) {
        this.fingerprint = fingerprint;
        this.hostIds = hostIds;
        this.endpoints = endpoints;
        this.tokens = tokens;
        this.byRange = byRange;
        this.all = new int[hostIds.length];
        for (int i = 0; i < all.length; i++) {
            all[i] = i;
        }
    }

    /** Receivers that get every key: each to each of {@code hostIds} (at {@code endpoints}, which may be null where nothing is sent). */
    static Receivers everyKeyTo(long fingerprint, UUID[] hostIds, InetAddressAndPort[] endpoints) {
        return new Receivers(fingerprint, hostIds, endpoints, new long[0], null);
    }

    /** Whether each key goes to its other replicas only (else to every other node). */
    boolean scoped() {
        return byRange != null;
    }

    /** How many nodes receive changes. */
    int size() {
        return hostIds.length;
    }

    /** The receivers of the changes of {@code key} (a {@link NodeKey}); shared, not to be modified. */
    int[] of(long key) {
        if (byRange == null) {
            return all;
        }
        int i = Arrays.binarySearch(tokens, key);
        if (i < 0) {
            i = -(i + 1);
            if (i == tokens.length) {
                i = 0; // above the last token: the ring wraps to the first range
            }
        }
        return byRange[i];
    }

    /** Whether {@code other} sends the same keys to the same nodes (same ring, same receivers at the same addresses). */
    boolean sameAs(Receivers other) {
        return other != null
                && other.fingerprint == fingerprint
                && Arrays.equals(other.hostIds, hostIds)
                && Arrays.equals(other.endpoints, endpoints);
    }

    // ---- built from Cassandra's ring ------------------------------------------------------------

    private record Key(String keyspace, CopyScope scope) {}

    private record Cached(long ringVersion, ReplicationParams replication, UUID self, Receivers receivers) {}

    private static final Map<Key, Cached> CACHE = new ConcurrentHashMap<>();

    /**
     * The receivers of {@code keyspace}'s changes, by the ring as this node sees it now (cached until the ring or the
     * keyspace's replication changes); null while this node does not know its own host id or the
     * keyspace.
     */
    static Receivers current(String keyspace, CopyScope scope) {
        UUID self = NodeFilters.localHost();
        Keyspace ks = Keyspace.open(keyspace);
        if (self == null || ks == null) {
            return null;
        }
        TokenMetadata live = StorageService.instance.getTokenMetadata();
        long version = live.getRingVersion();
        ReplicationParams replication = ks.getMetadata().params.replication;
        Key key = new Key(keyspace, scope);
        Cached c = CACHE.get(key);
        if (c != null && c.ringVersion == version && c.replication.equals(replication) && c.self.equals(self)) {
            return c.receivers;
        }
        Receivers receivers = build(live.cachedOnlyTokenMap(), ks.getReplicationStrategy(), scope, self);
        CACHE.put(key, new Cached(version, replication, self, receivers));
        return receivers;
    }

    private static Receivers build(TokenMetadata tm, AbstractReplicationStrategy strategy, CopyScope scope, UUID self) {
        List<Token> ring = tm.sortedTokens();
        boolean routable =
                scope == CopyScope.REPLICAS && !ring.isEmpty() && ring.get(0) instanceof Murmur3Partitioner.LongToken;
        long fp = 0x9e3779b97f4a7c15L ^ (routable ? 1 : 2);
        Map<UUID, Integer> index = new LinkedHashMap<>();
        List<InetAddressAndPort> endpoints = new ArrayList<>();
        if (!routable) {
            List<UUID> members = new ArrayList<>();
            for (InetAddressAndPort ep : tm.getAllEndpoints()) {
                UUID id = tm.getHostId(ep);
                if (id != null) {
                    members.add(id);
                }
            }
            members.sort(null);
            for (UUID id : members) {
                fp = mix(fp, id);
                if (!id.equals(self)) {
                    index.put(id, index.size());
                    endpoints.add(tm.getEndpointForHostId(id));
                }
            }
            return new Receivers(
                    fp,
                    index.keySet().toArray(UUID[]::new),
                    endpoints.toArray(InetAddressAndPort[]::new),
                    new long[0],
                    null);
        }
        long[] tokens = new long[ring.size()];
        int[][] byRange = new int[ring.size()][];
        for (int i = 0; i < tokens.length; i++) {
            Token t = ring.get(i);
            tokens[i] = t.getLongValue();
            fp = NodeKey.filterHash(fp ^ tokens[i]);
            List<Integer> to = new ArrayList<>(3);
            for (Replica r : strategy.calculateNaturalReplicas(t, tm)) {
                UUID id = tm.getHostId(r.endpoint());
                if (id == null) {
                    continue;
                }
                fp = mix(fp, id);
                if (!id.equals(self)) {
                    Integer at = index.get(id);
                    if (at == null) {
                        at = index.size();
                        index.put(id, at);
                        endpoints.add(r.endpoint());
                    }
                    to.add(at);
                }
            }
            byRange[i] = to.stream().mapToInt(Integer::intValue).toArray();
        }
        return new Receivers(
                fp, index.keySet().toArray(UUID[]::new), endpoints.toArray(InetAddressAndPort[]::new), tokens, byRange);
    }

    private static long mix(long fp, UUID id) {
        fp = NodeKey.filterHash(fp ^ id.getMostSignificantBits());
        return NodeKey.filterHash(fp ^ id.getLeastSignificantBits());
    }

    @Override
    public String toString() {
        return "Receivers{" + hostIds.length + " receivers, "
                + (byRange == null ? "every key to each" : tokens.length + " ranges") + ", fingerprint "
                + Long.toHexString(fingerprint) + "}";
    }
}
