package dev.needle.filter;

import java.io.IOException;

/** Serialized filter bytes that cannot be loaded: truncated, corrupt, or of a format this build does not read. */
public final class FilterFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    public FilterFormatException(String message) {
        super(message);
    }
}
