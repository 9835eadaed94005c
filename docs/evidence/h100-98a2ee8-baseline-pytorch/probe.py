#!/usr/bin/env python3
"""Which kernels PyTorch runs for F.linear(F.silu(temb), W, b) forward + backward (TF32 off):
torch.profiler's CUDA kernels, name and mean time, per dtype and batch size, after a warm-up.
usage: probe.py [--batch 1024,2048] [--dtype bf16,fp32] [--iters 5] [--no-profile]
With --no-profile it only runs the calls (for the cuBLAS / cuBLASLt API logs)."""
import argparse

import torch
import torch.nn.functional as F

K, N = 3072, 18432
p = argparse.ArgumentParser()
p.add_argument("--batch", default="1024,2048")
p.add_argument("--dtype", default="bf16,fp32")
p.add_argument("--iters", type=int, default=5)
p.add_argument("--no-profile", action="store_true")
a = p.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
for name in a.dtype.split(","):
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[name]
    for b in (int(x) for x in a.batch.split(",")):
        g = torch.Generator(device="cuda").manual_seed(0)
        temb = (torch.randn(b, K, device="cuda", generator=g) * 2).to(dtype).requires_grad_()
        w = (torch.randn(N, K, device="cuda", generator=g) * 0.02).to(dtype).requires_grad_()
        bias = (torch.randn(N, device="cuda", generator=g) * 0.02).to(dtype).requires_grad_()
        dy = torch.randn(b, N, device="cuda", generator=g).to(dtype)

        def step():
            y = F.linear(F.silu(temb), w, bias)
            torch.autograd.grad(y, (temb, w, bias), dy)

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        print(f"== {name} B={b}", flush=True)
        if a.no_profile:
            for _ in range(a.iters):
                step()
            torch.cuda.synchronize()
            continue
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(a.iters):
                step()
            torch.cuda.synchronize()
        kernels = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kernels.setdefault(e.name, []).append(getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0))
        for k, v in sorted(kernels.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {len(v):3d} x {sum(v) / len(v):9.1f} us  {k[:160]}")
