// How fast can a 3xTF32 FP32 contract (docs/notes/fp32-on-tensor-cores.md) run on Hopper's
// wgmma, and does it give the bytes of the same contract on mma.sync? Development harness, not part
// of the operator.
//
// Problems: the three GEMMs of the FP32 operator at B = 2048, C[m, n] = sum_k A[m, k] B[n, k] with
// both operands K-major: the forward (2048 x 18432, K = 3072: s against W), grad_weight (18432 x
// 3072, K = B = 2048: dy against s-like values, signs that cancel) and one of d_temb's 8 slices
// (2048 x 3072, K = 2304: dy against W-like values). The contract as evaluated here:
//   - each operand x is split into hi = x with its 13 low mantissa bits cleared (a TF32 value) and
//     lo = x - hi (exact in FP32) with its 13 low bits cleared likewise, or (the second pass of each
//     problem) both rounded to nearest with cvt.rna.tf32.f32; the pieces are written to global memory
//     once (`split_kernel`), so every kernel reads the same TF32 values;
//   - per chunk of 32 k (16 in one variant), an FP32 accumulator starts at +0 and takes, per k8 step
//     in ascending k, the products lo_a hi_b, hi_a lo_b and hi_a hi_b, one tensor-core instruction
//     each;
//   - the chunks, in ascending order, are folded either into a TwoSum pair (two_sum_add, the value
//     two_sum_value(hi, lo): the operator's device helpers, the study's contract) or added into one
//     FP32 sum (one rounded add per chunk: 96 roundings per output of the forward, where the FFMA
//     contract has 3072).
// Kernels:
//   - `wgmma_kernel<kFold, kOrder, kFoldSteps>`: 128 x 128 output tiles; one producer warpgroup
//     issuing TMA loads of the four 128 x 32 pieces per stage (128-byte swizzle) into 3 stages; two
//     consumer warpgroups of 64 x 128 each, 12 wgmma m64n128k8 (both operands from shared memory)
//     per stage, the fold in registers after every kFoldSteps k8 steps (setmaxnreg: 232 registers
//     for the consumers, 40 for the producer). kFold = kNoFold accumulates everything into one
//     accumulator (no fold: the tensor-bound time). kOrder = kSkewOnce starts the second consumer
//     behind the first (a named barrier once), and kAlternate makes the two issue their chunks'
//     wgmma in turn (two named barriers per chunk), so that one warpgroup's fold runs while the
//     other's wgmma do; kPingPong lets a warpgroup issue a chunk only once the other's wgmma of the
//     chunk before have completed (the other then folds), so that the two chains take turns on the
//     tensor cores instead of running interleaved.
//   - `mma_sync_kernel<kFold, kFoldSteps>`: the same contract on mma.sync m16n8k8 (a warp per 16 x 8
//     block, operands from global memory), for the first kCheckRows rows: the bytes to compare.
// Written by hand, not with CUTLASS: CUTLASS 4.2 has no FP32-emulation mainloop for sm_90, and the
// contract's fold between k-chunks sits inside the mainloop.
// Prints, per problem, the time of each variant (median of 10), its rate, the differing bytes
// against mma.sync (same fold, same chunk) on the checked rows, and the accuracy in units of the
// FP32 gate (|x - ref| <= 1e-4 + 1e-4 |ref|) against FP64: on 4096 sampled outputs (a host sum) and
// on the whole output (cuBLAS DGEMM of the same FP32 inputs); exits non-zero if a folded variant
// differs, leaves an output unwritten or fails the gate. Inputs are normal with the conformance
// spec's standard deviations.
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/tf32x3_gemm_check.cu -lcublas -o tf32x3_gemm_check
// Run: ./tf32x3_gemm_check
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_sm90_ptx.cuh"
#include "experiment_common.cuh"
#include "tf32.cuh"

