/**
 * What every part of the plugin builds on: the index's options ({@link
 * dev.needle.cassandra.base.NeedleOptions}), the base of its custom indexes, and groups of metrics
 * registered with Cassandra's. It depends on no other package of the plugin, and the packages
 * depend on each other without cycles: {@code storage} on this one, {@code node} on {@code
 * storage}, {@code range} on this one, {@code views} on those three, and the plugin's entry points
 * (the index classes and the query handler, in {@code dev.needle.cassandra}) on all of them.
 */
package dev.needle.cassandra.base;
