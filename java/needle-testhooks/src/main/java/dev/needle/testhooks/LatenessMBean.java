package dev.needle.testhooks;

/**
 * JMX view of the delay line's lateness ({@code dev.needle.testhooks:type=Latency} on each node
 * started with the agent): what the emulation adds beyond the configured delays.
 */
public interface LatenessMBean {
    /** The latency profile in force. */
    String getProfile();

    /** Messages held back and released so far. */
    long getMessagesDelayed();

    /** Median release lateness, in microseconds; -1 before any message. */
    long getLatenessP50Micros();

    /** 99th percentile of the release lateness, in microseconds; -1 before any message. */
    long getLatenessP99Micros();

    /** Largest release lateness (capped at 10 ms), in microseconds; -1 before any message. */
    long getLatenessMaxMicros();

    /** Forgets what was recorded (a measurement starts from here). */
    void reset();
}
