package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class ResourcesTest {

    @Test
    void processTicksAreUserPlusSystemTimeEvenWithSpacesInTheCommand() {
        // Fields 14 and 15 (utime 1234, stime 56) of a made-up line whose command holds ") (".
        String stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 80 0 999 0 0";
        assertEquals(1290, Resources.parseStatTicks(stat));
    }

    @Test
    void machineTicksCountIdleAndIowaitAsNotBusy() {
        assertArrayEquals(
                new long[] {100 + 5 + 30 + 2 + 3 + 1, 100 + 5 + 30 + 800 + 60 + 2 + 3 + 1},
                Resources.parseMachineTicks("cpu  100 5 30 800 60 2 3 1 0 0"));
    }

    @Test
    void thisProcessSpendsCpu() throws IOException {
        long pid = ProcessHandle.current().pid();
        long before = Resources.processTicks(pid);
        long spin = System.nanoTime() + 300_000_000L;
        long x = 0;
        while (System.nanoTime() < spin) {
            x += Long.numberOfTrailingZeros(x + System.nanoTime());
        }
        assertTrue(x >= 0);
        assertTrue(Resources.processTicks(pid) > before, "300 ms of spinning shows in /proc/PID/stat");
        long[] m = Resources.machineTicks();
        assertTrue(m[0] > 0 && m[1] >= m[0]);
    }

    @Test
    void differencesAndSumsOfReadings() {
        Resources.Reading a = new Resources.Reading(
                1_000,
                new long[] {10, 20},
                new long[] {100, 200},
                new long[] {7, 8},
                new long[] {1, 2},
                new long[] {0, 5},
                50,
                100);
        Resources.Reading b = new Resources.Reading(
                3_000,
                new long[] {15, 30},
                new long[] {160, 260},
                new long[] {9, 11},
                new long[] {4, 4},
                new long[] {2, 5},
                80,
                180);
        Resources.Reading d = b.minus(a);
        assertEquals(2_000, d.nanos());
        assertArrayEquals(new long[] {5, 10}, d.cpuTicks());
        assertArrayEquals(new long[] {60, 60}, d.sentBytes());
        assertArrayEquals(new long[] {2, 3}, d.sentMessages());
        assertArrayEquals(new long[] {2, 0}, d.syncBytes());
        Resources.Reading twice = d.plus(d);
        assertEquals(4_000, twice.nanos());
        assertArrayEquals(new long[] {10, 20}, twice.cpuTicks());
        assertEquals(60, twice.machineBusy());
        assertEquals(d, d.plus(null));
        // A counter that went back (started again) grew by an unknown amount: 0, never negative.
        Resources.Reading reset = new Resources.Reading(
                4_000,
                new long[] {16, 31},
                new long[] {5, 270},
                new long[] {1, 12},
                new long[] {4, 4},
                new long[] {0, 5},
                90,
                200);
        assertArrayEquals(new long[] {0, 10}, reset.minus(b).sentBytes());
        assertArrayEquals(new long[] {0, 1}, reset.minus(b).sentMessages());
        assertArrayEquals(new long[] {0, 0}, reset.minus(b).syncBytes());
    }
}
