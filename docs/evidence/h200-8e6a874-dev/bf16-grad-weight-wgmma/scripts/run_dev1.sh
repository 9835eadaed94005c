#!/bin/bash
# seventeenth session, development call 1: the wgmma grad_weight kernel for 33 <= B <= 64
# (bf16_stream::grad_weight_wgmma_kernel): the bf16 streaming and switch byte tests of test_kernel_paths,
# then rlk bench bf16 with this build's plugin (new) and HEAD's (old, carried as base.so), alternated.
source build-dev/s17/setup.sh
mkdir -p $OUT/ev
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/ev/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/new.so
B=17,32,33,40,48,56,64,65
for r in 1 2 3; do
  for v in base new; do
    cp build/$v.so build/lib/librlk_backend_cuda.so
    timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 40 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
cp build/new.so build/lib/librlk_backend_cuda.so
python3 build-dev/s17/summary.py $OUT/ev | tee $OUT/ev/summary.txt
timeout 280 build/bin/test_kernel_paths --gtest_filter='*Bf16Streaming*:*EveryBf16Gemm*:*Refused*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|differs|not fully" $OUT/ev/test_kernel_paths.log | head -40
cp build-dev/s17/*.sh build-dev/s17/summary.py $OUT/ev/
cd $OUT && tar cf ev.tar ev && rm -rf ev && ls -la ev.tar
