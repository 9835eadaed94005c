// What integer tensor cores offer an exact FP32 contract (docs/notes/fp32-on-tensor-cores.md,
// "Exact integer digits"). Development harness, not part of the operator. With FP32 operands cut
// into signed 8-bit digits under a per-row (per-chunk) power-of-two scale, every digit product
// GEMM is an integer sum that INT32 holds exactly, so its bytes cannot depend on the kernel,
// tiling or split-K a library picks for a batch size. This measures, with cuBLAS on the GPU:
//   1. exactness: INT8 x INT8 -> INT32 GEMMs (CUBLAS_COMPUTE_32I) on random full-range digits at
//      the operator's three GEMM shapes at B = 2048, 256 elements each against an int64 sum on the
//      host;
//   2. batch invariance by exactness: the forward-shaped GEMM at N = 1, 3, 64, 2048 batch columns
//      (cuBLAS chooses different kernels), column 0's bytes against each other;
//   3. the rate: median time of each shape's INT8 GEMM and of cuBLAS FP32 (TF32 off) on the same
//      shape, and what six digit-product GEMMs per operand pair (three digits per operand, the
//      products of digit weight sum <= 2) would take for the three GEMMs.
//
// Build (sm_90a, from the repository root):
//   Q=backends/cuda/model_specific/qwenimage
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I $Q $Q/dev/int8_gemm_rate.cu -lcublas -o int8_gemm_rate
// Run: LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./int8_gemm_rate
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "experiment_common.cuh"
#include "int8_gemm.cuh"

namespace {

__global__ void fill_digits(std::int8_t* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = static_cast<std::int8_t>(static_cast<int>(h & 0xff) - 128);  // -128 .. 127
  }
}

__global__ void fill_float(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    p[i] = float(h & 0xffff) / 65536.0f - 0.5f;
  }
}

void gemm_f32(cublasHandle_t h, int M, int N, int K, const float* A, const float* B, float* C) {
  const float one = 1.0f, zero = 0.0f;
  ckb(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, CUDA_R_32F, K, B, CUDA_R_32F, K, &zero, C,
                   CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx fp32");
}

struct Shape {
  const char* name;
  int M, N, K;
};

}  // namespace

int main() {
  cublasHandle_t h;
  ckb(cublasCreate(&h), "cublasCreate");
  ckb(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32 for FP32
  const Shape shapes[] = {{"forward  (M = n 18432, N = b 2048, K = k 3072)", 18432, 2048, 3072},
                          {"d_temb   (M = k 3072, N = b 2048, K = n 18432)", 3072, 2048, 18432},
                          {"grad_w   (M = n 18432, N = k 3072, K = b 2048)", 18432, 3072, 2048}};
  const size_t max_a = size_t(18432) * 3072, max_b = size_t(3072) * 18432, max_c = size_t(18432) * 3072;
  std::int8_t *A, *B;
  std::int32_t* C;
  float *Af, *Bf, *Cf;
  CK(cudaMalloc(&A, max_a));
  CK(cudaMalloc(&B, max_b));
  CK(cudaMalloc(&C, max_c * 4));
  CK(cudaMalloc(&Af, max_a * 4));
  CK(cudaMalloc(&Bf, max_b * 4));
  CK(cudaMalloc(&Cf, max_c * 4));
  fill_digits<<<1024, 256>>>(A, max_a, 11);
  fill_digits<<<1024, 256>>>(B, max_b, 12);
  fill_float<<<1024, 256>>>(Af, max_a, 13);
  fill_float<<<1024, 256>>>(Bf, max_b, 14);
  CK(cudaDeviceSynchronize());
  std::vector<std::int8_t> ha(max_a), hb(max_b);
  CK(cudaMemcpy(ha.data(), A, max_a, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), B, max_b, cudaMemcpyDeviceToHost));

  int failures = 0;
  double total_s8 = 0, total_f32 = 0;
  std::mt19937 rng(2026);
  std::printf("INT8 x INT8 -> INT32 (CUBLAS_COMPUTE_32I) against FP32 (CUBLAS_COMPUTE_32F, TF32 off), cuBLAS, "
              "median of 10 after 3 warm-ups\n");
  for (const Shape& s : shapes) {
    gemm_s8(h, s.M, s.N, s.K, A, s.K, B, s.K, C);
    CK(cudaDeviceSynchronize());
    std::vector<std::int32_t> hc(size_t(s.M) * s.N);
    CK(cudaMemcpy(hc.data(), C, hc.size() * 4, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < 256; ++i) {
      const int m = int(rng() % s.M), n = int(rng() % s.N);
      std::int64_t ref = 0;
      for (int k = 0; k < s.K; ++k) ref += std::int64_t(ha[size_t(m) * s.K + k]) * hb[size_t(n) * s.K + k];
      wrong += ref != hc[size_t(n) * s.M + m];
    }
    failures += wrong;
    const double t8 = median_ms(3, 10, [&](int) { gemm_s8(h, s.M, s.N, s.K, A, s.K, B, s.K, C); });
    const double t32 = median_ms(3, 10, [&](int) { gemm_f32(h, s.M, s.N, s.K, Af, Bf, Cf); });
    total_s8 += t8;
    total_f32 += t32;
    const double ops = 2.0 * s.M * s.N * s.K;
    std::printf("%s: exact %s (%d of 256 sampled elements differ from the int64 sum) | INT8 %.3f ms = %.0f TOP/s "
                "| FP32 %.3f ms = %.1f TFLOP/s\n",
                s.name, wrong ? "NO" : "yes", wrong, t8, ops / t8 * 1e-9, t32, ops / t32 * 1e-9);
  }
  std::printf("three GEMMs: INT8 %.3f ms, FP32 %.3f ms; six digit-product GEMMs each: %.3f ms (%.2fx FP32)\n",
              total_s8, total_f32, 6 * total_s8, 6 * total_s8 / total_f32);

  // Batch invariance by exactness: row 0 of the forward's output (column 0 of C) at several N.
  std::vector<std::int32_t> col0_ref(18432), col0(18432);
  gemm_s8(h, 18432, 2048, 3072, A, 3072, B, 3072, C);
  CK(cudaMemcpy(col0_ref.data(), C, 18432 * 4, cudaMemcpyDeviceToHost));
  for (int n : {1, 3, 64}) {
    CK(cudaMemset(C, 0xFF, size_t(18432) * n * 4));  // poison
    gemm_s8(h, 18432, n, 3072, A, 3072, B, 3072, C);
    CK(cudaMemcpy(col0.data(), C, 18432 * 4, cudaMemcpyDeviceToHost));
    const bool same = std::memcmp(col0.data(), col0_ref.data(), 18432 * 4) == 0;
    failures += !same;
    std::printf("forward batch column 0 at N = %d: bytes %s those at N = 2048\n", n, same ? "equal" : "DIFFER FROM");
  }
  std::printf("failures: %d\n", failures);
  cublasDestroy(h);
  return failures == 0 ? 0 : 1;
}
