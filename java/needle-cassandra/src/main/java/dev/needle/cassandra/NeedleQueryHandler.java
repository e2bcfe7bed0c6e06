package dev.needle.cassandra;

import dev.needle.cassandra.node.CoordinatorCheck;
import dev.needle.cassandra.node.NodeFilters;
import dev.needle.cassandra.range.EntryWriter;
import dev.needle.cassandra.range.RangeStatements;
import dev.needle.cassandra.views.NeedleViews;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.CQLStatement;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.exceptions.RequestExecutionException;
import org.apache.cassandra.exceptions.RequestValidationException;
import org.apache.cassandra.service.ClientState;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;
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
 *       ({@link PointRead#decide}, {@link CoordinatorCheck#check}).
 * </ul>
 *
 * A range SELECT on a column with a {@link NeedleRangeIndex} is answered from that index, and a
 * write that sets such a column writes the index entries first ({@link EntryWriter}).
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
                EntryWriter.beforeWrite(write, state, options, requestTime);
            }
            return stockWay.get();
        }
        ResultMessage ranged = RangeStatements.answer(select, state, options, customPayload, requestTime, stockWay);
        if (ranged != null) {
            return ranged;
        }
        PointRead d;
        try {
            d = PointRead.decide(select, state, options);
            if (d.skip()) {
                return skipped(select);
            }
        } catch (RuntimeException e) {
            // Needle never fails a read: whatever went wrong, the read goes the stock way.
            logger.warn("Needle could not decide on a read of {}; it is not skipped", select.table, e);
            d = PointRead.NOT_DECIDED;
        }
        ResultMessage result = stockWay.get();
        try {
            d.learnFrom(select, result);
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
        EntryWriter.beforeBatch(statement, state, options, requestTime);
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
                NodeFilters.instance.coordinator().written(write.metadata().id, key);
            }
        } catch (RuntimeException e) {
            // An invalid write: Cassandra rejects it and says why.
        }
    }

    private static ResultMessage skipped(SelectStatement select) {
        // A copy: the transport may mark the metadata of this response as skipped.
        return new ResultMessage.Rows(new ResultSet(select.getResultMetadata().copy()));
    }
}
