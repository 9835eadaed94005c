// Streaming bf16 kernels for small batches (see adaln_mod_projection_bf16_stream.hpp).
//
// Each output keeps the arithmetic of the mma.sync GEMMs (mma:: in
// adaln_mod_projection_kernels.cu), element by element:
//   s[b,k]    round_to<bf16>(silu_f32(temb[b,k])), as silu_kernel.
//   y[b,n]    acc = 0; one mma.sync m16n8k16 step per 16 k, k ascending over all 3072;
//             y = round_to<bf16>(acc + bias[n]) (FP32 add, one rounding).
//   pt[z,b,k] acc = 0; one mma.sync m16n8k16 step per 16 rows n, ascending over slice z's
//             N / kSplitN rows; stored as FP32 (dtemb_combine's arithmetic adds the slices: in
//             the grad_weight kernels below or backward_finish_kernel).
//   gt[b,k], gb[n]  dtemb_combine_vec and grad_bias_column (adaln_mod_projection_device.cuh), the
//             arithmetic of backward_finish_kernel, in the grad_weight kernels' finish.
//   gw[n,k]   acc = 0; one mma.sync m16n8k16 step per 16 batch rows, ascending over the
//             GEMM's r-tile of 32 rows (rows >= B zero); gw = round_to<bf16>(acc). The kernels
//             run the steps that hold batch rows only (see grad_weight_kernel for why the
//             all-zero ones change nothing).
// The fragments are loaded with the same ldmatrix forms as there (W stored [n][k], s [b][k],
// grad_out [b][n]); batch columns past B hold zeros and are not stored.
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

// Rows B .. kRows - 1 of each of kStages tiles hold batch padding: zeroed once (+0, 16-byte stores)
// by the kThreads threads of the block (`t` is the caller's thread index), never loaded.
template <int kStages, int kRows, int kPitch, int kThreads>
__device__ __forceinline__ void zero_batch_padding(bf16 (*tiles)[kRows][kPitch], int B, int t) {
  static_assert(kPitch % 8 == 0, "rows of whole 16-byte pieces");
  const int per_slot = (kRows - B) * kPitch / 8;
  for (int idx = t; idx < kStages * per_slot; idx += kThreads)
    reinterpret_cast<uint4*>(&tiles[idx / per_slot][B][0])[idx % per_slot] = make_uint4(0u, 0u, 0u, 0u);
}

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
    const int slot = step % kStages;
    const int k0 = step * kStep;
    stage_tile<kRows, kStep, kPitch, kThreads, kK>(&sm.w[slot][0][0], w_rows + k0, t);
    stage_rows<kStep, kPitch, kThreads, kK>(&sm.s[slot][0][0], temb + k0, B, t);
  };

  zero_batch_padding<kStages, kSRows, kPitch, kThreads>(sm.s, B, t);
  await_prior_grids();
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int jl = lane >> 3;
  auto consume = [&](int slot) {
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
  };
  // A stage's temb turned into s before the barrier that precedes its consumption.
  auto silu_stage = [&](int slot) {
    for (int idx = t; idx < B * kStep; idx += kThreads) {
      bf16& v = sm.s[slot][idx / kStep][idx % kStep];
      v = round_to<bf16>(silu_f32(load_f32(&v)));
    }
  };
  stream_stages<kStages, kSteps>(issue, consume, silu_stage);

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

// d_temb partials: one CTA per (slice of kN / kSplitN rows of W, kDtCols columns): 8 x 16 = 128
// CTAs, one warp per 16 columns. W (kDtStep rows x kDtCols columns per stage) and grad_out
// (B rows x kDtStep columns) stream through a kDtStages-stage cp.async pipeline, as the
// forward's W and temb; each warp runs one mma.sync per 16 rows of W into one FP32 accumulator
// per element, the chain of the GEMM's slice.
constexpr int kDtCols = 192;
constexpr int kDtWarps = kDtCols / 16;
constexpr int kDtThreads = kDtWarps * 32;
constexpr int kDtStep = 64;
constexpr int kDtPitch = kDtCols + 8;  // 400 bytes: the 8 rows of an ldmatrix.trans in distinct banks
constexpr int kDtGPitch = kDtStep + 8;  // 144 bytes, likewise for grad_out's rows
constexpr int kDtStages = 7;
constexpr int kDtSliceRows = kN / kSplitN;
constexpr int kDtSteps = kDtSliceRows / kDtStep;
constexpr int kDtGRows = 16;  // the 8 batch columns of one mma.sync, and 8 more the x4 form reads
static_assert(kK % kDtCols == 0 && kDtSliceRows % kDtStep == 0 && kDtStep % 16 == 0 && kDTembMaxB <= 8);

