package dev.needle.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * A real Cassandra cluster on 127.0.0.1..N with the Needle jar, driven through
 * {@code deploy/needle-cluster}. Closing it always takes every node down.
 */
final class LocalCluster implements AutoCloseable {
    private final Path tool = Path.of(System.getProperty("needle.cluster.tool", "../../deploy/needle-cluster"));
    private final Path dir;
    final int nodes;

    private LocalCluster(Path dir, int nodes) {
        this.dir = dir;
        this.nodes = nodes;
    }

    /** Starts N nodes with the plugin jar and the Needle query handler; extra args go to {@code up}. */
    static LocalCluster start(int nodes, String... extraUpArgs) throws IOException {
        Path dir = Files.createTempDirectory("needle-it-cluster");
        LocalCluster c = new LocalCluster(dir, nodes);
        String jar = System.getProperty("needle.plugin.jar");
        if (jar == null || !Files.exists(Path.of(jar))) {
            throw new IllegalStateException("plugin jar not found (" + jar + "): run through 'mvn verify'");
        }
        List<String> args = new ArrayList<>(List.of("up", "-n", String.valueOf(nodes), "--with-needle", jar));
        args.addAll(List.of(extraUpArgs));
        try {
            c.run(args.toArray(new String[0]));
        } catch (RuntimeException | IOException e) {
            c.close();
            throw e;
        }
        return c;
    }

    String run(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(tool.toAbsolutePath().toString(), "--dir", dir.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out;
        try {
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(10, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IllegalStateException("needle-cluster " + String.join(" ", args) + " did not finish");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("needle-cluster " + String.join(" ", args) + " failed (" + p.exitValue() + "):\n" + out);
        }
        return out;
    }

    /** The cluster's folder (each node's files are under node1, node2, ...). */
    Path dir() {
        return dir;
    }

    void flush(int node, String keyspace, String table) throws IOException {
        run("nodetool", String.valueOf(node), "flush", keyspace, table);
    }

    void compact(int node, String keyspace, String table) throws IOException {
        run("nodetool", String.valueOf(node), "compact", keyspace, table);
    }

    void kill(int node) throws IOException {
        run("kill", String.valueOf(node));
    }

    void stop(int node) throws IOException {
        run("stop", String.valueOf(node));
    }

    void startNode(int node) throws IOException {
        run("start", String.valueOf(node));
    }

    void restart(int node) throws IOException {
        run("restart", String.valueOf(node));
    }

    /** A driver session whose every request goes to one node (no token-aware routing elsewhere). */
    CqlSession session(int node) {
        DriverConfigLoader config = DriverConfigLoader.programmaticBuilder()
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.CONTROL_CONNECTION_TIMEOUT, Duration.ofSeconds(30))
                .withString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER, "datacenter1")
                .withClass(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, SingleNodePolicy.class)
                .withString(SingleNodePolicy.NODE_OPTION, "127.0.0." + node)
                .withInt(DefaultDriverOption.METADATA_SCHEMA_REQUEST_PAGE_SIZE, 5000)
                .withDuration(DefaultDriverOption.RECONNECTION_BASE_DELAY, Duration.ofMillis(200))
                .withDuration(DefaultDriverOption.RECONNECTION_MAX_DELAY, Duration.ofSeconds(2))
                .build();
        return CqlSession.builder()
                .addContactPoint(new InetSocketAddress("127.0.0." + node, 9042))
                .withLocalDatacenter("datacenter1")
                .withConfigLoader(config)
                .build();
    }

    /** A Needle metric of a table on one node, over JMX. */
    long metric(int node, String keyspace, String table, String name) throws IOException {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + (7199 + (node - 1) * 10) + "/jmxrmi");
        try (JMXConnector c = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection mbs = c.getMBeanServerConnection();
            ObjectName on = new ObjectName("org.apache.cassandra.metrics:type=Needle,keyspace=" + keyspace
                    + ",scope=" + table + ",name=" + name);
            // Counters expose "Count", gauges "Value".
            boolean counter = java.util.Arrays.stream(mbs.getMBeanInfo(on).getAttributes()).anyMatch(a -> a.getName().equals("Count"));
            String attr = counter ? "Count" : "Value";
            Object v = mbs.getAttribute(on, attr);
            return ((Number) v).longValue();
        } catch (javax.management.JMException e) {
            throw new IOException("metric " + name + " of " + keyspace + "." + table + " on node " + node + ": " + e, e);
        }
    }

    @Override
    public void close() {
        try {
            run("down");
        } catch (IOException | RuntimeException e) {
            System.err.println("needle-cluster down failed: " + e.getMessage());
        }
    }
}
