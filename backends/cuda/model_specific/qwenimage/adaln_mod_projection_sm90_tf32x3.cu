// The fp32 forward of the larger batches on Hopper's wgmma (see adaln_mod_projection_sm90.hpp):
// the chain of adaln_mod_projection_fp32_tf32x3.cu, element for element, with the products of each
// k8 step on one wgmma m64n128k8 TF32 instruction instead of mma.sync m16n8k8 ones:
//   sum = +0;
//   for each chunk c of 32 k, ascending:
//     acc = +0;
//     for each k8 step of the chunk, ascending: W_hi s_lo, W_lo s_hi, W_hi s_hi (the truncated
//     pieces, device::tf32_cut), one instruction each, into acc;
//     sum = sum + acc (one FP32 add);
//   y = sum + bias[n].
// Both instructions compute every element of D = A B + C on its own from its 8 exact TF32 products
// and C (measured byte for byte against the mma.sync tilings, tests/cuda/test_kernel_paths.cpp).
//
// Layout: 128 rows of W (two consumer warpgroups of 64, the wgmma M side) against 32, 64 or 128
// batch rows (the N side: m64n32k8, m64n64k8 or m64n128k8) per CTA; a producer warpgroup issues TMA
// loads of the three tiles of each chunk (W 128 x 32, s_hi and s_lo N x 32, FP32, 128-byte swizzle)
// into as many stages as fill 192 KB (8, 6 or 4). The batch tile changes which instruction computes
// an element, never the element's chain: each of its k8 steps is one instruction whatever N is. W's pieces are cut in registers
// after an ldmatrix of the swizzled tile (A from registers), so W is read once as FP32 and no
// workspace holds its pieces; s's pieces, shared by every CTA of a batch tile, come cut from the
// workspace (silu_pieces_kernel). Batch rows past B are zeros from TMA's out-of-bounds fill; their
// outputs are never stored.
//
// Written by hand, not with CUTLASS: the contract's fold of a fresh accumulator per 32 k into a
// running FP32 sum sits inside the mainloop, which CUTLASS's sm_90 GEMMs (one accumulator through
// the whole reduction, no FP32-emulation mainloop in CUTLASS 4.2) do not have.
#include "adaln_mod_projection_sm90.hpp"

#if defined(RLK_WITH_SM90_GEMM)

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_launch.hpp"
#include "adaln_mod_projection_sm90_ptx.cuh"
#include "adaln_mod_projection_tf32.cuh"

