import json, sys
out, variants = sys.argv[1], sys.argv[2:]
rows = {}
for v in variants:
    for r in (1, 2, 3):
        for c in json.load(open(f'{out}/ab-{v}-{r}.json'))['cases']:
            rows.setdefault(c['B'], {}).setdefault(v, []).append(c['rlk']['fwd_bwd_ms'])
print('bf16 forward + backward, ms, min over three rounds; differences against', variants[0], 'in us')
print('    B ' + ' '.join(f'{v:>16}' for v in variants))
for b in sorted(rows):
    base = min(rows[b][variants[0]])
    cells = [f'{min(rows[b][v]):.4f} ({(min(rows[b][v]) - base) * 1e3:+5.1f})' for v in variants]
    print(f'{b:5d} ' + ' '.join(f'{c:>16}' for c in cells))
