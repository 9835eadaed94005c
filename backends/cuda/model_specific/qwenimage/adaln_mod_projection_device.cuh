// Device helpers shared by the CUDA kernels of qwenimage_adaln_mod_projection: the pieces of
// the arithmetic contract (docs/operators/qwenimage-adaln-mod-projection.md) that more than one
// kernel evaluates, and the cp.async primitives. Kernels that must give each other's bytes
// (adaln_mod_projection_kernels.cu and the streaming and tensor-core TUs beside it) call these very
// functions, compiled with the same strict-IEEE options (no fast math, which the probe checks).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

namespace rlk::cuda::qwenimage::device {

constexpr int kK = 3072;
constexpr int kN = 18432;
// Fixed split count of the d_temb reduction over N (never depends on B).
constexpr int kSplitN = 8;

// grad_bias: batch rows per chunk, and thread groups whose (hi, lo) pairs are combined.
constexpr int kBiasChunk = 32;
constexpr int kBiasGroups = 8;

using bf16 = __nv_bfloat16;

template <class T>
__device__ __forceinline__ float load_f32(const T* p);
template <>
__device__ __forceinline__ float load_f32<float>(const float* p) { return *p; }
template <>
__device__ __forceinline__ float load_f32<bf16>(const bf16* p) { return __bfloat162float(*p); }

template <class T>
__device__ __forceinline__ T round_to(float v);
template <>
__device__ __forceinline__ float round_to<float>(float v) { return v; }
template <>
__device__ __forceinline__ bf16 round_to<bf16>(float v) { return __float2bfloat16_rn(v); }

// IEEE expf and division (the TUs are built without fast math; the probe checks that).
__device__ __forceinline__ float silu_f32(float x) { return x / (1.0f + expf(-x)); }

// s[i .. i + 7] = round(SiLU(x[i .. i + 7])) through 16-byte-aligned pieces: what every kernel that
// writes s to the workspace does per piece (silu_kernel, and the CTAs beside the bf16 wgmma d_temb).
constexpr int kSiluVec = 8;
template <class T>
__device__ __forceinline__ void silu_piece(const T* __restrict__ x, T* __restrict__ s, std::int64_t i) {
  struct alignas(16) Vec {
    T v[kSiluVec];
  };
  const Vec in = *reinterpret_cast<const Vec*>(x + i);
  Vec out;
#pragma unroll
  for (int q = 0; q < kSiluVec; ++q) out.v[q] = round_to<T>(silu_f32(load_f32(&in.v[q])));
  *reinterpret_cast<Vec*>(s + i) = out;
}

__device__ __forceinline__ float silu_grad_f32(float x) {
  const float sig = 1.0f / (1.0f + expf(-x));
  return sig * (1.0f + x * (1.0f - sig));
}

// Compensated accumulation: (hi, lo) += x with Knuth's TwoSum.
__device__ __forceinline__ void two_sum_add(float& hi, float& lo, float x) {
  const float s = hi + x;
  const float bp = s - hi;
  const float err = (hi - (s - bp)) + (x - bp);
  hi = s;
  lo += err;
}

// hi + lo, except that a non-finite hi is returned as is: TwoSum's error term turns an
// infinite sum into NaN, which plain IEEE summation would not.
__device__ __forceinline__ float two_sum_value(float hi, float lo) {
  return (hi - hi == 0.0f) ? hi + lo : hi;
}

// grad_bias: folds a later group's (hi, lo) pair into the running one (groups ascending).
__device__ __forceinline__ void fold_bias_group(float& hi, float& lo, float group_hi, float group_lo) {
  two_sum_add(hi, lo, group_hi);
  lo += group_lo;
}

// grad_temb[b,k] = round( (sum over slices ascending of partial[slice,b,k]) * silu'(temb) ),
// element i of the count = B * K (partial: the d_temb kernels' FP32 slices, [kSplitN][B][K]).
template <class T>
__device__ __forceinline__ void dtemb_combine(const float* __restrict__ partial, const T* __restrict__ temb,
                                              T* __restrict__ grad_temb, std::int64_t count, std::int64_t i) {
  if (i >= count) return;
  float g = partial[i];
#pragma unroll
  for (int s = 1; s < kSplitN; ++s) g += partial[static_cast<std::int64_t>(s) * count + i];
  grad_temb[i] = round_to<T>(g * silu_grad_f32(load_f32(temb + i)));
}

// dtemb_combine of the kCombineVec elements from i (a multiple of kCombineVec; counts here are
// multiples of K = 3072), every load issued before the first add: the same arithmetic per element
// with more reads in flight per thread, for the finish kernel that runs on a few SMs beside the
// grad_weight GEMM (adaln_mod_projection_kernels.cu) and the streaming bf16 grad_weight kernels'
// finish (adaln_mod_projection_bf16_stream.cu).
constexpr int kCombineVec = 4;
template <class T>
__device__ __forceinline__ void dtemb_combine_vec(const float* __restrict__ partial, const T* __restrict__ temb,
                                                  T* __restrict__ grad_temb, std::int64_t count, std::int64_t i) {
  struct alignas(16) Part {
    float v[kCombineVec];
  };
  struct alignas(kCombineVec * sizeof(T)) Vec {
    T v[kCombineVec];
  };
  Part p[kSplitN];
#pragma unroll
  for (int s = 0; s < kSplitN; ++s) p[s] = *reinterpret_cast<const Part*>(partial + static_cast<std::int64_t>(s) * count + i);
  const Vec t = *reinterpret_cast<const Vec*>(temb + i);
  Vec out;
#pragma unroll
  for (int q = 0; q < kCombineVec; ++q) {
    float g = p[0].v[q];
#pragma unroll
    for (int s = 1; s < kSplitN; ++s) g += p[s].v[q];
    out.v[q] = round_to<T>(g * silu_grad_f32(load_f32(&t.v[q])));
  }
  *reinterpret_cast<Vec*>(grad_temb + i) = out;
}

// grad_bias[n] before its rounding, evaluated by one thread from dy_at(b) = dy[b,n] (as float):
// group j's pair sums chunks j, j + kBiasGroups, ... (kBiasChunk rows each, ascending, a fresh
// FP32 chunk sum folded into a TwoSum pair), and the groups' pairs are folded in ascending group
// order, empty groups included. This is grad_bias_block's arithmetic (adaln_mod_projection_kernels.cu,
// which runs the groups in parallel threads) one group after the other; the streaming bf16
// grad_weight kernel uses it for its columns (test_kernel_paths compares the bytes).
template <class DyAt>
__device__ __forceinline__ float grad_bias_column(DyAt dy_at, int B) {
  float hi = 0.0f, lo = 0.0f;
  for (int grp = 0; grp < kBiasGroups; ++grp) {
    float group_hi = 0.0f, group_lo = 0.0f;
    for (int b0 = grp * kBiasChunk; b0 < B; b0 += kBiasGroups * kBiasChunk) {
      float chunk = 0.0f;
      for (int j = 0; j < kBiasChunk && b0 + j < B; ++j) chunk += dy_at(b0 + j);
      two_sum_add(group_hi, group_lo, chunk);
    }
    if (grp == 0) {
      hi = group_hi;
      lo = group_lo;
    } else {
      fold_bias_group(hi, lo, group_hi, group_lo);
    }
  }
  return two_sum_value(hi, lo);
}

// Programmatic dependent launch (launch::kernel). Every kernel launched that way calls
// await_prior_grids() before its first global-memory access (only shared-memory setup may come
// first): it returns once the grids before it in the stream have completed and their memory is
// visible. release_dependent_grids() lets the next grid's blocks be placed on the SMs, where they
// wait in their own await_prior_grids(); kernels call it once their main loop is done (placed
// earlier, waiting blocks were measured to slow the FP32 tiled GEMMs that shared their SMs), or
// never, and then the next grid is placed when this one ends. Neither changes what is computed.
// Since every kernel releases only after its own wait, a grid that is placed has every grid before
// its predecessor completed. The one kernel that works before its wait uses that: the bf16 finish
// that runs beside the Hopper grad_weight GEMM (adaln_mod_projection_kernels.cu), which that GEMM
// releases at its start; it reads only what the grids before the GEMM wrote, writes nothing the
// GEMM touches, and waits at its end, so that the grid after it waits for the GEMM as well
// (whether the grid after it would wait for the GEMM anyway is discussed at that kernel).
// Before compute capability 9.0 launch::kernel launches plainly and both are empty.
__device__ __forceinline__ void await_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void release_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; src_bytes == 0 zero-fills the destination without reading global memory.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) { cp_async16(dst, src, 16); }
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int n>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
}

