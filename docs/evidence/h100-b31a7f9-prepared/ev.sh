#!/usr/bin/env bash
# Evidence call of b31a7f9 (prepared in the thirty-ninth session, not run: the bf16 d_temb above
# B = 1024 and grad_weight from B = 1024 on 256 x 128 tiles). First an A/B of its plugin against
# 59075e7's (build-old/lib/, loaded through RLK_PLUGIN_PATH; rlk and librlk are b31a7f9's, from
# build-cuda/), alternated in three rounds of `rlk bench` (BF16) at B = 1024, 1025, 1100, 1153, 1280,
# 1536, 2048: the batch sizes around the new switch points that the development A/B
# (../h100-59075e7-dev-bwd-tiles/) left out. Then scripts/h200_evidence.sh: rlk bench of both
# dtypes, every GPU test of the machine, the quick conformance of both dtypes beside the tests.
# Eight files under $OUT: gpu.txt, ab.log, ab-bench.tar, bench.json, bench.png, bench.log,
# ctest-gpu.log, conform.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
key=qwenimage_adaln_mod_projection
{
  RLK_PLUGIN_PATH=$PWD/build-old/lib build-cuda/bin/rlk explain $key
  build-cuda/bin/rlk explain $key
  for round in 1 2 3; do
    for v in old new; do
      echo "== $v round $round"
      plugins=()
      [ $v = old ] && plugins=(env RLK_PLUGIN_PATH=$PWD/build-old/lib)
      timeout 90 "${plugins[@]}" build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 \
        --batch 1024,1025,1100,1153,1280,1536,2048 --warmup 5 --repeats 50 --json $OUT/ab-f$v-r$round.json 2>&1 |
        grep -E "^bfloat16"
    done
  done
} > $OUT/ab.log 2>&1
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "A/B done ${SECONDS}s"; grep -A7 "round 3" $OUT/ab.log
RLK_TEST_JOBS=3 RLK_EVIDENCE_QUICK=1 RLK_CONFORM_LIMIT=240 scripts/h200_evidence.sh bench tests conform
echo "total ${SECONDS}s"
