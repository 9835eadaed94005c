// What an FP32 contract on tensor cores would give on the GPU itself (docs/notes/
// fp32-on-tensor-cores.md measured it by CPU emulation only). Development harness, not part of
// the operator: a plain mma.sync TF32 GEMM C[m, c] = sum_r A[m, r] * Bm[c, r] (both operands
// r-contiguous, FP32 in memory) in three arithmetic modes,
//   3xtf32-chunk32  each operand split into (hi, lo) TF32 pieces (cvt.rna), per k8 step the
//                   products lo*hi, hi*lo, hi*hi into one FP32 accumulator that starts from zero
//                   every 32 reduction steps; each chunk folded into a TwoSum (hi, lo) pair in
//                   ascending order; the result hi + lo (the contract the study proposes),
//   3xtf32-one-acc  the same products into one accumulator through the whole reduction,
//   1xtf32          hi*hi only, one accumulator (what a plain TF32 GEMM does),
// run on the forward (y = s W^T at B = 2048, R = 3072) and the grad_weight (dy^T s, R = 2048
// batch rows) problems of the operator, each compared element by element with an FP64 GEMM of the
// same FP32 inputs in units of the FP32 gate (|x - ref| <= 1e-4 + 1e-4 |ref|), and timed against
// cuBLAS (FP32 and TF32) on the forward shape. A single-warp probe first shows how one mma.sync
// adds products to its accumulator (round to nearest or toward zero), the unknown the study had to
// bracket with two models.
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/fp32_tc_check.cu -lcublas -o fp32_tc_check
// Run: LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./fp32_tc_check
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "adaln_mod_projection_device.cuh"
#include "experiment_common.cuh"
#include "tf32.cuh"

namespace {

using rlk::cuda::qwenimage::device::cp_async16;
using rlk::cuda::qwenimage::device::cp_async_commit;
using rlk::cuda::qwenimage::device::cp_async_wait;
using rlk::cuda::qwenimage::device::silu_f32;
using rlk::cuda::qwenimage::device::two_sum_add;
using rlk::cuda::qwenimage::device::two_sum_value;

constexpr int kN = 18432;
constexpr int kK = 3072;
constexpr int kB = 2048;

enum Mode { k3xChunk32 = 0, k3xOneAcc = 1, k1x = 2 };
constexpr const char* kModeNames[3] = {"3xtf32-chunk32", "3xtf32-one-acc", "1xtf32"};


// CTA tile 128 (m) x 64 (c) x 32 (r), 8 warps of 32 x 32, 3-stage cp.async pipeline; rows padded
// to 36 floats so a fragment's 32 loads hit 32 banks. Each 32-step r-tile is one chunk.
constexpr int kBM = 128, kBC = 64, kBR = 32, kPitch = kBR + 4, kStages = 3, kThreads = 256;
constexpr int kWarpM = 32, kWarpC = 32, kWarpsC = kBC / kWarpC;
constexpr int kMI = kWarpM / 16, kCJ = kWarpC / 8;

struct Smem {
  float a[kStages][kBM][kPitch];
  float b[kStages][kBC][kPitch];
};

#ifndef TC_MIN_BLOCKS  // CTAs per SM asked of the register allocator (2 caps it at 128 registers)
#define TC_MIN_BLOCKS 1
#endif

// f(i, j, q) for every accumulator element of a warp's kMI x kCJ tiles.
template <class F>
__device__ __forceinline__ void for_each_acc(F&& f) {
#pragma unroll
  for (int i = 0; i < kMI; ++i)
#pragma unroll
    for (int j = 0; j < kCJ; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) f(i, j, q);
}

template <int mode>
__global__ void __launch_bounds__(kThreads, TC_MIN_BLOCKS) tc_gemm(const float* __restrict__ A, const float* __restrict__ Bm, float* out,
                                                    int R, std::int64_t ldm, std::int64_t ldc) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int g = lane >> 2, tq = lane & 3;
  const int m0 = blockIdx.y * kBM, c0 = blockIdx.x * kBC;
  const int wm = (warp / kWarpsC) * kWarpM, wc = (warp % kWarpsC) * kWarpC;
  const int steps = R / kBR;

