package dev.needle.cassandra.node;

import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.exceptions.UnavailableException;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.ReplicaPlan;
import org.apache.cassandra.locator.ReplicaPlans;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.FBUtilities;

/**
 * The coordinator's side of node filters: {@link #check decides} whether a read can be answered
 * empty without asking the replicas, only when every replica the read could go to says, from a
 * copy fresher than the table's staleness bound S, that it holds no live data for the key
 * (docs/invariants.md, invariant 5); remembers the keys written through this node (never skipped
 * here for S plus a second); and asks the owners whose copies said "live" for a key a read found
 * empty to check it.
 */
public final class CoordinatorCheck {
    private final Map<UUID, OwnerTable> owners;
    private final Copies copies;
    private final OwnerRequests requests;

    /**
     * Keys written through this coordinator lately: read through it, they are never skipped. 2 MiB:
     * past some 10^5 keys written within S, collisions make more keys look recent (read, never lost).
     */
    private final RecentWrites recentWrites = new RecentWrites(18);

    CoordinatorCheck(Map<UUID, OwnerTable> owners, Copies copies, OwnerRequests requests) {
        this.owners = owners;
        this.copies = copies;
        this.requests = requests;
    }

    /** Why a read was or was not answered from the copies. */
    public enum Verdict {
        /** Every replica the read could go to holds no live data for the key: answered empty. */
        SKIP,
        /** A replica's copy (or this node's own filter) says the key may be live there. */
        LIVE,
        /** A replica's copy is older than the staleness bound, or missing. */
        STALE,
        /** A replica's owner says its filter is not ready, or its copy is incomplete. */
        NOT_READY,
        /**
         * Not decided from copies: written through this node lately, a range moving, a client-set
         * time, too few replicas, or (copies scoped to replicas) a key this node does not replicate.
         */
        NOT_ELIGIBLE
    }

    /**
     * The answer for one key: the verdict, the owners whose copies said "live" (a read that then
     * finds nothing asks them to check), and for tracing, the copies used.
     */
    public record Check(Verdict verdict, List<UUID> liveOwners, String detail) {}

    private static final Check[] QUIET = new Check[Verdict.values().length];

    static {
        for (Verdict v : Verdict.values()) {
            QUIET[v.ordinal()] = new Check(v, List.of(), "");
        }
    }

    /** The answer, with its explanation only when one is wanted (tracing): no allocation otherwise. */
    private static Check answer(Verdict v, boolean explain, String detail) {
        return explain ? new Check(v, List.of(), detail) : QUIET[v.ordinal()];
    }

