#!/bin/bash
# fourteenth session A/B 5: the fp32 tiled GEMMs' kernel with a flattened tile loop; grad_weight's
# 64 x 128 tiles persistent (RLK_DEV_VARIANT=2: as many CTAs as fit, each looping over tiles, the
# next tile's operands loading under this one's last steps and stores). base = the plugin of a3beff5
# (kernels of f9c35c3); v0 = this build, nothing persistent; v2 = this build, grad_weight persistent.
# First the fp32 kernel-path tests with v2 (persistent grad_weight against the one-tile-per-CTA
# 64 x 64 tiles, the streaming kernels and CUTLASS's, at B up to 2048).
source build-dev/s14/setup_device.sh
RLK_DEV_VARIANT=2 build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/kernel-paths-v2.log 2>&1
echo "kernel paths v2 rc $? $SECONDS s"; grep -E "OK|FAILED|PASSED" $OUT/kernel-paths-v2.log | tail -8
B=17,32,64,128,256,512,1024,2048
for r in 1 2; do
  for v in base 0 2; do
    if [ $v = base ]; then export RLK_PLUGIN_PATH=$PWD/build-dev/s14/base; else unset RLK_PLUGIN_PATH; fi
    RLK_DEV_VARIANT=${v/base/0} timeout 120 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype fp32 --batch $B --warmup 3 --repeats 15 --json $OUT/v$v-$r.json > $OUT/v$v-$r.log 2>&1
    echo "v$v r$r rc $? $SECONDS s"
  done
done
unset RLK_PLUGIN_PATH
python3 - <<'PY' | tee $OUT/summary.txt
import json, os, glob
out = os.environ['OUT']
rows = {}
for f in sorted(glob.glob(f'{out}/v*-*.json')):
    v = os.path.basename(f).split('-')[0]
    for c in json.load(open(f))['cases']:
        rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms'], c['cublas']['fwd_bwd_ms']))
print('fp32 forward + backward, ms: min over rounds (base: a3beff5; v0: flattened loop; v2: + persistent grad_weight); cuBLAS f+b')
for b in sorted(rows):
    p = {v: min(x[1] for x in rows[b][v]) for v in ('vbase', 'v0', 'v2')}
    cb = min(x[2] for x in rows[b]['vbase'])
    print(f"{b:5d} base {p['vbase']:.4f} | v0 {p['v0']:.4f} ({(p['v0']-p['vbase'])*1e3:+.1f} us) | v2 {p['v2']:.4f} ({(p['v2']-p['vbase'])*1e3:+.1f} us) | cublas {cb:.4f}")
PY
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
