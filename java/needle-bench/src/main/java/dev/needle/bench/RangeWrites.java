package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import dev.needle.bench.RangeResult.Stats;
import dev.needle.bench.RangeResult.WriteResult;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;

/**
 * The cost of an index to writes (the dissertation's Table 2.4): inserts and updates of the key,
 * timed one at a time on every table of a range experiment's data set.
 */
final class RangeWrites {
    /** Inserts and updates measured per table. */
    static final int PROBES = 400;

    private RangeWrites() {}

    /**
     * Inserts {@link #PROBES} new rows and updates the key of as many old rows in every table, each
     * probe in a random order of the tables; returns each table's medians.
     */
    static List<WriteResult> measure(
            RangeExperiment e,
            RangeDataSet data,
            CqlSession s,
            SplittableRandom r,
            ConsistencyLevel cl,
            PrintStream log) {
        List<String> tables = data.tables();
        Map<String, Histogram> inserts = new LinkedHashMap<>();
        Map<String, Histogram> updates = new LinkedHashMap<>();
        Map<String, PreparedStatement> insert = new LinkedHashMap<>();
        Map<String, PreparedStatement> update = new LinkedHashMap<>();
        for (String t : tables) {
            inserts.put(t, ClosedLoop.newHistogram());
            updates.put(t, ClosedLoop.newHistogram());
            insert.put(t, s.prepare(data.insertCql(t)));
            update.put(t, s.prepare("UPDATE " + RangeDataSet.KEYSPACE + "." + t + " SET k = ? WHERE id = ?"));
        }
        ZipfKeys keys = e.keys();
        for (int i = 0; i < PROBES; i++) {
            long newId = e.rows() + i;
            long oldId = r.nextLong(e.rows());
            double k = keys.next(r);
            double k2 = keys.next(r);
            Object[] row = data.row(r, newId, k); // a whole row, as the load writes
            List<String> order = new ArrayList<>(tables);
            Collections.shuffle(order, new Random(r.nextLong()));
            for (String t : order) {
                long t0 = System.nanoTime();
                s.execute(insert.get(t).bind(row).setConsistencyLevel(cl));
                long t1 = System.nanoTime();
                s.execute(update.get(t).bind(k2, oldId).setConsistencyLevel(cl));
                long t2 = System.nanoTime();
                inserts.get(t).recordValue(t1 - t0);
                updates.get(t).recordValue(t2 - t1);
            }
        }
        List<WriteResult> out = new ArrayList<>();
        for (String t : tables) {
            String index = data.indexOf(t);
            out.add(new WriteResult(t, index, PROBES, Stats.of(inserts.get(t)), Stats.of(updates.get(t))));
            log.printf(
                    "  writes to %-9s (%s): insert median %.2f ms, update median %.2f ms%n",
                    t,
                    index,
                    out.get(out.size() - 1).insert().medianMs(),
                    out.get(out.size() - 1).update().medianMs());
        }
        return out;
    }
}
