"""Charts of needle-bench results (matplotlib, imported when a chart is drawn)."""

from pathlib import Path

from harness_results import groups, is_insert, x_labels

VARIANT_COLORS = {"stock": "#7f7f7f", "needle-bloom": "#1f77b4", "needle-cuckoo": "#d62728"}


def chart(doc, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (cache, mode), runs in groups(doc).items():
        variants = list(runs[0]["variants"])
        labels = x_labels(doc, runs)
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(runs) + 2), 4.2))
        width = 0.8 / len(variants)
        for i, v in enumerate(variants):
            med = [r["variants"][v]["p50_us"] / 1000 for r in runs]
            p99 = [r["variants"][v]["p99_us"] / 1000 for r in runs]
            xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(runs))]
            ax.bar(xs, med, width, label=v, color=VARIANT_COLORS.get(v))
            ax.errorbar(
                xs,
                med,
                yerr=[[0] * len(med), [p - m for p, m in zip(p99, med, strict=True)]],
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2,
            )
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(labels, fontsize=8)
        what = "insert" if is_insert(doc) else "lookup"
        ax.set_ylabel(f"{what} latency, ms (bar: median, whisker: p99)")
        sub = f"{cache} cache" + (
            "" if mode is None else f", {mode}-level deletes" if mode == "partition" else ", row-by-row deletes"
        )
        ax.set_title(f"{doc['title']}\n{sub}", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        name = f"{doc['name']}-{cache}" + ("" if mode is None else f"-{mode}") + ".png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(out_dir / name)
    if doc.get("resources", {}).get("timeline"):
        written.append(resource_chart(doc, out_dir))
    return written


def resource_chart(doc, out_dir):
    """The resource timeline of a run (the 2022 paper's Figs. 15-17): the cluster's CPU, the bytes
    the nodes received and sent, and the node filters' own bytes, the background coloured by the
    variant being measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = doc["resources"]["timeline"]
    t = [s["t_s"] / 60 for s in samples]
    step = doc["resources"]["interval_s"] / 60
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    series = (
        (axes[0], "cpu_pct", 1, "CPU, % of one core (all nodes)", "Table 11: CPU"),
        (axes[1], "received_bytes_s", 1e6, "MB/s received (all nodes)", "Table 12: internode bytes in"),
        (axes[2], "sent_bytes_s", 1e6, "MB/s sent (all nodes)", "Table 13: internode bytes out"),
    )
    for ax, key, scale, ylabel, title in series:
        ax.plot(t, [sum(s[key]) / scale for s in samples], color="black", lw=1, label="cluster")
        if key == "sent_bytes_s":
            ax.plot(
                t,
                [sum(s["sync_bytes_s"]) / scale for s in samples],
                color="#2ca02c",
                lw=1,
                label="node filters (payload, once per change)",
            )
            ax.legend(fontsize=7, loc="upper right")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        for s, x in zip(samples, t, strict=True):
            color = VARIANT_COLORS.get(s["phase"])
            if color:
                ax.axvspan(x - step, x, color=color, alpha=0.3, lw=0)
    from matplotlib.patches import Patch

    axes[0].legend(
        handles=[Patch(color=c, alpha=0.3, label=f"{v} loading") for v, c in VARIANT_COLORS.items()],
        fontsize=7,
        loc="lower left",
    )
    axes[2].set_xlabel("minutes since the sampling began (idle periods before and after the load)", fontsize=8)
    import textwrap

    fig.suptitle("\n".join(textwrap.wrap(doc["title"], 110)), fontsize=9)
    fig.tight_layout()
    out = Path(out_dir) / f"{doc['name']}-resources.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def staleness_chart(doc, out_dir):
    """The fraction of reads that miss a just-written key against the time since the write."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for phase, style in (("idle", "-"), ("load", "--")):
        for table, color in (("needle-cuckoo", VARIANT_COLORS["needle-cuckoo"]), ("stock", VARIANT_COLORS["stock"])):
            curve = doc["probe"][phase][table]["curve"]
            xs = [max(c["from_ms"], 0.1) for c in curve]
            ax.step(
                xs, [c["miss_fraction"] for c in curve], style, where="post", color=color, label=f"{table}, {phase}"
            )
    ax.set_xscale("log")
    ax.set_xlabel("time since the write was acknowledged, ms (start of the read)")
    ax.set_ylabel("fraction of reads that miss the key")
    ax.set_title(
        f"Reads of a just-written key through the other nodes: {doc['nodes']} nodes, {doc['latency']}, "
        f"S = {doc['staleness_bound']}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_dir) / "staleness.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
