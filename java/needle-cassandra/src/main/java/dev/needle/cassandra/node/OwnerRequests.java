package dev.needle.cassandra.node;

import java.nio.ByteBuffer;
import java.util.UUID;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Requests from this node to owners (a snapshot a copy needs, a key a read proved empty), sent to
 * the owner alone as rows of the sync keyspace by one thread, off the read path. They are hints:
 * when the queue is full or a row does not arrive, the request is lost and the next one asks again.
 */
final class OwnerRequests {
    private static final Logger logger = LoggerFactory.getLogger(OwnerRequests.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    private final ThreadPoolExecutor requests = NodeFilters.singleThread("needle-node-filter-requests", 4096);

    /** Asks {@code owner} for {@code kind} ("snapshot" or "verify") of {@code table}, for {@code key} if any. */
    void send(UUID owner, UUID table, String kind, UUID requester, ByteBuffer key) {
        try {
            requests.execute(() -> {
                try {
                    SyncKeyspace.sendRequest(owner, table, kind, requester, key);
                } catch (RuntimeException e) {
                    noSpam.info("Needle could not send a node-filter request: {}", e.toString());
                }
            });
        } catch (RejectedExecutionException e) {
            // Requests are hints; the next one asks again.
        }
    }
}
