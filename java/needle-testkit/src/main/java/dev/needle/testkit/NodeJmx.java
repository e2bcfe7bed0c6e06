package dev.needle.testkit;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.LongPredicate;
import javax.management.Attribute;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * One node of a {@link LocalCluster} seen through JMX: Needle's metrics of a table and any MBean's
 * attributes and operations. Each call opens its own connection, so a node restarted between two
 * calls is simply reached again.
 */
public final class NodeJmx {
    private final int node;
    private final int port;

    NodeJmx(int node, int port) {
        this.node = node;
        this.port = port;
    }

    /** A Needle metric of a table (a counter's count or a gauge's value). */
    public long metric(String keyspace, String table, String name) throws IOException {
        ObjectName on = objectName(
                "org.apache.cassandra.metrics:type=Needle,keyspace=" + keyspace + ",scope=" + table + ",name=" + name);
        return call("metric " + name + " of " + keyspace + "." + table, mbs -> {
            boolean counter = Arrays.stream(mbs.getMBeanInfo(on).getAttributes())
                    .anyMatch(a -> a.getName().equals("Count"));
            return ((Number) mbs.getAttribute(on, counter ? "Count" : "Value")).longValue();
        });
    }

    /**
     * Polls a Needle metric until {@code condition} holds for its value, for at most {@code timeout};
     * returns the value. A metric that is not registered yet (the index is still registering) counts
     * as not holding. Throws an AssertionError naming the metric and its last value on timeout.
     */
    public long awaitMetric(String keyspace, String table, String name, LongPredicate condition, Duration timeout)
            throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Long last = null;
        IOException lastError = null;
        while (true) {
            try {
                last = metric(keyspace, table, name);
                if (condition.test(last)) {
                    return last;
                }
            } catch (IOException e) {
                lastError = e;
            }
            if (System.nanoTime() > deadline) {
                AssertionError e = new AssertionError("Needle metric " + name + " of " + keyspace + "." + table
                        + " on node " + node + " did not reach the expected value within " + timeout
                        + (last == null ? " (never read)" : "; last value " + last));
                if (last == null && lastError != null) {
                    e.initCause(lastError);
                }
                throw e;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new IOException(ie);
            }
        }
    }

    /** Waits until the Needle index of a table is ready (skipping), for at most two minutes. */
    public void awaitReady(String keyspace, String table) throws IOException {
        awaitMetric(keyspace, table, "Ready", v -> v == 1, Duration.ofMinutes(2));
    }

    /** Something to run between two readings of Needle's lookup counters. */
    @FunctionalInterface
    public interface Action {
        void run() throws Exception;
    }

    /** How many lookups of a table Needle skipped and passed on a node while an action ran. */
    public record LookupCounts(long skipped, long passed) {}

    /**
     * Runs {@code action} and returns the change of the table's {@code LookupsSkipped} and {@code
     * LookupsPassed} on this node: exact when nothing else reads that table through this node.
     */
    public LookupCounts lookups(String keyspace, String table, Action action) throws Exception {
        long s0 = metric(keyspace, table, "LookupsSkipped");
        long p0 = metric(keyspace, table, "LookupsPassed");
        action.run();
        return new LookupCounts(
                metric(keyspace, table, "LookupsSkipped") - s0, metric(keyspace, table, "LookupsPassed") - p0);
    }

    /** An attribute of any MBean (e.g. the test-hooks agent's {@code dev.needle.testhooks:type=Latency}). */
    public Object get(String objectName, String attribute) throws IOException {
        ObjectName on = objectName(objectName);
        return call(objectName + " " + attribute, mbs -> mbs.getAttribute(on, attribute));
    }

    /** Sets an attribute of any MBean. */
    public void set(String objectName, String attribute, Object value) throws IOException {
        ObjectName on = objectName(objectName);
        call(objectName + " " + attribute, mbs -> {
            mbs.setAttribute(on, new Attribute(attribute, value));
            return null;
        });
    }

    /** The value of any numeric gauge (e.g. Cassandra's compaction or table metrics). */
    public long gauge(String objectName) throws IOException {
        return ((Number) get(objectName, "Value")).longValue();
    }

    /**
     * The count of any counter or meter of Cassandra's; 0 if it is not registered, since Cassandra
     * registers some (the hint service's) only when first used.
     */
    public long count(String objectName) throws IOException {
        try {
            return ((Number) get(objectName, "Count")).longValue();
        } catch (IOException e) {
            if (e.getCause() instanceof InstanceNotFoundException) {
                return 0;
            }
            throw e;
        }
    }

    /** Invokes an operation of any MBean (arguments of primitive types, String or String[]); returns its result. */
    public Object invoke(String objectName, String operation, Object... args) throws IOException {
        String[] signature = new String[args.length];
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            signature[i] = a instanceof Integer
                    ? "int"
                    : a instanceof Long
                            ? "long"
                            : a instanceof Boolean
                                    ? "boolean"
                                    : a instanceof Double
                                            ? "double"
                                            : a.getClass().getName();
        }
        ObjectName on = objectName(objectName);
        return call(objectName + " " + operation, mbs -> mbs.invoke(on, operation, args, signature));
    }

    /** Empties the node's key cache (Cassandra's own cache of partition index positions). */
    public void invalidateKeyCache() throws IOException {
        invoke("org.apache.cassandra.db:type=Caches", "invalidateKeyCache");
    }

    @FunctionalInterface
    private interface Call<T> {
        T on(MBeanServerConnection mbs) throws IOException, JMException;
    }

    private <T> T call(String what, Call<T> call) throws IOException {
        try (JMXConnector c = JMXConnectorFactory.connect(
                new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi"))) {
            return call.on(c.getMBeanServerConnection());
        } catch (JMException e) {
            throw new IOException("JMX " + what + " on node " + node + ": " + e, e);
        }
    }

    private ObjectName objectName(String name) throws IOException {
        try {
            return new ObjectName(name);
        } catch (JMException e) {
            throw new IOException("JMX object name " + name + ": " + e.getMessage(), e);
        }
    }
}
