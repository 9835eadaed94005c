// Streaming bf16 kernels for small batches (see adaln_mod_projection_bf16_stream.hpp).
//
// Each output keeps the arithmetic of the mma.sync GEMMs (mma:: in
// adaln_mod_projection_kernels.cu), element by element:
//   s[b,k]    round_to<bf16>(silu_f32(temb[b,k])), as silu_kernel.
//   y[b,n]    acc = 0; one mma.sync m16n8k16 step per 16 k, k ascending over all 3072;
//             y = round_to<bf16>(acc + bias[n]) (FP32 add, one rounding).
//   pt[z,b,k] acc = 0; one mma.sync m16n8k16 step per 16 rows n, ascending over slice z's
//             N / kSplitN rows; stored as FP32 (dtemb_combine adds the slices, in
//             grad_weight_kernel below or backward_finish_kernel).
//   gt[b,k], gb[n]  dtemb_combine and grad_bias_column (adaln_mod_projection_device.cuh), the
//             arithmetic of backward_finish_kernel, in grad_weight_kernel.
//   gw[n,k]   acc = 0; one mma.sync m16n8k16 step per 16 batch rows, ascending over the
//             GEMM's r-tile of 32 rows (rows >= B zero); gw = round_to<bf16>(acc).
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

// Rows B .. kRows - 1 of each of kStages stage tiles hold batch padding: zeroed once by the kThreads
// threads of the block (`t` is the caller's thread index), never loaded.
template <int kStages, int kRows, int kPitch, int kThreads>
__device__ __forceinline__ void zero_batch_padding(bf16 (*tiles)[kRows][kPitch], int B, int t) {
  for (int idx = t; idx < kStages * (kRows - B) * kPitch; idx += kThreads) {
    const int slot = idx / ((kRows - B) * kPitch);
    const int rest = idx % ((kRows - B) * kPitch);
    tiles[slot][B + rest / kPitch][rest % kPitch] = round_to<bf16>(0.0f);
  }
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
    dtemb_kernel(const bf16* __restrict__ W, const bf16* __restrict__ grad_out, float* __restrict__ partial, int B,
                 unsigned* __restrict__ claims_counter) {
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
  if (claims_counter != nullptr) {
    // The grad_weight kernel's tile counter, zeroed before this grid lets that one start, which
    // it does here rather than after the main loop, so that grad_weight's CTAs take the SMs that
    // this grid's CTAs leave (grad_weight_kernel says why a stale counter is harmless there).
    if (blockIdx.x == 0 && t == 0) {
      atomicExch(claims_counter, 0u);
      __threadfence();
    }
    __syncthreads();
    device::release_dependent_grids();
  }
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

// grad_weight, in 2304 tiles of 16 rows x 1536 columns (half of a 16-row group). At small B the
// kernel is one write of 113 MB, which only runs at the copy ceiling with stores in flight all
// the time: the compute warps fill one of two staging tiles while the store warps write the other
// out in address order, the tiles handed over with named barriers. s stays in shared memory for
// the whole kernel; each tile's 16 columns of grad_out come through a ring, kGwGAhead tiles
// ahead, and each tile is claimed kGwClaimAhead tiles ahead (both hide a memory latency that
// grows under the kernel's own stores beyond one tile's store time). Which CTA computes a tile changes none of its bytes, so the tiles are handed out two
// ways: a fixed share (CTA i takes tiles 18 i .. 18 i + 17, 144 rows), or claimed at run time
// from a counter (TileClaims) by one CTA per SM, so that CTAs that start early (on the SMs the
// d_temb kernel leaves idle or leaves first) or run on SMs that move data faster take more tiles
// and the CTAs end together instead of each with its share.
// (Measured on an H200, docs/notes/cuda-kernels.md: warps that computed a group and then stored
// it took 37-39 us at B = 1, four store warps beside compute warps that held s in registers
// 35 us, the mma.sync GEMM 36 us, 16-byte stores alone 27 us.)
constexpr int kGwComputeWarps = 8;
constexpr int kGwStoreWarps = 8;
constexpr int kGwThreads = (kGwComputeWarps + kGwStoreWarps) * 32;
constexpr int kGwStoreThreads = kGwStoreWarps * 32;
constexpr int kGwComputeThreads = kGwComputeWarps * 32;
constexpr int kGwTileCols = kK / 2;                          // a tile: half of a 16-row group
constexpr int kGwTiles = kN / 16 * 2;
constexpr int kGwShare = 18;                                 // tiles per CTA with a fixed share
constexpr int kGwWarpCols = kGwTileCols / kGwComputeWarps;  // columns of a tile per compute warp
constexpr int kGwBatchRows = 16;  // one k16 step of the GEMM (see the kernel for its second step)
// Pitches (bf16 elements) that put the 8 rows of an ldmatrix or of a fragment store in distinct
// banks: 6160, 3088 and 48 bytes.
constexpr int kGwSPitch = kK + 8;
constexpr int kGwTilePitch = kGwTileCols + 8;
constexpr int kGwGPitch = 16 + 8;
// Named barriers (0 is __syncthreads): staging tile b full (compute -> store warps), tile b free,
// and one among the compute warps.
constexpr int kGwFull = 1;
constexpr int kGwFree = 3;
constexpr int kGwCompute = 5;
constexpr int kGwGAhead = 3;
constexpr int kGwClaimAhead = 4;
static_assert(kGwTiles % kGwShare == 0 && kGwWarpCols % 64 == 0 && 16 * kGwTileCols / 8 % kGwStoreThreads == 0 &&
              kGradWMaxB == kGwBatchRows && 2 * kGwBatchRows <= kGwComputeThreads);

struct GradWSmem {
  bf16 s[kGwBatchRows][kGwSPitch];      // SiLU(temb); rows >= B zero
  bf16 out[2][16][kGwTilePitch];         // staging tiles
  bf16 g[kGwGAhead + 1][kGwBatchRows][kGwGPitch];  // grad_out[:, a tile's 16 rows n]; rows >= B zero
  int claimed[kGwClaimAhead + 1];                   // the tile of iteration i in slot i % (kGwClaimAhead + 1)
  int staged[2];                         // the tile in each staging tile; -1: no more
};

__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The next tile of a CTA's sequence (kGwTiles: none left). With a counter, `v` is what one
// atomicAdd on it returned. The d_temb kernel before this one zeroes the counter before this
// grid may start, and nothing orders that store before this grid's first atomics except that
// grid's completion, which device::await_prior_grids() waits for. So a value is trusted as
// "none left" only once this thread has waited: before, a stale counter can only hand out a
// tile twice (computed twice, the same bytes stored twice) or too few, which the wait and a
// fresh claim then put right; after the wait, the claims count from zero, every tile < kGwTiles
// goes to exactly one of them, and every CTA claims until one says none are left.
__device__ __forceinline__ int next_tile(unsigned v, unsigned* counter, bool& waited) {
  while (v >= static_cast<unsigned>(kGwTiles) && !waited) {
    device::await_prior_grids();
    waited = true;
    v = atomicAdd(counter, 1u);
  }
  return v < static_cast<unsigned>(kGwTiles) ? static_cast<int>(v) : kGwTiles;
}

// `s_or_temb` is s (computed by silu_kernel) when `silu_done`, else temb, turned into s here.
// Its compute warps also do backward_finish_kernel's work: grad_bias with each tile of the first
// half of a group, grad_temb (the d_temb combine) after their last tile. Without a counter the
// kernel waits for the grids before it first, as every kernel here; with one it reads only its
// inputs (temb or s, grad_out) before that wait, which the d_temb kernel launched before it made
// safe by waiting for the grids before it first (this grid starts only once every d_temb CTA has
// passed its wait), and waits before the combine reads the d_temb partials.
__global__ void __launch_bounds__(kGwThreads, 1)
    grad_weight_kernel(const bf16* __restrict__ s_or_temb, bool silu_done, const bf16* __restrict__ grad_out,
                       bf16* __restrict__ grad_weight, int B, Finish fin, unsigned* __restrict__ counter) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  GradWSmem& sm = *reinterpret_cast<GradWSmem*>(smem_raw);
  const int t = threadIdx.x;
  const int warp = t / 32;
  const int lane = t % 32;
  bool waited = counter == nullptr;
  int share = 0;  // thread 0, fixed share: tiles of it claimed so far
  // Thread 0: the tile that a claim returned (`v`, with a counter) or the next of the share.
  auto claimed = [&](unsigned v) -> int {
    if (counter != nullptr) return next_tile(v, counter, waited);
    const int i = share++;
    return i < kGwShare ? static_cast<int>(blockIdx.x) * kGwShare + i : kGwTiles;
  };
  // grad_out[b][16 rows n of `tile`] for b < B into ring slot `slot`, as the GEMM's [r][m] tile.
  auto stage_g = [&](int tile, int slot) {
    if (tile < kGwTiles && t < 2 * B)
      cp_async16(&sm.g[slot][t / 2][t % 2 * 8], grad_out + static_cast<std::int64_t>(t / 2) * kN + tile / 2 * 16 + t % 2 * 8);
    cp_async_commit();
  };
  constexpr int kC = kGwClaimAhead + 1, kG = kGwGAhead + 1;  // ring sizes

  if (waited) device::await_prior_grids();
  // The first claims go out first; their answers come back while s loads.
  unsigned first[kGwClaimAhead] = {};
  if (t == 0 && counter != nullptr) {
#pragma unroll
    for (int j = 0; j < kGwClaimAhead; ++j) first[j] = atomicAdd(counter, 1u);
  }
  stage_rows<kK, kGwSPitch, kGwThreads, kK>(&sm.s[0][0], s_or_temb, B, t);
  cp_async_commit();
  // Batch rows B .. 15 are padding: zero, never loaded (filled while the copies are in flight).
  for (int idx = t; idx < (kGwBatchRows - B) * kGwSPitch / 8; idx += kGwThreads)
    reinterpret_cast<uint4*>(&sm.s[B][0])[idx] = make_uint4(0u, 0u, 0u, 0u);
  for (int idx = t; idx < kG * (kGwBatchRows - B) * kGwGPitch / 8; idx += kGwThreads) {
    const int slot = idx / ((kGwBatchRows - B) * kGwGPitch / 8);
    reinterpret_cast<uint4*>(&sm.g[slot][B][0])[idx % ((kGwBatchRows - B) * kGwGPitch / 8)] = make_uint4(0u, 0u, 0u, 0u);
  }
  if (t == 0) {
#pragma unroll
    for (int j = 0; j < kGwClaimAhead; ++j) sm.claimed[j] = claimed(first[j]);
  }
  __syncthreads();  // the first claims are visible
  if (warp < kGwComputeWarps) {  // the first tiles' grad_out, in flight during the SiLU
    for (int j = 0; j < kGwGAhead; ++j) stage_g(sm.claimed[j], j);
    cp_async_wait<kGwGAhead>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();  // s landed
  if (!silu_done) {
    for (int idx = t; idx < B * kK; idx += kGwThreads) {
      bf16& v = sm.s[idx / kK][idx % kK];
      v = round_to<bf16>(silu_f32(load_f32(&v)));
    }
    __syncthreads();
  }

  if (warp < kGwComputeWarps) {
    const int jl = lane >> 3;
    const int g = lane >> 2;
    const int tq = lane & 3;
    for (int i = 0;; ++i) {
      const int buf = i & 1;
      const int tile = sm.claimed[i % kC];
      // Thread 0 starts the claim of iteration i + kGwClaimAhead's tile (needed at this one's end).
      const unsigned ahead = t == 0 && counter != nullptr ? atomicAdd(counter, 1u) : 0u;
      stage_g(sm.claimed[(i + kGwGAhead) % kC], (i + kGwGAhead) % kG);
      cp_async_wait<kGwGAhead>();
      bar_sync(kGwCompute, kGwComputeThreads);  // this tile's grad_out landed for every thread
      if (tile >= kGwTiles) {
        // This CTA's share of the d_temb combine, once the d_temb kernel launched before this
        // one has completed, while the store warps write the last tiles; then their end.
        if (counter != nullptr) device::await_prior_grids();
        const std::int64_t count = static_cast<std::int64_t>(B) * kK;
        for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * kGwComputeThreads + t; e < count;
             e += static_cast<std::int64_t>(gridDim.x) * kGwComputeThreads)
          dtemb_combine(fin.partial, static_cast<const bf16*>(fin.temb), static_cast<bf16*>(fin.grad_temb), count, e);
        if (i >= 2) bar_sync(kGwFree + buf, kGwThreads);
        if (t == 0) sm.staged[buf] = -1;
        bar_arrive(kGwFull + buf, kGwThreads);
        if (i >= 1) bar_sync(kGwFree + (buf ^ 1), kGwThreads);  // the store warps are done with tile i - 1
        break;
      }
      if (i >= 2) bar_sync(kGwFree + buf, kGwThreads);  // the store warps are done with tile i - 2
      const bf16* tg = &sm.g[i % kG][0][0];
      const int col0 = (tile & 1) * kGwTileCols + warp * kGwWarpCols;  // in s and grad_weight
      // A: 16 rows n of grad_out^T by 16 batch rows, as the GEMM loads its [r][m] tile.
      std::uint32_t af[4];
      ldmatrix_x4_trans(af, tg + ((lane & 7) + (jl >> 1) * 8) * kGwGPitch + (jl & 1) * 8);
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
      if (t == 0) sm.staged[buf] = tile;
      bar_arrive(kGwFull + buf, kGwThreads);
      // grad_bias of the tile's 16 rows n (once per group), while the store warps write it.
      if ((tile & 1) == 0 && t < 16)
        static_cast<bf16*>(fin.grad_bias)[tile / 2 * 16 + t] =
            round_to<bf16>(grad_bias_column([&](int b) { return load_f32(&tg[b * kGwGPitch + t]); }, B));
      if (t == 0) sm.claimed[(i + kGwClaimAhead) % kC] = claimed(ahead);
      bar_sync(kGwCompute, kGwComputeThreads);  // the claim is visible; grad_out slot i % kG is free
    }
  } else {
    const int ts = t - kGwComputeWarps * 32;
    constexpr int kRowChunks = kGwTileCols / 8;  // 16-byte pieces of a tile row
    for (int i = 0;; ++i) {
      const int buf = i & 1;
      bar_sync(kGwFull + buf, kGwThreads);
      const int tile = sm.staged[buf];
      if (tile < 0) break;
      bf16* dst = grad_weight + static_cast<std::int64_t>(tile / 2 * 16) * kK + (tile & 1) * kGwTileCols;
#pragma unroll
      for (int j = 0; j < 16 * kRowChunks / kGwStoreThreads; ++j) {
        const int idx = j * kGwStoreThreads + ts;
        const int r = idx / kRowChunks;
        const int c = idx % kRowChunks * 8;
        *reinterpret_cast<uint4*>(dst + static_cast<std::int64_t>(r) * kK + c) =
            *reinterpret_cast<const uint4*>(&sm.out[buf][r][c]);
      }
      bar_arrive(kGwFree + buf, kGwThreads);
    }
  }
  release_dependent_grids();
}

}  // namespace

