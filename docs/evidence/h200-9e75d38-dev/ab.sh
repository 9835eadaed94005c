#!/usr/bin/env bash
# Development call of 9e75d38 (thirty-second session): d_temb from B = 33 on the 128 x 32 tiles
# (RLK_DEV_SILU=0, as before: 384 tiles at 33 ... 64; 128 x 64 from 65), on the 192 x 32 tiles
# (1, at 33 ... 64: 256 tiles) and on 192 x 64 ping-pong tiles (2, at 33 ... 96: 128 tiles up to 64,
# W read once), five rounds alternated; then test_kernel_paths and the quick bf16 conformance with 2.
AB_FLAGS="0 1 2" AB_BATCHES=32,33,40,48,56,64,65,80,96 AB_TESTS=KernelPaths AB_TEST_LIMIT=240 \
  exec bash "$(dirname "$0")/../../../scripts/h200_ab.sh"
