package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.cassandra.range.RangePlanner.Strategy;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RangePlannerTest {
    /** What each strategy really costs on a made-up cluster (ms): the scan is flat, the index per row. */
    private static double truth(Strategy s, double rows) {
        return switch (s) {
            case SCAN -> 400 + 0.0005 * rows;
            case SAI -> 15 + 0.01 * rows;
            case INDEX -> 2 + 0.004 * rows;
            case CLIENT_SCAN -> 300 + 0.0003 * rows; // the rows go straight from the nodes to the client
        };
    }

    private static double best(double rows) {
        double b = Double.MAX_VALUE;
        for (Strategy s : Strategy.values()) {
            b = Math.min(b, truth(s, rows));
        }
        return b;
    }

    /**
     * Calibrated wrong (fixed costs 3x, per-row costs 2x or half), the planner learns from the
     * latencies it observes, with noise: after a warm-up, over a sweep of selectivities from one
     * row to a million, its choices are within 1.25x of the best strategy's latency.
     */
    @Test
    void observedLatenciesCorrectAWrongCalibration() {
        RangePlanner p = new RangePlanner(
                Map.of(
                        Strategy.SCAN, new double[] {1200, 0.001},
                        Strategy.SAI, new double[] {5, 0.02},
                        Strategy.INDEX, new double[] {6, 0.008},
                        Strategy.CLIENT_SCAN, new double[] {900, 0.00015}),
                20,
                16,
                3);
        SplittableRandom r = new SplittableRandom(1);
        EnumSet<Strategy> all = EnumSet.allOf(Strategy.class);
        for (int q = 0; q < 3_000; q++) {
            double rows = Math.pow(10, 6 * r.nextDouble());
            RangePlanner.Decision d = p.choose(rows, all);
            p.observe(d.strategy(), rows, truth(d.strategy(), rows) * (0.9 + 0.2 * r.nextDouble()));
        }
        int within = 0, points = 0;
        double worst = 0;
        for (double exponent = 0; exponent <= 6; exponent += 0.05) {
            double rows = Math.pow(10, exponent);
            RangePlanner.Decision d = p.choose(rows, all);
            if (d.explored()) { // one decision in 16 tries another strategy on purpose: judge the model's
                d = p.choose(rows, all);
            }
            Strategy s = d.strategy();
            double ratio = truth(s, rows) / best(rows);
            worst = Math.max(worst, ratio);
            within += ratio <= 1.25 ? 1 : 0;
            points++;
        }
        assertEquals(points, within, "choices within 1.25x of the best; worst " + worst);
        double[] index = p.coefficients(Strategy.INDEX);
        assertEquals(0.004, index[1], 0.001, "the index's cost per row, learned");
    }

    @Test
    void aStrategyThatIsNotAvailableIsNeverChosen() {
        RangePlanner p = new RangePlanner(
                Map.of(Strategy.SCAN, new double[] {400, 0.0005}, Strategy.INDEX, new double[] {2, 0.004}), 20, 2, 3);
        for (int i = 0; i < 10; i++) {
            assertEquals(Strategy.SCAN, p.choose(10, EnumSet.of(Strategy.SCAN)).strategy());
        }
    }

    @Test
    void anIndexQueryFarBeyondItsEstimateSwitchesToTheScan() {
        RangePlanner p = new RangePlanner(
                Map.of(Strategy.SCAN, new double[] {400, 0.0005}, Strategy.INDEX, new double[] {2, 0.004}), 20, 0, 3);
        RangePlanner.Decision d = p.choose(100, EnumSet.of(Strategy.SCAN, Strategy.INDEX));
        assertEquals(Strategy.INDEX, d.strategy());
        Set<Strategy> scan = EnumSet.of(Strategy.SCAN);
        assertNull(p.switchTo(d, scan, 150, 10), "within ten times the estimate");
        assertNull(p.switchTo(d, scan, 5_000, 10), "the rest of the index is still cheaper than a scan");
        assertEquals(
                Strategy.SCAN,
                p.switchTo(d, scan, 500_000, 10),
                "a scan now costs less than the index's remaining rows");
        assertTrue(d.describe().startsWith("index for ~100 rows (expected: scan 400.1 index 2.4 ms)"), d.describe());
    }

    @Test
    void withSaiAndTheScanBothAvailableAnOverrunSwitchesToTheCheaperForItsRows() {
        RangePlanner p = new RangePlanner(
                Map.of(
                        Strategy.SCAN, new double[] {400, 0.0005},
                        Strategy.SAI, new double[] {50, 0.01},
                        Strategy.INDEX, new double[] {2, 0.04}),
                20,
                0,
                3);
        Set<Strategy> stock = EnumSet.of(Strategy.SCAN, Strategy.SAI);
        RangePlanner.Decision d = p.choose(100, EnumSet.of(Strategy.INDEX, Strategy.SCAN, Strategy.SAI));
        assertEquals(Strategy.INDEX, d.strategy());
        assertEquals(Strategy.SAI, p.cheapest(5_000, stock), "SAI for a medium range");
        assertEquals(Strategy.SCAN, p.cheapest(500_000, stock), "the scan for a long one");
        assertEquals(Strategy.SAI, p.switchTo(d, stock, 5_000, 10), "5,000 rows: SAI is cheaper than the rest");
        assertEquals(Strategy.SCAN, p.switchTo(d, stock, 200_000, 10), "200,000 rows: the scan");
        assertEquals(
                Strategy.SAI,
                p.choose(5_000, EnumSet.of(Strategy.INDEX, Strategy.SCAN, Strategy.SAI))
                        .strategy());
    }

    /**
     * The case of the range-mixes run at a million rows: the calibration (from 200,000 rows) put
     * the index at 0.11 ms a row where it took about 0.04, so every medium range went to the scan,
     * and a paged answer taught the planner nothing. Now a paged index answer is learned from
     * (whole, on its last page): the first exploring query corrects the index's per-row cost, and
     * every medium range after it goes to the index.
     */
    @Test
    void oneExploredIndexQueryCorrectsAPerRowCostTooHigh() {
        RangePlanner p = new RangePlanner(
                Map.of(Strategy.INDEX, new double[] {25, 0.11}, Strategy.SCAN, new double[] {3300, 0.015}), 5, 16, 3);
        EnumSet<Strategy> both = EnumSet.of(Strategy.INDEX, Strategy.SCAN);
        for (int q = 0; q < 10; q++) { // short ranges: the index, as expected
            RangePlanner.Decision d = p.choose(1_000, both);
            assertEquals(Strategy.INDEX, d.strategy());
            p.observe(d.strategy(), 1_000, 110 + 0.04 * 1_000);
        }
        StringBuilder medium = new StringBuilder();
        for (int q = 0; q < 12; q++) {
            RangePlanner.Decision d = p.choose(48_000, both);
            medium.append(d.strategy().name().charAt(0));
            double rows = 48_000;
            p.observe(d.strategy(), rows, d.strategy() == Strategy.INDEX ? 110 + 0.04 * rows : 2400 + 0.003 * rows);
        }
        // Decision 16 explores the index (the 6th medium range); all after it choose the index.
        assertEquals("SSSSSIIIIIII", medium.toString());
        assertEquals(0.04, p.coefficients(Strategy.INDEX)[1], 0.01, "the index's cost per row, learned");
    }

    /**
     * The scan of the same run, calibrated at 3,300 ms and observed only on short ranges (about
     * 2,400 ms for 1,000 rows): its line must not tilt below zero, which made a medium range of
     * 48,000 rows look free to scan.
     */
    @Test
    void shortObservationsDoNotMakeLargerQueriesLookFree() {
        RangePlanner p = new RangePlanner(Map.of(Strategy.SCAN, new double[] {3300, 0.015}), 5, 0, 3);
        for (int q = 0; q < 12; q++) {
            p.observe(Strategy.SCAN, 1_000, 2_400);
        }
        double[] scan = p.coefficients(Strategy.SCAN);
        assertTrue(scan[1] >= 0, "per-row cost " + scan[1]);
        double at1000 = scan[0] + scan[1] * 1_000;
        assertEquals(2_400, at1000, 300, "the observed size is predicted");
        assertTrue(scan[0] + scan[1] * 48_000 >= at1000, "a larger query costs no less");
    }
}
