#!/usr/bin/env bash
# Development call (twenty-ninth session): BF16 at small B with the next grid released right
# after each kernel's wait instead of after its main loop, switched by RLK_DEV_PREFETCH (0: as
# before; 2: the streaming forward; 6: + the streaming grad_weight; 8: the sm90 forward and d_temb
# GEMMs; 14: all three), five rounds alternated; then the byte tests with 14. Files come back in
# ab.tar (the device returns a limited number of files). AB_TESTS=0 leaves the byte tests out (the
# first call ran them: 12 passed).
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -e build ] || ln -s build-cuda build
start=$(date +%s)
for round in 1 2 3 4 5; do
  for f in 0 2 6 8 14; do
    echo "== RLK_DEV_PREFETCH=$f round $round"
    RLK_DEV_PREFETCH=$f build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1,2,3,4,8,16,32,64,256 --warmup 5 --repeats 50 --json $OUT/ab-f$f-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done > $OUT/ab.log 2>&1
echo "bench $(( $(date +%s)-start ))s"
[ "${AB_TESTS:-1}" = 1 ] && RLK_DEV_PREFETCH=14 timeout 200 build-cuda/bin/test_kernel_paths --gtest_brief=1 > $OUT/test_kernel_paths-f14.log 2>&1
echo "test_kernel_paths rc=$?"; tail -2 $OUT/test_kernel_paths-f14.log
(cd $OUT && tar -cf ab.tar ab-f*.json ab.log $(ls test_kernel_paths-f14.log 2>/dev/null) && rm -f ab-f*.json ab.log test_kernel_paths-f14.log)
echo "total $(( $(date +%s)-start ))s"
