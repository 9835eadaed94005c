#!/usr/bin/env bash
# Development call of b45647c (thirtieth session) on two H200s: (1) BF16 forward + backward at B <= 64
# with s from silu_kernel / the streaming grad_weight (RLK_DEV_SILU=0, as before) and from the
# wgmma d_temb GEMM (RLK_DEV_SILU=1), five rounds alternated; (2) every GPU test with RLK_DEV_SILU=1
# (the two-GPU test included); (3) the quick conformance of bf16 with RLK_DEV_SILU=1 (its SHA-256
# values against the earlier runs'). Files come back in ab.tar. AB_TESTS and AB_TEST_LIMIT (the ctest
# regex and its time limit) let 59bd39f's call run only test_kernel_paths.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -e build ] || ln -s build-cuda build
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
for round in 1 2 3 4 5; do
  for flag in 0 1; do
    echo "== RLK_DEV_SILU=$flag round $round"
    RLK_DEV_SILU=$flag build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1,3,5,8,16,17,32,33,64 --warmup 5 --repeats 50 --json $OUT/ab-f$flag-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done > $OUT/ab.log 2>&1
grep -A10 "SILU=.* round 5" $OUT/ab.log
echo "bench done $(( $(date +%s)-start ))s"
RLK_DEV_SILU=1 timeout ${AB_TEST_LIMIT:-330} ctest --test-dir build-cuda -R "${AB_TESTS:-Cuda|StrictMath|KernelPaths}" --output-on-failure -j 3 > $OUT/ctest-gpu.log 2>&1
echo "ctest rc=$? $(( $(date +%s)-start ))s"
grep -E "tests passed|Failed|Skipped|Not Run" $OUT/ctest-gpu.log | tail -8
RLK_DEV_SILU=1 timeout 150 build-cuda/bin/rlk conform qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --quick --out $OUT/conform-bf16 > $OUT/conform-bf16.log 2>&1
echo "conform rc=$? $(( $(date +%s)-start ))s"; tail -3 $OUT/conform-bf16.log
(cd $OUT && tar -cf ab.tar gpu.txt ab-f*.json ab.log ctest-gpu.log conform-bf16 conform-bf16.log && rm -rf ab-f*.json ab.log ctest-gpu.log conform-bf16 conform-bf16.log gpu.txt)
echo "total $(( $(date +%s)-start ))s"
