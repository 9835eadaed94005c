// Hopper (sm_90a) PTX the hand-written wgmma kernels use: mbarriers, TMA tile loads and stores, the shared
// memory descriptor of a K-major operand with 128-byte swizzle, and on the host the tensor maps
// those loads read. Shared by the fp32 wgmma forward
// (adaln_mod_projection_sm90_tf32x3.cu) and the development checks (dev/tf32x3_gemm_check.cu).
// Hand-written because these few instructions are all the kernels need of CuTe's TMA and wgmma
// layers, whose atoms do not offer the fragment the forward cuts in registers (A from registers
// after a swizzled ldmatrix).
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap and its enums (the encoder comes from the driver at run time)
#include <cuda_runtime.h>

namespace rlk::cuda::qwenimage::ptx {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled, looked up once through the runtime (no libcuda link); null
// where the driver does not have it.
inline EncodeTiled tensor_map_encoder() {
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return EncodeTiled{nullptr};
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

// A [rows, cols] FP32 row-major tensor read in box_rows x 32 boxes (128-byte rows) with 128-byte
// swizzle, as desc_sw128 describes them in shared memory; rows past `rows` read as zeros. The
// driver's result (CUDA_SUCCESS, or why the map cannot be encoded: a pointer not 16-byte aligned).
inline CUresult encode_sw128(EncodeTiled fn, CUtensorMap* map, const float* p, int rows, int cols, int box_rows) {
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * 4};
  const cuuint32_t box[2] = {32, cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(p), dims, strides, box, elem,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

__device__ __forceinline__ std::uint32_t sa(const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); }

// A 32-bit load from shared memory (a generic pointer the compiler cannot prove shared would be a
// generic load).
__device__ __forceinline__ std::uint32_t lds_u32(const void* p) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(sa(p)));
  return v;
}

__device__ __forceinline__ void sts_f32x2(void* p, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(sa(p)), "f"(x), "f"(y) : "memory");
}

__device__ __forceinline__ void mbar_init(std::uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(count));
}
// Makes the initialised barriers visible to the async proxy (TMA) before their first use.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* b, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(sa(b)),
      "r"(parity)
      : "memory");
}

// A ring of `stages` shared-memory stages, each with a `full` barrier (one producer arrival plus the
// TMA bytes) and an `empty` one (`consumers` arrivals, one per consumer warpgroup). Called by one
// thread before the block's first __syncthreads.
__device__ __forceinline__ void stages_init(std::uint64_t* full, std::uint64_t* empty, int stages, unsigned consumers) {
  for (int s = 0; s < stages; ++s) {
    mbar_init(&full[s], 1);
    mbar_init(&empty[s], consumers);
  }
  mbar_init_fence();
}
// The producer's turn at fill number c: waits until the consumers freed the stage's previous fill,
// announces `bytes` of TMA loads on its full barrier, and returns the stage.
__device__ __forceinline__ int stage_acquire(std::uint64_t* full, std::uint64_t* empty, int c, int stages,
                                             unsigned bytes) {
  const int s = c % stages;
  if (c >= stages) mbar_wait(&empty[s], ((c / stages) - 1) & 1);
  mbar_expect_tx(&full[s], bytes);
  return s;
}

// A 2D box of `map` at element coordinates (x: innermost, y) into shared memory; completes on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int x, int y, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          sa(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(sa(bar))
      : "memory");
}

// K-major operand with 128-byte swizzle: rows of 128 bytes (32 FP32), 8-row atoms 1024 bytes apart;
// `p` inside a 1024-byte aligned tile (the k8 step's offset added to the tile's base).
__device__ __forceinline__ std::uint64_t desc_sw128(const void* p) {
  const std::uint64_t addr = sa(p);
  return ((addr & 0x3ffff) >> 4) | (std::uint64_t(1) << 16) | (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

// A 2D box of shared memory (laid out as `map`'s box, swizzle included) into global memory at element
// coordinates (x: innermost, y), in the thread's current bulk group. The shared-memory writes it reads
// must be fenced to the async proxy first (fence_proxy_async) by every thread that made them.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, const void* src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(x), "r"(y), "r"(sa(src))
               : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most kPending of the thread's bulk groups (the newest) have not yet read their shared
// memory (the others' may be written again).
template <int kPending = 0>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Until the thread's bulk groups are complete (their writes done).
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// A barrier of `threads` threads (a multiple of 32) on hardware barrier `id` (1-15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

}  // namespace rlk::cuda::qwenimage::ptx