struct DTembSmem {
  bf16 w[kDtStages][kDtStep][kDtPitch];
  bf16 g[kDtStages][kDtGRows][kDtGPitch];  // rows >= B stay zero
};

__global__ void __launch_bounds__(kDtThreads, 1)
    dtemb_kernel(const bf16* __restrict__ W, const bf16* __restrict__ grad_out, float* __restrict__ partial, int B) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  DTembSmem& sm = *reinterpret_cast<DTembSmem*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  const int slice = blockIdx.x / (kK / kDtCols);
  const int k0 = blockIdx.x % (kK / kDtCols) * kDtCols;
  const int n0 = slice * kDtSliceRows;

  auto issue = [&](int step) {
    const int slot = step % kDtStages;
    const int n = n0 + step * kDtStep;
    stage_tile<kDtStep, kDtCols, kDtPitch, kDtThreads, kK>(&sm.w[slot][0][0],
                                                           W + static_cast<std::int64_t>(n) * kK + k0, t);
    stage_rows<kDtStep, kDtGPitch, kDtThreads, kN>(&sm.g[slot][0][0], grad_out + n, B, t);
  };

  zero_batch_padding<kDtStages, kDtGRows, kDtGPitch, kDtThreads>(sm.g, B, t);
  await_prior_grids();
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int jl = lane >> 3;
  stream_stages<kDtStages, kDtSteps>(issue, [&](int slot) {
    const bf16* tw = &sm.w[slot][0][0];
    const bf16* tg = &sm.g[slot][0][0];
#pragma unroll
    for (int kk = 0; kk < kDtStep; kk += 16) {
      // A: W^T (16 columns k by 16 rows n) from the [n][k] tile, B: grad_out [b][n], as the GEMM.
      std::uint32_t af[4];
      std::uint32_t bfr[4];
      ldmatrix_x4_trans(af, tw + (kk + (lane & 7) + (jl >> 1) * 8) * kDtPitch + warp * 16 + (jl & 1) * 8);
      ldmatrix_x4(bfr, tg + ((lane & 7) + (jl >> 1) * 8) * kDtGPitch + kk + (jl & 1) * 8);
      mma_bf16(acc, af, bfr[0], bfr[1]);
    }
  });

  release_dependent_grids();
  // acc[half * 2 + q]: column k = k0 + 16 warp + g + 8 half, batch row b = 2 tq + q.
  const int g = lane >> 2;
  const int tq = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int b = tq * 2 + q;
      if (b < B)
        partial[(static_cast<std::int64_t>(slice) * B + b) * kK + k0 + warp * 16 + g + half * 8] = acc[half * 2 + q];
    }
  cp_async_wait<0>();
}

