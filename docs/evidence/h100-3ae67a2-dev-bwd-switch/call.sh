#!/usr/bin/env bash
# Device call for the commit that moved the bf16 grad_weight's 256 x 128 switch to B = 768 (8755525),
# run on a build of 39ee8de (the same device code; only comments and docs changed after it).
# 1. Where between B = 513 and 1023 that switch belongs, after ../h100-1f83329-dev-bwd-mid/
#    (grad_weight's 256 x 128 tiles 10 us faster at B = 768 and 1000, slower up to 512).
#    experiment.patch (on 8755525) reads RLK_DEV_GRADW_TALL_FROM (grad_weight on 256 x 128 from
#    that B); its plugins are carried in build-dev/lib/ (loaded through RLK_PLUGIN_PATH; rlk and
#    librlk are 8755525's, build-cuda/). Variants alternated in three rounds of `rlk bench` (BF16):
#    0 grad_weight from 1024 (before 8755525), 1 8755525's (768), 2 from 513. The JSON come back in
#    ab-bench.tar.
# 2. The commit's own evidence, with its own plugin (RLK_PLUGIN_PATH unset): every GPU test
#    (test_kernel_paths' switch test among them) beside the quick conformance of both dtypes, and
#    `rlk bench` of both dtypes (scripts/h200_evidence.sh bench tests conform), into ev.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $name"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
switch_from=(1024 "" 513)
RLK_PLUGIN_PATH=$PWD/build-dev/lib build-cuda/bin/rlk explain $key > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for v in 0 1 2; do
    echo "== variant $v (RLK_DEV_GRADW_TALL_FROM=${switch_from[$v]}) round $round"
    RLK_PLUGIN_PATH=$PWD/build-dev/lib RLK_DEV_GRADW_TALL_FROM=${switch_from[$v]} timeout 80 \
      build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 576,640,704,768,832,896,960,1023 \
      --warmup 5 --repeats 50 --json $OUT/ab-f$v-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A9 "round 3" $OUT/ab.log | grep -E "^==|^bfloat16 +(704|768|1023) "
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "A/B done ${SECONDS}s"
mkdir -p "$OUT/ev"
OUT=$OUT/ev RLK_TEST_JOBS=3 RLK_EVIDENCE_QUICK=1 RLK_CONFORM_LIMIT=240 scripts/h200_evidence.sh bench tests conform
(cd "$OUT" && tar -cf ev.tar ev && rm -rf ev)
echo "call total ${SECONDS}s"
