package dev.needle.cassandra.range;

import com.codahale.metrics.Counter;
import dev.needle.cassandra.base.MetricGroup;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the range queries of one ordered index did on this node, for the operator: the last
 * {@link #KEPT} plans (read through {@code needle_views.range_plans}) and, per strategy, counters
 * in Cassandra's metrics registry, so over JMX as {@code
 * org.apache.cassandra.metrics:type=NeedleRange,keyspace=KS,scope=INDEX,name=QueriesByIndex} (and
 * {@code QueriesByScan}, {@code QueriesBySai}, {@code QueriesByClientScan}, {@code
 * SwitchesToStock}, {@code StaleEntriesRemoved}, {@code KeysReadByKeyList}, {@code
 * KeysReadByPartition}). Thread-safe.
 */
public final class RangePlans {
    /** Plans kept per index. */
    static final int KEPT = 64;

    private static final String TYPE = "NeedleRange";

    /** Why a strategy answered a query. */
    public enum ChosenBy {
        /** The planner expected it fastest. */
        PLANNER,
        /** The planner tried it to correct its model. */
        EXPLORING,
        /** The custom payload asked for it. */
        PAYLOAD,
        /** The index is not ready on every node yet. */
        NOT_READY,
        /**
         * The index found far more rows than estimated: the stock way answered the query (on its
         * first page), or the scan the rest of its range (on a later page).
         */
        SWITCHED;

        String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', ' ');
        }
    }

    /**
     * One query's plan and what came of it (its first page when it has several; a query whose
     * index pages gave way to the scan has a second plan, the first page of the rest).
     *
     * @param atMillis  when it started (epoch milliseconds)
     * @param strategy  what answered it
     * @param chosenBy  why
     * @param estimate  the rows it was expected to return over the whole range (NaN if none)
     * @param rows      the rows its first page returned
     * @param millis    the first page's latency
     * @param morePages whether the answer had more pages
     */
    public record Plan(
            long atMillis,
            RangePlanner.Strategy strategy,
            ChosenBy chosenBy,
            double estimate,
            long rows,
            double millis,
            boolean morePages) {
        public String chosenByLabel() {
            return chosenBy.label();
        }
    }

    private final Deque<Plan> recent = new ArrayDeque<>(KEPT);
    private final Map<RangePlanner.Strategy, Counter> queries = new EnumMap<>(RangePlanner.Strategy.class);
    private final Counter switches;
    private final Counter staleRemoved;
    private final Counter deletedRemoved;
    private final Counter keysByKeyList;
    private final Counter keysByPartition;
    private final MetricGroup metrics;

    RangePlans(String keyspace, String index) {
        metrics = new MetricGroup(TYPE, keyspace, index);
        for (RangePlanner.Strategy s : RangePlanner.Strategy.values()) {
            StringBuilder n = new StringBuilder(); // CLIENT_SCAN -> ClientScan
            for (String word : s.name().split("_")) {
                n.append(word.charAt(0)).append(word.substring(1).toLowerCase(Locale.ROOT));
            }
            queries.put(s, metrics.counter("QueriesBy" + n));
        }
        switches = metrics.counter("SwitchesToStock");
        staleRemoved = metrics.counter("StaleEntriesRemoved");
        deletedRemoved = metrics.counter("DeletedEntriesRemoved");
        keysByKeyList = metrics.counter("KeysReadByKeyList");
        keysByPartition = metrics.counter("KeysReadByPartition");
    }

    /** Records a query's plan. */
    void record(Plan p) {
        queries.get(p.strategy()).inc();
        if (p.chosenBy() == ChosenBy.SWITCHED) {
            switches.inc();
        }
        synchronized (recent) {
            if (recent.size() == KEPT) {
                recent.removeFirst();
            }
            recent.addLast(p);
        }
    }

    /** The plans kept, oldest first. */
    public List<Plan> recent() {
        synchronized (recent) {
            return List.copyOf(recent);
        }
    }

    /**
     * Index answers that gave way to a stock strategy on this node since it started: on their
     * first page (the stock way answered the query) or a later one (the scan the rest).
     */
    public long switches() {
        return switches.getCount();
    }

    /** Counts {@code n} superseded entries removed (see StaleEntries). */
    void staleEntriesRemoved(int n) {
        staleRemoved.inc(n);
    }

    /** Superseded entries this node's reads removed since it started. */
    public long staleEntriesRemoved() {
        return staleRemoved.getCount();
    }

    /** Counts {@code n} entries of deleted rows removed (see StaleEntries). */
    void deletedEntriesRemoved(int n) {
        deletedRemoved.inc(n);
    }

    /** Entries of deleted rows this node's reads removed since it started. */
    public long deletedEntriesRemoved() {
        return deletedRemoved.getCount();
    }

    /**
     * Counts the keys whose rows an index answer read: by key lists ({@link KeyFetch}), or one
     * read per partition (keys too large for a list, an index dropped while a query ran).
     */
    void keysRead(int byKeyList, int byPartition) {
        keysByKeyList.inc(byKeyList);
        keysByPartition.inc(byPartition);
    }

    /** Keys whose rows this node's index answers read by key lists since it started. */
    public long keysReadByKeyList() {
        return keysByKeyList.getCount();
    }

    /** Keys whose rows this node's index answers read one partition at a time since it started. */
    public long keysReadByPartition() {
        return keysByPartition.getCount();
    }

    /** Queries answered by {@code s} on this node since it started. */
    public long queries(RangePlanner.Strategy s) {
        return queries.get(s).getCount();
    }

    /** Removes this index's metrics (the index was dropped). */
    void release() {
        metrics.release();
    }
}
