#!/usr/bin/env python3
# Median duration per kernel (name and grid) in each ncu-B.csv.gz of this folder, or of the folder given
# with --dir: python3 summarize.py 129 144 160 192 > summary.txt
import gzip,os,csv,sys,statistics as st,collections,re
args=sys.argv[1:]
folder=os.path.dirname(os.path.abspath(__file__))
if args[:1]==['--dir']: folder,args=args[1],args[2:]
for b in args:
    rows=[r for r in csv.reader(l for l in gzip.open(os.path.join(folder, f'ncu-{b}.csv.gz'), 'rt') if l.startswith('"'))]
    h=rows[0]; i=h.index('gpu__time_duration.sum'); k=h.index('Kernel Name'); g=h.index('Grid Size')
    d=collections.OrderedDict()
    for r in rows[2:]:
        name=re.sub(r'\(.*','',r[k])[:70]+' '+r[g]
        d.setdefault(name,[]).append(float(r[i].replace(',','')))
    print('B',b)
    for n,v in d.items(): print(f'  {len(v):3d} {st.median(v)/1000:8.1f} us  {n}')
