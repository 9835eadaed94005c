#!/usr/bin/env bash
# Development call of b45647c (thirtieth session) on two H200s: (1) BF16 forward + backward at B <= 64
# with s from silu_kernel / the streaming grad_weight (RLK_DEV_SILU=0, as before) and from the
# wgmma d_temb GEMM (RLK_DEV_SILU=1), five rounds alternated; (2) every GPU test with RLK_DEV_SILU=1
# (the two-GPU test included); (3) the quick bf16 conformance with RLK_DEV_SILU=1. The commands now
# live in scripts/h200_ab.sh (thirty-second session), whose defaults are this call's; AB_TESTS and
# AB_TEST_LIMIT (the ctest regex and its time limit) let 59bd39f's call run only test_kernel_paths.
exec bash "$(dirname "$0")/../../../scripts/h200_ab.sh"
