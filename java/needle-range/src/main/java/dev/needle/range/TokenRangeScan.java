package dev.needle.range;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.metadata.schema.ColumnMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.metadata.token.TokenRange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

/**
 * {@code SELECT ... WHERE column >= a AND column < b} on a hash-partitioned table, answered as
 * stock Cassandra can answer it today (the way Spark's Cassandra connector reads a table): the
 * token ring cut into splits along the cluster's own token ranges, one filtered range read per
 * split ({@code token(pk) > ? AND token(pk) <= ? AND column >= ? AND column < ? ALLOW
 * FILTERING}), routed to a replica of its range and paged by the driver, {@code concurrency}
 * splits at a time; the rows are then merged in the column's order. Every node reads all its
 * data for every query, so the cost is flat in the range's length: the "no index" strategy of
 * range queries in hash-partitioned stores, and the baseline of Needle's ordered index.
 *
 * <p>The splits cover the ring exactly once, so the answer holds every row whose column is in the
 * range, each once, as read at the scan's consistency level. The scan is not a snapshot: a row
 * written while it runs may or may not be in it.
 *
 * <p>Murmur3Partitioner only (Cassandra's default). Thread-safe; one instance serves many queries.
 */
public final class TokenRangeScan {
    private final CqlSession session;
    private final CqlIdentifier column;
    private final PreparedStatement fromRingStart;
    private final PreparedStatement bounded;
    private final ConsistencyLevel consistency;
    private final int concurrency;
    private final int pageSize;
    private final Duration timeout;
    private final int minSplits;
    /** {@code SELECT columns FROM keyspace.table WHERE }, and the range column as CQL names it. */
    private final String selectWhere;

    private final String columnCql;

    private TokenRangeScan(Builder b) {
        this.session = b.session;
        this.column = CqlIdentifier.fromInternal(b.column);
        this.consistency = b.consistency;
        this.concurrency = b.concurrency;
        this.pageSize = b.pageSize;
        this.timeout = b.timeout;
        TableMetadata table = session.getMetadata()
                .getKeyspace(b.keyspace)
                .flatMap(k -> k.getTable(b.table))
                .orElseThrow(() -> new IllegalArgumentException("no table " + b.keyspace + "." + b.table
                        + " in the cluster's schema (check the keyspace and table names)"));
        if (table.getColumn(column).isEmpty()) {
            throw new IllegalArgumentException("table " + b.keyspace + "." + b.table + " has no column " + b.column);
        }
        String key = table.getPartitionKey().stream()
                .map(ColumnMetadata::getName)
                .map(id -> id.asCql(true))
                .collect(Collectors.joining(", "));
        String columns = b.columns.isEmpty()
                ? "*"
                : b.columns.stream()
                        .map(c -> CqlIdentifier.fromInternal(c).asCql(true))
                        .collect(Collectors.joining(", "));
        String col = column.asCql(true);
        String from = "SELECT " + columns + " FROM " + table.getKeyspace().asCql(true) + "."
                + table.getName().asCql(true) + " WHERE ";
        String range = col + " >= ? AND " + col + " < ? ALLOW FILTERING";
        this.selectWhere = from;
        this.columnCql = col;
        // A split at the start of the ring has no lower token bound: token > MIN would still be right,
        // but one statement shape per kind keeps the bind positions plain.
        this.fromRingStart = session.prepare(from + "token(" + key + ") <= ? AND " + range);
        this.bounded = session.prepare(from + "token(" + key + ") > ? AND token(" + key + ") <= ? AND " + range);
        int nodes = session.getMetadata().getNodes().size();
        this.minSplits = Math.max(1, nodes * b.splitsPerNode);
    }

    /** {@code SELECT <the scan's columns> FROM <keyspace.table> WHERE <column> >= ? AND <column> < ?}, without filtering. */
    String rangeSelect() {
        return selectWhere + columnCql + " >= ? AND " + columnCql + " < ?";
    }

    CqlSession session() {
        return session;
    }

    ConsistencyLevel consistency() {
        return consistency;
    }

    int pageSize() {
        return pageSize;
    }

    Duration timeout() {
        return timeout;
    }

    /** Sorts rows by the range column, stably (ties keep their order). */
    List<Row> inColumnOrder(List<Row> rows) {
        List<Keyed> keyed = new ArrayList<>(rows.size());
        for (Row r : rows) {
            keyed.add(new Keyed(r.getObject(column), r)); // each row's key decoded once, not at every comparison
        }
        keyed.sort((a, b) -> compare(a.key(), b.key()));
        List<Row> out = new ArrayList<>(keyed.size());
        for (Keyed k : keyed) {
            out.add(k.row());
        }
        return out;
    }

    /** A scan of {@code keyspace.table} by {@code column} (its name as CQL stores it, e.g. lower case). */
    public static Builder on(CqlSession session, String keyspace, String table, String column) {
        return new Builder(session, keyspace, table, column);
    }

    /** The splits of the ring as the cluster's token ranges cut them now. */
    public List<TokenSplit> splits() {
        return splits(tokenMap());
    }

    private TokenMap tokenMap() {
        return session.getMetadata()
                .getTokenMap()
                .orElseThrow(() -> new IllegalStateException(
                        "the driver has no token map: enable token metadata (advanced.metadata.token-map.enabled)"));
    }

