package dev.needle.cassandra;

import static com.datastax.oss.driver.api.core.ConsistencyLevel.ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What an operator does to a table with a Needle index, each compared with a twin table without:
 * {@code nodetool rebuild_index}, {@code nodetool import} of SSTables from another table and of
 * SSTables that carry their saved filter, a table with more SSTables than a build task queue ever
 * held, the {@code needle_views} virtual tables, and errors injected inside Needle while
 * Cassandra writes, flushes, compacts and reads (the write, flush or compaction must succeed, and
 * the answers stay right).
 */
class OperationsIT {
    private static final String FAULTS = "dev.needle:type=FaultInjection";
    private static final Pattern SSTABLE_FILE = Pattern.compile("([a-z]+)-(\\d+)-([a-z]+)-(.+)");
    private static LocalCluster cluster;
    private static CqlSession session;

    @BeforeAll
    static void up() throws Exception {
        cluster = LocalCluster.start(1, "--jvm-opt=-Dneedle.fault_injection=true");
        session = cluster.session(1);
        session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    }

    @AfterAll
    static void down() {
        if (cluster != null) {
            cluster.close(); // and the sessions it opened
        }
    }

    private static TwinTables twins(String name, String tableOptions) {
        TwinTables t = new TwinTables("ks." + name, "ks." + name + "_twin");
        t.schema(session, "CREATE TABLE %s (pk int, ck int, v text, PRIMARY KEY (pk, ck))" + tableOptions);
        session.execute("CREATE CUSTOM INDEX " + name + "_needle ON ks." + name
                + " () USING 'dev.needle.cassandra.NeedleIndex'");
        return t;
    }

    /** Rows in {@code [from, to)}, three per partition, then every fourth partition deleted. */
    private static void load(TwinTables t, int from, int to) {
        for (int pk = from; pk < to; pk++) {
            for (int ck = 0; ck < 3; ck++) {
                t.write(session, ONE, "INSERT INTO %s (pk, ck, v) VALUES (?, ?, ?)", pk, ck, "v" + pk);
            }
        }
        for (int pk = from; pk < to; pk += 4) {
            t.write(session, ONE, "DELETE FROM %s WHERE pk = ?", pk);
        }
    }

    private static void compareAll(TwinTables t, int to) {
        for (int pk = 0; pk < to + 10; pk++) {
            t.compare(session, ONE, "SELECT pk, ck, v FROM %s WHERE pk = ?", pk);
        }
    }

    private static long metric(String table, String name) throws IOException {
        return cluster.jmx(1).metric("ks", table, name);
    }

    private static long liveSSTables(String table) throws IOException {
        return cluster.jmx(1)
                .gauge("org.apache.cassandra.metrics:type=Table,keyspace=ks,scope=" + table + ",name=LiveSSTableCount");
    }

    @Test
    void rebuildIndexReadsEverySSTableAgain() throws Exception {
        TwinTables t = twins("rebuilt", "");
        for (int part = 0; part < 3; part++) {
            load(t, part * 100, part * 100 + 100);
            cluster.flush(1, "ks");
        }
        cluster.jmx(1).awaitReady("ks", "rebuilt");
        long scanned = metric("rebuilt", "SSTablesScanned");
        long sstables = liveSSTables("rebuilt");
        cluster.nodetool(1, "rebuild_index", "ks", "rebuilt", "rebuilt_needle");
        cluster.jmx(1).awaitReady("ks", "rebuilt");
        assertEquals(scanned + sstables, metric("rebuilt", "SSTablesScanned"), "every SSTable is read again");
        compareAll(t, 300);
        Lookups.assertSkipped(
                cluster,
                1,
                "ks",
                "rebuilt",
                "a deleted partition after the rebuild",
                () -> session.execute(SimpleStatement.newInstance("SELECT * FROM ks.rebuilt WHERE pk = 4")
                        .setConsistencyLevel(ONE)));
    }

