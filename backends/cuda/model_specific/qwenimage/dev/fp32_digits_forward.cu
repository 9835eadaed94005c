// The FP32 forward under the exact-digit contract that docs/notes/fp32-on-tensor-cores.md
// proposes, end to end on the GPU with cuBLAS's INT8 GEMMs. Development harness, not part of the
// operator. Measures whether that design can reach issue 5's FP32 target at B = 2048 (forward +
// backward <= 0.5x cuBLAS FP32), and what it costs at B = 1.
//
// The contract evaluated here, per output y[b, n] = sum_k s[b, k] W[n, k] + bias[n]:
//   - each row of s (over k) and of W (over k) gets a power-of-two scale 2^e with every |x| of
//     the row below 2^e (e = 0 for an all-zero row);
//   - x is rounded to nearest as the 30-bit fixed-point integer q = rint(x * 2^(30 - e)) and cut
//     into four balanced base-256 digits, q = d0 * 2^24 + d1 * 2^16 + d2 * 2^8 + d3, each digit
//     in [-128, 127] (d0 in [-64, 64]);
//   - the ten digit products of weight i + j <= 3 are summed over k exactly, as four diagonal
//     integers D_t = sum_k sum_{i + j = t} a_i[k] b_j[k] (|D_t| < 2^28: INT32 holds them);
//   - y = round_fp32(2^(es + ew - 12) * (((D_0 + D_1 2^-8) + D_2 2^-16) + D_3 2^-24) + bias[n]),
//     the adds in FP64 in that order (the scalings are exact).
// Each D_t is one INT8 GEMM with the digit planes concatenated along K: s's planes stored
// [a0 a1 a2 a3] per row, W's [b3 b2 b1 b0], so D_t pairs the first (t + 1) K of s's row with the
// last (t + 1) K of W's. Being exact, D_t's bytes cannot depend on the kernel cuBLAS picks for a
// batch size: batch invariance by exactness, checked below on row 0 at B = 1 against B = 2048.
//
// Prints: accuracy over all B x 18432 outputs against an FP64 GEMM of the same FP32 s and W (in
// units of the FP32 gate |x - ref| <= 1e-4 + 1e-4 |ref|; cuBLAS FP32 alongside), row 0's bytes at
// B = 1 against B = 2048, and median times of each step at B = 2048 and B = 1 against cuBLAS
// FP32 (TF32 off) on the same GEMM.
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/fp32_digits_forward.cu -lcublas -o fp32_digits_forward
// Run: LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./fp32_digits_forward
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "experiment_common.cuh"
#include "int8_gemm.cuh"

namespace {

constexpr int K = 3072;
constexpr int N = 18432;
constexpr int BMAX = 2048;
constexpr int kDigits = 4;
constexpr int kCutThreads = 256;

__device__ float uniform(std::size_t i, unsigned seed) {  // in [-0.5, 0.5), never all zero
  unsigned h = unsigned(i) * 2654435761u ^ seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (float(h >> 8) + 0.5f) / 16777216.0f - 0.5f;
}

// Uniform values with standard deviation `sd`.
__global__ void fill_uniform(float* p, std::size_t n, float sd, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = uniform(i, seed) * sd * 3.4641016f;
}

__global__ void silu_rows(const float* x, float* s, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    s[i] = x[i] / (1.0f + expf(-x[i]));
}

__global__ void to_double(const float* x, double* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

// One block per row of K: the row's scale exponent and its four digit planes, in the order
// d0 d1 d2 d3 (`reversed` false) or d3 d2 d1 d0 (true), each plane K bytes.
template <bool reversed>
__global__ void __launch_bounds__(kCutThreads) cut_rows(const float* x, std::int8_t* planes, int* exps) {
  __shared__ float warp_max[kCutThreads / 32];
  const float* row = x + std::size_t(blockIdx.x) * K;
  float m = 0.0f;
  for (int k = threadIdx.x; k < K; k += kCutThreads) m = fmaxf(m, fabsf(row[k]));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  m = 0.0f;
  for (int w = 0; w < kCutThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
  const int e = m > 0.0f ? ilogbf(m) + 1 : 0;  // every |x| of the row < 2^e
  if (threadIdx.x == 0) exps[blockIdx.x] = e;
  std::int8_t* out = planes + std::size_t(blockIdx.x) * kDigits * K;
  for (int k = threadIdx.x; k < K; k += kCutThreads) {
    int q = static_cast<int>(llrint(ldexp(static_cast<double>(row[k]), 30 - e)));  // exact scaling, one rounding
    std::int8_t d[kDigits];
    for (int i = kDigits - 1; i > 0; --i) {  // balanced: the low byte as a signed value, then carry
      d[i] = static_cast<std::int8_t>(q & 0xff);
      q = (q - d[i]) >> 8;
    }
    d[0] = static_cast<std::int8_t>(q);  // |q| <= 64 here
    for (int i = 0; i < kDigits; ++i) out[(reversed ? kDigits - 1 - i : i) * K + k] = d[i];
  }
}

// y[b, n] from the four diagonal planes (column-major [b][n], as the GEMMs write them).
__global__ void combine(const std::int32_t* diag, std::size_t plane, const int* es, const int* ew, const float* bias,
                        float* y, int B) {
  const std::size_t count = std::size_t(B) * N;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int b = int(i / N), n = int(i % N);
    double acc = diag[i];
    acc += ldexp(static_cast<double>(diag[plane + i]), -8);
    acc += ldexp(static_cast<double>(diag[2 * plane + i]), -16);
    acc += ldexp(static_cast<double>(diag[3 * plane + i]), -24);
    y[i] = static_cast<float>(ldexp(acc, es[b] + ew[n] - 12) + static_cast<double>(bias[n]));
  }
}

// Largest |x - ref| / (1e-4 + 1e-4 |ref|) (bits of a non-negative float, compared as integers)
// and how many exceed 1.
__global__ void gate_ratio(const float* x, const double* ref, std::size_t n, unsigned* max_bits,
                           unsigned long long* over) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float r = static_cast<float>(fabs(x[i] - ref[i]) / (1e-4 + 1e-4 * fabs(ref[i])));
    atomicMax(max_bits, __float_as_uint(r));
    if (!(r <= 1.0f)) atomicAdd(over, 1ull);
  }
}