    /**
     * Whether a read of {@code key} at {@code cl} can be answered empty from the copies: every
     * live replica the read could be sent to (Cassandra's own read plan, so at ONE whichever one
     * the snitch picks, and at QUORUM any of them) must say it holds no live data. Lock-free.
     *
     * @param local this node's storage filter of the table (consulted when it is a replica itself)
     * @param nowInSec the read's "now" (a client may set it)
     * @param explain whether to describe the copies used, for tracing
     */
    public Check check(
            StorageFilter local,
            TableMetadata table,
            ByteBuffer key,
            Token token,
            ConsistencyLevel cl,
            long nowInSec,
            boolean explain) {
        UUID tableId = table.id.asUUID();
        OwnerTable own = owners.get(tableId);
        if (own == null) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "node filter off");
        }
        long now = System.currentTimeMillis();
        long staleness = own.options.stalenessMillis;
        long hash = Hashing.hash(key);
        if (recentWrites.writtenSince(tableId.getMostSignificantBits(), hash, now - staleness - 1000)) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "written through this node lately");
        }
        // The owners decided liveness at their "now": an earlier one (a client may set it) could see data still live.
        if (nowInSec < FBUtilities.nowInSeconds() - 1) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "read at a client-set time in the past");
        }
        if (!StorageService.instance
                .getTokenMetadata()
                .pendingEndpointsForToken(token, table.keyspace)
                .isEmpty()) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "token range moving");
        }
        ReplicaPlan.ForTokenRead plan;
        try {
            plan = ReplicaPlans.forRead(Keyspace.open(table.keyspace), token, null, cl, table.params.speculativeRetry);
        } catch (UnavailableException e) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "unavailable");
        }
        Receivers receivers = Receivers.current(table.keyspace, own.options.copyScope);
        if (receivers == null) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "ring not known yet");
        }
        InetAddressAndPort self = FBUtilities.getBroadcastAddressAndPort();
        if (receivers.scoped() && !plan.readCandidates().contains(self)) {
            // Copies hold only the keys of the ranges this node replicates (node_filter_copies
            // 'replicas'): a token-aware client sends reads to a replica.
            return answer(Verdict.NOT_ELIGIBLE, explain, "this node does not replicate the key");
        }
        Map<InetAddressAndPort, NodeCopy> tableCopies = copies.byEndpoint(tableId);
        long copyHash = NodeKey.filterHash(NodeKey.of(token));
        StringBuilder detail = explain ? new StringBuilder() : null;
        List<UUID> live = null;
        boolean selfLive = false;
        for (Replica r : plan.readCandidates()) {
            if (detail != null && detail.length() > 0) {
                detail.append(", ");
            }
            if (r.endpoint().equals(self)) {
                if (!local.isReady()) {
                    return answer(Verdict.NOT_READY, explain, "this node's filter is not ready");
                }
                KeyState s = local.lookup(key, hash, token, nowInSec);
                selfLive |= s == KeyState.LIVE;
                if (detail != null) {
                    detail.append(r.endpoint()).append(" (this node): ").append(s);
                }
                continue;
            }
            NodeCopy copy = tableCopies == null ? null : tableCopies.get(r.endpoint());
            NodeCopy.Epoch v = copy == null ? null : copy.current();
            if (v == null) {
                return answer(Verdict.STALE, explain, r.endpoint() + ": no copy");
            }
            if (!v.usable) {
                return answer(Verdict.NOT_READY, explain, r.endpoint() + ": copy not usable");
            }
            if (v.ring != receivers.fingerprint) {
                // The owner and this node see different rings (a topology change on its way):
                // they may not agree on which keys the copy holds.
                return answer(Verdict.NOT_READY, explain, r.endpoint() + ": copy of another ring");
            }
            long age = now - v.freshMillis;
            if (age > staleness) {
                return answer(Verdict.STALE, explain, r.endpoint() + ": copy " + age + " ms old");
            }
            boolean maybe = v.filter.mightContainHash(copyHash);
            if (detail != null) {
                detail.append(r.endpoint())
                        .append(": epoch ")
                        .append(v.epoch)
                        .append(" seq ")
                        .append(copy.appliedSeq())
                        .append(", ")
                        .append(age)
                        .append(" ms old, ")
                        .append(maybe ? "maybe live" : "not live");
            }
            if (maybe) {
                if (live == null) {
                    live = new ArrayList<>(2);
                }
                live.add(copy.owner);
            }
        }
        Verdict v = selfLive || live != null ? Verdict.LIVE : Verdict.SKIP;
        if (live == null) {
            return answer(v, explain, detail == null ? "" : detail.toString());
        }
        return new Check(v, live, detail == null ? "" : detail.toString());
    }

    /** A write through this coordinator: reads of the key through it are not skipped for a while. */
    public void written(TableId table, ByteBuffer key) {
        if (owners.containsKey(table.asUUID())) {
            recentWrites.record(table.asUUID().getMostSignificantBits(), Hashing.hash(key), System.currentTimeMillis());
        }
    }

    /**
     * A read the copies of {@code owners} called live found nothing: ask them to check the key
     * (a key whose rows were deleted one by one stays live in the filters until a read proves it dead).
     */
    public void verify(TableId table, ByteBuffer key, List<UUID> liveOwners) {
        UUID me = NodeFilters.localHost();
        ByteBuffer copy =
                ByteBuffer.allocate(key.remaining()).put(key.duplicate()).flip();
        for (UUID owner : liveOwners) {
            requests.send(owner, table.asUUID(), "verify", me, copy);
        }
    }
}
