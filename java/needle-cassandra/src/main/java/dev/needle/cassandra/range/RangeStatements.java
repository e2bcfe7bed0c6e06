package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.cassandra.cql3.Attributes;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.VariableSpecifications;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.IMutation;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * Where the query handler meets the ordered indexes: entries before each write of an indexed
 * column, and range SELECTs answered from an index when it is ready (else, and on request, the
 * stock way, which asks every node).
 */
public final class RangeStatements {
    /** Custom payload key that chooses how a range query runs: {@code index} or {@code stock}. */
    public static final String STRATEGY_PAYLOAD = "needle.range";

    private RangeStatements() {}

    /** Writes the index entries of a write (if it sets an indexed column) before it is sent. */
    public static void beforeWrite(
            ModificationStatement write, QueryState state, QueryOptions options, Dispatcher.RequestTime t) {
        List<RangeIndex> indexes = indexesSetBy(write);
        if (indexes.isEmpty()) {
            return;
        }
        BatchStatement one = new BatchStatement(
                BatchStatement.Type.UNLOGGED, VariableSpecifications.empty(), List.of(write), Attributes.none());
        List<? extends IMutation> mutations = one.getMutations(
                state.getClientState(),
                BatchQueryOptions.withoutPerStatementVariables(options),
                false,
                options.getTimestamp(state),
                options.getNowInSeconds(state),
                t);
        for (RangeIndex index : indexes) {
            EntryWriter.write(index, mutations, options.getConsistency(), t);
        }
    }

    /** Writes the index entries of a batch's writes before the batch is sent. */
    public static void beforeBatch(
            BatchStatement batch, QueryState state, BatchQueryOptions options, Dispatcher.RequestTime t) {
        boolean any = false;
        for (ModificationStatement w : batch.getStatements()) {
            any |= !indexesSetBy(w).isEmpty();
        }
        if (!any) {
            return;
        }
        List<? extends IMutation> mutations = batch.getMutations(
                state.getClientState(), options, false, options.getTimestamp(state), options.getNowInSeconds(state), t);
        java.util.Set<RangeIndex> seen = new java.util.HashSet<>();
        for (ModificationStatement w : batch.getStatements()) {
            for (RangeIndex index : indexesSetBy(w)) {
                if (seen.add(index)) {
                    EntryWriter.write(index, mutations, options.getConsistency(), t);
                }
            }
        }
    }

    private static List<RangeIndex> indexesSetBy(ModificationStatement write) {
        List<RangeIndex> all = RangeIndexes.of(write.metadata().id);
        if (all.isEmpty()) {
            return all;
        }
        return all.stream()
                .filter(i -> write.updatedColumns().contains(i.column()))
                .toList();
    }

    /**
     * Answers a range SELECT from an ordered index, or returns null for the stock way: when the
     * table has no ready index on a column the statement restricts, when the statement is not a
     * plain range query over every partition (aggregates, partition or clustering restrictions,
     * per-partition limits, serial reads), or when the payload asks for {@code stock}.
     */
    public static ResultMessage answer(
            SelectStatement select,
            QueryState state,
            QueryOptions options,
            Map<String, ByteBuffer> payload,
            Dispatcher.RequestTime t) {
        List<RangeIndex> indexes = RangeIndexes.of(select.table.id);
        if (indexes.isEmpty()) {
            return null;
        }
        String asked = payload == null || !payload.containsKey(STRATEGY_PAYLOAD)
                ? null
                : StandardCharsets.UTF_8
                        .decode(payload.get(STRATEGY_PAYLOAD).duplicate())
                        .toString();
        if (asked != null && !asked.equals("index") && !asked.equals("stock")) {
            throw new InvalidRequestException(
                    "custom payload " + STRATEGY_PAYLOAD + " must be 'index' or 'stock', not '" + asked + "'");
        }
        if ("stock".equals(asked)) {
            Tracing.trace("Needle: range query the stock way (asked by the custom payload)");
            return null;
        }
        ConsistencyLevel cl = options.getConsistency();
        StatementRestrictions r = select.getRestrictions();
        if (cl == null
                || cl.isSerialConsistency()
                || r.hasPartitionKeyRestrictions()
                || r.isPartitionKeyRestrictionsOnToken()
                || r.hasClusteringColumnsRestrictions()
                || select.getSelection().isAggregate()
                || select.getAggregationSpec(options) != null
                || select.getPerPartitionLimit(options) != DataLimits.NO_LIMIT) {
            return null;
        }
        RowFilter filter = select.getRowFilter(options, state.getClientState());
        for (RangeIndex index : indexes) {
            EntryCursor.Bound[] bounds = RangeRead.bounds(index, filter);
            if (bounds == null) {
                continue;
            }
            if (!index.ready()) {
                Tracing.trace(
                        "Needle: range index {} is not ready on every node yet; the stock way",
                        index.tables().index());
                return null;
            }
            RangeRead.Answer a = RangeRead.answer(index, select, filter, bounds, state, options, t);
            Tracing.trace(
                    "Needle: range query by index {}: {} entries read, {} rows returned, {} index partition reads",
                    index.tables().index(),
                    a.work().entries(),
                    a.work().rows(),
                    a.work().partitionReads());
            return a.message();
        }
        return null;
    }
}
