package dev.needle.cassandra.base;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Histogram;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.cassandra.metrics.CassandraMetricsRegistry;
import org.apache.cassandra.metrics.CassandraMetricsRegistry.MetricName;

/**
 * The metrics of one table or index in Cassandra's metrics registry, and so over JMX as
 * {@code org.apache.cassandra.metrics:type=TYPE,keyspace=KS,scope=SCOPE,name=NAME}. A metric
 * replaces any of its name (left by a table or index of the same name that was dropped), and
 * {@link #release} removes them all.
 */
public final class MetricGroup {
    private static final String GROUP = "org.apache.cassandra.metrics";

    private final String type;
    private final String keyspace;
    private final String scope;
    private final List<MetricName> names = new ArrayList<>();

    /** Metrics of {@code type} ("Needle", "NeedleRange") for {@code scope} (a table or an index) of {@code keyspace}. */
    public MetricGroup(String type, String keyspace, String scope) {
        this.type = type;
        this.keyspace = keyspace;
        this.scope = scope;
    }

    /** Registers a counter named {@code metric}. */
    public Counter counter(String metric) {
        return CassandraMetricsRegistry.Metrics.register(name(metric), new Counter());
    }

    /** Registers a histogram named {@code metric} (over JMX with its percentiles, as Cassandra's own). */
    public Histogram histogram(String metric) {
        return CassandraMetricsRegistry.Metrics.histogram(name(metric), true);
    }

    /** Registers a gauge named {@code metric} that reads {@code value}. */
    public void gauge(String metric, LongSupplier value) {
        CassandraMetricsRegistry.Metrics.register(name(metric), (Gauge<Long>) value::getAsLong);
    }

    /** Removes every metric of the group (its table or index is gone). */
    public synchronized void release() {
        names.forEach(CassandraMetricsRegistry.Metrics::remove);
        names.clear();
    }

    private synchronized MetricName name(String metric) {
        String mbean = GROUP + ":type=" + type + ",keyspace=" + keyspace + ",scope=" + scope + ",name=" + metric;
        MetricName n = new MetricName(GROUP, type, metric, keyspace + "." + scope, mbean);
        CassandraMetricsRegistry.Metrics.remove(n);
        names.add(n);
        return n;
    }
}