namespace rlk::cuda::qwenimage::sm90 {
namespace {

using namespace ptx;
using device::await_prior_grids;
using device::release_dependent_grids;
using device::tf32_cut;

constexpr int kN = 18432, kK = 3072;
constexpr int kRowsW = 128, kChunk = 32;
constexpr int kChunks = kK / kChunk;
constexpr int kWTileBytes = kRowsW * kChunk * 4;  // W's 128 x 32 FP32 tile: 128-byte rows
constexpr int kStagesBytes = 192 * 1024;          // all stages together
constexpr int kThreads = 384;
static_assert(kChunk * 4 == 128 && kN % kRowsW == 0 && kK % kChunk == 0);

// The shapes of one batch tiling: kRowsS batch rows per CTA.
template <int kRowsS>
struct Shape {
  static constexpr int kSTileBytes = kRowsS * kChunk * 4;
  static constexpr int kStageBytes = kWTileBytes + 2 * kSTileBytes;  // W, s_hi, s_lo
  static constexpr int kStages = kStagesBytes / kStageBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024 + 2 * kStages * 8;  // + alignment + barriers
  static constexpr int kAcc = kRowsS / 2;  // accumulator registers per thread of an m64nNk8 instruction
  static_assert(kSTileBytes % 1024 == 0 && kStagesBytes % kStageBytes == 0);
};

struct Maps {
  CUtensorMap w, s_hi, s_lo;
};

#define RLK_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define RLK_REGS16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define RLK_REGS32 RLK_REGS16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define RLK_REGS64                                                                                            \
  RLK_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, " \
             "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
// d += a b: a the warpgroup's 64 x 8 TF32 fragment in registers, b an N x 8 K-major tile (descriptor).
__device__ __forceinline__ void wgmma_rs(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {" RLK_REGS16 "}, {%16, %17, %18, %19}, %20, 1, 1, 1;"
               : RLK_ACC8(0), RLK_ACC8(8)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" RLK_REGS32 "}, {%32, %33, %34, %35}, %36, 1, 1, 1;"
               : RLK_ACC8(0), RLK_ACC8(8), RLK_ACC8(16), RLK_ACC8(24)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" RLK_REGS64 "}, {%64, %65, %66, %67}, %68, 1, 1, 1;"
               : RLK_ACC8(0), RLK_ACC8(8), RLK_ACC8(16), RLK_ACC8(24), RLK_ACC8(32), RLK_ACC8(40), RLK_ACC8(48), RLK_ACC8(56)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#undef RLK_REGS64
#undef RLK_REGS32
#undef RLK_REGS16
#undef RLK_ACC8

template <int kRowsS>
__global__ void __launch_bounds__(kThreads, 1)
    forward_kernel(const __grid_constant__ Maps maps, const float* __restrict__ bias, float* __restrict__ out, int B) {
  using S = Shape<kRowsS>;
  constexpr int kStages = S::kStages, kStageBytes = S::kStageBytes, kAcc = S::kAcc;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(base + kStages * kStageBytes);
  std::uint64_t* empty = full + kStages;
  const int t = threadIdx.x;
  const int wg = t / 128;
  const int b0 = blockIdx.x * kRowsS;  // consecutive CTAs share W's tile (read from L2 after the first)
  const int n0 = blockIdx.y * kRowsW;
  if (t == 0) stages_init(full, empty, kStages, 2);  // two consumer warpgroups
  __syncthreads();
  await_prior_grids();
  auto tile = [&](int s, int p) {  // W, s_hi, s_lo
    return base + s * kStageBytes + (p == 0 ? 0 : kWTileBytes + (p - 1) * S::kSTileBytes);
  };

  if (wg == 2) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 256) {
      for (int c = 0; c < kChunks; ++c) {
        const int s = stage_acquire(full, empty, c, kStages, kStageBytes);
        tma_load(tile(s, 0), &maps.w, c * kChunk, n0, &full[s]);
        tma_load(tile(s, 1), &maps.s_hi, c * kChunk, b0, &full[s]);
        tma_load(tile(s, 2), &maps.s_lo, c * kChunk, b0, &full[s]);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int warp = (t % 128) / 32, lane = t % 32;
  // ldmatrix rows: lanes 0-7 / 8-15 / 16-23 / 24-31 address the four 8 x 4 FP32 matrices of a k8
  // step's fragment (rows 0-7 k 0-3, rows 8-15 k 0-3, rows 0-7 k 4-7, rows 8-15 k 4-7), which land
  // in registers 0-3 as the TF32 A fragment of wgmma (and of mma.sync m16n8k8) wants them.
  const int a_row = 16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1);
  const int a_half = lane >> 4;
  float sum[kAcc], acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) sum[i] = 0.0f;
  for (int c = 0; c < kChunks; ++c) {
    const int s = c % kStages;
    mbar_wait(&full[s], (c / kStages) & 1);
    const unsigned char* w = tile(s, 0) + wg * 64 * 128;  // this warpgroup's 64 rows of W
    const unsigned char* s_hi = tile(s, 1);
    const unsigned char* s_lo = tile(s, 2);
    std::uint32_t hi[4][4], lo[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // k8 step j: 16-byte units 2j and 2j + 1 of the 128-byte row
      std::uint32_t raw[4];
      const int unit = 2 * j + a_half;
      device::ldmatrix_x4(raw, w + a_row * 128 + ((unit ^ (a_row & 7)) * 16));  // 128-byte swizzle
#pragma unroll
      for (int q = 0; q < 4; ++q) tf32_cut(__uint_as_float(raw[q]), hi[j][q], lo[j][q]);
    }
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      wgmma_rs(acc, hi[j], desc_sw128(s_lo + 32 * j));
      wgmma_rs(acc, lo[j], desc_sw128(s_hi + 32 * j));
      wgmma_rs(acc, hi[j], desc_sw128(s_hi + 32 * j));
    }
    wgmma_commit();
    wgmma_wait_all();
    if (t % 128 == 0) mbar_arrive(&empty[s]);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) sum[i] = sum[i] + acc[i];
  }
  release_dependent_grids();
  // acc index i = 4 j + q: row 16 warp + g + 8 (q / 2) of the warpgroup's 64 rows of W, batch row
  // 8 j + 2 tq + q % 2 of the tile.
  const int g = lane / 4, tq = lane % 4;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const int n = n0 + wg * 64 + 16 * warp + g + 8 * ((i % 4) / 2);
    const int b = b0 + 8 * (i / 4) + 2 * tq + i % 2;
    if (b < B) out[static_cast<std::int64_t>(b) * kN + n] = sum[i] + bias[n];
  }
}

template <int kRowsS>
cudaError_t launch_forward(int B, const float* s_hi, const float* s_lo, const float* weight, const float* bias,
                           float* out, cudaStream_t stream) {
  const EncodeTiled fn = tensor_map_encoder();
  if (fn == nullptr) return cudaErrorNotSupported;
  Maps maps{};
  if (encode_sw128(fn, &maps.w, weight, kN, kK, kRowsW) != CUDA_SUCCESS ||
      encode_sw128(fn, &maps.s_hi, s_hi, B, kK, kRowsS) != CUDA_SUCCESS ||
      encode_sw128(fn, &maps.s_lo, s_lo, B, kK, kRowsS) != CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  constexpr int smem = Shape<kRowsS>::kSmemBytes;
  if (const cudaError_t err = launch::allow_smem<forward_kernel<kRowsS>>(smem); err != cudaSuccess) return err;
  const dim3 grid((B + kRowsS - 1) / kRowsS, kN / kRowsW);
  return launch::kernel<forward_kernel<kRowsS>>(grid, kThreads, smem, stream, maps, bias, out, B);
}

}  // namespace

cudaError_t fp32_forward_wgmma(Fp32WgmmaTile tile, int B, const float* s_hi, const float* s_lo, const float* weight,
                               const float* bias, float* out, cudaStream_t stream) {
  if (B < 1) return cudaErrorInvalidValue;
  switch (tile) {
    case Fp32WgmmaTile::batch32: return launch_forward<32>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch64: return launch_forward<64>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch128: return launch_forward<128>(B, s_hi, s_lo, weight, bias, out, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t fp32_forward_wgmma_fits(bool* fits) {
  static_assert(Shape<32>::kSmemBytes >= Shape<64>::kSmemBytes && Shape<32>::kSmemBytes >= Shape<128>::kSmemBytes);
  return launch::fits(Shape<32>::kSmemBytes, fits);
}

}  // namespace rlk::cuda::qwenimage::sm90

#else  // a build without sm_90a

namespace rlk::cuda::qwenimage::sm90 {
cudaError_t fp32_forward_wgmma(Fp32WgmmaTile, int, const float*, const float*, const float*, const float*, float*,
                               cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t fp32_forward_wgmma_fits(bool* fits) {
  *fits = false;
  return cudaSuccess;
}
}  // namespace rlk::cuda::qwenimage::sm90

#endif
