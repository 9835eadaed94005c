#!/usr/bin/env bash
# Development call of 46443a6 (twenty-ninth session), timing only: BF16 forward + backward at B <= 64
# with the sm90 d_temb GEMM over 8 slices of N (the contract) and over 9 (RLK_DEV_SPLIT=9: 108
# tiles of 256 x 32 per 32 batch rows instead of 96, one wave on 132 SMs; its grad_temb is wrong,
# so this measures time only), five rounds alternated. Files come back in ab.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
for round in 1 2 3 4 5; do
  for split in 8 9; do
    echo "== RLK_DEV_SPLIT=$split round $round"
    RLK_DEV_SPLIT=$split build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch 1,3,8,16,32,64 --warmup 5 --repeats 50 --json $OUT/ab-f$split-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done > $OUT/ab.log 2>&1
grep -A6 "SPLIT=.* round 5" $OUT/ab.log
(cd $OUT && tar -cf ab.tar ab-f*.json ab.log && rm -f ab-f*.json ab.log)
echo "total $(( $(date +%s)-start ))s"
