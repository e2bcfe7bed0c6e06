package dev.needle.bench;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * The document an experiment ({@link Runner}) writes to {@code results.json}: the experiment and
 * the machine, each measured point, what the nodes spent (experiments that sample it) and when
 * the run ended. The file is written after each point, so what is not known yet is left out.
 *
 * @param experiment     the experiment as its file gave it, with its defaults filled in
 * @param settings       settings of the run that are not in the experiment (e.g. the nodes' heap)
 * @param runs           every measured point, in the order measured
 * @param resources      the resources section ({@link ResourceFrame}); null when not sampled
 * @param loadAverageEnd the machine's load average at the end; null where the system has none
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record RunResult(
        String name,
        String title,
        String reproduces,
        String started,
        Map<String, Object> machine,
        Object experiment,
        Map<String, Object> settings,
        List<PointResult> runs,
        String cassandraVersion,
        Map<String, Object> resources,
        String finished,
        Long durationS,
        Double loadAverageEnd) {

    /** Operations, over all points and variants, whose result was wrong. */
    long wrongResults() {
        return runs.stream()
                .flatMap(r -> r.variants().values().stream())
                .mapToLong(VariantResult::wrongResults)
                .sum();
    }
}
