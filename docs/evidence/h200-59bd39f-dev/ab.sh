#!/usr/bin/env bash
# Development call of 59bd39f (thirtieth session): b45647c with silu_then's pieces spread over the
# whole grid, measured by b45647c's script with test_kernel_paths alone in place of every GPU test:
# (1) BF16 forward + backward at B <= 64 with RLK_DEV_SILU 0 and 1, five rounds alternated;
# (2) test_kernel_paths with RLK_DEV_SILU=1; (3) the quick bf16 conformance with RLK_DEV_SILU=1.
AB_TESTS=KernelPaths AB_TEST_LIMIT=200 exec bash "$(dirname "$0")/../h200-b45647c-dev/ab.sh"