namespace {

using rlk::cuda::qwenimage::device::two_sum_add;
using rlk::cuda::qwenimage::device::two_sum_value;
using namespace rlk::cuda::qwenimage::ptx;

constexpr int BM = 128, BN = 128, BK = 32;  // BK: a stage's k, the contract's chunk (or two)
constexpr int kStages = 3;
constexpr int kPieceBytes = BM * BK * 4;  // one 128 x 32 FP32 piece (BM == BN)
constexpr int kStageBytes = 4 * kPieceBytes;
constexpr int kSmemBytes = kStages * kStageBytes + 1024 + 64;  // + alignment + barriers
constexpr int kCheckRows = 128;
static_assert(BM == BN && BK * 4 == 128);

// rna: both pieces rounded to nearest, ties away (cvt.rna.tf32.f32, the study's split); otherwise the
// operator's truncated pieces (tf32_cut).
__global__ void split_kernel(const float* x, float* hi, float* lo, std::size_t n, bool rna) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h, l;
    if (rna)
      tf32_cut_rna(x[i], h, l);
    else
      tf32_cut(x[i], h, l);
    hi[i] = __uint_as_float(h);
    lo[i] = __uint_as_float(l);
  }
}

#define RLK_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
__device__ __forceinline__ void wgmma_128(float (&d)[64], std::uint64_t da, std::uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, 1, 1, 1;"
      : RLK_ACC8(0), RLK_ACC8(8), RLK_ACC8(16), RLK_ACC8(24), RLK_ACC8(32), RLK_ACC8(40), RLK_ACC8(48), RLK_ACC8(56)
      : "l"(da), "l"(db));
}
#undef RLK_ACC8

struct Maps {
  CUtensorMap a_hi, a_lo, b_hi, b_lo;
};

enum Order { kFree, kSkewOnce, kAlternate, kPingPong };

enum Fold { kNoFold, kTwoSum, kAdd };

struct Shape {
  int m, n, k;  // y is m x n, both operands K-major with k columns
};

