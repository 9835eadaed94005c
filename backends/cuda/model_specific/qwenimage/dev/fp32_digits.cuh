// The pieces of the FP32 contract on exact 8-bit digits (docs/notes/fp32-on-tensor-cores.md) that
// the digit experiments share (fp32_digits_check.cu, fp32_digits_small_b.cu): a group's scale
// exponent, q, its four balanced digits, and the block-wide maximum the scales come from.
// Header-only so each experiment still builds alone with one nvcc command.
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_runtime.h>

namespace fp32_digits {

// 2^(e - 1) <= m < 2^e; 0 for m = 0.
__host__ __device__ inline int exponent_above(float m) {
  int e = 0;
  (void)frexpf(m, &e);
  return m > 0.0f ? e : 0;
}
// q = rint(x 2^(30 - e)): the scaling exact in FP64, one rounding (|q| <= 2^30 within the group).
__host__ __device__ inline int q_exact(float x, int e) {
  return static_cast<int>(llrint(ldexp(static_cast<double>(x), 30 - e)));
}
// q's digits word: bytes d3, d2, d1, d0 (least significant first), each a signed byte, with
// q = d0 2^24 + d1 2^16 + d2 2^8 + d3 and d0 in [-64, 64].
__host__ __device__ inline std::uint32_t digit_word(int q) { return (std::uint32_t(q) + 0x808080u) ^ 0x808080u; }
__host__ __device__ inline int digit(std::uint32_t word, int i) {  // d_i, i = 0 most significant
  return static_cast<std::int8_t>(word >> (8 * (3 - i)));
}

__device__ inline float warp_max(float m) {
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  return m;
}
// Block-wide maximum of |x| over `n` values for a block of kThreads threads (warp_m: 32 floats of
// shared memory); every thread gets it. The block size is a template parameter so that the loop's
// loads are unrolled and in flight together (with blockDim.x the cuts ran ~1.5x longer).
template <int kThreads>
__device__ inline float block_max_abs(const float* x, int n, float* warp_m) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 32 of them");
  float m = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) m = fmaxf(m, fabsf(x[i]));
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) warp_m[threadIdx.x / 32] = m;
  __syncthreads();
  m = warp_max(threadIdx.x % 32 < kThreads / 32 ? warp_m[threadIdx.x % 32] : 0.0f);
  __syncthreads();
  return m;
}

}  // namespace fp32_digits
