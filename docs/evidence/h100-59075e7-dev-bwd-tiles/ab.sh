#!/usr/bin/env bash
# Development call (thirty-eighth session): the bf16 backward from B = 1024 on 256 x 128 cooperative
# tiles, RLK_DEV_BWD bit 1 for d_temb (in place of 128 x 128), bit 2 for grad_weight (in place of
# the 128 x 128 ping-pong), alternated as 0 1 2 3 in three rounds of `rlk bench` at B = 1024, 1536,
# 2048; then test_kernel_paths' bf16 GEMM and backward tests with 3 (each GEMM's bytes against
# mma.sync's, the switch test at B = 1 ... 2048) and the quick bf16 conformance with 3. The build is 59075e7 with experiment.patch:
# build-dev/lib/ holds its plugins (loaded through RLK_PLUGIN_PATH; rlk and librlk are build-cuda's),
# build-dev/bin/ its test_kernel_paths. The bench JSON come back in $OUT/ab-bench.tar, the
# conformance in conform.tar, so a call cut short still returns what it finished.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RLK_PLUGIN_PATH=$PWD/build-dev/lib
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
build-cuda/bin/rlk explain qwenimage_adaln_mod_projection > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for flag in 0 1 2 3; do
    echo "== RLK_DEV_BWD=$flag round $round"
    RLK_DEV_BWD=$flag timeout 60 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1024,1536,2048 --warmup 5 --repeats 50 --json $OUT/ab-f$flag-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A4 "round 3" $OUT/ab.log
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "bench done $(( $(date +%s)-start ))s"
RLK_DEV_BWD=3 timeout 100 build-dev/bin/test_kernel_paths --gtest_filter='KernelPaths.EveryBf16Gemm*:KernelPaths.ABackwardLaunched*:KernelPaths.TheBf16Backward*' \
  > $OUT/kernel-paths-f3.log 2>&1
echo "kernel paths rc=$? $(( $(date +%s)-start ))s"; grep -E "PASSED|FAILED|SKIPPED" $OUT/kernel-paths-f3.log | tail -6
RLK_DEV_BWD=3 timeout 90 build-cuda/bin/rlk conform qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --quick \
  --out $OUT/conform-bf16 > $OUT/conform-bf16.log 2>&1
echo "conform rc=$? $(( $(date +%s)-start ))s"; tail -3 $OUT/conform-bf16.log
(cd $OUT && tar -cf conform.tar conform-bf16 conform-bf16.log && rm -rf conform-bf16 conform-bf16.log)
echo "total $(( $(date +%s)-start ))s"
