#!/bin/bash
# twentieth session, development call 1: the 3xTF32 fp32 forward (tf32x3::): the fp32 byte tests of
# test_kernel_paths, the CUDA op tests (FP64 gates), then rlk bench fp32.
source devrun/setup.sh
mkdir -p $OUT/ev
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/ev/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch 1,3,8,9,16,17,64,128,256,511,512,1024,2048 --warmup 3 --repeats 20 --json $OUT/ev/bench-new.json > $OUT/ev/bench-new.log 2>&1
echo "== bench rc $? after ${SECONDS}s"; tail -n 18 $OUT/ev/bench-new.log
timeout 240 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*:*LaunchedRightAfter*' > $OUT/ev/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|SKIP|differs|not fully|Failure" $OUT/ev/test_kernel_paths.log | head -40
timeout 200 build/bin/test_cuda_adaln > $OUT/ev/test_cuda_adaln.log 2>&1
echo "== test_cuda_adaln rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|Failure|error" $OUT/ev/test_cuda_adaln.log | head -30
