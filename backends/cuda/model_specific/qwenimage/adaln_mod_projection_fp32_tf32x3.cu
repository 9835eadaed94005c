// The fp32 forward on tensor cores (see adaln_mod_projection_fp32_tf32x3.hpp).
//
// The chain every tiling evaluates for y[b, n] (the contract of docs/operators/, written out):
//   sum = +0;
//   for each chunk c of 32 k, ascending:
//     acc = +0;
//     for each k8 step of the chunk, ascending, one mma.sync m16n8k8 TF32 instruction per product,
//     in this order: s_lo W_hi, s_hi W_lo, s_hi W_hi (the truncated pieces of s[b, k] and W[n, k]
//     over the step's 8 k, device::tf32_cut), all into acc;
//     sum = sum + acc (one FP32 add);
//   y = sum + bias[n].
// The instruction computes D = A B + C with A 16 x 8 (rows of W here) and B 8 x 8 (rows of s),
// every element of D on its own: which rows and batch rows share an instruction changes nothing.
// Rows of s past B are zeros in shared memory; their outputs are never stored.
//
// Cost per element (why the pieces are cut this way): a W element is used by one warp of the CTA
// once, so its pieces are cut in registers right after its fragment load (ldmatrix: one
// instruction per four elements of a thread), three integer/FP32 instructions per element
// (mask, subtract, mask); s is shared by every warp of the CTA, so its pieces are cut once per
// stage into shared memory by the pipeline's prepare step (SiLU first where the tiling reads temb).
//
// Written by hand, not with CUTLASS: the chunked fold (a fresh accumulator per 32 k added into a
// running FP32 sum) sits inside the mainloop, which CUTLASS's 3xTF32 GEMMs (one accumulator through
// the whole reduction) do not have.
#include "adaln_mod_projection_fp32_tf32x3.hpp"

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_tf32.cuh"
#include "adaln_mod_projection_launch.hpp"

