// The FP32 d_temb GEMM of the larger batches on CUDA cores: CUTLASS 2.x SIMT kernels (see
// adaln_mod_projection_sm90.hpp). The fp32 contract makes each d_temb element one fmaf
// chain over its reduction in ascending order from 0; CUTLASS's SIMT GEMM evaluates exactly that
// when it runs without split-K (cutlass/gemm/thread/mma_sm50.h: the k loop is outermost and each
// step is d = a * b + d, which nvcc contracts to one FFMA), so it may replace the library's own
// FFMA tiles (adaln_mod_projection_kernels.cu, simt::) for any B. It is here because at large B
// it moves its operands through shared memory with fewer loads per FMA than those tiles (8 x 8
// outputs per thread in 128 x 256 tiles): measured on an H200 (dev/fp32_simt_check.cu,
// docs/notes/cuda-kernels.md), 4.65 ms for d_temb at B = 2048 where cuBLAS's SGEMM takes 4.76.
// Only for the GEMM whose operand layouts suit it: A with the reduction contiguous and B with
// the output columns contiguous, as d_temb has them (dy, W). grad_weight's TwoSum fold is not
// CUTLASS's, so it keeps the library's tiles; the fp32 forward runs on tensor cores
// (adaln_mod_projection_fp32_tf32x3.cu).
#include "adaln_mod_projection_sm90.hpp"

#if defined(RLK_WITH_SM90_GEMM)

#include <cstdint>

#include "adaln_mod_projection_launch.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"

namespace rlk::cuda::qwenimage::sm90 {
namespace {

constexpr int kK = 3072;
constexpr int kN = 18432;
constexpr int kSplitN = 8;  // must match kSplitN of the combine kernel (adaln_mod_projection_kernels.cu)

using RowMajor = cutlass::layout::RowMajor;

// A (M x K) row-major, B (K x N) row-major, D (M x N) row-major, FP32 throughout; D = alpha * acc
// with alpha 1 and no source (beta 0), so D is the accumulator's value exactly. Alignment of one
// element: no operand needs more than 4-byte alignment, so any B and any slice offset are fine.
template <int TbM, int TbN, int WarpM, int WarpN, int Stages>
using SimtGemm = cutlass::gemm::device::GemmUniversal<
    float, RowMajor, float, RowMajor, float, RowMajor, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<TbM, TbN, 8>, cutlass::gemm::GemmShape<WarpM, WarpN, 8>, cutlass::gemm::GemmShape<1, 1, 1>,
    cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, Stages, 1, 1>;

// The two tilings (Fp32Tile).
using Narrow = SimtGemm<64, 128, 32, 64, 5>;
using Wide = SimtGemm<128, 256, 64, 64, 4>;

// Launches G's kernel for D = A B over `batches` independent problems (kBatched: each its own
// whole reduction; kGemm with one batch: no split-K either). Parameters come from CUTLASS's own
// constructor; the launch is ours, so that the shared-memory limit is raised once per device and
// nothing else is queried per call. A plain launch, not launch::kernel: this kernel does not wait
// for the grids before it (no griddepcontrol.wait), so it must not start before they end; the
// kernel after it may be launched by launch::kernel (it is placed when this one has ended).
template <class G>
cudaError_t run(int m, int n, int k, int batches, const float* a, std::int64_t lda, std::int64_t batch_a,
                const float* b, std::int64_t ldb, std::int64_t batch_b, float* d, std::int64_t ldd,
                std::int64_t batch_d, cudaStream_t stream) {
  using Kernel = typename G::GemmKernel;
  const typename G::Arguments args(
      batches > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
      {m, n, k}, batches, {1.0f, 0.0f}, a, b, nullptr, d, batch_a, batch_b, 0, batch_d, lda, ldb, ldd, ldd);
  if (Kernel::can_implement(args) != cutlass::Status::kSuccess) return cudaErrorInvalidValue;
  int sms = 0;
  if (const cudaError_t err = launch::attribute<cudaDevAttrMultiProcessorCount>(&sms); err != cudaSuccess) return err;
  const typename Kernel::Params params(args, sms, 1);
  // No workspace: neither batched mode nor a one-batch GEMM splits K; a CUTLASS version whose
  // parameters asked for one is refused instead of writing through a null pointer.
  if (params.get_workspace_size() != 0) return cudaErrorNotSupported;
  constexpr int smem = static_cast<int>(sizeof(typename Kernel::SharedStorage));
  constexpr auto kernel = cutlass::Kernel2<Kernel>;
  if (const cudaError_t err = launch::allow_smem<kernel>(smem); err != cudaSuccess) return err;
  const dim3 grid = typename Kernel::ThreadblockSwizzle().get_grid_shape(params.grid_tiled_shape);
  return launch::plain<kernel>(grid, dim3(Kernel::kThreadCount), smem, stream, params);
}

template <class G>
cudaError_t dtemb(int B, const float* weight, const float* grad_out, float* partial, cudaStream_t stream) {
  constexpr std::int64_t slice = kN / kSplitN;
  return run<G>(B, kK, static_cast<int>(slice), kSplitN, grad_out, kN, slice, weight, kK, slice * kK, partial, kK,
                std::int64_t{B} * kK, stream);
}

}  // namespace

cudaError_t fp32_dtemb_gemm(Fp32Tile tile, int B, const float* weight, const float* grad_out, float* partial,
                            cudaStream_t stream) {
  return tile == Fp32Tile::wide ? dtemb<Wide>(B, weight, grad_out, partial, stream)
                                : dtemb<Narrow>(B, weight, grad_out, partial, stream);
}

}  // namespace rlk::cuda::qwenimage::sm90

#else  // a build without sm_90a: the fp32 path keeps its own tiles everywhere

namespace rlk::cuda::qwenimage::sm90 {
cudaError_t fp32_dtemb_gemm(Fp32Tile, int, const float*, const float*, float*, cudaStream_t) {
  return cudaErrorNotSupported;
}
}  // namespace rlk::cuda::qwenimage::sm90

#endif
