#!/usr/bin/env bash
# Development call of 5350c1d (thirty-first session): d_temb's tall-narrow family on 192 x 32 tiles of the persistent ping-pong kernel,
# one consumer warpgroup (RLK_DEV_SILU=1, 128 tiles per 32 batch rows) against the 256 x 32 tiles of
# two (0, 96 tiles), measured by b45647c's script with test_kernel_paths alone in place of every GPU
# test: (1) BF16 forward + backward at B <= 64, five rounds alternated; (2) test_kernel_paths with
# RLK_DEV_SILU=1; (3) the quick bf16 conformance with RLK_DEV_SILU=1.
AB_TESTS=KernelPaths AB_TEST_LIMIT=200 exec bash "$(dirname "$0")/../h200-b45647c-dev/ab.sh"