namespace rlk::cuda::qwenimage::tf32x3 {
namespace {

using namespace device;

constexpr int kChunk = 32;  // k per chunk of the contract
static_assert(kK % kChunk == 0 && kChunk % 8 == 0);

// kWarpsM x kWarpsN warps; each owns kMT m16 tiles (rows of W) x kNT n8 tiles (batch rows). A
// pipeline stage holds kChunks chunks of k; a warp runs their accumulators side by side (they are
// independent until each is added to the running sum, in order), so that a warp with few tiles
// still has several tensor-core chains in flight. A stage is W's rows, then s's rows (its hi
// pieces once prepared), then s's lo pieces, each kPitch floats per row.
template <int kWarpsM_, int kWarpsN_, int kMT_, int kNT_, int kChunks_, int kStages_, bool kSilu_>
struct Config {
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_, kMT = kMT_, kNT = kNT_, kStages = kStages_;
  static constexpr int kChunks = kChunks_;
  static constexpr bool kSilu = kSilu_;  // x is temb (SiLU computed here) rather than s
  static constexpr int kStageK = kChunks * kChunk;
  static constexpr int kPitch = kStageK + 4;  // the 8 rows of an ldmatrix phase hit 8 distinct 16-byte bank groups
  static constexpr int kSteps = kK / kStageK;
  static constexpr int kRowsW = 16 * kMT * kWarpsM;  // rows of W per CTA
  static constexpr int kRowsS = 8 * kNT * kWarpsN;   // batch rows per CTA
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kStageFloats = (kRowsW + 2 * kRowsS) * kPitch;
  static constexpr std::size_t kSmemBytes = std::size_t(kStages) * kStageFloats * sizeof(float);
  static_assert(kN % kRowsW == 0 && (kRowsW * kStageK / 4) % kThreads == 0 && kK % kStageK == 0 && kPitch % 32 == 4);
  static_assert(kStages >= 3, "the prepare step awaits two stages");
};

// 144 rows of W per CTA (128 CTAs per batch tile: one wave on a 132-SM H200) for the 8-, 16- and
// 64-row batch tiles; 128 x 128 for the largest batches. Measured on the H200 (docs/notes/
// cuda-kernels.md, twenty-first session), against one chunk per stage, 16 x 64 warp tiles and
// fewer stages: the 8- and 16-row tiles with two chunks per stage and 4 stages (174 and 191 KB),
// the 64-row tiles as 3 x 2 warps of 48 x 32 (157 KB), the 128-row tiles as 4 x 4 warps of
// 32 x 32 with 4 stages (221 KB). A device with less shared memory per block (an A100: 163 KB) runs the 64-row
// tiles for every B (resolve_fp32_forward in adaln_mod_projection_kernels.cu).
using Batch8 = Config<9, 1, 1, 1, 2, 4, true>;
using Batch16 = Config<9, 1, 1, 2, 2, 4, true>;
using Batch64 = Config<3, 2, 3, 4, 1, 4, false>;
using Batch128 = Config<4, 4, 2, 4, 1, 4, false>;

template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    forward_kernel(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                   float* __restrict__ out, int B) {
  extern __shared__ __align__(16) float smem[];
  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int warp_m = warp % C::kWarpsM, warp_n = warp / C::kWarpsM;
  const int b0 = blockIdx.x * C::kRowsS;  // batch tiles vary fastest: CTAs side by side share W's rows
  const int n0 = blockIdx.y * C::kRowsW;
  const int rows_s = min(C::kRowsS, B - b0);
  const float* w_rows = W + static_cast<std::int64_t>(n0) * kK;
  const float* s_rows = x + static_cast<std::int64_t>(b0) * kK;

  // Batch rows past B: zeros (both pieces) in every stage, never loaded (shared memory only:
  // before the wait); the prepare step leaves them as they are.
  constexpr int kStageK = C::kStageK, kPitch = C::kPitch;
  const int pad_rows = C::kRowsS - rows_s;
  for (int idx = tid; idx < C::kStages * 2 * pad_rows * kStageK; idx += C::kThreads) {
    const int slot = idx / (2 * pad_rows * kStageK);
    const int rest = idx % (2 * pad_rows * kStageK);
    const int piece = rest / (pad_rows * kStageK), cell = rest % (pad_rows * kStageK);
    smem[slot * C::kStageFloats + (C::kRowsW + piece * C::kRowsS + rows_s + cell / kStageK) * kPitch + cell % kStageK] = 0.0f;
  }

  auto issue = [&](int step) {
    float* st = smem + (step % C::kStages) * C::kStageFloats;
    stage_tile<C::kRowsW, kStageK, kPitch, C::kThreads, kK>(st, w_rows + step * kStageK, tid);
    stage_rows<kStageK, kPitch, C::kThreads, kK>(st + C::kRowsW * kPitch, s_rows + step * kStageK, rows_s, tid);
  };
  // s's pieces (after SiLU where x is temb): hi in place, lo in the stage's lo rows.
  auto prepare = [&](int slot) {
    float* ss = smem + slot * C::kStageFloats + C::kRowsW * kPitch;
    for (int idx = tid; idx < rows_s * kStageK; idx += C::kThreads) {
      const int off = (idx / kStageK) * kPitch + idx % kStageK;
      float v = ss[off];
      if constexpr (C::kSilu) v = round_to<float>(silu_f32(v));
      std::uint32_t hi, lo;
      tf32_cut(v, hi, lo);
      ss[off] = __uint_as_float(hi);
      ss[C::kRowsS * kPitch + off] = __uint_as_float(lo);
    }
  };
  // n8 tiles whose batch rows all lie past B: their instructions are skipped (warp-uniform).
  const int first_b = b0 + warp_n * C::kNT * 8;
  const int live_nt = min(C::kNT, max(0, (B - first_b + 7) / 8));

  // ldmatrix row addresses (lane i gives row i % 8 of matrix i / 8). A (W, 16 x 8): matrices
  // (rows 0-7, k 0-3), (rows 8-15, k 0-3), (rows 0-7, k 4-7), (rows 8-15, k 4-7) give a0 .. a3.
  // B (s, 8 x 8 per n8 tile): (hi, k 0-3), (hi, k 4-7), (lo, k 0-3), (lo, k 4-7) give
  // b0, b1 of the hi pieces and b0, b1 of the lo pieces.
  const int mat = lane >> 3, mrow = lane & 7;
  const int a_off = (warp_m * C::kMT * 16 + mrow + 8 * (mat & 1)) * kPitch + 4 * (mat >> 1);
  const int b_off = (C::kRowsW + (mat >> 1) * C::kRowsS + warp_n * C::kNT * 8 + mrow) * kPitch + 4 * (mat & 1);

  float acc[C::kChunks][C::kMT][C::kNT][4];
  float sum[C::kMT][C::kNT][4];
#pragma unroll
  for (int i = 0; i < C::kMT; ++i)
#pragma unroll
    for (int j = 0; j < C::kNT; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) sum[i][j][q] = 0.0f;

  auto consume = [&](int slot) {
    const float* st = smem + slot * C::kStageFloats;
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c)
#pragma unroll
      for (int i = 0; i < C::kMT; ++i)
#pragma unroll
        for (int j = 0; j < C::kNT; ++j)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[c][i][j][q] = 0.0f;
#pragma unroll
    for (int k8 = 0; k8 < kChunk; k8 += 8) {
      // W's pieces of every chunk and tile of this step, then s's; then the three products, each
      // for every (chunk, tile) before the next product, so that the instructions in flight
      // together belong to independent accumulators (each accumulator still takes its three in
      // order).
      std::uint32_t w_pieces[C::kChunks][C::kMT][2][4];
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c)
#pragma unroll
        for (int i = 0; i < C::kMT; ++i) {
          std::uint32_t raw[4];
          ldmatrix_x4(raw, st + a_off + i * 16 * kPitch + c * kChunk + k8);
#pragma unroll
          for (int q = 0; q < 4; ++q) tf32_cut(__uint_as_float(raw[q]), w_pieces[c][i][0][q], w_pieces[c][i][1][q]);
        }
#pragma unroll
      for (int j = 0; j < C::kNT; ++j) {
        if (j >= live_nt) continue;
        // s_pieces[c][0..1] = hi b0, b1; [2..3] = lo b0, b1.
        std::uint32_t s_pieces[C::kChunks][4];
#pragma unroll
        for (int c = 0; c < C::kChunks; ++c) ldmatrix_x4(s_pieces[c], st + b_off + j * 8 * kPitch + c * kChunk + k8);
#pragma unroll
        for (int p = 0; p < 3; ++p) {
          const int wp = p == 1 ? 1 : 0, sp = p == 0 ? 2 : 0;
#pragma unroll
          for (int c = 0; c < C::kChunks; ++c)
#pragma unroll
            for (int i = 0; i < C::kMT; ++i)
              mma_tf32(acc[c][i][j], w_pieces[c][i][wp], s_pieces[c][sp], s_pieces[c][sp + 1]);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c)  // the chunks in ascending order
#pragma unroll
      for (int i = 0; i < C::kMT; ++i)
#pragma unroll
        for (int j = 0; j < C::kNT; ++j)
#pragma unroll
          for (int q = 0; q < 4; ++q) sum[i][j][q] = sum[i][j][q] + acc[c][i][j][q];
  };

  await_prior_grids();
  stream_stages<C::kStages, C::kSteps>(issue, consume, prepare);
  release_dependent_grids();

  // D fragment: element q is (row g + 8 (q / 2), batch row 2t + q % 2) of the 16 x 8 tile.
#pragma unroll
  for (int i = 0; i < C::kMT; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int n = n0 + warp_m * C::kMT * 16 + i * 16 + g + 8 * half;
      const float bn = bias[n];
#pragma unroll
      for (int j = 0; j < C::kNT; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int b = b0 + warp_n * C::kNT * 8 + j * 8 + 2 * t + e;
          if (b < B) out[static_cast<std::int64_t>(b) * kN + n] = sum[i][j][2 * half + e] + bn;
        }
      }
    }
  }
}