cudaError_t fits_current_device(bool* fits) { return launch::fits(sizeof(Smem), fits); }

cudaError_t grad_weight_fits_current_device(bool* fits) { return launch::fits(sizeof(GradWSmem), fits); }

cudaError_t dtemb_fits_current_device(bool* fits) { return launch::fits(sizeof(DTembSmem), fits); }

cudaError_t dtemb_partials(int B, const void* weight, const void* grad_out, float* partial, cudaStream_t stream,
                           TileClaims claims) {
  if (B < 1 || B > kDTembMaxB) return cudaErrorInvalidValue;
  constexpr std::size_t smem = sizeof(DTembSmem);
  if (const cudaError_t err = launch::allow_smem<dtemb_kernel>(smem); err != cudaSuccess) return err;
  return launch::kernel<dtemb_kernel>(kSplitN * (kK / kDtCols), kDtThreads, smem, stream,
                                      static_cast<const bf16*>(weight), static_cast<const bf16*>(grad_out), partial,
                                      B, claims.counter);
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
                        const Finish& finish, cudaStream_t stream, TileClaims claims) {
  if (B < 1 || B > kGradWMaxB) return cudaErrorInvalidValue;
  constexpr std::size_t smem = sizeof(GradWSmem);
  if (const cudaError_t err = launch::allow_smem<grad_weight_kernel>(smem); err != cudaSuccess) return err;
  int ctas = kGwTiles / kGwShare;  // a fixed share each; with claims, one CTA per SM
  if (claims.counter != nullptr) {
    if (const cudaError_t err = launch::attribute<cudaDevAttrMultiProcessorCount>(&ctas); err != cudaSuccess)
      return err;
  }
  return launch::kernel<grad_weight_kernel>(ctas, kGwThreads, smem, stream, static_cast<const bf16*>(s_or_temb),
                                            silu_done, static_cast<const bf16*>(grad_out), static_cast<bf16*>(grad_weight),
                                            B, finish, claims.counter);
}

}  // namespace rlk::cuda::qwenimage::bf16_stream