  auto issue = [&](int step) {
    if (step < steps) {
      const int slot = step % kStages;
      const int r0 = step * kBR;
      for (int i = t; i < kBM * kBR / 4; i += kThreads) {
        const int row = i / (kBR / 4), ch = i % (kBR / 4);
        cp_async16(&sm.a[slot][row][ch * 4], A + (m0 + row) * static_cast<std::int64_t>(R) + r0 + ch * 4, 16);
      }
      for (int i = t; i < kBC * kBR / 4; i += kThreads) {
        const int row = i / (kBR / 4), ch = i % (kBR / 4);
        cp_async16(&sm.b[slot][row][ch * 4], Bm + (c0 + row) * static_cast<std::int64_t>(R) + r0 + ch * 4, 16);
      }
    }
    cp_async_commit();
  };

  float acc[kMI][kCJ][4] = {};
  float hi[kMI][kCJ][4] = {};
  float lo[kMI][kCJ][4] = {};
  for (int s = 0; s < kStages - 1; ++s) issue(s);
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    issue(step + kStages - 1);
    const int slot = step % kStages;
#pragma unroll
    for (int kk = 0; kk < kBR; kk += 8) {
      std::uint32_t ah[kMI][4], al[kMI][4], bh[kCJ][2], bl[kCJ][2];
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
        const float* p = &sm.a[slot][wm + i * 16 + g][kk + tq];
        const float v[4] = {p[0], p[8 * kPitch], p[4], p[8 * kPitch + 4]};
#pragma unroll
        for (int q = 0; q < 4; ++q) tf32_cut_rna(v[q], ah[i][q], al[i][q]);
      }
#pragma unroll
      for (int j = 0; j < kCJ; ++j) {
        const float* p = &sm.b[slot][wc + j * 8 + g][kk + tq];
        tf32_cut_rna(p[0], bh[j][0], bl[j][0]);
        tf32_cut_rna(p[4], bh[j][1], bl[j][1]);
      }
#pragma unroll
      for (int i = 0; i < kMI; ++i)
#pragma unroll
        for (int j = 0; j < kCJ; ++j) {
          if constexpr (mode != k1x) {
            mma_tf32(acc[i][j], al[i], bh[j][0], bh[j][1]);
            mma_tf32(acc[i][j], ah[i], bl[j][0], bl[j][1]);
          }
          mma_tf32(acc[i][j], ah[i], bh[j][0], bh[j][1]);
        }
    }
    if constexpr (mode == k3xChunk32) {
      for_each_acc([&](int i, int j, int q) {
        two_sum_add(hi[i][j][q], lo[i][j][q], acc[i][j][q]);
        acc[i][j][q] = 0.0f;
      });
    }
  }
  cp_async_wait<0>();
  for_each_acc([&](int i, int j, int q) {
    const std::int64_t m = m0 + wm + i * 16 + g + (q >> 1) * 8;
    const std::int64_t c = c0 + wc + j * 8 + tq * 2 + (q & 1);
    out[m * ldm + c * ldc] = mode == k3xChunk32 ? two_sum_value(hi[i][j][q], lo[i][j][q]) : acc[i][j][q];
  });
}

// FP64 reference: ref[m * ldm + c * ldc] = sum_r A[m, r] * Bm[c, r] in double, 16 x 16 tiles.
__global__ void ref_gemm(const float* __restrict__ A, const float* __restrict__ Bm, double* out, int R, std::int64_t ldm,
                         std::int64_t ldc) {
  __shared__ double as[16][17], bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t m = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;
  double sum = 0.0;
  for (int r0 = 0; r0 < R; r0 += 16) {
    as[ty][tx] = A[(blockIdx.y * 16 + ty) * static_cast<std::int64_t>(R) + r0 + tx];
    bs[ty][tx] = Bm[(blockIdx.x * 16 + ty) * static_cast<std::int64_t>(R) + r0 + tx];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 16; ++r) sum = fma(as[ty][r], bs[tx][r], sum);
    __syncthreads();
  }
  out[m * ldm + c * ldc] = sum;
}

