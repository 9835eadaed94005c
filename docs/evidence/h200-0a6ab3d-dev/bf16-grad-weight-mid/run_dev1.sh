#!/bin/bash
# sixteenth session, development call 1: the bf16 grad_weight kernel for 17 <= B <= 64
# (bf16_stream::grad_weight_mid_kernel): test_kernel_paths (byte equality against mma.sync at every
# B it takes, special inputs), then rlk bench bf16 with this build's plugin (new) and HEAD's (old,
# carried), alternated twice.
source build-dev/s16/setup_device.sh
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
timeout 300 build/bin/test_kernel_paths > $OUT/test_kernel_paths.log 2>&1
echo "== test_kernel_paths rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]" $OUT/test_kernel_paths.log | tail -30
cp build/lib/librlk_backend_cuda.so build-dev/s16/new.so
B=1,3,16,17,24,32,33,40,48,56,64,65
for r in 1 2; do
  for v in old new; do
    cp build-dev/s16/$v.so build/lib/librlk_backend_cuda.so
    timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 40 --json $OUT/ab-$v-$r.json > $OUT/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
cp build-dev/s16/new.so build/lib/librlk_backend_cuda.so
python3 build-dev/s16/summary.py $OUT | tee $OUT/summary.txt
cd $OUT && tar cf ev.tar --exclude=ev.tar * && ls
