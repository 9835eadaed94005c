#!/usr/bin/env python3
"""Which CTA gets which d_temb tile: a model of the order in which CUTLASS 4.2's persistent
scheduler for sm90 (PersistentTileSchedulerSm90: tile_scheduler_params.h, sm90_tile_scheduler.hpp)
hands out tiles, written from reading that source. A CTA c of the G = 132 takes the linear tiles
c, c + G, c + 2G, ...; a linear tile is (slice l, then m and n in the raster order, with the
swizzle's groups); with a swizzle wider than 1 the tile counts round up to whole groups, and the
tiles past the problem are wasted turns. d_temb: M = W's 3072 columns, N = the batch, L = 8 slices.

Prints, for each tiling and B whose last batch tile is partly past B, per scheduler option
(<max swizzle><N|M>; N = along the batch tiles, CUTLASS's heuristic here): the most tiles of that
last batch tile one CTA gets / the most tiles one CTA gets ('w': wasted turns). A model, not a
measurement: it says where the partly filled tiles go, not what they cost.
    python3 schedule_model.py [SMS]
"""
import sys

SMS = int(sys.argv[1]) if len(sys.argv) > 1 else 132
SLICES = 8


def log_swizzle(tiles_m, tiles_n, max_swizzle):
    least = min(tiles_m, tiles_n)
    for log, (size, dim) in ((3, (8, 6)), (2, (4, 3)), (1, (2, 2))):
        if max_swizzle >= size and least >= dim:
            return log
    return 0


def tiles_of_each_cta(tiles_m, tiles_n, max_swizzle, raster):
    log = log_swizzle(tiles_m, tiles_n, max_swizzle)
    group = 1 << log
    pm, pn = -(-tiles_m // group) * group, -(-tiles_n // group) * group
    major = pn if raster == 'N' else pm
    per_slice = pm * pn
    ctas = [[] for _ in range(SMS)]
    for t in range(per_slice * SLICES):
        w = t % per_slice
        offset, extra = w & (group - 1), w >> log
        minor_group, major_idx = divmod(extra, major)
        minor_idx = minor_group * group + offset
        m, n = (minor_idx, major_idx) if raster == 'N' else (major_idx, minor_idx)
        ctas[t % SMS].append((m, n))
    return ctas


def row(B, batch_rows, w_cols, option):
    tiles_m, tiles_n = 3072 // w_cols, -(-B // batch_rows)
    ctas = tiles_of_each_cta(tiles_m, tiles_n, int(option[:-1]), option[-1])
    real = [[(m, n) for m, n in c if m < tiles_m and n < tiles_n] for c in ctas]
    last = max(sum(1 for m, n in c if n == tiles_n - 1) for c in real)
    most = max(len(c) for c in real)
    wasted = sum(len(c) for c in ctas) - sum(len(c) for c in real)
    return f'{option}:{last}/{most}' + ('w' if wasted else ' ')


OPTIONS = ['1N', '2N', '4N', '1M', '2M']
print(f'{SMS} CTAs; per option: most last-batch-tile tiles on one CTA / most tiles on one CTA')
for name, batch_rows, w_cols, batches in (
        ('128 x 64', 64, 128, [65, 100, 129, 144, 160]),
        ('128 x 128', 128, 128, [193, 300, 400, 500, 600, 700, 800, 832, 928, 960, 992, 1023]),
        ('256 x 128', 128, 256, [928, 960, 1100, 1200, 1300, 1400, 1600, 1800, 2000, 2047])):
    for B in batches:
        print(f'{name:9s} B = {B:4d} ({-(-B // batch_rows):2d} batch tiles)  '
              + '  '.join(row(B, batch_rows, w_cols, o) for o in OPTIONS))
