// CUDA kernels for qwenimage_adaln_mod_projection: y = SiLU(temb) @ W^T + b and its backward.
//
// Batch invariance comes from the structure, not from tuning: every launch below uses tile
// shapes, split counts and reduction orders that are compile-time constants per storage dtype.
// B only changes how many tiles are launched and which loaded rows are zero-filled, never the
// order in which any single output element is accumulated. Rows beyond B contribute exact
// zeros (zero-filled operand rows), and warps skip matrix instructions whose output columns all
// lie beyond B; neither changes the accumulation sequence of a valid element.
//
// The bf16 GEMMs exist twice: mma.sync here (every architecture) and wgmma in
// adaln_mod_projection_sm90.cu (sm_90a), and for the forward and d_temb at B <= 8 and grad_weight
// at B <= 16 a third time as the streaming kernels of adaln_mod_projection_bf16_stream.cu; which
// runs may depend on B (resolve_bf16() below) because all give the same bytes: each element is
// the same chain of k16 tensor-core steps into one FP32 accumulator
// (tests/cuda/test_kernel_paths.cpp checks it).
// The fp32 forward runs on tensor cores, the 3xTF32 chains of adaln_mod_projection_fp32_tf32x3.cu
// (one mma.sync kernel template in four tilings, and from B = 17 on sm_90a the wgmma kernel of
// adaln_mod_projection_sm90_tf32x3.cu in three tilings; chosen by B, the same bytes whichever runs). The fp32
// backward's two GEMMs are the same 3xTF32 chains: on sm_90a the wgmma kernel (d_temb in five
// tilings, grad_weight in one), elsewhere mma.sync kernels (tf32x3::dtemb_partials,
// tf32x3::grad_weight); tests/cuda/test_kernel_paths.cpp compares them.
//
// Reductions (all in ascending order, no atomics). "r-tile" is the op's fixed reduction tile
// (bf16: mma::*Config::BR, then k16 MMA steps inside it; fp32: the 3xTF32 chunk of 32):
//   forward   y[b,n]   bf16: over k, r-tile by r-tile, into one FP32 accumulator; + bias in FP32.
//                      fp32: see adaln_mod_projection_fp32_tf32x3.cu.
//   d_temb    g[b,k]   over n: kSplitN fixed slices of N / kSplitN, each r-tile by r-tile (fp32: the
//                      3xTF32 chain over the slice);
//                      FP32 partials in the workspace, combined in ascending slice order by
//                      dtemb_combine (in backward_finish_kernel, or in the streaming bf16
//                      grad_weight kernel that replaces it), which also applies silu'.
//   grad_w    gw[n,k]  over b in r-tile-row chunks starting at row 0 (a partial chunk is
//                      zero-filled). bf16: the chunks accumulate in the MMA accumulator. fp32:
//                      the 3xTF32 chain over b (chunks of 32 rows, each in a fresh tensor-core
//                      accumulator added into one FP32 sum).
//   grad_b    gb[n]    over b in kBiasChunk-row chunks (see grad_bias_block), compensated.
// Every output is rounded to storage exactly once, at the end (round-to-nearest-even).
#include "adaln_mod_projection_kernels.hpp"
#include "adaln_mod_projection_bf16_stream.hpp"
#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_fp32_tf32x3.hpp"
#include "adaln_mod_projection_launch.hpp"
#include "adaln_mod_projection_sm90.hpp"
#include "adaln_mod_projection_tf32.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace rlk::cuda::qwenimage {
namespace {

using namespace device;

// Eight consecutive elements per thread (device::kSiluVec; count is a multiple of 8: K = 3072).

constexpr int kSiluThreads = 256;

// Elements from count up to padded are written as zeros (the rows the wgmma forward tiles read
// past B: sm90::forward_silu_rows).
template <class T>
__global__ void __launch_bounds__(kSiluThreads) silu_kernel(const T* __restrict__ temb, T* __restrict__ s,
                                                             std::int64_t count, std::int64_t padded) {
  await_prior_grids();
  const std::int64_t i =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kSiluVec;
  if (i < count) {
    silu_piece(temb, s, i);
  } else if (i < padded) {
    static_assert(kSiluVec * sizeof(T) % sizeof(uint4) == 0, "whole 16-byte stores");
    for (int v = 0; v < static_cast<int>(kSiluVec * sizeof(T) / sizeof(uint4)); ++v)
      reinterpret_cast<uint4*>(s + i)[v] = make_uint4(0, 0, 0, 0);
  }
}

// The contract's two truncated TF32 pieces (tf32_cut) of fp32 s = SiLU(temb) (kSilu: the wgmma
// forward's, silu_pieces_kernel) or of x itself (grad_out, for the wgmma d_temb: fp32_backward_prep_kernel),
// elements i .. i + kSiluVec - 1, for the wgmma kernels (sm90::fp32_*_wgmma), which read them with TMA:
// the same values the mma.sync tilings cut in shared memory.
template <bool kSilu>
__device__ __forceinline__ void pieces_at(const float* __restrict__ x, float* __restrict__ hi, float* __restrict__ lo,
                                          std::int64_t count, std::int64_t i) {
  if (i >= count) return;
  struct alignas(16) Vec {
    float v[kSiluVec];
  };
  const Vec in = *reinterpret_cast<const Vec*>(x + i);
  Vec h, l;
#pragma unroll
  for (int q = 0; q < kSiluVec; ++q) {
    std::uint32_t hq, lq;
    tf32_cut(kSilu ? round_to<float>(silu_f32(in.v[q])) : in.v[q], hq, lq);
    h.v[q] = __uint_as_float(hq);
    l.v[q] = __uint_as_float(lq);
  }
  *reinterpret_cast<Vec*>(hi + i) = h;
  *reinterpret_cast<Vec*>(lo + i) = l;
}
__global__ void __launch_bounds__(kSiluThreads) silu_pieces_kernel(const float* __restrict__ x, float* __restrict__ hi,
                                                                    float* __restrict__ lo, std::int64_t count) {
  await_prior_grids();
  pieces_at<true>(x, hi, lo, count, (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kSiluVec);
}

// s's pieces transposed, s_t[k, b] ([K, ld]; zeros for B <= b < ld), for the tensor-core
// grad_weight, whose B operand must be K-major (TF32 wgmma reads no other layout): 32 x 32 tiles
// through shared memory, read along k and written along b.
constexpr int kTransposeTile = 32, kTransposeRows = 8;
// Tile (tile_b, tile_k) of them, by the kTransposeTile * kTransposeRows threads of a block (`t`).
__device__ __forceinline__ void silu_pieces_t_tile(const float* __restrict__ temb, float* __restrict__ hi,
                                                   float* __restrict__ lo, int B, int ld, int tile_b, int tile_k, int t) {
  __shared__ std::uint32_t tile[2][kTransposeTile][kTransposeTile + 1];
  const int b0 = tile_b * kTransposeTile, k0 = tile_k * kTransposeTile;
  const int tx = t % kTransposeTile, ty = t / kTransposeTile;
  for (int r = ty; r < kTransposeTile; r += kTransposeRows) {
    const int b = b0 + r;
    std::uint32_t h = 0, l = 0;
    if (b < B) tf32_cut(round_to<float>(silu_f32(temb[static_cast<std::int64_t>(b) * kK + k0 + tx])), h, l);
    tile[0][r][tx] = h;
    tile[1][r][tx] = l;
  }
  __syncthreads();
  for (int r = ty; r < kTransposeTile; r += kTransposeRows) {
    const std::int64_t at = static_cast<std::int64_t>(k0 + r) * ld + b0 + tx;
    hi[at] = __uint_as_float(tile[0][tx][r]);
    lo[at] = __uint_as_float(tile[1][tx][r]);
  }
}
// grad_bias[n]: kBiasGroups thread groups per column. Group j sums chunks j, j + kBiasGroups,
// ... (kBiasChunk rows each, ascending, fresh FP32 chunk sum folded into a TwoSum pair); the
// groups' pairs are then combined in ascending group order. Rows past B form no chunk, so
// appending zero rows adds only exact zeros. Each thread carries kBiasVec<T> adjacent columns
// through exactly that per-column arithmetic, so that a warp reads 8-byte words (which columns
// share a thread does not change any column's bytes).
constexpr int kBiasThreadsPerGroup = 32;
template <class T>
constexpr int kBiasVec = 8 / static_cast<int>(sizeof(T));  // bf16: 4 columns, fp32: 2
template <class T>
constexpr int kBiasCols = kBiasThreadsPerGroup * kBiasVec<T>;  // columns per block

constexpr int kBiasThreads = kBiasThreadsPerGroup * kBiasGroups;

// The grad_bias of block `block`'s kBiasCols<T> columns (all kBiasThreads threads take part).
template <class T>
__device__ __forceinline__ void grad_bias_block(const T* __restrict__ dy, T* __restrict__ grad_bias, int B, int N,
                                                int block) {
  constexpr int V = kBiasVec<T>;
  struct alignas(8) Vec {
    T v[V];
  };
  __shared__ float part_hi[kBiasGroups][kBiasCols<T>];
  __shared__ float part_lo[kBiasGroups][kBiasCols<T>];
  const int lane = threadIdx.x % kBiasThreadsPerGroup;
  const int grp = threadIdx.x / kBiasThreadsPerGroup;
  const int n0 = block * kBiasCols<T> + lane * V;
  float hi[V], lo[V];
#pragma unroll
  for (int q = 0; q < V; ++q) hi[q] = lo[q] = 0.0f;
  for (int b0 = grp * kBiasChunk; b0 < B; b0 += kBiasGroups * kBiasChunk) {
    const T* rows = dy + static_cast<std::int64_t>(b0) * N + n0;
    float chunk[V];
#pragma unroll
    for (int q = 0; q < V; ++q) chunk[q] = 0.0f;
    if (b0 + kBiasChunk <= B) {
      // A whole chunk: every load issued before the first add (the sums stay in row order).
      Vec x[kBiasChunk];
#pragma unroll
      for (int j = 0; j < kBiasChunk; ++j) x[j] = *reinterpret_cast<const Vec*>(rows + static_cast<std::int64_t>(j) * N);
#pragma unroll
      for (int j = 0; j < kBiasChunk; ++j)
#pragma unroll
        for (int q = 0; q < V; ++q) chunk[q] += load_f32(&x[j].v[q]);
    } else {
      for (int j = 0; b0 + j < B; ++j) {
        const Vec x = *reinterpret_cast<const Vec*>(rows + static_cast<std::int64_t>(j) * N);
#pragma unroll
        for (int q = 0; q < V; ++q) chunk[q] += load_f32(&x.v[q]);
      }
    }
#pragma unroll
    for (int q = 0; q < V; ++q) two_sum_add(hi[q], lo[q], chunk[q]);
  }
#pragma unroll
  for (int q = 0; q < V; ++q) {
    part_hi[grp][lane * V + q] = hi[q];
    part_lo[grp][lane * V + q] = lo[q];
  }
  __syncthreads();
  if (grp != 0) return;
  Vec out;
#pragma unroll
  for (int q = 0; q < V; ++q) {
    for (int g = 1; g < kBiasGroups; ++g) fold_bias_group(hi[q], lo[q], part_hi[g][lane * V + q], part_lo[g][lane * V + q]);
    out.v[q] = round_to<T>(two_sum_value(hi[q], lo[q]));
  }
  *reinterpret_cast<Vec*>(grad_bias + n0) = out;
}

// The backward's last kernel: grad_bias (blocks 0 .. kBiasBlocks<T> - 1, the longer ones, placed
// first) and the d_temb combine (the rest, one element per thread). grad_bias reads only dy, so
// it shares the launch that has to wait for the GEMMs anyway; outputs are written only after
// every GEMM was launched. Each element's arithmetic is that of grad_bias_block / dtemb_combine.
template <class T>
constexpr int kBiasBlocks = kN / kBiasCols<T>;
static_assert(kN % kBiasCols<bf16> == 0 && kN % kBiasCols<float> == 0);

template <class T>
__global__ void __launch_bounds__(kBiasThreads)
    backward_finish_kernel(const float* __restrict__ partial, const T* __restrict__ temb, T* __restrict__ grad_temb,
                           std::int64_t count, const T* __restrict__ dy, T* __restrict__ grad_bias, int B) {
  await_prior_grids();
  const int block = static_cast<int>(blockIdx.x);
  if (block < kBiasBlocks<T>) {
    grad_bias_block(dy, grad_bias, B, kN, block);
  } else {
    dtemb_combine(partial, temb, grad_temb, count,
                  static_cast<std::int64_t>(block - kBiasBlocks<T>) * kBiasThreads + threadIdx.x);
  }
}

// The fp32 backward's first kernel where both its GEMMs run on wgmma: what they read cut, in one
// launch instead of two (grad_out's pieces for d_temb: pieces_at<false>; s's transposed pieces for
// grad_weight: silu_pieces_t_tile), and, where the grad_weight kernel combines grad_temb in its
// CTAs' tails (bias_blocks = kBiasBlocks<float>, small B), grad_bias, which reads only grad_out, so
// that no finish kernel runs after the GEMMs. Blocks [0, bias_blocks) grad_bias (grad_bias_block),
// then dy_blocks of grad_out's pieces, then the transposed tiles (ld / kTransposeTile per row of
// tiles). Each element's arithmetic is that of the kernel it replaces.
static_assert(kBiasThreads == kSiluThreads && kTransposeTile * kTransposeRows == kSiluThreads);
__global__ void __launch_bounds__(kSiluThreads)
    fp32_backward_prep_kernel(const float* __restrict__ dy, float* __restrict__ dy_hi, float* __restrict__ dy_lo,
                              int dy_blocks, const float* __restrict__ temb, float* __restrict__ s_t_hi,
                              float* __restrict__ s_t_lo, int ld, float* __restrict__ grad_bias, int bias_blocks, int B) {
  await_prior_grids();
  const int block = static_cast<int>(blockIdx.x);
  if (block < bias_blocks) {
    grad_bias_block(dy, grad_bias, B, kN, block);
  } else if (block < bias_blocks + dy_blocks) {
    pieces_at<false>(dy, dy_hi, dy_lo, static_cast<std::int64_t>(B) * kN,
                     (static_cast<std::int64_t>(block - bias_blocks) * kSiluThreads + threadIdx.x) * kSiluVec);
  } else {
    const int tile = block - bias_blocks - dy_blocks, tiles_b = ld / kTransposeTile;
    silu_pieces_t_tile(temb, s_t_hi, s_t_lo, B, ld, tile % tiles_b, tile / tiles_b, threadIdx.x);
  }
  release_dependent_grids();
}

// The backward's last outputs beside the Hopper grad_weight GEMM (bf16, B > the streaming
// kernels' range): the GEMM runs on kFinishBesideSms CTAs fewer than the device has SMs and
// releases this grid at its start (sm90::gradw_gemm's leave_sms), so these blocks, as many as are
// resident at once on the SMs it leaves, read the d_temb partials and dy while grad_weight is
// computed and written, instead of after it. No wait first (adaln_mod_projection_device.cuh):
// the GEMM released this grid only after each of its CTAs had waited for the grids before it, so
// the d_temb GEMM that wrote `partial` has completed, and the GEMM still running reads and writes
// nothing this kernel touches. It waits at its end, so that the grid after it waits for the GEMM
// too. (PTX has griddepcontrol.wait wait for all prerequisite grids in flight, and on the H200 a
// build without this last wait still passed AForwardLaunchedRightAfterTheBackwardLeavesTheBackwardItsInputs,
// docs/evidence/h200-46f1925/; the wait keeps the order from resting on that reading, and costs
// nothing measurable: these blocks have no work left and their SMs no other grid.) Each element's
// arithmetic is that of grad_bias_block / dtemb_combine (dtemb_combine_vec).
//
// The SMs left: rlk bench on the H200, forward + backward against the finish after the GEMM
// (docs/notes/cuda-kernels.md, thirteenth session): 12 of 132 gained at every B measured from 17 to
// 2048 (B = 64 -3.2 us, 256 -5.8, 1024 -12.4, 2048 -17.7); 8 gained more at 128 ... 256 but lost
// at 1024 and 2048, where the finish's reads no longer fit under the GEMM; 4 lost from B = 48 on.
constexpr int kFinishBesideSms = 12;
// Its blocks per SM: all resident at once (a block placed only after the GEMM would run after it),
// each combining thread with 128 bytes of partials in flight.
constexpr int kFinishBlocksPerSm = 4;

template <class T>
__global__ void __launch_bounds__(kBiasThreads, kFinishBlocksPerSm)
    backward_finish_beside_kernel(const float* __restrict__ partial, const T* __restrict__ temb,
                                  T* __restrict__ grad_temb, std::int64_t count, const T* __restrict__ dy,
                                  T* __restrict__ grad_bias, int B) {
  for (int block = static_cast<int>(blockIdx.x); block < kBiasBlocks<T>; block += static_cast<int>(gridDim.x)) {
    grad_bias_block(dy, grad_bias, B, kN, block);
    __syncthreads();  // group 0 has read the groups' pairs before the next block writes them
  }
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kCombineVec; i < count;
       i += threads * kCombineVec)
    dtemb_combine_vec(partial, temb, grad_temb, count, i);
  await_prior_grids();
}

// ---------------------------------------------------------------------------------------------
// Shared GEMM description. Every GEMM here is C[m, c] = sum_r A(m, r) * Bop(c, r) over an
// r-range, with each operand either r-contiguous (element (i, r) at p[i*ld + r]) or
// i-contiguous (element (i, r) at p[r*ld + i]).
//   kForward: m = n (W rows), c = b, r = k.      A = W r-contig, Bop = s r-contig.
//   kDTemb:   m = k,          c = b, r = n-slice. A = W i-contig, Bop = dy r-contig.
//   kGradW:   m = n,          c = k, r = b.      A = dy i-contig, Bop = s i-contig.
// Grid: x = c-tiles (fastest, so CTAs that share an A tile run together and A streams from
// DRAM once), y = m-tiles, z = slices of r (kDTemb only).
enum class Op { kForward, kDTemb, kGradW };

template <Op op>
struct OpLayout;
template <>
struct OpLayout<Op::kForward> {
  static constexpr bool a_rcontig = true, b_rcontig = true;
};
template <>
struct OpLayout<Op::kDTemb> {
  static constexpr bool a_rcontig = false, b_rcontig = true;
};
template <>
struct OpLayout<Op::kGradW> {
  static constexpr bool a_rcontig = false, b_rcontig = false;
};

struct GemmParams {
  const void* a;
  const void* b;
  std::int64_t lda;
  std::int64_t ldb;
  int a_row_limit;  // rows of A's storage (r-contig: m rows; i-contig: r rows) that exist
  int b_row_limit;
  int r_len;        // reduction length of one tile (one r-slice; a multiple of the r-tile)
  int c_valid;      // columns c < c_valid are real outputs
  void* out;        // kForward: y [B,N]; kDTemb: partial [kSplitN,B,K] fp32; kGradW: gw [N,K]
  const void* bias;
  int B;
  int tiles_c;      // tile grid: c-tiles (fastest), then m-tiles, then r-slices
  int tiles_m;
  int tiles_total;
};

// ---------------------------------------------------------------------------------------------
// bf16: tensor cores through mma.sync m16n8k16 (bf16 x bf16 -> fp32), operands staged by a
// kStages-deep cp.async pipeline and read with ldmatrix (.trans for i-contiguous operands).
// Runs on sm_80, sm_90 and sm_100 alike. The accumulation order of an element is fixed by the
// r-tile sequence and the k16 steps inside it; the CTA shape only decides which elements are
// computed together.
namespace mma {

constexpr int kPad = 8;  // bf16 elements; keeps ldmatrix rows in distinct banks

// Shared-memory tile of an operand with `rows_i` i-rows and `br` r-columns: r-contig stored
// [i][r], i-contig stored [r][i]; rows padded by 16 bytes.
template <bool rcontig, int rows_i, int br>
struct TileShape {
  static constexpr int outer = rcontig ? rows_i : br;
  static constexpr int inner = (rcontig ? br : rows_i) + kPad;
  static constexpr int elems = outer * inner;
};

// CTA tile BM x BN x BR computed by WM x WN warps, S-deep cp.async pipeline. Persistent: a
// grid of resident CTAs walks the tiles round-robin with one pipeline running across tile
// boundaries, and the epilogue stages through its own shared memory so the next tile's loads
// overlap it; otherwise one tile per CTA and the epilogue reuses the pipeline's memory.
template <int BM_, int BN_, int BR_, int WM, int WN, int S, bool Persistent, Op op>
struct Config {
  static constexpr int BM = BM_, BN = BN_, BR = BR_, kStages = S;
  static constexpr bool kPersistent = Persistent;
  static constexpr int kWarpsN = WN;
  static constexpr int kThreads = WM * WN * 32;
  using L = OpLayout<op>;
  using ATile = TileShape<L::a_rcontig, BM, BR>;
  using BTile = TileShape<L::b_rcontig, BN, BR>;
  static constexpr int kWarpM = BM / WM;
  static constexpr int kWarpN = BN / WN;
  static constexpr int kMI = kWarpM / 16;
  static constexpr int kNI = kWarpN / 8;
  static_assert(kNI % 2 == 0, "B fragments are loaded in pairs");
  static constexpr int kStageElems = ATile::elems + BTile::elems;
  // Epilogue staging: output rows are c for kForward/kDTemb ([c][m], fp32 so the bias is added
  // before the single rounding) and m for kGradW ([m][c], already rounded bf16); padded so
  // fragment writes spread over the banks.
  static constexpr bool kOutRowsC = op != Op::kGradW;
  using OutT = std::conditional_t<kOutRowsC, float, bf16>;
  static constexpr int kOutInner = kOutRowsC ? BM + 4 : BN + 8;
  static constexpr int kOutRows = kOutRowsC ? BN : BM;
  static constexpr std::size_t kPipeBytes = std::size_t(kStages) * kStageElems * sizeof(bf16);
  static constexpr std::size_t kOutBytes = std::size_t(kOutRows) * kOutInner * sizeof(OutT);
  static constexpr std::size_t kSmemBytes =
      kPersistent ? kPipeBytes + kOutBytes : (kPipeBytes > kOutBytes ? kPipeBytes : kOutBytes);
};

// Streams r-tiles of one operand (i-range [i0, i0 + rows_i)) into shared memory. The
// per-thread source addresses are computed once per output tile; each r-tile then only adds
// its r offset. Storage rows at or beyond row_limit are zero-filled.
template <bool rcontig, int rows_i, int br, int threads>
struct TileLoader {
  using S = TileShape<rcontig, rows_i, br>;
  static constexpr int kChunksPerRow = (rcontig ? br : rows_i) / 8;
  static constexpr int kPerThread = S::outer * kChunksPerRow / threads;
  static_assert(S::outer * kChunksPerRow % threads == 0, "tile copy must divide evenly");

