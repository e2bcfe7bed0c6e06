package dev.needle.cassandra;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.cassandra.node.CoordinatorCheck;
import dev.needle.cassandra.node.NodeFilters;
import dev.needle.cassandra.storage.FilterRegistry;
import dev.needle.cassandra.storage.NeedleMetrics;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.FBUtilities;

/**
 * The decision on one point read (a SELECT of whole or part partitions by their keys): skip it,
 * because the filters prove that no key holds live data where the read would go, or pass it to
 * Cassandra, with what to learn if it then comes back empty. Made in one call, {@link #decide},
 * which counts it in the table's metrics and traces it.
 *
 * @param skip          answer empty without reading
 * @param filter        the table's storage filter on this node (null for {@link #PASS})
 * @param liveHere      keys this node's filter called live, to check if the read finds nothing
 * @param liveElsewhere keys other owners' copies called live, with those owners, to ask them to check
 */
record PointRead(
        boolean skip, StorageFilter filter, List<ByteBuffer> liveHere, Map<ByteBuffer, List<UUID>> liveElsewhere) {
    static final String TRACE_SKIPPED = "Needle: partition absent/deleted on this node, read skipped";
    static final String TRACE_NODE_SKIPPED = "Needle: no replica holds live data (node filters), read skipped: ";

    /** Read the stock way, nothing to learn. */
    static final PointRead PASS = new PointRead(false, null, List.of(), Map.of());

    private static boolean nodeFilterApplies(NeedleOptions.NodeFilterMode mode, ConsistencyLevel cl) {
        return switch (cl) {
            case ONE, LOCAL_ONE -> mode != NeedleOptions.NodeFilterMode.OFF;
            case QUORUM, LOCAL_QUORUM -> mode == NeedleOptions.NodeFilterMode.QUORUM;
            default -> false; // SERIAL never; the others are not offered
        };
    }

    /**
     * What the filters say about {@code select}: skip it (counted, and traced, as skipped), or pass
     * it (counted as passed) with what to learn if it comes back empty. A read of a table without
     * a Needle index: {@link #PASS}, counted nowhere.
     */
    static PointRead decide(SelectStatement select, QueryState queryState, QueryOptions options) {
        StorageFilter filter = FilterRegistry.get(select.table.id);
        if (filter == null) {
            return PASS;
        }
        ConsistencyLevel cl = options.getConsistency();
        boolean localLevel = cl == ConsistencyLevel.ONE || cl == ConsistencyLevel.LOCAL_ONE;
        boolean nodeLevel = nodeFilterApplies(filter.options().nodeFilter, cl);
        StatementRestrictions r = select.getRestrictions();
        if ((!localLevel && !nodeLevel)
                || r.isKeyRange()
                || !r.hasPartitionKeyRestrictions()
                || r.isPartitionKeyRestrictionsOnToken()
                || r.usesSecondaryIndexing()
                || select.getSelection().isAggregate()
                || select.getAggregationSpec(options) != null) {
            filter.metrics().lookupsPassed.inc();
            return PASS;
        }
        List<ByteBuffer> keys;
        try {
            keys = r.getPartitionKeys(options, queryState.getClientState());
        } catch (RuntimeException e) {
            return PASS; // invalid request: let Cassandra say why
        }
        if (keys.isEmpty()) {
            filter.metrics().lookupsPassed.inc();
            return PASS;
        }
        Token[] tokens = new Token[keys.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = select.table.partitioner.getToken(keys.get(i));
        }
        // Learn only from reads of whole partitions: an empty slice says nothing of the rest.
        boolean wholePartitions = !r.hasClusteringColumnsRestrictions()
                && !r.hasRegularColumnsRestrictions()
                && !r.hasNonPrimaryKeyRestrictions();
        // The query's own "now" (a client may set it): time-dependent judgements are checked against it.
        long nowInSec = options.getNowInSeconds(queryState);
        if (localLevel && filter.isReady() && localReplicaOfAll(select, tokens)) {
            return decideLocally(filter, keys, tokens, nowInSec, wholePartitions);
        }
        if (!nodeLevel) {
            filter.metrics().lookupsPassed.inc();
            return PASS;
        }
        return decideFromCopies(select, filter, cl, keys, tokens, nowInSec, wholePartitions);
    }

    /** A replica coordinating at ONE: its own filter decides (as stock would read from it). */
    private static PointRead decideLocally(
            StorageFilter filter, List<ByteBuffer> keys, Token[] tokens, long nowInSec, boolean wholePartitions) {
        List<ByteBuffer> live = null;
        for (int i = 0; i < tokens.length; i++) {
            ByteBuffer key = keys.get(i);
            if (filter.lookup(key, tokens[i], nowInSec) == KeyState.LIVE) {
                if (live == null) {
                    live = new java.util.ArrayList<>(keys.size());
                }
                live.add(key);
            }
        }
        if (live == null) {
            filter.metrics().lookupsSkipped.inc();
            Tracing.trace(TRACE_SKIPPED);
            return new PointRead(true, filter, List.of(), Map.of());
        }
        filter.metrics().lookupsPassed.inc();
        return new PointRead(false, filter, wholePartitions ? live : List.of(), Map.of());
    }

    /** Any coordinator: skipped only if every replica the read could go to holds no live data, by its trusted copy. */
    private static PointRead decideFromCopies(
            SelectStatement select,
            StorageFilter filter,
            ConsistencyLevel cl,
            List<ByteBuffer> keys,
            Token[] tokens,
            long nowInSec,
            boolean wholePartitions) {
        NeedleMetrics m = filter.metrics();
        Map<ByteBuffer, List<UUID>> remoteLive = null;
        CoordinatorCheck.Verdict passed = null;
        StringBuilder trace = Tracing.isTracing() ? new StringBuilder() : null;
        for (int i = 0; i < tokens.length; i++) {
            CoordinatorCheck.Check c = NodeFilters.instance
                    .coordinator()
                    .check(filter, select.table, keys.get(i), tokens[i], cl, nowInSec, trace != null);
            if (trace != null) {
                trace.append(trace.length() == 0 ? "" : "; ").append(c.detail());
            }
            if (c.verdict() == CoordinatorCheck.Verdict.SKIP) {
                continue;
            }
            if (passed == null || passed == CoordinatorCheck.Verdict.LIVE) {
                passed = c.verdict(); // a stale or not-ready copy is the more telling reason
            }
            if (!c.liveOwners().isEmpty()) {
                if (remoteLive == null) {
                    remoteLive = new java.util.HashMap<>();
                }
                remoteLive.put(keys.get(i), c.liveOwners());
            }
        }
        if (passed == null) {
            (cl == ConsistencyLevel.ONE || cl == ConsistencyLevel.LOCAL_ONE ? m.nodeSkipsOne : m.nodeSkipsQuorum).inc();
            m.lookupsSkipped.inc();
            if (trace != null) {
                Tracing.trace(TRACE_NODE_SKIPPED + trace);
            }
            return new PointRead(true, filter, List.of(), Map.of());
        }
        m.lookupsPassed.inc();
        switch (passed) {
            case LIVE -> m.nodePassedLive.inc();
            case STALE -> m.nodePassedStale.inc();
            case NOT_READY -> m.nodePassedNotReady.inc();
            default -> m.nodePassedNotEligible.inc();
        }
        if (trace != null) {
            Tracing.trace("Needle: node filters say read (" + passed + "): " + trace);
        }
        // An owner whose filter cannot forget a key (Bloom) ignores a check: none is sent.
        return new PointRead(
                false,
                filter,
                List.of(),
                wholePartitions && filter.options().tracksDeletions() && remoteLive != null ? remoteLive : Map.of());
    }

    private static boolean localReplicaOfAll(SelectStatement select, Token[] tokens) {
        InetAddressAndPort self = FBUtilities.getBroadcastAddressAndPort();
        for (Token token : tokens) {
            EndpointsForToken replicas = EndpointsForToken.natural(select.table, token);
            if (!replicas.endpoints().contains(self)) {
                return false;
            }
        }
        return true;
    }

    /**
     * After a passed read: if it found nothing, the keys the filters called live are checked (this
     * node's filter forgets those it proves dead; owners elsewhere are asked to check theirs), so a
     * partition whose rows were deleted one by one becomes skippable.
     */
    void learnFrom(SelectStatement select, ResultMessage result) {
        if ((liveHere.isEmpty() && liveElsewhere.isEmpty())
                || !(result instanceof ResultMessage.Rows rows)
                || !rows.result.isEmpty()) {
            return;
        }
        for (ByteBuffer key : liveHere) {
            filter.readFoundNothing(key);
        }
        liveElsewhere.forEach(
                (key, owners) -> NodeFilters.instance.coordinator().verify(select.table.id, key, owners));
    }
}
