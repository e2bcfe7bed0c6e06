package dev.needle.testhooks;

import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import javax.management.ObjectName;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.net.Message;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.utils.FBUtilities;

/**
 * A Java agent for Cassandra nodes of a local test cluster ({@code -javaagent:needle-testhooks.jar=PROFILE},
 * or {@code deploy/needle-cluster up --latency PROFILE}): every internode message is held back by
 * the profile's one-way delay between its sender and its receiver ({@link LatencyProfile}), through
 * {@code MessagingService}'s outbound sink, the hook Cassandra's own in-JVM tests use. Loopback
 * has no network delay, and netem is not available everywhere; this stands in for it. For tests
 * and experiments only.
 */
public final class LatencyAgent {
    private LatencyAgent() {}

    public static void premain(String args, Instrumentation inst) {
        LatencyProfile profile = LatencyProfile.parse(args);
        System.setProperty("needle.latency.profile", profile.name());
        if (profile.name().equals("raw")) {
            return;
        }
        Thread t = new Thread(() -> install(profile), "needle-latency-install");
        t.setDaemon(true);
        t.start();
    }

    /** Waits until Cassandra's messaging is up (its StorageService MBean is registered), then adds the sink. */
    private static void install(LatencyProfile profile) {
        try {
            ObjectName storage = new ObjectName("org.apache.cassandra.db:type=StorageService");
            while (!ManagementFactory.getPlatformMBeanServer().isRegistered(storage)) {
                Thread.sleep(50);
            }
            InetAddressAndPort self = FBUtilities.getBroadcastAddressAndPort();
            int from = node(self.getAddress());
            Lateness lateness = new Lateness(profile.name());
            ManagementFactory.getPlatformMBeanServer()
                    .registerMBean(lateness, new ObjectName("dev.needle.testhooks:type=Latency"));
            DelayLine line = new DelayLine("needle-latency", lateness);
            Set<Message<?>> released = Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
            MessagingService.instance().outboundSink.add((message, to) -> {
                if (released.remove(message)) {
                    return true; // its delay is over
                }
                long delay = profile.oneWayNanos(from, node(to.getAddress()));
                if (delay == 0) {
                    return true;
                }
                long due = System.nanoTime() + delay;
                line.at(due, () -> {
                    released.add(message);
                    MessagingService.instance().send(message, to);
                });
                return false;
            });
            System.err.println("needle-testhooks: internode latency profile " + profile.name() + " installed");
        } catch (Exception e) {
            System.err.println("needle-testhooks: could not install the latency profile: " + e);
        }
    }

    /** Node N of a local cluster listens on 127.0.K.N. */
    static int node(InetAddress address) {
        byte[] b = address.getAddress();
        return b[b.length - 1] & 0xFF;
    }
}
