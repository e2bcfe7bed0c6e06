package dev.needle.cassandra;

import dev.needle.cassandra.node.CoordinatorCheck;
import dev.needle.cassandra.node.NodeFilters;
import dev.needle.cassandra.range.RangeStatements;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.cassandra.views.NeedleViews;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.exceptions.RequestExecutionException;
import org.apache.cassandra.exceptions.RequestValidationException;
import org.apache.cassandra.locator.EndpointsForToken;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.MD5Digest;

/**
 * Cassandra's query handler with one addition: a single-partition SELECT (or one with an IN list
 * of partition keys) on a table with a Needle index is answered empty at once, without reading,
 * when the filters prove no key holds live data where the read would go:
 *
 * <ul>
 *   <li>at ONE or LOCAL_ONE, on a coordinator that is a replica of every key, by its own storage
 *       filter (as stock would read from it);
 *   <li>with node filters on ({@code node_filter}), on any coordinator, at ONE and LOCAL_ONE (and
 *       QUORUM and LOCAL_QUORUM if the table opts in), when every replica the read could go to
 *       reports no live data, from this node's filter or a copy younger than the staleness bound
 *       ({@link CoordinatorCheck#check}).
 * </ul>
 *
 * A range SELECT on a column with a {@link NeedleRangeIndex} is answered from that index, and a
 * write that sets such a column writes the index entries first ({@link RangeStatements}).
 *
 * <p>Everything else goes to Cassandra unchanged; a write through this handler is remembered so that
 * reads of its keys through this coordinator are not skipped on copies that may not know it yet.
 *
 * <p>Install with {@code -Dcassandra.custom_query_handler_class=dev.needle.cassandra.NeedleQueryHandler}.
 *
 * <p>Without node filters, nothing is skipped above ONE: another replica may hold data this node
 * missed, and a tombstone here must take part in reconciliation.
 */
public final class NeedleQueryHandler implements QueryHandler {
    static final String TRACE_SKIPPED = "Needle: partition absent/deleted on this node, read skipped";
    static final String TRACE_NODE_SKIPPED = "Needle: no replica holds live data (node filters), read skipped: ";
    private static final org.slf4j.Logger logger = org.slf4j.LoggerFactory.getLogger(NeedleQueryHandler.class);
    private final QueryProcessor stock = QueryProcessor.instance;

    /** Built by Cassandra (it names the class in -Dcassandra.custom_query_handler_class). */
    public NeedleQueryHandler() {
        try {
            NeedleViews.register();
        } catch (RuntimeException e) {
            logger.warn(
                    "Needle could not register the needle_views virtual keyspace now; it appears with the first index",
                    e);
        }
    }

    @Override
    public CQLStatement parse(String query, QueryState state, QueryOptions options) {
        return stock.parse(query, state, options);
    }

    @Override
    public ResultMessage process(
            CQLStatement statement,
            QueryState state,
            QueryOptions options,
            Map<String, ByteBuffer> customPayload,
            Dispatcher.RequestTime requestTime)
            throws RequestExecutionException, RequestValidationException {
        return maybeSkip(
                statement,
                state,
                options,
                customPayload,
                requestTime,
                () -> stock.process(statement, state, options, customPayload, requestTime));
    }

    @Override
    public ResultMessage.Prepared prepare(String query, ClientState clientState, Map<String, ByteBuffer> customPayload)
            throws RequestValidationException {
        return stock.prepare(query, clientState, customPayload);
    }

    @Override
    public Prepared getPrepared(MD5Digest id) {
        return stock.getPrepared(id);
    }

    @Override
    public ResultMessage processPrepared(
            CQLStatement statement,
            QueryState state,
            QueryOptions options,
            Map<String, ByteBuffer> customPayload,
            Dispatcher.RequestTime requestTime)
            throws RequestExecutionException, RequestValidationException {
        return maybeSkip(
                statement,
                state,
                options,
                customPayload,
                requestTime,
                () -> stock.processPrepared(statement, state, options, customPayload, requestTime));
    }

