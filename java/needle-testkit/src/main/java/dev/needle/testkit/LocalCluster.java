package dev.needle.testkit;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Cassandra cluster on 127.0.K.1..N with the Needle jar on every node, driven through
 * {@code deploy/needle-cluster}. K is 0 unless the system property {@code needle.cluster.net}
 * names another loopback block ({@code 127.0.K}), as parallel test forks do to run side by side;
 * the system property {@code needle.cluster.jvm_opts} adds JVM options (space-separated) to every
 * node. Closing it always takes every node down and removes its folder.
 */
public final class LocalCluster implements AutoCloseable {
    private static final String STORAGE_SERVICE = "org.apache.cassandra.db:type=StorageService";

    private final Path tool;
    private final Path dir;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    /** Every session handed out, closed with the cluster (closing one twice is harmless). */
    private final List<CqlSession> sessions = new java.util.concurrent.CopyOnWriteArrayList<>();

    private volatile int nodes;

    /** Takes the nodes down when the JVM exits without closing this (Ctrl-C, kill), even mid-start. */
    private final Thread stopOnExit = new Thread(this::close, "needle-cluster-stop");
    /** The needle-cluster command running now, if any (stopped first by {@link #stopOnExit}). */
    private volatile Process running;

    private LocalCluster(Path tool, Path dir, int nodes) {
        this.tool = tool;
        this.dir = dir;
        this.nodes = nodes;
        Runtime.getRuntime().addShutdownHook(stopOnExit);
    }

    /** Number of nodes (grows with {@link #addNode()}). */
    public int nodes() {
        return nodes;
    }

    /**
     * Adds a node (N+1): it bootstraps, streaming its token ranges from the others, and
     * joins. Returns its number.
     */
    public int addNode() throws IOException {
        String out = run("add");
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("(?m)^node(\\d+)$").matcher(out);
        int last = -1;
        while (m.find()) {
            last = Integer.parseInt(m.group(1));
        }
        if (last < 0) {
            throw new IllegalStateException("needle-cluster add did not name the new node:\n" + out);
        }
        nodes = last;
        return last;
    }

    /**
     * Starts N nodes with the plugin jar and the Needle query handler in a new temporary folder; the
     * tool and the jar come from the system properties {@code needle.cluster.tool} and
     * {@code needle.plugin.jar} (set by the build). The folder is made under the directory
     * {@code needle.cluster.parent} names when that is a writable directory (the build names
     * {@code /dev/shm}, memory, where the nodes' writes and syncs do not wait on a disk that other
     * work shares), else under the JVM's temporary directory. Extra arguments go to
     * {@code needle-cluster up}.
     */
    public static LocalCluster start(int nodes, String... extraUpArgs) throws IOException {
        String jar = System.getProperty("needle.plugin.jar");
        String tool = System.getProperty("needle.cluster.tool", "../../deploy/needle-cluster");
        return start(Path.of(tool), jar == null ? null : Path.of(jar), newClusterDir(), nodes, extraUpArgs);
    }

    private static Path newClusterDir() throws IOException {
        String parent = System.getProperty("needle.cluster.parent", "");
        Path dir = Path.of(parent);
        if (!parent.isEmpty() && Files.isDirectory(dir) && Files.isWritable(dir)) {
            return Files.createTempDirectory(dir, "needle-cluster");
        }
        return Files.createTempDirectory("needle-cluster");
    }

