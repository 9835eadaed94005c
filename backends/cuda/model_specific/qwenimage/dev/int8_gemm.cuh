// cuBLAS INT8 x INT8 -> INT32 GEMMs for the exact-digit experiments (int8_gemm_rate.cu,
// fp32_digits_check.cu; docs/notes/fp32-on-tensor-cores.md). Header-only so each experiment
// still builds alone with one nvcc command.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>

inline void ckb(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::printf("%s failed: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

// C[m, n] (column-major, ldc = M) = sum_k A[m * lda + k] B[n * ldb + k]: both operands
// K-contiguous ("TN"), exact in INT32 while the sums fit.
inline void gemm_s8(cublasHandle_t h, int M, int N, int K, const std::int8_t* A, int lda, const std::int8_t* B,
                    int ldb, std::int32_t* C) {
  const std::int32_t one = 1, zero = 0;
  ckb(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, CUDA_R_8I, lda, B, CUDA_R_8I, ldb, &zero, C,
                   CUDA_R_32I, M, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx int8");
}
