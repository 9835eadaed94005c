#!/usr/bin/env bash
# Device call: does the order in which CUTLASS's persistent scheduler hands out d_temb's tiles
# make B = 928 ... 992 (and 65, 129, 144) slow? Run on a clean build of the commit (build-cuda/)
# and a build of it with experiment.patch applied (build-dev/: the plugins and test_kernel_paths),
# whose RLK_DEV_DTEMB_SCHED=<max swizzle><H|N|M> sets d_temb's scheduler (H: CUTLASS's
# heuristic, the commit's; M: along W's column tiles).
# 1. The bytes: test_kernel_paths' BF16 GEMM switch test (every d_temb tiling against mma.sync at
#    23 batch sizes) with d_temb's tiles handed out along M.
# 2. Three alternated rounds of `rlk bench` (BF16), heuristic against along M, with the commit's
#    kernel choice at the batch sizes whose last batch tile is partly past B (and 256, 832 and 1024
#    as controls, whose tiles do not change hands); then the same at 928 ... 1023 with d_temb on
#    128 x 128 (RLK_DEV_DTEMB_TALL_ABOVE=1024), where the slow case was found.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
RLK_DEV_DTEMB_SCHED=1M timeout 200 build-dev/bin/test_kernel_paths \
  --gtest_filter='KernelPaths.EveryBf16GemmGivesTheBytesOfMmaSyncOnBothSidesOfEachSwitch' > "$OUT/bytes-1M.log" 2>&1
echo "bytes rc=$? ${SECONDS}s"; tail -n 3 "$OUT/bytes-1M.log"
mkdir -p "$OUT/commit" "$OUT/wide"
OUT=$OUT/commit AB_VAR=RLK_DEV_DTEMB_SCHED AB_FLAGS="1H 1M" AB_ROUNDS=3 AB_CHECKS=0 AB_PLUGIN_PATH=$PWD/build-dev/lib \
  AB_BATCHES=65,129,144,160,256,300,400,700,832,928,960,992,1024,1100,1400,2000 scripts/h200_ab.sh
RLK_DEV_DTEMB_TALL_ABOVE=1024 OUT=$OUT/wide AB_VAR=RLK_DEV_DTEMB_SCHED AB_FLAGS="1H 1M" AB_ROUNDS=3 AB_CHECKS=0 \
  AB_PLUGIN_PATH=$PWD/build-dev/lib AB_BATCHES=928,960,992,1023 scripts/h200_ab.sh
echo "call total ${SECONDS}s"
