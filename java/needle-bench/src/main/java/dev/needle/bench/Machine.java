package dev.needle.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The facts of the machine a result was measured on, written into every result file. */
final class Machine {
    private Machine() {}

    static Map<String, Object> facts() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cpu", firstValue(Path.of("/proc/cpuinfo"), "model name"));
        m.put("cores", Runtime.getRuntime().availableProcessors());
        String mem = firstValue(Path.of("/proc/meminfo"), "MemTotal");
        m.put(
                "memory_gib",
                mem == null ? null : Math.round(Long.parseLong(mem.replaceAll("[^0-9]", "")) / 1048576.0 * 10) / 10.0);
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        m.put("load_average", loadAverage());
        return m;
    }

    /** The 1-minute load average, or null where /proc is missing. */
    static Double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String firstValue(Path file, String key) {
        try {
            List<String> lines = Files.readAllLines(file);
            for (String l : lines) {
                if (l.startsWith(key)) {
                    return l.substring(l.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }
}
