package dev.needle.bench;

import java.io.PrintStream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shows how far a long phase has got: on a terminal one line rewritten every half second, otherwise
 * a line every 15 seconds (so logs stay short). Output goes to standard error.
 */
final class Progress implements AutoCloseable {
    private final PrintStream out = System.err;
    private final boolean terminal = System.console() != null;
    private final String label;
    private final long total;
    private final String unit;
    private final long start = System.nanoTime();
    private final Thread printer;
    /** Work done so far; the phase increments it. */
    final AtomicLong done = new AtomicLong();

    Progress(String label, long total, String unit) {
        this.label = label;
        this.total = total;
        this.unit = unit;
        printer = new Thread(this::loop, "needle-bench-progress");
        printer.setDaemon(true);
        printer.start();
    }

    private void loop() {
        long period = terminal ? 500 : 15_000;
        try {
            while (true) {
                Thread.sleep(period);
                print(false);
            }
        } catch (InterruptedException e) {
            // closed
        }
    }

    private synchronized void print(boolean last) {
        long d = done.get();
        double secs = (System.nanoTime() - start) / 1e9;
        double rate = secs > 0 ? d / secs : 0;
        String pct = total > 0 ? String.format("%3d%%", Math.min(100, d * 100 / total)) : "";
        String eta = !last && rate > 0 && total > d ? String.format(", %.0f s left", (total - d) / rate) : "";
        String line =
                String.format("%s %s %,d/%,d %s (%,.0f/s, %.0f s%s)", label, pct, d, total, unit, rate, secs, eta);
        if (terminal) {
            out.print("\r\033[K" + line + (last ? "\n" : ""));
        } else {
            out.println(line);
        }
        out.flush();
    }

    @Override
    public void close() {
        printer.interrupt();
        try {
            printer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        print(true);
    }
}