// grad_weight: one CTA per kGwRows rows of grad_weight (128 CTAs). At small B the kernel is one
// write of 113 MB, which only runs at the copy ceiling with stores in flight all the time: the
// compute warps fill one of two staging tiles (16 rows x 1536 columns: half of a 16-row group)
// while the store warps write the other out in address order, the tiles handed over with named
// barriers. s stays in shared memory for the whole kernel.
// (Measured on an H200, docs/notes/cuda-kernels.md: warps that computed a group and then stored
// it took 37-39 us at B = 1, four store warps beside compute warps that held s in registers
// 35 us, the mma.sync GEMM 36 us, 16-byte stores alone 27 us.)
constexpr int kGwComputeWarps = 8;
constexpr int kGwStoreWarps = 8;
constexpr int kGwThreads = (kGwComputeWarps + kGwStoreWarps) * 32;
constexpr int kGwStoreThreads = kGwStoreWarps * 32;
constexpr int kGwComputeThreads = kGwComputeWarps * 32;
constexpr int kGwRows = 144;
constexpr int kGwGroups = kGwRows / 16;
constexpr int kGwTileCols = kK / 2;                          // a staging tile: half of a group
constexpr int kGwTiles = kGwGroups * 2;
constexpr int kGwWarpCols = kGwTileCols / kGwComputeWarps;  // columns of a tile per compute warp
constexpr int kGwBatchRows = 16;  // one k16 step of the GEMM (see the kernel for its second step)
// Pitches (bf16 elements) that put the 8 rows of an ldmatrix or of a fragment store in distinct
// banks: 6160, 3088 and 304 bytes.
constexpr int kGwSPitch = kK + 8;
constexpr int kGwTilePitch = kGwTileCols + 8;
constexpr int kGwGPitch = kGwRows + 8;
// Named barriers (0 is __syncthreads): tile b full (compute -> store warps), tile b free.
constexpr int kGwFull = 1;
constexpr int kGwFree = 3;
static_assert(kN % kGwRows == 0 && kGwWarpCols % 64 == 0 && 16 * kGwTileCols / 8 % kGwStoreThreads == 0 &&
              kGradWSmallMaxB == kGwBatchRows);

struct GradWSmem {
  bf16 s[kGwBatchRows][kGwSPitch];      // SiLU(temb); rows >= B zero
  bf16 out[2][16][kGwTilePitch];         // staging tiles
  bf16 g[kGwBatchRows][kGwGPitch];      // grad_out[:, n0 .. n0 + 143]; rows >= B zero
};

// The backward's last outputs, written by a grad_weight kernel's kThreads compute threads (`t` their
// index) while its store warps write the last tiles: grad_bias of the CTA's kGwRows columns from n0,
// from grad_out in shared memory (g[b][c] = grad_out[b, n0 + c]), and this CTA's share of the d_temb
// combine (the d_temb kernel launched before has completed: the kernels await prior grids first),
// kCombineVec elements per thread and step with all their loads in flight (dtemb_combine_vec).
static_assert(kK % kCombineVec == 0, "grad_temb's count B * K is a multiple of the combine's vector");
template <int kThreads>
__device__ __forceinline__ void finish_backward(const Finish& fin, const bf16 (*g)[kGwGPitch], int B, int n0, int t) {
  for (int c = t; c < kGwRows; c += kThreads)
    static_cast<bf16*>(fin.grad_bias)[n0 + c] =
        round_to<bf16>(grad_bias_column([&](int b) { return load_f32(&g[b][c]); }, B));
  const std::int64_t count = static_cast<std::int64_t>(B) * kK;
  for (std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * kThreads + t) * kCombineVec; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * kThreads * kCombineVec)
    dtemb_combine_vec(fin.partial, static_cast<const bf16*>(fin.temb), static_cast<bf16*>(fin.grad_temb), count, i);
}

// One staging tile (kRows x kCols, row pitch kPitch) stored to grad_weight from `dst` (row stride K)
// in address order, 16 bytes per thread and step, by the kThreads store threads (`ts` their index),
// kUnroll steps unrolled.
template <int kRows, int kCols, int kPitch, int kThreads, int kUnroll = kRows * (kCols / 8) / kThreads>
__device__ __forceinline__ void store_tile(bf16* dst, const bf16* tile, int ts) {
  constexpr int kRowChunks = kCols / 8;  // 16-byte pieces of a tile row
  static_assert(kCols % 8 == 0 && kRows * kRowChunks % kThreads == 0);
#pragma unroll kUnroll
  for (int i = 0; i < kRows * kRowChunks / kThreads; ++i) {
    const int idx = i * kThreads + ts;
    const int r = idx / kRowChunks;
    const int c = idx % kRowChunks * 8;
    *reinterpret_cast<uint4*>(dst + static_cast<std::int64_t>(r) * kK + c) =
        *reinterpret_cast<const uint4*>(tile + r * kPitch + c);
  }
}

