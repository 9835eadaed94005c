// Hopper GEMMs for the bf16 path (see adaln_mod_projection_sm90.hpp). CUTLASS 3 collectives do
// what no hand-written kernel here did well: TMA loads into 128-byte swizzled shared memory,
// a warp-specialized producer / two-consumer pipeline and wgmma. We only choose what decides
// the bytes: fixed tile shapes per GEMM (never chosen by B), no split-K and no stream-K (the
// persistent scheduler hands whole output tiles to CTAs; each tile's K loop runs in ascending
// order in one CTA), and the epilogue arithmetic (acc + bias in FP32, one rounding).
#include "adaln_mod_projection_sm90.hpp"

#if defined(RLK_WITH_SM90_GEMM)

#include "adaln_mod_projection_device.cuh"
#include "adaln_mod_projection_launch.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/device_kernel.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace rlk::cuda::qwenimage::sm90 {
namespace {

using namespace cute;
using bf16 = cutlass::bfloat16_t;
using RowMajor = cutlass::layout::RowMajor;
using ColumnMajor = cutlass::layout::ColumnMajor;

constexpr int kK = 3072;
constexpr int kN = 18432;
constexpr int kSplitN = 8;  // must match kSplitN of the combine kernel (adaln_mod_projection_kernels.cu)

// One GEMM type: bf16 operands, FP32 accumulation, output D of ElementD, no source C.
// CUTLASS's layout tags: A is M x K, B is K x N (ColumnMajor B = K contiguous), D is M x N.
struct Cooperative {  // two consumer warpgroups share one 128-row tile
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
};

struct Pingpong {  // two consumer warpgroups on two tiles, one's epilogue under the other's MMAs
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
};

struct Single {  // one consumer warpgroup on one tile (a 64-row M side)
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecialized;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
};

// (Tried and dropped, docs/notes/cuda-kernels.md: a 64-row ping-pong tile and a 64-row batch
// tile with W's rows on M for forward and d_temb, each within 4% of these.)
template <class LayoutA, class LayoutB, class ElementD, class LayoutD, class Fusion, class Tile,
          class Schedule = Cooperative, class EpilogueTile = cutlass::epilogue::collective::EpilogueTileAuto>
struct GemmOf {
  static constexpr int kAlignAB = 8;
  static constexpr int kAlignD = 16 / static_cast<int>(sizeof(ElementD));
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>, EpilogueTile, float, float,
      void, LayoutD, kAlignD, ElementD, LayoutD, kAlignD, typename Schedule::Epilogue, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, bf16, LayoutA, kAlignAB, bf16, LayoutB,
      kAlignAB, float, Tile, Shape<_1, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      typename Schedule::Mainloop>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                                      cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

using Plain = cutlass::epilogue::fusion::LinearCombination<float, float, void, float>;
using PlainBf16 = cutlass::epilogue::fusion::LinearCombination<bf16, float, void, float>;
using RowBias = cutlass::epilogue::fusion::LinCombPerRowBias<bf16, float, bf16, void, float>;
using ColBias = cutlass::epilogue::fusion::LinCombPerColBias<bf16, float, bf16, void, float>;

// forward: M = n (W rows), N = b, K = k.  A = W (K contiguous), B = s (K contiguous),
// D = y as M-contiguous (y[b, n]), bias per M row.
// Two batch-tile widths: 32 rows for small B (the tensor cores then do little padding work
// while W streams through), 128 for large B. The bytes are the same either way: the k16 MMA
// chain of each element is the same, only how many batch rows one instruction covers changes.
using ForwardNarrow = GemmOf<RowMajor, ColumnMajor, bf16, ColumnMajor, RowBias, Shape<_128, _32, _64>>;
using ForwardWide = GemmOf<RowMajor, ColumnMajor, bf16, ColumnMajor, RowBias, Shape<_128, _128, _64>>;
// 256 of W's rows per tile, the same 128 batch rows: half the tiles, each wgmma k16 step of a
// warpgroup a 64 x 128 x 16 MMA as in ForwardWide, so the same chain per element.
using ForwardTall = GemmOf<RowMajor, ColumnMajor, bf16, ColumnMajor, RowBias, Shape<_256, _128, _64>>;
// The forward with the operands swapped: the batch is the wgmma M side (128 rows per tile) and
// W's rows the N side, 144 per tile, so 128 batch rows make 128 tiles (18432 / 144): one wave on
// the 132 SMs of an H200, where the tiles above make 144 per 128 batch rows (1.09 waves). Each
// element is still one k16 MMA chain in ascending k over the same products, so the bytes are the
// same (tests/cuda/test_kernel_paths.cpp). M = b, N = n, K = k: A = s (K contiguous), B = W (K
// contiguous), D = y[b][n] (N contiguous), bias per N column. (The same swap for d_temb, 192 of
// W's columns per tile, was within the run-to-run spread of the tiles above and slower at
// B = 2048, and with 64 batch rows per tile within 0.5% of the narrow tiles below B = 128: not
// kept, docs/notes/cuda-kernels.md.)
using ForwardSwapped = GemmOf<RowMajor, ColumnMajor, bf16, RowMajor, ColBias, Shape<_128, _144, _64>>;
// The same with 64 batch rows per tile (one consumer warpgroup) for small batches: 128 tiles per
// 64 batch rows, one wave, where the 128 x 32 tiles above make 144 per 32 batch rows (at B = 64:
// 288, 2.2 per SM).
using ForwardSwappedNarrow = GemmOf<RowMajor, ColumnMajor, bf16, RowMajor, ColBias, Shape<_64, _144, _64>, Single>;
// d_temb: M = k, N = b, K = n within one slice, L = slice.  A = W (M contiguous), B = dy
// (K contiguous), D = FP32 partials [slice][b][k] (M contiguous).
using DTembNarrow = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _32, _64>>;
using DTembWide = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _128, _64>>;
// Between them, 64 batch rows: 2 tiles where the narrow ones make 3 (B = 96) or 4 (128), one 128 x
// 128 tile's work split in two where the wide tiles leave SMs idle (B = 128 ... 192).
using DTembMedium = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_128, _64, _64>>;
// 192 of W's columns per tile, 32 batch rows, on the persistent ping-pong kernel: 128 tiles (16 x 8
// slices) per 32 batch rows, one per CTA, each streaming 885 KB of W (its second consumer warpgroup
// idle: one tile each). At B <= 32 they move W faster than the narrow tiles' 192 (1.45 waves) and
// than 256 x 32 cooperative tiles, 96 (12 x 8), which left 36 SMs without W to read (forward +
// backward in `rlk bench`, medians of five alternated rounds, 256 x 32 / 192 x 32: B = 1 0.1012 /
// 0.1007, 3 0.1033 / 0.1026, 8 0.1073 / 0.1054, 16 0.1088 / 0.1073, 32 0.1092 / 0.1079 ms;
// docs/evidence/h200-5350c1d-dev/, docs/notes/cuda-kernels.md).
using DTembTallNarrow = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_192, _32, _64>, Pingpong>;
// Above B = 1024, 256 of W's columns by 128 batch rows (two consumer warpgroups of 128 x 128 each,
// as the forward's ForwardTall): half the tiles of DTembWide, each reading its dy rows once for
// twice the MMAs (kernels.cu's kDTembTallAboveB has the times).
using DTembTall = GemmOf<ColumnMajor, ColumnMajor, float, ColumnMajor, Plain, Shape<_256, _128, _64>>;
// grad_w: M = n, N = k, K = b.  A = dy (M contiguous), B = s (N contiguous), D = gw[n][k].
// Ping-pong (one warpgroup's epilogue under the other's MMAs: the 113 MB of grad_weight stores
// dominate at small B, and with 256-byte epilogue rows it is faster at every B it runs); the
// cooperative GEMM runs when forced.
using GradW = GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _128, _64>>;
// The ping-pong epilogue stores 64 x 128 sub-tiles: rows of 256 contiguous bytes of grad_weight,
// where CUTLASS's automatic 64 x 32 sub-tiles write 64-byte pieces.
using GradWPingpong =
    GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_128, _128, _64>, Pingpong, Shape<_64, _128>>;
// From B = 768, 256 rows of grad_weight by 128 columns on the cooperative kernel: where the
// k-loop over B is long the MMAs, not the stores, bound a tile, and the larger tiles read dy and s
// half as often per output (kernels.cu's kGradWTallFromB has the times).
using GradWTall = GemmOf<ColumnMajor, RowMajor, bf16, RowMajor, PlainBf16, Shape<_256, _128, _64>>;

// Sets a CuTe stride (modes M-or-N, K, L): the dynamic one of the first two modes gets `ld`, the
// batch mode gets `batch`; the static unit stride stays.
template <class Stride>
Stride make_strides(int64_t ld, int64_t batch) {
  Stride s{};
  if constexpr (!cute::is_static<cute::remove_cvref_t<decltype(get<0>(s))>>::value) get<0>(s) = ld;
  if constexpr (!cute::is_static<cute::remove_cvref_t<decltype(get<1>(s))>>::value) get<1>(s) = ld;
  get<2>(s) = batch;
  return s;
}

// Launches one GEMM: CUTLASS builds the kernel parameters (TMA descriptors: host-only driver
// calls, no synchronization, nothing allocated); the kernel's shared-memory limit is raised
// once per device instead of on every call as GemmUniversalAdapter::initialize would. The
// persistent grid is sized from the SM count: that changes which CTA computes a tile, never a
// tile's bytes. The kernels are compiled with CUTLASS_ENABLE_GDC_FOR_SM90, so each waits for the
// grids before it (griddepcontrol.wait in every warp role that reads global memory first) and
// may be launched by launch::kernel.
// The grad_weight GEMMs, which may run on fewer CTAs than SMs with the backward's finish beside
// them (one more kernel instantiation each, below).
template <class G>
constexpr bool kMayLeaveSms =
    std::is_same_v<G, GradW> || std::is_same_v<G, GradWPingpong> || std::is_same_v<G, GradWTall>;

// cutlass::device_kernel that lets the grid after it be placed as soon as it has waited for the
// grids before it (CUTLASS releases after its last tile's main loop; its own waits then return at
// once). The release still follows this kernel's own wait (adaln_mod_projection_device.cuh).
template <class Operator>
__global__ void __launch_bounds__(Operator::MaxThreadsPerBlock, Operator::MinBlocksPerMultiprocessor)
    released_at_start(CUTLASS_GRID_CONSTANT typename Operator::Params const params) {
  extern __shared__ char smem[];
  device::await_prior_grids();
  device::release_dependent_grids();
  Operator op;
  op(params, smem);
}

// s beside the tall-narrow d_temb GEMM (used for B <= 4: backward_bf16 in adaln_mod_projection_kernels.cu
// says why). The grid is CUTLASS's (1, tiles, 1) with more CTAs along y. CUTLASS's CTAs
// (y < body_ctas) run its body unchanged: the persistent scheduler's first tile of CTA y is tile y,
// and with every tile on its first CTA the larger grid only moves each CTA's next (absent) tile
// further out. The extra CTAs, dispatched last onto the SMs the GEMM leaves idle (4 of an H200's
// 132), write s = round(SiLU(temb)) after their wait, in pieces strided over them, with
// silu_kernel's arithmetic (device::silu_piece). The d_temb GEMM does not read s; the
// grid after it reads it after its own wait.
struct SiluBeside {
  const device::bf16* temb = nullptr;
  device::bf16* s = nullptr;
  unsigned body_ctas = 0;
  int vectors = 0;  // device::kSiluVec-element pieces of s
};
template <class Operator>
__global__ void __launch_bounds__(Operator::MaxThreadsPerBlock, Operator::MinBlocksPerMultiprocessor)
    silu_beside(CUTLASS_GRID_CONSTANT typename Operator::Params const params, SiluBeside const silu) {
  extern __shared__ char smem[];
  if (blockIdx.y < silu.body_ctas) {
    Operator op;
    op(params, smem);
    return;
  }
  device::await_prior_grids();
  const int ctas = static_cast<int>(gridDim.y - silu.body_ctas);
  for (int v = static_cast<int>((blockIdx.y - silu.body_ctas) * blockDim.x + threadIdx.x); v < silu.vectors;
       v += ctas * static_cast<int>(blockDim.x))
    device::silu_piece(silu.temb, silu.s, std::int64_t{v} * device::kSiluVec);
  device::release_dependent_grids();
}

// The tiles of the d_temb GEMM that may have CTAs beside it (DTembTallNarrow) at B: its tile's M
// extent (W's columns) and N extent (batch rows) are those of its type.
using BesideTile = typename DTembTallNarrow::Kernel::TileShape;
constexpr int kBesideCols = cute::size<0>(BesideTile{});
constexpr int kBesideRows = cute::size<1>(BesideTile{});
int beside_tiles(int B) { return (kK / kBesideCols) * ((B + kBesideRows - 1) / kBesideRows) * kSplitN; }

// The extents the mainloop's TMA descriptors cover, in place of the problem's (0: the problem's).
// CUTLASS builds the descriptors, the scheduler and the epilogue from one problem shape; with a
// larger extent here the boxes of the last tile read rows that the caller holds as zeros in memory,
// in place of the TMA's out-of-bounds fill, while the scheduler and the epilogue keep the problem's
// extents (forward_silu_rows says why).
struct MainloopExtent {
  int m = 0;
  int n = 0;
};

// Launches `kernel` (a body for G's kernel) on the grid CUTLASS sizes from `args`, its
// shared-memory limit raised once per device, the mainloop's descriptors over `extent`.
template <class G, auto kernel>
cudaError_t launch_gemm(const typename G::Gemm::Arguments& args, cudaStream_t stream, MainloopExtent extent = {}) {
  using Kernel = typename G::Kernel;
  constexpr int smem = Kernel::SharedStorageSize;
  if (const cudaError_t err = launch::allow_smem<kernel>(smem); err != cudaSuccess) return err;
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
  if (extent.m != 0 || extent.n != 0) {
    auto shape = args.problem_shape;
    if ((extent.m != 0 && extent.m < get<0>(shape)) || (extent.n != 0 && extent.n < get<1>(shape)))
      return cudaErrorInvalidValue;
    if (extent.m != 0) get<0>(shape) = extent.m;
    if (extent.n != 0) get<1>(shape) = extent.n;
    params.mainloop = Kernel::CollectiveMainloop::to_underlying_arguments(shape, args.mainloop, nullptr);
  }
  return launch::kernel<kernel>(Kernel::get_grid_shape(params), Kernel::get_block_shape(), smem, stream, params);
}

template <class G>
cudaError_t run(typename G::Gemm::Arguments& args, cudaStream_t stream, int leave_sms = 0, SiluBeside silu = {},
                MainloopExtent extent = {}) {
  using Kernel = typename G::Kernel;
  int device = 0;
  cudaError_t err = launch::attribute<cudaDevAttrMultiProcessorCount>(&args.hw_info.sm_count);
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  args.hw_info.device_id = device;
  // No workspace: the plain persistent scheduler and these epilogues need none; a CUTLASS
  // version that did would be refused here instead of writing through a null pointer.
  if (Kernel::get_workspace_size(args) != 0) return cudaErrorNotSupported;
  if (!Kernel::can_implement(args)) return cudaErrorInvalidValue;
  if constexpr (kMayLeaveSms<G>) {
    if (leave_sms > 0) {
      if (leave_sms >= args.hw_info.sm_count) return cudaErrorInvalidValue;
      args.hw_info.sm_count -= leave_sms;
      return launch_gemm<G, released_at_start<Kernel>>(args, stream, extent);
    }
  }
  if (leave_sms != 0) return cudaErrorInvalidValue;
  if constexpr (std::is_same_v<G, DTembTallNarrow>) {
    if (silu.vectors > 0) {
      constexpr int smem = Kernel::SharedStorageSize;
      if (const cudaError_t e = launch::allow_smem<silu_beside<Kernel>>(smem); e != cudaSuccess) return e;
      const typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
      dim3 grid = Kernel::get_grid_shape(params);
      const dim3 block = Kernel::get_block_shape();
      const int tiles = beside_tiles(get<1>(args.problem_shape));
      // Every tile on its own CTA of a (1, tiles, 1) grid, and at least one SM left for the extra CTAs
      // (as many as s's pieces need, at most the SMs left).
      const int idle = args.hw_info.sm_count - tiles;
      if (grid.x != 1 || grid.z != 1 || static_cast<int>(grid.y) != tiles || idle < 1) return cudaErrorInvalidValue;
      const int wanted = (silu.vectors + static_cast<int>(block.x) - 1) / static_cast<int>(block.x);
      silu.body_ctas = grid.y;
      grid.y += static_cast<unsigned>(wanted < idle ? wanted : idle);
      return launch::kernel<silu_beside<Kernel>>(grid, block, smem, stream, params, silu);
    }
  }
  if (silu.vectors != 0) return cudaErrorInvalidValue;
  return launch_gemm<G, cutlass::device_kernel<Kernel>>(args, stream, extent);
}

// One GEMM's arguments: problem (M, N, K, L), each operand with its leading and batch (L)
// strides, no source C, alpha 1 (so the epilogue's alpha * acc is acc exactly).
template <class G, class ElementD>
typename G::Gemm::Arguments arguments_of(int m, int n, int k, int l, const void* a, int64_t lda, int64_t batch_a,
                                         const void* b, int64_t ldb, int64_t batch_b, ElementD* d, int64_t ldd,
                                         int64_t batch_d) {
  using K = typename G::Kernel;
  typename G::Gemm::Arguments args{};
  args.mode = l > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {m, n, k, l};
  args.mainloop.ptr_A = static_cast<const bf16*>(a);
  args.mainloop.dA = make_strides<typename K::StrideA>(lda, batch_a);
  args.mainloop.ptr_B = static_cast<const bf16*>(b);
  args.mainloop.dB = make_strides<typename K::StrideB>(ldb, batch_b);
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = make_strides<typename K::StrideC>(ldd, batch_d);
  args.epilogue.ptr_D = d;
  args.epilogue.dD = make_strides<typename K::StrideD>(ldd, batch_d);
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  return args;
}

// The batch rows (N) of one forward tile with W's rows on M, and B rounded up to whole tiles of them.
template <class G>
int whole_batch_tiles(int B) {
  constexpr int rows = cute::size<1>(typename G::Kernel::TileShape{});
  static_assert(kForwardSiluRowMultiple % rows == 0, "the workspace's s holds whole forward tiles");
  return (B + rows - 1) / rows * rows;
}

template <class G>
cudaError_t forward_with(int B, const void* weight, const void* silu, const void* bias, void* out,
                         cudaStream_t stream) {
  auto args = arguments_of<G>(kN, B, kK, 1, weight, kK, 0, silu, kK, 0, static_cast<bf16*>(out), kN, 0);
  args.epilogue.thread.bias_ptr = static_cast<const bf16*>(bias);
  return run<G>(args, stream, 0, {}, {0, whole_batch_tiles<G>(B)});
}

// The batch rows of one swapped forward tile (its M), and B rounded up to whole tiles of them.
template <class G>
constexpr int kSwappedRows = cute::size<0>(typename G::Kernel::TileShape{});
template <class G>
int whole_swapped_tiles(int B) { return (B + kSwappedRows<G> - 1) / kSwappedRows<G> * kSwappedRows<G>; }
static_assert(kForwardSiluRowMultiple % kSwappedRows<ForwardSwapped> == 0 &&
                  kForwardSiluRowMultiple % kSwappedRows<ForwardSwappedNarrow> == 0,
              "the workspace's s holds whole swapped forward tiles");

template <class G>
cudaError_t forward_swapped(int B, const void* weight, const void* silu, const void* bias, void* out,
                            cudaStream_t stream) {
  auto args = arguments_of<G>(B, kN, kK, 1, silu, kK, 0, weight, kK, 0, static_cast<bf16*>(out), kN, 0);
  args.epilogue.thread.bias_ptr = static_cast<const bf16*>(bias);
  return run<G>(args, stream, 0, {}, {whole_swapped_tiles<G>(B), 0});
}

template <class G>
cudaError_t dtemb_with(int B, const void* weight, const void* grad_out, float* partial, cudaStream_t stream,
                       const void* temb = nullptr, void* s = nullptr) {
  constexpr int64_t slice = kN / kSplitN;
  auto args = arguments_of<G>(kK, B, static_cast<int>(slice), kSplitN, weight, kK, slice * kK, grad_out, kN, slice,
                              partial, kK, int64_t{B} * kK);
  SiluBeside silu{};
  if (temb != nullptr) silu = {static_cast<const device::bf16*>(temb), static_cast<device::bf16*>(s), 0, B * kK / device::kSiluVec};
  return run<G>(args, stream, 0, silu);
}

template <class G>
cudaError_t gradw_leaving(int B, const void* grad_out, const void* silu, void* grad_weight, cudaStream_t stream,
                          int leave_sms) {
  auto args = arguments_of<G>(kN, kK, B, 1, grad_out, kN, 0, silu, kK, 0, static_cast<bf16*>(grad_weight), kK, 0);
  return run<G>(args, stream, leave_sms);
}

}  // namespace

bool available() { return true; }

int forward_silu_rows(BatchTile tile, int B) {
  switch (tile) {
    case BatchTile::swapped: return whole_swapped_tiles<ForwardSwapped>(B);
    case BatchTile::swapped_narrow: return whole_swapped_tiles<ForwardSwappedNarrow>(B);
    case BatchTile::narrow: return whole_batch_tiles<ForwardNarrow>(B);
    case BatchTile::wide: return whole_batch_tiles<ForwardWide>(B);
    case BatchTile::tall: return whole_batch_tiles<ForwardTall>(B);
    default: return B;  // d_temb's tiles: not forward tiles
  }
}

cudaError_t forward_gemm(BatchTile tile, int B, const void* weight, const void* silu,
                         const void* bias, void* out, cudaStream_t stream) {
  switch (tile) {
    case BatchTile::narrow: return forward_with<ForwardNarrow>(B, weight, silu, bias, out, stream);
    case BatchTile::tall: return forward_with<ForwardTall>(B, weight, silu, bias, out, stream);
    case BatchTile::swapped: return forward_swapped<ForwardSwapped>(B, weight, silu, bias, out, stream);
    case BatchTile::swapped_narrow:
      return forward_swapped<ForwardSwappedNarrow>(B, weight, silu, bias, out, stream);
    case BatchTile::medium:
    case BatchTile::tall_narrow: return cudaErrorInvalidValue;  // d_temb only
    default: return forward_with<ForwardWide>(B, weight, silu, bias, out, stream);
  }
}

bool dtemb_silu_beside_fits(int B, int sm_count) {
  return B >= 1 && B <= kBesideRows && beside_tiles(B) < sm_count;
}

cudaError_t dtemb_gemm(BatchTile tile, int B, const void* weight, const void* grad_out,
                       float* partial, cudaStream_t stream, const void* temb, void* silu) {
  if ((temb == nullptr) != (silu == nullptr)) return cudaErrorInvalidValue;
  if (temb != nullptr) {
    if (tile != BatchTile::tall_narrow) return cudaErrorInvalidValue;
    return dtemb_with<DTembTallNarrow>(B, weight, grad_out, partial, stream, temb, silu);
  }
  switch (tile) {
    case BatchTile::narrow: return dtemb_with<DTembNarrow>(B, weight, grad_out, partial, stream);
    case BatchTile::medium: return dtemb_with<DTembMedium>(B, weight, grad_out, partial, stream);
    case BatchTile::tall_narrow: return dtemb_with<DTembTallNarrow>(B, weight, grad_out, partial, stream);
    case BatchTile::tall: return dtemb_with<DTembTall>(B, weight, grad_out, partial, stream);
    case BatchTile::swapped:
    case BatchTile::swapped_narrow: return cudaErrorInvalidValue;  // forward only
    default: return dtemb_with<DTembWide>(B, weight, grad_out, partial, stream);
  }
}

cudaError_t gradw_gemm(GradWSchedule schedule, int B, const void* grad_out, const void* silu,
                       void* grad_weight, cudaStream_t stream, int leave_sms) {
  switch (schedule) {
    case GradWSchedule::pingpong: return gradw_leaving<GradWPingpong>(B, grad_out, silu, grad_weight, stream, leave_sms);
    case GradWSchedule::tall: return gradw_leaving<GradWTall>(B, grad_out, silu, grad_weight, stream, leave_sms);
    default: return gradw_leaving<GradW>(B, grad_out, silu, grad_weight, stream, leave_sms);
  }
}

}  // namespace rlk::cuda::qwenimage::sm90

#else  // a build without sm_90a: the bf16 path keeps its mma.sync kernels

namespace rlk::cuda::qwenimage::sm90 {
bool available() { return false; }
int forward_silu_rows(BatchTile, int B) { return B; }
cudaError_t forward_gemm(BatchTile, int, const void*, const void*, const void*, void*, cudaStream_t) {
  return cudaErrorNotSupported;
}
bool dtemb_silu_beside_fits(int, int) { return false; }
cudaError_t dtemb_gemm(BatchTile, int, const void*, const void*, float*, cudaStream_t, const void*, void*) {
  return cudaErrorNotSupported;
}
cudaError_t gradw_gemm(GradWSchedule, int, const void*, const void*, void*, cudaStream_t, int) {
  return cudaErrorNotSupported;
}
}  // namespace rlk::cuda::qwenimage::sm90

#endif