    private List<TokenSplit> splits(TokenMap tokens) {
        if (!tokens.getPartitionerName().endsWith("Murmur3Partitioner")) {
            throw new IllegalStateException(
                    "only Murmur3Partitioner is supported, the cluster uses " + tokens.getPartitionerName());
        }
        Set<TokenRange> ranges = tokens.getTokenRanges();
        if (ranges.isEmpty()) {
            return List.of(TokenSplit.RING);
        }
        int pieces = (minSplits + ranges.size() - 1) / ranges.size();
        List<TokenSplit> out = new ArrayList<>();
        for (TokenRange r : ranges) {
            out.addAll(TokenSplit.of(
                    Long.parseLong(tokens.format(r.getStart())), Long.parseLong(tokens.format(r.getEnd())), pieces));
        }
        out.sort(Comparator.comparingLong(TokenSplit::after));
        return out;
    }

    /**
     * The rows whose column is at least {@code fromInclusive} and less than {@code toExclusive},
     * in the column's order (ties in token order). The bounds are Java values of the column's
     * type ({@code Double} for {@code double}, {@code String} for {@code text}, ...).
     *
     * @throws RangeScanException when a split's read fails (naming the split); no partial answer
     */
    public List<Row> between(Object fromInclusive, Object toExclusive) {
        TokenMap tokens = tokenMap();
        List<TokenSplit> splits = splits(tokens);
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(concurrency, splits.size()), r -> {
            Thread t = new Thread(r, "needle-range-scan");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<List<Row>>> parts = new ArrayList<>();
            for (TokenSplit s : splits) {
                parts.add(pool.submit(() -> read(tokens, s, fromInclusive, toExclusive)));
            }
            List<Row> rows = new ArrayList<>();
            for (int i = 0; i < parts.size(); i++) {
                try {
                    rows.addAll(parts.get(i).get());
                } catch (ExecutionException e) {
                    throw new RangeScanException(
                            "reading split " + splits.get(i) + " of " + splits.size() + " failed: "
                                    + e.getCause().getMessage(),
                            e.getCause());
                }
            }
            return inColumnOrder(rows); // ties stay in token order
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RangeScanException("interrupted", e);
        } finally {
            pool.shutdownNow();
        }
    }

    private List<Row> read(TokenMap tokens, TokenSplit s, Object from, Object to) {
        BoundStatement st = s.fromRingStart()
                ? fromRingStart.bind(s.upTo(), from, to)
                : bounded.bind(s.after(), s.upTo(), from, to);
        st = st.setConsistencyLevel(consistency)
                .setPageSize(pageSize)
                .setTimeout(timeout)
                .setRoutingToken(tokens.parse(Long.toString(s.upTo())));
        List<Row> rows = new ArrayList<>();
        for (Row r : session.execute(st)) { // the driver fetches the next page as the loop reaches it
            rows.add(r);
        }
        return rows;
    }

    /** A row with its value of the range column. */
    private record Keyed(Object key, Row row) {}

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static int compare(Object a, Object b) {
        if (a == null || b == null) {
            return a == null ? (b == null ? 0 : -1) : 1;
        }
        return ((Comparable) a).compareTo(b);
    }

    /** Options of a scan; every one has a default. */
    public static final class Builder {
        private final CqlSession session;
        private final String keyspace;
        private final String table;
        private final String column;
        private List<String> columns = List.of();
        private ConsistencyLevel consistency = DefaultConsistencyLevel.LOCAL_QUORUM;
        private int splitsPerNode = 4;
        private int concurrency = 8;
        private int pageSize = 5_000;
        private Duration timeout = Duration.ofSeconds(30);

        private Builder(CqlSession session, String keyspace, String table, String column) {
            this.session = session;
            this.keyspace = keyspace;
            this.table = table;
            this.column = column;
        }

        /** The columns to return (default all); the range column is read too, to order the rows. */
        public Builder columns(String... names) {
            List<String> cs = new ArrayList<>(List.of(names));
            if (!cs.isEmpty() && !cs.contains(column)) {
                cs.add(column);
            }
            this.columns = List.copyOf(cs);
            return this;
        }

        /** Consistency level of every split's read (default LOCAL_QUORUM). */
        public Builder consistency(ConsistencyLevel cl) {
            this.consistency = cl;
            return this;
        }

        /** At least this many splits per node (default 4; the cluster's token ranges are cut further if fewer). */
        public Builder splitsPerNode(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("splitsPerNode must be at least 1, not " + n);
            }
            this.splitsPerNode = n;
            return this;
        }

        /** Splits read at the same time (default 8). */
        public Builder concurrency(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("concurrency must be at least 1, not " + n);
            }
            this.concurrency = n;
            return this;
        }

        /** Rows per page of a split's read (default 5,000). */
        public Builder pageSize(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("pageSize must be at least 1, not " + n);
            }
            this.pageSize = n;
            return this;
        }

        /** Timeout of each page's request (default 30 s). */
        public Builder timeout(Duration t) {
            this.timeout = t;
            return this;
        }

        /** Prepares the scan's statements (one round trip to the cluster). */
        public TokenRangeScan build() {
            return new TokenRangeScan(this);
        }
    }
}
