#!/usr/bin/env python3
"""Renders an `rlk bench` JSON report as the Markdown table of docs/performance.md, side by
side with the PyTorch anchors (../shared/reference/h200-anchors.json layout), so the table is
generated from the evidence, never typed.

usage: bench_table.py BENCH.json [ANCHORS.json [PYTORCH.json]]

With PYTORCH.json (tools/bench/pytorch_baseline.py's output from the same device call) it also
prints the baseline-against-PyTorch table ("Is the baseline a strawman?").
"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    anchors = json.load(open(sys.argv[2]))["cublas_via_pytorch_not_batch_invariant"] if len(sys.argv) > 2 else {}
    c = report["ceilings"]
    print(f"Ceilings measured in the same run: copy {c['copy_TB_per_s']:.2f} TB/s, BF16 GEMM "
          f"{c['bf16_gemm_TFLOP_per_s']:.0f} TFLOP/s, FP32 GEMM {c['fp32_gemm_TFLOP_per_s']:.1f} TFLOP/s"
          + (f", TF32 GEMM {c['tf32_gemm_TFLOP_per_s']:.0f} TFLOP/s" if "tf32_gemm_TFLOP_per_s" in c else "") + ".\n")
    # Reports from before the rounds were recorded have no spread column.
    rounds = all("fwd_bwd_rounds_ms" in case["rlk"] for case in report["cases"])
    spread_head, spread_rule = (" rl-kernel rounds' spread fwd / fwd+bwd |", "---:|") if rounds else ("", "")
    print("| dtype | B | rl-kernel fwd | cuBLAS fwd | fwd ratio | rl-kernel fwd+bwd | cuBLAS fwd+bwd | fwd+bwd ratio "
          "| floor fwd / fwd+bwd | rl-kernel share of floor (fwd+bwd) | PyTorch anchor fwd / fwd+bwd | device MiB rl-kernel / cuBLAS |"
          + spread_head)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + spread_rule)
    for case in report["cases"]:
        r, b, f = case["rlk"], case["cublas"], case["floor"]
        anchor = anchors.get(f"{case['dtype']}_B{case['B']}")
        anchor_text = f"{anchor['fwd_ms']:.3f} / {anchor['fwd_bwd_ms']:.3f}" if anchor else "—"
        # FP32 from reports with the 3xTF32 floor: its share beside the FP32-core floor's.
        tc = case.get("rlk_fraction_of_floor_3xtf32")
        share_text = f"{case['rlk_fraction_of_floor']['fwd_bwd']:.0%}" + (f" (3xTF32: {tc['fwd_bwd']:.0%})" if tc else "")
        spread_text = (f" {spread(r['fwd_rounds_ms'], r['fwd_ms']):.1%} / {spread(r['fwd_bwd_rounds_ms'], r['fwd_bwd_ms']):.1%} |"
                       if rounds else "")
        print(f"| {case['dtype']} | {case['B']} | {r['fwd_ms']:.4f} | {b['fwd_ms']:.4f} | {case['rlk_over_cublas']['fwd']:.2f}x "
              f"| {r['fwd_bwd_ms']:.4f} | {b['fwd_bwd_ms']:.4f} | {case['rlk_over_cublas']['fwd_bwd']:.2f}x "
              f"| {f['fwd_ms']:.4f} / {f['fwd_bwd_ms']:.4f} | {share_text} "
              f"| {anchor_text} | {r['device_MiB']:.0f} / {b['device_MiB']:.0f} |" + spread_text)
    if len(sys.argv) > 3:
        print_pytorch_table(report, json.load(open(sys.argv[3])))


def spread(rounds, median):
    """(max - min) / median of the rounds' medians, as `rlk bench` prints it."""
    return (max(rounds) - min(rounds)) / median if rounds and median > 0 else 0.0


def print_pytorch_table(report, pytorch):
    ours = {(c["dtype"], c["B"]): c for c in report["cases"]}
    print("\n| dtype | B | baseline fwd | PyTorch fwd | baseline fwd+bwd | PyTorch fwd+bwd "
          "| baseline / PyTorch (fwd+bwd) | rl-kernel fwd+bwd / PyTorch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in pytorch["cases"]:
        case = ours.get((p["dtype"], p["B"]))
        if case is None:
            continue
        b, r = case["cublas"], case["rlk"]
        print(f"| {p['dtype']} | {p['B']} | {b['fwd_ms']:.4f} | {p['fwd_ms']:.4f} | {b['fwd_bwd_ms']:.4f} "
              f"| {p['fwd_bwd_ms']:.4f} | {b['fwd_bwd_ms'] / p['fwd_bwd_ms']:.2f}x | {r['fwd_bwd_ms'] / p['fwd_bwd_ms']:.2f}x |")


if __name__ == "__main__":
    main()
