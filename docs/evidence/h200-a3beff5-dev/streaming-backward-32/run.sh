#!/bin/bash
# fourteenth session A/B 4: the fp32 streaming backward up to B = 32 (two grad_weight chunks).
# v1 = the same plugin with the old switch (streaming backward up to 16), v0 = new (up to 32).
# First the fp32 kernel-path tests (streaming against tiled at every B <= 32, the switches, refusals).
source build-dev/s14/setup_device.sh
build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/kernel-paths.log 2>&1
echo "kernel paths rc $? $SECONDS s"; grep -E "OK|FAILED|PASSED" $OUT/kernel-paths.log | tail -12
B=9,16,17,20,24,28,32,33,48
for r in 1 2; do
  for v in 1 0; do
    RLK_DEV_VARIANT=$v timeout 120 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype fp32 --batch $B --warmup 3 --repeats 20 --json $OUT/v$v-$r.json > $OUT/v$v-$r.log 2>&1
    echo "v$v r$r rc $? $SECONDS s"
  done
done
python3 - <<'PY' | tee $OUT/summary.txt
import json, os, glob
out = os.environ['OUT']
rows = {}
for f in sorted(glob.glob(f'{out}/v*-*.json')):
    v = os.path.basename(f).split('-')[0]
    for c in json.load(open(f))['cases']:
        rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms'], c['cublas']['fwd_bwd_ms']))
print('fp32 forward + backward, ms: min over rounds (v1: streaming backward up to 16, v0: up to 32); cuBLAS f+b')
for b in sorted(rows):
    p = {v: min(x[1] for x in rows[b][v]) for v in ('v1', 'v0')}
    cb = min(x[2] for x in rows[b]['v1'])
    print(f"{b:5d} v1 {p['v1']:.4f} | v0 {p['v0']:.4f} ({(p['v0']-p['v1'])*1e3:+.1f} us) | cublas {cb:.4f}")
PY
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
