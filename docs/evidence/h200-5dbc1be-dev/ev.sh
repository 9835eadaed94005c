#!/usr/bin/env bash
# Development call of 5dbc1be (twenty-eighth session): the operator's fp32 backward with grad_weight's
# whole-tile and box-by-box stores timed in turn in one call (the kernel check's "bwd stores"
# columns), and the kernel-path tests that run the store variant.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
[ -e build ] || ln -s build-cuda build
start=$(date +%s)
build-cuda/bin/rlk_kernel_check --fp32-only --fp32-tc-backward > $OUT/kc-fp32.log 2>&1; echo "rc=$? $(( $(date +%s)-start ))s" >> $OUT/kc-fp32.log
grep -i "fail" $OUT/kc-fp32.log | head -5
grep -E "^B +[0-9]+ \| bwd" $OUT/kc-fp32.log | sed 's/| dt .*| dt+gw/| dt+gw/'
grep -E "^fp32 +[0-9]+ \|" $OUT/kc-fp32.log | tr '\n' ';'; echo
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
build-cuda/bin/test_kernel_paths --gtest_filter='*Fp32WgmmaBackward*:*RefusedBeforeAnyWrite*' > $OUT/test-kernel-paths.log 2>&1; echo "rc=$?" >> $OUT/test-kernel-paths.log
tail -4 $OUT/test-kernel-paths.log
echo "total $(( $(date +%s)-start ))s"
