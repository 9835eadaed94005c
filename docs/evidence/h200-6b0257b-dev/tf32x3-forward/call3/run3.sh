#!/bin/bash
# twentieth session, development call 3: tf32x3 tiles with the three products issued across independent
# accumulators; rlk bench fp32 with the default build (128 x 128 tiles as 16 warps of 16 x 64) and alt
# (8 warps of 32 x 64), alternated; the fp32 byte tests of the default build.
source devrun/setup.sh
mkdir -p $OUT/ev
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/default.so
for r in 1 2; do
  for v in default alt; do
    [ $v = alt ] && cp build/v/alt.so build/lib/librlk_backend_cuda.so || cp build/default.so build/lib/librlk_backend_cuda.so
    timeout 80 build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch 1,3,8,9,16,17,64,128,256,511,512,1024,2048 --warmup 3 --repeats 20 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "== $v r$r rc $? $SECONDS s"; grep -E "^float32 " $OUT/ev/ab-$v-$r.log
  done
done
cp build/default.so build/lib/librlk_backend_cuda.so
timeout 150 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|differs|not fully|Failure" $OUT/ev/test_kernel_paths.log | head -20
cd $OUT && tar cf ev.tar ev && rm -rf ev
