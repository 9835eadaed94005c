// How fast can W (18432 x 3072 bf16, 113 MB) be streamed on this GPU, and does the access
// pattern matter? Reads W with three patterns and writes a W-sized buffer; prints GB/s.
// A kernel-design experiment (docs/notes/cuda-kernels.md), not part of the library.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a stream_check.cu -o stream_check
#include <cstdio>

#include <cuda_runtime.h>

#include "experiment_common.cuh"

constexpr int kRows = 18432;
constexpr int kCols = 3072;  // bf16 elements: 6144 bytes per row
constexpr size_t kBytes = size_t(kRows) * kCols * 2;

__device__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// (a) contiguous: grid-stride over 16-byte words, 4 loads in flight per thread.
__global__ void read_contiguous(const uint4* w, size_t words, unsigned* sink) {
  unsigned acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < words; i += 4 * stride) {
    uint4 a = w[i], b = w[i + stride], c = w[i + 2 * stride], d = w[i + 3 * stride];
    acc ^= fold(a) ^ fold(b) ^ fold(c) ^ fold(d);
  }
  for (; i < words; i += stride) acc ^= fold(w[i]);
  if (acc == 0x12345678u) *sink = acc;
}

// (b) GEMM tile pattern: a CTA owns 128 rows; per k-block each row contributes 128 bytes
// (8 x 16 B), i.e. what a 128 x 64 bf16 TMA box or cp.async tile reads. 4 k-blocks in flight.
__global__ void read_tiles_128B(const uint4* w, unsigned* sink) {
  const int row0 = blockIdx.x * 128;
  const int t = threadIdx.x;  // 256 threads: 4 passes of 32 rows x 8 words per k-block
  unsigned acc = 0;
  constexpr int kWordsPerRow = kCols * 2 / 16;  // 384
  for (int kb = 0; kb < kWordsPerRow / 8; kb += 4) {
    uint4 v[4][4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int r = row0 + p * 32 + t / 8;
        v[u][p] = w[size_t(r) * kWordsPerRow + (kb + u) * 8 + t % 8];
      }
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int p = 0; p < 4; ++p) acc ^= fold(v[u][p]);
  }
  if (acc == 0x12345678u) *sink = acc;
}

// (c) row segments: each warp owns 16 rows; one warp instruction reads 512 contiguous bytes of
// one row; 4 such in flight per thread.
__global__ void read_rows_512B(const uint4* w, unsigned* sink) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp * 16 >= kRows) return;
  constexpr int kWordsPerRow = kCols * 2 / 16;  // 384 = 12 segments of 32 words
  unsigned acc = 0;
  for (int r = 0; r < 16; ++r) {
    const uint4* row = w + size_t(warp * 16 + r) * kWordsPerRow;
    for (int seg = 0; seg < 12; seg += 4) {
      uint4 a = row[(seg + 0) * 32 + lane], b = row[(seg + 1) * 32 + lane];
      uint4 c = row[(seg + 2) * 32 + lane], d = row[(seg + 3) * 32 + lane];
      acc ^= fold(a) ^ fold(b) ^ fold(c) ^ fold(d);
    }
  }
  if (acc == 0x12345678u) *sink = acc;
}

// (d) write W-sized output, 16-byte stores, grid-stride.
__global__ void write_contiguous(uint4* w, size_t words) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += stride)
    w[i] = make_uint4(unsigned(i), 1u, 2u, 3u);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  constexpr int kSets = 3;
  uint4* w[kSets];
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&w[s], kBytes));
    fill<<<4096, 256>>>(reinterpret_cast<unsigned*>(w[s]), kBytes / 4, 77u + s);
  }
  unsigned* sink;
  CK(cudaMalloc(&sink, 4));
  CK(cudaDeviceSynchronize());
  const size_t words = kBytes / 16;
  auto time = [&](const char* name, auto&& launch) {
    const double med = median_ms(3, 30, [&](int it) { launch(w[it % kSets]); });
    std::printf("%-44s %8.2f us  %7.0f GB/s\n", name, med * 1e3, kBytes / (med * 1e-3) / 1e9);
  };
  for (int per_sm : {4, 8, 16}) {
    char name[64];
    std::snprintf(name, sizeof name, "read contiguous, %d blocks/SM x 256", per_sm);
    time(name, [&](uint4* p) { read_contiguous<<<sms * per_sm, 256>>>(p, words, sink); });
  }
  time("read 128-row tiles, 128 B per row per step", [&](uint4* p) { read_tiles_128B<<<kRows / 128, 256>>>(p, sink); });
  time("read 16-row warps, 512 B per row per load", [&](uint4* p) { read_rows_512B<<<kRows / 16 / 8, 256>>>(p, sink); });
  for (int per_sm : {4, 8}) {
    char name[64];
    std::snprintf(name, sizeof name, "write contiguous, %d blocks/SM x 256", per_sm);
    time(name, [&](uint4* p) { write_contiguous<<<sms * per_sm, 256>>>(p, words); });
  }
  time("cudaMemcpy d2d 56 MB (bytes read + written)", [&](uint4* p) {
    cudaMemcpyAsync(p, w[(p == w[0]) ? 1 : 0], kBytes / 2, cudaMemcpyDeviceToDevice);
  });
  return 0;
}