    /**
     * Starts N nodes in {@code dir} (which must be empty or absent) with {@code pluginJar} on their
     * classpath. If starting fails, whatever was started is taken down before the exception leaves.
     */
    public static LocalCluster start(Path tool, Path pluginJar, Path dir, int nodes, String... extraUpArgs)
            throws IOException {
        if (!Files.isExecutable(tool)) {
            throw new IllegalArgumentException("cluster tool not found or not executable: " + tool.toAbsolutePath());
        }
        if (pluginJar == null || !Files.isRegularFile(pluginJar)) {
            throw new IllegalArgumentException("Needle plugin jar not found (" + pluginJar
                    + "): build it with 'make build' (java/needle-cassandra/target/needle-cassandra-*.jar)");
        }
        LocalCluster c = new LocalCluster(tool, dir, nodes);
        List<String> args = new ArrayList<>(List.of(
                "up",
                "-n",
                String.valueOf(nodes),
                "--with-needle",
                pluginJar.toAbsolutePath().toString()));
        String net = System.getProperty("needle.cluster.net", "");
        if (!net.isBlank()) {
            args.addAll(List.of("--net", net));
        }
        for (String opt :
                System.getProperty("needle.cluster.jvm_opts", "").trim().split("\\s+")) {
            if (!opt.isEmpty()) {
                args.add("--jvm-opt=" + opt);
            }
        }
        args.addAll(List.of(extraUpArgs));
        try {
            c.run(args.toArray(new String[0]));
        } catch (RuntimeException | IOException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** Runs one {@code needle-cluster} verb on this cluster; returns its output, throws if it fails. */
    public String run(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(tool.toAbsolutePath().toString(), "--dir", dir.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        running = p;
        String out;
        try {
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IllegalStateException("needle-cluster " + String.join(" ", args) + " did not finish");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException(e);
        } finally {
            running = null;
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(
                    "needle-cluster " + String.join(" ", args) + " failed (" + p.exitValue() + "):\n" + out);
        }
        return out;
    }

    /** The cluster's folder (each node's files are under node1, node2, ...). */
    public Path dir() {
        return dir;
    }

    /**
     * Flushes the memtables of {@code keyspace} (all its tables when {@code tables} is empty) on one
     * node: the StorageService operation {@code nodetool flush} calls, invoked directly over JMX
     * (a nodetool process costs about a second to start, and the randomized tests flush often).
     */
    public void flush(int node, String keyspace, String... tables) throws IOException {
        jmx(node).invoke(STORAGE_SERVICE, "forceKeyspaceFlush", keyspace, tables);
    }

    /**
     * A major compaction of {@code keyspace} (all its tables when {@code tables} is empty) on one
     * node, as {@code nodetool compact} runs it (over JMX, as {@link #flush}).
     */
    public void compact(int node, String keyspace, String... tables) throws IOException {
        jmx(node).invoke(STORAGE_SERVICE, "forceKeyspaceCompaction", false, keyspace, tables);
    }

    /** Runs {@code nodetool ARGS} against one node; returns its output, throws if it fails. */
    public String nodetool(int node, String... args) throws IOException {
        List<String> all = new ArrayList<>(List.of("nodetool", String.valueOf(node)));
        all.addAll(Arrays.asList(args));
        return run(all.toArray(new String[0]));
    }

    /** A node's folder (conf/, data/, commitlog/, logs/ ...). */
    public Path nodeDir(int node) {
        return dir.resolve("node" + node);
    }

    /** A node's data directories ({@code data}, {@code data2} ... with {@code up --data-dirs N}). */
    public List<Path> dataDirs(int node) throws IOException {
        try (java.util.stream.Stream<Path> dirs = Files.list(nodeDir(node))) {
            return dirs.filter(d ->
                            Files.isDirectory(d) && d.getFileName().toString().matches("data\\d*"))
                    .sorted()
                    .toList();
        }
    }

    /**
     * The folders of a table on one node, in every data directory ({@code <data>/<keyspace>/<table>-<id>};
     * a table dropped and created again has one per table id).
     */
    public List<Path> tableDirs(int node, String keyspace, String table) throws IOException {
        List<Path> out = new ArrayList<>();
        for (Path data : dataDirs(node)) {
            Path ks = data.resolve(keyspace);
            if (Files.isDirectory(ks)) {
                try (java.util.stream.Stream<Path> dirs = Files.list(ks)) {
                    dirs.filter(d -> d.getFileName().toString().startsWith(table + "-"))
                            .sorted()
                            .forEach(out::add);
                }
            }
        }
        return out;
    }

    public void kill(int node) throws IOException {
        run("kill", String.valueOf(node));
    }

    public void stop(int node) throws IOException {
        run("stop", String.valueOf(node));
    }

    public void startNode(int node) throws IOException {
        run("start", String.valueOf(node));
    }

    public void restart(int node) throws IOException {
        run("restart", String.valueOf(node));
    }

    /** A driver session whose every request goes to one node (no token-aware routing elsewhere). */
    public CqlSession session(int node) {
        return session(node, false);
    }

    /**
     * A driver session: with {@code tokenAware} the driver's default policy routes each request to a
     * replica of its key; otherwise every request goes to node {@code node}.
     */
    public CqlSession session(int node, boolean tokenAware) {
        ProgrammaticDriverConfigLoaderBuilder b = DriverConfigLoader.programmaticBuilder()
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(30))
                .withDuration(DefaultDriverOption.CONTROL_CONNECTION_TIMEOUT, Duration.ofSeconds(30))
                .withString(DefaultDriverOption.LOAD_BALANCING_LOCAL_DATACENTER, "datacenter1")
                .withInt(DefaultDriverOption.METADATA_SCHEMA_REQUEST_PAGE_SIZE, 5000)
                .withDuration(DefaultDriverOption.RECONNECTION_BASE_DELAY, Duration.ofMillis(200))
                .withDuration(DefaultDriverOption.RECONNECTION_MAX_DELAY, Duration.ofSeconds(2))
                // Cassandra writes a trace's events after the answer: the driver's default (5 tries
                // 3 ms apart) gives up on a busy machine before they are all there.
                .withInt(DefaultDriverOption.REQUEST_TRACE_ATTEMPTS, 50)
                .withDuration(DefaultDriverOption.REQUEST_TRACE_INTERVAL, Duration.ofMillis(100))
                // A session per node is how a test or the harness reads each node's own views.
                .withInt(DefaultDriverOption.SESSION_LEAK_THRESHOLD, 32);
        String address = address(node);
        if (!tokenAware) {
            b = b.withClass(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, FixedNodePolicy.class)
                    .withString(FixedNodePolicy.NODE_OPTION, address);
        }
        CqlSession session = CqlSession.builder()
                .addContactPoint(new InetSocketAddress(address, 9042))
                .withLocalDatacenter("datacenter1")
                .withConfigLoader(b.build())
                .build();
        sessions.removeIf(CqlSession::isClosed); // tests that restart nodes open many
        sessions.add(session);
        return session;
    }

    /** Node {@code node} through JMX, at the port the cluster tool gave it (cluster.json's ports.jmx). */
    public NodeJmx jmx(int node) throws IOException {
        return new NodeJmx(node, described(node, "ports", "jmx").asInt());
    }

    /** Node {@code node}'s address (cluster.json's addresses), e.g. {@code 127.0.0.2}. */
    public String address(int node) {
        try {
            return described(node, "addresses").asText();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Node {@code node}'s entry in the list at {@code path} of cluster.json, as the cluster tool wrote it. */
    private JsonNode described(int node, String... path) throws IOException {
        JsonNode list = new ObjectMapper().readTree(dir.resolve("cluster.json").toFile());
        for (String p : path) {
            list = list.path(p);
        }
        if (node < 1 || node > list.size()) {
            throw new IOException(
                    "no " + String.join(".", path) + " for node " + node + " in " + dir.resolve("cluster.json"));
        }
        return list.get(node - 1);
    }

    /**
     * Takes every node down and removes the folder, after closing every session it handed out;
     * only the first call does anything. The nodes are killed (a graceful stop drains and flushes
     * for some ten seconds, for data about to be removed); with the system property {@code
     * needle.keep_cluster} true they are stopped gracefully and the folder is kept.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (Thread.currentThread() == stopOnExit) {
            Process starting = running; // an 'up' cut short: stop it before taking its nodes down
            if (starting != null) {
                starting.destroy();
                try {
                    starting.waitFor(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        } else {
            try {
                Runtime.getRuntime().removeShutdownHook(stopOnExit);
            } catch (IllegalStateException e) {
                // the JVM is exiting: the hook may run, and finds the cluster closed
            }
        }
        for (CqlSession session : sessions) {
            try {
                session.close();
            } catch (RuntimeException e) {
                System.err.println("closing a driver session failed: " + e.getMessage());
            }
        }
        try {
            if (Boolean.getBoolean("needle.keep_cluster")) {
                run("down", "--keep"); // for a post-mortem: logs and data stay in dir()
                System.err.println("cluster folder kept: " + dir);
            } else {
                run("down", "--kill"); // nothing of a test cluster outlives it: no drain, no flush
            }
        } catch (IOException | RuntimeException e) {
            System.err.println("needle-cluster down failed: " + e.getMessage());
        }
    }
}
