// Per-CTA stamps of the timeline copies of the streaming kernels (stream_timeline.py): stamp 0
// kernel entry, 1 first stage landed, 2 end of the main loop (%globaltimer, ns), 3 the SM.
#pragma once

constexpr int kTimelineMaxCtas = 1024;
__device__ unsigned long long rlk_stamps[4][kTimelineMaxCtas];

__device__ __forceinline__ unsigned long long rlk_gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void rlk_stamp(int i, unsigned long long t) {
  const unsigned cta = blockIdx.x + gridDim.x * blockIdx.y;
  rlk_stamps[i][cta] = t;
  if (i == 2) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    rlk_stamps[3][cta] = sm;
  }
}
