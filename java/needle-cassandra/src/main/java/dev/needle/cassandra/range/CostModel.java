package dev.needle.cassandra.range;

/**
 * The latency of one range-query strategy as a line in the rows it returns, {@code fixed +
 * perRow * rows}, fitted online from observed queries by recursive least squares with forgetting
 * (older observations weigh less, so the model follows a cluster whose load or data changes).
 * Starts from calibrated coefficients, which count as {@code priorWeight} observations.
 *
 * <p>Not thread-safe: the planner serializes updates.
 */
final class CostModel {
    private static final double FORGETTING = 0.98;

    private double fixed;
    private double perRow;
    // The inverse information matrix of (fixed, perRow), symmetric: [[p00, p01], [p01, p11]].
    private double p00;
    private double p01;
    private double p11;
    private long observations;

    /**
     * @param fixed       calibrated latency of a query returning no row
     * @param perRow      calibrated latency per returned row
     * @param priorWeight how many observations the calibration is worth (the larger, the slower
     *                    observed latencies move the model)
     */
    CostModel(double fixed, double perRow, double priorWeight) {
        this.fixed = fixed;
        this.perRow = perRow;
        // A diagonal prior: the fixed cost as certain as priorWeight queries of no row, the per-row
        // cost as certain as priorWeight queries of a thousand rows.
        this.p00 = 1 / priorWeight;
        this.p11 = 1 / (priorWeight * 1e6);
        this.p01 = 0;
    }

    /** The expected latency of a query returning {@code rows} rows. */
    double predict(double rows) {
        return Math.max(0, fixed + perRow * rows);
    }

    /** Takes one observed query into the model. */
    void observe(double rows, double latency) {
        // Recursive least squares on x = (1, rows): k = P x / (lambda + x' P x); theta += k (y - x' theta).
        double px0 = p00 + p01 * rows;
        double px1 = p01 + p11 * rows;
        double denominator = FORGETTING + px0 + rows * px1;
        double k0 = px0 / denominator;
        double k1 = px1 / denominator;
        double error = latency - (fixed + perRow * rows);
        fixed += k0 * error;
        perRow += k1 * error;
        if (perRow < 0) {
            // More rows never cost less. Observations of about one size cannot tell the fixed cost
            // from the per-row one, and a large error there (a scan's, of the order of its fixed
            // cost) would tilt the line below zero for larger queries: flatten it, keeping the
            // prediction at this size.
            fixed += perRow * rows;
            perRow = 0;
        }
        fixed = Math.max(0, fixed);
        // P = (P - k x' P) / lambda
        double n00 = (p00 - k0 * px0) / FORGETTING;
        double n01 = (p01 - k0 * px1) / FORGETTING;
        double n11 = (p11 - k1 * px1) / FORGETTING;
        p00 = n00;
        p01 = n01;
        p11 = n11;
        observations++;
    }

    double fixed() {
        return fixed;
    }

    double perRow() {
        return perRow;
    }

    long observations() {
        return observations;
    }
}
