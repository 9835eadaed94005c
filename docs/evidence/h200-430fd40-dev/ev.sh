#!/usr/bin/env bash
# Development call of 430fd40 (twenty-eighth session; the operator's kernels are 310ff81's, the kernel
# check e40c02c's): the fp32 kernel check with grad_weight's store variants in sequence after d_temb
# (whether box-by-box's gain alone survives next to d_temb), and the fp32 GEMMs' forced tilings
# (--compare-gemms: which forward tile wins at each B with the 64 x 32 tile of 310ff81); then BF16's
# bench with and without the time-based warm-up, the GPU's clocks sampled alongside.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
start=$(date +%s)
build-cuda/bin/rlk_kernel_check --fp32-only --fp32-tc-backward --compare-gemms > $OUT/kc-fp32.log 2>&1; echo "rc=$? $(( $(date +%s)-start ))s" >> $OUT/kc-fp32.log
grep -i "fail" $OUT/kc-fp32.log | head -5
grep -E "^B +[0-9]+ \| bwd" $OUT/kc-fp32.log | sed 's/| dt .*| gw/| gw/; s/| mma.sync [^|]*//'
grep -E "^B +[0-9]+ \| fwd" $OUT/kc-fp32.log; tail -1 $OUT/kc-fp32.log
# BF16 at B = 256 and 512 ran 12-15% slower, rl-kernel and cuBLAS alike, from 7de028b's bench (the
# time-based warm-up) on: the same cases without it and with it, alternated twice.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $OUT/clocks.csv 2>&1 &
smi=$!
for ms in 0 100 0 100; do
  echo "== --warmup-ms $ms"
  build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch 128,256,512 --warmup 5 \
    --warmup-ms $ms --repeats 50 --json $OUT/bench-bf16-warmup$ms-$(date +%s).json 2>&1 | grep -E "^bfloat16|ceilings"
done > $OUT/bench-bf16-warmup.log
kill $smi
cat $OUT/bench-bf16-warmup.log
echo "total $(( $(date +%s)-start ))s"
