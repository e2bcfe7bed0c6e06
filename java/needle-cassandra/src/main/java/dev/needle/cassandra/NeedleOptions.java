package dev.needle.cassandra;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.cassandra.exceptions.ConfigurationException;

/**
 * The options of a Needle index, as given in {@code CREATE CUSTOM INDEX ... WITH OPTIONS = {...}}.
 *
 * <ul>
 *   <li>{@code filter}: {@code cuckoo} (default; deleted partitions are skipped too) or
 *       {@code bloom} (the baseline: only never-written partitions are skipped)</li>
 *   <li>{@code fp_rate}: target false-positive rate of each filter, in (0, 0.5]; default 0.001</li>
 * </ul>
 */
public final class NeedleOptions {
    public static final String FILTER = "filter";
    public static final String FP_RATE = "fp_rate";
    /** Cassandra's own keys in the options map, which are not ours to validate. */
    private static final String[] CASSANDRA_KEYS = {"class_name", "target"};

    /** Which filter backs the index. */
    public enum FilterType {
        CUCKOO,
        BLOOM
    }

    public final FilterType filter;
    public final double fpRate;

    private NeedleOptions(FilterType filter, double fpRate) {
        this.filter = filter;
        this.fpRate = fpRate;
    }

    /** True for the cuckoo filter, which records deletions; false for the Bloom baseline. */
    public boolean tracksDeletions() {
        return filter == FilterType.CUCKOO;
    }

    /** Parses and checks the options; the exception message says what is wrong and what is allowed. */
    public static NeedleOptions parse(Map<String, String> options) {
        String f = options.getOrDefault(FILTER, "cuckoo").trim().toLowerCase(Locale.ROOT);
        FilterType type;
        switch (f) {
            case "cuckoo":
                type = FilterType.CUCKOO;
                break;
            case "bloom":
                type = FilterType.BLOOM;
                break;
            default:
                throw new ConfigurationException(
                        "Needle index option '" + FILTER + "' is '" + options.get(FILTER)
                                + "'; use 'cuckoo' (skips deleted and absent partitions) or 'bloom' (skips absent partitions only)");
        }
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
        return new NeedleOptions(type, fp);
    }

    /** The options Needle does not know, for Cassandra's {@code validateOptions} contract. */
    static Map<String, String> unknown(Map<String, String> options) {
        Map<String, String> unknown = new HashMap<>(options);
        unknown.remove(FILTER);
        unknown.remove(FP_RATE);
        for (String k : CASSANDRA_KEYS) {
            unknown.remove(k);
        }
        return unknown;
    }

    @Override
    public String toString() {
        return "{filter=" + filter.name().toLowerCase(Locale.ROOT) + ", fp_rate=" + fpRate + "}";
    }
}
