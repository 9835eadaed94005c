// The fp32 3xTF32 chains on Hopper's wgmma (see adaln_mod_projection_sm90.hpp): one kernel template,
// C = sum over K of A B^T, for the forward of the larger batches (A = W, B = s) and the backward
// (d_temb: A = W read along its columns, B = grad_out; grad_weight: A = grad_out read along its
// columns, B = s transposed). Per element, the chain of
// adaln_mod_projection_fp32_tf32x3.cu with the products of each k8 step on one wgmma m64nNk8 TF32
// instruction instead of mma.sync m16n8k8 ones:
//   sum = +0;
//   for each chunk c of 32 k, ascending:
//     acc = +0;
//     for each k8 step of the chunk, ascending: A_hi B_lo, A_lo B_hi, A_hi B_hi (the truncated
//     pieces, device::tf32_cut), one instruction each, into acc;
//     sum = sum + acc (one FP32 add);
//   forward: y = sum + bias[n].
// Both instructions compute every element of D = A B + C on its own from its 8 exact TF32 products
// and C (measured byte for byte against the mma.sync tilings, tests/cuda/test_kernel_paths.cpp).
//
// Layout: 64 rows of A per consumer warpgroup (the wgmma M side; two warpgroups, or one for the
// small-batch d_temb) against 32, 64 or 128 rows of B (the N side: m64n32k8, m64n64k8 or
// m64n128k8) per CTA; a producer warpgroup issues TMA loads of the three tiles of each chunk (A
// M x 32, B_hi and B_lo N x 32, FP32, 128-byte swizzle) into as many stages as fill 192 KB (64 KB
// with one consumer). The tile changes which instruction computes an element, never the element's
// chain: each of its k8 steps is one instruction whatever N is. A's pieces are cut in registers
// after its shared-memory load (A from registers), so A is read once as FP32 and no workspace holds
// its pieces; B's pieces, shared by every CTA of a row of tiles, come cut from the workspace
// (silu_pieces_kernel and fp32_backward_prep_kernel, adaln_mod_projection_kernels.cu). Rows past an operand's extent are zeros from TMA's
// out-of-bounds fill; their outputs are never stored. grad_weight's sums leave through shared
// memory and TMA stores (kTmaStore: whole 128-byte lines, no store instructions per thread).
//
// Written by hand, not with CUTLASS: the contract's fold of a fresh accumulator per 32 k into a
// running FP32 sum sits inside the mainloop, which CUTLASS's sm_90 GEMMs (one accumulator through
// the whole reduction, no FP32-emulation mainloop in CUTLASS 4.2) do not have.
#include "adaln_mod_projection_sm90.hpp"

#if defined(RLK_WITH_SM90_GEMM)

#include <algorithm>
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

using device::kK;
using device::kN;
using device::kSplitN;  // d_temb's fixed slices of N
constexpr int kChunk = 32;
constexpr int kChunks = kK / kChunk;
static_assert(kChunk * 4 == 128 && kN % 128 == 0 && kK % kChunk == 0 && (kN / kSplitN) % kChunk == 0);

// A's layout in global memory. K-major: rows of K (W in the forward), read in 128 x 32 boxes and
// loaded with ldmatrix. M-major: rows of M (W in d_temb, grad_out in grad_weight), read in 32 x 32
// boxes (32 k rows of 32 m) and loaded as scalars (ldmatrix cannot transpose 32-bit elements).
enum class AMajor { k, m };

