#!/usr/bin/env python3
# Median per kernel (name and grid) of ncu metrics in each ncu-CASE.csv.gz of this folder, or of the
# folder given with --dir; by default only the duration, in us:
#   python3 summarize.py 129 144 160 192 > summary.txt
# With --metrics m1,m2,... each metric's median follows on its own line, with ncu's unit:
#   python3 summarize.py --dir DIR --metrics gpu__time_duration.sum,dram__bytes_read.sum 1024-960-1H
import gzip,os,csv,sys,statistics as st,collections,re
args=sys.argv[1:]
folder=os.path.dirname(os.path.abspath(__file__))
metrics=None
while args[:1] in (['--dir'],['--metrics']):
    if args[0]=='--dir': folder=args[1]
    else: metrics=args[1].split(',')
    args=args[2:]
for b in args:
    rows=[r for r in csv.reader(l for l in gzip.open(os.path.join(folder, f'ncu-{b}.csv.gz'), 'rt') if l.startswith('"'))]
    h=rows[0]; k=h.index('Kernel Name'); g=h.index('Grid Size')
    d=collections.OrderedDict(); full={}
    for r in rows[2:]:
        name=re.sub(r'\(.*','',r[k])[:70]+' '+r[g]
        # two kernels whose names agree in the first 70 characters and whose grids agree (for example
        # two CUTLASS GEMMs on (132, 1, 1)) are told apart by the order they first ran in: #2, #3, ...
        seen=full.setdefault(name,[])
        if r[k] not in seen: seen.append(r[k])
        if seen.index(r[k]): name+=f' #{seen.index(r[k])+1}'
        d.setdefault(name,[]).append(r)
    print('B',b)
    def med(rs,m): return st.median(float(r[h.index(m)].replace(',','')) for r in rs)
    for n,rs in d.items():
        if metrics is None: print(f'  {len(rs):3d} {med(rs,"gpu__time_duration.sum")/1000:8.1f} us  {n}'); continue
        print(f'  {len(rs):3d} {n}')
        for m in metrics:
            if m in h: print(f'      {m} = {med(rs,m):.4g} {rows[1][h.index(m)]}')