  const bf16* base;
  std::int64_t ld;
  int row_limit;
  const bf16* src[kPerThread];
  int row[kPerThread];
  bool row_ok[kPerThread];  // r-contig only: rows are fixed for the whole output tile

  __device__ __forceinline__ void init(const bf16* g, std::int64_t ld_, int row_limit_, int i0) {
    base = g;
    ld = ld_;
    row_limit = row_limit_;
#pragma unroll
    for (int t = 0; t < kPerThread; ++t) {
      const int idx = t * threads + static_cast<int>(threadIdx.x);
      const int r = idx / kChunksPerRow;
      const int chunk = idx % kChunksPerRow;
      row[t] = r;
      if constexpr (rcontig) row_ok[t] = i0 + r < row_limit;
      src[t] = rcontig ? g + static_cast<std::int64_t>(i0 + r) * ld + chunk * 8 : g + i0 + chunk * 8;
    }
  }

  __device__ __forceinline__ void issue(bf16* tile, int r0) const {
#pragma unroll
    for (int t = 0; t < kPerThread; ++t) {
      const int idx = t * threads + static_cast<int>(threadIdx.x);
      bf16* dst = tile + row[t] * S::inner + (idx % kChunksPerRow) * 8;
      if constexpr (rcontig) {
        cp_async16(dst, row_ok[t] ? src[t] + r0 : base, row_ok[t] ? 16 : 0);
      } else {
        const int grow = r0 + row[t];
        const bool ok = grow < row_limit;
        cp_async16(dst, ok ? src[t] + static_cast<std::int64_t>(grow) * ld : base, ok ? 16 : 0);
      }
    }
  }
};

template <class C, Op op>
__global__ void __launch_bounds__(C::kThreads) gemm_kernel(GemmParams p) {
  await_prior_grids();
  using L = OpLayout<op>;
  using OutT = typename C::OutT;
  constexpr int BM = C::BM, BN = C::BN, BR = C::BR, kMI = C::kMI, kNI = C::kNI;
  constexpr int kStages = C::kStages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* smem = reinterpret_cast<bf16*>(smem_raw);
  OutT* so = reinterpret_cast<OutT*>(smem_raw + (C::kPersistent ? C::kPipeBytes : 0));

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wm = warp / C::kWarpsN;
  const int wn = warp % C::kWarpsN;
  const bf16* ga = static_cast<const bf16*>(p.a);
  const bf16* gb = static_cast<const bf16*>(p.b);

  // This CTA's tiles are blockIdx.x, blockIdx.x + gridDim.x, ...; the flattened loop runs
  // num_r r-tiles of each in turn, and the loads run kStages - 1 r-tiles ahead of the math.
  const int my_tiles = (p.tiles_total - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const int num_r = p.r_len / BR;
  const int total_it = my_tiles * num_r;
  struct Coord {
    int c0, m0, z;
  };
  auto coord = [&](int local_tile) {
    const int t = static_cast<int>(blockIdx.x) + local_tile * static_cast<int>(gridDim.x);
    const int rest = t / p.tiles_c;
    return Coord{(t % p.tiles_c) * BN, (rest % p.tiles_m) * BM, rest / p.tiles_m};
  };

  TileLoader<L::a_rcontig, BM, BR, C::kThreads> load_a;
  TileLoader<L::b_rcontig, BN, BR, C::kThreads> load_b;
  int ld_it = 0;
  int ld_r = 0;
  int ld_tile = 0;
  int ld_stage = 0;
  int ld_rbase = 0;
  auto start_tile = [&](int local_tile) {
    const Coord t = coord(local_tile);
    load_a.init(ga, p.lda, p.a_row_limit, t.m0);
    load_b.init(gb, p.ldb, p.b_row_limit, t.c0);
    ld_rbase = t.z * p.r_len;
  };
  auto issue = [&]() {
    if (ld_it < total_it) {
      bf16* sa = smem + ld_stage * C::kStageElems;
      const int r0 = ld_rbase + ld_r * BR;
      load_a.issue(sa, r0);
      load_b.issue(sa + C::ATile::elems, r0);
      ++ld_it;
      ld_stage = ld_stage + 1 == kStages ? 0 : ld_stage + 1;
      if (++ld_r == num_r) {
        ld_r = 0;
        if (++ld_tile < my_tiles) start_tile(ld_tile);
      }
    }
    cp_async_commit();
  };

  if (total_it > 0) start_tile(0);
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) issue();

  float acc[kMI][kNI][4];
  Coord cur{};
  int warp_c0 = 0;
  bool warp_active = false;
  int rr = 0;
  int tile_local = 0;
  int stage = 0;
  for (int it = 0; it < total_it; ++it) {
    if (rr == 0) {
      cur = coord(tile_local);
      warp_c0 = cur.c0 + wn * C::kWarpN;
      warp_active = warp_c0 < p.c_valid;
#pragma unroll
      for (int i = 0; i < kMI; ++i)
#pragma unroll
        for (int j = 0; j < kNI; ++j)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
    }
    cp_async_wait<kStages - 2>();
    __syncthreads();
    issue();
    const bf16* ta = smem + stage * C::kStageElems;
    const bf16* tb = ta + C::ATile::elems;
    stage = stage + 1 == kStages ? 0 : stage + 1;
    if (warp_active) {
#pragma unroll
      for (int kk = 0; kk < BR; kk += 16) {
        std::uint32_t af[kMI][4];
#pragma unroll
        for (int i = 0; i < kMI; ++i) {
          const int mb = wm * C::kWarpM + i * 16;
          if constexpr (L::a_rcontig) {
            ldmatrix_x4(af[i], ta + (mb + (lane & 15)) * C::ATile::inner + kk + (lane >> 4) * 8);
          } else {
            const int j = lane >> 3;
            ldmatrix_x4_trans(af[i], ta + (kk + (lane & 7) + (j >> 1) * 8) * C::ATile::inner + mb +
                                         (j & 1) * 8);
          }
        }
        std::uint32_t bfr[kNI / 2][4];
#pragma unroll
        for (int h = 0; h < kNI / 2; ++h) {
          const int nb = wn * C::kWarpN + h * 16;
          const int j = lane >> 3;
          if constexpr (L::b_rcontig) {
            ldmatrix_x4(bfr[h], tb + (nb + (lane & 7) + (j >> 1) * 8) * C::BTile::inner + kk +
                                    (j & 1) * 8);
          } else {
            ldmatrix_x4_trans(bfr[h], tb + (kk + (lane & 7) + (j & 1) * 8) * C::BTile::inner + nb +
                                          (j >> 1) * 8);
          }
        }
#pragma unroll
        for (int j = 0; j < kNI; ++j) {
          // Columns past c_valid are padding: skipping them changes no valid element.
          if (warp_c0 + j * 8 < p.c_valid) {
#pragma unroll
            for (int i = 0; i < kMI; ++i)
              mma_bf16(acc[i][j], af[i], bfr[j / 2][(j & 1) * 2], bfr[j / 2][(j & 1) * 2 + 1]);
          }
        }
      }
    }
    if (++rr != num_r) continue;
    rr = 0;
    ++tile_local;

    // Epilogue: stage the tile in shared memory so that global stores are whole 16-byte rows.
    if constexpr (!C::kPersistent) {
      cp_async_wait<0>();
      __syncthreads();
    }
    if (warp_active) {
      const int g = lane >> 2;
      const int tq = lane & 3;
#pragma unroll
      for (int i = 0; i < kMI; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int m = wm * C::kWarpM + i * 16 + g + half * 8;
#pragma unroll
          for (int j = 0; j < kNI; ++j) {
            const int c = wn * C::kWarpN + j * 8 + tq * 2;
            if constexpr (C::kOutRowsC) {
              so[c * C::kOutInner + m] = acc[i][j][half * 2];
              so[(c + 1) * C::kOutInner + m] = acc[i][j][half * 2 + 1];
            } else {
              *reinterpret_cast<__nv_bfloat162*>(&so[m * C::kOutInner + c]) =
                  __floats2bfloat162_rn(acc[i][j][half * 2], acc[i][j][half * 2 + 1]);
            }
          }
        }
    }
    __syncthreads();

    const int c0 = cur.c0;
    const int m0 = cur.m0;
    constexpr int kRowLen = C::kOutRowsC ? BM : BN;
    constexpr int kVecPerRow = kRowLen / 8;
    constexpr int kVecs = C::kOutRows * kVecPerRow;
    for (int v = threadIdx.x; v < kVecs; v += C::kThreads) {
      const int row = v / kVecPerRow;
      const int col = (v % kVecPerRow) * 8;
      if constexpr (op == Op::kGradW) {
        *reinterpret_cast<uint4*>(static_cast<bf16*>(p.out) +
                                  static_cast<std::int64_t>(m0 + row) * kK + c0 + col) =
            *reinterpret_cast<const uint4*>(&so[row * C::kOutInner + col]);
      } else {
        const int b = c0 + row;
        if (b >= p.B) continue;
        const float4 lo = *reinterpret_cast<const float4*>(&so[row * C::kOutInner + col]);
        const float4 hi = *reinterpret_cast<const float4*>(&so[row * C::kOutInner + col + 4]);
        if constexpr (op == Op::kForward) {
          const float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
          const uint4 braw =
              *reinterpret_cast<const uint4*>(static_cast<const bf16*>(p.bias) + m0 + col);
          const bf16* bv = reinterpret_cast<const bf16*>(&braw);
          uint4 packed;
          __nv_bfloat162* pk = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            pk[q] = __floats2bfloat162_rn(x[2 * q] + __bfloat162float(bv[2 * q]),
                                          x[2 * q + 1] + __bfloat162float(bv[2 * q + 1]));
          *reinterpret_cast<uint4*>(static_cast<bf16*>(p.out) + static_cast<std::int64_t>(b) * kN +
                                    m0 + col) = packed;
        } else {
          float* dst = static_cast<float*>(p.out) +
                       static_cast<std::int64_t>(cur.z) * p.B * kK +
                       static_cast<std::int64_t>(b) * kK + m0 + col;
          *reinterpret_cast<float4*>(dst) = lo;
          *reinterpret_cast<float4*>(dst + 4) = hi;
        }
      }
    }
  }
  cp_async_wait<0>();
}

template <class C, Op op>
cudaError_t launch(GemmParams p, int c_extent, int m_extent, int splits, cudaStream_t stream) {
  constexpr auto kernel = gemm_kernel<C, op>;
  cudaError_t err = launch::allow_smem<kernel>(C::kSmemBytes);
  if (err != cudaSuccess) return err;
  p.tiles_c = (c_extent + C::BN - 1) / C::BN;
  p.tiles_m = m_extent / C::BM;
  p.tiles_total = p.tiles_c * p.tiles_m * splits;
  int grid = p.tiles_total;
  if constexpr (C::kPersistent) {
    // Which CTA computes a tile never changes its bytes, so sizing the grid from the device
    // is safe.
    int sms = 0;
    int per_sm = 0;
    err = launch::attribute<cudaDevAttrMultiProcessorCount>(&sms);
    if (err == cudaSuccess)
      err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::kThreads, C::kSmemBytes);
    if (err != cudaSuccess) return err;
    grid = std::min(grid, std::max(1, sms * per_sm));
  }
  return launch::kernel<kernel>(grid, C::kThreads, C::kSmemBytes, stream, p);
}

// Fixed per-op shapes (measured on an H200 against the alternatives listed in
// docs/notes/cuda-kernels.md). kForward / kDTemb stream W as the A operand: 128 W rows by 64 r
// per stage keeps 48 KB of W in flight per CTA for small batches, up to two CTAs per SM.
// kGradW is persistent: for small B each tile is a short load followed by a large store,
// and overlapping one tile's stores with the next tile's loads is what keeps the stores going.
using FwdConfig = Config<128, 64, 64, 2, 2, 4, false, Op::kForward>;
using DTembConfig = Config<128, 64, 64, 2, 2, 4, false, Op::kDTemb>;
using GradWConfig = Config<128, 128, 32, 2, 2, 4, true, Op::kGradW>;

}  // namespace mma


