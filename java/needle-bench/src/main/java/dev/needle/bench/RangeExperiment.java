package dev.needle.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A range-query experiment in the style of the 2015 dissertation's chapter 2: rows with a key in
 * [0, 1) and {@code columns} text values, and mixes of queries {@code key >= a AND key < b} whose
 * length {@code b - a} is drawn from each mix's interval, answered by each variant. Read from
 * {@code bench/experiments/NAME.json}; fields in docs/harness.md.
 *
 * @param name          short name; results go to {@code bench/results/<name>/}
 * @param title         what the experiment measures
 * @param reproduces    the published table or figure it reproduces
 * @param variants      "scan" (the parallel token-range scan from the client, as Spark's connector reads),
 *     "sai" (Cassandra's SAI on the key column), "rix" (Needle's ordered index on the key column,
 *     NeedleRangeIndex, asked for by the custom payload), "coordinator-scan" (the same table and
 *     query, Needle's parallel scan at the coordinator asked for by the custom payload: the
 *     planner's stock strategy), "hybrid" (the same table and query, Needle's planner choosing),
 *     "hybrid-client" (the same, planned with the client's own scan among the strategies:
 *     {@code dev.needle.range.RangeQuery})
 * @param rows          rows loaded
 * @param columns       text columns per row besides the key
 * @param valueBytes    largest value of a column (each value's length is uniform in [1, valueBytes])
 * @param mixes         the query mixes, each measured in turn
 * @param queriesPerMix measured queries per mix (each answered by every variant, in a random order)
 * @param warmupQueries queries per mix run first and not measured
 * @param consistency   consistency level of every read and write
 * @param scan          the parallel scan's options
 * @param loadThreads   writes in flight while loading
 * @param seed          seed of the data and of the queries
 * @param cluster       nodes, replication factor and settings of the nodes' cassandra.yaml
 * @param zipf          the keys' skew: absent or 0, uniform in [0, 1); else Zipf's law with this
 *     exponent over 1,000 buckets of [0, 1), hot keys at the low end (see ZipfKeys)
 * @param clients       absent, or the client-concurrency phase that follows the mixes (the
 *     dissertation's Figures 2.14-2.20)
 * @param leafSizes     absent (one table with Needle's index at its default leaf size), or one
 *     table with Needle's index per leaf size: the variants through Needle's index are measured on
 *     each, named "rix (leaf N)" (the dissertation's Figures 2.3, 2.4 and 2.20)
 * @param saiBesideIndex absent or false: the table with Needle's index has no other index; true:
 *     it has SAI on the key column too, so that Needle's planner weighs the index, SAI and the scan
 *     ("sai" then reads that table, asking for SAI by the custom payload, and "coordinator-scan"
 *     still asks for the scan; not with "hybrid-client", whose own split queries Cassandra would
 *     answer by SAI)
 */
public record RangeExperiment(
        String name,
        String title,
        String reproduces,
        List<String> variants,
        int rows,
        int columns,
        int valueBytes,
        List<Mix> mixes,
        int queriesPerMix,
        int warmupQueries,
        String consistency,
        Scan scan,
        int loadThreads,
        long seed,
        Cluster cluster,
        Double zipf,
        Clients clients,
        List<Integer> leafSizes,
        Boolean saiBesideIndex) {

    /**
     * Queries whose length is uniform in [minLength, maxLength).
     *
     * @param queries absent, or the measured queries of this mix, instead of the experiment's
     *     {@code queries_per_mix} (short queries are cheap and vary the most: a median of 10 of
     *     them moves by 2x from run to run)
     */
    public record Mix(String label, double minLength, double maxLength, Integer queries) {
        /** The measured queries of this mix in experiment {@code e}. */
        public int queries(RangeExperiment e) {
            return queries != null ? queries : e.queriesPerMix();
        }
    }

    /** See {@code dev.needle.range.TokenRangeScan.Builder}. */
    public record Scan(int splitsPerNode, int concurrency, int pageSize) {}

    /**
     * @param cassandraYaml absent, or top-level cassandra.yaml settings of every node (a long range
     *     read at a million rows needs more than Cassandra's default request timeouts)
     */
    public record Cluster(int nodes, int replicationFactor, Map<String, String> cassandraYaml) {
        /** The settings as the cluster tool's arguments: {@code --yaml KEY=VALUE} each. */
        List<String> yamlArgs() {
            List<String> args = new ArrayList<>();
            if (cassandraYaml != null) {
                cassandraYaml.forEach((k, v) -> {
                    args.add("--yaml");
                    args.add(k + "=" + v);
                });
            }
            return args;
        }
    }

    /**
     * Per mix, per number of client threads {@code threads} and per variant, {@code queries} queries
     * (the same ones for every variant) answered by that many threads at once.
     */
    public record Clients(List<Integer> threads, int queries) {}

    static final Set<String> VARIANTS = Set.of("scan", "sai", "rix", "coordinator-scan", "hybrid", "hybrid-client");

    /** Whether a variant needs the table with Needle's ordered index (every variant but "scan" and "sai"). */
    boolean usesRangeIndex() {
        return variants.stream().anyMatch(v -> !v.equals("scan") && !v.equals("sai"));
    }

    /** The keys of the rows: uniform, or skewed as {@code zipf} says. */
    ZipfKeys keys() {
        return new ZipfKeys(zipf == null ? 0 : zipf);
    }

    /** Reads and checks {@code file}; every error names the file and the field. */
    public static RangeExperiment read(Path file) {
        RangeExperiment e = ExperimentFiles.read(file, RangeExperiment.class);
        try {
            e.validate();
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(file + ": " + ex.getMessage());
        }
        ExperimentFiles.checkName(file, e.name());
        return e;
    }

    void validate() {
        require(
                name != null && name.matches("[a-z0-9][a-z0-9-]*"),
                "'name' must be lower-case letters, digits and dashes");
        require(variants != null && !variants.isEmpty(), "'variants' must name at least one of " + VARIANTS);
        for (String v : variants) {
            require(VARIANTS.contains(v), "unknown variant '" + v + "'; known: " + VARIANTS);
        }
        require(rows > 0, "'rows' must be positive");
        require(columns >= 1 && columns <= 20, "'columns' must be 1 to 20");
        require(valueBytes >= 1, "'value_bytes' must be positive");
        require(mixes != null && !mixes.isEmpty(), "'mixes' must hold at least one mix");
        for (Mix m : mixes) {
            require(
                    m.minLength() > 0 && m.maxLength() > m.minLength() && m.maxLength() <= 1,
                    "mix '" + m.label() + "': lengths must satisfy 0 < min_length < max_length <= 1");
            require(m.queries() == null || m.queries() > 0, "mix '" + m.label() + "': 'queries' must be positive");
        }
        require(queriesPerMix > 0 && warmupQueries >= 0, "'queries_per_mix' > 0 and 'warmup_queries' >= 0");
        require(consistency != null, "'consistency' is required (e.g. \"ONE\")");
        require(
                scan != null && scan.splitsPerNode() > 0 && scan.concurrency() > 0 && scan.pageSize() > 0,
                "'scan' needs positive splits_per_node, concurrency and page_size");
        require(loadThreads > 0, "'load_threads' must be positive");
        require(
                cluster != null
                        && cluster.nodes() >= 1
                        && cluster.replicationFactor() >= 1
                        && cluster.replicationFactor() <= cluster.nodes(),
                "'cluster' needs 1 <= replication_factor <= nodes");
        require(
                cluster.cassandraYaml() == null
                        || cluster.cassandraYaml().entrySet().stream()
                                .allMatch(kv -> kv.getKey().matches("[a-z][a-z0-9_]*")
                                        && kv.getValue() != null
                                        && !kv.getValue().isBlank()
                                        && !kv.getValue().contains("\n")),
                "'cluster.cassandra_yaml' maps top-level cassandra.yaml settings (lower_case names) to one-line values");
        require(zipf == null || (zipf >= 0 && zipf <= 5), "'zipf' must be from 0 (uniform) to 5");
        require(
                clients == null
                        || (clients.threads() != null
                                && !clients.threads().isEmpty()
                                && clients.threads().stream().allMatch(t -> t >= 1 && t <= 64)
                                && clients.queries() >= 1),
                "'clients' needs 'threads' (1 to 64 each) and a positive 'queries'");
        require(
                leafSizes == null
                        || (!leafSizes.isEmpty()
                                && leafSizes.stream().allMatch(l -> l >= 16)
                                && leafSizes.stream().distinct().count() == leafSizes.size()),
                "'leaf_sizes' must list distinct leaf sizes of at least 16 entries");
        require(
                leafSizes == null || !(variants.contains("hybrid") || variants.contains("hybrid-client")),
                "'leaf_sizes' measures Needle's index itself: use 'rix' or 'coordinator-scan', not a planner");
        require(
                !hasSaiBesideIndex() || (leafSizes == null && !variants.contains("hybrid-client")),
                "'sai_beside_index' is for one table with Needle's index and the planner at the coordinator: "
                        + "not with 'leaf_sizes' or 'hybrid-client' (Cassandra answers a client's split queries by SAI)");
    }

    /** Whether the table with Needle's index has SAI on the key column too. */
    boolean hasSaiBesideIndex() {
        return saiBesideIndex != null && saiBesideIndex;
    }

    /** This experiment with its rows multiplied by {@code f} (for quick runs; the queries stay). */
    public RangeExperiment scaled(double f) {
        require(f > 0, "scale must be > 0, got " + f);
        return with(Math.max(100, (int) Math.round(rows * f)), mixes);
    }

    /** This experiment with only the mixes labelled {@code labels}, in the file's order (to run part of a sweep). */
    public RangeExperiment onlyMixes(List<String> labels) {
        List<String> known = mixes.stream().map(Mix::label).toList();
        List<String> unknown = labels.stream().filter(l -> !known.contains(l)).toList();
        require(unknown.isEmpty(), "no mix labelled " + String.join(", ", unknown) + "; the mixes are " + known);
        return with(rows, mixes.stream().filter(m -> labels.contains(m.label())).toList());
    }

    private RangeExperiment with(int rows, List<Mix> mixes) {
        return new RangeExperiment(
                name,
                title,
                reproduces,
                variants,
                rows,
                columns,
                valueBytes,
                mixes,
                queriesPerMix,
                warmupQueries,
                consistency,
                scan,
                loadThreads,
                seed,
                cluster,
                zipf,
                clients,
                leafSizes,
                saiBesideIndex);
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