// kFoldSteps: k8 steps per chunk (4: chunks of 32 k, 2: of 16).
template <Fold kFold, Order kOrder, int kFoldSteps = 4>
__global__ void __launch_bounds__(384, 1) wgmma_kernel(const __grid_constant__ Maps maps, float* __restrict__ y, Shape sh) {
  static_assert(BK / 8 % kFoldSteps == 0);
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(base + kStages * kStageBytes);
  std::uint64_t* empty = full + kStages;
  const int t = threadIdx.x;
  const int wg = t / 128;
  const int m0 = blockIdx.x * BM;  // consecutive CTAs share a tile of the second operand (kept in L2)
  const int n0 = blockIdx.y * BN;
  const int stages_k = sh.k / BK;
  if (t == 0) stages_init(full, empty, kStages, 2);  // two consumer warpgroups
  __syncthreads();
  auto piece = [&](int s, int p) { return base + s * kStageBytes + p * kPieceBytes; };  // a_hi, a_lo, b_hi, b_lo

  if (wg == 2) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 256) {
      for (int c = 0; c < stages_k; ++c) {
        const int s = stage_acquire(full, empty, c, kStages, kStageBytes);
        tma_load(piece(s, 0), &maps.a_hi, c * BK, m0, &full[s]);
        tma_load(piece(s, 1), &maps.a_lo, c * BK, m0, &full[s]);
        tma_load(piece(s, 2), &maps.b_hi, c * BK, n0, &full[s]);
        tma_load(piece(s, 3), &maps.b_lo, c * BK, n0, &full[s]);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  float acc[64];
  float hi[64], lo[64];  // kTwoSum: the pair; kAdd: hi is the sum
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = hi[i] = lo[i] = 0.0f;
  // kSkewOnce: the second warpgroup issues its first chunk after the first has issued its second.
  if (kOrder == kSkewOnce && wg == 1) asm volatile("bar.sync 1, 256;" ::: "memory");
  for (int c = 0; c < stages_k; ++c) {
    const int s = c % kStages;
    mbar_wait(&full[s], (c / kStages) & 1);
    // kAlternate: warpgroup 0 issues chunk c after warpgroup 1 issued chunk c - 1 (barrier 2), and
    // warpgroup 1 issues chunk c after warpgroup 0 did (barrier 1).
    if (kOrder == kAlternate || kOrder == kPingPong) {
      if (wg == 0 && c > 0) asm volatile("bar.sync 2, 256;" ::: "memory");
      if (wg == 1) asm volatile("bar.sync 1, 256;" ::: "memory");
    }
    const unsigned char* a_hi = piece(s, 0) + wg * 64 * 128;  // this warpgroup's 64 rows
    const unsigned char* a_lo = piece(s, 1) + wg * 64 * 128;
    const unsigned char* b_hi = piece(s, 2);
    const unsigned char* b_lo = piece(s, 3);
#pragma unroll
    for (int j = 0; j < BK / 8; ++j) {  // k8 steps: 32 bytes along the swizzled rows
      if (j % kFoldSteps == 0) {
        if (kFold != kNoFold) {
#pragma unroll
          for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
        }
        if (kFold != kNoFold || j == 0) asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      }
      wgmma_128(acc, desc_sw128(a_lo + 32 * j), desc_sw128(b_hi + 32 * j));
      wgmma_128(acc, desc_sw128(a_hi + 32 * j), desc_sw128(b_lo + 32 * j));
      wgmma_128(acc, desc_sw128(a_hi + 32 * j), desc_sw128(b_hi + 32 * j));
      const bool last = j == BK / 8 - 1;
      if ((j + 1) % kFoldSteps == 0 && (kFold != kNoFold || last)) {
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (last) {
          if (kOrder == kSkewOnce && wg == 0 && c == 1) asm volatile("bar.arrive 1, 256;" ::: "memory");
          if (kOrder == kAlternate) {
            if (wg == 0) asm volatile("bar.arrive 1, 256;" ::: "memory");
            if (wg == 1 && c + 1 < stages_k) asm volatile("bar.arrive 2, 256;" ::: "memory");
          }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (last) {
          if (kOrder == kPingPong) {  // this chunk's wgmma done: the other warpgroup's turn
            if (wg == 0) asm volatile("bar.arrive 1, 256;" ::: "memory");
            if (wg == 1 && c + 1 < stages_k) asm volatile("bar.arrive 2, 256;" ::: "memory");
          }
          if (t % 128 == 0) mbar_arrive(&empty[s]);
        }
        if (kFold == kTwoSum) {
#pragma unroll
          for (int i = 0; i < 64; ++i) two_sum_add(hi[i], lo[i], acc[i]);
        } else if (kFold == kAdd) {
#pragma unroll
          for (int i = 0; i < 64; ++i) hi[i] += acc[i];
        }
      }
    }
  }
  // acc index 4 j + q: row 16 warp + g + 8 (q / 2), column 8 j + 2 tq + q % 2 of the warpgroup's 64 x 128.
  const int warp = (t % 128) / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int row = m0 + wg * 64 + 16 * warp + g + 8 * ((i % 4) / 2);
    const int col = n0 + 8 * (i / 4) + 2 * tq + i % 2;
    y[std::size_t(row) * sh.n + col] = kFold == kTwoSum ? two_sum_value(hi[i], lo[i]) : kFold == kAdd ? hi[i] : acc[i];
  }
}

// The same contract on mma.sync m16n8k8 for rows 0 .. kCheckRows - 1: one warp per 16 x 8 block.
template <Fold kFold, int kFoldSteps = 4>
__global__ void mma_sync_kernel(const float* a_hi, const float* a_lo, const float* b_hi, const float* b_lo, float* y, Shape sh) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const int r0 = (warp / (sh.n / 8)) * 16, c0 = (warp % (sh.n / 8)) * 8;
  if (r0 >= kCheckRows) return;
  float hi[4] = {}, lo[4] = {};
  auto av = [&](const float* p, int r, int k) { return __float_as_uint(p[std::size_t(r0 + r) * sh.k + k]); };
  auto bv = [&](const float* p, int c, int k) { return __float_as_uint(p[std::size_t(c0 + c) * sh.k + k]); };
  for (int c = 0; c < sh.k / (8 * kFoldSteps); ++c) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < kFoldSteps; ++j) {
      const int k = c * 8 * kFoldSteps + 8 * j;
      const float* as[3] = {a_lo, a_hi, a_hi};
      const float* bs[3] = {b_hi, b_lo, b_hi};
      for (int p = 0; p < 3; ++p) {
        const std::uint32_t a[4] = {av(as[p], g, k + tq), av(as[p], g + 8, k + tq), av(as[p], g, k + tq + 4),
                                    av(as[p], g + 8, k + tq + 4)};
        mma_tf32(acc, a, bv(bs[p], g, k + tq), bv(bs[p], g, k + tq + 4));
      }
    }
    for (int q = 0; q < 4; ++q) {
      if (kFold == kTwoSum)
        two_sum_add(hi[q], lo[q], acc[q]);
      else
        hi[q] += acc[q];
    }
  }
  for (int q = 0; q < 4; ++q)
    y[std::size_t(r0 + g + 8 * (q / 2)) * sh.n + c0 + 2 * tq + q % 2] = kFold == kTwoSum ? two_sum_value(hi[q], lo[q]) : hi[q];
}

