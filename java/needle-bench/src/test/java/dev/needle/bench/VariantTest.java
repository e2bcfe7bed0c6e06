package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class VariantTest {
    @Test
    void indexOptionsFollowTheVariantsFilter() {
        Map<String, String> options = new LinkedHashMap<>();
        options.put("node_filter", "one");
        options.put("staleness", "it's");
        List<String> ddl = Variant.of("needle-bloom").ddl("ks", options);
        assertEquals(
                "CREATE CUSTOM INDEX needle_bloom_needle ON ks.needle_bloom () USING 'dev.needle.cassandra.NeedleIndex'"
                        + " WITH OPTIONS = {'filter': 'bloom', 'node_filter': 'one', 'staleness': 'it''s'}",
                ddl.get(1));
        assertEquals(1, Variant.of("stock").ddl("ks", options).size(), "stock has no index");
        assertEquals(
                "CREATE CUSTOM INDEX needle_cuckoo_needle ON ks.needle_cuckoo () USING 'dev.needle.cassandra.NeedleIndex'"
                        + " WITH OPTIONS = {'filter': 'cuckoo'}",
                Variant.of("needle-cuckoo").ddl("ks", null).get(1));
        assertThrows(IllegalArgumentException.class, () -> Variant.of("needle-xor"));
    }
}
