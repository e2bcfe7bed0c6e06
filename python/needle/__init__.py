"""Needle's partition index for Parquet files and Delta Lake tables.

The index answers, for a value of one column, which files (or row groups) may hold it, in two
reads, and never misses one that does. On top of it, :func:`lookup` returns the matching rows as
a ``pyarrow.Table``, :func:`duckdb_lookup` runs the point query in DuckDB over the candidate files
alone, and :func:`index_delta` / :func:`delta_lookup` do the same for a Delta table at any version.

Example::

    import needle
    needle.index_parquet("lake/events", "user_id")          # builds lake/events/.needle-index
    needle.candidate_files("lake/events", 42)               # [Candidate(path=..., row_group=None)]
    needle.lookup("lake/events", 42)                        # pyarrow.Table of the rows
    with needle.ParquetTable("lake/events") as events:       # the index held open, for many lookups
        events.duckdb_lookup(duckdb.connect(), 42).fetchall()
"""

from needle._common import Candidate
from needle._native import NeedleError, PartitionIndex
from needle.delta import delta_candidate_files, delta_lookup, index_delta, indexed_version
from needle.parquet import ParquetTable, candidate_files, duckdb_lookup, index_parquet, lookup

__all__ = [
    "Candidate",
    "NeedleError",
    "ParquetTable",
    "PartitionIndex",
    "candidate_files",
    "delta_candidate_files",
    "delta_lookup",
    "duckdb_lookup",
    "index_delta",
    "index_parquet",
    "indexed_version",
    "lookup",
]
