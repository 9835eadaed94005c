#!/usr/bin/env python3
"""Medians of rl-kernel's forward and forward + backward per RLK_DEV_PREFETCH value and round, from
the bench JSON files of an A/B call (ab-f<bits>-r<round>.json), then per value the median over the
rounds. Run: python3 summarize.py [DIR] > DIR/summary.txt (DIR defaults to this script's folder)."""
import glob
import json
import os
import re
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(folder, "ab-f*-r*.json"))):
    flag, rnd = re.match(r"ab-f(\d+)-r(\d+)\.json", os.path.basename(path)).groups()
    for case in json.load(open(path))["cases"]:
        rows.setdefault(case["B"], []).append((int(flag), int(rnd), case["rlk"]["fwd_ms"], case["rlk"]["fwd_bwd_ms"],
                                               case["cublas"]["fwd_bwd_ms"]))
print("B  RLK_DEV_PREFETCH round | rlk fwd ms | rlk fwd+bwd ms | cuBLAS fwd+bwd ms")
for b, entries in sorted(rows.items()):
    for flag, rnd, fwd, fb, cb in sorted(entries, key=lambda e: (e[1], e[0])):
        print(f"{b:<4}{flag:>3} {rnd} | {fwd:.4f} | {fb:.4f} | {cb:.4f}")
print()
print("B  RLK_DEV_PREFETCH | median over rounds: rlk fwd ms | rlk fwd+bwd ms (min - max) | cuBLAS fwd+bwd ms")
for b, entries in sorted(rows.items()):
    for flag in sorted({e[0] for e in entries}):
        mine = [e for e in entries if e[0] == flag]
        fb = [e[3] for e in mine]
        print(f"{b:<4}{flag:>3} | {statistics.median(e[2] for e in mine):.4f} | {statistics.median(fb):.4f} "
              f"({min(fb):.4f} - {max(fb):.4f}) | {statistics.median(e[4] for e in mine):.4f}")