// ---------------------------------------------------------------------------------------------
// Host side.

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

std::size_t elem_size(Storage s) { return s == Storage::float32 ? 4 : 2; }

bool supported(const Problem& p) {
  return p.K == kK && p.N == kN && p.B >= 0 && p.B <= (1 << 20);
}

std::size_t silu_bytes(const Problem& p) {
  // bf16 s has room for the rows the wgmma forward tiles read past B (sm90::forward_silu_rows).
  const std::size_t rows = p.storage == Storage::bfloat16
                               ? align_up(static_cast<std::size_t>(p.B), sm90::kForwardSiluRowMultiple)
                               : static_cast<std::size_t>(p.B);
  return align_up(rows * kK * elem_size(p.storage), 256);
}

std::size_t partial_bytes(const Problem& p) {
  return static_cast<std::size_t>(kSplitN) * static_cast<std::size_t>(p.B) * kK * sizeof(float);
}

unsigned blocks_for(std::int64_t count, int threads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

// s = SiLU(temb) for B rows, and zero rows from B up to `rows` (if more).
template <class T>
cudaError_t launch_silu(const void* temb, void* s, int B, cudaStream_t stream, int rows = 0) {
  const std::int64_t count = static_cast<std::int64_t>(B) * kK;
  const std::int64_t padded = std::max(count, static_cast<std::int64_t>(rows) * kK);
  return launch::kernel<silu_kernel<T>>(blocks_for(padded / kSiluVec, kSiluThreads), kSiluThreads, 0, stream,
                                        static_cast<const T*>(temb), static_cast<T*>(s), count, padded);
}

// The pieces of SiLU of `count` elements of x.
cudaError_t launch_silu_pieces(const void* x, float* hi, float* lo, std::int64_t count, cudaStream_t stream) {
  return launch::kernel<silu_pieces_kernel>(blocks_for(count / kSiluVec, kSiluThreads), kSiluThreads, 0, stream,
                                            static_cast<const float*>(x), hi, lo, count);
}

int round_up_int(int v, int m) { return (v + m - 1) / m * m; }

// The wgmma GEMMs are sm_90a code: they run on compute capability 9.0 exactly (sm_90a
// machine code does not run on later architectures). Cached per device; a host attribute
// query, no synchronization.
cudaError_t wgmma_usable(bool* usable) {
  int cc = 0;
  if (const cudaError_t err = launch::compute_capability(&cc); err != cudaSuccess) return err;
  *usable = sm90::available() && cc == 90;
  return cudaSuccess;
}

// Batch sizes from which the automatic choice switches GEMM implementation (measured on an
// H200, docs/notes/cuda-kernels.md). Speed only: the bytes are the same on either side.
// The forward: 64-row swapped tiles (one wave of 128 tiles per 64 batch rows) below
// kForwardSwappedFromB, where they were 2-6 us faster than the 128 x 32 tiles at B = 16 ... 64;
// the 128-row swapped ones from there (at B = 96 two waves of the 64-row tiles are slower), except
// from kForwardSwappedNarrowAgainFromB to kForwardSwappedNarrowAgainToB, where a last 128-row tile
// would be at most half full: there three 64-row tiles per SM-wave beat two 128-row ones (alone,
// 64-row / 128-row, ms: B = 144 0.055 / 0.069, 160 0.052 / 0.065, 192 0.047 / 0.052; from 208 the
// 128-row ones are faster: 0.065 / 0.046 at 208; dev/gradw_check.cu).
constexpr int kForwardSwappedFromB = 65;
constexpr int kForwardSwappedNarrowAgainFromB = 129;
constexpr int kForwardSwappedNarrowAgainToB = 192;
constexpr int kForwardWideFromB = 1024;    // equal at 1024, the 128 x 128 tiles 4-9% faster at 2048
// Above B = 1024, 256 x 128 tiles (256 of W's rows, two consumer warpgroups of 128 x 128 each): per
// byte from shared memory twice the MMAs of the 128 x 128 tiles, and half the tiles, each reading s
// and W's rows once, so less L2 traffic. On an H100 (docs/evidence/h100-fef6504-dev/, medians of four
// alternated rounds, forward ms, 128 x 128 / 256 x 128): B = 1100 0.2208 / 0.2046, 1536 0.2969 /
// 0.2792, 2000 0.4009 / 0.3713, 2048 0.4127 / 0.3796; at 1024 0.1874 / 0.2030, where 576 tiles make
// 4.4 waves of 132 SMs against 1152 tiles' 8.7. 128 x 256 tiles, alone or in clusters of two with s
// multicast, were within 1% of these from 1536 and slower at 1100 (the same call).
constexpr int kForwardTallAboveB = 1024;
// d_temb (alone, dev/gradw_check.cu): tall-narrow tiles up to 32 rows (256 x 32 at B = 1 ... 16: 0.029 ms
// against 0.032 for the 128 x 32 tiles and for the streaming d_temb kernel; since the thirty-first
// session 192 x 32, faster still: adaln_mod_projection_sm90.cu), 128 x 32 up to 64, 128 x 64 up
// to 192 (B = 96 0.035 / 0.037 for 128 x 32, 128 0.034 / 0.039 for 128 x 128, 192 0.045 / 0.051;
// the whole backward 1-4 us faster at 65 ... 96), 128 x 128 from there (208: 0.047 / 0.055 for
// 128 x 64).
constexpr int kDTembTallNarrowUpToB = 32;
constexpr int kDTembMediumFromB = 65;
constexpr int kDTembWideFromB = 193;
// Above B = 896 d_temb runs on 256 x 128 tiles (256 of W's columns), grad_weight from B = 768 on
// 256 x 128 cooperative tiles (256 of its rows), in place of 128 x 128 (d_temb) and the 128 x 128
// ping-pong (grad_weight). On an H100 (docs/evidence/h100-59075e7-dev-bwd-tiles/, `rlk bench`,
// medians of three alternated rounds, forward + backward ms; d_temb 128 x 128 / 256 x 128 with
// grad_weight on 256 x 128: B = 1024 0.6134 / 0.6141, 1536 0.8937 / 0.8678, 2048 1.2320 / 1.2015;
// grad_weight ping-pong / 256 x 128 with d_temb on 128 x 128: 1024 0.6254 / 0.6134, 1536 0.9341 /
// 0.8937, 2048 1.2950 / 1.2320). At 1024 d_temb's larger tiles make 768 CTAs (12 x 8 x 8 slices),
// 5.8 waves of 132 SMs, and gained nothing in that call, as the forward's (kForwardTallAboveB). Below 1024
// (docs/evidence/h100-1f83329-dev-bwd-mid/, the same method, ping-pong / 256 x 128 grad_weight):
// B = 128 0.1575 / 0.1593, 256 0.1944 / 0.2053, 512 0.3372 / 0.3489, 768 0.4732 / 0.4630, 1000
// 0.6407 / 0.6304; d_temb's 256 x 128 tiles beside them 1 ... 15 us slower at 256 ... 768 (1.5 ...
// 4.4 waves of 132 SMs) and 8 us faster at 1000, within the rounds' spread there. Between 832 and
// 1024 (docs/evidence/h100-3ae67a2-dev-dtemb-960/, 128 x 128 / 256 x 128 d_temb): B = 832 0.5436 /
// 0.5400, 896 0.5602 / 0.5720, 928 0.6346 / 0.5824, 960 0.6239 / 0.5902, 992 0.6252 / 0.6133, 1023
// 0.6148 / 0.6144, 1024 0.6351 / 0.6217: the 128 x 128 d_temb alone 44 us slower at 960 than at
// 1023 under ncu, its last batch tile half out of bounds.
constexpr int kDTembTallAboveB = 896;
constexpr int kGradWTallFromB = 768;
// grad_weight past the streaming kernels (B > 32), or where streaming is off: ping-pong wgmma from
// B = 17. With its 256-byte epilogue rows it is faster than the mma.sync GEMM at B = 24 and 32 (the
// whole backward, queued calls: 0.0786 / 0.0803 and 0.0785 / 0.0823 ms) and than the cooperative GEMM
// at B = 1024 and 2048 (alone: 0.159 / 0.180 and 0.320 / 0.343 ms; dev/gradw_check.cu), where the
// 256 x 128 tiles above take over; the cooperative 128 x 128 GEMM runs only when forced.
constexpr int kGradWWgmmaFromB = 17;

// bf16 forward: the streaming kernel up to this batch size where the device fits it, the 64-row
// swapped wgmma tiles above (`rlk bench`, medians of four runs, forward + backward in ms, streaming /
// wgmma: B = 1 0.1024 / 0.1076, 4 0.1072 / 0.1096, 5 0.1072 / 0.1058, 8 0.1100 / 0.1063;
// docs/notes/cuda-kernels.md). Where wgmma cannot run, the streaming kernel takes every B it has.
// Speed only: the bytes are the same either way.
constexpr int kBf16StreamingForwardUpToB = 4;
// bf16 grad_weight: the streaming kernels up to this batch size (from B = 17 the one that streams s:
// forward + backward 2-5 us faster than with the ping-pong GEMM at B = 17 ... 32, `rlk bench`,
// docs/notes/cuda-kernels.md, sixteenth session). Up to the second, s does not come from silu_kernel
// (backward_bf16: CTAs beside the tall-narrow d_temb, or the streaming kernel itself); beyond it
// silu_kernel's launch costs less than 128 CTAs each computing all of s (measured likewise).
constexpr int kBf16StreamingGradWUpToB = bf16_stream::kGradWMaxB;
constexpr int kBf16StreamingGradWSiluUpToB = 4;
// bf16 d_temb: the streaming kernel (with the streaming grad_weight) up to this batch size (the
// backward 1-3 us faster than with the wgmma d_temb at B = 1, 3 and 8, measured likewise).
constexpr int kBf16StreamingDTembUpToB = bf16_stream::kDTembMaxB;

enum class Direction { forward, backward };

// Which families each bf16 GEMM has (kernels.hpp, GemmFamily); a call forcing another is refused.
bool forward_has(GemmFamily f) {
  return f != GemmFamily::wgmma_pingpong && f != GemmFamily::wgmma_medium && f != GemmFamily::wgmma_tall_narrow;
}
bool dtemb_has(GemmFamily f) {
  return f != GemmFamily::wgmma_pingpong && f != GemmFamily::wgmma_swapped && f != GemmFamily::wgmma_swapped_narrow;
}
bool gradw_has(GemmFamily f) {
  return f == GemmFamily::automatic || f == GemmFamily::mma_sync || f == GemmFamily::wgmma_wide ||
         f == GemmFamily::wgmma_pingpong || f == GemmFamily::wgmma_tall;
}

// Resolves the bf16 `automatic` choices for batch size B on the current device; refuses a
// forced wgmma choice where the wgmma GEMMs cannot run, and forced streaming where bf16 has no
// streaming kernel (the forward for B > bf16_stream::kMaxB or with a forced forward GEMM, the
// backward for B > bf16_stream::kGradWMaxB or with a forced grad_weight GEMM:
// cudaErrorInvalidValue; a device without the shared memory it needs: cudaErrorNotSupported).
// Streaming in the backward means the streaming grad_weight kernel, and for B <= kDTembMaxB with
// grad_temb automatic the streaming d_temb kernel too where streaming is forced on or the wgmma
// GEMMs cannot run (elsewhere automatic d_temb takes the faster 192 x 32 wgmma tiles).
cudaError_t resolve_bf16(KernelChoice* g, int B, Direction direction) {
  const bool streaming_forced = g->streaming == Streaming::on;
  bool usable = false;
  if (const cudaError_t err = wgmma_usable(&usable); err != cudaSuccess) return err;
  if (g->streaming != Streaming::off) {
    const bool forward = direction == Direction::forward;
    const bool applies = forward ? B <= bf16_stream::kMaxB && g->forward == GemmFamily::automatic
                                 : B <= bf16_stream::kGradWMaxB && g->grad_weight == GemmFamily::automatic;
    if (g->streaming == Streaming::on && !applies) return cudaErrorInvalidValue;
    bool fits = false;
    if (const cudaError_t err = forward ? bf16_stream::fits_current_device(&fits)
                                        : bf16_stream::grad_weight_fits_current_device(&fits);
        err != cudaSuccess)
      return err;
    if (g->streaming == Streaming::on && !fits) return cudaErrorNotSupported;
    if (g->streaming == Streaming::automatic) {
      // The streaming forward yields to the wgmma GEMMs above kBf16StreamingForwardUpToB where they
      // run, and takes every B it has where they cannot.
      const int up_to_b = !forward ? kBf16StreamingGradWUpToB
                          : usable ? kBf16StreamingForwardUpToB
                                   : bf16_stream::kMaxB;
      g->streaming = applies && fits && B <= up_to_b ? Streaming::on : Streaming::off;
    }
  }
  // The streaming backward also computes d_temb for the smallest B where grad_temb is automatic,
  // when streaming is forced on or the wgmma GEMMs (faster) cannot run; grad_temb then stays
  // `automatic`, which backward_bf16 reads as the streaming kernel.
  bool dtemb_streams = false;
  if (direction == Direction::backward && g->streaming == Streaming::on && g->grad_temb == GemmFamily::automatic &&
      B <= kBf16StreamingDTembUpToB && (streaming_forced || !usable)) {
    if (const cudaError_t err = bf16_stream::dtemb_fits_current_device(&dtemb_streams); err != cudaSuccess) return err;
  }
  for (GemmFamily* f : {&g->forward, &g->grad_temb, &g->grad_weight}) {
    if (*f != GemmFamily::automatic && *f != GemmFamily::mma_sync && !usable) return cudaErrorNotSupported;
  }
  if (!forward_has(g->forward) || !dtemb_has(g->grad_temb) || !gradw_has(g->grad_weight))
    return cudaErrorInvalidValue;
  if (g->forward == GemmFamily::automatic) {
    const bool narrow_again = B >= kForwardSwappedNarrowAgainFromB && B <= kForwardSwappedNarrowAgainToB;
    g->forward = !usable                                      ? GemmFamily::mma_sync
                 : B > kForwardTallAboveB                     ? GemmFamily::wgmma_tall
                 : B >= kForwardWideFromB                     ? GemmFamily::wgmma_wide
                 : B >= kForwardSwappedFromB && !narrow_again ? GemmFamily::wgmma_swapped
                                                              : GemmFamily::wgmma_swapped_narrow;
  }
  if (g->grad_temb == GemmFamily::automatic && !dtemb_streams) {
    g->grad_temb = !usable                        ? GemmFamily::mma_sync
                   : B <= kDTembTallNarrowUpToB ? GemmFamily::wgmma_tall_narrow
                   : B < kDTembMediumFromB      ? GemmFamily::wgmma_narrow
                   : B < kDTembWideFromB        ? GemmFamily::wgmma_medium
                   : B > kDTembTallAboveB       ? GemmFamily::wgmma_tall
                                                : GemmFamily::wgmma_wide;
  }
  if (g->grad_weight == GemmFamily::automatic) {
    g->grad_weight = !usable || B < kGradWWgmmaFromB ? GemmFamily::mma_sync
                     : B >= kGradWTallFromB          ? GemmFamily::wgmma_tall
                                                     : GemmFamily::wgmma_pingpong;
  }
  return cudaSuccess;
}

// fp32 forward (tf32x3::): the 8- and 16-row batch tiles (SiLU in the kernel, W streamed once) up
// to their height, the 144 x 64 tiles above, the 128 x 128 ones from kFp32ForwardWideFromB; where
// the sm_90a kernels run, the wgmma kernel (sm90::fp32_forward_wgmma) instead from
// kFp32ForwardWgmmaSmallFromB (at every B with streaming off; never with streaming on, the mma.sync
// 8- and 16-row tiles): 64 rows of W by 8 or 16 batch rows up to B = 8 / 16, then 64 by 32 batch
// rows (one consumer, three CTAs per SM) from 17, 128 by 64 from kFp32ForwardWgmmaMediumFromB, 32
// again from kFp32ForwardWgmmaNarrowAgainFromB to ...ToB, 64 again above, 128 from
// kFp32ForwardWgmmaWideFromB. Forward alone, ms, wgmma 32 / 64 / 128 batch rows (dev/kernel_check.cu
// --compare-gemms at 430fd40, docs/evidence/h200-430fd40-dev/kc-fp32.log; the 144 x 64 mma.sync tiles
// take 0.166-0.242 up to B = 64 and 0.47-0.49 at 65 ... 128): B = 17 0.084 / 0.133 / 0.196; 32 0.072 /
// 0.132 / 0.186; 33 0.143 / 0.134 / 0.189; 40 0.138 / 0.134 / 0.189; 48 0.118 / 0.137 / 0.191; 64
// 0.121 / 0.141 / 0.195; 65 0.190 / 0.201 / 0.195; 96 0.175 / 0.195 / 0.194; 128 0.187 / 0.197 /
// 0.198; 160 0.237 / 0.255 / 0.280; 176 0.292 / 0.259 / 0.280; 192 0.292 / 0.259 / 0.283; 208 0.326 /
// 0.316 / 0.282; 2048 3.18 / 2.72 / 1.97. B = 41 ... 47 is not in the sweep: the 32-row tile from
// 41 rests on 40's and 48's. Speed only: every tile gives the same bytes.
constexpr int kFp32ForwardWideFromB = 193;
constexpr int kFp32ForwardWgmmaFromB = 17;
constexpr int kFp32ForwardWgmmaSmallFromB = 9;  // automatic streaming takes B <= 8 (resolve_fp32_forward)
constexpr int kFp32ForwardWgmmaMediumFromB = 33;
constexpr int kFp32ForwardWgmmaNarrowAgainFromB = 41;
constexpr int kFp32ForwardWgmmaNarrowAgainToB = 160;
constexpr int kFp32ForwardWgmmaWideFromB = 193;
static_assert(kFp32ForwardWgmmaFromB > 16, "the 8- and 16-row wgmma tiles take B <= 16");

// The fp32 backward's d_temb on wgmma: 64 columns of W by 8, 16 or 32 batch rows per CTA (one
// consumer warpgroup, three CTAs per SM) up to each tile's height, 128 by 64 up to
// kFp32DTembMediumToB, 128 by 128 above. d_temb alone, ms, 8 / 16 / 32 / 64 / 128 batch rows
// (dev/kernel_check.cu --fp32-tc-backward on an H200, docs/notes/fp32-on-tensor-cores.md): B = 1
// 0.066 / 0.068 / 0.080 / 0.104 / 0.172; 16 0.083 / 0.064 / 0.069 / 0.102 / 0.169; 32 0.150 / 0.088
// / 0.065 / 0.101 / 0.170; 48 - / 0.126 / 0.108 / 0.103 / 0.169; 128 - / 0.310 / 0.194 / 0.163 /
// 0.192; 192 - / - / 0.284 / 0.242 / 0.293; 208 - / - / 0.335 / 0.294 / 0.273; 2048 - / - / 3.28 /
// 2.51 / 2.25. Speed only: every tile gives the same bytes.
constexpr int kFp32DTembMediumToB = 192;

bool is_wgmma(Fp32Tiles t) {
  return t == Fp32Tiles::wgmma_narrow || t == Fp32Tiles::wgmma_medium || t == Fp32Tiles::wgmma_wide;
}

// The fp32 forward a call runs: the wgmma kernel in one of its tiles, or a tf32x3:: tiling.
struct Fp32ForwardPlan {
  bool wgmma = false;
  sm90::Fp32WgmmaTile wgmma_tile = sm90::Fp32WgmmaTile::batch128;
  tf32x3::Tile tile = tf32x3::Tile::batch64;
};

// Resolves the fp32 forward: where the sm_90a kernels run, `wgmma_narrow` / `wgmma_medium` /
// `wgmma_wide` (or automatic unless streaming is on) the wgmma kernel with 32 / 64 / 128 batch rows
// per tile (automatic: 8 or 16 up to B = 16), except that automatic streaming keeps B <= 8 on the
// mma.sync 8-row tile; `streaming` on (or automatic, B <= 16, on a device without them but with the
// shared memory) the mma.sync 8- or 16-row tiles; fp32.forward `narrow` /
// `wide` (or automatic elsewhere) the 144 x 64 / 128 x 128 mma.sync ones. Refuses, before anything
// runs, a choice the forward does not have or a B it does not take (cudaErrorInvalidValue: a forced
// streaming choice past B = 16 or together with a forced tiling), or one this device cannot run
// (cudaErrorNotSupported: its shared memory; wgmma without the sm_90a kernels).
cudaError_t resolve_fp32_forward(const KernelChoice& c, int B, Fp32ForwardPlan* plan) {
  const Fp32Tiles f = c.fp32.forward;
  if (f != Fp32Tiles::automatic && f != Fp32Tiles::narrow && f != Fp32Tiles::wide && !is_wgmma(f))
    return cudaErrorInvalidValue;
  if (c.streaming == Streaming::on && (f != Fp32Tiles::automatic || B > tf32x3::batch_rows(tf32x3::Tile::batch16)))
    return cudaErrorInvalidValue;
  // Automatic up to B = 8: the mma.sync 8-row tile, which computes SiLU itself (forward alone at B = 1,
  // 3, 8 on an H200: 0.070, 0.070, 0.075 ms; the wgmma 8-row tile after the pieces kernel 0.073,
  // 0.077, 0.074; at 16 the mma.sync 16-row tile 0.105, wgmma's 0.074; dev/kernel_check.cu at
  // ad7d0e6 and e3c89ab).
  const bool streaming_first = c.streaming == Streaming::automatic && B < kFp32ForwardWgmmaSmallFromB;
  if (is_wgmma(f) || (f == Fp32Tiles::automatic && c.streaming != Streaming::on && !streaming_first)) {
    bool usable = false, fits = false;
    if (const cudaError_t err = wgmma_usable(&usable); err != cudaSuccess) return err;
    if (usable) {
      if (const cudaError_t err = sm90::fp32_forward_wgmma_fits(&fits); err != cudaSuccess) return err;
    }
    if (usable && fits) {
      const bool narrow_again = B >= kFp32ForwardWgmmaNarrowAgainFromB && B <= kFp32ForwardWgmmaNarrowAgainToB;
      const Fp32Tiles t = f != Fp32Tiles::automatic                              ? f
                          : B >= kFp32ForwardWgmmaWideFromB                   ? Fp32Tiles::wgmma_wide
                          : B >= kFp32ForwardWgmmaMediumFromB && !narrow_again ? Fp32Tiles::wgmma_medium
                                                                              : Fp32Tiles::wgmma_narrow;
      plan->wgmma = true;
      plan->wgmma_tile = t == Fp32Tiles::wgmma_narrow   ? sm90::Fp32WgmmaTile::batch32
                         : t == Fp32Tiles::wgmma_medium ? sm90::Fp32WgmmaTile::batch64
                                                        : sm90::Fp32WgmmaTile::batch128;
      if (f == Fp32Tiles::automatic && B < kFp32ForwardWgmmaFromB)
        plan->wgmma_tile = B <= 8 ? sm90::Fp32WgmmaTile::batch8 : sm90::Fp32WgmmaTile::batch16;
      return cudaSuccess;
    }
    if (is_wgmma(f)) return cudaErrorNotSupported;
  }
  plan->wgmma = false;
  tf32x3::Tile* tile = &plan->tile;
  const tf32x3::Tile streaming = B <= tf32x3::batch_rows(tf32x3::Tile::batch8) ? tf32x3::Tile::batch8 : tf32x3::Tile::batch16;
  const tf32x3::Tile tiled = f == Fp32Tiles::narrow ? tf32x3::Tile::batch64
                             : f == Fp32Tiles::wide ? tf32x3::Tile::batch128
                             : B >= kFp32ForwardWideFromB ? tf32x3::Tile::batch128
                                                          : tf32x3::Tile::batch64;
  const bool forced = c.streaming == Streaming::on || f != Fp32Tiles::automatic;
  bool fits = false;
  if (c.streaming != Streaming::off && f == Fp32Tiles::automatic && B <= tf32x3::batch_rows(tf32x3::Tile::batch16)) {
    if (const cudaError_t err = tf32x3::fits_current_device(streaming, &fits); err != cudaSuccess) return err;
    if (fits) {
      *tile = streaming;
      return cudaSuccess;
    }
    if (c.streaming == Streaming::on) return cudaErrorNotSupported;
  }
  if (const cudaError_t err = tf32x3::fits_current_device(tiled, &fits); err != cudaSuccess) return err;
  if (!fits && forced) return cudaErrorNotSupported;
  *tile = fits ? tiled : tf32x3::Tile::batch64;  // the 144 x 64 tiles need the least shared memory
  if (!fits) {
    if (const cudaError_t err = tf32x3::fits_current_device(*tile, &fits); err != cudaSuccess) return err;
    if (!fits) return cudaErrorNotSupported;
  }
  return cudaSuccess;
}

sm90::BatchTile tile_of(GemmFamily f) {
  return f == GemmFamily::wgmma_narrow           ? sm90::BatchTile::narrow
         : f == GemmFamily::wgmma_swapped        ? sm90::BatchTile::swapped
         : f == GemmFamily::wgmma_swapped_narrow ? sm90::BatchTile::swapped_narrow
         : f == GemmFamily::wgmma_medium         ? sm90::BatchTile::medium
         : f == GemmFamily::wgmma_tall_narrow    ? sm90::BatchTile::tall_narrow
         : f == GemmFamily::wgmma_tall           ? sm90::BatchTile::tall
                                                 : sm90::BatchTile::wide;
}

// The fp32 forward on tensor cores: SiLU first into the workspace, where the kernel does not
// compute it itself (its pieces for the wgmma kernel: s_hi at the workspace's start, s_lo after).
cudaError_t forward_fp32(int B, const ForwardTensors& t, void* ws, const Fp32ForwardPlan& plan, const Problem& prob,
                         cudaStream_t stream) {
  if (plan.wgmma) {
    float* s_hi = static_cast<float*>(ws);
    float* s_lo = reinterpret_cast<float*>(static_cast<unsigned char*>(ws) + silu_bytes(prob));
    if (const cudaError_t err = launch_silu_pieces(t.temb, s_hi, s_lo, static_cast<std::int64_t>(B) * kK, stream);
        err != cudaSuccess)
      return err;
    return sm90::fp32_forward_wgmma(plan.wgmma_tile, B, s_hi, s_lo, static_cast<const float*>(t.weight),
                                    static_cast<const float*>(t.bias), static_cast<float*>(t.out), stream);
  }
  const tf32x3::Tile tile = plan.tile;
  const void* x = t.temb;
  if (!tf32x3::computes_silu(tile)) {
    if (const cudaError_t err = launch_silu<float>(t.temb, ws, B, stream); err != cudaSuccess) return err;
    x = ws;
  }
  return tf32x3::forward(tile, B, static_cast<const float*>(x), static_cast<const float*>(t.weight),
                         static_cast<const float*>(t.bias), static_cast<float*>(t.out), stream);
}

cudaError_t forward_bf16(int B, const ForwardTensors& t, void* ws, const KernelChoice& choice, cudaStream_t stream) {
  if (choice.streaming == Streaming::on)  // the streaming kernel computes SiLU itself
    return bf16_stream::forward(B, t.temb, t.weight, t.bias, t.out, stream);
  const int rows = choice.forward != GemmFamily::mma_sync ? sm90::forward_silu_rows(tile_of(choice.forward), B) : B;
  cudaError_t err = launch_silu<bf16>(t.temb, ws, B, stream, rows);
  if (err != cudaSuccess) return err;
  if (choice.forward != GemmFamily::mma_sync)
    return sm90::forward_gemm(tile_of(choice.forward), B, t.weight, ws, t.bias, t.out, stream);
  GemmParams p{};
  p.a = t.weight;
  p.lda = kK;
  p.a_row_limit = kN;
  p.b = ws;
  p.ldb = kK;
  p.b_row_limit = B;
  p.r_len = kK;
  p.c_valid = B;
  p.out = t.out;
  p.bias = t.bias;
  p.B = B;
  return mma::launch<mma::FwdConfig, Op::kForward>(p, B, kN, 1, stream);
}

// The bf16 backward (the fp32 one: backward_fp32 below).
cudaError_t backward_bf16(int B, const BackwardTensors& t, const Problem& prob, void* ws, const KernelChoice& choice,
                          cudaStream_t stream) {
  using T = bf16;
  unsigned char* base = static_cast<unsigned char*>(ws);
  void* s = base;
  float* partial = reinterpret_cast<float*>(base + silu_bytes(prob));
  const std::int64_t count = static_cast<std::int64_t>(B) * kK;  // grad_temb's elements (the finish)
  cudaError_t err = cudaSuccess;
  // For the smallest B, s does not come from silu_kernel: where the tall-narrow d_temb GEMM leaves
  // SMs idle, CTAs beside it write s (sm90::dtemb_gemm), else the streaming grad_weight kernel
  // computes it itself (each of its CTAs all of s). On an H200, forward + backward in `rlk bench`,
  // medians of five alternated rounds, in-kernel / beside d_temb: B = 1 0.1017 / 0.1008, 3 0.1040 /
  // 0.1023 ms; where silu_kernel runs (B = 5 ... 32) the CTAs beside d_temb were no faster (B = 5
  // 0.1052 / 0.1050, 8 0.1061 / 0.1065) or slower (16 0.1078 / 0.1103, 32 0.1080 / 0.1106), so it
  // stays there (docs/evidence/h200-ca21280-dev/, docs/notes/cuda-kernels.md).
  const bool silu_small_b = choice.streaming == Streaming::on && B <= kBf16StreamingGradWSiluUpToB;
  bool silu_beside = false;
  if (silu_small_b && choice.grad_temb == GemmFamily::wgmma_tall_narrow) {
    int sms = 0;
    if (const cudaError_t e = launch::attribute<cudaDevAttrMultiProcessorCount>(&sms); e != cudaSuccess) return e;
    silu_beside = sm90::dtemb_silu_beside_fits(B, sms);
  }
  const bool silu_in_kernel = silu_small_b && !silu_beside;
  if (!silu_in_kernel && !silu_beside) {
    err = launch_silu<T>(t.temb, s, B, stream);
    if (err != cudaSuccess) return err;
  }

  GemmParams dt{};
  dt.a = t.weight;
  dt.lda = kK;
  dt.a_row_limit = kN;
  dt.b = t.grad_out;
  dt.ldb = kN;
  dt.b_row_limit = B;
  dt.r_len = kN / kSplitN;
  dt.c_valid = B;
  dt.out = partial;
  dt.B = B;

  GemmParams gw{};
  gw.a = t.grad_out;
  gw.lda = kN;
  gw.a_row_limit = B;
  gw.b = s;
  gw.ldb = kK;
  gw.b_row_limit = B;
  gw.c_valid = kK;
  gw.out = t.grad_weight;
  gw.B = B;

  if (choice.grad_temb == GemmFamily::automatic)  // resolved to the streaming kernel
    err = bf16_stream::dtemb_partials(B, t.weight, t.grad_out, partial, stream);
  else
    err = choice.grad_temb == GemmFamily::mma_sync
              ? mma::launch<mma::DTembConfig, Op::kDTemb>(dt, B, kK, kSplitN, stream)
              : sm90::dtemb_gemm(tile_of(choice.grad_temb), B, t.weight, t.grad_out, partial, stream,
                                 silu_beside ? t.temb : nullptr, silu_beside ? s : nullptr);
  if (err != cudaSuccess) return err;
  gw.r_len = round_up_int(B, mma::GradWConfig::BR);
  if (choice.streaming == Streaming::on)  // writes grad_temb and grad_bias too: no finish kernel
    return bf16_stream::grad_weight(B, silu_in_kernel ? t.temb : s, !silu_in_kernel, t.grad_out, t.grad_weight,
                                    bf16_stream::Finish{partial, t.temb, t.grad_temb, t.grad_bias}, stream);
  if (choice.grad_weight != GemmFamily::mma_sync) {  // the finish runs beside it
    const sm90::GradWSchedule schedule = choice.grad_weight == GemmFamily::wgmma_pingpong ? sm90::GradWSchedule::pingpong
                                         : choice.grad_weight == GemmFamily::wgmma_tall   ? sm90::GradWSchedule::tall
                                                                                          : sm90::GradWSchedule::cooperative;
    err = sm90::gradw_gemm(schedule, B, t.grad_out, s, t.grad_weight, stream, kFinishBesideSms);
    if (err != cudaSuccess) return err;
    return launch::kernel<backward_finish_beside_kernel<T>>(
        static_cast<unsigned>(kFinishBesideSms * kFinishBlocksPerSm), kBiasThreads, 0, stream, partial,
        static_cast<const T*>(t.temb), static_cast<T*>(t.grad_temb), count, static_cast<const T*>(t.grad_out),
        static_cast<T*>(t.grad_bias), B);
  }
  err = mma::launch<mma::GradWConfig, Op::kGradW>(gw, kK, kN, 1, stream);
  if (err != cudaSuccess) return err;

  return launch::kernel<backward_finish_kernel<T>>(
      kBiasBlocks<T> + blocks_for(count, kBiasThreads), kBiasThreads, 0, stream, partial,
      static_cast<const T*>(t.temb), static_cast<T*>(t.grad_temb), count, static_cast<const T*>(t.grad_out),
      static_cast<T*>(t.grad_bias), B);
}

// The fp32 backward: grad_out's pieces and s's transposed pieces into the workspace after the d_temb
// partials, the two wgmma GEMMs of adaln_mod_projection_sm90_tf32x3.cu (or their mma.sync
// counterparts), then the finish (the slices combined in ascending order and silu', grad_bias).
int fp32_s_t_ld(std::int64_t B) { return round_up_int(static_cast<int>(B), 32); }
std::size_t fp32_dy_bytes(const Problem& p) { return static_cast<std::size_t>(p.B) * kN * sizeof(float); }
std::size_t fp32_s_t_bytes(const Problem& p) {
  return static_cast<std::size_t>(kK) * fp32_s_t_ld(p.B) * sizeof(float);
}

// Which kernel computes each GEMM of the fp32 backward (the same bytes whichever).
struct Fp32BackwardPlan {
  bool dtemb_wgmma = true;
  sm90::Fp32WgmmaTile dtemb_tile = sm90::Fp32WgmmaTile::batch128;
  bool gradw_wgmma = true;
  sm90::Fp32GradWStores gradw_stores = sm90::Fp32GradWStores::automatic;
};

// Resolves the fp32 backward's kernels. grad_temb: `narrow` the mma.sync kernel, `wgmma_narrow` /
// `wgmma_medium` / `wgmma_wide` the wgmma kernel with 32 / 64 / 128 batch rows per tile, automatic
// the wgmma kernel (its tile by B) where the sm_90a kernels run, else mma.sync; grad_weight:
// `narrow` mma.sync, `wgmma_wide` wgmma, automatic as grad_temb; the wgmma kernel's stores as
// `grad_weight_stores` says. Refuses, before anything runs, any other value, a store variant with
// grad_weight forced to mma.sync, or a streaming backward (there is none in fp32) with
// cudaErrorInvalidValue, and a forced wgmma kernel or store variant where it cannot run with
// cudaErrorNotSupported.
cudaError_t resolve_fp32_backward(const KernelChoice& c, int B, Fp32BackwardPlan* plan) {
  const Fp32Tiles dt = c.fp32.grad_temb, gw = c.fp32.grad_weight;
  if (c.streaming == Streaming::on || (dt != Fp32Tiles::automatic && dt != Fp32Tiles::narrow && !is_wgmma(dt)) ||
      (gw != Fp32Tiles::automatic && gw != Fp32Tiles::narrow && gw != Fp32Tiles::wgmma_wide))
    return cudaErrorInvalidValue;
  bool usable = false;
  if (const cudaError_t err = wgmma_usable(&usable); err != cudaSuccess) return err;
  const sm90::Fp32GradWStores stores = c.fp32.grad_weight_stores;
  if (stores != sm90::Fp32GradWStores::automatic && stores != sm90::Fp32GradWStores::whole_tile &&
      stores != sm90::Fp32GradWStores::box_by_box)
    return cudaErrorInvalidValue;
  const bool forced_stores = stores != sm90::Fp32GradWStores::automatic;
  if (forced_stores && gw == Fp32Tiles::narrow) return cudaErrorInvalidValue;
  if ((is_wgmma(dt) || gw == Fp32Tiles::wgmma_wide || forced_stores) && !usable) return cudaErrorNotSupported;
  plan->dtemb_wgmma = usable && dt != Fp32Tiles::narrow;
  plan->dtemb_tile = dt == Fp32Tiles::wgmma_narrow   ? sm90::Fp32WgmmaTile::batch32
                     : dt == Fp32Tiles::wgmma_medium ? sm90::Fp32WgmmaTile::batch64
                     : dt == Fp32Tiles::wgmma_wide   ? sm90::Fp32WgmmaTile::batch128
                     : B <= 8                        ? sm90::Fp32WgmmaTile::batch8
                     : B <= 16                       ? sm90::Fp32WgmmaTile::batch16
                     : B <= 32                       ? sm90::Fp32WgmmaTile::batch32
                     : B <= kFp32DTembMediumToB      ? sm90::Fp32WgmmaTile::batch64
                                                     : sm90::Fp32WgmmaTile::batch128;
  plan->gradw_wgmma = usable && gw != Fp32Tiles::narrow;
  plan->gradw_stores = stores;
  return cudaSuccess;
}

// The fp32 backward: one kernel for what the wgmma GEMMs read cut (fp32_backward_prep_kernel), s in
// FP32 for an mma.sync grad_weight, d_temb's partials, grad_weight, then the finish (the slices
// combined in ascending order and silu', grad_bias). Where grad_weight runs on wgmma and B is at
// most kFp32CombineInGradWToB, grad_bias moves into the first kernel and the combine into grad_weight's
// CTAs after their tiles (sm90::Fp32Combine), and no finish kernel runs. Measured at small B before
// (rlk_kernel_check on the H200, docs/evidence/h200-dcaf3e4/): of the backward's 0.138 ms at B = 1,
// the two GEMMs alone took 0.064 and 0.067 and the three small kernels beside them (grad_out's
// pieces, s's transposed pieces, the finish) ~7 us; the finish reads little there, and grad_weight's
// CTAs with one tile fewer than others (3456 tiles on 132) would wait anyway. Above that B the
// combine reads the partials (8 B K floats) on one CTA per SM, too few loads in flight for them.
constexpr int kFp32CombineInGradWToB = 32;
cudaError_t backward_fp32(int B, const BackwardTensors& t, const Problem& prob, void* ws, const Fp32BackwardPlan& plan,
                          cudaStream_t stream) {
  unsigned char* base = static_cast<unsigned char*>(ws);
  float* partial = reinterpret_cast<float*>(base);
  float* dy_hi = reinterpret_cast<float*>(base + partial_bytes(prob));
  float* dy_lo = reinterpret_cast<float*>(base + partial_bytes(prob) + fp32_dy_bytes(prob));
  float* s_t_hi = reinterpret_cast<float*>(base + partial_bytes(prob) + 2 * fp32_dy_bytes(prob));
  float* s_t_lo = reinterpret_cast<float*>(base + partial_bytes(prob) + 2 * fp32_dy_bytes(prob) + fp32_s_t_bytes(prob));
  float* s = s_t_hi;  // [B, 3072] fits in [3072, ld]
  const float* w = static_cast<const float*>(t.weight);
  const float* dy = static_cast<const float*>(t.grad_out);
  const float* temb = static_cast<const float*>(t.temb);
  float* gw = static_cast<float*>(t.grad_weight);
  const int ld = fp32_s_t_ld(B);
  const std::int64_t count = static_cast<std::int64_t>(B) * kK;
  const bool combine_in_gradw = plan.gradw_wgmma && B <= kFp32CombineInGradWToB;
  const int bias_blocks = combine_in_gradw ? kBiasBlocks<float> : 0;
  const int dy_blocks = plan.dtemb_wgmma ? static_cast<int>(blocks_for(std::int64_t(B) * kN / kSiluVec, kSiluThreads)) : 0;
  const int t_blocks = plan.gradw_wgmma ? (ld / kTransposeTile) * (kK / kTransposeTile) : 0;
  cudaError_t err = cudaSuccess;
  if (bias_blocks + dy_blocks + t_blocks > 0)
    err = launch::kernel<fp32_backward_prep_kernel>(static_cast<unsigned>(bias_blocks + dy_blocks + t_blocks), kSiluThreads,
                                                    0, stream, dy, dy_hi, dy_lo, dy_blocks, temb, s_t_hi, s_t_lo, ld,
                                                    static_cast<float*>(t.grad_bias), bias_blocks, B);
  if (err == cudaSuccess && !plan.gradw_wgmma) err = launch_silu<float>(t.temb, s, B, stream);
  if (err == cudaSuccess)
    err = plan.dtemb_wgmma ? sm90::fp32_dtemb_wgmma(plan.dtemb_tile, B, dy_hi, dy_lo, w, partial, stream)
                           : tf32x3::dtemb_partials(B, w, dy, partial, stream);
  if (err == cudaSuccess) {
    const sm90::Fp32Combine combine =
        combine_in_gradw ? sm90::Fp32Combine{partial, temb, static_cast<float*>(t.grad_temb), count} : sm90::Fp32Combine{};
    err = plan.gradw_wgmma ? sm90::fp32_grad_weight_wgmma(B, ld, dy, s_t_hi, s_t_lo, gw, stream, combine,
                                                             plan.gradw_stores)
                           : tf32x3::grad_weight(B, dy, s, gw, stream);
  }
  if (err != cudaSuccess || combine_in_gradw) return err;
  return launch::kernel<backward_finish_kernel<float>>(kBiasBlocks<float> + blocks_for(count, kBiasThreads), kBiasThreads,
                                                       0, stream, partial, temb, static_cast<float*>(t.grad_temb), count,
                                                       dy, static_cast<float*>(t.grad_bias), B);
}

__global__ void strict_probe_kernel(const float* num, const float* den, float subnormal_in,
                                    float half, float* quot, float* root, float* sub_out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    quot[i] = num[i] / den[i];
    root[i] = sqrtf(num[i]);
  }
  if (i == 0) *sub_out = subnormal_in * half;
}

}  // namespace

