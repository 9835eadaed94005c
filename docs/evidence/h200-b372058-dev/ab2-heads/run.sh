#!/bin/bash
# thirteenth session A/B 2: the backward's SiLU ahead of the Hopper d_temb GEMM (RLK_DEV_VARIANT bit 16) and the
# finish kernel's work ahead of the Hopper grad_weight GEMM (bit 32), against the launches of HEAD (0) and the
# bound with neither launch (6: timing only); then the kernel-path tests with both heads on
ln -sfn build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
B=5,16,17,32,48,64,128,256,512,1024,2048
for r in 1 2 3 4; do
  for v in 0 16 32 48 6; do
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
print('forward + backward, ms: median over rounds [min max]; median minus v0 in us')
for b in sorted(rows):
    base = sorted(x[1] for x in rows[b]['v0']); mb = base[len(base)//2]
    parts = []
    for v in vs:
        fb = sorted(x[1] for x in rows[b][v]); m = fb[len(fb)//2]
        parts.append(f'{v} {m:.4f} [{fb[0]:.4f} {fb[-1]:.4f}] ({(m-mb)*1e3:+.1f})')
    print(b, ' | '.join(parts))
PY
for v in 0 48; do
  RLK_DEV_VARIANT=$v timeout 200 build-cuda/bin/test_kernel_paths --gtest_filter='*EveryBf16Gemm*:*ABackwardLaunched*:*Refused*:*Bf16Streaming*' > $OUT/kernel-paths-v$v.log 2>&1
  echo "kernel paths v$v rc $? $SECONDS s"; tail -3 $OUT/kernel-paths-v$v.log
done
cd $OUT && tar cf ab.tar --exclude=ab.tar . && ls -la ab.tar
