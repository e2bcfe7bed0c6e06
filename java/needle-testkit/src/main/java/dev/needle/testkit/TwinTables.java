package dev.needle.testkit;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Two tables of the same schema, one with a Needle index and one without (its twin, stock
 * Cassandra as the oracle): every write goes to both with the same client timestamp, and every
 * read of one is compared with the same read of the other.
 *
 * <p>Statements are written once with {@code %s} where the table name goes, e.g.
 * {@code "INSERT INTO %s (k, v) VALUES (?, ?) USING TIMESTAMP 1000"}.
 */
public final class TwinTables {
    private final String indexed;
    private final String twin;
    private long reads;

    /** The two tables, each as {@code keyspace.table}. */
    public TwinTables(String indexed, String twin) {
        this.indexed = indexed;
        this.twin = twin;
    }

    /** The table with the index. */
    public String indexed() {
        return indexed;
    }

    /** The table without it. */
    public String twin() {
        return twin;
    }

    /** Number of reads compared so far (each compares the two tables once). */
    public long readsCompared() {
        return reads;
    }

    /** Runs a schema statement for both tables (e.g. {@code CREATE TABLE %s ...}). */
    public void schema(CqlSession s, String cql) {
        for (String t : new String[] {indexed, twin}) {
            s.execute(SimpleStatement.newInstance(String.format(cql, t)).setTimeout(Duration.ofSeconds(60)));
        }
    }

    /**
     * Writes to both tables at {@code cl} (same statement, same arguments, same client timestamp),
     * as one unlogged batch: with both tables in one keyspace and one partition key, Cassandra
     * makes it a single mutation, one commit-log entry for both tables, so a crash keeps or loses
     * the write in both alike (see docs/cassandra.md on Cassandra 5.0.9's commit-log loss).
     */
    public void write(CqlSession s, ConsistencyLevel cl, String cql, Object... args) {
        write(s, cl, st -> st, cql, args);
    }

    /**
     * As {@link #write(CqlSession, ConsistencyLevel, String, Object...)}, with the statement
     * adjusted first: the adjusted statement's consistency level, client timestamp, "now" and
     * timeout are the batch's.
     */
    public void write(
            CqlSession s, ConsistencyLevel cl, UnaryOperator<SimpleStatement> adjust, String cql, Object... args) {
        SimpleStatement settings =
                SimpleStatement.newInstance(String.format(cql, indexed), args).setConsistencyLevel(cl);
        if (!cql.toUpperCase(java.util.Locale.ROOT).contains("USING TIMESTAMP")) {
            settings = settings.setQueryTimestamp(currentMicros());
        }
        settings = adjust.apply(settings);
        BatchStatement batch = BatchStatement.newInstance(
                        DefaultBatchType.UNLOGGED,
                        SimpleStatement.newInstance(String.format(cql, indexed), args),
                        SimpleStatement.newInstance(String.format(cql, twin), args))
                .setConsistencyLevel(settings.getConsistencyLevel())
                .setQueryTimestamp(settings.getQueryTimestamp())
                .setNowInSeconds(settings.getNowInSeconds())
                .setTimeout(settings.getTimeout());
        execute(s, batch);
    }

    /**
     * Reads from both tables with the same statement and asserts that they return the same rows in
     * the same order; returns them (as {@code Row.getFormattedContents()}).
     */
    public List<String> compare(CqlSession s, ConsistencyLevel cl, String cql, Object... args) {
        return compare(s, cl, st -> st, cql, args);
    }

    /** As {@link #compare(CqlSession, ConsistencyLevel, String, Object...)}, with each statement adjusted first. */
    public List<String> compare(
            CqlSession s, ConsistencyLevel cl, UnaryOperator<SimpleStatement> adjust, String cql, Object... args) {
        List<String> withIndex = read(
                s,
                adjust.apply(SimpleStatement.newInstance(String.format(cql, indexed), args)
                        .setConsistencyLevel(cl)));
        List<String> stock = read(
                s,
                adjust.apply(SimpleStatement.newInstance(String.format(cql, twin), args)
                        .setConsistencyLevel(cl)));
        reads++;
        if (!withIndex.equals(stock)) {
            throw new AssertionError(String.format(
                    "%s at %s: with the Needle index %s, stock %s (%s)",
                    cql, cl, withIndex, stock, java.util.Arrays.toString(args)));
        }
        return stock;
    }

    /** The rows a statement returns, formatted; retried while a node restarts (reads are idempotent). */
    public static List<String> read(CqlSession s, SimpleStatement st) {
        List<String> rows = new ArrayList<>();
        for (Row r : execute(s, st)) {
            rows.add(r.getFormattedContents());
        }
        return rows;
    }

    /** Runs a statement, retrying for up to 20 s while nodes restart (use for idempotent statements only). */
    public static ResultSet execute(CqlSession s, Statement<?> st) {
        DriverException last = null;
        for (int attempt = 0; attempt < 40; attempt++) {
            try {
                return s.execute(st);
            } catch (DriverException e) {
                last = e;
                try {
                    Thread.sleep(500);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
        throw last;
    }

    private static long lastMicros;

    /** A client timestamp in microseconds, strictly increasing within this JVM. */
    public static synchronized long currentMicros() {
        long now = System.currentTimeMillis() * 1000;
        lastMicros = Math.max(now, lastMicros + 1);
        return lastMicros;
    }
}
