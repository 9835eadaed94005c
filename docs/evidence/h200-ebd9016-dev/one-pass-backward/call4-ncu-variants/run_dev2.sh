#!/bin/bash
# nineteenth session, development call 2: where the one-pass backward's time goes. ncu of the one-pass
# kernel (v0) and of ebd9016's B = 1 kernels; rlk bench with base, v0 (the one-pass kernel), v1 (its
# global stores left out: wrong bytes, timing only) and v2 (its W loads left out: likewise), alternated.
source build-dev/s19/setup.sh
mkdir -p $OUT/ev
key=qwenimage_adaln_mod_projection
NCU="/usr/local/cuda/bin/ncu --clock-control none --kernel-name regex:one_pass|grad_weight_kernel|device_kernel|forward_kernel|dtemb_kernel --launch-count 8 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x"
for v in v0 base; do
  if [ -e build/$v.so ]; then cp build/$v.so build/lib/librlk_backend_cuda.so; else cp build-dev/s19/v/$v.so build/lib/librlk_backend_cuda.so; fi
  timeout 120 $NCU build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 1 --warmup 1 --repeats 5 > $OUT/ev/ncu-$v.log 2>&1
  echo "ncu $v rc $? $SECONDS s"
  grep -E "^  [a-z_]+.*\(|gpu__time|dram__bytes|dram__thr|grid_size|cluster_dim" $OUT/ev/ncu-$v.log | head -60
done
for r in 1 2; do
  for v in base v0 v1 v3 v4; do
    if [ -e build/$v.so ]; then cp build/$v.so build/lib/librlk_backend_cuda.so; else cp build-dev/s19/v/$v.so build/lib/librlk_backend_cuda.so; fi
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 1,3,8 --warmup 5 --repeats 40 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
python3 build-dev/s19/summary_multi.py $OUT/ev base v0 v1 v3 v4 | tee $OUT/ev/summary.txt
cp build-dev/s19/*.sh build-dev/s19/*.py $OUT/ev/
cd $OUT && tar cf ev.tar ev && rm -rf ev && ls -la ev.tar
