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
 * which traces it and counts its {@link Outcome} in the table's metrics, in one place.
 *
 * @param outcome       what was decided, and why
 * @param liveHere      keys this node's filter called live, to check if the read finds nothing
 * @param liveElsewhere keys other owners' copies called live, with those owners, to ask them to check
 */
record PointRead(Outcome outcome, List<ByteBuffer> liveHere, Map<ByteBuffer, List<UUID>> liveElsewhere) {
    static final String TRACE_SKIPPED = "Needle: partition absent/deleted on this node, read skipped";
    static final String TRACE_NODE_SKIPPED = "Needle: no replica holds live data (node filters), read skipped: ";

    /** What a decision was, and why: each counts in the table's metrics ({@link #count}). */
    enum Outcome {
        /** Not a read Needle decides on (no Needle index, or a request Cassandra will refuse): counted nowhere. */
        NOT_DECIDED,
        /** Read the stock way: not a point read by keys, or a level no filter answers at. */
        PASSED,
        /** This node's storage filter calls a key live. */
        PASSED_LIVE_HERE,
        /** Skipped: this node's storage filter proves every key absent or deleted. */
        SKIPPED_HERE,
        /** Skipped at ONE or LOCAL_ONE: the node filters of every replica the read could go to. */
        SKIPPED_BY_COPIES_AT_ONE,
        /** Skipped at QUORUM or LOCAL_QUORUM: the node filters of every replica the read could go to. */
        SKIPPED_BY_COPIES_AT_QUORUM,
        /** A replica's copy calls a key live. */
        PASSED_LIVE_ELSEWHERE,
        /** A replica's copy is older than the staleness bound. */
        PASSED_STALE_COPY,
        /** A replica's copy is not ready. */
        PASSED_COPY_NOT_READY,
        /** No copy can answer for some replica (not eligible). */
        PASSED_NOT_ELIGIBLE;

        boolean skip() {
            return this == SKIPPED_HERE || this == SKIPPED_BY_COPIES_AT_ONE || this == SKIPPED_BY_COPIES_AT_QUORUM;
        }

        /** Counts this outcome in {@code m}: a skip or a pass, and the node filters' reason. */
        void count(NeedleMetrics m) {
            if (this == NOT_DECIDED) {
                return;
            }
            (skip() ? m.lookupsSkipped : m.lookupsPassed).inc();
            switch (this) {
                case SKIPPED_BY_COPIES_AT_ONE -> m.nodeSkipsOne.inc();
                case SKIPPED_BY_COPIES_AT_QUORUM -> m.nodeSkipsQuorum.inc();
                case PASSED_LIVE_ELSEWHERE -> m.nodePassedLive.inc();
                case PASSED_STALE_COPY -> m.nodePassedStale.inc();
                case PASSED_COPY_NOT_READY -> m.nodePassedNotReady.inc();
                case PASSED_NOT_ELIGIBLE -> m.nodePassedNotEligible.inc();
                default -> {}
            }
        }
    }

    /** Read the stock way, nothing to learn. */
    static final PointRead PASS = new PointRead(Outcome.PASSED, List.of(), Map.of());

    /** Not decided on: read the stock way, counted nowhere. */
    static final PointRead NOT_DECIDED = new PointRead(Outcome.NOT_DECIDED, List.of(), Map.of());

    boolean skip() {
        return outcome.skip();
    }

    private static boolean nodeFilterApplies(NeedleOptions.NodeFilterMode mode, ConsistencyLevel cl) {
        return switch (cl) {
            case ONE, LOCAL_ONE -> mode != NeedleOptions.NodeFilterMode.OFF;
            case QUORUM, LOCAL_QUORUM -> mode == NeedleOptions.NodeFilterMode.QUORUM;
            default -> false; // SERIAL never; the others are not offered
        };
    }

    /**
     * What the filters say about {@code select}: skip it (traced), or pass it with what to learn if
     * it comes back empty; counted in the table's metrics. A read of a table without a Needle index:
     * {@link #NOT_DECIDED}.
     */
    static PointRead decide(SelectStatement select, QueryState queryState, QueryOptions options) {
        StorageFilter filter = FilterRegistry.get(select.table.id);
        if (filter == null) {
            return NOT_DECIDED;
        }
        PointRead d = judge(select, filter, queryState, options);
        d.outcome.count(filter.metrics());
        return d;
    }

    private static PointRead judge(
            SelectStatement select, StorageFilter filter, QueryState queryState, QueryOptions options) {
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
            return PASS;
        }
        List<ByteBuffer> keys;
        try {
            keys = r.getPartitionKeys(options, queryState.getClientState());
        } catch (RuntimeException e) {
            return NOT_DECIDED; // invalid request: let Cassandra say why
        }
        if (keys.isEmpty()) {
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
            Tracing.trace(TRACE_SKIPPED);
            return new PointRead(Outcome.SKIPPED_HERE, List.of(), Map.of());
        }
        return new PointRead(Outcome.PASSED_LIVE_HERE, wholePartitions ? live : List.of(), Map.of());
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
            if (trace != null) {
                Tracing.trace(TRACE_NODE_SKIPPED + trace);
            }
            boolean one = cl == ConsistencyLevel.ONE || cl == ConsistencyLevel.LOCAL_ONE;
            return new PointRead(
                    one ? Outcome.SKIPPED_BY_COPIES_AT_ONE : Outcome.SKIPPED_BY_COPIES_AT_QUORUM, List.of(), Map.of());
        }
        Outcome outcome = switch (passed) {
            case LIVE -> Outcome.PASSED_LIVE_ELSEWHERE;
            case STALE -> Outcome.PASSED_STALE_COPY;
            case NOT_READY -> Outcome.PASSED_COPY_NOT_READY;
            default -> Outcome.PASSED_NOT_ELIGIBLE;
        };
        if (trace != null) {
            Tracing.trace("Needle: node filters say read (" + passed + "): " + trace);
        }
        // An owner whose filter cannot forget a key (Bloom) ignores a check: none is sent.
        return new PointRead(
                outcome,
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
        StorageFilter filter = liveHere.isEmpty() ? null : FilterRegistry.get(select.table.id);
        if (filter != null) { // null: the index went meanwhile
            for (ByteBuffer key : liveHere) {
                filter.readFoundNothing(key);
            }
        }
        liveElsewhere.forEach(
                (key, owners) -> NodeFilters.instance.coordinator().verify(select.table.id, key, owners));
    }
}
