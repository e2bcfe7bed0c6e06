package dev.needle.cassandra.storage;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Needle's own background threads, shared by every indexed table of the node. Scans of whole
 * SSTables do not run here: they are index builds on Cassandra's secondary-index executor
 * (visible in {@code nodetool compactionstats}, stoppable with {@code nodetool stop INDEX_BUILD}).
 */
final class Background {
    private static final Logger logger = LoggerFactory.getLogger(Background.class);

    /** Writing and deleting saved filters: small, ordered, never dropped (one task per SSTable). */
    private static final ExecutorService FILES = daemon("needle-files", new LinkedBlockingQueue<>());

    /**
     * Feedback reads. Bounded: a check that finds the queue full is dropped and counted, which
     * costs only a later read (the key is checked again the next time a read finds it empty).
     */
    private static final int FEEDBACK_QUEUE = 4096;

    private static final ExecutorService FEEDBACK =
            daemon("needle-feedback", new LinkedBlockingQueue<>(FEEDBACK_QUEUE));

    private Background() {}

    private static ExecutorService daemon(String name, LinkedBlockingQueue<Runnable> queue) {
        ThreadPoolExecutor ex = new ThreadPoolExecutor(
                1,
                1,
                30,
                TimeUnit.SECONDS,
                queue,
                r -> {
                    Thread t = new Thread(r, name);
                    t.setDaemon(true);
                    return t;
                },
                new ThreadPoolExecutor.AbortPolicy());
        ex.allowCoreThreadTimeOut(true);
        return ex;
    }

    static void files(Runnable task) {
        FILES.execute(guarded(task));
    }

    /** Runs a feedback check; false (nothing queued) when too many are waiting. */
    static boolean feedback(Runnable task) {
        try {
            FEEDBACK.execute(guarded(task));
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    private static Runnable guarded(Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (Throwable t) {
                logger.warn("Needle background task failed; reads stay correct, only less may be skipped", t);
            }
        };
    }
}
