#!/bin/bash
# sixteenth session, development call 2: the mid-B bf16 grad_weight kernel's variants against HEAD's
# plugin (old): v0 as in call 1, v2 three staging tiles, v3 no global stores (timing only),
# v4 no mma (timing only); rlk bench bf16, alternated twice.
source build-dev/s16/setup_bench.sh
key=qwenimage_adaln_mod_projection
mkdir -p $OUT/runs
cp build/lib/librlk_backend_cuda.so build-dev/s16/v0.so  # the carried build's plugin
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/runs/gpu.txt 2>&1
B=17,24,32,33,40,48,56,64
for r in 1 2; do
  for v in old v0 v2 v3 v4; do
    cp build-dev/s16/$v.so build/lib/librlk_backend_cuda.so
    timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 40 --json $OUT/runs/ab-$v-$r.json > $OUT/runs/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
python3 build-dev/s16/summary2.py $OUT/runs old v0 v2 v3 v4 | tee $OUT/summary.txt
cp build-dev/s16/run_dev2.sh build-dev/s16/summary2.py $OUT/runs/
cd $OUT && tar cf ev.tar runs && rm -rf runs && ls
