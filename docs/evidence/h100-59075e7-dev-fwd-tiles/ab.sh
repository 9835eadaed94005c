#!/usr/bin/env bash
# Development call (thirty-eighth session): the bf16 forward at B >= 1024 on 128 x 128 tiles
# (RLK_DEV_FWD=wide) or 256 x 128 tiles (RLK_DEV_FWD=tall), alternated in three rounds of
# `rlk bench` at B = 1024, 1153, 1216, 1280, 1664, 1792: the batch sizes where the two tilings'
# waves of 132 SMs fill about alike (10 and 14 batch tiles of 128 rows), which fef6504's A/B did not
# measure. The build is 59075e7 with experiment.patch (its plugins in build-dev/lib/, loaded
# through RLK_PLUGIN_PATH); main's choice is tall above B = 1024. Files come back in $OUT/ab.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RLK_PLUGIN_PATH=$PWD/build-dev/lib   # the dev plugins only; rlk and librlk are build-cuda's
start=$(date +%s)
build-cuda/bin/rlk explain qwenimage_adaln_mod_projection > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for flag in wide tall; do
    echo "== RLK_DEV_FWD=$flag round $round"
    RLK_DEV_FWD=$flag timeout 60 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1024,1153,1216,1280,1664,1792 --warmup 5 --repeats 50 --json $OUT/ab-f$flag-r$round.json 2>&1 |
      grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A8 "round 3" $OUT/ab.log
(cd $OUT && tar -cf ab.tar ab-f*.json ab.log && rm -f ab-f*.json ab.log)
echo "ab total $(( $(date +%s)-start ))s"