    /**
     * Answers an eligible SELECT from the filters or a range index, or runs it the stock way and
     * learns from an empty result; writes the range index entries of a write before it is sent.
     */
    private static ResultMessage maybeSkip(
            CQLStatement statement,
            QueryState state,
            QueryOptions options,
            Map<String, ByteBuffer> customPayload,
            Dispatcher.RequestTime requestTime,
            java.util.function.Supplier<ResultMessage> stockWay) {
        if (!(statement instanceof SelectStatement select)) {
            if (statement instanceof ModificationStatement write) {
                recordWrite(write, state, options);
                RangeStatements.beforeWrite(write, state, options, requestTime);
            }
            return stockWay.get();
        }
        ResultMessage ranged = RangeStatements.answer(select, state, options, customPayload, requestTime, stockWay);
        if (ranged != null) {
            return ranged;
        }
        Decision d;
        try {
            d = decide(select, state, options);
            if (d.skip) {
                return skipped(select, d.state);
            }
        } catch (RuntimeException e) {
            // Needle never fails a read: whatever went wrong, the read goes the stock way.
            logger.warn("Needle could not decide on a read of {}; it is not skipped", select.table, e);
            d = Decision.PASS;
        }
        ResultMessage result = stockWay.get();
        try {
            feedback(select, d, result);
        } catch (RuntimeException e) {
            logger.warn("Needle feedback after a read of {} failed", select.table, e);
        }
        return result;
    }

    @Override
    public ResultMessage processBatch(
            BatchStatement statement,
            QueryState state,
            BatchQueryOptions options,
            Map<String, ByteBuffer> customPayload,
            Dispatcher.RequestTime requestTime)
            throws RequestExecutionException, RequestValidationException {
        List<ModificationStatement> writes = statement.getStatements();
        for (int i = 0; i < writes.size(); i++) {
            recordWrite(writes.get(i), state, options.forStatement(i));
        }
        RangeStatements.beforeBatch(statement, state, options, requestTime);
        return stock.processBatch(statement, state, options, customPayload, requestTime);
    }

    /**
     * Remembers the keys a write through this coordinator touches, before it is sent: a read of
     * them through this node then never trusts copies that may not have heard of it yet.
     */
    private static void recordWrite(ModificationStatement write, QueryState state, QueryOptions options) {
        if (!NodeFilters.instance.enabled(write.metadata().id)) {
            return;
        }
        try {
            for (ByteBuffer key : write.buildPartitionKeyNames(options, state.getClientState())) {
                NodeFilters.instance.written(write.metadata().id, key);
            }
        } catch (RuntimeException e) {
            // An invalid write: Cassandra rejects it and says why.
        }
    }

    /**
     * What the filters said about a statement: skip it, or pass it and maybe learn from an empty
     * result (from this node's filter for {@code liveKeys}, from other owners for {@code remoteLive}).
     */
    private record Decision(
            boolean skip, StorageFilter state, List<ByteBuffer> liveKeys, Map<ByteBuffer, List<UUID>> remoteLive) {
        static final Decision PASS = new Decision(false, null, null, null);
    }

    private static boolean nodeFilterApplies(NeedleOptions.NodeFilterMode mode, ConsistencyLevel cl) {
        return switch (cl) {
            case ONE, LOCAL_ONE -> mode != NeedleOptions.NodeFilterMode.OFF;
            case QUORUM, LOCAL_QUORUM -> mode == NeedleOptions.NodeFilterMode.QUORUM;
            default -> false; // SERIAL never; the others are not offered
        };
    }

