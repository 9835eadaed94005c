import json, sys, glob, re, collections
out = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(f'{out}/ab-*-*.json')):
    v = re.match(r'.*/ab-(.+)-(\d+)\.json', f).group(1)
    for c in json.load(open(f))['cases']:
        rows[c['B']][v].append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms']))
names = sorted({v for b in rows for v in rows[b]}, key=lambda v: (v != 'base', v))
print('bf16 forward + backward, ms, min over rounds (and the difference to base in us)')
print('    B ' + ' '.join(f'{v:>17s}' for v in names))
for b in sorted(rows):
    base = min(x[1] for x in rows[b]['base'])
    cells = []
    for v in names:
        m = min(x[1] for x in rows[b][v])
        cells.append(f'{m:.4f} ({(m - base) * 1e3:+5.1f})')
    print(f'{b:5d} ' + ' '.join(f'{c:>17s}' for c in cells))
