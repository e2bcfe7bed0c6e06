package dev.needle.testhooks;

import java.util.Locale;

/**
 * One-way delays between the nodes of a local cluster (node N listens on 127.0.0.N), by profile:
 *
 * <ul>
 *   <li>{@code raw}: none (loopback as it is);
 *   <li>{@code lan}: 0.2 ms between any two nodes (one data centre, one zone);
 *   <li>{@code az}: nodes spread over three zones as in the 2022 paper's cluster (node N in zone
 *       (N - 1) mod 3): 0.1 ms within a zone, 0.25, 0.5 or 0.75 ms between zones a-b, a-c, b-c;
 *   <li>{@code wan}: 20 ms between any two nodes;
 *   <li>{@code fixed:D}: D milliseconds between any two nodes (for calibration sweeps).
 * </ul>
 */
public final class LatencyProfile {
    private final String name;
    private final long fixedNanos; // -1 for the zone table of "az"

    private LatencyProfile(String name, long fixedNanos) {
        this.name = name;
        this.fixedNanos = fixedNanos;
    }

    /** The profile named {@code spec}; throws IllegalArgumentException naming the valid ones. */
    public static LatencyProfile parse(String spec) {
        String s = spec == null ? "" : spec.trim().toLowerCase(Locale.ROOT);
        switch (s) {
            case "raw":
                return new LatencyProfile(s, 0);
            case "lan":
                return new LatencyProfile(s, 200_000);
            case "az":
                return new LatencyProfile(s, -1);
            case "wan":
                return new LatencyProfile(s, 20_000_000);
            default:
                if (s.startsWith("fixed:")) {
                    try {
                        double ms = Double.parseDouble(s.substring(6));
                        if (ms >= 0 && ms <= 10_000) {
                            return new LatencyProfile(s, Math.round(ms * 1e6));
                        }
                    } catch (NumberFormatException e) {
                        // falls through to the error
                    }
                }
                throw new IllegalArgumentException("unknown latency profile '" + spec
                        + "': use raw, lan, az, wan or fixed:MILLISECONDS (0 to 10000)");
        }
    }

    public String name() {
        return name;
    }

    /** The zone of node {@code n} (1-based) in the {@code az} profile. */
    static int zone(int n) {
        return Math.floorMod(n - 1, 3);
    }

    /** The one-way delay from node {@code from} to node {@code to}, in nanoseconds (0 to itself). */
    public long oneWayNanos(int from, int to) {
        if (from == to) {
            return 0;
        }
        if (fixedNanos >= 0) {
            return fixedNanos;
        }
        int a = zone(from);
        int b = zone(to);
        if (a == b) {
            return 100_000;
        }
        return switch (a + b) {
            case 1 -> 250_000; // zones a and b
            case 2 -> 500_000; // a and c
            default -> 750_000; // b and c
        };
    }
}
