#!/bin/bash
# fourteenth session: per-kernel times of the fp32 path (ncu, one kernel at a time) at B = 17, 64, 192
source build-dev/s14/setup_device.sh
for B in 17 64 192; do
  timeout 150 ncu --metrics gpu__time_duration.sum --csv -k 'regex:gemm_kernel|Kernel2|silu|finish|transposed|forward_kernel|backward_kernel' \
    build/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype fp32 --batch $B --warmup 1 --repeats 5 \
    > $OUT/ncu-fp32-B$B.csv 2> $OUT/ncu-fp32-B$B.err
  echo "B=$B rc $? $SECONDS s"
done
python3 - <<'PY'
import csv, os, glob, re, collections
out = os.environ['OUT']
for f in sorted(glob.glob(f'{out}/ncu-fp32-B*.csv')):
    rows = [l for l in open(f) if l.startswith('"')]
    r = list(csv.reader(rows))
    if not r: print(f, 'no rows'); continue
    h = r[0]; ki = h.index('Kernel Name'); vi = h.index('Metric Value'); ui = h.index('Metric Unit')
    agg = collections.defaultdict(list)
    for x in r[1:]:
        name = re.sub(r'\(.*', '', x[ki])[:90]
        v = float(x[vi].replace(',', '')); u = x[ui]
        agg[name].append(v / 1000 if u in ('nsecond', 'ns') else v * 1000 if u in ('msecond', 'ms') else v)
    print(os.path.basename(f))
    for k, v in agg.items(): print(f'  {k}: n={len(v)} us min {min(v):.1f} max {max(v):.1f}')
PY
