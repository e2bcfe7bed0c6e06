package dev.needle.cassandra.base;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.cassandra.exceptions.ConfigurationException;

/**
 * The options of a Needle index, as given in {@code CREATE CUSTOM INDEX ... WITH OPTIONS = {...}}.
 *
 * <ul>
 *   <li>{@code filter}: {@code cuckoo} (default; deleted partitions are skipped too) or
 *       {@code bloom} (the baseline: only never-written partitions are skipped)</li>
 *   <li>{@code fp_rate}: target false-positive rate of each filter, in (0, 0.5]; default 0.001</li>
 *   <li>{@code node_filter}: whether a coordinator also skips reads on the word of its copies of
 *       other nodes' filters: {@code off} (default), {@code one} (at ONE and LOCAL_ONE) or
 *       {@code quorum} (also at QUORUM and LOCAL_QUORUM). SERIAL reads never skip.</li>
 *   <li>{@code node_filter_copies}: which copies a node keeps: {@code replicas} (default: only for
 *       the token ranges it replicates, its co-replicas' keys in them; reads skip only through a
 *       coordinator that replicates the key, as token-aware drivers route them) or {@code all}
 *       (every other node's whole filter, for clients that do not route by token)</li>
 *   <li>{@code staleness}: how old a copy may be and still be trusted, the bound S of the
 *       node filter's contract: a duration such as {@code 1s} (default) or {@code 500ms}, at most
 *       60 s</li>
 * </ul>
 */
public final class NeedleOptions {
    public static final String FILTER = "filter";
    public static final String FP_RATE = "fp_rate";
    public static final String NODE_FILTER = "node_filter";
    public static final String NODE_FILTER_COPIES = "node_filter_copies";
    public static final String STALENESS = "staleness";
    /** Cassandra's own keys in the options map, which are not ours to validate. */
    private static final String[] CASSANDRA_KEYS = {"class_name", "target"};

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s)");

    /** Which filter backs the index. */
    public enum FilterType {
        CUCKOO,
        BLOOM
    }

    /** At which consistency levels a coordinator skips on the word of its copies of other nodes' filters. */
    public enum NodeFilterMode {
        OFF,
        ONE,
        QUORUM
    }

    /** Which copies of other nodes' filters a node keeps. */
    public enum CopyScope {
        /** Only the keys of the token ranges it replicates: memory and sync grow with the replication factor, not the cluster. */
        REPLICAS,
        /** Every other node's whole filter: skips through any coordinator, at a cost that grows with the cluster. */
        ALL
    }

    public final FilterType filter;
    public final double fpRate;
    public final NodeFilterMode nodeFilter;
    public final CopyScope copyScope;
    public final long stalenessMillis;

    private NeedleOptions(
            FilterType filter, double fpRate, NodeFilterMode nodeFilter, CopyScope copyScope, long stalenessMillis) {
        this.filter = filter;
        this.fpRate = fpRate;
        this.nodeFilter = nodeFilter;
        this.copyScope = copyScope;
        this.stalenessMillis = stalenessMillis;
    }

    /** True for the cuckoo filter, which records deletions; false for the Bloom baseline. */
    public boolean tracksDeletions() {
        return filter == FilterType.CUCKOO;
    }

    /** Parses and checks the options; the exception message says what is wrong and what is allowed. */
    public static NeedleOptions parse(Map<String, String> options) {
        FilterType type = choice(
                options,
                FILTER,
                FilterType.CUCKOO,
                "use 'cuckoo' (skips deleted and absent partitions) or 'bloom' (skips absent partitions only)");
        double fp = 0.001;
        String raw = options.get(FP_RATE);
        if (raw != null) {
            try {
                fp = Double.parseDouble(raw.trim());
            } catch (NumberFormatException e) {
                throw new ConfigurationException(
                        "Needle index option '" + FP_RATE + "' is '" + raw + "'; give a number such as '0.001'");
            }
            if (!(fp > 0 && fp <= 0.5)) {
                throw new ConfigurationException("Needle index option '" + FP_RATE + "' is " + raw
                        + "; it must be greater than 0 and at most 0.5 (for example '0.01' or '0.001')");
            }
            if (type == FilterType.CUCKOO && fp < 1e-8) {
                throw new ConfigurationException("Needle index option '" + FP_RATE + "' is " + raw
                        + "; the cuckoo filter reaches rates down to 1e-8 (32-bit fingerprints)");
            }
        }
        NodeFilterMode mode = choice(
                options,
                NODE_FILTER,
                NodeFilterMode.OFF,
                "use 'off', 'one' (skip remote reads at ONE and LOCAL_ONE) or 'quorum' (also at QUORUM and"
                        + " LOCAL_QUORUM)");
        CopyScope scope = choice(
                options,
                NODE_FILTER_COPIES,
                CopyScope.REPLICAS,
                "use 'replicas' (copies of the ranges a node replicates, for token-aware clients) or 'all'"
                        + " (every other node's whole filter, for clients that do not route by token)");
        long staleness = 1000;
        String s = options.get(STALENESS);
        if (s != null) {
            Matcher m = DURATION.matcher(s.trim().toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                throw new ConfigurationException("Needle index option '" + STALENESS + "' is '" + s
                        + "'; give a duration such as '1s' or '500ms'");
            }
            double v = Double.parseDouble(m.group(1)) * (m.group(2).equals("s") ? 1000 : 1);
            if (!(v >= 10 && v <= 60_000)) {
                throw new ConfigurationException("Needle index option '" + STALENESS + "' is '" + s
                        + "'; it must be between 10ms and 60s (a copy older than this is not trusted)");
            }
            staleness = Math.round(v);
        }
        return new NeedleOptions(type, fp, mode, scope, staleness);
    }

    /**
     * The value of option {@code key}, one of {@code E}'s constants by its name in any case
     * ({@code fallback} when absent); an unknown value is refused with {@code hint}.
     */
    private static <E extends Enum<E>> E choice(Map<String, String> options, String key, E fallback, String hint) {
        String raw = options.get(key);
        if (raw == null) {
            return fallback;
        }
        try {
            return Enum.valueOf(fallback.getDeclaringClass(), raw.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException("Needle index option '" + key + "' is '" + raw + "'; " + hint);
        }
    }

    /** The options Needle does not know, for Cassandra's {@code validateOptions} contract. */
    public static Map<String, String> unknown(Map<String, String> options) {
        return unknownBeyond(options, FILTER, FP_RATE, NODE_FILTER, NODE_FILTER_COPIES, STALENESS);
    }

    /**
     * The options of an index that are neither Cassandra's own ({@code class_name}, {@code target})
     * nor among {@code known}: what its {@code validateOptions} returns.
     */
    public static Map<String, String> unknownBeyond(Map<String, String> options, String... known) {
        Map<String, String> unknown = new HashMap<>(options);
        for (String k : CASSANDRA_KEYS) {
            unknown.remove(k);
        }
        for (String k : known) {
            unknown.remove(k);
        }
        return unknown;
    }

    @Override
    public String toString() {
        return "{filter=" + filter.name().toLowerCase(Locale.ROOT) + ", fp_rate=" + fpRate + ", node_filter="
                + nodeFilter.name().toLowerCase(Locale.ROOT) + ", node_filter_copies="
                + copyScope.name().toLowerCase(Locale.ROOT) + ", staleness=" + stalenessMillis + "ms}";
    }
}
