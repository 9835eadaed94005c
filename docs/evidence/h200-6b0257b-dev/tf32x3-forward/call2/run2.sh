#!/bin/bash
# twentieth session, development call 2: the small-batch tf32x3 tiles with 1, 2 or 3 chunks per stage
# (variants c{chunks}s{stages}), rlk bench fp32 at small B, alternated twice; then the fp32 byte tests and
# the fp32 op tests of the default build (c2s4, every tile skipping n8 tiles past B).
source devrun/setup.sh
mkdir -p $OUT/ev
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/ev/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/default.so
for r in 1 2; do
  for v in c1s7 c2s3 c2s4 c3s3; do
    cp build/v/$v.so build/lib/librlk_backend_cuda.so
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch 1,3,8,9,16,17,32,64,128,256 --warmup 3 --repeats 20 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "== $v r$r rc $? $SECONDS s"; grep -E "^float32 +(1|8|16|17|64|256) " $OUT/ev/ab-$v-$r.log
  done
done
cp build/default.so build/lib/librlk_backend_cuda.so
timeout 150 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|SKIP|differs|not fully|Failure" $OUT/ev/test_kernel_paths.log | head -20
timeout 150 build/bin/test_cuda_adaln --gtest_filter='*fp32*:-*Accuracy*' > $OUT/ev/test_cuda_adaln.log 2>&1
echo "== test_cuda_adaln rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|Failure" $OUT/ev/test_cuda_adaln.log | head -20