// The streaming kernels' pipeline (bf16 forward and d_temb, fp32 forward): stages 0 .. kStages - 2
// issued up front; then per step, its stage awaited and made visible to every thread, the stage
// kStages - 1 ahead issued into the slot consumed last, and consume(slot) run on it. issue(step)
// starts one stage's cp.async copies; the loop asks it only for steps before kSteps and commits
// one cp.async group per step, empty past the end, so the wait count stays uniform.
// With a prepare(slot) step (the bf16 forward's SiLU of temb in place), each step awaits the stage
// after its own too and prepares that one before consuming its own, so a stage's preparation and
// its consumption are separated by a barrier that the pipeline has anyway, instead of one more
// barrier per step between them (measured on the H200: the bf16 streaming forward at B = 3 and 8
// 1 and 3 us faster; docs/notes/cuda-kernels.md, eighth session).
struct NoPrepare {
  __device__ void operator()(int) const {}
};
template <int kStages, int kSteps, class Issue, class Consume, class Prepare = NoPrepare>
__device__ __forceinline__ void stream_stages(Issue&& issue, Consume&& consume, Prepare&& prepare = {}) {
  constexpr bool kPrepare = !std::is_same_v<std::decay_t<Prepare>, NoPrepare>;
  static_assert(!kPrepare || kStages >= 3, "a prepare step awaits two stages");
  auto stage = [&](int step) {
    if (step < kSteps) issue(step);
    cp_async_commit();
  };
#pragma unroll
  for (int step = 0; step < kStages - 1; ++step) stage(step);
  if constexpr (kPrepare) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage 0 landed for every thread
    prepare(0);
  }
  for (int step = 0; step < kSteps; ++step) {
    cp_async_wait<kPrepare ? kStages - 3 : kStages - 2>();
    __syncthreads();  // stage `step` landed for every thread (and prepared; stage step + 1 landed); stage step - 1 is consumed
    stage(step + kStages - 1);
    if constexpr (kPrepare) {
      if (step + 1 < kSteps) prepare((step + 1) % kStages);
    }
    consume(step % kStages);
  }
}