template <class T>
__global__ void add_bias_rows(T* y, const float* bias, int B) {
  const std::size_t count = std::size_t(B) * N;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % N];
}

struct Buffers {
  float *temb, *s, *w, *bias, *y;
  std::int8_t *s_planes, *w_planes;
  int *s_exp, *w_exp;
  std::int32_t* diag;
};

// The digit pipeline for B rows: cut s and W, four INT8 GEMMs, combine.
void digits_forward(cublasHandle_t h, const Buffers& d, int B) {
  cut_rows<false><<<B, kCutThreads>>>(d.s, d.s_planes, d.s_exp);
  cut_rows<true><<<N, kCutThreads>>>(d.w, d.w_planes, d.w_exp);
  const std::size_t plane = std::size_t(B) * N;
  for (int t = 0; t < kDigits; ++t)  // D_t: s planes 0 .. t against W planes 3 - t .. 3 (digits t .. 0)
    gemm_s8(h, N, B, (t + 1) * K, d.w_planes + (kDigits - 1 - t) * K, kDigits * K, d.s_planes, kDigits * K,
            d.diag + t * plane);
  combine<<<1024, 256>>>(d.diag, plane, d.s_exp, d.w_exp, d.bias, d.y, B);
}

void sgemm_forward(cublasHandle_t h, const Buffers& d, int B, float* y) {
  const float one = 1.0f, zero = 0.0f;
  ckb(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, B, K, &one, d.w, K, d.s, K, &zero, y, N), "cublasSgemm");
}

}  // namespace

