// The streaming fp32 backward for small batches (see adaln_mod_projection_fp32_stream.hpp).
//
// The contract each output keeps is the fp32 one of the tiled kernels (simt:: in
// adaln_mod_projection_kernels.cu), written out here element by element:
//   partial[j,b,k] acc = 0; acc = fmaf(W[n,k], dy[b,n], acc) for n ascending in slice j.
//   s[b,k]         round_to<float>(silu_f32(temb[b,k])), as silu_kernel.
//   gw[n,k]        one compensated chunk (B <= kFp32GradWChunk): acc = 0;
//                  acc = fmaf(dy[b,n], s[b,k], acc) for b = 0 .. kFp32GradWChunk - 1, rows
//                  b >= B being zero-filled; then (hi, lo) = TwoSum(0, 0) + acc; gw = value.
// A zero-filled row is fmaf(0, 0, acc) = acc + (+0): it changes only a -0 into +0, and a second
// one changes nothing, so the rows B .. kFp32GradWChunk - 1 may be applied as any number >= 1 of
// such steps: here the kernel's zero rows B .. BT - 1, then one more whenever B < the chunk.
// Only which thread evaluates an element, and when its operands arrive, differ from simt::.
#include "adaln_mod_projection_fp32_stream.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_launch.hpp"

namespace rlk::cuda::qwenimage::fp32_stream {
namespace {

using namespace device;
static_assert(kMaxB == kFp32GradWChunk, "grad_weight must be exactly one compensated chunk");

// Backward: one CTA per (slice j of n, kBwdCols columns of k): 16 x 8 = 128 CTAs. W[slice,
// columns] streams through kBwdStages stages of kBwdRows rows; from each stage the CTA
// advances its d_temb chains (thread t owns partial[j, b, k0 + t] for every b) and writes the
// grad_weight rows of the stage, whose operands (dy of the stage's rows, s of the columns) are
// already in shared memory. W is read once and grad_weight written once, in the same pass.
constexpr int kBwdCols = 192;
constexpr int kBwdThreads = kBwdCols;
constexpr int kBwdRows = 32;
constexpr int kBwdStages = 5;
constexpr int kSliceRows = kN / kSplitN;
constexpr int kBwdSteps = kSliceRows / kBwdRows;
static_assert(kK % kBwdCols == 0 && kSliceRows % kBwdRows == 0);

struct BwdSmem {
  float w[kBwdStages][kBwdRows][kBwdCols];
  float dy[kBwdStages][kMaxB][kBwdRows];
  float s[kMaxB][kBwdCols];
};

template <int BT>
__global__ void __launch_bounds__(kBwdThreads, 1)
    backward_kernel(const float* __restrict__ temb, const float* __restrict__ W,
                    const float* __restrict__ dy, float* __restrict__ partial,
                    float* __restrict__ grad_weight, int B) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  BwdSmem& sm = *reinterpret_cast<BwdSmem*>(smem_raw);
  const int t = threadIdx.x;
  const int k0 = blockIdx.x * kBwdCols;
  const int slice = blockIdx.y;
  const int n_begin = slice * kSliceRows;

  constexpr int kChunksPerRow = kBwdCols / 4;
  auto issue = [&](int step) {
    if (step < kBwdSteps) {
      const int slot = step % kBwdStages;
      const int n0 = n_begin + step * kBwdRows;
      stage_tile<kBwdRows, kBwdCols, kBwdCols, kBwdThreads, kK>(&sm.w[slot][0][0],
                                                              W + static_cast<std::int64_t>(n0) * kK + k0, t);
      stage_rows<kBwdRows, kBwdRows, kBwdThreads, kN>(&sm.dy[slot][0][0], dy + n0, B, t);
    }
    cp_async_commit();
  };

  // Rows B .. BT - 1 of every dy stage and of s: zeros, never loaded (see the loops below).
  for (int idx = t; idx < kBwdStages * (BT - B) * kBwdRows; idx += kBwdThreads) {
    const int slot = idx / ((BT - B) * kBwdRows);
    const int rest = idx % ((BT - B) * kBwdRows);
    sm.dy[slot][B + rest / kBwdRows][rest % kBwdRows] = 0.0f;
  }
  for (int b = B; b < BT; ++b) sm.s[b][t] = 0.0f;

  await_prior_grids();
#pragma unroll
  for (int step = 0; step < kBwdStages - 1; ++step) issue(step);
  // s = round_to<float>(silu(temb)) for this CTA's columns: the same function as silu_kernel.
  for (int b = 0; b < B; ++b)
    sm.s[b][t] = round_to<float>(silu_f32(temb[static_cast<std::int64_t>(b) * kK + k0 + t]));

