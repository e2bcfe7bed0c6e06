package dev.needle.bench;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.io.IOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Experiment files ({@code bench/experiments/NAME.json}) read as records ({@link Experiment},
 * {@link RangeExperiment}): snake_case field names, and every unknown or missing field named with
 * the file, so a typo never silently runs the default.
 */
final class ExperimentFiles {
    static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.ACCEPT_SINGLE_VALUE_AS_ARRAY);

    private ExperimentFiles() {}

    /**
     * A JSON file read as the record {@code type}: snake_case field names, unknown fields and
     * missing primitive fields named in the error, with the file's name.
     */
    static <T extends Record> T read(Path file, Class<T> type) {
        try {
            JsonNode tree = JSON.readTree(Files.readAllBytes(file));
            checkFields(tree, type, "");
            return JSON.treeToValue(tree, type);
        } catch (NoSuchFileException ex) {
            throw new IllegalArgumentException("experiment file not found: " + file);
        } catch (JsonMappingException ex) {
            throw new IllegalArgumentException(file + ": " + ex.getOriginalMessage() + " at " + ex.getPathReference());
        } catch (IOException ex) {
            throw new IllegalArgumentException(file + ": not a readable JSON experiment: " + ex.getMessage());
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(file + ": " + ex.getMessage());
        }
    }

    /**
     * Results go to bench/results/NAME/ and `make bench-NAME` runs bench/experiments/NAME.json: the
     * file's name and the experiment's must be one.
     */
    static void checkName(Path file, String name) {
        String stem = file.getFileName().toString().replaceFirst("\\.json$", "");
        if (!stem.equals(name)) {
            throw new IllegalArgumentException(file + ": the experiment is named '" + name + "'; its file must be "
                    + name + ".json (or rename the experiment '" + stem + "')");
        }
    }

    /**
     * Names the first unknown or missing field of {@code node} against the record {@code type}
     * (recursively), before Jackson's own, less readable messages.
     */
    private static void checkFields(JsonNode node, Class<?> type, String path) {
        if (!node.isObject()) {
            throw new IllegalArgumentException("'" + (path.isEmpty() ? "the file" : path) + "' must be a JSON object");
        }
        Map<String, RecordComponent> known = new LinkedHashMap<>();
        for (RecordComponent c : type.getRecordComponents()) {
            known.put(PropertyNamingStrategies.SnakeCaseStrategy.INSTANCE.translate(c.getName()), c);
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!known.containsKey(f)) {
                throw new IllegalArgumentException(
                        "unknown field '" + path + f + "'; known fields here: " + known.keySet());
            }
        }
        for (Map.Entry<String, RecordComponent> k : known.entrySet()) {
            JsonNode child = node.get(k.getKey());
            Class<?> t = k.getValue().getType();
            if (child == null) {
                if (t.isPrimitive()) {
                    throw new IllegalArgumentException("missing field '" + path + k.getKey() + "'");
                }
                continue;
            }
            if (t.isRecord() && !child.isNull()) {
                checkFields(child, t, path + k.getKey() + ".");
            } else if (t == List.class
                    && k.getValue().getGenericType() instanceof ParameterizedType pt
                    && pt.getActualTypeArguments()[0] instanceof Class<?> element
                    && element.isRecord()
                    && child.isArray()) {
                for (int i = 0; i < child.size(); i++) {
                    checkFields(child.get(i), element, path + k.getKey() + "[" + i + "].");
                }
            }
        }
    }
}
