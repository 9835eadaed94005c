#!/usr/bin/env python3
"""Plots an `rlk bench` JSON report: time against B for rl-kernel and cuBLAS, with the floor."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(report_path: str, png_path: str) -> None:
    with open(report_path) as f:
        report = json.load(f)
    dtypes = sorted({c["dtype"] for c in report["cases"]})
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.5 * len(dtypes), 4.8), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        cases = sorted((c for c in report["cases"] if c["dtype"] == dtype), key=lambda c: c["B"])
        b = [c["B"] for c in cases]
        for path, style in (("rlk", "-"), ("cublas", "--")):
            label = "rl-kernel" if path == "rlk" else "cuBLAS baseline"
            ax.plot(b, [c[path]["fwd_bwd_ms"] for c in cases], style, marker="o", color="C0" if path == "rlk" else "C1",
                    label=f"{label} fwd+bwd")
            ax.plot(b, [c[path]["fwd_ms"] for c in cases], style, marker="s", color="C2" if path == "rlk" else "C3",
                    label=f"{label} fwd")
        ax.plot(b, [c["floor"]["fwd_bwd_ms"] for c in cases], ":", color="k", label="floor fwd+bwd")
        ax.plot(b, [c["floor"]["fwd_ms"] for c in cases], ":", color="grey", label="floor fwd")
        if all(c.get("floor_3xtf32") for c in cases):  # FP32: the floor of the 3xTF32 contract too
            ax.plot(b, [c["floor_3xtf32"]["fwd_bwd_ms"] for c in cases], "-.", color="k", label="3xTF32 floor fwd+bwd")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("B (rows)")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"{report['key']} {dtype}\n{report['environment']['device']}, commit {report['environment']['rlk_commit'][:10]}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_bench.py REPORT.json OUT.png")
    main(sys.argv[1], sys.argv[2])
