#!/bin/bash
# sixteenth session, development call 3: the mid-B grad_weight kernel limited to two k16 steps (v5: B = 17 ... 32),
# and v6: also B = 5 ... 16 with one step (the kernel for the smallest B then only up to 4), against
# HEAD's plugin (old); rlk bench bf16, alternated three times.
source build-dev/s16/setup_bench.sh
key=qwenimage_adaln_mod_projection
mkdir -p $OUT/runs

nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/runs/gpu.txt 2>&1
B=1,3,5,8,9,12,16,17,24,32,33
for r in 1 2 3; do
  for v in old v5 v6; do
    cp build-dev/s16/$v.so build/lib/librlk_backend_cuda.so
    timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 40 --json $OUT/runs/ab-$v-$r.json > $OUT/runs/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
python3 build-dev/s16/summary2.py $OUT/runs old v5 v6 | tee $OUT/summary.txt
cp build-dev/s16/run_dev3.sh build-dev/s16/summary2.py $OUT/runs/
cd $OUT && tar cf ev.tar runs && rm -rf runs && ls
