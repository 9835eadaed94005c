#!/usr/bin/env bash
# Device call for the commit that moved the BF16 d_temb's 256 x 128 tiles from above B = 1024 to
# above 896, run on the build of that commit (build-cuda/) and its plugins with
# ../h100-3ae67a2-dev-dtemb-960/experiment.patch applied (build-dev/lib/, through RLK_PLUGIN_PATH).
# 1. The switch, finer than ../h100-3ae67a2-dev-dtemb-960/: three alternated rounds of `rlk bench`
#    (BF16, B = 864 ... 960), d_temb on 256 x 128 above 0: 1024 (before), 1: 896 (the commit's)
#    (RLK_DEV_DTEMB_TALL_ABOVE). The JSON come back in ab-bench.tar.
# 2. The commit's own evidence with its own plugin, cut to what the device time left holds:
#    `rlk bench` of both dtypes, then every KernelPaths test (test_kernel_paths' switch test at 896
#    and 897 among them; the change is a BF16 kernel choice) beside the quick BF16 conformance,
#    into ev.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $name"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
tall_above=(1024 "")
RLK_PLUGIN_PATH=$PWD/build-dev/lib build-cuda/bin/rlk explain $key > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for v in 0 1; do
    echo "== variant $v (RLK_DEV_DTEMB_TALL_ABOVE=${tall_above[$v]}) round $round"
    RLK_PLUGIN_PATH=$PWD/build-dev/lib RLK_DEV_DTEMB_TALL_ABOVE=${tall_above[$v]} timeout 80 \
      build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 864,880,896,897,912,928,960 \
      --warmup 5 --repeats 50 --json $OUT/ab-f$v-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A8 "round 3" $OUT/ab.log | grep -E "^==|^bfloat16 +(864|897|928) "
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "A/B done ${SECONDS}s"
mkdir -p "$OUT/ev"
OUT=$OUT/ev scripts/h200_evidence.sh bench
timeout 240 ctest --test-dir build-cuda -R KernelPaths --output-on-failure -j 4 > "$OUT/ev/ctest-kernel-paths.log" 2>&1 &
OUT=$OUT/ev RLK_EVIDENCE_QUICK=1 RLK_CONFORM_DTYPES=bf16 RLK_CONFORM_LIMIT=200 scripts/h200_evidence.sh conform
wait
tail -4 "$OUT/ev/ctest-kernel-paths.log"
(cd "$OUT" && tar -cf ev.tar ev && rm -rf ev)
echo "call total ${SECONDS}s"
