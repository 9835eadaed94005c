// How fast can a shared-memory pipeline stream the fp32 W (18432 x 3072, 226 MB) on this GPU,
// and what decides it? A kernel-design experiment for the fp32 streaming kernels
// (docs/notes/cuda-kernels.md), not part of the library. Each variant stages ROWS x RB-byte row
// segments per pipeline step, either by per-thread 16-byte cp.async or by one bulk copy
// (cp.async.bulk, completing on an mbarrier) per row segment; "copy" variants also write every
// staged byte to a W-sized output (the backward's read-W / write-grad_weight traffic).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a pipeline_check.cu -o pipeline_check
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "experiment_common.cuh"

constexpr int kRows = 18432;
constexpr int kRowBytes = 3072 * 4;
constexpr size_t kBytes = size_t(kRows) * kRowBytes;

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// CTA (ct, rg) covers rows [rg * RPC, +RPC) and bytes [ct * CW, +CW) of each row; a pipeline
// step stages ROWS rows x RB bytes; steps walk the columns first, then the row groups.
template <int ROWS, int RB, int STAGES, int THREADS, bool BULK, bool WRITE>
__global__ void __launch_bounds__(THREADS) pipe(const char* __restrict__ w, char* __restrict__ out,
                                                unsigned* sink, int col_tiles, int rpc) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long full[STAGES];
  const int t = threadIdx.x;
  const int ct = blockIdx.x % col_tiles;
  const int rg = blockIdx.x / col_tiles;
  const int cw = kRowBytes / col_tiles;
  const int csteps = cw / RB;
  const int steps = (rpc / ROWS) * csteps;
  constexpr int kStage = ROWS * RB;
  auto src_of = [&](int step, int r) {
    const int row = rg * rpc + (step / csteps) * ROWS + r;
    const int col = ct * cw + (step % csteps) * RB;
    return size_t(row) * kRowBytes + col;
  };
  if (BULK && t == 0) {
    for (int s = 0; s < STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::);
  }
  __syncthreads();
  auto issue = [&](int step) {
    if (step >= steps) {
      if (!BULK) asm volatile("cp.async.commit_group;" ::);
      return;
    }
    unsigned char* dst = smem + (step % STAGES) * kStage;
    if constexpr (BULK) {
      if (t == 0) {
        const unsigned bar = smem_u32(&full[step % STAGES]);
        asm volatile("fence.proxy.async.shared::cta;" ::);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(kStage));
        for (int r = 0; r < ROWS; ++r)
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                  smem_u32(dst + r * RB)),
              "l"(w + src_of(step, r)), "r"(RB), "r"(bar)
              : "memory");
      }
    } else {
      constexpr int kChunks = kStage / 16;
      for (int i = t; i < kChunks; i += THREADS) {
        const int r = i / (RB / 16);
        const int c = i % (RB / 16);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst + r * RB + c * 16)),
                     "l"(w + src_of(step, r) + c * 16));
      }
      asm volatile("cp.async.commit_group;" ::);
    }
  };
  unsigned acc = 0;
  for (int s = 0; s < STAGES - 1; ++s) issue(s);
  for (int step = 0; step < steps; ++step) {
    if constexpr (BULK) {
      const unsigned bar = smem_u32(&full[step % STAGES]);
      const unsigned parity = (step / STAGES) & 1;
      unsigned done = 0;
      while (!done)
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } else {
      asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
    }
    __syncthreads();
    issue(step + STAGES - 1);
    const unsigned char* src = smem + (step % STAGES) * kStage;
    if constexpr (WRITE) {
      for (int i = t; i < kStage / 16; i += THREADS) {
        const int r = i / (RB / 16);
        const int c = i % (RB / 16);
        const uint4 v = *reinterpret_cast<const uint4*>(src + r * RB + c * 16);
        *reinterpret_cast<uint4*>(out + src_of(step, r) + c * 16) = v;
      }
    } else {
      acc ^= *reinterpret_cast<const unsigned*>(src + (t * 16) % kStage);
    }
  }
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  constexpr int kSets = 2;
  char* w[kSets];
  char* out;
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&w[s], kBytes));
    fill<<<4096, 256>>>(reinterpret_cast<unsigned*>(w[s]), kBytes / 4, 77u + s);
  }
  CK(cudaMalloc(&out, kBytes));
  unsigned* sink;
  CK(cudaMalloc(&sink, 4));
  CK(cudaDeviceSynchronize());
  auto time = [&](const char* name, double bytes, auto&& launch) {
    const double med = median_ms(3, 20, [&](int it) { launch(w[it % kSets]); });
    std::printf("%-64s %8.2f us  %7.0f GB/s\n", name, med * 1e3, bytes / (med * 1e-3) / 1e9);
  };
  // Variant: name, ROWS, RB, STAGES, THREADS, BULK, WRITE; col_tiles, rows per CTA.
#define VARIANT(NAME, ROWS, RB, S, T, BULK, WRITE, CT, RPC)                                            \
  {                                                                                                   \
    auto k = pipe<ROWS, RB, S, T, BULK, WRITE>;                                                       \
    const int smem = ROWS * RB * S;                                                                   \
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));                  \
    const int grid = (kRows / (RPC)) * (CT);                                                          \
    char name[128];                                                                                   \
    std::snprintf(name, sizeof name, "%s: %dx%dB x%d, %d thr, %d CTAs", NAME, ROWS, RB, S, T, grid); \
    time(name, WRITE ? 2.0 * kBytes : double(kBytes),                                                 \
         [&](char* p) { k<<<grid, T, smem>>>(p, out, sink, CT, RPC); });                              \
  }
  VARIANT("fwd cp.async (as built)", 144, 256, 5, 144, false, false, 1, 144);
  VARIANT("fwd cp.async, 288 threads", 144, 256, 5, 288, false, false, 1, 144);
  VARIANT("fwd bulk", 144, 256, 5, 144, true, false, 1, 144);
  VARIANT("fwd cp.async, 1 KB rows", 36, 1024, 5, 144, false, false, 1, 144);
  VARIANT("fwd bulk, 1 KB rows", 36, 1024, 5, 144, true, false, 1, 144);
  VARIANT("fwd bulk, 2 KB rows", 18, 2048, 5, 144, true, false, 1, 144);
  VARIANT("fwd bulk, 4 KB rows x 8 stages", 4, 4096, 8, 144, true, false, 1, 144);
  VARIANT("fwd bulk, 12 KB rows (whole)", 4, 12288, 4, 144, true, false, 1, 144);
  VARIANT("bwd copy cp.async (as built)", 32, 768, 5, 192, false, true, 16, 2304);
  VARIANT("bwd copy bulk", 32, 768, 5, 192, true, true, 16, 2304);
  VARIANT("bwd copy bulk, 1.5 KB rows", 16, 1536, 5, 192, true, true, 8, 1152);
  VARIANT("bwd copy bulk, 3 KB rows", 8, 3072, 5, 192, true, true, 4, 576);
  VARIANT("bwd copy bulk, 3 KB rows, 384 thr", 8, 3072, 5, 384, true, true, 4, 576);
  VARIANT("bwd copy bulk, 6 KB rows", 4, 6144, 5, 384, true, true, 2, 288);
  time("cudaMemcpy d2d 226 MB (bytes read + written)", 2.0 * kBytes,
       [&](char* p) { cudaMemcpyAsync(out, p, kBytes, cudaMemcpyDeviceToDevice); });
  return 0;
}
