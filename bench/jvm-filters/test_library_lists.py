"""The summary's library lists agree with the benchmark's own (Library.java, their one home)."""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from summary_data import DELETABLE, LIBRARIES, LOOKUP_ONLY  # noqa: E402

LIBRARY_JAVA = (
    HERE.parents[1] / "java/needle-filter-bench/src/main/java/dev/needle/filter/bench/Library.java"
).read_text()


def java_list(name):
    """The strings of `NAME = List.of(...)` in Library.java."""
    m = re.search(name + r"\s*=\s*List\.of\((.*?)\);", LIBRARY_JAVA, re.S)
    assert m, f"Library.java has no list {name}"
    return re.findall(r'"([^"]+)"', m.group(1))


def test_the_summary_describes_every_library_the_benchmark_runs_and_no_other():
    names = [name for name, _ in LIBRARIES]
    assert len(names) == len(set(names))
    assert set(names) == set(java_list("BUILDABLE")) | set(java_list("LOOKUP_VARIANTS"))


def test_the_lookup_only_rows_are_the_benchmarks_lookup_variants():
    assert LOOKUP_ONLY == set(java_list("LOOKUP_VARIANTS"))


def test_the_deletable_libraries_are_the_benchmarks():
    assert DELETABLE == set(java_list("DELETABLE"))