std::size_t forward_workspace_bytes(const Problem& problem) {
  if (!supported(problem)) return 0;
  // fp32: room for s's two TF32 pieces, which the wgmma forward reads.
  return problem.storage == Storage::float32 ? 2 * silu_bytes(problem) : silu_bytes(problem);
}

std::size_t backward_workspace_bytes(const Problem& problem) {
  if (!supported(problem)) return 0;
  // fp32: the partials, grad_out's two pieces and s's two transposed pieces (backward_fp32).
  if (problem.storage == Storage::float32)
    return partial_bytes(problem) + 2 * fp32_dy_bytes(problem) + 2 * fp32_s_t_bytes(problem);
  return silu_bytes(problem) + partial_bytes(problem);
}

cudaError_t launch_forward(const Problem& problem, const ForwardTensors& tensors, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream, KernelChoice choice) {
  if (!supported(problem)) return cudaErrorInvalidValue;
  if (problem.B == 0) return cudaSuccess;
  if (workspace == nullptr || workspace_bytes < forward_workspace_bytes(problem))
    return cudaErrorInvalidValue;
  const int B = static_cast<int>(problem.B);
  if (problem.storage == Storage::float32) {
    Fp32ForwardPlan plan{};
    if (const cudaError_t err = resolve_fp32_forward(choice, B, &plan); err != cudaSuccess) return err;
    return forward_fp32(B, tensors, workspace, plan, problem, stream);
  }
  if (const cudaError_t err = resolve_bf16(&choice, B, Direction::forward); err != cudaSuccess) return err;
  return forward_bf16(B, tensors, workspace, choice, stream);
}

