#!/usr/bin/env bash
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
timeout 240 build-cuda/bin/rlk_kernel_check --fp32-only --compare-gemms > $out/kernel_check.log 2>&1; echo "rc $?"
grep -B2 -A12 "fp32 tiled GEMMs" $out/kernel_check.log | head -16
grep -n "B  *\(17\|20\|24\|26\|28\|30\|32\|192\|193\|256\|2048\) " $out/kernel_check.log | head -30
