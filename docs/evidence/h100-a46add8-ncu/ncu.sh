#!/usr/bin/env bash
# Per-kernel durations of a46add8's BF16 passes under Nsight Compute (clock control off, one metric:
# gpu__time_duration.sum), from `rlk bench` at B = 129, 144, 160 and 192, to find which kernel makes
# the backward at B = 129 ~20 us slower than at 160 on an H100 (../h100-a46add8/ab/). ncu replays
# each kernel with its caches flushed, so its durations are not the bench's; only their differences
# between batch sizes are used. Writes ncu.tar (one CSV per B) under $OUT.
set -uo pipefail
out=${OUT:-evidence-out}
mkdir -p "$out" /tmp/ncu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $ncu"
for b in 129 144 160 192; do
  timeout 100 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $b \
    --warmup 1 --warmup-ms 0 --repeats 5 > /tmp/ncu/ncu-$b.csv 2> /tmp/ncu/ncu-$b.err
  echo "B=$b exit $? lines $(wc -l < /tmp/ncu/ncu-$b.csv) after ${SECONDS}s"; tail -n 3 /tmp/ncu/ncu-$b.err
done
tar -cf "$out/ncu.tar" -C /tmp/ncu .