template <class C>
cudaError_t launch(int B, const float* x, const float* weight, const float* bias, float* out, cudaStream_t stream) {
  if (const cudaError_t err = launch::allow_smem<forward_kernel<C>>(C::kSmemBytes); err != cudaSuccess) return err;
  const dim3 grid((B + C::kRowsS - 1) / C::kRowsS, kN / C::kRowsW);
  return launch::kernel<forward_kernel<C>>(grid, C::kThreads, C::kSmemBytes, stream, x, weight, bias, out, B);
}

std::size_t smem_bytes(Tile t) {
  switch (t) {
    case Tile::batch8: return Batch8::kSmemBytes;
    case Tile::batch16: return Batch16::kSmemBytes;
    case Tile::batch64: return Batch64::kSmemBytes;
    case Tile::batch128: return Batch128::kSmemBytes;
  }
  return 0;
}

// The proposed tensor-core backward's GEMMs on mma.sync (devices without the sm_90a kernels):
// C[m, n] = the same chain as sm90::fp32_dtemb_wgmma / fp32_grad_weight_wgmma, per element
// (A_hi B_lo, A_lo B_hi, A_hi B_hi per k8 step, one instruction each, a fresh accumulator per chunk of
// 32, one FP32 add per chunk), with A(m, k) = a[m a_sm + k a_sk] and B(n, k) = b[n b_sn + k b_sk] read
// as FP32 and cut in registers (the pieces the wgmma kernels read from the workspace: the same
// elementwise cut). Elements at n >= n_valid or k >= k_valid are zeros. A CTA of 2 x 2 warps owns
// 64 x 64 outputs, each warp 32 x 32 (2 m16 x 4 n8 tiles); one chunk of both operands per stage,
// staged with plain loads along whichever index is contiguous (kept simple: these devices are not
// the ones the performance targets are for).
struct Operand {
  const float* p;
  std::int64_t s_row, s_k;  // strides of the row (m or n) and of k, in elements
};
struct ChainStore {
  float* out;
  std::int64_t ld, slice_stride;  // out[z slice_stride + n ld + m] (transposed) or out[m ld + n]
  int n_valid;
  bool transposed;
};
constexpr int kChainTile = 64, kChainPitch = kChunk + 4, kChainThreads = 128;

