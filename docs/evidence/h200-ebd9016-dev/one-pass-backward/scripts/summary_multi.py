import json, sys, glob
out, variants = sys.argv[1], sys.argv[2:]
rows = {}
for v in variants:
    for f in sorted(glob.glob(f'{out}/ab-{v}-*.json')):
        for c in json.load(open(f))['cases']:
            rows.setdefault(c['B'], {}).setdefault(v, []).append((c['rlk']['fwd_ms'], c['rlk']['fwd_bwd_ms']))
print('bf16 ms, min over rounds: fwd / fwd+bwd per variant')
for b in sorted(rows):
    print(f"B = {b:4d}: " + " | ".join(f"{v} {min(x[0] for x in rows[b][v]):.4f} / {min(x[1] for x in rows[b][v]):.4f}" for v in variants if v in rows[b]))
