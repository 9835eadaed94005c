#!/bin/bash
# fourteenth session A/B 1: fp32 on CUTLASS SIMT GEMMs. old = the plugin before the change;
# v1 = new plugin never CUTLASS; v2 / v3 = CUTLASS 64 x 128 / 128 x 256 for forward and d_temb from B = 17;
# v0 = the automatic choice. Then the fp32 kernel-path tests.
source build-dev/s14/setup_device.sh
build/bin/test_kernel_paths --gtest_filter='*Fp32*:*Refused*' > $OUT/kernel-paths.log 2>&1
echo "kernel paths rc $? $SECONDS s"; tail -3 $OUT/kernel-paths.log
B=17,64,128,256,384,512,768,1024,2048
for r in 1 2; do
  for v in old 1 2 3 0; do
    if [ $v = old ]; then export RLK_PLUGIN_PATH=$PWD/build-dev/s14/old; else unset RLK_PLUGIN_PATH; fi
    RLK_DEV_VARIANT=${v/old/0} timeout 120 build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype fp32 --batch $B --warmup 3 --repeats 15 --json $OUT/v$v-$r.json > $OUT/v$v-$r.log 2>&1
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
order = ['vold', 'v1', 'v2', 'v3', 'v0']
print('fp32 forward / forward + backward, ms: min over rounds; cuBLAS f+b')
for b in sorted(rows):
    parts = []
    for v in order:
        fw = min(x[0] for x in rows[b][v]); fb = min(x[1] for x in rows[b][v])
        parts.append(f'{v} {fw:.4f}/{fb:.4f}')
    cb = min(x[2] for x in rows[b]['vold'])
    print(b, ' | '.join(parts), f'| cublas f+b {cb:.4f}')
PY
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
