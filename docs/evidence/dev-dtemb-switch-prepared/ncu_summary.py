#!/usr/bin/env python3
# Medians per kernel (name and grid) of every metric in each ncu-<above>-<B>-<sched>.csv.gz that ncu.sh
# wrote: python3 ncu_summary.py DIR > ncu-summary.txt
import collections, csv, glob, gzip, os, re, statistics, sys

folder = sys.argv[1] if len(sys.argv) > 1 else '.'
# ncu.sh's metrics (the raw page also holds every device attribute and launch setting)
wanted = ['gpu__time_duration.sum', 'dram__bytes_read.sum', 'dram__bytes_write.sum', 'lts__t_sector_hit_rate.pct',
          'sm__throughput.avg.pct_of_peak_sustained_elapsed',
          'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed']
for path in sorted(glob.glob(os.path.join(folder, 'ncu-*-*-*.csv.gz')),
                   key=lambda p: [int(x) for x in re.findall(r'\d+', os.path.basename(p))]):
    rows = list(csv.reader(l for l in gzip.open(path, 'rt') if l.startswith('"')))
    if len(rows) < 3:
        print(os.path.basename(path), 'no kernels'); continue
    head, units = rows[0], rows[1]
    name, grid = head.index('Kernel Name'), head.index('Grid Size')
    metrics = [head.index(m) for m in wanted if m in head]
    kernels = collections.OrderedDict()
    for r in rows[2:]:
        key = re.sub(r'\(.*', '', r[name])[:48] + ' ' + r[grid]
        kernels.setdefault(key, []).append(r)
    print(os.path.basename(path))
    for key, rs in kernels.items():
        cells = []
        for i in metrics:
            v = statistics.median(float(r[i].replace(',', '')) for r in rs)
            cells.append(f'{head[i]}={v:.4g}{units[i]}')
        print(f'  {len(rs):3d} {key}\n      ' + '\n      '.join(cells))