// The shapes of one tiling: kRowsN rows of B's operand per CTA (the wgmma N side), 64 rows of A
// per consumer warpgroup (the M side).
// kTmaStore: the sums leave through shared memory and TMA stores (grad_weight), which takes a
// staging area of the CTA's whole output tile from the stages.
template <int kRowsN, int kConsumers, bool kTmaStore = false>
struct Shape {
  static constexpr int kRowsM = 64 * kConsumers;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kATileBytes = kRowsM * kChunk * 4;
  static constexpr int kBTileBytes = kRowsN * kChunk * 4;
  static constexpr int kStageBytes = kATileBytes + 2 * kBTileBytes;  // A, B_hi, B_lo
  static constexpr int kStagingBytes = kTmaStore ? kRowsM * kRowsN * 4 : 0;
  // Two consumers: one CTA per SM with 192 KB of stages (less the staging area). One consumer (the
  // small-B d_temb, where 64 rows per CTA make enough CTAs): 64 KB, so that three CTAs share an SM.
  static constexpr int kStagesBytes = kConsumers == 2 ? 208 * 1024 - kStagingBytes : 64 * 1024;
  static constexpr int kStages = kStagesBytes / kStageBytes;
  // stages, barriers (1024-byte slot, so the staging area stays aligned), staging; + alignment slack
  static constexpr int kBarriersOffset = kStages * kStageBytes;
  static constexpr int kStagingOffset = kBarriersOffset + 1024;
  static constexpr int kSmemBytes = kStagingOffset + kStagingBytes + 1024;
  static constexpr int kAcc = kRowsN / 2;  // accumulator registers per thread of an m64nNk8 instruction
  static_assert(kBTileBytes % 1024 == 0 && kStages >= 2 && 2 * kStages * 8 <= 1024);
};

struct Maps {
  CUtensorMap a, b_hi, b_lo;
  CUtensorMap out;  // the TMA stores' map (kTmaStore): the output in 64 x 32 boxes
};

// Where the sums go without kTmaStore: out[z * slice_stride + nn * ld + m] (the forward's y and
// d_temb's partials, nn the batch row, stored where nn < n_valid, plus bias[m] where bias is not
// null). With kTmaStore (grad_weight) maps.out says where: out[m][nn].
struct Store {
  float* out;
  const float* bias;
  std::int64_t ld, slice_stride;
  int n_valid;
  int n_tiles = 0, total_tiles = 0;  // persistent kernels: N tiles per row of tiles, all tiles
  Fp32Combine combine{};             // kTmaStore (grad_weight): grad_temb after the tiles where partial is set
};

#define RLK_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define RLK_REGS16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define RLK_REGS32 RLK_REGS16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define RLK_REGS64                                                                                            \
  RLK_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, " \
             "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
