#!/bin/bash
# nineteenth session, development call 1: the one-pass bf16 backward (bf16_stream::backward_one_pass):
# cluster occupancy, the bf16 byte tests of test_kernel_paths, then rlk bench bf16 with this build's
# plugin (new) and ebd9016's (base), alternated three times.
source build-dev/s19/setup.sh
mkdir -p $OUT/ev
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/ev/gpu.txt 2>&1
build-dev/s19/clusters > $OUT/ev/clusters.txt 2>&1; cat $OUT/ev/clusters.txt | grep "cluster  8"
timeout 200 build/bin/test_kernel_paths --gtest_filter='*Bf16OnePass*:*Bf16Streaming*:*Refused*:*LaunchedRightAfter*:*EveryBf16Gemm*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|SKIP|differs|not fully" $OUT/ev/test_kernel_paths.log | head -40
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/new.so
B=1,2,3,4,5,8,9
for r in 1 2 3; do
  for v in base new; do
    cp build/$v.so build/lib/librlk_backend_cuda.so
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 40 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
cp build/new.so build/lib/librlk_backend_cuda.so
python3 build-dev/s19/summary.py $OUT/ev | tee $OUT/ev/summary.txt
cp build-dev/s19/*.sh build-dev/s19/summary.py build-dev/s19/clusters.cu $OUT/ev/
cd $OUT && tar cf ev.tar ev && rm -rf ev && ls -la ev.tar
