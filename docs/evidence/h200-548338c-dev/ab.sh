#!/usr/bin/env bash
# Development call of 548338c (twenty-ninth session): BF16 at B = 1, 3, 64 with the kernels' first
# stages of W asked of L2 before their waits, and earlier releases of the next grid, switched by
# RLK_DEV_PREFETCH (0: as before; 1: prefetch; 3: + the streaming forward releases after its wait;
# 7: + the streaming grad_weight likewise), alternated twice; then the byte tests with all of them on.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -e build ] || ln -s build-cuda build
start=$(date +%s)
for round in 1 2; do
  for f in 0 1 3 7; do
    echo "== RLK_DEV_PREFETCH=$f round $round"
    RLK_DEV_PREFETCH=$f build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1,3,64 --warmup 5 --repeats 50 --json $OUT/ab-f$f-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done > $OUT/ab.log
cat $OUT/ab.log
echo "bench $(( $(date +%s)-start ))s"
RLK_DEV_PREFETCH=7 timeout 200 build-cuda/bin/test_kernel_paths --gtest_brief=1 > $OUT/test_kernel_paths-f7.log 2>&1
echo "test_kernel_paths rc=$?"; tail -3 $OUT/test_kernel_paths-f7.log
RLK_DEV_PREFETCH=7 timeout 120 build-cuda/bin/test_cuda_adaln --gtest_brief=1 > $OUT/test_cuda_adaln-f7.log 2>&1
echo "test_cuda_adaln rc=$?"; tail -3 $OUT/test_cuda_adaln-f7.log
echo "total $(( $(date +%s)-start ))s"