__global__ void to_fp64(const float* x, double* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

CUtensorMap make_map(EncodeTiled encode, const float* p, int rows, int k) {
  CUtensorMap map;
  const CUresult r = encode_sw128(encode, &map, p, rows, k, BM);  // BK = 32 columns per box
  if (r != CUDA_SUCCESS) {
    std::printf("cuTensorMapEncodeTiled failed: %d\n", int(r));
    std::exit(1);
  }
  return map;
}

}  // namespace

int main() {
  // The three GEMMs' shapes at B = 2048 (d_temb's K is one of its 8 slices of N).
  struct Set {
    const char* name;
    Shape sh;
    int kind;  // 0: s against W; 1: dy against s-like values; 2: dy against W (d_temb's terms)
  };
  const Set sets[] = {{"forward: y = s W^T (s against W)", {2048, 18432, 3072}, 0},
                      {"grad_weight: dy^T s (dy against s, K = B)", {18432, 3072, 2048}, 1},
                      {"d_temb slice: dy W (dy against W, K = N / 8)", {2048, 3072, 2304}, 2}};
  std::size_t na = 0, nb = 0, ny = 0;
  for (const Set& st : sets) {
    na = std::max(na, std::size_t(st.sh.m) * st.sh.k);
    nb = std::max(nb, std::size_t(st.sh.n) * st.sh.k);
    ny = std::max(ny, std::size_t(st.sh.m) * st.sh.n);
  }
  std::vector<float> a(na), b(nb), got(ny), ref_twosum, ref_add, ref_add16;
  float *da, *db, *a_hi, *a_lo, *b_hi, *b_lo, *y, *y_ref;
  CK(cudaMalloc(&da, na * 4));
  CK(cudaMalloc(&db, nb * 4));
  for (float** p : {&a_hi, &a_lo}) CK(cudaMalloc(p, na * 4));
  for (float** p : {&b_hi, &b_lo}) CK(cudaMalloc(p, nb * 4));
  CK(cudaMalloc(&y, ny * 4));
  CK(cudaMalloc(&y_ref, std::size_t(kCheckRows) * 18432 * 4));
  // The whole outputs against FP64 (cuBLAS DGEMM of the FP32 inputs).
  double *a64, *b64, *c64;
  unsigned* max_bits;
  unsigned long long* over;
  CK(cudaMalloc(&a64, na * 8));
  CK(cudaMalloc(&b64, nb * 8));
  CK(cudaMalloc(&c64, ny * 8));
  CK(cudaMalloc(&max_bits, sizeof(unsigned)));
  CK(cudaMalloc(&over, sizeof(unsigned long long)));
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasCreate failed\n");
    return 1;
  }
  const EncodeTiled encode = tensor_map_encoder();
  if (encode == nullptr) {
    std::printf("cuTensorMapEncodeTiled not found\n");
    return 1;
  }
  std::mt19937 gen(2026);
  auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };
  int failures = 0;
  for (const Set& st : sets) {
    const Shape sh = st.sh;
    const std::size_t sa_n = std::size_t(sh.m) * sh.k, sb_n = std::size_t(sh.n) * sh.k, sy_n = std::size_t(sh.m) * sh.n,
                      nr = std::size_t(kCheckRows) * sh.n;
    {
      std::normal_distribution<float> temb(0.0f, 2.0f), w(0.0f, 0.02f), dy(0.0f, 1.0f);
      for (std::size_t i = 0; i < sa_n; ++i) a[i] = st.kind == 0 ? silu(temb(gen)) : dy(gen);
      for (std::size_t i = 0; i < sb_n; ++i) b[i] = st.kind == 1 ? silu(temb(gen)) : w(gen);
    }
    CK(cudaMemcpy(da, a.data(), sa_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), sb_n * 4, cudaMemcpyHostToDevice));
    const Maps maps{make_map(encode, a_hi, sh.m, sh.k), make_map(encode, a_lo, sh.m, sh.k), make_map(encode, b_hi, sh.n, sh.k),
                    make_map(encode, b_lo, sh.n, sh.k)};
    // The pieces (into the same arrays, which the maps address) and the mma.sync references of them.
    auto prepare = [&](bool rna) {
      const double ms = median_ms(2, 10, [&](int) {
        split_kernel<<<1024, 256>>>(da, a_hi, a_lo, sa_n, rna);
        split_kernel<<<4096, 256>>>(db, b_hi, b_lo, sb_n, rna);
      });
      for (auto [kernel, host] : {std::pair{mma_sync_kernel<kTwoSum>, &ref_twosum}, std::pair{mma_sync_kernel<kAdd>, &ref_add},
                                  std::pair{mma_sync_kernel<kAdd, 2>, &ref_add16}}) {
        CK(cudaMemset(y_ref, 0xff, nr * 4));
        kernel<<<kCheckRows / 16 * (sh.n / 8) / 4, 128>>>(a_hi, a_lo, b_hi, b_lo, y_ref, sh);
        CK(cudaDeviceSynchronize());
        CK(cudaGetLastError());
        host->resize(nr);
        CK(cudaMemcpy(host->data(), y_ref, nr * 4, cudaMemcpyDeviceToHost));
      }
      return ms;
    };
    const double split_ms = prepare(false);
    to_fp64<<<1024, 256>>>(da, a64, sa_n);
    to_fp64<<<1024, 256>>>(db, b64, sb_n);
    {
      const double one = 1.0, zero = 0.0;  // C (m x n, row-major) = A B^T: column-major C^T = B A^T
      if (cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, sh.n, sh.m, sh.k, &one, b64, sh.k, a64, sh.k, &zero, c64, sh.n) !=
          CUBLAS_STATUS_SUCCESS) {
        std::printf("cublasDgemm failed\n");
        return 1;
      }
      CK(cudaDeviceSynchronize());
    }
    const double gflop = 2.0 * sh.m * sh.n * sh.k / 1e9;
    std::printf("%s: M = %d, N = %d, K = %d (%.0f GFLOP of FP32 work); pieces by truncation (split of both operands %.3f ms):\n", st.name, sh.m,
                sh.n, sh.k, gflop, split_ms);
    std::vector<std::pair<int, int>> samples;  // rows of the check and others
    {
      std::uniform_int_distribution<int> rm(0, sh.m - 1), rn(0, sh.n - 1);
      for (int i = 0; i < 4096; ++i) samples.push_back({i < 1024 ? i % kCheckRows : rm(gen), rn(gen)});
    }
    std::vector<double> oracle;
    for (auto [m, n] : samples) {
      double sum = 0.0;
      for (int k = 0; k < sh.k; ++k) sum += double(a[std::size_t(m) * sh.k + k]) * double(b[std::size_t(n) * sh.k + k]);
      oracle.push_back(sum);
    }
    auto run = [&](const char* name, auto kernel, const std::vector<float>* ref) {
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      CK(cudaMemset(y, 0xff, sy_n * 4));  // poison
      const dim3 grid(sh.m / BM, sh.n / BN);
      const double ms = median_ms(2, 10, [&](int) { kernel<<<grid, 384, kSmemBytes>>>(maps, y, sh); });
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), y, sy_n * 4, cudaMemcpyDeviceToHost));
      std::size_t diff = 0, unwritten = 0;
      if (ref)
        for (std::size_t i = 0; i < nr; ++i) diff += std::memcmp(&got[i], &(*ref)[i], 4) != 0;
      for (std::size_t i = 0; i < sy_n; ++i) unwritten += std::isnan(got[i]);
      double worst = 0.0;
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const double x = got[std::size_t(samples[i].first) * sh.n + samples[i].second], r = oracle[i];
        worst = std::max(worst, std::fabs(x - r) / (1e-4 + 1e-4 * std::fabs(r)));
      }
      CK(cudaMemset(max_bits, 0, sizeof(unsigned)));
      CK(cudaMemset(over, 0, sizeof(unsigned long long)));
      compare_to_gate<<<1024, 256>>>(y, c64, sy_n, max_bits, over);
      unsigned whole_bits = 0;
      CK(cudaMemcpy(&whole_bits, max_bits, sizeof(unsigned), cudaMemcpyDeviceToHost));
      float whole_f;
      std::memcpy(&whole_f, &whole_bits, sizeof(whole_f));
      const double whole = whole_f;
      std::printf("  %-36s %.3f ms %6.1f TFLOP/s of TF32 products (%5.1f of FP32 work)  differing from mma.sync on rows 0..%d: %s  "
                  "NaN/unwritten: %zu  worst error, sampled / whole output (cuBLAS FP64): %.4f / %.4f of the gate\n",
                  name, ms, 3 * gflop / ms, gflop / ms, kCheckRows - 1,
                  ref ? (std::to_string(diff) + " of " + std::to_string(nr)).c_str() : "(not compared)", unwritten, worst, whole);
      if (ref && (diff != 0 || unwritten != 0 || worst > 1.0 || whole > 1.0)) ++failures;
    };
    run("wgmma, chunk 32, TwoSum fold", wgmma_kernel<kTwoSum, kFree>, &ref_twosum);
    run("wgmma, chunk 32, TwoSum fold, skewed", wgmma_kernel<kTwoSum, kSkewOnce>, &ref_twosum);
    run("wgmma, chunk 32, FP32 add fold", wgmma_kernel<kAdd, kFree>, &ref_add);
    run("wgmma, chunk 16, FP32 add fold", wgmma_kernel<kAdd, kFree, 2>, &ref_add16);
    run("wgmma, no fold (timing)", wgmma_kernel<kNoFold, kFree>, nullptr);
    if (st.kind == 0) {
      run("wgmma, chunk 32, TwoSum, alternating", wgmma_kernel<kTwoSum, kAlternate>, &ref_twosum);
      run("wgmma, chunk 32, TwoSum, ping-pong", wgmma_kernel<kTwoSum, kPingPong>, &ref_twosum);
      run("wgmma, no fold, ping-pong (timing)", wgmma_kernel<kNoFold, kPingPong>, nullptr);
    }
    std::printf("  the same with the pieces rounded to nearest (cvt.rna; split %.3f ms):\n", prepare(true));
    run("rna, wgmma, chunk 32, TwoSum fold", wgmma_kernel<kTwoSum, kFree>, &ref_twosum);
    run("rna, wgmma, chunk 32, FP32 add fold", wgmma_kernel<kAdd, kFree>, &ref_add);
    run("rna, wgmma, chunk 16, FP32 add fold", wgmma_kernel<kAdd, kFree, 2>, &ref_add16);
  }
  std::printf("failures: %d\n", failures);
  return failures ? 1 : 0;
}
