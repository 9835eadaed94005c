#!/bin/bash
# fifteenth session A/B: bf16 streaming forward and d_temb with small CTAs that the hardware
# scheduler balances (RLK_DEV_FWD_VARIANT / RLK_DEV_DT_VARIANT; 0 = the kernels as committed).
source build-dev/s15/setup_device.sh
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
for v in 1 2 3 4 5; do
  RLK_DEV_FWD_VARIANT=$v timeout 120 build/bin/test_kernel_paths --gtest_filter='*Bf16StreamingForward*' > $OUT/kp-fwd-v$v.log 2>&1
  echo "fwd v$v kernel paths rc $?"; grep -E "^\[  (PASSED|FAILED)" $OUT/kp-fwd-v$v.log
  RLK_DEV_DT_VARIANT=$v timeout 120 build/bin/test_kernel_paths --gtest_filter='*Bf16StreamingDTemb*:*StreamingBackward*' > $OUT/kp-dt-v$v.log 2>&1
  echo "dt v$v kernel paths rc $?"; grep -E "^\[  (PASSED|FAILED)" $OUT/kp-dt-v$v.log
done
B=1,2,3,4
for r in 1 2; do
  for v in 0 1 2 3 4 5; do
    RLK_DEV_FWD_VARIANT=$v timeout 100 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 30 --json $OUT/f$v-$r.json > $OUT/f$v-$r.log 2>&1
    echo "f$v r$r rc $? $SECONDS s"
  done
  for v in 1 2 3 4 5; do
    RLK_DEV_DT_VARIANT=$v timeout 100 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 30 --json $OUT/d$v-$r.json > $OUT/d$v-$r.log 2>&1
    echo "d$v r$r rc $? $SECONDS s"
  done
done
timeout 300 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/kp-fp32.log 2>&1
echo "fp32 kernel paths rc $? $SECONDS s"; grep -E "^\[  (PASSED|FAILED)|OK \]|FAILED \]" $OUT/kp-fp32.log | tail -12
BF=17,24,32,33,48,64,65,96,128,129
for r in 1 2; do
  for v in 0 128; do
    RLK_DEV_GW_UPTO=$v timeout 150 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype fp32 --batch $BF --warmup 3 --repeats 20 --json $OUT/g$v-$r.json > $OUT/g$v-$r.log 2>&1
    echo "g$v r$r rc $? $SECONDS s"
  done
done
python3 - <<'PY' | tee $OUT/summary.txt
import json, os, glob
out = os.environ['OUT']
rows = {}
for f in sorted(glob.glob(f'{out}/[fdg][0-9]*-*.json')):
    v = os.path.basename(f).split('-')[0]
    for c in json.load(open(f))['cases']:
        rows.setdefault((c['dtype'] if 'dtype' in c else v[0], c['B']), {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms'], c['cublas']['fwd_bwd_ms']))
print('ms, min over rounds: fwd / fwd+bwd. bf16: f0 = committed kernels, f1..5 forward variants, d1..5 streaming d_temb variants; fp32: g0 = tiled grad_weight, g128 = row-block grad_weight up to 128')
for b in sorted(rows):
    print(b, '  '.join(f"{v} {min(x[0] for x in rows[b][v]):.4f}/{min(x[1] for x in rows[b][v]):.4f}" for v in sorted(rows[b])), ' cublas f+b', min(min(x[2] for x in rows[b][v]) for v in rows[b]))
PY
cd $OUT && tar cf ab.tar --exclude=ab.tar *.json *.log && rm -f *.json [fdg][0-9]*-*.log && ls
