#!/usr/bin/env python3
"""Summary of a development A/B call: the `rlk bench` JSON files ab-f<FLAG>-r<ROUND>.json that
scripts/h200_ab.sh (or an evidence folder's ab.sh) writes, one per value of the switch and round.

For each batch size and switch value it prints every round's rl-kernel forward and forward +
backward medians, then the median over rounds with the rounds' range, and cuBLAS's median over
the same rounds (the baseline timed beside each value: its drift between values shows how much of
a difference is the machine's). Flags may be any word (0, 1, wide, tall).

Usage: python3 tools/bench/ab_summary.py DIR [--var NAME] > DIR/summary.txt
"""
import argparse
import glob
import json
import os
import re
import statistics


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the folder holding ab-f<FLAG>-r<ROUND>.json")
    parser.add_argument("--var", default="flag", help="the switch's name, for the headings")
    args = parser.parse_args()

    pattern = re.compile(r"ab-f(?P<flag>[A-Za-z0-9_]+)-r(?P<round>\d+)\.json$")
    runs = {}  # (B, dtype) -> flag -> [(round, fwd, fwd_bwd, cublas_fwd, cublas_fwd_bwd)]
    paths = sorted(glob.glob(os.path.join(args.folder, "ab-f*-r*.json")))
    if not paths:
        raise SystemExit(f"no ab-f<FLAG>-r<ROUND>.json in {args.folder}")
    for path in paths:
        match = pattern.search(os.path.basename(path))
        if match is None:
            continue
        flag, rnd = match["flag"], int(match["round"])
        with open(path) as f:
            cases = json.load(f)["cases"]
        for case in cases:
            key = (case["B"], case["dtype"])
            runs.setdefault(key, {}).setdefault(flag, []).append(
                (rnd, case["rlk"]["fwd_ms"], case["rlk"]["fwd_bwd_ms"], case["cublas"]["fwd_ms"],
                 case["cublas"]["fwd_bwd_ms"]))

    # The switch's values, numbers by value and before words.
    order = sorted({flag for by_flag in runs.values() for flag in by_flag},
                   key=lambda f: (0, int(f), "") if f.isdigit() else (1, 0, f))
    print(f"Every round, ms: B dtype {args.var} round | rlk fwd | rlk fwd+bwd | cuBLAS fwd | cuBLAS fwd+bwd")
    for (b, dtype), by_flag in sorted(runs.items()):
        for flag in order:
            for rnd, fwd, fb, cf, cfb in sorted(by_flag.get(flag, [])):
                print(f"{b:>5} {dtype} {flag:>5} {rnd} | {fwd:.4f} | {fb:.4f} | {cf:.4f} | {cfb:.4f}")
    print()
    print(f"Median over rounds, ms (min - max): B dtype {args.var} | rlk fwd | rlk fwd+bwd | cuBLAS fwd | "
          "cuBLAS fwd+bwd")
    for (b, dtype), by_flag in sorted(runs.items()):
        for flag in order:
            rows = by_flag.get(flag, [])
            if not rows:
                continue
            cols = list(zip(*rows))[1:]
            text = [f"{statistics.median(c):.4f} ({min(c):.4f} - {max(c):.4f})" for c in cols[:2]]
            text += [f"{statistics.median(c):.4f}" for c in cols[2:]]
            print(f"{b:>5} {dtype} {flag:>5} | " + " | ".join(text))


if __name__ == "__main__":
    main()
