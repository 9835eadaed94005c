// Random device data for benchmarks, generated on the GPU (hundreds of MB per buffer set).
// nvcc-compiled; plain types only.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace rlk::bench {

// Fills `count` elements with values uniform in [-sqrt(3) stddev, sqrt(3) stddev] (so the
// given standard deviation), from a counter-based hash of (seed, index): never all zeros.
// Returns an empty string on success.
std::string fill_uniform(void* data, std::int64_t count, bool bfloat16, std::uint64_t seed, float stddev, cudaStream_t stream);

}  // namespace rlk::bench
