#include "cublas_baseline.hpp"

#include <map>
#include <tuple>

#include <cublasLt.h>
#include <cuda_bf16.h>

namespace rlk::bench {
namespace {

// The workspaces PyTorch 2.11 gives cuBLAS on Hopper, read from its cuBLAS / cuBLASLt API logs
// (docs/evidence/h100-98a2ee8-baseline-pytorch/): 1 MiB to the cuBLASLt matmul of F.linear's forward
// (addmm with the bias epilogue; CUBLASLT_WORKSPACE_SIZE's default), 32 MiB to the cuBLAS handle
// whose mm's run the backward (there a split-K GEMM took 12.6 MB of it). The heuristic's choice
// depends on it: with 32 MiB the FP32 forward at B = 1024 got 64 x 128 tiles, 9% slower than the
// 128 x 128 ones PyTorch's 1 MiB gets. One allocation of the larger size serves both.
constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr std::size_t kForwardWorkspaceBytes = 1u << 20;

Status check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  return std::string(what) + ": cuBLASLt status " + std::to_string(static_cast<int>(status));
}

Status check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorString(status);
}

template <class T>
__device__ float load(const T* p, std::int64_t i) {
  if constexpr (sizeof(T) == 2) return __bfloat162float(p[i]);
  else return p[i];
}

template <class T>
__device__ void store(T* p, std::int64_t i, float v) {
  if constexpr (sizeof(T) == 2) p[i] = __float2bfloat16_rn(v);
  else p[i] = v;
}

template <class T>
__global__ void silu_kernel(const T* x, T* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = load(x, i);
    store(y, i, v / (1.0f + expf(-v)));
  }
}

template <class T>
__global__ void silu_backward_kernel(const T* grad, const T* x, T* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = load(x, i);
    const float sig = 1.0f / (1.0f + expf(-v));
    store(out, i, load(grad, i) * sig * (1.0f + v * (1.0f - sig)));
  }
}

// Bias gradient, a column sum as PyTorch's reduction does it: each block owns 32 columns, its 8
// warps sum interleaved rows (coalesced 32-column row segments), then shared memory adds the 8
// partial sums. (One thread per column was latency-bound: ~100 us at B = 2048.)
constexpr int kSumCols = 32;
constexpr int kSumGroups = 8;
template <class T>
__global__ void column_sum_kernel(const T* dy, T* db, std::int64_t rows, std::int64_t cols) {
  __shared__ float partial[kSumGroups][kSumCols];
  const std::int64_t c = blockIdx.x * std::int64_t(kSumCols) + threadIdx.x;
  float sum = 0.0f;
  if (c < cols) {
    for (std::int64_t r = threadIdx.y; r < rows; r += kSumGroups) sum += load(dy, r * cols + c);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.0f;
    for (int g = 0; g < kSumGroups; ++g) total += partial[g][threadIdx.x];
    store(db, c, total);
  }
}

unsigned grid_for(std::int64_t count) {
  const std::int64_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
}

template <class T>
Status launch_silu(const BaselineProblem& p, const BaselineTensors& t, cudaStream_t stream) {
  const std::int64_t count = p.B * p.K;
  silu_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<const T*>(t.temb), static_cast<T*>(t.silu), count);
  return check(cudaGetLastError(), "SiLU launch");
}

template <class T>
Status launch_backward_elementwise(const BaselineProblem& p, const BaselineTensors& t, cudaStream_t stream) {
  const std::int64_t count = p.B * p.K;
  silu_backward_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<const T*>(t.grad_silu), static_cast<const T*>(t.temb),
                                                            static_cast<T*>(t.grad_temb), count);
  if (auto r = check(cudaGetLastError(), "SiLU backward launch"); !r.empty()) return r;
  column_sum_kernel<<<static_cast<unsigned>((p.N + kSumCols - 1) / kSumCols), dim3(kSumCols, kSumGroups), 0, stream>>>(
      static_cast<const T*>(t.grad_out), static_cast<T*>(t.grad_bias), p.B, p.N);
  return check(cudaGetLastError(), "bias gradient launch");
}

// One GEMM shape's descriptors and the algorithm the heuristic chose, kept across calls as
// PyTorch keeps its cuBLASLt state, so per-call host work is not charged to cuBLAS.
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace_bytes = 0;  // what the heuristic was told it may use
};

}  // namespace

struct CublasBaseline::Handles {
  cublasLtHandle_t lt = nullptr;
  std::map<std::tuple<CublasBaseline::Math, bool, bool, std::int64_t, std::int64_t, std::int64_t, bool>, GemmPlan> plans;

  ~Handles() {
    for (auto& entry : plans) {
      cublasLtMatrixLayoutDestroy(entry.second.c);
      cublasLtMatrixLayoutDestroy(entry.second.b);
      cublasLtMatrixLayoutDestroy(entry.second.a);
      cublasLtMatmulDescDestroy(entry.second.desc);
    }
    if (lt != nullptr) cublasLtDestroy(lt);
  }
};

CublasBaseline::CublasBaseline(std::unique_ptr<Handles> handles, cudaStream_t stream, void* workspace, std::size_t bytes)
    : handles_(std::move(handles)), stream_(stream), workspace_(workspace), workspace_bytes_(bytes) {}

CublasBaseline::~CublasBaseline() { cudaFree(workspace_); }

