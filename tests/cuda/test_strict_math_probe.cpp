// The strict-math probe is compiled in the kernels' translation unit. This file is linked
// once against the kernels built normally (RLK_EXPECT_STRICT=1) and once against the same
// source built with --use_fast_math (RLK_EXPECT_STRICT=0); each asserts the probe's answer.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "adaln_mod_projection_kernels.hpp"

namespace {

#if RLK_EXPECT_STRICT
#define RLK_PROBE_TEST StrictBuildIsReportedStrict
#else
#define RLK_PROBE_TEST FastMathBuildIsReportedNotStrict
#endif

TEST(StrictMathProbe, RLK_PROBE_TEST) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    GTEST_SKIP() << "no CUDA device on this machine: the probe must run on a GPU";
  }
  bool strict = !RLK_EXPECT_STRICT;
  char detail[512] = {};
  ASSERT_EQ(rlk::cuda::qwenimage::run_strict_math_probe(&strict, detail, sizeof detail), cudaSuccess);
  EXPECT_EQ(strict, static_cast<bool>(RLK_EXPECT_STRICT)) << detail;
}

}  // namespace
