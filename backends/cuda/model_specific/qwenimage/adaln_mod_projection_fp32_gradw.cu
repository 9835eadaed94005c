// fp32 grad_weight for mid-sized batches (see adaln_mod_projection_fp32_gradw.hpp).
//
// The contract each element keeps, as simt::gemm_kernel evaluates it for grad_weight:
//   gw[n,k]  hi = lo = 0; for each chunk c of kFp32GradWChunk batch rows, c = 0 .. ceil(B / 16) - 1:
//            acc = 0; acc = fmaf(dy[b,n], s[b,k], acc) for b = 16 c .. 16 c + 15 ascending, rows
//            b >= B zero-filled (fmaf(0, 0, acc)); two_sum_add(hi, lo, acc); gw = two_sum_value(hi, lo).
// Only which thread evaluates an element, and when its operands arrive, differ from simt::.
#include "adaln_mod_projection_fp32_gradw.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_launch.hpp"

namespace rlk::cuda::qwenimage::fp32_gradw {
namespace {

using namespace device;

// One CTA per kRows rows of grad_weight: 256 CTAs, two per SM of a 132-SM H200 resident at once
// (all but 8 SMs run two). Its 288 threads are 18 row groups x 16 column groups, each thread
// 4 x 4 elements of a kCols-column tile; the tiles of s stream through two buffers.
constexpr int kRows = 72;
constexpr int kCols = 64;
constexpr int kRowGroups = kRows / 4;
constexpr int kColGroups = kCols / 4;
constexpr int kThreads = kRowGroups * kColGroups;
constexpr int kTiles = kK / kCols;
static_assert(kN % kRows == 0 && kK % kCols == 0);

// BP: the batch rows shared memory holds (B <= BP, 32 or kMaxB: 51 KB at 64); rows B .. BP - 1 are zeros.
template <int BP>
struct Smem {
  float dy[BP][kRows];      // grad_out[b, n0 .. n0 + kRows)
  float s[2][BP][kCols];    // s[b, k0 .. k0 + kCols) of two tiles
};

// Two CTAs per SM: at most 113 registers per thread.
template <int BP>
__global__ void __launch_bounds__(kThreads, 2)
    grad_weight_kernel(const float* __restrict__ s, const float* __restrict__ dy, float* __restrict__ gw, int B) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem<BP>& sm = *reinterpret_cast<Smem<BP>*>(smem_raw);
  const int t = threadIdx.x;
  const int tn = t / kColGroups;  // a warp: two row groups (broadcast dy reads), 16 column groups
  const int tk = t % kColGroups;
  const int n0 = blockIdx.x * kRows;
  const int chunks = (B + kFp32GradWChunk - 1) / kFp32GradWChunk;

  for (int idx = t; idx < (BP - B) * kRows; idx += kThreads) sm.dy[B + idx / kRows][idx % kRows] = 0.0f;
  for (int idx = t; idx < 2 * (BP - B) * kCols; idx += kThreads) {
    const int buf = idx / ((BP - B) * kCols);
    const int rest = idx % ((BP - B) * kCols);
    sm.s[buf][B + rest / kCols][rest % kCols] = 0.0f;
  }
  await_prior_grids();
  stage_rows<kRows, kRows, kThreads, kN>(&sm.dy[0][0], dy + n0, B, t);
  stage_rows<kCols, kCols, kThreads, kK>(&sm.s[0][0][0], s, B, t);
  cp_async_commit();

  for (int tile = 0; tile < kTiles; ++tile) {
    const int buf = tile & 1;
    if (tile + 1 < kTiles) stage_rows<kCols, kCols, kThreads, kK>(&sm.s[buf ^ 1][0][0], s + (tile + 1) * kCols, B, t);
    cp_async_commit();  // an empty group at the last tile keeps the wait count uniform
    cp_async_wait<1>();
    __syncthreads();  // tile `tile` (and, the first time, dy and the zero rows) visible to all
    float hi[4][4] = {};
    float lo[4][4] = {};
    for (int c = 0; c < chunks; ++c) {
      float acc[4][4] = {};
#pragma unroll
      for (int r = 0; r < kFp32GradWChunk; ++r) {
        const int b = c * kFp32GradWChunk + r;
        const float4 d = *reinterpret_cast<const float4*>(&sm.dy[b][tn * 4]);
        const float4 v = *reinterpret_cast<const float4*>(&sm.s[buf][b][tk * 4]);
        const float dv[4] = {d.x, d.y, d.z, d.w};
        const float sv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(dv[i], sv[j], acc[i][j]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) two_sum_add(hi[i][j], lo[i][j], acc[i][j]);
    }
    if (tile + 1 == kTiles) release_dependent_grids();
#pragma unroll
    for (int i = 0; i < 4; ++i)
      *reinterpret_cast<float4*>(gw + static_cast<std::int64_t>(n0 + tn * 4 + i) * kK + tile * kCols + tk * 4) =
          make_float4(two_sum_value(hi[i][0], lo[i][0]), two_sum_value(hi[i][1], lo[i][1]),
                      two_sum_value(hi[i][2], lo[i][2]), two_sum_value(hi[i][3], lo[i][3]));
    __syncthreads();  // tile `tile`'s buffer consumed before the next iteration refills it
  }
}

template <int BP>
cudaError_t launch_bp(int B, const float* s, const float* grad_out, float* grad_weight, cudaStream_t stream) {
  constexpr std::size_t smem = sizeof(Smem<BP>);
  if (const cudaError_t err = launch::allow_smem<grad_weight_kernel<BP>>(smem); err != cudaSuccess) return err;
  return launch::kernel<grad_weight_kernel<BP>>(kN / kRows, kThreads, smem, stream, s, grad_out, grad_weight, B);
}

// The one place that picks BP for B: f(std::integral_constant<int, BP>) with BP = 32 up to 32 rows
// and kMaxB above (two instantiations of the kernel).
constexpr int kNarrowBP = 32;
template <class F>
auto with_bp(int B, F&& f) {
  return B <= kNarrowBP ? f(std::integral_constant<int, kNarrowBP>{}) : f(std::integral_constant<int, kMaxB>{});
}

std::size_t smem_bytes(int B) {
  return with_bp(B, [](auto bp) { return sizeof(Smem<decltype(bp)::value>); });
}

}  // namespace

cudaError_t fits_current_device(int B, bool* fits) { return launch::fits(smem_bytes(B), fits); }

cudaError_t grad_weight(int B, const float* s, const float* grad_out, float* grad_weight, cudaStream_t stream) {
  if (B < kMinB || B > kMaxB) return cudaErrorInvalidValue;
  return with_bp(B, [&](auto bp) { return launch_bp<decltype(bp)::value>(B, s, grad_out, grad_weight, stream); });
}

}  // namespace rlk::cuda::qwenimage::fp32_gradw