    private static Decision decide(SelectStatement select, QueryState queryState, QueryOptions options) {
        StorageFilter table = NeedleRegistry.get(select.table.id);
        if (table == null) {
            return Decision.PASS;
        }
        ConsistencyLevel cl = options.getConsistency();
        boolean localLevel = cl == ConsistencyLevel.ONE || cl == ConsistencyLevel.LOCAL_ONE;
        boolean nodeLevel = nodeFilterApplies(table.options().nodeFilter, cl);
        StatementRestrictions r = select.getRestrictions();
        if ((!localLevel && !nodeLevel)
                || r.isKeyRange()
                || !r.hasPartitionKeyRestrictions()
                || r.isPartitionKeyRestrictionsOnToken()
                || r.usesSecondaryIndexing()
                || select.getSelection().isAggregate()
                || select.getAggregationSpec(options) != null) {
            table.metrics().lookupsPassed.inc();
            return Decision.PASS;
        }
        List<ByteBuffer> keys;
        try {
            keys = r.getPartitionKeys(options, queryState.getClientState());
        } catch (RuntimeException e) {
            return Decision.PASS; // invalid request: let Cassandra say why
        }
        if (keys.isEmpty()) {
            table.metrics().lookupsPassed.inc();
            return Decision.PASS;
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
        if (localLevel && table.isReady() && localReplicaOfAll(select, tokens)) {
            return decideLocally(table, keys, tokens, nowInSec, wholePartitions);
        }
        if (!nodeLevel) {
            table.metrics().lookupsPassed.inc();
            return Decision.PASS;
        }
        return decideFromCopies(select, table, cl, keys, tokens, nowInSec, wholePartitions);
    }

    /** A replica coordinating at ONE: its own filter decides (as stock would read from it). */
    private static Decision decideLocally(
            StorageFilter table, List<ByteBuffer> keys, Token[] tokens, long nowInSec, boolean wholePartitions) {
        List<ByteBuffer> live = null;
        for (int i = 0; i < tokens.length; i++) {
            ByteBuffer key = keys.get(i);
            if (table.lookup(key, tokens[i], nowInSec) == KeyState.LIVE) {
                if (live == null) {
                    live = new java.util.ArrayList<>(keys.size());
                }
                live.add(key);
            }
        }
        if (live == null) {
            table.metrics().lookupsSkipped.inc();
            Tracing.trace(TRACE_SKIPPED);
            return new Decision(true, table, null, null);
        }
        table.metrics().lookupsPassed.inc();
        return new Decision(false, wholePartitions ? table : null, wholePartitions ? live : null, null);
    }

    /** Any coordinator: skipped only if every replica the read could go to holds no live data, by its trusted copy. */
    private static Decision decideFromCopies(
            SelectStatement select,
            StorageFilter table,
            ConsistencyLevel cl,
            List<ByteBuffer> keys,
            Token[] tokens,
            long nowInSec,
            boolean wholePartitions) {
        NeedleMetrics m = table.metrics();
        Map<ByteBuffer, List<UUID>> remoteLive = null;
        CoordinatorCheck.Verdict passed = null;
        StringBuilder trace = Tracing.isTracing() ? new StringBuilder() : null;
        for (int i = 0; i < tokens.length; i++) {
            CoordinatorCheck.Check c = NodeFilters.instance.check(
                    table, select.table, keys.get(i), tokens[i], cl, nowInSec, trace != null);
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
            return new Decision(true, table, null, null);
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
        return new Decision(
                false, table, null, wholePartitions && table.options().tracksDeletions() ? remoteLive : null);
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

    private static ResultMessage skipped(SelectStatement select, StorageFilter table) {
        // A copy: the transport may mark the metadata of this response as skipped.
        return new ResultMessage.Rows(new ResultSet(select.getResultMetadata().copy()));
    }

    private static void feedback(SelectStatement select, Decision d, ResultMessage result) {
        if ((d.liveKeys == null && d.remoteLive == null)
                || !(result instanceof ResultMessage.Rows rows)
                || !rows.result.isEmpty()) {
            return;
        }
        if (d.liveKeys != null) {
            for (ByteBuffer key : d.liveKeys) {
                d.state.readFoundNothing(key);
            }
        }
        if (d.remoteLive != null) {
            // The owners that called the keys live check them (rows deleted one by one, say).
            d.remoteLive.forEach((key, owners) -> NodeFilters.instance.verify(select.table.id, key, owners));
        }
    }
}
