// Where the streaming kernels' time goes at small B: per CTA, when it started, when its first
// pipeline stage landed and when its main loop ended (%globaltimer), on timeline copies of the
// library's kernels made at build time by stream_timeline.py. Prints, per kernel and B, medians
// over 20 calls (3 rotating weight sets, so W comes from DRAM): the CUDA-event time of the call,
// the spread of CTA starts, the first stage's arrival, and the earliest / median / latest end of
// a main loop counted from the first CTA's start; with --per-cta also each CTA's median end and
// its SM. Also the event time of an empty kernel (the launch cost in this timing method).
// The first-stage stamp sits at the pipeline loop's first barrier; the bf16 forward's loop, which
// prepares a stage one step ahead, has stages 0 and 1 landed there.
// The bf16 grad_weight kernel has no pipeline loop of stages (its first-stage time is "n/a"), and
// its end stamp is taken by thread 0, a compute warp, after its last tile and its share of
// grad_temb and grad_bias: the store warps may still be writing the last tile then.
// Built with the project (backends/cuda/CMakeLists.txt) as rlk_stream_timeline.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "adaln_mod_projection_bf16_stream.hpp"
#include "adaln_mod_projection_kernels.hpp"
#include "experiment_common.cuh"
#include "timeline_adaln_mod_projection_bf16_stream.cu"

using namespace rlk::cuda::qwenimage;

namespace {

// The operator's shape, from the kernels' own header (included through the timeline copies).
constexpr int K = device::kK;
constexpr int N = device::kN;
constexpr int kSets = 3;
constexpr int kCalls = 20;
constexpr int kMaxRows = 16;  // the largest B timed below

__global__ void fill_uniform(float* p, size_t n, unsigned seed, float half_width) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = half_width * (2.0f * float(h & 0xffffff) / 16777216.0f - 1.0f);
  }
}

__global__ void to_bf16(const float* a, __nv_bfloat16* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    b[i] = __float2bfloat16(a[i]);
}

__global__ void empty_kernel() {}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool g_per_cta = false;

