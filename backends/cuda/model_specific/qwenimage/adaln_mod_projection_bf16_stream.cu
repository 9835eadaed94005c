// Streaming bf16 backward for small batches (see adaln_mod_projection_bf16_stream.hpp).
//
// Each output keeps the arithmetic of the mma.sync GEMMs (mma:: in
// adaln_mod_projection_kernels.cu), element by element:
//   partial[j,b,k] acc = 0; one mma.sync k16 step per 16 rows of n, ascending through slice j.
//   gw[n,k]        acc = 0; one k16 step per 16 batch rows, ascending, over round_up(B, 32) rows
//                  whose rows past B are zero (the mma.sync grad_w's 32-row r-tiles); one
//                  rounding to bf16.
//   s[b,k]         round_to<bf16>(silu_f32(temb[b,k])), as silu_kernel; zero past B.
//   gb[n]          grad_bias_of_column, the arithmetic of grad_bias_kernel.
// The fragments are loaded with the same ldmatrix forms as there (A of d_temb: W stored
// [n][k]; B of d_temb and A of grad_w: dy stored [b][n]; B of grad_w: s stored [b][k]).
#include "adaln_mod_projection_bf16_stream.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"

namespace rlk::cuda::qwenimage::bf16_stream {
namespace {

using namespace device;

// One CTA per (slice j of n, kCols columns of k): 16 x 8 = 128 CTAs. W[slice, columns] streams
// through kStages stages of kRows rows; each stage advances the CTA's d_temb accumulators and
// produces the stage's grad_weight rows, which leave through a staging tile as whole rows.
constexpr int kCols = 192;
constexpr int kWarps = 6;
constexpr int kThreads = kWarps * 32;
#ifndef EXP_ROWS
#define EXP_ROWS 32
#define EXP_STAGES 8
#endif
constexpr int kRows = EXP_ROWS;
constexpr int kStages = EXP_STAGES;
constexpr int kPad = 8;  // bf16 elements: ldmatrix rows of a quarter-warp in distinct banks
constexpr int kColPitch = kCols + kPad;
constexpr int kRowPitch = kRows + kPad;
constexpr int kSliceRows = kN / kSplitN;
constexpr int kSteps = kSliceRows / kRows;
static_assert(kK % kCols == 0 && kSliceRows % kRows == 0 && kRows % 16 == 0);
// d_temb: warp w owns k rows [32 w, 32 w + 32) of the CTA's columns (two m16 tiles).
constexpr int kDtMI = kCols / 16 / kWarps;
static_assert(kCols % (16 * kWarps) == 0);
// grad_w: warp w owns k columns [32 w, 32 w + 32) of every n row of the stage.
constexpr int kGwMI = kRows / 16;
constexpr int kGwColsPerWarp = kCols / kWarps;
constexpr int kGwNI = kGwColsPerWarp / 8;
static_assert(kGwNI % 2 == 0 && kCols % (8 * kWarps) == 0);

// BT: batch rows of the shared-memory tiles, round_up(B, 32) (the mma.sync grad_w's r extent).
template <int BT>
struct Smem {
  bf16 w[kStages][kRows][kColPitch];
  bf16 dy[kStages][BT][kRowPitch];
  bf16 s[BT][kColPitch];
  bf16 out[kRows][kColPitch];
};

template <int BT>
__global__ void __launch_bounds__(kThreads, 1)
    backward_kernel(const bf16* __restrict__ temb, const bf16* __restrict__ W,
                    const bf16* __restrict__ dy, float* __restrict__ partial,
                    bf16* __restrict__ grad_weight, bf16* __restrict__ grad_bias, int B) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem<BT>& sm = *reinterpret_cast<Smem<BT>*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  const int k0 = blockIdx.x * kCols;
  const int slice = blockIdx.y;
  const int n_begin = slice * kSliceRows;

