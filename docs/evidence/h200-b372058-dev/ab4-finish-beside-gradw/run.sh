#!/bin/bash
# thirteenth session A/B 4: grad_weight on 132 - X CTAs releasing at its start, the finish kernel beside it on the X SMs
# (RLK_DEV_VARIANT 1000 + X), against 37bd070's plugin (old) and the bound without the SiLU and finish launches
# (v6, timing only); then the kernel-path tests

ln -sfn build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
B=17,32,48,64,128,192,256,512,1024,2048
for r in 1 2 3 4; do
  for v in old 1004 1008 1012 1016 1024 6; do
    if [ $v = old ]; then export RLK_PLUGIN_PATH=$PWD/build-dev/s12/old37; else unset RLK_PLUGIN_PATH; fi
    RLK_DEV_VARIANT=${v/old/0} timeout 90 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 50 --json $OUT/v$v-$r.json > $OUT/v$v-$r.log 2>&1
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
        rows.setdefault(c['B'], {}).setdefault(v, []).append(c['rlk']['fwd_bwd_ms'])
order = ['vold', 'v1004', 'v1008', 'v1012', 'v1016', 'v1024', 'v6']
print('forward + backward, ms: median over rounds [min max]; median minus old in us')
for b in sorted(rows):
    base = sorted(rows[b]['vold']); mb = base[len(base)//2]
    parts = []
    for v in order:
        fb = sorted(rows[b][v]); m = fb[len(fb)//2]
        parts.append(f'{v} {m:.4f} [{fb[0]:.4f} {fb[-1]:.4f}] ({(m-mb)*1e3:+.1f})')
    print(b, ' | '.join(parts))
PY
for v in 1008 1016; do
  RLK_DEV_VARIANT=$v timeout 150 build-cuda/bin/test_kernel_paths --gtest_filter='*EveryBf16Gemm*:*ABackwardLaunched*:*Refused*' > $OUT/kernel-paths-v$v.log 2>&1
  echo "kernel paths v$v rc $? $SECONDS s"; tail -2 $OUT/kernel-paths-v$v.log
done
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