// Counter-based N(0, stddev^2) values (splitmix64 + Box-Muller); `silu` applies SiLU in FP32.
__device__ std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__global__ void fill_normal(float* p, std::size_t n, std::uint64_t seed, float stddev, bool silu) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix(seed * 0x100000001B3ull + i);
    const double u1 = ((h >> 11) + 1.0) / 9007199254740993.0;
    const double u2 = (mix(h) >> 11) / 9007199254740992.0;
    const float v = float(stddev * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    p[i] = silu ? silu_f32(v) : v;
  }
}

__global__ void transpose(const float* in, float* out, int rows, int cols) {  // out[c][r] = in[r][c]
  __shared__ float tile[32][33];
  const int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[std::int64_t(r) * cols + c];
  __syncthreads();
  const int oc = blockIdx.y * 32 + threadIdx.x, orow = blockIdx.x * 32 + threadIdx.y;
  out[std::int64_t(orow) * rows + oc] = tile[threadIdx.x][threadIdx.y];
}

// One mma.sync m16n8k8 with chosen A row 0 (k = 0..7), B column 0 and accumulator c: D[0][0].
__global__ void probe(const float* a_row, const float* b_col, float c, float* d00) {
  const int lane = threadIdx.x, g = lane >> 2, tq = lane & 3;
  std::uint32_t a[4] = {0, 0, 0, 0};
  if (g == 0) {
    a[0] = __float_as_uint(a_row[tq]);
    a[2] = __float_as_uint(a_row[tq + 4]);
  }
  const std::uint32_t b0 = g == 0 ? __float_as_uint(b_col[tq]) : 0u;
  const std::uint32_t b1 = g == 0 ? __float_as_uint(b_col[tq + 4]) : 0u;
  float d[4] = {lane == 0 ? c : 0.0f, 0.0f, 0.0f, 0.0f};
  mma_tf32(d, a, b0, b1);
  if (lane == 0) *d00 = d[0];
}

void run_probe() {
  struct Case {
    const char* what;
    float c;
    std::vector<float> a;  // products a[k] * 1
  };
  const float u = std::ldexp(1.0f, -23);  // ulp of 1
  const Case cases[] = {
      {"1 + 0.75 ulp (accumulator 1, one product)", 1.0f, {0.75f * u}},
      {"-1 - 0.75 ulp (accumulator -1, one product)", -1.0f, {-0.75f * u}},
      {"1 + 0.25 ulp", 1.0f, {0.25f * u}},
      {"1 + 0.5 ulp (tie)", 1.0f, {0.5f * u}},
      {"0 + 1 + 0.75 ulp (two products)", 0.0f, {1.0f, 0.75f * u}},
      {"1 + 0.5 ulp + 0.5 ulp (two products, exact sum 1 + 1 ulp)", 1.0f, {0.5f * u, 0.5f * u}},
      {"1 + 8 x 0.125 ulp (eight products, exact sum 1 + 1 ulp)", 1.0f, std::vector<float>(8, 0.125f * u)},
      {"1 - 0.125 ulp (accumulator 1; spacing below 1 is 0.5 ulp)", 1.0f, {-0.125f * u}},
  };
  float *da, *db, *dd;
  CK(cudaMalloc(&da, 8 * 4));
  CK(cudaMalloc(&db, 8 * 4));
  CK(cudaMalloc(&dd, 4));
  std::printf("mma.sync m16n8k8 tf32 accumulate probe (D = C + sum_k A[0,k] * B[k,0], B = 1):\n");
  for (const Case& cs : cases) {
    float a[8] = {}, b[8] = {};
    double exact = cs.c;
    for (std::size_t k = 0; k < cs.a.size(); ++k) {
      a[k] = cs.a[k];
      b[k] = 1.0f;
      exact += cs.a[k];
    }
    CK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    probe<<<1, 32>>>(da, db, cs.c, dd);
    float d = 0;
    CK(cudaMemcpy(&d, dd, 4, cudaMemcpyDeviceToHost));
    const float rn = float(exact);  // round to nearest even
    const float rz = std::fabs(double(rn)) > std::fabs(exact) ? std::nextafter(rn, 0.0f) : rn;  // toward zero
    std::printf("  %-58s D = %.9g (%a): %s\n", cs.what, d, d,
                d == rn && d == rz ? "round to nearest = toward zero here"
                : d == rn          ? "round to nearest"
                : d == rz          ? "toward zero (truncated)"
                                   : "neither");
  }
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dd));
}

