package dev.needle.range;

/** A range query that could not be answered; no partial answer is returned. */
public final class RangeScanException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RangeScanException(String message, Throwable cause) {
        super(message, cause);
    }
}
