"""Charts and summaries of needle-bench results.

    needle_plot.py chart RESULTS.json [--out DIR]
        one PNG per cache state and delete mode: median latency per variant with a whisker to p99
    needle_plot.py summarize-scheme1 [--results DIR]
        bench/results/scheme1/summary.json (the storage-filter tables of the 2022 Journal of Big
        Data paper, with the targets checked), tables.md and the charts of every table
    needle_plot.py summarize-scheme2 [--results DIR]
        bench/results/scheme2/summary.json (the node-filter tables, every latency profile run,
        and the staleness probe's staleness.json, with the targets checked), tables.md, the
        staleness curve (staleness.png) and the load's resource timeline (NAME-resources.png)

Only the standard library and matplotlib; the summary needs no matplotlib.
"""

import argparse
from pathlib import Path

from charts import chart
from harness_results import load
from scheme1 import summarize_scheme1
from scheme2 import summarize_scheme2


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="needle_plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chart", help="PNG charts of one results.json")
    c.add_argument("results")
    c.add_argument("--out", help="folder for the PNGs (default: beside results.json)")
    s = sub.add_parser("summarize-scheme1", help="summary.json, tables.md and charts of Tables 1-5")
    s.add_argument("--results", default="bench/results", help="folder holding scheme1-table*/ (default bench/results)")
    s2 = sub.add_parser("summarize-scheme2", help="summary.json and tables.md of the node-filter tables")
    s2.add_argument("--results", default="bench/results", help="folder holding scheme2-table*/ (default bench/results)")
    a = ap.parse_args(argv)
    if a.cmd == "chart":
        doc = load(a.results)
        for p in chart(doc, a.out or Path(a.results).parent):
            print(f"chart: {p}")
    elif a.cmd == "summarize-scheme2":
        summarize_scheme2(a.results)
    else:
        summarize_scheme1(a.results)


if __name__ == "__main__":
    main()
