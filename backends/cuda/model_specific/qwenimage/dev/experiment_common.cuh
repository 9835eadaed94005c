// What the standalone memory experiments (stream_check.cu, pipeline_check.cu) share: error
// checks, filling buffers with non-zero data, and the median of CUDA-event times. Header-only so
// each experiment still builds alone with one nvcc command.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

inline void check_cuda(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::printf("%s failed: %s (line %d)\n", what, cudaGetErrorString(e), line);
    std::exit(1);
  }
}
#define CK(x) check_cuda((x), #x, __LINE__)

// Distinct non-zero words, so no read can be short-cut by compression of zero pages.
__global__ void fill(unsigned* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = unsigned(i * 2654435761u) ^ seed;
}

// The plain write ceiling: grid-stride 16-byte stores of `words` uint4 (non-zero data).
__global__ void write_grid_stride(uint4* w, size_t words) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += stride)
    w[i] = make_uint4(unsigned(i), 1u, 2u, 3u);
}

// Median in ms of `timed` calls launch(i) (i counts from 0 over the warm-up calls too), each
// between two events on the legacy stream, after `warmups` untimed ones.
template <class Launch>
double median_ms(int warmups, int timed, Launch&& launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int it = 0; it < warmups + timed; ++it) {
    CK(cudaEventRecord(e0));
    launch(it);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (it >= warmups) ms.push_back(t);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}
