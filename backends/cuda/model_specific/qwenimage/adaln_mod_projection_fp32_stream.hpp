// The fp32 backward of qwenimage_adaln_mod_projection for small batches (B <= kMaxB): the tiled
// CUDA-core GEMMs (adaln_mod_projection_kernels.cu, simt::) spend most of their time on tile
// overhead there, while the work is streaming W (226 MB). This kernel streams it with a deep
// cp.async pipeline and computes d_temb and grad_weight in one pass over W, so that W's reads and
// grad_weight's writes share the memory system. (The fp32 forward's small-batch tiles are
// tf32x3::'s, adaln_mod_projection_fp32_tf32x3.hpp.)
//
// They keep the fp32 contract exactly as the tiled kernels evaluate it (same FMA chains, same
// TwoSum fold, same helper functions), so either may run for any B <= kMaxB and the bytes are
// the same; tests/cuda/test_kernel_paths.cpp compares them byte for byte.
#pragma once

#include <cuda_runtime_api.h>

#include "adaln_mod_projection_kernels.hpp"

namespace rlk::cuda::qwenimage::fp32_stream {

// Largest batch these kernels take: one compensated grad_weight chunk (device::kFp32GradWChunk).
constexpr int kMaxB = 16;

// Whether the current device can run this kernel: it needs 142 KB of shared memory per block,
// more than some GPUs offer (99 KB on compute capability 8.6 and 8.9). A host attribute query, cached.
cudaError_t fits_current_device(bool* fits);

// partial[j, b, k] (the 8 fixed n-slices of d_temb, FP32) and grad_weight, from temb, W and dy;
// SiLU of temb is computed here. grad_temb and grad_bias are left to the backward's finish kernel.
cudaError_t backward_products(int B, const BackwardTensors& t, float* partial, cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::fp32_stream