template <class Launch>
void timeline(const char* name, int ctas, Launch&& launch) {
  std::vector<double> event, skew, first, end_min, end_med, end_max;
  std::vector<std::vector<double>> per_cta(ctas);
  std::vector<unsigned long long> h(4 * kTimelineMaxCtas);
  const std::vector<unsigned long long> zeros(h.size(), 0);  // a kernel without a stamp leaves 0
  for (int call = 0; call < kCalls + 3; ++call) {
    CK(cudaMemcpyToSymbol(rlk_stamps, zeros.data(), sizeof(unsigned long long) * zeros.size()));
    const double ms = median_ms(0, 1, [&](int) { launch(call % kSets); });
    CK(cudaMemcpyFromSymbol(h.data(), rlk_stamps, sizeof(unsigned long long) * h.size()));
    if (call < 3) continue;  // warm-up
    const unsigned long long* start = &h[0];
    const unsigned long long* landed = &h[kTimelineMaxCtas];
    const unsigned long long* done = &h[2 * kTimelineMaxCtas];
    const unsigned long long t0 = *std::min_element(start, start + ctas);
    const unsigned long long t0_last = *std::max_element(start, start + ctas);
    std::vector<double> f, e;
    for (int c = 0; c < ctas; ++c) {
      if (landed[c] != 0) f.push_back((landed[c] - start[c]) * 1e-3);
      e.push_back((done[c] - t0) * 1e-3);
      per_cta[c].push_back(e.back());
    }
    std::sort(e.begin(), e.end());
    event.push_back(ms * 1e3);
    skew.push_back((t0_last - t0) * 1e-3);
    if (!f.empty()) first.push_back(median(f));
    end_min.push_back(e.front());
    end_med.push_back(e[e.size() / 2]);
    end_max.push_back(e.back());
  }
  char first_stage[16] = "  n/a";
  if (!first.empty()) std::snprintf(first_stage, sizeof first_stage, "%5.2f", median(first));
  std::printf("%-20s event %7.2f us | CTA starts within %5.2f us | first stage after %s us | main loop ends "
              "min / median / max %7.2f %7.2f %7.2f us after the first CTA start\n",
              name, median(event), median(skew), first_stage, median(end_min), median(end_med), median(end_max));
  if (!g_per_cta) return;
  std::printf("  per CTA (linear id: median main-loop end in us / SM of the last call):");
  for (int c = 0; c < ctas; ++c)
    std::printf("%s%3d:%6.1f/%3llu", c % 8 ? "  " : "\n   ", c, median(per_cta[c]), h[3 * kTimelineMaxCtas + c]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  g_per_cta = argc > 1 && std::strcmp(argv[1], "--per-cta") == 0;
  const size_t nw = size_t(N) * K;
  float *w32[kSets], *temb32, *bias32, *dy32, *partial;
  __nv_bfloat16 *w16[kSets], *temb16, *bias16, *out16, *dy16, *gw16, *gb16, *gt16;
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&w32[s], nw * 4));
    fill_uniform<<<1024, 256>>>(w32[s], nw, 17 + s, 0.035f);
    CK(cudaMalloc(&w16[s], nw * 2));
    to_bf16<<<1024, 256>>>(w32[s], w16[s], nw);
  }
  CK(cudaMalloc(&temb32, kMaxRows * K * 4));
  fill_uniform<<<64, 256>>>(temb32, kMaxRows * K, 5, 3.5f);
  CK(cudaMalloc(&bias32, N * 4));
  fill_uniform<<<64, 256>>>(bias32, N, 6, 0.035f);
  CK(cudaMalloc(&dy32, kMaxRows * N * 4));
  fill_uniform<<<64, 256>>>(dy32, kMaxRows * N, 7, 1.7f);
  CK(cudaMalloc(&partial, device::kSplitN * kMaxRows * K * 4));
  CK(cudaMalloc(&temb16, kMaxRows * K * 2));
  to_bf16<<<64, 256>>>(temb32, temb16, kMaxRows * K);
  CK(cudaMalloc(&bias16, N * 2));
  to_bf16<<<64, 256>>>(bias32, bias16, N);
  CK(cudaMalloc(&out16, kMaxRows * N * 2));
  CK(cudaMalloc(&dy16, kMaxRows * N * 2));
  to_bf16<<<64, 256>>>(dy32, dy16, kMaxRows * N);
  CK(cudaMalloc(&gw16, nw * 2));
  CK(cudaMalloc(&gb16, N * 2));
  CK(cudaMalloc(&gt16, kMaxRows * K * 2));
  CK(cudaDeviceSynchronize());

  std::printf("empty kernel (128 CTAs of 128 threads) between two events: %.2f us (median of 50)\n",
              median_ms(3, 50, [](int) { empty_kernel<<<128, 128>>>(); }) * 1e3);
  char name[64];
  for (int B : {1, 3, 8}) {
    std::snprintf(name, sizeof name, "bf16 forward B=%d", B);
    timeline(name, 128, [&](int s) { CK(bf16_stream::forward(B, temb16, w16[s], bias16, out16, 0)); });
  }
  for (int B : {1, 3, 8}) {
    std::snprintf(name, sizeof name, "bf16 d_temb B=%d", B);
    timeline(name, 128, [&](int s) { CK(bf16_stream::dtemb_partials(B, w16[s], dy16, partial, 0)); });
  }
  for (int B : {1, 3, 16}) {
    std::snprintf(name, sizeof name, "bf16 grad_weight B=%d", B);
    // temb stands in for s where the kernel takes s (B > 4 in the library): the values do not
    // change the timing. grad_weight is the same tensor every call; W is not read.
    const bf16_stream::Finish finish{partial, temb16, gt16, gb16};
    timeline(name, 128, [&](int) { CK(bf16_stream::grad_weight(B, temb16, B > 4, dy16, gw16, finish, 0)); });
  }
  return 0;
}