__device__ __forceinline__ void stage_chunk(float* dst, const Operand& op, int row0, int rows_valid, int k,
                                            int k_valid, int tid) {
  const bool k_contiguous = op.s_k == 1;
  for (int idx = tid; idx < kChainTile * kChunk; idx += kChainThreads) {
    const int r = k_contiguous ? idx / kChunk : idx % kChainTile;
    const int c = k_contiguous ? idx % kChunk : idx / kChainTile;
    const int row = row0 + r, kk = k + c;
    dst[r * kChainPitch + c] = row < rows_valid && kk < k_valid ? op.p[row * op.s_row + kk * op.s_k] : 0.0f;
  }
}

__global__ void __launch_bounds__(kChainThreads) chain_kernel(const Operand a, const Operand b, const ChainStore st,
                                                              int m_valid, int k_valid, int chunks) {
  __shared__ float sa[kChainTile * kChainPitch], sb[kChainTile * kChainPitch];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
  const int n0 = blockIdx.x * kChainTile, m0 = blockIdx.y * kChainTile;
  const int k0 = blockIdx.z * chunks * kChunk;
  float sum[2][4][4], acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) sum[i][j][q] = 0.0f;
  await_prior_grids();
  for (int c = 0; c < chunks; ++c) {
    const int k = k0 + c * kChunk;
    __syncthreads();
    stage_chunk(sa, a, m0, m_valid, k, k_valid, tid);
    stage_chunk(sb, b, n0, st.n_valid, k, k_valid, tid);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
#pragma unroll
    for (int k8 = 0; k8 < kChunk; k8 += 8) {
      std::uint32_t ap[2][2][4], bp[4][2][2];  // [tile][hi, lo][register]
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int row = wm + 16 * i + g + 8 * (q & 1), kk = k8 + t + 4 * (q >> 1);
          tf32_cut(sa[row * kChainPitch + kk], ap[i][0][q], ap[i][1][q]);
        }
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) tf32_cut(sb[(wn + 8 * j + g) * kChainPitch + k8 + t + 4 * q], bp[j][0][q], bp[j][1][q]);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          mma_tf32(acc[i][j], ap[i][0], bp[j][1][0], bp[j][1][1]);
          mma_tf32(acc[i][j], ap[i][1], bp[j][0][0], bp[j][0][1]);
          mma_tf32(acc[i][j], ap[i][0], bp[j][0][0], bp[j][0][1]);
        }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) sum[i][j][q] = sum[i][j][q] + acc[i][j][q];
  }
  release_dependent_grids();
  // D fragment: element q is (row g + 8 (q / 2), column 2t + q % 2) of the 16 x 8 tile.
  float* out = st.out + blockIdx.z * st.slice_stride;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; q += 2) {
        const int m = m0 + wm + 16 * i + g + 8 * (q >> 1), n = n0 + wn + 8 * j + 2 * t;
        if (!st.transposed) {  // the two adjacent columns at once
          *reinterpret_cast<float2*>(out + m * st.ld + n) = make_float2(sum[i][j][q], sum[i][j][q + 1]);
        } else {
          if (n < st.n_valid) out[n * st.ld + m] = sum[i][j][q];
          if (n + 1 < st.n_valid) out[(n + 1) * st.ld + m] = sum[i][j][q + 1];
        }
      }
}

