#!/bin/bash
# dev call 3 of the tenth session: the streaming bf16 grad_weight up to B = 64 (chunked s): every test of
# test_kernel_paths, kernel_check bf16 (bytes at every B it takes + backward streaming off / on), bf16 bench
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
ln -sfn build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
mkdir -p $OUT/t
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/t/gpu.txt 2>&1
SECONDS=0
timeout 240 build-cuda/bin/test_kernel_paths > $OUT/t/test_kernel_paths.log 2>&1; echo "tests rc=$? ${SECONDS}s"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/t/test_kernel_paths.log | head -20
timeout 200 build-cuda/bin/rlk_kernel_check --bf16-only --compare-gemms > $OUT/t/kernel_check-bf16.log 2>&1; echo "kc rc=$? ${SECONDS}s"
grep -E "FAIL|failures" $OUT/t/kernel_check-bf16.log | head
grep -A12 "^streaming off / on" $OUT/t/kernel_check-bf16.log
timeout 100 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch 1,3,9,16,17,24,32,33,48,64,65 --warmup 5 --repeats 50 --json $OUT/t/bench-bf16-small.json > $OUT/t/bench-bf16-small.log 2>&1; echo "bench rc=$? ${SECONDS}s"
grep -E "^bfloat16" $OUT/t/bench-bf16-small.log | head -12
tar cf $OUT/dev3.tar -C $OUT t
