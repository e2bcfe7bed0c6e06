package dev.needle.filter;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where the shared format folder is (the build passes it; a run from the IDE finds it upward). */
final class TestFiles {
    private TestFiles() {}

    static Path formatDir() {
        String prop = System.getProperty("needle.format.dir");
        if (prop != null) {
            return Path.of(prop);
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("format/vectors"))) {
                return p.resolve("format");
            }
        }
        throw new IllegalStateException("format/ folder not found; set -Dneedle.format.dir");
    }
}