  constexpr int kWChunksPerRow = kCols / 8;
  constexpr int kWChunks = kRows * kWChunksPerRow;
  constexpr int kDyChunksPerRow = kRows / 8;
  static_assert(kWChunks % kThreads == 0);
  auto issue = [&](int step) {
    if (step < kSteps) {
      const int slot = step % kStages;
      const int n0 = n_begin + step * kRows;
#pragma unroll
      for (int i = 0; i < kWChunks / kThreads; ++i) {
        const int idx = i * kThreads + t;
        const int r = idx / kWChunksPerRow;
        const int c = idx % kWChunksPerRow;
        cp_async16(&sm.w[slot][r][c * 8], W + static_cast<std::int64_t>(n0 + r) * kK + k0 + c * 8);
      }
      for (int idx = t; idx < B * kDyChunksPerRow; idx += kThreads) {
        const int b = idx / kDyChunksPerRow;
        const int c = idx % kDyChunksPerRow;
        cp_async16(&sm.dy[slot][b][c * 8], dy + static_cast<std::int64_t>(b) * kN + n0 + c * 8);
      }
    }
    cp_async_commit();
  };

  // Rows B .. BT - 1 of every dy stage are padding: zero once here, never loaded (a zero-filling
  // cp.async per padding row would still send every CTA's requests to one address).
  for (int idx = t; idx < kStages * (BT - B) * kRows; idx += kThreads) {
    const int slot = idx / ((BT - B) * kRows);
    const int rest = idx % ((BT - B) * kRows);
    sm.dy[slot][B + rest / kRows][rest % kRows] = round_to<bf16>(0.0f);
  }
#pragma unroll
  for (int step = 0; step < kStages - 1; ++step) issue(step);
  for (int idx = t; idx < BT * kCols; idx += kThreads) {
    const int b = idx / kCols;
    const int k = idx % kCols;
    sm.s[b][k] = b < B ? round_to<bf16>(silu_f32(load_f32(temb + static_cast<std::int64_t>(b) * kK + k0 + k)))
                       : round_to<bf16>(0.0f);
  }

  constexpr int kDtNI = BT / 8;
  float dt[kDtMI][kDtNI][4];
#pragma unroll
  for (int i = 0; i < kDtMI; ++i)
#pragma unroll
    for (int j = 0; j < kDtNI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) dt[i][j][q] = 0.0f;

  const int jl = lane >> 3;
  const int g = lane >> 2;
  const int tq = lane & 3;
  const int gw_c = warp * kGwColsPerWarp;

  for (int step = 0; step < kSteps; ++step) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `step` (and, at step 0, s) visible; stage step - 1 and out consumed
    issue(step + kStages - 1);
    const int slot = step % kStages;
    const bf16* tw = &sm.w[slot][0][0];
    const bf16* tdy = &sm.dy[slot][0][0];

    // d_temb: C[k][b] += W^T[k][n] dy^T[n][b] over the stage's n, k16 steps ascending.
#pragma unroll
    for (int kk = 0; kk < kRows; kk += 16) {
      std::uint32_t af[kDtMI][4];
#pragma unroll
      for (int i = 0; i < kDtMI; ++i) {
        const int mb = (warp * kDtMI + i) * 16;
        ldmatrix_x4_trans(af[i], tw + (kk + (lane & 7) + (jl >> 1) * 8) * kColPitch + mb + (jl & 1) * 8);
      }
#pragma unroll
      for (int h = 0; h < kDtNI / 2; ++h) {
        if (h * 16 >= B) break;  // batch columns past B: skipping them changes no valid element
        std::uint32_t bfr[4];
        ldmatrix_x4(bfr, tdy + (h * 16 + (lane & 7) + (jl >> 1) * 8) * kRowPitch + kk + (jl & 1) * 8);
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          if ((2 * h + jj) * 8 < B) {
#pragma unroll
            for (int i = 0; i < kDtMI; ++i) mma_bf16(dt[i][2 * h + jj], af[i], bfr[jj * 2], bfr[jj * 2 + 1]);
          }
        }
      }
    }

