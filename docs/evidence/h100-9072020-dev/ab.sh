#!/usr/bin/env bash
# Development call of 9072020 (thirty-sixth session): RLK_DEV_PAD=3 gives the bf16 backward's d_temb
# and grad_weight GEMMs, for B >= 65 not a multiple of 128, a copy of grad_out padded with zero rows
# to a multiple of 128 and s's zero rows up to it, their TMA descriptors over the padded rows, and the
# non-swapped forward tiles (B >= 1024) s's descriptor over whole tiles, in place of the TMA's
# out-of-bounds fill; 0 the kernels as they are. Five rounds alternated; then every GPU test and the
# quick bf16 conformance with 3.
AB_VAR=RLK_DEV_PAD AB_FLAGS="0 3" AB_BATCHES=65,100,129,144,160,192,200,300,500,700,1000,1100,1500,2000 \
  AB_TEST_LIMIT=300 exec bash "$(dirname "$0")/../../../scripts/h200_ab.sh"
