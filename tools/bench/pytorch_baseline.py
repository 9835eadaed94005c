#!/usr/bin/env python3
"""Times PyTorch's own F.linear(F.silu(temb), W, b) forward and forward+backward with the
method `rlk bench` uses (CUDA events, warm-up, medians, rotated buffer sets, random data,
TF32 off), so docs/performance.md can check that the C++ cuBLAS baseline is no strawman.

usage: pytorch_baseline.py OUT.json [--batch 1,3,64,256,1024,2048] [--dtype bf16,fp32]
                           [--warmup 10] [--warmup-ms 100] [--rounds 5] [--repeats 50]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

K, N = 3072, 18432


def time_ms(fn, sets, warmup, repeats, warmup_ms=0.0):
    """Median of `repeats` CUDA-event times of fn after `warmup` calls and, past those, as many more
    as take `warmup_ms` of wall time (checked every `warmup` calls), as `rlk bench` times a path."""
    calls = 0
    for _ in range(warmup):
        fn(sets[calls % len(sets)])
        calls += 1
    start = time.monotonic()
    while warmup_ms > 0:
        torch.cuda.synchronize()
        if (time.monotonic() - start) * 1e3 >= warmup_ms:
            break
        for _ in range(max(1, warmup)):
            fn(sets[calls % len(sets)])
            calls += 1
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        fn(sets[(calls + i) % len(sets)])
        stops[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, stops))


def rounds_ms(fn, sets, args):
    """Per-round medians: the case's first round after the full warm-up (count and wall time), each
    later one after 2 calls, as `rlk bench` does; the caller reports their median."""
    return [time_ms(fn, sets, args.warmup if r == 0 else 2, args.repeats, args.warmup_ms if r == 0 else 0.0)
            for r in range(args.rounds)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--batch", default="1,3,64,256,1024,2048")
    parser.add_argument("--dtype", default="bf16,fp32")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup-ms", type=float, default=100.0,
                        help="wall time of warm-up calls before a case's first round (rlk bench's default)")
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
            fwd_rounds = rounds_ms(forward, sets, args)
            both_rounds = rounds_ms(forward_backward, sets, args)
            fwd, both = statistics.median(fwd_rounds), statistics.median(both_rounds)
            cases.append({"dtype": {"bf16": "bfloat16", "fp32": "float32"}[name], "B": b, "fwd_ms": fwd, "fwd_bwd_ms": both,
                          "fwd_rounds_ms": fwd_rounds, "fwd_bwd_rounds_ms": both_rounds, "buffer_sets": count})
            print(f"{name} B={b}: fwd {fwd:.4f} ms, fwd+bwd {both:.4f} ms")
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "tf32": False,
                   "warmup": args.warmup, "warmup_ms": args.warmup_ms, "rounds": args.rounds, "repeats": args.repeats,
                   "cases": cases}, f, indent=2)


if __name__ == "__main__":
    main()