std::unique_ptr<CublasBaseline> CublasBaseline::create(cudaStream_t stream, Status& error) {
  auto handles = std::make_unique<Handles>();
  error = check(cublasLtCreate(&handles->lt), "cublasLtCreate");
  void* workspace = nullptr;
  if (error.empty()) error = check(cudaMalloc(&workspace, kWorkspaceBytes), "cudaMalloc(cuBLASLt workspace)");
  if (!error.empty()) return nullptr;
  return std::unique_ptr<CublasBaseline>(new CublasBaseline(std::move(handles), stream, workspace, kWorkspaceBytes));
}

Status CublasBaseline::gemm(Math math, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
                            const void* a, std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc,
                            const void* bias_per_row) {
  const auto key = std::make_tuple(math, transpose_a, transpose_b, m, n, k, bias_per_row != nullptr);
  auto found = handles_->plans.find(key);
  if (found == handles_->plans.end()) {
    GemmPlan& plan = handles_->plans[key];  // released by ~Handles even when set-up fails below
    const cudaDataType_t type = math == Math::bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute = math == Math::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = bias_per_row != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    Status r = check(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    if (r.empty()) r = check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "TRANSA");
    if (r.empty()) r = check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "TRANSB");
    if (r.empty()) {
      r = check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "EPILOGUE");
    }
    if (r.empty() && bias_per_row != nullptr) {
      r = check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_per_row, sizeof bias_per_row),
                "BIAS_POINTER");
    }
    if (r.empty()) r = check(cublasLtMatrixLayoutCreate(&plan.a, type, transpose_a ? k : m, transpose_a ? m : k, lda), "layout A");
    if (r.empty()) r = check(cublasLtMatrixLayoutCreate(&plan.b, type, transpose_b ? n : k, transpose_b ? k : n, ldb), "layout B");
    if (r.empty()) r = check(cublasLtMatrixLayoutCreate(&plan.c, type, m, n, ldc), "layout C");
    // The bias epilogue marks F.linear's forward, which PyTorch runs with the smaller workspace.
    plan.workspace_bytes = bias_per_row != nullptr ? kForwardWorkspaceBytes : workspace_bytes_;
    cublasLtMatmulPreference_t preference = nullptr;
    if (r.empty()) r = check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    if (r.empty()) {
      r = check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &plan.workspace_bytes,
                                                     sizeof plan.workspace_bytes),
                "MAX_WORKSPACE_BYTES");
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int algorithms = 0;
    if (r.empty()) {
      r = check(cublasLtMatmulAlgoGetHeuristic(handles_->lt, plan.desc, plan.a, plan.b, plan.c, plan.c, preference, 1, &heuristic,
                                               &algorithms),
                "cublasLtMatmulAlgoGetHeuristic");
    }
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (r.empty() && algorithms == 0) r = "cuBLASLt's heuristic found no algorithm";
    if (!r.empty()) {
      handles_->plans.erase(key);
      return r;
    }
    plan.algo = heuristic.algo;
    found = handles_->plans.find(key);
  } else if (bias_per_row != nullptr) {
    if (auto r = check(cublasLtMatmulDescSetAttribute(found->second.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_per_row,
                                                      sizeof bias_per_row),
                       "BIAS_POINTER");
        !r.empty()) {
      return r;
    }
  }
  const GemmPlan& plan = found->second;
  const float one = 1.0f, zero = 0.0f;
  return check(cublasLtMatmul(handles_->lt, plan.desc, &one, a, plan.a, b, plan.b, &zero, c, plan.c, c, plan.c, &plan.algo,
                              workspace_, plan.workspace_bytes, stream_),
               "cublasLtMatmul");
}

namespace {
CublasBaseline::Math math_of(const BaselineProblem& p) { return p.bfloat16 ? CublasBaseline::Math::bf16 : CublasBaseline::Math::fp32; }
}  // namespace

Status CublasBaseline::forward(const BaselineProblem& p, const BaselineTensors& t) {
  auto r = p.bfloat16 ? launch_silu<__nv_bfloat16>(p, t, stream_) : launch_silu<float>(p, t, stream_);
  if (!r.empty()) return r;
  // out^T [N, B] = (W^T [K, N] column-major)^T x silu^T [K, B], plus bias per row.
  return gemm(math_of(p), true, false, p.N, p.B, p.K, t.weight, p.K, t.silu, p.K, t.out, p.N, t.bias);
}

Status CublasBaseline::backward(const BaselineProblem& p, const BaselineTensors& t) {
  // grad_silu^T [K, B] = W^T [K, N] x grad_out^T [N, B]
  if (auto r = gemm(math_of(p), false, false, p.K, p.B, p.N, t.weight, p.K, t.grad_out, p.N, t.grad_silu, p.K, nullptr); !r.empty()) {
    return r;
  }
  // grad_weight^T [K, N] = silu^T [K, B] x grad_out [B, N]
  if (auto r = gemm(math_of(p), false, true, p.K, p.N, p.B, t.silu, p.K, t.grad_out, p.N, t.grad_weight, p.K, nullptr); !r.empty()) {
    return r;
  }
  return p.bfloat16 ? launch_backward_elementwise<__nv_bfloat16>(p, t, stream_) : launch_backward_elementwise<float>(p, t, stream_);
}

}  // namespace rlk::bench