__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// `s_or_temb` is s (computed by silu_kernel) when `silu_done`, else temb, turned into s here.
// Its compute warps also do backward_finish_kernel's work once their last tile is handed over.
__global__ void __launch_bounds__(kGwThreads, 1)
    grad_weight_kernel(const bf16* __restrict__ s_or_temb, bool silu_done, const bf16* __restrict__ grad_out,
                       bf16* __restrict__ grad_weight, int B, Finish fin) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  GradWSmem& sm = *reinterpret_cast<GradWSmem*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  const int n0 = blockIdx.x * kGwRows;

  await_prior_grids();
  stage_rows<kK, kGwSPitch, kGwThreads, kK>(&sm.s[0][0], s_or_temb, B, t);
  stage_rows<kGwRows, kGwGPitch, kGwThreads, kN>(&sm.g[0][0], grad_out + n0, B, t);
  cp_async_commit();
  // Batch rows B .. 15 are padding: zero, never loaded (filled while the copies are in flight).
  zero_batch_padding<1, kGwBatchRows, kGwSPitch, kGwThreads>(&sm.s, B, t);
  zero_batch_padding<1, kGwBatchRows, kGwGPitch, kGwThreads>(&sm.g, B, t);
  cp_async_wait<0>();
  if (!silu_done) {
    __syncthreads();
    for (int idx = t; idx < B * kK; idx += kGwThreads) {
      bf16& v = sm.s[idx / kK][idx % kK];
      v = round_to<bf16>(silu_f32(load_f32(&v)));
    }
  }
  __syncthreads();

  if (warp < kGwComputeWarps) {
    const int jl = lane >> 3;
    const int g = lane >> 2;
    const int tq = lane & 3;
    for (int tile = 0; tile < kGwTiles; ++tile) {
      const int buf = tile & 1;
      const int group = tile / 2;
      const int col0 = (tile & 1) * kGwTileCols + warp * kGwWarpCols;  // in s and grad_weight
      if (tile >= 2) bar_sync(kGwFree + buf, kGwThreads);
      // A: 16 rows n of grad_out^T by 16 batch rows, as the GEMM loads its [r][m] tile.
      std::uint32_t af[4];
      ldmatrix_x4_trans(af, &sm.g[0][0] + ((lane & 7) + (jl >> 1) * 8) * kGwGPitch + group * 16 + (jl & 1) * 8);
#pragma unroll
      for (int sub = 0; sub < kGwWarpCols / 64; ++sub) {
        // One mma.sync k16 step over batch rows 0 .. 15 from a zero accumulator. The GEMM's
        // second step (rows 16 .. 31, zero for B <= 16) adds exact zero products to it, which
        // changes no value this step can produce: a finite sum keeps its bits (nothing to
        // align or round), +0 stays +0 (-0 cannot arise: the accumulator starts at +0 and the
        // sum is rounded to nearest), infinities and the tensor core's NaN stay as they are. So
        // it is not run.
        const int c0 = col0 + sub * 64;
        float acc[8][4] = {};
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          // B: s as the GEMM loads its [r][c] tile.
          std::uint32_t bfr[4];
          ldmatrix_x4_trans(bfr, &sm.s[0][0] + ((lane & 7) + (jl & 1) * 8) * kGwSPitch + c0 + h * 16 + (jl >> 1) * 8);
          mma_bf16(acc[2 * h], af, bfr[0], bfr[1]);
          mma_bf16(acc[2 * h + 1], af, bfr[2], bfr[3]);
        }
        const int tc = c0 - (tile & 1) * kGwTileCols;
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int half = 0; half < 2; ++half)
            *reinterpret_cast<__nv_bfloat162*>(&sm.out[buf][g + half * 8][tc + j * 8 + tq * 2]) =
                __floats2bfloat162_rn(acc[j][half * 2], acc[j][half * 2 + 1]);
      }
      bar_arrive(kGwFull + buf, kGwThreads);
    }
    finish_backward<kGwComputeThreads>(fin, sm.g, B, n0, t);
  } else {
    const int ts = t - kGwComputeWarps * 32;
    for (int tile = 0; tile < kGwTiles; ++tile) {
      const int buf = tile & 1;
      bar_sync(kGwFull + buf, kGwThreads);
      store_tile<16, kGwTileCols, kGwTilePitch, kGwStoreThreads>(
          grad_weight + static_cast<std::int64_t>(n0 + tile / 2 * 16) * kK + (tile & 1) * kGwTileCols, &sm.out[buf][0][0],
          ts);
      if (tile + 2 < kGwTiles) bar_arrive(kGwFree + buf, kGwThreads);
    }
  }
  release_dependent_grids();
}

