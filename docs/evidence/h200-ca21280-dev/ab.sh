#!/usr/bin/env bash
# Development call of ca21280 (thirty-first session): s from extra CTAs beside the tall-narrow d_temb
# GEMM (RLK_DEV_SILU=1) against s from silu_kernel / the streaming grad_weight (0), measured by
# b45647c's script with test_kernel_paths alone in place of every GPU test: (1) BF16 forward +
# backward at B <= 64, five rounds alternated; (2) test_kernel_paths with RLK_DEV_SILU=1; (3) the
# quick bf16 conformance with RLK_DEV_SILU=1.
AB_TESTS=KernelPaths AB_TEST_LIMIT=200 exec bash "$(dirname "$0")/../h200-b45647c-dev/ab.sh"
