// How fast can a W-sized bf16 tensor (18432 x 3072, 113 MB: grad_weight) be written on this GPU,
// and which store pattern gets there? At small B the bf16 grad_weight GEMM is one write of it;
// this measures the ceiling a kernel that computes it could reach (docs/notes/cuda-kernels.md).
// A kernel-design experiment, not part of the library.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a write_check.cu -o write_check
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "experiment_common.cuh"

constexpr int kRows = 18432;
constexpr int kCols = 3072;
constexpr int kRowBytes = kCols * 2;
constexpr size_t kBytes = size_t(kRows) * kRowBytes;
constexpr int kCtas = 128;                 // one wave on 132 SMs
constexpr int kCtaRows = kRows / kCtas;    // 144
constexpr size_t kCtaBytes = size_t(kCtaRows) * kRowBytes;

// (a) grid-stride 16-byte stores: write_grid_stride (experiment_common.cuh).

// (b) each CTA writes its own contiguous 144 rows, 16-byte stores, the block sweeping forward.
__global__ void write_cta_chunk(unsigned char* w) {
  uint4* base = reinterpret_cast<uint4*>(w + blockIdx.x * kCtaBytes);
  constexpr size_t words = kCtaBytes / 16;
  for (size_t i = threadIdx.x; i < words; i += blockDim.x) base[i] = make_uint4(unsigned(i), 1u, 2u, 3u);
}

// (c) the store pattern of an mma.sync tile whose quads exchanged their fragments: one warp
// instruction stores 16 bytes per lane, 64 contiguous bytes in each of 8 rows. Each of 8 warps
// owns 384 columns of the CTA's 144 rows and walks 16-row groups.
__global__ void write_quad_rows(unsigned char* w) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane >> 2;
  const int tq = lane & 3;
  unsigned char* base = w + blockIdx.x * kCtaBytes + warp * 384 * 2;
  for (int group = 0; group < kCtaRows / 16; ++group)
    for (int half = 0; half < 2; ++half)
      for (int j = 0; j < 384 / 32; ++j) {
        unsigned char* p = base + size_t(group * 16 + half * 8 + g) * kRowBytes + j * 64 + tq * 16;
        *reinterpret_cast<uint4*>(p) = make_uint4(unsigned(j), 1u, 2u, 3u);
      }
}

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// (d) bulk copies from shared memory (cp.async.bulk, issued by one thread per piece): each
// 16-row group of the CTA's rows is 96 KB contiguous in global memory; `pieces` copies per group.
template <int pieces>
__global__ void write_bulk(unsigned char* w) {
  extern __shared__ __align__(128) unsigned char buf[];
  constexpr int kGroupBytes = 16 * kRowBytes;
  constexpr int kPiece = kGroupBytes / pieces;
  for (int i = threadIdx.x; i < kGroupBytes / 4; i += blockDim.x) reinterpret_cast<unsigned*>(buf)[i] = i;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  if (threadIdx.x < pieces) {
    for (int group = 0; group < kCtaRows / 16; ++group) {
      unsigned char* dst = w + blockIdx.x * kCtaBytes + size_t(group) * kGroupBytes + threadIdx.x * kPiece;
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
                   "r"(smem_u32(buf + threadIdx.x * kPiece)), "r"(kPiece)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  constexpr int kSets = 3;
  unsigned char* w[kSets];
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&w[s], kBytes));
    fill<<<4096, 256>>>(reinterpret_cast<unsigned*>(w[s]), kBytes / 4, 77u + s);
  }
  CK(cudaDeviceSynchronize());
  constexpr int kGroupBytes = 16 * kRowBytes;
  CK(cudaFuncSetAttribute(write_bulk<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kGroupBytes));
  CK(cudaFuncSetAttribute(write_bulk<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, kGroupBytes));
  CK(cudaFuncSetAttribute(write_bulk<16>, cudaFuncAttributeMaxDynamicSharedMemorySize, kGroupBytes));
  // Two numbers per pattern: one launch between two events (what one call sees), and 20
  // launches back to back between two events, divided by 20 (the pattern's own rate).
  auto time = [&](const char* name, auto&& launch) {
    const double one = median_ms(3, 30, [&](int it) { launch(w[it % kSets]); });
    const double many = median_ms(1, 5, [&](int) {
                          for (int i = 0; i < 20; ++i) launch(w[i % kSets]);
                        }) / 20;
    std::printf("%-48s one %7.2f us %6.0f GB/s | back to back %7.2f us %6.0f GB/s\n", name, one * 1e3,
                kBytes / (one * 1e-3) / 1e9, many * 1e3, kBytes / (many * 1e-3) / 1e9);
  };
  for (int per_sm : {2, 4, 8}) {
    char name[64];
    std::snprintf(name, sizeof name, "grid-stride 16 B, %d blocks/SM x 256", per_sm);
    time(name, [&](unsigned char* p) { write_grid_stride<<<sms * per_sm, 256>>>(reinterpret_cast<uint4*>(p), kBytes / 16); });
  }
  for (int threads : {256, 512, 1024}) {
    char name[64];
    std::snprintf(name, sizeof name, "128 CTAs x %d, contiguous 144 rows each", threads);
    time(name, [&](unsigned char* p) { write_cta_chunk<<<kCtas, threads>>>(p); });
  }
  time("128 CTAs x 8 warps, 8 rows x 64 B per store", [&](unsigned char* p) { write_quad_rows<<<kCtas, 256>>>(p); });
  time("128 CTAs, bulk 96 KB per 16 rows, 1 piece", [&](unsigned char* p) { write_bulk<1><<<kCtas, 128, kGroupBytes>>>(p); });
  time("128 CTAs, bulk 96 KB per 16 rows, 4 pieces", [&](unsigned char* p) { write_bulk<4><<<kCtas, 128, kGroupBytes>>>(p); });
  time("128 CTAs, bulk 96 KB per 16 rows, 16 pieces", [&](unsigned char* p) { write_bulk<16><<<kCtas, 128, kGroupBytes>>>(p); });
  time("cudaMemsetAsync 113 MB", [&](unsigned char* p) { CK(cudaMemsetAsync(p, 1, kBytes)); });
  return 0;
}
