package dev.needle.filter.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openjdk.jmh.annotations.Param;

/** Every library row of the benchmark builds, answers and deletes as its library should. */
class LibraryTest {
    private static final int N = 20_000;
    private static final double FPP = 0.01;

    private static List<String> everyName() {
        List<String> names = new ArrayList<>(Library.BUILDABLE);
        names.addAll(Library.LOOKUP_VARIANTS);
        return names;
    }

    @Test
    void everyLibraryFindsEveryKeyItHoldsAndFewOthers() {
        long[] keys = Keys.inserted(N);
        long[] absent = Keys.absent(N);
        for (String name : everyName()) {
            Library lib = Library.create(name, N, FPP);
            assertEquals(0, lib.build(keys), name + ": failed inserts");
            assertEquals(N, lib.countContained(keys, 0, N), name + ": a key it holds is not found");
            int falsePositives = lib.countContained(absent, 0, N);
            // Every row is sized for 1 %: five times that would be a wrong size, not chance.
            assertTrue(falsePositives < 5 * FPP * N, name + ": " + falsePositives + " false positives");
            assertTrue(lib.sizeBits() > 0, name + ": no size");
        }
    }

    @Test
    void theDeletableLibrariesDeleteAndTheOthersSaySo() {
        long[] keys = Keys.inserted(N);
        for (String name : Library.BUILDABLE) {
            Library lib = Library.create(name, N, FPP);
            lib.build(keys);
            assertEquals(Library.DELETABLE.contains(name), lib.supportsDelete(), name);
            if (lib.supportsDelete()) {
                for (int i = 0; i < N / 2; i++) {
                    assertTrue(lib.delete(keys[i]), name + ": delete of a held key");
                }
                assertEquals(N - N / 2, lib.countContained(keys, N / 2, N), name + ": a remaining key lost");
            }
        }
    }

    @Test
    void aSavedFilterLoadsAndAnswersAlike(@TempDir Path dir) throws Exception {
        long[] keys = Keys.inserted(N);
        long[] absent = Keys.absent(N);
        for (String name : Library.BUILDABLE) {
            Library built = Library.create(name, N, FPP);
            built.build(keys);
            Path file = Files.createTempFile(dir, name, ".filter");
            if (!built.saveTo(file)) {
                continue; // no serialization of its own (fastfilter): the benchmark rebuilds it
            }
            Library loaded = Library.create(name, N, FPP);
            assertTrue(loaded.loadFrom(file), name);
            assertEquals(N, loaded.countContained(keys, 0, N), name);
            assertEquals(built.countContained(absent, 0, N), loaded.countContained(absent, 0, N), name);
        }
    }

    /** The libraries a benchmark's {@code @Param} lists run (JMH wants constants, so they are spelled out there). */
    private static List<String> params(Class<?> benchmark) throws NoSuchFieldException {
        return List.of(benchmark.getField("library").getAnnotation(Param.class).value());
    }

    @Test
    void theBenchmarksRunTheLibrariesOfTheirPhase() throws NoSuchFieldException {
        assertEquals(Library.forPhase("lookup"), params(LookupBenchmark.class));
        assertEquals(Library.forPhase("insert"), params(InsertBenchmark.class));
        assertEquals(Library.forPhase("delete"), params(DeleteBenchmark.class));
        assertEquals(Library.BUILDABLE, Library.forPhase("space"));
        assertEquals(everyName().size(), Library.forPhase("lookup").size());
    }
}
