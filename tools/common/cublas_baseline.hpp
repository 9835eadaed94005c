// The baseline rl-kernel is measured against: what PyTorch's F.linear(F.silu(temb), W, b)
// and its autograd run on a GPU — an elementwise SiLU, cuBLASLt GEMMs with the default
// heuristic (bias epilogue in forward) and the workspace sizes PyTorch gives them (see
// kWorkspaceBytes), the SiLU backward elementwise, and the bias-gradient column sum. PyTorch
// runs the backward's two GEMMs through cuBLAS's cublasGemmEx / cublasSgemm, which its API log
// (B = 1024, both dtypes, on an H100) shows choosing the same algorithms as cuBLASLt's heuristic
// here. TF32 is off for float32 (CUBLAS_COMPUTE_32F). Not batch-invariant: cuBLASLt picks
// kernels and split-K by shape, which is what the conformance negative control shows.
//
// Compiled by nvcc, which does not take the library's C++23 headers: errors are strings here
// (empty = success) and the callers turn them into rlk::Error values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

namespace rlk::bench {

using Status = std::string;

struct BaselineProblem {
  bool bfloat16 = true;  // else float32
  std::int64_t B = 1, K = 3072, N = 18432;
};

// Device pointers of one call; the SiLU output and its gradient are the baseline's own
// intermediates, as PyTorch's autograd keeps them.
struct BaselineTensors {
  const void* temb;
  const void* weight;
  const void* bias;
  void* out;
  const void* grad_out;
  void* grad_temb;
  void* grad_weight;
  void* grad_bias;
  void* silu;       // [B, K] saved SiLU(temb)
  void* grad_silu;  // [B, K] grad_out @ W
};

class CublasBaseline {
 public:
  // nullptr with `error` set when cuBLASLt or its workspace cannot be had.
  static std::unique_ptr<CublasBaseline> create(cudaStream_t stream, Status& error);
  ~CublasBaseline();
  CublasBaseline(const CublasBaseline&) = delete;
  CublasBaseline& operator=(const CublasBaseline&) = delete;

  Status forward(const BaselineProblem& problem, const BaselineTensors& t);
  Status backward(const BaselineProblem& problem, const BaselineTensors& t);
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // C[m, n] = op(A) op(B) (+ bias per row), column-major, with the algorithm cuBLASLt's
  // heuristic picks for the shape; also used to measure the matrix-rate ceilings.
  // The math of gemm: BF16 in and out, or FP32 in and out with FP32 products (what the baseline
  // runs, TF32 off) or with TF32 products (CUBLAS_COMPUTE_32F_FAST_TF32; only for the TF32
  // tensor-core ceiling).
  enum class Math { bf16, fp32, tf32 };
  Status gemm(Math math, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
              const void* a, std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc,
              const void* bias_per_row);

 private:
  struct Handles;
  CublasBaseline(std::unique_ptr<Handles> handles, cudaStream_t stream, void* workspace, std::size_t bytes);
  std::unique_ptr<Handles> handles_;
  cudaStream_t stream_;
  void* workspace_;
  std::size_t workspace_bytes_;
};

}  // namespace rlk::bench
