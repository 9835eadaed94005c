#!/usr/bin/env bash
# Device call (forty-fourth session), on a build of 3ae67a2 (carried as build-cuda/) and its plugins
# with experiment.patch (build-dev/lib/, loaded through RLK_PLUGIN_PATH).
# 1. Why BF16 forward + backward at B = 960 reads 1.11x cuBLAS's on an H100
#    (../h100-3ae67a2-dev-bwd-switch/): d_temb's batch tiles of 128 rows leave the last one half
#    empty there. Variants alternated in three rounds of `rlk bench` (BF16, B = 832 ... 1024):
#    0 the commit's d_temb (128 x 128 up to 1024), 1 d_temb on 256 x 128 above 800
#    (RLK_DEV_DTEMB_TALL_ABOVE), 2 on 128 x 64 above 800 (RLK_DEV_DTEMB_MEDIUM_ABOVE). The
#    JSON come back in ab-bench.tar.
# 2. On an H200: the commit's own evidence (every GPU test, the quick conformance of both dtypes,
#    `rlk bench` of both dtypes) into ev.tar, for the H200 table. On any other card: per-kernel
#    durations of rl-kernel's and cuBLAS's passes at B = 960 and 1023 under Nsight Compute
#    (clock control off, gpu__time_duration.sum; ncu replays each kernel with its caches flushed,
#    so only differences between the two B are read) into ncu.tar.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $name"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
variant_env=("" "RLK_DEV_DTEMB_TALL_ABOVE=800" "RLK_DEV_DTEMB_MEDIUM_ABOVE=800")
RLK_PLUGIN_PATH=$PWD/build-dev/lib build-cuda/bin/rlk explain $key > $OUT/ab.log 2>&1
for round in 1 2 3; do
  for v in 0 1 2; do
    echo "== variant $v (${variant_env[$v]:-default}) round $round"
    env ${variant_env[$v]} RLK_PLUGIN_PATH=$PWD/build-dev/lib timeout 80 \
      build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 832,896,928,960,992,1023,1024 \
      --warmup 5 --repeats 50 --json $OUT/ab-f$v-r$round.json 2>&1 | grep -E "^bfloat16|ceilings"
  done
done >> $OUT/ab.log 2>&1
grep -A8 "round 3" $OUT/ab.log | grep -E "^==|^bfloat16 +(896|960|1023) "
(cd $OUT && tar -cf ab-bench.tar ab-f*.json && rm -f ab-f*.json)
echo "A/B done ${SECONDS}s"
if [[ $name == *H200* ]]; then
  mkdir -p "$OUT/ev"
  OUT=$OUT/ev RLK_TEST_JOBS=3 RLK_EVIDENCE_QUICK=1 RLK_CONFORM_LIMIT=240 scripts/h200_evidence.sh bench tests conform
  (cd "$OUT" && tar -cf ev.tar ev && rm -rf ev)
else
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  echo "ncu: $ncu"
  mkdir -p /tmp/ncu
  for b in 960 1023; do
    timeout 100 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
      build-cuda/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $b \
      --warmup 1 --warmup-ms 0 --repeats 5 > /tmp/ncu/ncu-$b.csv 2> /tmp/ncu/ncu-$b.err
    echo "B=$b exit $? lines $(wc -l < /tmp/ncu/ncu-$b.csv) after ${SECONDS}s"; tail -n 2 /tmp/ncu/ncu-$b.err
  done
  gzip /tmp/ncu/*.csv; tar -cf "$OUT/ncu.tar" -C /tmp/ncu .
fi
echo "call total ${SECONDS}s"