cudaError_t launch_chain(const Operand& a, const Operand& b, const ChainStore& st, int m_extent, int n_extent,
                         int k_valid, int chunks, int slices, cudaStream_t stream) {
  const dim3 grid((n_extent + kChainTile - 1) / kChainTile, m_extent / kChainTile, slices);
  return launch::kernel<chain_kernel>(grid, kChainThreads, 0, stream, a, b, st, m_extent, k_valid, chunks);
}

}  // namespace

cudaError_t fits_current_device(Tile t, bool* fits) { return launch::fits(smem_bytes(t), fits); }

cudaError_t forward(Tile t, int B, const float* x, const float* weight, const float* bias, float* out,
                    cudaStream_t stream) {
  if (B < 1 || (computes_silu(t) && B > batch_rows(t))) return cudaErrorInvalidValue;
  switch (t) {
    case Tile::batch8: return launch<Batch8>(B, x, weight, bias, out, stream);
    case Tile::batch16: return launch<Batch16>(B, x, weight, bias, out, stream);
    case Tile::batch64: return launch<Batch64>(B, x, weight, bias, out, stream);
    case Tile::batch128: return launch<Batch128>(B, x, weight, bias, out, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t dtemb_partials(int B, const float* weight, const float* grad_out, float* partial, cudaStream_t stream) {
  if (B < 1) return cudaErrorInvalidValue;
  const Operand a{weight, 1, kK};       // A(k, n) = W[n, k]
  const Operand b{grad_out, kN, 1};     // B(b, n) = dy[b, n]
  const ChainStore st{partial, kK, std::int64_t(B) * kK, B, true};
  return launch_chain(a, b, st, kK, B, kN, kN / kSplitN / kChunk, kSplitN, stream);
}

cudaError_t grad_weight(int B, const float* grad_out, const float* s, float* grad_weight, cudaStream_t stream) {
  if (B < 1) return cudaErrorInvalidValue;
  const Operand a{grad_out, 1, kN};  // A(n, b) = dy[b, n]
  const Operand b{s, 1, kK};         // B(k, b) = s[b, k]
  const ChainStore st{grad_weight, kK, 0, kK, false};
  return launch_chain(a, b, st, kN, kK, B, (B + kChunk - 1) / kChunk, 1, stream);
}

}  // namespace rlk::cuda::qwenimage::tf32x3
