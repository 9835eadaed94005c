#!/usr/bin/env bash
# Development call of fef6504 (thirty-seventh session): the bf16 forward from B = 1024 on other tiles,
# RLK_DEV_WIDE = 0 (main's 128 x 128), 1 (128 x 256), 2 (256 x 128), 3 (128 x 256 in clusters of two
# along M, s multicast), alternated in four rounds of `rlk bench` at B = 1024 ... 2048
# (scripts/h200_ab.sh, which also runs test_kernel_paths and the quick bf16 conformance with flag 3);
# then test_kernel_paths with flags 1 and 2, so each tiling's bytes are checked against mma.sync's.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
AB_VAR=RLK_DEV_WIDE AB_FLAGS="0 1 2 3" AB_ROUNDS=4 AB_BATCHES=1024,1100,1536,2000,2048 AB_TESTS=KernelPaths AB_TEST_LIMIT=200 \
  scripts/h200_ab.sh
for flag in 1 2; do
  RLK_DEV_WIDE=$flag timeout 120 ctest --test-dir build-cuda -R KernelPaths --output-on-failure -j 2 \
    > "$OUT/kernel-paths-f$flag.log" 2>&1
  echo "kernel paths flag $flag rc=$?"; grep -E "tests passed|Failed" "$OUT/kernel-paths-f$flag.log" | tail -3
done
echo "total ${SECONDS}s"