// grad_weight for kGradWSmallMaxB < B <= kGradWMaxB: the same write in address order, from tiles of all
// 144 rows x kGmCols columns. s (B rows, up to 32) does not fit beside two staging tiles of the
// kernel above, so it streams in chunks of kGmCols columns through kGmSStages buffers. Each
// compute warp keeps the grad_out^T fragments of its 48 rows in registers for the whole kernel
// and uses each s fragment for three m16 groups; the compute warps fill one of two staging tiles
// while the store warps write the other out, as above. (Measured on an H200,
// docs/notes/cuda-kernels.md, sixteenth session: from B = 17 to 32, two k16 steps, 2-5 us faster
// than the ping-pong GEMM in the whole backward; a version with up to four steps was slower from
// B = 40 on, each step adding ~5 us that the stores did not hide.)
constexpr int kGmBatchRows = kGradWMaxB;  // two k16 steps (kGmSteps), the mma.sync GEMM's r-tile
constexpr int kGmSteps = kGmBatchRows / 16;
constexpr int kGmRowSets = 3;             // 48 rows (three m16 groups) per compute warp
constexpr int kGmColSets = 4;
constexpr int kGmComputeWarps = kGmRowSets * kGmColSets;
constexpr int kGmStoreWarps = 4;
constexpr int kGmComputeThreads = kGmComputeWarps * 32;
constexpr int kGmStoreThreads = kGmStoreWarps * 32;
constexpr int kGmThreads = kGmComputeThreads + kGmStoreThreads;
constexpr int kGmSetRows = kGwRows / kGmRowSets;
constexpr int kGmCols = 128;                      // a tile, and an s chunk
constexpr int kGmTiles = kK / kGmCols;
constexpr int kGmWarpCols = kGmCols / kGmColSets;  // 32: two 16-column sub-tiles
constexpr int kGmSStages = 3;
// 272-byte rows: the 8 rows of an ldmatrix or of a fragment store in distinct banks.
constexpr int kGmPitch = kGmCols + 8;
constexpr int kGmOutBufs = 2;  // staging tiles
// Named barriers: staging tile b full (compute -> store warps), tile b free, and the compute warps
// alone (an s chunk landed and the oldest consumed).
constexpr int kGmFull = 1;
constexpr int kGmFree = kGmFull + kGmOutBufs;
constexpr int kGmComputeBar = kGmFree + kGmOutBufs;
static_assert(kGwRows % kGmRowSets == 0 && kGmSetRows == 48 && kK % kGmCols == 0 && kGmWarpCols == 32 &&
              kGwRows * kGmCols / 8 % kGmStoreThreads == 0 && kGmBatchRows % 16 == 0 && kGradWSmallMaxB == 16);

struct GradWMidSmem {
  bf16 s[kGmSStages][kGmBatchRows][kGmPitch];  // s chunks; rows >= B zero
  bf16 out[kGmOutBufs][kGwRows][kGmPitch];      // staging tiles
  bf16 g[kGmBatchRows][kGwGPitch];             // grad_out[:, n0 .. n0 + 143]; rows B .. zero
};

