#!/bin/bash
# per-kernel durations (ncu) of rlk bench at B = 64, 65, 96 (bf16): where B = 65's time goes
ln -sfn build-slim build-cuda
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
mkdir -p $OUT/p; SECONDS=0
for B in 64 65 96; do
  timeout 150 ncu --csv --metrics gpu__time_duration.sum --launch-count 600 build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch $B --warmup 1 --repeats 5 > $OUT/p/ncu-$B.csv 2> $OUT/p/ncu-$B.err
  echo "B=$B rc=$? ${SECONDS}s $(wc -l < $OUT/p/ncu-$B.csv)"
done
python3 - <<'PY' > $OUT/p/summary.txt
import csv, io, os, statistics, collections
out=os.environ['OUT']
for B in (64,65,96):
    txt=open(f'{out}/p/ncu-{B}.csv').read()
    lines=[l for l in txt.splitlines() if l.startswith('"')]
    rows=list(csv.DictReader(io.StringIO('\n'.join(lines))))
    d=collections.defaultdict(list)
    for r in rows:
        if r.get('Metric Name')!='gpu__time_duration.sum': continue
        name=r['Kernel Name'][:150]
        d[(name, r.get('Grid Size',''), r.get('Block Size',''))].append(float(r['Metric Value']))
    print(f'== B={B}')
    for k,v in sorted(d.items(), key=lambda kv:-statistics.median(kv[1])*len(kv[1])):
        print(f'{statistics.median(v)/1000:9.2f} us x{len(v):3d} grid {k[1]:>14} block {k[2]:>12}  {k[0]}')
PY
head -60 $OUT/p/summary.txt
tar cf $OUT/prof.tar -C $OUT p