cudaError_t launch_backward(const Problem& problem, const BackwardTensors& tensors, void* workspace,
                            std::size_t workspace_bytes, cudaStream_t stream, KernelChoice choice) {
  if (!supported(problem)) return cudaErrorInvalidValue;
  if (workspace == nullptr || workspace_bytes < backward_workspace_bytes(problem))
    return cudaErrorInvalidValue;
  const int B = static_cast<int>(problem.B);
  Fp32BackwardPlan fp32_plan{};
  if (B > 0) {
    const cudaError_t err = problem.storage == Storage::bfloat16 ? resolve_bf16(&choice, B, Direction::backward)
                                                                 : resolve_fp32_backward(choice, B, &fp32_plan);
    if (err != cudaSuccess) return err;
  }
  if (B == 0) {
    // An empty batch still defines grad_weight and grad_bias: all zeros.
    const std::size_t es = elem_size(problem.storage);
    cudaError_t err = cudaMemsetAsync(tensors.grad_weight, 0, es * kN * kK, stream);
    if (err != cudaSuccess) return err;
    return cudaMemsetAsync(tensors.grad_bias, 0, es * kN, stream);
  }
  return problem.storage == Storage::float32 ? backward_fp32(B, tensors, problem, workspace, fp32_plan, stream)
                                            : backward_bf16(B, tensors, problem, workspace, choice, stream);
}