// d += a b: a the warpgroup's 64 x 8 TF32 fragment in registers, b an N x 8 K-major tile (descriptor).
__device__ __forceinline__ void wgmma_rs(float (&d)[4], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1, 1, 1;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wgmma_rs(float (&d)[8], const std::uint32_t (&a)[4], std::uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, 1, 1;"
               : RLK_ACC8(0)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
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

// Row of A (0 .. 63 of the warpgroup's 64) that row r (0 .. 15) of warp w's fragment holds. K-major:
// row 16 w + r, as ldmatrix lays it out. M-major: the warpgroup's two 32-row boxes, warps 0-1 in the
// first; within a box bit 4 of the row is r's bit 2, bit 3 the warp's, bit 2 r's bit 3 and bits 0-1
// r's: then the 32 lanes of each scalar load (r = lane / 4 (+ 8), k = lane % 4 (+ 4)) hit 32
// distinct banks of the 128-byte-swizzled box.
template <AMajor kA>
__device__ __forceinline__ int a_row(int w, int r) {
  if constexpr (kA == AMajor::k) return 16 * w + r;
  return 32 * (w / 2) + 16 * ((r >> 2) & 1) + 8 * (w & 1) + 4 * (r >> 3) + (r & 3);
}

// C = sum over K of A B^T by the contract's chain, per element:
//   sum = +0;
//   for each chunk of 32 k of the CTA's K range (blockIdx.z's slice of `chunks` chunks), ascending:
//     acc = +0;
//     for each k8 step of the chunk, ascending: A_hi B_lo, A_lo B_hi, A_hi B_hi (the truncated
//     pieces, device::tf32_cut), one wgmma instruction each, into acc;
//     sum = sum + acc (one FP32 add);
// then `st` stores sum (+ bias). A is FP32, cut in registers after its shared-memory load (A from
// registers); B's pieces come cut, K-major. A producer warpgroup issues the TMA loads of each
// chunk's tiles into the stages; rows past either operand's extent are zeros from TMA's
// out-of-bounds fill and add exact zeros; sums of rows past n_valid are never stored.
template <int kRowsN, int kConsumers, AMajor kA, bool kPersistent, bool kTmaStore, bool kBoxGroups = false>
__global__ void __launch_bounds__(Shape<kRowsN, kConsumers, kTmaStore>::kThreads, kConsumers == 2 ? 1 : 3)
    chain_kernel(const __grid_constant__ Maps maps, const Store st, int chunks) {
  // kPersistent: CTA x takes tiles x, x + gridDim.x, ... of the row-major tile grid (N tiles
  // fastest), one after the other through the same stages (the producer runs ahead into the next
  // tile while the consumers store one); otherwise one tile per CTA, N tile blockIdx.x of row of
  // tiles blockIdx.y (consecutive CTAs share A's tile, read from L2 after the first).
  const int tiles = kPersistent ? (st.total_tiles - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x) : 1;
  using S = Shape<kRowsN, kConsumers, kTmaStore>;
  constexpr int kStages = S::kStages, kStageBytes = S::kStageBytes, kAcc = S::kAcc;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(base + S::kBarriersOffset);
  std::uint64_t* empty = full + kStages;
  const int t = threadIdx.x;
  const int wg = t / 128;
  auto tile_n0 = [&](int tl) {
    if constexpr (kPersistent) return (int(blockIdx.x + tl * gridDim.x) % st.n_tiles) * kRowsN;
    return int(blockIdx.x) * kRowsN;
  };
  auto tile_m0 = [&](int tl) {
    if constexpr (kPersistent) return (int(blockIdx.x + tl * gridDim.x) / st.n_tiles) * S::kRowsM;
    return int(blockIdx.y) * S::kRowsM;
  };
  const int k0 = blockIdx.z * chunks * kChunk;
  if (t == 0) stages_init(full, empty, kStages, kConsumers);
  __syncthreads();
  await_prior_grids();
  auto tile = [&](int s, int p) {  // A, B_hi, B_lo
    return base + s * kStageBytes + (p == 0 ? 0 : S::kATileBytes + (p - 1) * S::kBTileBytes);
  };

  if (wg == kConsumers) {  // producer
    if constexpr (kConsumers == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 128 * kConsumers) {
      for (int f = 0; f < tiles * chunks; ++f) {
        const int s = stage_acquire(full, empty, f, kStages, kStageBytes);
        const int k = k0 + (f % chunks) * kChunk, n0 = tile_n0(f / chunks), m0 = tile_m0(f / chunks);
        if constexpr (kA == AMajor::k) {
          tma_load(tile(s, 0), &maps.a, k, m0, &full[s]);
        } else {
#pragma unroll
          for (int box = 0; box < S::kRowsM / 32; ++box) tma_load(tile(s, 0) + box * 4096, &maps.a, m0 + 32 * box, k, &full[s]);
        }
        tma_load(tile(s, 1), &maps.b_hi, k, n0, &full[s]);
        tma_load(tile(s, 2), &maps.b_lo, k, n0, &full[s]);
      }
    }
    return;
  }
  if constexpr (kConsumers == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int warp = (t % 128) / 32, lane = t % 32;
  const int g = lane / 4, tq = lane % 4;
  // K-major: ldmatrix rows. Lanes 0-7 / 8-15 / 16-23 / 24-31 address the four 8 x 4 FP32 matrices of
  // a k8 step's fragment (rows 0-7 k 0-3, rows 8-15 k 0-3, rows 0-7 k 4-7, rows 8-15 k 4-7), which
  // land in registers 0-3 as the TF32 A fragment of wgmma (and of mma.sync m16n8k8) wants them.
  const int ld_row = a_row<AMajor::k>(warp, (lane & 7) + 8 * ((lane >> 3) & 1));
  const int ld_half = lane >> 4;
  // M-major: register q = h + 2 e holds (row g + 8 h, k tq + 4 e); the row's place in its box.
  int box_off[2], box_unit[2];  // the row's box and 4-byte word, and its 16-byte unit (swizzled per k)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = a_row<AMajor::m>(warp, g + 8 * h);
    box_off[h] = (m / 32) * 4096 + (m % 4) * 4;
    box_unit[h] = (m % 32) / 4;
  }
  for (int tl = 0; tl < tiles; ++tl) {
    const int n0 = tile_n0(tl), m0 = tile_m0(tl);
    float sum[kAcc], acc[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) sum[i] = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const int f = tl * chunks + c;
      const int s = f % kStages;
      mbar_wait(&full[s], (f / kStages) & 1);
      const unsigned char* a = tile(s, 0) + wg * 64 * 128;  // this warpgroup's 64 rows of A
      const unsigned char* b_hi = tile(s, 1);
      const unsigned char* b_lo = tile(s, 2);
      std::uint32_t hi[4][4], lo[4][4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        std::uint32_t raw[4];
        if constexpr (kA == AMajor::k) {  // k8 step j: 16-byte units 2j and 2j + 1 of the 128-byte row
          const int unit = 2 * j + ld_half;
          device::ldmatrix_x4(raw, a + ld_row * 128 + ((unit ^ (ld_row & 7)) * 16));  // 128-byte swizzle
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int h = q & 1, k = 8 * j + tq + 4 * (q >> 1);
            const int off = box_off[h] + k * 128 + ((box_unit[h] ^ (k & 7)) * 16);
            raw[q] = lds_u32(a + off);
          }
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) tf32_cut(__uint_as_float(raw[q]), hi[j][q], lo[j][q]);
      }
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        wgmma_rs(acc, hi[j], desc_sw128(b_lo + 32 * j));
        wgmma_rs(acc, lo[j], desc_sw128(b_hi + 32 * j));
        wgmma_rs(acc, hi[j], desc_sw128(b_hi + 32 * j));
      }
      wgmma_commit();
      wgmma_wait_all();
      if (t % 128 == 0) mbar_arrive(&empty[s]);
#pragma unroll
      for (int i = 0; i < kAcc; ++i) sum[i] = sum[i] + acc[i];
    }
    if (tl == tiles - 1) release_dependent_grids();
    // acc index i = 4 j + q: row g + 8 (q / 2) of the warp's fragment, column 8 j + 2 tq + q % 2 of
    // the tile.
    if constexpr (kTmaStore) {
      // The warpgroup's 64 rows x kRowsN columns into its staging area as kRowsN / 32 boxes of
      // 64 x 32 with the map's 128-byte swizzle (the 16-byte unit of column c of row r at unit
      // (c / 4) ^ (r % 8)), then one thread stores the boxes. The previous tile's stores must have
      // read the area first.
      unsigned char* staging = base + S::kStagingOffset + wg * 64 * kRowsN * 4;
      // Accumulators [i0, i1) into the staging area (box (8 (i / 4) + 2 tq) / 32 of them).
      auto stage_sums = [&](int i0, int i1) {
#pragma unroll
        for (int i = i0; i < i1; i += 2) {
          const int r = a_row<kA>(warp, g + 8 * ((i % 4) / 2));
          const int c = 8 * (i / 4) + 2 * tq;
          const int off = (c / 32) * 8192 + r * 128 + ((((c % 32) / 4) ^ (r % 8)) * 16) + (c % 4) * 4;
          sts_f32x2(staging + off, sum[i], sum[i + 1]);
        }
      };
      if constexpr (kBoxGroups) {
        // Box by box, each its own bulk group: box j of this tile is written once box j of the
        // previous one has been read (at most kBoxes - 1 newer groups pending), so the staging
        // writes of one box overlap the stores of the others.
        constexpr int kBoxes = kRowsN / 32;
#pragma unroll
        for (int box = 0; box < kBoxes; ++box) {
          if (tl > 0) {
            if (t % 128 == 0) bulk_wait_read<kBoxes - 1>();
            named_barrier(1 + wg, 128);
          }
          stage_sums(box * 16, box * 16 + 16);
          fence_proxy_async();
          named_barrier(1 + wg, 128);
          if (t % 128 == 0) {
            tma_store(&maps.out, staging + box * 8192, n0 + 32 * box, m0 + wg * 64);
            bulk_commit();
          }
        }
        if (t % 128 == 0 && tl == tiles - 1) bulk_wait();
        continue;
      }
      if (tl > 0) {
        if (t % 128 == 0) bulk_wait_read();
        named_barrier(1 + wg, 128);
      }
      stage_sums(0, kAcc);
      fence_proxy_async();
      named_barrier(1 + wg, 128);
      if (t % 128 == 0) {
#pragma unroll
        for (int box = 0; box < kRowsN / 32; ++box) tma_store(&maps.out, staging + box * 8192, n0 + 32 * box, m0 + wg * 64);
        bulk_commit();
        if (tl == tiles - 1) bulk_wait();
      }
      continue;
    }
    float* out = st.out + blockIdx.z * st.slice_stride;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) {
      const int m = m0 + wg * 64 + a_row<kA>(warp, g + 8 * ((i % 4) / 2));
      const int nn = n0 + 8 * (i / 4) + 2 * tq + i % 2;
      if (nn < st.n_valid) out[nn * st.ld + m] = st.bias != nullptr ? sum[i] + st.bias[m] : sum[i];
    }
  }
  if constexpr (kTmaStore) {
    // grad_temb (st.combine, small B): kCombineVec elements per consumer thread and step, from the
    // last CTA down, whose CTAs have one tile fewer where the tiles do not divide evenly. The grids
    // before this one have completed (await_prior_grids above), the d_temb kernel's among them.
    const Fp32Combine& cb = st.combine;
    if (cb.partial != nullptr) {
      constexpr int kCombineThreads = 128 * kConsumers;
      const std::int64_t step = std::int64_t(gridDim.x) * kCombineThreads * device::kCombineVec;
      for (std::int64_t i = (std::int64_t(gridDim.x - 1 - blockIdx.x) * kCombineThreads + t) * device::kCombineVec;
           i < cb.count; i += step)
        device::dtemb_combine_vec(cb.partial, cb.temb, cb.grad_temb, cb.count, i);
    }
  }
}

