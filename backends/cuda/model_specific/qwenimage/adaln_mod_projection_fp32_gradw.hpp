// fp32 grad_weight of qwenimage_adaln_mod_projection for mid-sized batches
// (kMinB <= B <= kMaxB): one CTA per block of grad_weight's rows, holding grad_out's columns of
// those rows for the whole call and looping over K in column tiles of s that stream through a
// double buffer, so that each CTA's stores overlap its next tile's loads and FMAs. The tiled GEMM
// (simt:: in adaln_mod_projection_kernels.cu) runs one 64 x 128 output tile per CTA, and at these
// batch sizes its pipeline fill and its stores barely overlap anything (docs/notes/cuda-kernels.md,
// fifteenth session).
//
// Each element is the tiled kernel's chain (written out at the top of the .cu file), evaluated
// with the same helpers, so the bytes are the same; tests/cuda/test_kernel_paths.cpp compares them
// byte for byte.
#pragma once

#include <cuda_runtime_api.h>

namespace rlk::cuda::qwenimage::fp32_gradw {

// The batch sizes this kernel takes, and where the automatic choice runs it: past one compensated
// chunk (the streaming backward's range) up to 64. `rlk bench` against the tiled grad_weight on an
// H200, forward + backward, minimum of two rounds (docs/notes/cuda-kernels.md, fifteenth session):
// B = 17 -46 us, 32 -47, 33 -30, 64 -21; a 128-row version was +8 us at 96 and +29 at 128.
constexpr int kMinB = 17;
constexpr int kMaxB = 64;

// Whether the current device can run the kernel at batch size B (its shared memory grows with B).
cudaError_t fits_current_device(int B, bool* fits);

// grad_weight[n, k] from s = SiLU(temb) (FP32, [B, 3072]) and grad_out ([B, 18432]).
cudaError_t grad_weight(int B, const float* s, const float* grad_out, float* grad_weight, cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::fp32_gradw