    @Test
    void importOfSSTablesFromAnotherTableBuildsTheirFiltersBeforeTheyGoLive() throws Exception {
        TwinTables t = twins("imported", "");
        load(t, 0, 100);
        cluster.flush(1, "ks");
        // Another table with the same schema and no index, whose SSTables are imported into both.
        session.execute("CREATE TABLE ks.source (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
        for (int pk = 50; pk < 250; pk++) {
            session.execute("INSERT INTO ks.source (pk, ck, v) VALUES (?, 9, 'imported')", pk);
        }
        cluster.flush(1, "ks", "source");
        long scanned = metric("imported", "SSTablesScanned");
        int copied = 0;
        for (String table : new String[] {"imported", "imported_twin"}) {
            Path dir = importDir(table);
            copied = copySSTables("source", dir);
            cluster.nodetool(1, "import", "ks", table, dir.toString());
        }
        assertTrue(copied > 0);
        assertEquals(scanned + copied, metric("imported", "SSTablesScanned"), "each imported SSTable is read once");
        assertEquals(1, metric("imported", "Ready"), "imported SSTables arrive with their keys known");
        compareAll(t, 250);
        assertTrue(componentFiles("imported") >= liveSSTables("imported"), "every SSTable carries its saved filter");
    }

    @Test
    void importOfSSTablesThatCarryTheirSavedFilterLoadsIt() throws Exception {
        TwinTables t = twins("carried", "");
        load(t, 0, 200);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "carried");
        cluster.jmx(1)
                .awaitMetric(
                        "ks",
                        "carried",
                        "SSTablesSaved",
                        v -> v >= liveSSTablesUnchecked("carried"),
                        Duration.ofSeconds(30));
        cluster.nodetool(1, "snapshot", "-t", "carried", "ks");
        t.schema(session, "TRUNCATE %s");
        long loaded = metric("carried", "SSTablesLoaded");
        long scanned = metric("carried", "SSTablesScanned");
        for (String table : new String[] {"carried", "carried_twin"}) {
            Path snapshot = cluster.tableDirs(1, "ks", table)
                    .get(0)
                    .resolve("snapshots")
                    .resolve("carried");
            Path dir = importDir(table);
            try (Stream<Path> files = Files.list(snapshot)) {
                for (Path f : files.filter(f ->
                                SSTABLE_FILE.matcher(f.getFileName().toString()).matches())
                        .toList()) {
                    Files.copy(f, dir.resolve(f.getFileName()));
                }
            }
            cluster.nodetool(1, "import", "ks", table, dir.toString());
        }
        assertTrue(metric("carried", "SSTablesLoaded") > loaded, "the saved filters came with the SSTables");
        assertEquals(scanned, metric("carried", "SSTablesScanned"), "nothing needed a scan");
        compareAll(t, 200);
    }

    @Test
    void aTableWithManySSTablesBecomesReady() throws Exception {
        int count = Integer.getInteger("needle.it.sstables", 600);
        TwinTables t = new TwinTables("ks.many", "ks.many_twin");
        t.schema(
                session,
                "CREATE TABLE %s (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
                        + "WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}");
        for (int i = 0; i < count; i++) {
            t.write(session, ONE, "INSERT INTO %s (pk, ck, v) VALUES (?, 0, 'x')", i);
            if (i % 2 == 0) {
                t.write(session, ONE, "DELETE FROM %s WHERE pk = ?", i / 2);
            }
            cluster.flush(1, "ks", "many", "many_twin");
        }
        long sstables = liveSSTables("many");
        assertTrue(sstables >= count, sstables + " SSTables");
        // The index arrives after them: every one is scanned, none is dropped.
        session.execute("CREATE CUSTOM INDEX many_needle ON ks.many () USING 'dev.needle.cassandra.NeedleIndex'");
        cluster.jmx(1).awaitMetric("ks", "many", "Ready", v -> v == 1, Duration.ofMinutes(10));
        assertEquals(sstables, metric("many", "SSTablesScanned"));
        assertEquals(sstables, metric("many", "SSTablesWithFilter"));
        compareAll(t, count);
    }

