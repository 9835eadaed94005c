// TF32 tensor-core primitives of the fp32 3xTF32 chains (docs/operators/qwenimage-adaln-mod-projection.md,
// "Arithmetic contract"): the contract's pieces of an FP32 value and the mma.sync m16n8k8 TF32
// instruction. Shared by the fp32 forward kernels and the development checks (dev/tf32.cuh, which
// adds the rounded-to-nearest cut the studies compare against).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace rlk::cuda::qwenimage::device {

// The contract's two TF32 pieces of x, both truncated: hi = x with its 13 low mantissa bits cleared,
// lo = x - hi (exact) with its 13 low mantissa bits cleared. Three instructions (a mask, a subtract,
// a mask), against nine for the same cut with cvt.rna (measured in the twentieth session's kernel).
// A NaN x gives a NaN lo; an infinite x gives hi = x and lo = NaN (inf - inf).
__device__ __forceinline__ void tf32_cut(float x, std::uint32_t& hi, std::uint32_t& lo) {
  constexpr std::uint32_t kMask = 0xFFFFE000u;
  hi = __float_as_uint(x) & kMask;
  lo = __float_as_uint(x - __uint_as_float(hi)) & kMask;
}

// d += a b on mma.sync m16n8k8 with TF32 operands and an FP32 accumulator (a: 16 x 8, b: 8 x 8).
// Not volatile: the compiler may interleave instructions of independent accumulators (each one's
// order is its data dependence), which a chain of three products per step needs to hide latency.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace rlk::cuda::qwenimage::device
