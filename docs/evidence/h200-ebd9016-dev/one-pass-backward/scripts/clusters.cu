// How many clusters of 8 CTAs (512 threads, N KB dynamic smem) the device holds at once.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k() { extern __shared__ char s[]; if (threadIdx.x == 9999) s[0] = 1; }
int main() {
  for (int kb : {100, 150, 190, 203, 220}) {
    size_t smem = kb * 1024;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    for (unsigned c : {1u, 2u, 4u, 8u, 16u}) {
      if (c == 16) cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
      cudaLaunchAttribute a{}; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim = {c, 1, 1};
      cudaLaunchConfig_t cfg{}; cfg.gridDim = dim3(c); cfg.blockDim = dim3(512); cfg.dynamicSmemBytes = smem; cfg.attrs = &a; cfg.numAttrs = 1;
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      printf("smem %3d KB cluster %2u: %d clusters (%d CTAs) %s\n", kb, c, n, n * (int)c, cudaGetErrorString(e));
    }
  }
}