cudaError_t run_strict_math_probe(bool* strict, char* detail, std::size_t detail_capacity) {
  constexpr int n = 256;
  std::vector<float> num(n);
  std::vector<float> den(n);
  std::uint32_t state = 0x9e3779b9u;
  auto next = [&state]() {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int i = 0; i < n; ++i) {
    num[i] = 1.0f + static_cast<float>(next() >> 8) * 0x1p-24f * 1000.0f;
    den[i] = 1.0f + static_cast<float>(next() >> 8) * 0x1p-24f * 3.0f;
  }
  float* d = nullptr;
  cudaError_t err = cudaMalloc(&d, sizeof(float) * (4 * n + 1));
  if (err != cudaSuccess) return err;
  float* dnum = d;
  float* dden = d + n;
  float* dquot = d + 2 * n;
  float* droot = d + 3 * n;
  float* dsub = d + 4 * n;
  std::vector<float> quot(n);
  std::vector<float> root(n);
  float sub = 0.0f;
  const float subnormal_in = 0x1p-126f;  // smallest normal; half of it is subnormal
  err = cudaMemcpy(dnum, num.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(dden, den.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    strict_probe_kernel<<<1, n>>>(dnum, dden, subnormal_in, 0.5f, dquot, droot, dsub, n);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpy(quot.data(), dquot, sizeof(float) * n, cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(root.data(), droot, sizeof(float) * n, cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(&sub, dsub, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (err != cudaSuccess) return err;

  // Float quotients and square roots computed in double and rounded once are correctly rounded
  // (53 >= 2*24 + 2), so they are the exact IEEE results the device must reproduce.
  int div_bad = 0;
  int sqrt_bad = 0;
  for (int i = 0; i < n; ++i) {
    const float q = static_cast<float>(static_cast<double>(num[i]) / static_cast<double>(den[i]));
    const float r = static_cast<float>(std::sqrt(static_cast<double>(num[i])));
    if (std::memcmp(&q, &quot[i], sizeof(float)) != 0) ++div_bad;
    if (std::memcmp(&r, &root[i], sizeof(float)) != 0) ++sqrt_bad;
  }
  const bool sub_ok = sub == 0x1p-127f;
  *strict = div_bad == 0 && sqrt_bad == 0 && sub_ok;
  if (detail != nullptr && detail_capacity > 0) {
    std::snprintf(detail, detail_capacity,
                  "division mismatches %d/%d, sqrt mismatches %d/%d, subnormal %s", div_bad, n,
                  sqrt_bad, n, sub_ok ? "kept" : "flushed");
  }
  return cudaSuccess;
}

}  // namespace rlk::cuda::qwenimage