    // grad_weight rows of the stage: C[n][k] = sum over the BT batch rows, k16 steps ascending.
    float gw[kGwMI][kGwNI][4];
#pragma unroll
    for (int i = 0; i < kGwMI; ++i)
#pragma unroll
      for (int j = 0; j < kGwNI; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) gw[i][j][q] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < BT; kk += 16) {
      std::uint32_t af[kGwMI][4];
#pragma unroll
      for (int i = 0; i < kGwMI; ++i)
        ldmatrix_x4_trans(af[i], tdy + (kk + (lane & 7) + (jl >> 1) * 8) * kRowPitch + i * 16 + (jl & 1) * 8);
#pragma unroll
      for (int h = 0; h < kGwNI / 2; ++h) {
        std::uint32_t bfr[4];
        ldmatrix_x4_trans(bfr, &sm.s[0][0] + (kk + (lane & 7) + (jl & 1) * 8) * kColPitch + gw_c + h * 16 +
                                   (jl >> 1) * 8);
#pragma unroll
        for (int i = 0; i < kGwMI; ++i) {
          mma_bf16(gw[i][2 * h], af[i], bfr[0], bfr[1]);
          mma_bf16(gw[i][2 * h + 1], af[i], bfr[2], bfr[3]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kGwMI; ++i)
#pragma unroll
      for (int j = 0; j < kGwNI; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          *reinterpret_cast<__nv_bfloat162*>(&sm.out[i * 16 + g + half * 8][gw_c + j * 8 + tq * 2]) =
              __floats2bfloat162_rn(gw[i][j][half * 2], gw[i][j][half * 2 + 1]);

    const std::int64_t n0 = n_begin + step * kRows;
    if (blockIdx.x == 0 && t < kRows)  // grad_bias of the stage's rows, once per slice
      grad_bias[n0 + t] = grad_bias_of_column(tdy + t, kRowPitch, B);
    __syncthreads();  // out complete
#pragma unroll
    for (int i = 0; i < kWChunks / kThreads; ++i) {
      const int idx = i * kThreads + t;
      const int r = idx / kWChunksPerRow;
      const int c = idx % kWChunksPerRow;
      *reinterpret_cast<uint4*>(grad_weight + (n0 + r) * kK + k0 + c * 8) =
          *reinterpret_cast<const uint4*>(&sm.out[r][c * 8]);
    }
  }

#pragma unroll
  for (int i = 0; i < kDtMI; ++i)
#pragma unroll
    for (int j = 0; j < kDtNI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int k = (warp * kDtMI + i) * 16 + g + (q >> 1) * 8;
        const int b = j * 8 + tq * 2 + (q & 1);
        if (b < B) partial[(static_cast<std::int64_t>(slice) * B + b) * kK + k0 + k] = dt[i][j][q];
      }
  cp_async_wait<0>();
}

static_assert(kMaxB <= kBiasGroups * kBiasChunk, "grad_bias_of_column covers B");

// Dynamic shared memory above 48 KB needs the kernel's limit raised: once per device.
template <int BT>
cudaError_t launch(int B, const BackwardTensors& t, float* partial, cudaStream_t stream) {
  static std::array<std::atomic<bool>, 64> raised{};
  constexpr std::size_t smem = sizeof(Smem<BT>);
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const bool cacheable = device >= 0 && device < 64;
  if (!cacheable || !raised[device].load(std::memory_order_acquire)) {
    err = cudaFuncSetAttribute(backward_kernel<BT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem));
    if (err != cudaSuccess) return err;
    if (cacheable) raised[device].store(true, std::memory_order_release);
  }
  backward_kernel<BT><<<dim3(kK / kCols, kSplitN), kThreads, smem, stream>>>(
      static_cast<const bf16*>(t.temb), static_cast<const bf16*>(t.weight),
      static_cast<const bf16*>(t.grad_out), partial, static_cast<bf16*>(t.grad_weight),
      static_cast<bf16*>(t.grad_bias), B);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fits_current_device(bool* fits) {
  static std::array<std::atomic<int>, 64> known{};  // 0 unknown, 1 no, 2 yes
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const bool cacheable = device >= 0 && device < 64;
  int state = cacheable ? known[device].load(std::memory_order_relaxed) : 0;
  if (state == 0) {
    int optin = 0;
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err != cudaSuccess) return err;
    state = static_cast<std::size_t>(optin) >= sizeof(Smem<kMaxB>) ? 2 : 1;
    if (cacheable) known[device].store(state, std::memory_order_relaxed);
  }
  *fits = state == 2;
  return cudaSuccess;
}

cudaError_t backward_products(int B, const BackwardTensors& t, float* partial, cudaStream_t stream) {
  if (B < 1 || B > kMaxB) return cudaErrorInvalidValue;
  return B <= 32 ? launch<32>(B, t, partial, stream) : launch<64>(B, t, partial, stream);
}

}  // namespace rlk::cuda::qwenimage::bf16_stream
