#include "bench_fill.hpp"

#include <cuda_bf16.h>

namespace rlk::bench {
namespace {

// splitmix64: a counter-based generator, so any element is computed independently.
__device__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_kernel(void* data, std::int64_t count, bool bfloat16, std::uint64_t seed, float half_width) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float unit = static_cast<float>(mix(seed ^ mix(static_cast<std::uint64_t>(i))) >> 40) * (1.0f / 16777216.0f);
    const float value = (2.0f * unit - 1.0f) * half_width;
    if (bfloat16) static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(value);
    else static_cast<float*>(data)[i] = value;
  }
}

}  // namespace

std::string fill_uniform(void* data, std::int64_t count, bool bfloat16, std::uint64_t seed, float stddev, cudaStream_t stream) {
  fill_kernel<<<4096, 256, 0, stream>>>(data, count, bfloat16, seed, stddev * 1.7320508f);
  const cudaError_t status = cudaGetLastError();
  return status == cudaSuccess ? std::string() : std::string("fill kernel: ") + cudaGetErrorString(status);
}

}  // namespace rlk::bench
