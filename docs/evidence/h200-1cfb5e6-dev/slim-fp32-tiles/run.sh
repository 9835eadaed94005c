#!/bin/bash
# fifteenth session, evidence of 1cfb5e6 (fp32 forward and d_temb on 32-column tiles up to B = 32):
# every GPU test of a one-GPU machine beside the quick fp32 conformance, then rlk bench --dtype fp32
# with this build's plugin (new) and 9d80d6a's (old, carried), alternated twice.
source build-dev/s15/setup_device.sh
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
key=qwenimage_adaln_mod_projection
timeout 200 build/bin/rlk conform $key --device cuda:0 --dtype fp32 --quick --out $OUT/conform-fp32-quick > $OUT/conform-fp32-quick.log 2>&1 &
conf=$!
timeout 420 ctest --test-dir build-cuda -R 'Cuda|StrictMath|KernelPaths' --output-on-failure -j 2 > $OUT/ctest-gpu.log 2>&1
echo "== ctest rc $? after ${SECONDS}s"; grep -E "tests passed|Failed|\*\*\*Failed" $OUT/ctest-gpu.log | tail -5
wait $conf; echo "== quick conformance rc $? after ${SECONDS}s"; tail -n 2 $OUT/conform-fp32-quick.log
cp build/lib/librlk_backend_cuda.so build-dev/s15/new.so
B=9,12,16,17,24,32,33,48
for r in 1 2; do
  for v in old new; do
    cp build-dev/s15/$v.so build/lib/librlk_backend_cuda.so
    timeout 100 build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch $B --warmup 3 --repeats 30 --json $OUT/ab-$v-$r.json > $OUT/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
cp build-dev/s15/new.so build/lib/librlk_backend_cuda.so
python3 - <<'PY' | tee $OUT/summary.txt
import json, os
out = os.environ['OUT']
rows = {}
for v in ('old', 'new'):
    for r in (1, 2):
        for c in json.load(open(f'{out}/ab-{v}-{r}.json'))['cases']:
            rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms'], c['cublas']['fwd_bwd_ms']))
print('fp32 ms, min over two rounds: fwd, fwd+bwd; old = 9d80d6a plugin, new = 1cfb5e6 (32-column tiles up to B = 32)')
for b in sorted(rows):
    o, n = rows[b]['old'], rows[b]['new']
    of, ob = min(x[0] for x in o), min(x[1] for x in o)
    nf, nb = min(x[0] for x in n), min(x[1] for x in n)
    cb = min(x[2] for x in o + n)
    print(f"{b:5d} fwd {of:.4f} -> {nf:.4f} ({(nf-of)*1e3:+.1f} us) | f+b {ob:.4f} -> {nb:.4f} ({(nb-ob)*1e3:+.1f} us) | cuBLAS f+b {cb:.4f}")
PY
cd $OUT && tar cf ev.tar --exclude=ev.tar * && ls
