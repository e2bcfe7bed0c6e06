package dev.needle.filter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The committed test vectors of {@code format/vectors/}: each a filter built by a fixed
 * sequence of operations on keys "key-0", "key-1", ... (XXH64 of their UTF-8 bytes), and the
 * answers it must give. A second implementation that follows {@code format/filter-v1.md}
 * reproduces the bytes from the same operations and the answers from the bytes.
 *
 * <p>Run {@code main} with the vectors folder to regenerate them after a deliberate format change.
 */
final class FormatVectors {
    private FormatVectors() {}

    static long key(String prefix, int i) {
        return Hashing.hash(prefix + i);
    }

    /** Name -> filter, built by the sequences described in format/vectors/README.md. */
    static Map<String, Filter> build() {
        Map<String, Filter> out = new LinkedHashMap<>();

        CuckooFilter cuckoo = CuckooFilter.create(new CuckooSizing(12, 4, 64, 4));
        for (int i = 0; i < 200; i++) {
            cuckoo.insertHash(key("key-", i));
        }
        for (int i = 0; i < 20; i++) {
            cuckoo.deleteHash(key("key-", i));
        }
        out.put("cuckoo-f12-b4", cuckoo);

        CuckooFilter full = CuckooFilter.create(new CuckooSizing(8, 2, 16, 4));
        for (int i = 0; full.insertHash(key("key-", i)); i++) {
            // fill until the first failure: exercises kicks and the stash
        }
        out.put("cuckoo-f8-b2-full", full);

        CuckooFilter wide = CuckooFilter.create(new CuckooSizing(32, 8, 16, 4));
        for (int i = 0; i < 100; i++) {
            wide.insertHash(key("key-", i));
        }
        out.put("cuckoo-f32-b8", wide);

        DeletionAwareCuckooFilter da = DeletionAwareCuckooFilter.create(new CuckooSizing(16, 4, 64, 4));
        for (int i = 0; i < 200; i++) {
            da.insertHash(key("key-", i));
        }
        for (int i = 0; i < 50; i++) {
            da.markDeletedHash(key("key-", i));
        }
        for (int i = 0; i < 10; i++) {
            da.purgeHash(key("key-", i));
        }
        for (int i = 40; i < 50; i++) {
            da.markLiveHash(key("key-", i));
        }
        out.put("deletion-aware-f16-b4", da);

        AdaptiveCuckooFilter acf = AdaptiveCuckooFilter.create(new CuckooSizing(8, 4, 64, 4));
        for (int i = 0; i < 200; i++) {
            acf.insertHash(key("key-", i));
        }
        for (int i = 0; i < 1000; i++) {
            long q = key("absent-", i);
            if (acf.mightContainHash(q)) {
                acf.reportFalsePositive(q);
            }
        }
        out.put("adaptive-f8-b4", acf);

        BloomFilter bloom = BloomFilter.create(200, 0.01);
        for (int i = 0; i < 200; i++) {
            bloom.insertHash(key("key-", i));
        }
        out.put("bloom-1pct", bloom);
        return out;
    }

    /** The answers for key-0..key-299 and absent-0..absent-999, one per line: "key answer". */
    static List<String> answers(Filter f) {
        List<String> lines = new ArrayList<>();
        for (String prefix : new String[] {"key-", "absent-"}) {
            int n = prefix.equals("key-") ? 300 : 1000;
            for (int i = 0; i < n; i++) {
                long h = key(prefix, i);
                String a = f instanceof KeyStateFilter s && !(f instanceof BloomFilter)
                        ? s.lookupHash(h).name()
                        : String.valueOf(((KeyFilter) f).mightContainHash(h));
                lines.add(prefix + i + " " + a);
            }
        }
        return lines;
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : "format/vectors");
        for (Map.Entry<String, Filter> e : build().entrySet()) {
            byte[] bytes = e.getValue().toByteArray();
            Files.write(dir.resolve(e.getKey() + ".bin"), bytes);
            Files.write(dir.resolve(e.getKey() + ".answers"), answers(e.getValue()), StandardCharsets.UTF_8);
            if (e.getKey().equals("cuckoo-f12-b4")) {
                Files.write(dir.resolve("bad-truncated.bin"), java.util.Arrays.copyOf(bytes, bytes.length - 9));
                byte[] flipped = bytes.clone();
                flipped[100] ^= 0x10;
                Files.write(dir.resolve("bad-payload-checksum.bin"), flipped);
                byte[] v2 = bytes.clone();
                v2[4] = 2;
                Files.write(dir.resolve("bad-version-2.bin"), v2);
                byte[] magic = bytes.clone();
                magic[0] = 'X';
                Files.write(dir.resolve("bad-magic.bin"), magic);
            }
        }
    }
}
