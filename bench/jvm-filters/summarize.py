#!/usr/bin/env python3
"""Joins the JMH results and the space/FPR results of bench/jvm-filters/run.sh into
summary.json (one object per library and configuration, machine facts, exact JMH settings,
targets) and writes the readable table docs/jvm-filters.md. Python 3 standard library only.

    python3 bench/jvm-filters/summarize.py --results bench/results/jvm-filters --doc docs/jvm-filters.md
"""

import argparse
import glob
import json
import os

from summary_data import build
from summary_doc import markdown


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--results", default=os.path.join(root, "bench/results/jvm-filters"))
    ap.add_argument("--doc", default=os.path.join(root, "docs/jvm-filters.md"))
    args = ap.parse_args()
    summary = build(args.results)
    summary["results_dir"] = os.path.relpath(os.path.abspath(args.results), root)
    # Smaller runs kept in subfolders (for example a re-check of target (a) on a quieter machine) are listed, not
    # merged.
    subs = []
    for path in sorted(glob.glob(os.path.join(args.results, "*", "summary.json"))):
        with open(path) as f:
            sub = json.load(f)
        a = sub["targets"]["a_lookup_at_least_2x_cuckoofilter4j"]
        libs = sorted({r["library"] for r in sub["results"]})
        phases = [p["phase"] for p in sub["run"].get("phases") or []]
        subs.append(
            {
                "dir": os.path.relpath(os.path.dirname(path), root),
                "started_at": sub["run"].get("started_at"),
                "wall_seconds": sub["run"].get("wall_seconds"),
                "met": a["met"],
                "checks": a["checks"],
                "scope": "libraries {}; phases {}".format(", ".join(libs), ", ".join(phases)),
            }
        )
    if subs:
        summary["supplementary_runs"] = subs
    with open(os.path.join(args.results, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, allow_nan=False)
        f.write("\n")
    os.makedirs(os.path.dirname(os.path.abspath(args.doc)), exist_ok=True)
    with open(args.doc, "w") as f:
        f.write(markdown(summary))


if __name__ == "__main__":
    main()