// The streaming kernels' stage loads: a tile of a row-major matrix with kLd elements per row
// into shared memory (row pitch kPitch elements), as 16-byte cp.async chunks spread over the
// kThreads threads of the block (`t` is the caller's thread index). Rows `rows` .. of the
// destination are left as they are. (The row stride is a compile-time constant, so each chunk's
// address is one multiply-add, as written out by hand.)
template <int kCols, int kPitch, int kThreads, std::int64_t kLd, class T>
__device__ __forceinline__ void stage_rows(T* dst, const T* src, int rows, int t) {
  constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunksPerRow = kCols / kPerChunk;
  static_assert(kCols % kPerChunk == 0);
  for (int idx = t; idx < rows * kChunksPerRow; idx += kThreads) {
    const int r = idx / kChunksPerRow;
    const int c = idx % kChunksPerRow;
    cp_async16(dst + r * kPitch + c * kPerChunk, src + r * kLd + c * kPerChunk);
  }
}
// The same for a tile of kRows rows that the kThreads threads divide evenly (unrolled).
template <int kRows, int kCols, int kPitch, int kThreads, std::int64_t kLd, class T>
__device__ __forceinline__ void stage_tile(T* dst, const T* src, int t) {
  constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunksPerRow = kCols / kPerChunk;
  static_assert(kCols % kPerChunk == 0 && kRows * kChunksPerRow % kThreads == 0);
#pragma unroll
  for (int i = 0; i < kRows * kChunksPerRow / kThreads; ++i) {
    const int idx = i * kThreads + t;
    const int r = idx / kChunksPerRow;
    const int c = idx % kChunksPerRow;
    cp_async16(dst + r * kPitch + c * kPerChunk, src + r * kLd + c * kPerChunk);
  }
}

// Tensor-core primitives of the bf16 kernels (mma.sync m16n8k16 bf16 x bf16 -> fp32): every
// bf16 GEMM element is a chain of these k16 steps into one FP32 accumulator.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace rlk::cuda::qwenimage::device
