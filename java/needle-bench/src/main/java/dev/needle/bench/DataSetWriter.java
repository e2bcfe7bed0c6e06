package dev.needle.bench;

import dev.needle.bench.KeySpace.DeleteMode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes an experiment's data set into every variant's table alike: the partitions of the load
 * phase, then the deletes of those the key space marks deleted (whole partitions or row by row),
 * each phase followed by the flushes and compactions the experiment asks for.
 */
final class DataSetWriter {
    private final Experiment e;
    private final List<Client> clients;
    private final KeySpace keySpace;
    private final BenchCluster nodes;
    private final String keyspace;

    /** @param clients one per variant table, each written the same operations */
    DataSetWriter(Experiment e, List<Client> clients, KeySpace keySpace, BenchCluster nodes, String keyspace) {
        this.e = e;
        this.clients = clients;
        this.keySpace = keySpace;
        this.nodes = nodes;
        this.keyspace = keyspace;
    }

    /** Writes partitions {@code from} to {@code to} (exclusive) into every table, then settles. */
    void load(int from, int to) throws IOException {
        if (to <= from) {
            return;
        }
        int rows = e.dataset().rowsPerPartition();
        int n = clients.size();
        long total = (long) (to - from) * n;
        try (Progress pr = new Progress("load", total, "partitions")) {
            ClosedLoop.run(
                    e.load().threads(),
                    total,
                    e.seed(),
                    (i, r) -> {
                        clients.get((int) (i % n)).insert(from + i / n, 0, rows);
                        return true;
                    },
                    pr.done);
        }
        nodes.settle(keyspace, e.load().flushAfterLoad(), e.load().compactAfterLoad());
    }

    /** Deletes the partitions from {@code from} to {@code to} that the key space marks deleted, then settles. */
    void delete(int from, int to) throws IOException {
        List<Long> keys = new ArrayList<>();
        for (long id = from; id < to; id++) {
            if (keySpace.deletedBy(id) != null) {
                keys.add(id);
            }
        }
        if (keys.isEmpty()) {
            return;
        }
        int rows = e.dataset().rowsPerPartition();
        int n = clients.size();
        long total = (long) keys.size() * n;
        try (Progress pr = new Progress("delete", total, "partitions")) {
            ClosedLoop.run(
                    e.load().threads(),
                    total,
                    e.seed(),
                    (i, r) -> {
                        long key = keys.get((int) (i / n));
                        Client c = clients.get((int) (i % n));
                        if (keySpace.deletedBy(key) == DeleteMode.PARTITION) {
                            c.deletePartition(key);
                        } else {
                            c.deleteRows(key, 0, rows);
                        }
                        return true;
                    },
                    pr.done);
        }
        nodes.settle(keyspace, e.load().flushAfterDelete(), e.load().compactAfterDelete());
    }
}
