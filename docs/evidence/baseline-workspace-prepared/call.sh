#!/usr/bin/env bash
# Device call: the cuBLAS baseline with PyTorch's workspace sizes (1 MiB for the forward's cuBLASLt
# matmul, 32 MiB for the backward's GEMMs; build-cuda/bin/rlk) against the baseline before it
# (32 MiB everywhere; build-cuda/bin/rlk-old, the commit before) and PyTorch's own times, alternated
# twice, at B = 1024 and 2048, both dtypes. Before: test_cublas_baseline of the new build. After:
# the new baseline's own kernels and cuBLAS's under Nsight Compute at B = 1024 (caches and clocks
# left alone, so durations compare with torch.profiler's in ../h100-98a2ee8-baseline-pytorch/).
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RLK_PLUGIN_PATH=$PWD/build-cuda/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt"; cat "$OUT/gpu.txt"
T=/tmp/t; mkdir -p $T
timeout 100 build-cuda/bin/test_cublas_baseline > $T/test_cublas_baseline.log 2>&1; echo "test rc=$? ${SECONDS}s"; tail -n 3 $T/test_cublas_baseline.log
for round in 1 2; do
  timeout 100 python3 tools/bench/pytorch_baseline.py $T/pytorch-$round.json --batch 1024,2048 > $T/pytorch-$round.txt 2>&1
  echo "torch $round rc=$? ${SECONDS}s"; tail -n 4 $T/pytorch-$round.txt
  for v in old new; do
    bin=build-cuda/bin/rlk; [ $v = old ] && bin=build-cuda/bin/rlk-old
    timeout 100 $bin bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16,fp32 --batch 1024,2048 \
      --json $T/bench-$v-r$round.json > $T/bench-$v-r$round.txt 2>&1
    echo "bench $v r$round rc=$? ${SECONDS}s"; tail -n 6 $T/bench-$v-r$round.txt | head -n 5
  done
done
if ncu=$(scripts/ncu_path.sh); then
  timeout 120 "$ncu" --clock-control none --cache-control none \
    --kernel-name regex:'silu_kernel|silu_backward|column_sum|nvjet|xmma|Kernel2|splitK|reduce' --metrics gpu__time_duration.sum \
    --csv --page raw build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16,fp32 --batch 1024 \
    --warmup 1 --warmup-ms 0 --repeats 5 > $T/ncu-1024.csv 2> $T/ncu-1024.err
  echo "ncu rc=$? lines $(wc -l < $T/ncu-1024.csv) ${SECONDS}s"; tail -n 2 $T/ncu-1024.err; gzip $T/ncu-1024.csv
fi
tar -cf "$OUT/times.tar" -C $T .
echo "call total ${SECONDS}s"