// s is silu_kernel's.
__global__ void __launch_bounds__(kGmThreads, 1)
    grad_weight_mid_kernel(const bf16* __restrict__ s, const bf16* __restrict__ grad_out,
                           bf16* __restrict__ grad_weight, int B, Finish fin) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  GradWMidSmem& sm = *reinterpret_cast<GradWMidSmem*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  const int n0 = blockIdx.x * kGwRows;
  const bool compute = warp < kGmComputeWarps;
  auto issue_chunk = [&](int chunk) {
    if (chunk < kGmTiles)
      stage_rows<kGmCols, kGmPitch, kGmComputeThreads, kK>(&sm.s[chunk % kGmSStages][0][0], s + chunk * kGmCols, B, t);
    cp_async_commit();
  };

  await_prior_grids();
  stage_rows<kGwRows, kGwGPitch, kGmThreads, kN>(&sm.g[0][0], grad_out + n0, B, t);
  cp_async_commit();
  if (compute) {
    issue_chunk(0);
    issue_chunk(1);
  }
  // Batch rows B .. kGmBatchRows - 1 are padding: zero, never loaded (filled while the copies fly).
  zero_batch_padding<1, kGmBatchRows, kGwGPitch, kGmThreads>(&sm.g, B, t);
  zero_batch_padding<kGmSStages, kGmBatchRows, kGmPitch, kGmThreads>(sm.s, B, t);
  if (compute)
    cp_async_wait<2>();  // grad_out's group (the two s chunks may still fly)
  else
    cp_async_wait<0>();
  __syncthreads();

  if (compute) {
    const int jl = lane >> 3;
    const int g = lane >> 2;
    const int tq = lane & 3;
    const int set_row0 = warp / kGmColSets * kGmSetRows;
    const int warp_col0 = warp % kGmColSets * kGmWarpCols;
    // A: grad_out^T, 16 rows n by 16 batch rows per step, as the GEMM loads its [r][m] tile; the
    // warp's three groups for every step, held for the whole kernel.
    std::uint32_t af[kGmRowSets][kGmSteps][4];
#pragma unroll
    for (int grp = 0; grp < kGmRowSets; ++grp)
#pragma unroll
      for (int ks = 0; ks < kGmSteps; ++ks)
        ldmatrix_x4_trans(af[grp][ks], &sm.g[ks * 16][0] + ((lane & 7) + (jl >> 1) * 8) * kGwGPitch + set_row0 +
                                           grp * 16 + (jl & 1) * 8);
    for (int tile = 0; tile < kGmTiles; ++tile) {
      const int buf = tile % kGmOutBufs;
      const bf16* chunk = &sm.s[tile % kGmSStages][0][0];
      cp_async_wait<1>();                         // chunk `tile`, this thread's copies
      bar_sync(kGmComputeBar, kGmComputeThreads);  // every thread's; chunk tile - 1 consumed by all
      issue_chunk(tile + 2);                       // into the buffer chunk tile - 1 used
      if (tile >= kGmOutBufs) bar_sync(kGmFree + buf, kGmThreads);
#pragma unroll
      for (int sub = 0; sub < kGmWarpCols / 16; ++sub) {
        const int c0 = warp_col0 + sub * 16;
        float acc[kGmRowSets][2][4] = {};
#pragma unroll
        for (int ks = 0; ks < kGmSteps; ++ks) {
          // B: s as the GEMM loads its [r][c] tile, used for the warp's three groups.
          std::uint32_t bfr[4];
          ldmatrix_x4_trans(bfr, chunk + (ks * 16 + (lane & 7) + (jl & 1) * 8) * kGmPitch + c0 + (jl >> 1) * 8);
#pragma unroll
          for (int grp = 0; grp < kGmRowSets; ++grp) {
            mma_bf16(acc[grp][0], af[grp][ks], bfr[0], bfr[1]);
            mma_bf16(acc[grp][1], af[grp][ks], bfr[2], bfr[3]);
          }
        }
#pragma unroll
        for (int grp = 0; grp < kGmRowSets; ++grp)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int half = 0; half < 2; ++half)
              *reinterpret_cast<__nv_bfloat162*>(&sm.out[buf][set_row0 + grp * 16 + g + half * 8][c0 + j * 8 + tq * 2]) =
                  __floats2bfloat162_rn(acc[grp][j][half * 2], acc[grp][j][half * 2 + 1]);
      }
      bar_arrive(kGmFull + buf, kGmThreads);
    }
    cp_async_wait<0>();
    finish_backward<kGmComputeThreads>(fin, sm.g, B, n0, t);
  } else {
    const int ts = t - kGmComputeThreads;
    for (int tile = 0; tile < kGmTiles; ++tile) {
      const int buf = tile % kGmOutBufs;
      bar_sync(kGmFull + buf, kGmThreads);
      store_tile<kGwRows, kGmCols, kGmPitch, kGmStoreThreads, 6>(grad_weight + static_cast<std::int64_t>(n0) * kK + tile * kGmCols,
                                                             &sm.out[buf][0][0], ts);
      if (tile + kGmOutBufs < kGmTiles) bar_arrive(kGmFree + buf, kGmThreads);
    }
  }
  release_dependent_grids();
}

}  // namespace

