package dev.needle.testkit;

import com.datastax.oss.driver.api.core.config.DriverOption;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.api.core.loadbalancing.LoadBalancingPolicy;
import com.datastax.oss.driver.api.core.loadbalancing.NodeDistance;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.session.Request;
import com.datastax.oss.driver.api.core.session.Session;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;

/**
 * A driver load-balancing policy that sends every request to one chosen node, so the caller decides
 * which node coordinates (and so how many reads go to a remote replica). The node's address is the
 * profile option {@link #NODE_OPTION}.
 */
public final class FixedNodePolicy implements LoadBalancingPolicy {
    /** The chosen node's address, e.g. {@code 127.0.0.2}. */
    public static final DriverOption NODE_OPTION = () -> "basic.load-balancing-policy.needle-node";

    private final String address;
    private volatile Node node;

    public FixedNodePolicy(DriverContext context, String profileName) {
        this.address = context.getConfig().getProfile(profileName).getString(NODE_OPTION);
    }

    @Override
    public void init(Map<UUID, Node> nodes, DistanceReporter reporter) {
        for (Node n : nodes.values()) {
            boolean chosen = n.getEndPoint().resolve() instanceof InetSocketAddress a
                    && a.getAddress().getHostAddress().equals(address);
            if (chosen) {
                node = n;
            }
            reporter.setDistance(n, chosen ? NodeDistance.LOCAL : NodeDistance.IGNORED);
        }
    }

    @Override
    public Queue<Node> newQueryPlan(Request request, Session session) {
        Queue<Node> plan = new ArrayDeque<>(1);
        if (node != null) {
            plan.add(node);
        }
        return plan;
    }

    @Override
    public void onAdd(Node n) {}

    @Override
    public void onUp(Node n) {}

    @Override
    public void onDown(Node n) {}

    @Override
    public void onRemove(Node n) {}

    @Override
    public void close() {}
}