  float acc[BT];
#pragma unroll
  for (int b = 0; b < BT; ++b) acc[b] = 0.0f;

  // grad_weight: thread t writes float4 column group c4 of rows r0, r0 + 4, ..., of each stage.
  constexpr int kRowGroups = kBwdThreads / kChunksPerRow;
  static_assert(kBwdThreads % kChunksPerRow == 0 && kBwdRows % kRowGroups == 0);
  const int c4 = t % kChunksPerRow;
  const int r0 = t / kChunksPerRow;
  const bool padded = B < kFp32GradWChunk;

  for (int step = 0; step < kBwdSteps; ++step) {
    cp_async_wait<kBwdStages - 2>();
    __syncthreads();  // stage `step` (and, at step 0, s) visible; stage step - 1 consumed
    issue(step + kBwdStages - 1);
    const int slot = step % kBwdStages;

#pragma unroll 2
    for (int nn = 0; nn < kBwdRows; nn += 4) {
      const float w0 = sm.w[slot][nn + 0][t];
      const float w1 = sm.w[slot][nn + 1][t];
      const float w2 = sm.w[slot][nn + 2][t];
      const float w3 = sm.w[slot][nn + 3][t];
#pragma unroll
      for (int b = 0; b < BT; ++b) {  // all BT rows, the zero ones past B too: one fixed instruction stream
        const float4 d = *reinterpret_cast<const float4*>(&sm.dy[slot][b][nn]);
        acc[b] = fmaf(w0, d.x, acc[b]);
        acc[b] = fmaf(w1, d.y, acc[b]);
        acc[b] = fmaf(w2, d.z, acc[b]);
        acc[b] = fmaf(w3, d.w, acc[b]);
      }
    }

    // grad_bias is left to the backward's finish kernel: computed here by the column-tile-0 CTA
    // of each slice (one column per thread, a serial chain of folds per stage), it held those
    // 8 CTAs ~16 us behind the others at B = 1 (per-CTA %globaltimer stamps on the H200).
    const std::int64_t n0 = n_begin + step * kBwdRows;
#pragma unroll 2
    for (int r = r0; r < kBwdRows; r += kRowGroups) {
      float g[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int b = 0; b < BT; ++b) {  // rows B .. BT - 1 are zero-row steps (see the top)
        const float d = sm.dy[slot][b][r];
        const float4 s = *reinterpret_cast<const float4*>(&sm.s[b][c4 * 4]);
        g[0] = fmaf(d, s.x, g[0]);
        g[1] = fmaf(d, s.y, g[1]);
        g[2] = fmaf(d, s.z, g[2]);
        g[3] = fmaf(d, s.w, g[3]);
      }
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (padded) g[q] = fmaf(0.0f, 0.0f, g[q]);
        float hi = 0.0f;
        float lo = 0.0f;
        two_sum_add(hi, lo, g[q]);
        v[q] = two_sum_value(hi, lo);
      }
      *reinterpret_cast<float4*>(grad_weight + (n0 + r) * kK + k0 + c4 * 4) =
          make_float4(v[0], v[1], v[2], v[3]);
    }
  }

  release_dependent_grids();
#pragma unroll
  for (int b = 0; b < BT; ++b)
    if (BT == 1 || b < B)
      partial[(static_cast<std::int64_t>(slice) * B + b) * kK + k0 + t] = acc[b];
}

template <int BT>
cudaError_t backward_bt(int B, const BackwardTensors& t, float* partial, cudaStream_t stream) {
  constexpr std::size_t smem = sizeof(BwdSmem);
  if (cudaError_t err = launch::allow_smem<backward_kernel<BT>>(smem); err != cudaSuccess) return err;
  return launch::kernel<backward_kernel<BT>>(
      dim3(kK / kBwdCols, kSplitN), kBwdThreads, smem, stream, static_cast<const float*>(t.temb),
      static_cast<const float*>(t.weight), static_cast<const float*>(t.grad_out), partial,
      static_cast<float*>(t.grad_weight), B);
}

}  // namespace

cudaError_t fits_current_device(bool* fits) {
  return launch::fits(sizeof(BwdSmem), fits);
}

cudaError_t backward_products(int B, const BackwardTensors& t, float* partial, cudaStream_t stream) {
  if (B < 1 || B > kMaxB) return cudaErrorInvalidValue;
  if (B == 1) return backward_bt<1>(B, t, partial, stream);
  if (B <= 4) return backward_bt<4>(B, t, partial, stream);
  if (B <= 8) return backward_bt<8>(B, t, partial, stream);
  return backward_bt<16>(B, t, partial, stream);
}

}  // namespace rlk::cuda::qwenimage::fp32_stream