// The chain over `chunks` chunks per slice (grid.z slices) for A's rows [0, m_extent) and B's rows
// [0, n_extent) (multiples of the tile's extents, or covered by zero fill and n_valid).
// kPersistent: one CTA per SM, each taking every gridDim.x-th tile; otherwise one tile per CTA, with
// a tile count fixed at compile time (measured: a runtime tile loop slowed d_temb's 128-row tiles by
// ~20% and made the 32-row ones spill at three CTAs per SM).
template <int kRowsN, int kConsumers, AMajor kA, bool kPersistent = false, bool kTmaStore = false, bool kBoxGroups = false>
cudaError_t launch_chain(const Maps& maps, const Store& st, int chunks, int m_extent, int n_extent, int slices,
                         cudaStream_t stream) {
  using S = Shape<kRowsN, kConsumers, kTmaStore>;
  constexpr auto kernel = chain_kernel<kRowsN, kConsumers, kA, kPersistent, kTmaStore, kBoxGroups>;
  if (const cudaError_t err = launch::allow_smem<kernel>(S::kSmemBytes); err != cudaSuccess) return err;
  const int n_tiles = (n_extent + kRowsN - 1) / kRowsN;
  if constexpr (kPersistent) {
    int sms = 0;
    if (const cudaError_t err = launch::attribute<cudaDevAttrMultiProcessorCount>(&sms); err != cudaSuccess) return err;
    Store ps = st;
    ps.n_tiles = n_tiles;
    ps.total_tiles = n_tiles * (m_extent / S::kRowsM);
    const dim3 grid(std::min(sms, ps.total_tiles), 1, slices);
    return launch::kernel<kernel>(grid, S::kThreads, S::kSmemBytes, stream, maps, ps, chunks);
  } else {
    const dim3 grid(n_tiles, m_extent / S::kRowsM, slices);
    return launch::kernel<kernel>(grid, S::kThreads, S::kSmemBytes, stream, maps, st, chunks);
  }
}

