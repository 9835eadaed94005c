#!/usr/bin/env bash
# A development call on the H200 (a build switched at run time by $AB_VAR, carried as
# build-cuda/): (1) BF16 forward + backward, rounds of `rlk bench` alternating the switch's values;
# (2) the GPU tests with the last value; (3) the quick bf16 conformance with it (its SHA-256
# values against earlier runs'). Files come back in $OUT/ab.tar; summarize them with
# tools/bench/ab_summary.py DIR --var $AB_VAR.
# Environment (defaults are those of the thirtieth session's first call, b45647c):
#   AB_VAR         the switch's environment variable (default RLK_DEV_SILU)
#   AB_FLAGS       the switch's values, alternated in each round (default "0 1")
#   AB_ROUNDS      rounds (default 5)
#   AB_BATCHES     the bench's batch sizes (default 1,3,5,8,16,17,32,33,64)
#   AB_TESTS       the ctest regex (default Cuda|StrictMath|KernelPaths); AB_TEST_LIMIT its seconds (330)
#   AB_PLUGIN_PATH plugins the bench rounds load (RLK_PLUGIN_PATH; `rlk explain` names them first in
#                  ab.log), where the switch lives in a development build beside the commit's own:
#                  the tests and the conformance then run the commit's plugins (default: unset, the
#                  build's plugins everywhere)
#   AB_CHECKS=0    the bench rounds only: no tests, no conformance (where the same call runs
#                  scripts/h200_evidence.sh's whole check on the commit's own plugin; default 1)
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -e build ] || ln -s build-cuda build
var=${AB_VAR:-RLK_DEV_SILU}
flags=${AB_FLAGS:-0 1}
last=${flags##* }
rounds=${AB_ROUNDS:-5}
plugins=${AB_PLUGIN_PATH:-}
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
: > $OUT/ab.log
[ -n "$plugins" ] && RLK_PLUGIN_PATH=$plugins build-cuda/bin/rlk explain qwenimage_adaln_mod_projection >> $OUT/ab.log 2>&1
for round in $(seq 1 "$rounds"); do
  for flag in $flags; do
    echo "== $var=$flag round $round"
    env "$var=$flag" ${plugins:+RLK_PLUGIN_PATH=$plugins} build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 \
      --batch "${AB_BATCHES:-1,3,5,8,16,17,32,33,64}" --warmup 5 --repeats 50 --json $OUT/ab-f$flag-r$round.json 2>&1 |
      grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A12 "$var=.* round $rounds" $OUT/ab.log
echo "bench done $(( $(date +%s)-start ))s"
if [ "${AB_CHECKS:-1}" != 0 ]; then
  env "$var=$last" timeout ${AB_TEST_LIMIT:-330} ctest --test-dir build-cuda -R "${AB_TESTS:-Cuda|StrictMath|KernelPaths}" --output-on-failure -j 3 > $OUT/ctest-gpu.log 2>&1
  echo "ctest rc=$? $(( $(date +%s)-start ))s"
  grep -E "tests passed|Failed|Skipped|Not Run" $OUT/ctest-gpu.log | tail -8
  env "$var=$last" timeout 150 build-cuda/bin/rlk conform qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --quick --out $OUT/conform-bf16 > $OUT/conform-bf16.log 2>&1
  echo "conform rc=$? $(( $(date +%s)-start ))s"; tail -3 $OUT/conform-bf16.log
fi
(cd $OUT && tar -cf ab.tar gpu.txt ab.log $(ls -d ab-f*.json ctest-gpu.log conform-bf16 conform-bf16.log 2>/dev/null) && rm -rf ab-f*.json ab.log ctest-gpu.log conform-bf16 conform-bf16.log gpu.txt)
echo "total $(( $(date +%s)-start ))s"
