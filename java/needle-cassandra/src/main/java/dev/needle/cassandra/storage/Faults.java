package dev.needle.cassandra.storage;

import java.lang.management.ManagementFactory;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.ObjectName;

/**
 * Fault injection for Needle's own tests: off, and a single constant check, unless the JVM runs
 * with {@code -Dneedle.fault_injection=true}. Then the MBean {@code dev.needle:type=FaultInjection}
 * arms a point to throw the next N times it is reached. The points are the places where Needle
 * must not let an error reach Cassandra: {@code write} (recording a write), {@code observer}
 * (collecting the keys of an SSTable being written), {@code notification} (applying a change of
 * the SSTable set), {@code scan} (reading an SSTable's keys) and {@code save} (writing the saved
 * filter). One point is a condition rather than an error: while {@code sync.drop} is armed, this
 * node's messages that carry node-filter sync rows to other nodes are dropped before they reach
 * the network (Cassandra's outbound sink), as a network that loses them would.
 */
public final class Faults {
    private static final boolean ENABLED = Boolean.getBoolean("needle.fault_injection");
    private static final ConcurrentHashMap<String, AtomicInteger> ARMED = new ConcurrentHashMap<>();

    /** The MBean's interface. */
    public interface FaultInjectionMBean {
        /** The next {@code times} visits of {@code point} throw. */
        void arm(String point, int times);

        /** How many more visits of {@code point} throw. */
        int remaining(String point);

        void disarmAll();
    }

    /** The error an armed point throws. */
    public static final class InjectedFault extends RuntimeException {
        InjectedFault(String point) {
            super("fault injected at '" + point + "' (needle.fault_injection)");
        }
    }

    static {
        if (ENABLED) {
            try {
                ManagementFactory.getPlatformMBeanServer()
                        .registerMBean(
                                new javax.management.StandardMBean(
                                        new FaultInjectionMBean() {
                                            @Override
                                            public void arm(String point, int times) {
                                                ARMED.put(point, new AtomicInteger(times));
                                            }

                                            @Override
                                            public int remaining(String point) {
                                                AtomicInteger c = ARMED.get(point);
                                                return c == null ? 0 : Math.max(0, c.get());
                                            }

                                            @Override
                                            public void disarmAll() {
                                                ARMED.clear();
                                            }
                                        },
                                        FaultInjectionMBean.class),
                                new ObjectName("dev.needle:type=FaultInjection"));
            } catch (Exception e) {
                throw new IllegalStateException("could not register the fault-injection MBean", e);
            }
        }
    }

    private Faults() {}

    /** Loads the class, so that the MBean is there before any point is reached. */
    static void install() {}

    /** Whether this JVM runs with fault injection. */
    public static boolean enabled() {
        return ENABLED;
    }

    /** Whether {@code point} is armed (without using up a visit): for conditions rather than errors. */
    public static boolean armed(String point) {
        if (!ENABLED) {
            return false;
        }
        AtomicInteger c = ARMED.get(point);
        return c != null && c.get() > 0;
    }

    /** Throws if {@code point} is armed. */
    static void hit(String point) {
        if (ENABLED) {
            AtomicInteger c = ARMED.get(point);
            if (c != null && c.getAndDecrement() > 0) {
                throw new InjectedFault(point);
            }
        }
    }
}