// The issue rate of mma.sync m16n8k8 TF32 alone: every warp runs `iters` rounds of 8
// independent MMAs on register operands (no memory traffic), the ceiling of any mma.sync kernel.
__global__ void mma_peak(int iters, float* sink) {
  std::uint32_t a[4] = {threadIdx.x, threadIdx.x + 1u, threadIdx.x + 2u, threadIdx.x + 3u};
  float d[8][4] = {};
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) mma_tf32(d[j], a, a[0] + j, a[1] + j);
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  if (s == 1.2345f) *sink = s;  // keeps the MMAs; never true for these inputs in practice
}

template <int mode>
void launch_tc(const float* A, const float* Bm, float* out, int M, int C, int R, std::int64_t ldm, std::int64_t ldc) {
  static bool raised = false;
  if (!raised) {
    CK(cudaFuncSetAttribute(tc_gemm<mode>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(Smem))));
    raised = true;
  }
  tc_gemm<mode><<<dim3(C / kBC, M / kBM), kThreads, sizeof(Smem)>>>(A, Bm, out, R, ldm, ldc);
}

void launch_mode(int mode, const float* A, const float* Bm, float* out, int M, int C, int R, std::int64_t ldm,
                 std::int64_t ldc) {
  if (mode == k3xChunk32) launch_tc<k3xChunk32>(A, Bm, out, M, C, R, ldm, ldc);
  if (mode == k3xOneAcc) launch_tc<k3xOneAcc>(A, Bm, out, M, C, R, ldm, ldc);
  if (mode == k1x) launch_tc<k1x>(A, Bm, out, M, C, R, ldm, ldc);
}