// A's map (rows x cols, boxes of a_box rows x 32) and B's two pieces' maps (rows x cols, boxes of
// b_box rows x 32); cudaErrorNotSupported without the driver's encoder, cudaErrorInvalidValue where
// a map cannot be encoded.
struct MapShape {
  int rows, cols, box_rows;
};
cudaError_t encode_maps(Maps* maps, const float* a, MapShape as, const float* b_hi, const float* b_lo, MapShape bs) {
  const EncodeTiled fn = tensor_map_encoder();
  if (fn == nullptr) return cudaErrorNotSupported;
  if (encode_sw128(fn, &maps->a, a, as.rows, as.cols, as.box_rows) != CUDA_SUCCESS ||
      encode_sw128(fn, &maps->b_hi, b_hi, bs.rows, bs.cols, bs.box_rows) != CUDA_SUCCESS ||
      encode_sw128(fn, &maps->b_lo, b_lo, bs.rows, bs.cols, bs.box_rows) != CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The forward: A = W (K-major), B = s's pieces. 128 rows of W per CTA (two consumers), or 64 with
// one consumer for the tiles of 8, 16 or 32 batch rows (three CTAs per SM, 288 CTAs per tile of
// batch rows). With two consumers the 144 CTAs of a tile of batch rows make 1.09 waves on 132 SMs,
// and the 12 CTAs of the second wave stream their W rows alone: at B = 17 ... 32 the forward took
// 0.103-0.105 ms, against 0.072 at B = 16 (dev/kernel_check.cu at 7de028b).
template <int kRowsN, int kConsumers = 2>
cudaError_t launch_forward(int B, const float* s_hi, const float* s_lo, const float* weight, const float* bias,
                           float* out, cudaStream_t stream) {
  Maps maps{};
  if (const cudaError_t err = encode_maps(&maps, weight, {kN, kK, Shape<kRowsN, kConsumers>::kRowsM}, s_hi, s_lo,
                                          {B, kK, kRowsN});
      err != cudaSuccess)
    return err;
  const Store st{out, bias, kN, 0, B};
  return launch_chain<kRowsN, kConsumers, AMajor::k>(maps, st, kChunks, kN, B, 1, stream);
}

// d_temb's slice partials: A = W read along its columns (M = k, K = n), B = grad_out's pieces.
template <int kRowsN, int kConsumers>
cudaError_t launch_dtemb(int B, const float* dy_hi, const float* dy_lo, const float* weight, float* partial,
                         cudaStream_t stream) {
  Maps maps{};
  if (const cudaError_t err = encode_maps(&maps, weight, {kN, kK, 32}, dy_hi, dy_lo, {B, kN, kRowsN}); err != cudaSuccess)
    return err;
  const Store st{partial, nullptr, kK, std::int64_t(B) * kK, B};
  return launch_chain<kRowsN, kConsumers, AMajor::m>(maps, st, kN / kSplitN / kChunk, kK, B, kSplitN, stream);
}

}  // namespace

cudaError_t fp32_dtemb_wgmma(Fp32WgmmaTile tile, int B, const float* dy_hi, const float* dy_lo, const float* weight,
                             float* partial, cudaStream_t stream) {
  if (B < 1) return cudaErrorInvalidValue;
  switch (tile) {
    case Fp32WgmmaTile::batch8: return launch_dtemb<8, 1>(B, dy_hi, dy_lo, weight, partial, stream);
    case Fp32WgmmaTile::batch16: return launch_dtemb<16, 1>(B, dy_hi, dy_lo, weight, partial, stream);
    case Fp32WgmmaTile::batch32: return launch_dtemb<32, 1>(B, dy_hi, dy_lo, weight, partial, stream);
    case Fp32WgmmaTile::batch64: return launch_dtemb<64, 2>(B, dy_hi, dy_lo, weight, partial, stream);
    case Fp32WgmmaTile::batch128: return launch_dtemb<128, 2>(B, dy_hi, dy_lo, weight, partial, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t fp32_grad_weight_wgmma(int B, int ld, const float* grad_out, const float* s_t_hi, const float* s_t_lo,
                                   float* grad_weight, cudaStream_t stream, const Fp32Combine& combine,
                                   Fp32GradWStores stores) {
  if (B < 1 || ld < B || ld % kChunk != 0 || combine.count % device::kCombineVec != 0) return cudaErrorInvalidValue;
  Maps maps{};
  if (const cudaError_t err = encode_maps(&maps, grad_out, {B, kN, 32}, s_t_hi, s_t_lo, {kK, ld, 128}); err != cudaSuccess)
    return err;
  Store st{grad_weight, nullptr, kK, 0, kK};
  st.combine = combine;
  // Persistent CTAs and TMA stores: at small B a tile is one chunk and its 64 KB store, and a CTA per
  // tile (or per few) pays its start and its loads' latency each time, and per-thread stores from
  // registers keep the store path busy. grad_weight alone on an H200, ms (dev/kernel_check.cu
  // --fp32-tc-backward at 94738f9; sums stored from registers, three column tiles per CTA / TMA
  // stores, three / six per CTA / persistent, TMA stores): B = 1 0.097 / 0.081 / 0.077 / 0.070; 64
  // 0.124 / 0.109 / 0.104 / 0.085; 256 0.300 / 0.273 / 0.293 / 0.254; 2048 2.229 / 2.065 / 2.158 /
  // 1.917 (a memset of grad_weight: 0.055).
  if (encode_sw128(tensor_map_encoder(), &maps.out, grad_weight, kN, kK, 64) != CUDA_SUCCESS) return cudaErrorInvalidValue;
  return stores == Fp32GradWStores::box_by_box
             ? launch_chain<128, 2, AMajor::m, true, true, true>(maps, st, ld / kChunk, kN, kK, 1, stream)
             : launch_chain<128, 2, AMajor::m, true, true>(maps, st, ld / kChunk, kN, kK, 1, stream);
}

cudaError_t fp32_forward_wgmma(Fp32WgmmaTile tile, int B, const float* s_hi, const float* s_lo, const float* weight,
                               const float* bias, float* out, cudaStream_t stream) {
  if (B < 1) return cudaErrorInvalidValue;
  switch (tile) {
    case Fp32WgmmaTile::batch8: return launch_forward<8, 1>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch16: return launch_forward<16, 1>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch32: return launch_forward<32, 1>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch64: return launch_forward<64>(B, s_hi, s_lo, weight, bias, out, stream);
    case Fp32WgmmaTile::batch128: return launch_forward<128>(B, s_hi, s_lo, weight, bias, out, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t fp32_forward_wgmma_fits(bool* fits) {
  // The forward's tiles (launch_forward's shapes above).
  constexpr int kMost = std::max({Shape<8, 1>::kSmemBytes, Shape<16, 1>::kSmemBytes, Shape<32, 1>::kSmemBytes,
                                  Shape<64, 2>::kSmemBytes, Shape<128, 2>::kSmemBytes});
  return launch::fits(kMost, fits);
}

}  // namespace rlk::cuda::qwenimage::sm90

#else  // a build without sm_90a

namespace rlk::cuda::qwenimage::sm90 {
cudaError_t fp32_forward_wgmma(Fp32WgmmaTile, int, const float*, const float*, const float*, const float*, float*,
                               cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t fp32_dtemb_wgmma(Fp32WgmmaTile, int, const float*, const float*, const float*, float*, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t fp32_grad_weight_wgmma(int, int, const float*, const float*, const float*, float*, cudaStream_t,
                                   const Fp32Combine&, Fp32GradWStores) {
  return cudaErrorNotSupported;
}
cudaError_t fp32_forward_wgmma_fits(bool* fits) {
  *fits = false;
  return cudaSuccess;
}
}  // namespace rlk::cuda::qwenimage::sm90

#endif
