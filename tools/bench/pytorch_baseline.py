#!/usr/bin/env python3
"""Times PyTorch's own F.linear(F.silu(temb), W, b) forward and forward+backward with the
method `rlk bench` uses (CUDA events, warm-up, medians, rotated buffer sets, random data,
TF32 off), so docs/performance.md can check that the C++ cuBLAS baseline is no strawman.

usage: pytorch_baseline.py OUT.json [--batch 1,3,64,256,1024,2048] [--dtype bf16,fp32]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

K, N = 3072, 18432


def time_ms(fn, sets, warmup, repeats):
    for i in range(warmup):
        fn(sets[i % len(sets)])
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        fn(sets[i % len(sets)])
        stops[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, stops))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--batch", default="1,3,64,256,1024,2048")
    parser.add_argument("--dtype", default="bf16,fp32")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    cases = []
    for name in args.dtype.split(","):
        dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[name]
        for b in (int(x) for x in args.batch.split(",")):
            set_bytes = dtype.itemsize * (2 * N * K + 2 * b * K + 2 * b * N)
            count = max(2, -(-3 * l2 // set_bytes))
            sets = []
            for s in range(count):
                g = torch.Generator(device="cuda").manual_seed(s)
                temb = (torch.randn(b, K, device="cuda", generator=g) * 2).to(dtype).requires_grad_()
                w = (torch.randn(N, K, device="cuda", generator=g) * 0.02).to(dtype).requires_grad_()
                bias = (torch.randn(N, device="cuda", generator=g) * 0.02).to(dtype).requires_grad_()
                dy = torch.randn(b, N, device="cuda", generator=g).to(dtype)
                sets.append((temb, w, bias, dy))

            def forward(s):
                with torch.no_grad():
                    F.linear(F.silu(s[0]), s[1], s[2])

            def forward_backward(s):
                temb, w, bias, dy = s
                y = F.linear(F.silu(temb), w, bias)
                torch.autograd.grad(y, (temb, w, bias), dy)

            torch.cuda.reset_peak_memory_stats()
            fwd = time_ms(forward, sets, args.warmup, args.repeats)
            both = time_ms(forward_backward, sets, args.warmup, args.repeats)
            cases.append({"dtype": {"bf16": "bfloat16", "fp32": "float32"}[name], "B": b, "fwd_ms": fwd, "fwd_bwd_ms": both,
                          "buffer_sets": count})
            print(f"{name} B={b}: fwd {fwd:.4f} ms, fwd+bwd {both:.4f} ms")
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "tf32": False, "cases": cases}, f, indent=2)


if __name__ == "__main__":
    main()
