package dev.needle.cassandra;

import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.cassandra.views.NeedleViews;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.BatchStatement;
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
 * of partition keys) on a table with a Needle index, at consistency ONE or LOCAL_ONE, on a
 * coordinator that is a replica of every key and whose filters say no key holds live data here,
 * is answered empty at once, without reading. Everything else goes to Cassandra unchanged.
 *
 * <p>Install with {@code -Dcassandra.custom_query_handler_class=dev.needle.cassandra.NeedleQueryHandler}.
 *
 * <p>Above ONE nothing is skipped: another replica may hold data this node missed, and a
 * tombstone here must take part in reconciliation (stock Cassandra could not return "empty"
 * without consulting them).
 */
public final class NeedleQueryHandler implements QueryHandler {
    static final String TRACE_SKIPPED = "Needle: partition absent/deleted on this node, read skipped";
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
                statement, state, options, () -> stock.process(statement, state, options, customPayload, requestTime));
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
                () -> stock.processPrepared(statement, state, options, customPayload, requestTime));
    }

    /** Answers an eligible SELECT from the filters, or runs it the stock way and learns from an empty result. */
    private static ResultMessage maybeSkip(
            CQLStatement statement,
            QueryState state,
            QueryOptions options,
            java.util.function.Supplier<ResultMessage> stockWay) {
        if (!(statement instanceof SelectStatement select)) {
            return stockWay.get();
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
            feedback(d, result);
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
        return stock.processBatch(statement, state, options, customPayload, requestTime);
    }

    /** What the filters said about a statement: skip it, or pass it and maybe learn from an empty result. */
    private record Decision(boolean skip, StorageFilter state, List<ByteBuffer> liveKeys) {
        static final Decision PASS = new Decision(false, null, null);
    }

    private static Decision decide(SelectStatement select, QueryState queryState, QueryOptions options) {
        StorageFilter table = NeedleRegistry.get(select.table.id);
        if (table == null) {
            return Decision.PASS;
        }
        ConsistencyLevel cl = options.getConsistency();
        StatementRestrictions r = select.getRestrictions();
        if ((cl != ConsistencyLevel.ONE && cl != ConsistencyLevel.LOCAL_ONE)
                || r.isKeyRange()
                || !r.hasPartitionKeyRestrictions()
                || r.isPartitionKeyRestrictionsOnToken()
                || r.usesSecondaryIndexing()
                || select.getSelection().isAggregate()
                || select.getAggregationSpec(options) != null
                || !table.isReady()) {
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
        if (!localReplicaOfAll(select, tokens)) {
            table.metrics().lookupsPassed.inc();
            return Decision.PASS;
        }
        // The query's own "now" (a client may set it): time-dependent judgements are checked against it.
        long nowInSec = options.getNowInSeconds(queryState);
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
            return new Decision(true, table, null);
        }
        table.metrics().lookupsPassed.inc();
        // Learn only from reads of whole partitions: an empty slice says nothing of the rest.
        boolean wholePartitions = !r.hasClusteringColumnsRestrictions()
                && !r.hasRegularColumnsRestrictions()
                && !r.hasNonPrimaryKeyRestrictions();
        return new Decision(false, wholePartitions ? table : null, wholePartitions ? live : null);
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
        table.metrics().lookupsSkipped.inc();
        Tracing.trace(TRACE_SKIPPED);
        // A copy: the transport may mark the metadata of this response as skipped.
        return new ResultMessage.Rows(new ResultSet(select.getResultMetadata().copy()));
    }

    private static void feedback(Decision d, ResultMessage result) {
        if (d.liveKeys == null || !(result instanceof ResultMessage.Rows rows) || !rows.result.isEmpty()) {
            return;
        }
        for (ByteBuffer key : d.liveKeys) {
            d.state.readFoundNothing(key);
        }
    }
}
