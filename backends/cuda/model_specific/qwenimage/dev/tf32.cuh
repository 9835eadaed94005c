// What the TF32 experiments (fp32_tc_check.cu, tf32_chain_check.cu, tf32x3_gemm_check.cu) share: the
// TF32 rounding, the mma.sync m16n8k8 TF32 instruction, and the comparison of an FP32 output with an
// FP64 reference in units of the FP32 gate. Header-only, so each experiment still builds alone with
// the nvcc line in its header.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

// x rounded to TF32 (nearest, ties away: cvt.rna), in FP32 layout with the 13 low mantissa bits zero.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// d += a b on mma.sync m16n8k8 with TF32 operands and an FP32 accumulator (a: 16 x 8, b: 8 x 8).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Largest |x - ref| / (1e-4 + 1e-4 |ref|) (as ordered bits of a non-negative float) and the
// count above 1; a NaN or infinite x counts as above and sets the maximum to +inf.
__global__ void compare_to_gate(const float* x, const double* ref, std::size_t n, unsigned* max_bits,
                                unsigned long long* over) {
  unsigned local_max = 0;
  unsigned long long local_over = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const double e = fabs(double(x[i]) - ref[i]) / (1e-4 + 1e-4 * fabs(ref[i]));
    const float ef = isfinite(e) ? float(e) : INFINITY;
    local_max = max(local_max, __float_as_uint(ef));
    local_over += !(ef <= 1.0f);
  }
  atomicMax(max_bits, local_max);
  atomicAdd(over, local_over);
}
