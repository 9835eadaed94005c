import json, sys
out = sys.argv[1]
rows = {}
for v in ('base', 'new'):
    for r in (1, 2, 3):
        for c in json.load(open(f'{out}/ab-{v}-{r}.json'))['cases']:
            rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms'], c['cublas']['fwd_bwd_ms']))
print('bf16 ms, min over three rounds: fwd, fwd+bwd; base = ebd9016, new = this build')
for b in sorted(rows):
    o, n = rows[b]['base'], rows[b]['new']
    of, ob = min(x[0] for x in o), min(x[1] for x in o)
    nf, nb = min(x[0] for x in n), min(x[1] for x in n)
    cb = min(x[2] for x in o + n)
    print(f"{b:5d} fwd {of:.4f} -> {nf:.4f} ({(nf-of)*1e3:+.1f} us) | f+b {ob:.4f} -> {nb:.4f} ({(nb-ob)*1e3:+.1f} us) | cuBLAS f+b {cb:.4f}")
