package dev.needle.filter;

/** The answer of a three-state filter for one key. */
public enum KeyState {
    /** Definitely not in the filter's scope: the key was never inserted, or was removed. */
    ABSENT,
    /** Maybe live: the key was inserted and not deleted (or a false positive). */
    LIVE,
    /** Maybe deleted: the key's data in scope is only tombstones (or a false positive); never LIVE. */
    DELETED
}
