#!/usr/bin/env bash
# Development call (forty-second session): the bf16 backward between B = 65 and 1023 on 256 x 128
# cooperative tiles. RLK_DEV_BWD_MID (experiment.patch, on 1f83329): 1 runs grad_weight on
# 256 x 128 tiles from B = 65 (in place of the 128 x 128 ping-pong below 1024), 2 also d_temb on
# 256 x 128 tiles above B = 192 (in place of 128 x 128 below 1025). 0 is main's choice. Alternated
# as 0 1 2 in three rounds of `rlk bench` (BF16); then the quick bf16 conformance with 2 (1f83329's
# test_kernel_paths already compares the forced 256 x 128 GEMMs with mma.sync at every B of its
# switch test). build-dev/lib/ holds the patched plugins (loaded through RLK_PLUGIN_PATH; rlk and
# librlk are 1f83329's, build-cuda/). Bench JSON come back in $OUT/ab-bench.tar, the
# conformance in conform.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RLK_PLUGIN_PATH=$PWD/build-dev/lib
key=qwenimage_adaln_mod_projection
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
build-cuda/bin/rlk explain $key > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for flag in 0 1 2; do
    echo "== RLK_DEV_BWD_MID=$flag round $round"
    RLK_DEV_BWD_MID=$flag timeout 80 build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 \
      --batch 64,128,192,256,384,512,768,1000 --warmup 5 --repeats 50 --json $OUT/ab-f$flag-r$round.json 2>&1 |
      grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A9 "round 3" $OUT/ab.log
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "bench done ${SECONDS}s"
RLK_DEV_BWD_MID=2 timeout 100 build-cuda/bin/rlk conform $key --device cuda:0 --dtype bf16 --quick \
  --out $OUT/conform-bf16 > $OUT/conform-bf16.log 2>&1
echo "conform rc=$? ${SECONDS}s"; tail -2 $OUT/conform-bf16.log
(cd $OUT && tar -cf conform.tar conform-bf16 conform-bf16.log && rm -rf conform-bf16 conform-bf16.log)
echo "total ${SECONDS}s"
