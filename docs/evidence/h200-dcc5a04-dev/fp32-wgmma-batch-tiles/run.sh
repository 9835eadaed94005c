#!/usr/bin/env bash
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
echo "== kernel paths"; SECONDS=0
timeout 200 build-cuda/bin/test_kernel_paths --gtest_filter='*Fp32Wgmma*:*Refused*' > $out/kernel_paths.log 2>&1; echo "rc $? ${SECONDS}s"
grep -E "OK|FAILED|PASSED|differ|Failure" $out/kernel_paths.log | head -20
echo "== kernel_check"; SECONDS=0
timeout 300 build-cuda/bin/rlk_kernel_check --fp32-only --compare-gemms > $out/kernel_check.log 2>&1; echo "rc $? ${SECONDS}s"
grep -B3 -A30 "fp32 tiled GEMMs" $out/kernel_check.log | head -40
grep -i "fail" $out/kernel_check.log | head
