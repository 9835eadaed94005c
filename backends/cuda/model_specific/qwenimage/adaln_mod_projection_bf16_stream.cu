// Streaming bf16 forward for small batches (see adaln_mod_projection_bf16_stream.hpp).
//
// Each output keeps the arithmetic of the mma.sync forward GEMM (mma:: in
// adaln_mod_projection_kernels.cu), element by element:
//   s[b,k]   round_to<bf16>(silu_f32(temb[b,k])), as silu_kernel.
//   y[b,n]   acc = 0; one mma.sync m16n8k16 step per 16 k, k ascending over all 3072;
//            y = round_to<bf16>(acc + bias[n]) (FP32 add, one rounding).
// The A fragments (W, stored [n][k]) and B fragments (s, stored [b][k]) are loaded with the
// same ldmatrix forms as there; batch columns past B hold zeros and are not stored.
#include "adaln_mod_projection_bf16_stream.hpp"

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_launch.hpp"

namespace rlk::cuda::qwenimage::bf16_stream {
namespace {

using namespace device;

// One CTA per kRows rows of W (128 CTAs: one wave on a 132-SM H200), one warp per 16 rows;
// W and temb stream through kStages stages of kStep k, each stage's temb turned into s in place.
constexpr int kRows = 144;
constexpr int kWarps = kRows / 16;
constexpr int kThreads = kWarps * 32;
constexpr int kStep = 128;
constexpr int kPitch = kStep + 8;  // bf16 elements: ldmatrix rows of a quarter-warp in distinct banks
constexpr int kStages = 5;
constexpr int kSteps = kK / kStep;
// s rows: the 8 batch columns of one mma.sync, and 8 more that the x4 ldmatrix form reads.
constexpr int kSRows = 16;
static_assert(kN % kRows == 0 && kK % kStep == 0 && kRows % 16 == 0);

struct Smem {
  bf16 w[kStages][kRows][kPitch];
  bf16 s[kStages][kSRows][kPitch];  // temb as loaded, then SiLU in place; rows >= B stay zero
};

__global__ void __launch_bounds__(kThreads, 1)
    forward_kernel(const bf16* __restrict__ temb, const bf16* __restrict__ W, const bf16* __restrict__ bias,
                   bf16* __restrict__ out, int B) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  const int n0 = blockIdx.x * kRows;
  const bf16* w_rows = W + static_cast<std::int64_t>(n0) * kK;

  auto issue = [&](int step) {
    if (step < kSteps) {
      const int slot = step % kStages;
      const int k0 = step * kStep;
      stage_tile<kRows, kStep, kPitch, kThreads, kK>(&sm.w[slot][0][0], w_rows + k0, t);
      stage_rows<kStep, kPitch, kThreads, kK>(&sm.s[slot][0][0], temb + k0, B, t);
    }
    cp_async_commit();  // an empty group past the end keeps the wait count uniform
  };

  // Rows B .. kSRows - 1 of every s stage are batch padding: zero once, never loaded.
  for (int idx = t; idx < kStages * (kSRows - B) * kPitch; idx += kThreads) {
    const int slot = idx / ((kSRows - B) * kPitch);
    const int rest = idx % ((kSRows - B) * kPitch);
    sm.s[slot][B + rest / kPitch][rest % kPitch] = round_to<bf16>(0.0f);
  }
  await_prior_grids();
#pragma unroll
  for (int step = 0; step < kStages - 1; ++step) issue(step);

  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int jl = lane >> 3;
  for (int step = 0; step < kSteps; ++step) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `step` landed for every thread; stage step - 1 is consumed
    issue(step + kStages - 1);
    const int slot = step % kStages;
    for (int idx = t; idx < B * kStep; idx += kThreads) {
      bf16& v = sm.s[slot][idx / kStep][idx % kStep];
      v = round_to<bf16>(silu_f32(load_f32(&v)));
    }
    __syncthreads();  // s of this stage complete
    const bf16* tw = &sm.w[slot][0][0];
    const bf16* ts = &sm.s[slot][0][0];
#pragma unroll
    for (int kk = 0; kk < kStep; kk += 16) {
      std::uint32_t af[4];
      std::uint32_t bfr[4];
      ldmatrix_x4(af, tw + (warp * 16 + (lane & 15)) * kPitch + kk + (lane >> 4) * 8);
      ldmatrix_x4(bfr, ts + ((lane & 7) + (jl >> 1) * 8) * kPitch + kk + (jl & 1) * 8);
      mma_bf16(acc, af, bfr[0], bfr[1]);
    }
  }

  release_dependent_grids();
  // acc[half * 2 + q]: row n = 16 warp + g + 8 half, batch column b = 2 tq + q.
  const int g = lane >> 2;
  const int tq = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int n = n0 + warp * 16 + g + half * 8;
    const float bn = load_f32(bias + n);
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int b = tq * 2 + q;
      if (b < B) out[static_cast<std::int64_t>(b) * kN + n] = round_to<bf16>(acc[half * 2 + q] + bn);
    }
  }
  cp_async_wait<0>();
}

}  // namespace

cudaError_t fits_current_device(bool* fits) { return launch::fits(sizeof(Smem), fits); }

cudaError_t forward(int B, const void* temb, const void* weight, const void* bias, void* out,
                    cudaStream_t stream) {
  if (B < 1 || B > kMaxB) return cudaErrorInvalidValue;
  constexpr std::size_t smem = sizeof(Smem);
  if (const cudaError_t err = launch::allow_smem<forward_kernel>(smem); err != cudaSuccess) return err;
  return launch::kernel<forward_kernel>(kN / kRows, kThreads, smem, stream, static_cast<const bf16*>(temb),
                                        static_cast<const bf16*>(weight), static_cast<const bf16*>(bias),
                                        static_cast<bf16*>(out), B);
}

}  // namespace rlk::cuda::qwenimage::bf16_stream
