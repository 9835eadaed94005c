#!/bin/bash
# thirteenth session A/B 1: what the backward's SiLU and finish launches and the forward's SiLU launch cost
# (RLK_DEV_VARIANT bits of a development build: 1 silu_kernel releases after its wait; 2 backward without
# silu_kernel, 4 backward without the finish kernel, 8 forward without silu_kernel: timing only, wrong bytes)
ln -sfn build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
B=5,16,32,64,256,1024
V="0 1 2 6 8 9"
for r in 1 2 3; do
  for v in $V; do
    [ $SECONDS -gt 430 ] && break 2
    RLK_DEV_VARIANT=$v timeout 90 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 50 --json $OUT/v$v-$r.json > $OUT/v$v-$r.log 2>&1
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
        rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms']))
vs = sorted({v for b in rows for v in rows[b]}, key=lambda x: int(x[1:]))
print('medians over rounds, ms: fwd / fwd+bwd; delta vs v0 in us')
for b in sorted(rows):
    base = sorted(x[1] for x in rows[b]['v0']); bf = sorted(x[0] for x in rows[b]['v0'])
    mb, mf = base[len(base)//2], bf[len(bf)//2]
    parts = []
    for v in vs:
        fb = sorted(x[1] for x in rows[b][v]); ff = sorted(x[0] for x in rows[b][v])
        m, f = fb[len(fb)//2], ff[len(ff)//2]
        parts.append(f'{v} {f:.4f}/{m:.4f} ({(f-mf)*1e3:+.1f}/{(m-mb)*1e3:+.1f})')
    print(b, ' | '.join(parts))
PY
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
