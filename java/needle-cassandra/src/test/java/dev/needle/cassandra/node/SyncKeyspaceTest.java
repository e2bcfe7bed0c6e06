package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The sync keyspace's CQL in the operator's guide is the CQL the plugin runs. */
class SyncKeyspaceTest {
    @Test
    void theGuideGivesTheSchemaThePluginCreates() throws Exception {
        String guide = Files.readString(Path.of("../../docs/node-filters.md"));
        for (String cql : SyncKeyspace.SCHEMA) {
            assertTrue(guide.contains(cql + ";\n"), "docs/node-filters.md lacks: " + cql);
        }
    }
}