cudaError_t fits_current_device(bool* fits) { return launch::fits(sizeof(Smem), fits); }

cudaError_t grad_weight_fits_current_device(bool* fits) {
  return launch::fits(sizeof(GradWSmem) > sizeof(GradWMidSmem) ? sizeof(GradWSmem) : sizeof(GradWMidSmem), fits);
}

cudaError_t dtemb_fits_current_device(bool* fits) { return launch::fits(sizeof(DTembSmem), fits); }

cudaError_t dtemb_partials(int B, const void* weight, const void* grad_out, float* partial, cudaStream_t stream) {
  if (B < 1 || B > kDTembMaxB) return cudaErrorInvalidValue;
  constexpr std::size_t smem = sizeof(DTembSmem);
  if (const cudaError_t err = launch::allow_smem<dtemb_kernel>(smem); err != cudaSuccess) return err;
  return launch::kernel<dtemb_kernel>(kSplitN * (kK / kDtCols), kDtThreads, smem, stream,
                                      static_cast<const bf16*>(weight), static_cast<const bf16*>(grad_out), partial,
                                      B);
}

cudaError_t forward(int B, const void* temb, const void* weight, const void* bias, void* out,
                    cudaStream_t stream) {
  if (B < 1 || B > kMaxB) return cudaErrorInvalidValue;
  constexpr std::size_t smem = sizeof(Smem);
  if (const cudaError_t err = launch::allow_smem<forward_kernel>(smem); err != cudaSuccess) return err;
  return launch::kernel<forward_kernel>(kN / kRows, kThreads, smem, stream, static_cast<const bf16*>(temb),
                                        static_cast<const bf16*>(weight), static_cast<const bf16*>(bias),
                                        static_cast<bf16*>(out), B);
}

cudaError_t grad_weight(int B, const void* s_or_temb, bool silu_done, const void* grad_out, void* grad_weight,
                        const Finish& finish, cudaStream_t stream) {
  if (B < 1 || B > kGradWMaxB || (B > kGradWSmallMaxB && !silu_done)) return cudaErrorInvalidValue;
  if (B > kGradWSmallMaxB) {
    constexpr std::size_t smem = sizeof(GradWMidSmem);
    if (const cudaError_t err = launch::allow_smem<grad_weight_mid_kernel>(smem); err != cudaSuccess) return err;
    return launch::kernel<grad_weight_mid_kernel>(kN / kGwRows, kGmThreads, smem, stream,
                                                  static_cast<const bf16*>(s_or_temb), static_cast<const bf16*>(grad_out),
                                                  static_cast<bf16*>(grad_weight), B, finish);
  }
  constexpr std::size_t smem = sizeof(GradWSmem);
  if (const cudaError_t err = launch::allow_smem<grad_weight_kernel>(smem); err != cudaSuccess) return err;
  return launch::kernel<grad_weight_kernel>(kN / kGwRows, kGwThreads, smem, stream, static_cast<const bf16*>(s_or_temb),
                                            silu_done, static_cast<const bf16*>(grad_out), static_cast<bf16*>(grad_weight),
                                            B, finish);
}

}  // namespace rlk::cuda::qwenimage::bf16_stream