// Accuracy of every mode on one problem (M x C outputs, R reduced).
void accuracy(const char* name, const float* A, const float* Bm, int M, int C, int R, std::int64_t ldm, std::int64_t ldc) {
  const std::size_t n = std::size_t(M) * C;
  double* ref;
  float* out;
  unsigned* max_bits;
  unsigned long long* over;
  CK(cudaMalloc(&ref, n * 8));
  CK(cudaMalloc(&out, n * 4));
  CK(cudaMalloc(&max_bits, 4));
  CK(cudaMalloc(&over, 8));
  ref_gemm<<<dim3(C / 16, M / 16), dim3(16, 16)>>>(A, Bm, ref, R, ldm, ldc);
  CK(cudaGetLastError());
  for (int mode = 0; mode < 3; ++mode) {
    CK(cudaMemset(out, 0xFF, n * 4));  // poisoned: an unwritten element is NaN and counts as over
    launch_mode(mode, A, Bm, out, M, C, R, ldm, ldc);
    CK(cudaGetLastError());
    CK(cudaMemset(max_bits, 0, 4));
    CK(cudaMemset(over, 0, 8));
    compare_to_gate<<<1024, 256>>>(out, ref, n, max_bits, over);
    unsigned mb = 0;
    unsigned long long ov = 0;
    CK(cudaMemcpy(&mb, max_bits, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&ov, over, 8, cudaMemcpyDeviceToHost));
    float mx;
    std::memcpy(&mx, &mb, 4);
    std::printf("  %-12s %-15s max |x - ref| / gate %.4g, elements over the gate %llu of %zu\n", name, kModeNames[mode], mx,
                ov, n);
  }
  CK(cudaFree(ref));
  CK(cudaFree(out));
  CK(cudaFree(max_bits));
  CK(cudaFree(over));
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  run_probe();

  float *W, *s, *dy, *dyT, *sT, *y;
  CK(cudaMalloc(&W, std::size_t(kN) * kK * 4));
  CK(cudaMalloc(&s, std::size_t(kB) * kK * 4));
  CK(cudaMalloc(&dy, std::size_t(kB) * kN * 4));
  CK(cudaMalloc(&dyT, std::size_t(kB) * kN * 4));
  CK(cudaMalloc(&sT, std::size_t(kB) * kK * 4));
  CK(cudaMalloc(&y, std::size_t(kB) * kN * 4));
  fill_normal<<<2048, 256>>>(W, std::size_t(kN) * kK, 1, 0.02f, false);
  fill_normal<<<2048, 256>>>(s, std::size_t(kB) * kK, 2, 2.0f, true);  // s = SiLU(temb), temb ~ N(0, 2^2)
  fill_normal<<<2048, 256>>>(dy, std::size_t(kB) * kN, 3, 1.0f, false);
  transpose<<<dim3(kN / 32, kB / 32), dim3(32, 32)>>>(dy, dyT, kB, kN);  // dyT [n][b]
  transpose<<<dim3(kK / 32, kB / 32), dim3(32, 32)>>>(s, sT, kB, kK);    // sT [k][b]
  CK(cudaDeviceSynchronize());

  std::printf("\naccuracy against FP64 at B = %d, in units of the FP32 gate (<= 1 passes):\n", kB);
  // forward: y[b, n] = sum_k W[n, k] s[b, k]: m = n, c = b, r = k; stored y[b][n].
  accuracy("forward y", W, s, kN, kB, kK, 1, kN);
  // grad_weight: gw[n, k] = sum_b dy[b, n] s[b, k]: m = n, c = k, r = b; stored gw[n][k].
  accuracy("grad_weight", dyT, sT, kN, kK, kB, kK, 1);

  std::printf("\ntime of the forward GEMM (M = %d, C = %d, R = %d; %.1f GFLOP), median of 10 after 3:\n", kN, kB, kK,
              2.0 * kN * kB * kK / 1e9);
  for (int mode = 0; mode < 3; ++mode) {
    const double ms = median_ms(3, 10, [&](int) { launch_mode(mode, W, s, y, kN, kB, kK, 1, kN); });
    std::printf("  %-22s %8.3f ms (%6.1f TFLOP/s of FP32 work)\n", kModeNames[mode], ms, 2.0 * kN * kB * kK / ms / 1e9);
  }
  {
    float* sink;
    CK(cudaMalloc(&sink, 4));
    const int iters = 4096, blocks = prop.multiProcessorCount * 8, threads = 256;  // 8 warps per SMSP
    const double ms = median_ms(2, 5, [&](int) { mma_peak<<<blocks, threads>>>(iters, sink); });
    const double flop = 2.0 * 16 * 8 * 8 * 8.0 * iters * blocks * (threads / 32);
    std::printf("  %-22s %8.3f ms (%6.1f TFLOP/s: the mma.sync m16n8k8 TF32 ceiling, register operands only)\n",
                "mma.sync peak", ms, flop / ms / 1e9);
    CK(cudaFree(sink));
  }
  cublasHandle_t h;
  CK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown);
  const float one = 1.0f, zero = 0.0f;
  const std::pair<const char*, cublasComputeType_t> computes[] = {{"cuBLAS FP32", CUBLAS_COMPUTE_32F},
                                                                   {"cuBLAS TF32 (1xTF32)", CUBLAS_COMPUTE_32F_FAST_TF32}};
  for (const auto& [name, compute_type] : computes) {
    const cublasComputeType_t compute = compute_type;
    // y stored [b][n] is, column-major, the N x B matrix W (K x N, transposed) times s (K x B).
    const double ms = median_ms(3, 10, [&](int) {
      cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kN, kB, kK, &one, W, CUDA_R_32F, kK, s, CUDA_R_32F, kK, &zero, y,
                   CUDA_R_32F, kN, compute, CUBLAS_GEMM_DEFAULT);
    });
    std::printf("  %-22s %8.3f ms (%6.1f TFLOP/s)\n", name, ms, 2.0 * kN * kB * kK / ms / 1e9);
  }
  cublasDestroy(h);
  for (float* p : {W, s, dy, dyT, sT, y}) CK(cudaFree(p));
  return 0;
}
