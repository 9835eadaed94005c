#!/usr/bin/env python3
"""The baseline variants' times against PyTorch's, from call.sh's times.tar unpacked in DIR:
bench-<variant>.json (rlk bench) and pytorch-<n>.json (tools/bench/pytorch_baseline.py).
usage: compare.py DIR > comparison.txt"""
import glob, json, os, sys

folder = sys.argv[1]
torch_runs = {os.path.basename(p)[8:-5]: {(c["dtype"], c["B"]): c for c in json.load(open(p))["cases"]}
              for p in sorted(glob.glob(os.path.join(folder, "pytorch-*.json")))}
variants = {os.path.basename(p)[6:-5]: {(c["dtype"], c["B"]): c for c in json.load(open(p))["cases"]}
            for p in sorted(glob.glob(os.path.join(folder, "bench-*.json")))}
keys = sorted({k for v in variants.values() for k in v})
ref = "lt-none" if "lt-none" in variants else next(iter(variants))  # whose rl-kernel times are shown
print("ms, medians of five rounds; ratio = baseline / the mean of the PyTorch runs")
print(f"{'dtype':9} {'B':>5} | " + " | ".join(f"PyTorch {n} fwd / fwd+bwd" for n in torch_runs) + " | " +
      " | ".join(f"{v}: fwd / fwd+bwd (ratios)" for v in variants) + f" | rl-kernel fwd / fwd+bwd ({ref} run)")
for k in keys:
    t = [r[k] for r in torch_runs.values() if k in r]
    tf = sum(c["fwd_ms"] for c in t) / len(t) if t else float("nan")
    tb = sum(c["fwd_bwd_ms"] for c in t) / len(t) if t else float("nan")
    cells = [f"{c['fwd_ms']:.4f} / {c['fwd_bwd_ms']:.4f}" for c in t]
    for v in variants.values():
        c = v[k]["cublas"]
        cells.append(f"{c['fwd_ms']:.4f} / {c['fwd_bwd_ms']:.4f} ({c['fwd_ms'] / tf:.3f}x / {c['fwd_bwd_ms'] / tb:.3f}x)")
    r = variants[ref][k]["rlk"]
    cells.append(f"{r['fwd_ms']:.4f} / {r['fwd_bwd_ms']:.4f}")
    print(f"{k[0]:9} {k[1]:5d} | " + " | ".join(cells))
