#!/usr/bin/env bash
# Development call of b0a56b7 (thirty-second session): the swapped bf16 forwards (64-row tiles up to
# B = 64 and from 129 to 192, 128-row tiles elsewhere below 1024) with s's out-of-bounds rows filled
# by the TMA (RLK_DEV_SILU=0, as before) or with s's TMA descriptor covering rows up to the tile's
# height, zero in memory (3), five rounds alternated; then test_kernel_paths and the quick bf16
# conformance with 3.
AB_FLAGS="0 3" AB_BATCHES=33,48,64,65,72,80,96,112,129,160,300,1000 AB_TESTS=KernelPaths AB_TEST_LIMIT=240 \
  exec bash "$(dirname "$0")/../../../scripts/h200_ab.sh"