int main() {
  cublasHandle_t h;
  ckb(cublasCreate(&h), "cublasCreate");
  ckb(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32 for FP32
  Buffers d{};
  const std::size_t nt = std::size_t(BMAX) * K, nw = std::size_t(N) * K, ny = std::size_t(BMAX) * N;
  CK(cudaMalloc(&d.temb, nt * 4));
  CK(cudaMalloc(&d.s, nt * 4));
  CK(cudaMalloc(&d.w, nw * 4));
  CK(cudaMalloc(&d.bias, N * 4));
  CK(cudaMalloc(&d.y, ny * 4));
  CK(cudaMalloc(&d.s_planes, nt * kDigits));
  CK(cudaMalloc(&d.w_planes, nw * kDigits));
  CK(cudaMalloc(&d.s_exp, BMAX * 4));
  CK(cudaMalloc(&d.w_exp, N * 4));
  CK(cudaMalloc(&d.diag, ny * kDigits * 4));
  // The conformance distributions: temb std 2, W and bias std 0.02.
  fill_uniform<<<1024, 256>>>(d.temb, nt, 2.0f, 101);
  fill_uniform<<<1024, 256>>>(d.w, nw, 0.02f, 102);
  fill_uniform<<<64, 256>>>(d.bias, N, 0.02f, 103);
  silu_rows<<<1024, 256>>>(d.temb, d.s, nt);
  CK(cudaDeviceSynchronize());

  int failures = 0;
  // Accuracy at B = 2048 against FP64.
  double *sd, *wd, *yref;
  CK(cudaMalloc(&sd, nt * 8));
  CK(cudaMalloc(&wd, nw * 8));
  CK(cudaMalloc(&yref, ny * 8));
  to_double<<<1024, 256>>>(d.s, sd, nt);
  to_double<<<1024, 256>>>(d.w, wd, nw);
  const double one = 1.0, zero = 0.0;
  ckb(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, BMAX, K, &one, wd, K, sd, K, &zero, yref, N), "cublasDgemm");
  add_bias_rows<<<1024, 256>>>(yref, d.bias, BMAX);
  unsigned* max_bits;
  unsigned long long* over;
  CK(cudaMalloc(&max_bits, 4));
  CK(cudaMalloc(&over, 8));
  auto gate = [&](const float* y, const char* what) {
    CK(cudaMemset(max_bits, 0, 4));
    CK(cudaMemset(over, 0, 8));
    gate_ratio<<<1024, 256>>>(y, yref, ny, max_bits, over);
    unsigned bits;
    unsigned long long n_over;
    CK(cudaMemcpy(&bits, max_bits, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&n_over, over, 8, cudaMemcpyDeviceToHost));
    float ratio;
    std::memcpy(&ratio, &bits, 4);
    std::printf("%s at B = %d: max |y - ref| / (1e-4 + 1e-4 |ref|) = %.4g over %zu outputs, %llu over the gate\n",
                what, BMAX, ratio, ny, n_over);
    return n_over;
  };
  CK(cudaMemset(d.y, 0xFF, ny * 4));  // poison: a NaN where nothing was written
  digits_forward(h, d, BMAX);
  CK(cudaDeviceSynchronize());
  failures += gate(d.y, "digits (4 digits, 10 products, per-row scales)") != 0;
  std::vector<float> row0_full(N), row0_one(N);
  CK(cudaMemcpy(row0_full.data(), d.y, N * 4, cudaMemcpyDeviceToHost));
  float* y32;
  CK(cudaMalloc(&y32, ny * 4));
  sgemm_forward(h, d, BMAX, y32);
  add_bias_rows<<<1024, 256>>>(y32, d.bias, BMAX);
  CK(cudaDeviceSynchronize());
  gate(y32, "cuBLAS FP32 (TF32 off), for calibration");

  // Batch invariance by exactness: row 0 alone.
  CK(cudaMemset(d.y, 0xFF, ny * 4));
  digits_forward(h, d, 1);
  CK(cudaMemcpy(row0_one.data(), d.y, N * 4, cudaMemcpyDeviceToHost));
  const bool same = std::memcmp(row0_one.data(), row0_full.data(), N * 4) == 0;
  failures += !same;
  std::printf("row 0 at B = 1: bytes %s those at B = 2048\n", same ? "equal" : "DIFFER FROM");

  // Times (median of 10 after 3 warm-ups, each step alone between events).
  for (int B : {BMAX, 1}) {
    const std::size_t plane = std::size_t(B) * N;
    const double t_cut_s = median_ms(3, 10, [&](int) { cut_rows<false><<<B, kCutThreads>>>(d.s, d.s_planes, d.s_exp); });
    const double t_cut_w = median_ms(3, 10, [&](int) { cut_rows<true><<<N, kCutThreads>>>(d.w, d.w_planes, d.w_exp); });
    double t_gemm[kDigits];
    for (int t = 0; t < kDigits; ++t)
      t_gemm[t] = median_ms(3, 10, [&](int) {
        gemm_s8(h, N, B, (t + 1) * K, d.w_planes + (kDigits - 1 - t) * K, kDigits * K, d.s_planes, kDigits * K,
                d.diag + t * plane);
      });
    const double t_combine =
        median_ms(3, 10, [&](int) { combine<<<1024, 256>>>(d.diag, plane, d.s_exp, d.w_exp, d.bias, d.y, B); });
    const double t_all = median_ms(3, 10, [&](int) { digits_forward(h, d, B); });
    const double t_sgemm = median_ms(3, 10, [&](int) { sgemm_forward(h, d, B, y32); });
    std::printf("B = %d: cut s %.4f, cut W %.4f, INT8 GEMMs D0..D3 %.4f %.4f %.4f %.4f (sum %.4f), combine %.4f ms; "
                "the whole forward %.4f ms against cuBLAS FP32 GEMM %.4f ms (%.2fx)\n",
                B, t_cut_s, t_cut_w, t_gemm[0], t_gemm[1], t_gemm[2], t_gemm[3],
                t_gemm[0] + t_gemm[1] + t_gemm[2] + t_gemm[3], t_combine, t_all, t_sgemm, t_all / t_sgemm);
  }
  std::printf("failures: %d\n", failures);
  cublasDestroy(h);
  return failures == 0 ? 0 : 1;
}
