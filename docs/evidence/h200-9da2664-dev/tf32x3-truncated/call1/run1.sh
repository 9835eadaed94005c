#!/bin/bash
# twenty-first session, development call 1: the fp32 forward under the truncated-piece 3xTF32
# contract (tf32x3::, pieces cut with a mask, fragments by ldmatrix, s's pieces cut once per stage).
# The fp32 byte tests, the fp32 op tests (FP64 gates), then rlk bench fp32 A/B: base (FFMA
# forward, head's plugin) against the new default build and two tiling variants, alternated.
source devrun/setup.sh
mkdir -p $OUT/ev
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/ev/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/v/new.so
timeout 150 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*:*LaunchedRightAfter*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|SKIP|differs|not fully|Failure" $OUT/ev/test_kernel_paths.log | head -40
for r in 1 2; do
  for v in base new v1 v2; do
    cp build/v/$v.so build/lib/librlk_backend_cuda.so
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch 1,3,8,16,17,64,256,512,1024,2048 --warmup 3 --repeats 20 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "== $v r$r rc $? $SECONDS s"; grep -E "^float32 " $OUT/ev/ab-$v-$r.log
  done
done
cp build/v/new.so build/lib/librlk_backend_cuda.so
timeout 200 build/bin/test_cuda_adaln --gtest_filter='*fp32*' > $OUT/ev/test_cuda_adaln.log 2>&1
echo "== test_cuda_adaln rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|Failure|error|OK \]" $OUT/ev/test_cuda_adaln.log | head -30
cd $OUT && tar cf ev.tar ev && rm -rf ev