    @Test
    void virtualTablesShowEachIndexAndExplainAKey() throws Exception {
        TwinTables t = twins("viewed", "");
        load(t, 0, 40);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "viewed");
        Row row = session.execute(
                        "SELECT * FROM needle_views.storage_filters WHERE keyspace_name = 'ks' AND table_name = 'viewed'")
                .one();
        assertEquals("viewed_needle", row.getString("index_name"));
        assertTrue(row.getBoolean("ready"));
        assertEquals("cuckoo", row.getString("filter"));
        assertEquals(metric("viewed", "LiveKeys"), row.getLong("live_keys"));
        assertEquals(metric("viewed", "SSTablesWithFilter"), row.getInt("sstables_with_filter"));
        List<Row> deleted = session.execute("SELECT * FROM needle_views.key_states WHERE keyspace_name = 'ks' "
                        + "AND table_name = 'viewed' AND partition_key = '4'")
                .all();
        assertEquals("DELETED", deleted.get(0).getString("state"), "the answer for a deleted key: " + deleted);
        List<Row> live = session.execute("SELECT * FROM needle_views.key_states WHERE keyspace_name = 'ks' "
                        + "AND table_name = 'viewed' AND partition_key = '5'")
                .all();
        assertEquals("LIVE", live.get(0).getString("state"));
        assertTrue(live.size() >= 2, "a source holds the live key: " + live);
    }

    @Test
    void errorsInsideNeedleNeverFailCassandraAndNeverCostARow() throws Exception {
        // No background compaction: the SSTables each step makes stay until the test compacts.
        TwinTables t =
                twins("faulty", " WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}");
        load(t, 0, 100);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "faulty");
        long failures = metric("faulty", "Failures");

        // While an SSTable is flushed and while SSTables are compacted: the observer fails, the
        // operation succeeds, the SSTable is scanned instead.
        long scanned = metric("faulty", "SSTablesScanned");
        arm("observer", 1);
        load(t, 100, 200);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "faulty");
        assertTrue(metric("faulty", "SSTablesScanned") > scanned, "the flushed SSTable was scanned");
        compareAll(t, 200);
        arm("observer", 1);
        cluster.compact(1, "ks", "faulty");
        cluster.jmx(1).awaitReady("ks", "faulty");
        assertEquals(1, liveSSTables("faulty"));
        compareAll(t, 200);

        // Recording a write fails: the write succeeds, and nothing is skipped until its memtable is flushed.
        arm("write", 1);
        t.write(session, ONE, "INSERT INTO %s (pk, ck, v) VALUES (?, ?, ?)", 1000, 0, "late");
        assertEquals(0, metric("faulty", "Ready"), "a memtable with an unrecorded write makes the table not ready");
        compareAll(t, 200);
        t.compare(session, ONE, "SELECT pk, ck, v FROM %s WHERE pk = ?", 1000);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "faulty");
        assertEquals(
                List.of("[pk:1000, ck:0, v:'late']"),
                t.compare(session, ONE, "SELECT pk, ck, v FROM %s WHERE pk = ?", 1000));

        // Applying a change of the SSTable set fails: Needle reconciles with the live SSTables.
        arm("notification", 1);
        load(t, 200, 250);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "faulty");
        compareAll(t, 250);

        // A scan fails during a rebuild: that SSTable stays unknown (nothing is skipped) and is
        // scanned again in the background.
        arm("scan", 1);
        long before = metric("faulty", "Failures");
        cluster.nodetool(1, "rebuild_index", "ks", "faulty", "faulty_needle");
        assertEquals(before + 1, metric("faulty", "Failures"));
        compareAll(t, 250);
        cluster.jmx(1).awaitReady("ks", "faulty");
        compareAll(t, 250);

        // Saving filters fails: they are rebuilt after a restart.
        arm("save", 1_000);
        load(t, 250, 300);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "faulty");
        cluster.jmx(1).awaitMetric("ks", "faulty", "Failures", v -> v >= failures + 6, Duration.ofSeconds(30));
        cluster.jmx(1).invoke(FAULTS, "disarmAll");
        assertTrue(metric("faulty", "Failures") >= failures + 6, "each injected error is counted");
        cluster.restart(1);
        cluster.jmx(1).awaitReady("ks", "faulty");
        assertTrue(metric("faulty", "SSTablesScanned") >= 1, "the SSTable whose filter was not saved was scanned");
        compareAll(t, 300);
        Lookups.assertSkipped(
                cluster,
                1,
                "ks",
                "faulty",
                "a deleted partition after all of this",
                () -> session.execute(SimpleStatement.newInstance("SELECT * FROM ks.faulty WHERE pk = 8")
                        .setConsistencyLevel(ONE)));
    }

    /**
     * A new folder to import SSTables from, laid out as Cassandra's importer expects
     * ({@code <keyspace>/<table>-<id>/}: it takes the SSTables' table from the path).
     */
    static Path importDir(String table) throws IOException {
        Path dir =
                Files.createTempDirectory(cluster.dir(), "import").resolve("ks").resolve(table + "-" + "0".repeat(32));
        return Files.createDirectories(dir);
    }

    private static void arm(String point, int times) throws IOException {
        cluster.jmx(1).invoke(FAULTS, "arm", point, times);
    }

    private static long liveSSTablesUnchecked(String table) {
        try {
            return liveSSTables(table);
        } catch (IOException e) {
            return Long.MAX_VALUE;
        }
    }

    /** Needle's saved-filter files of a table, in every data directory. */
    private static long componentFiles(String table) throws IOException {
        long n = 0;
        for (Path dir : cluster.tableDirs(1, "ks", table)) {
            try (Stream<Path> files = Files.list(dir)) {
                n += files.filter(f -> f.getFileName().toString().contains("-Needle+"))
                        .count();
            }
        }
        return n;
    }

    /** Copies the live SSTable files of a table into {@code to}; returns how many SSTables. */
    private static int copySSTables(String table, Path to) throws IOException {
        java.util.Set<String> generations = new java.util.HashSet<>();
        for (Path dir : cluster.tableDirs(1, "ks", table)) {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    Matcher m = SSTABLE_FILE.matcher(f.getFileName().toString());
                    if (m.matches()) {
                        generations.add(m.group(2));
                        Files.copy(f, to.resolve(f.getFileName()));
                    }
                }
            }
        }
        assertFalse(generations.isEmpty(), "no SSTable of " + table);
        return generations.size();
    }
}
