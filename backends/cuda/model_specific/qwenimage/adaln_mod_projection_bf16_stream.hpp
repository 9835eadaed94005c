// bf16 backward of qwenimage_adaln_mod_projection for small batches (B <= kMaxB) in one pass
// over W: at small B the backward is two streams of 113 MB (W read for d_temb, grad_weight
// written), which three GEMM kernels run one after the other; this kernel runs them together,
// so that the reads and the writes share the memory system, and computes SiLU and grad_bias
// on the way.
//
// It keeps the bf16 contract exactly as the mma.sync GEMMs evaluate it (the same k16 tensor-core
// steps in the same order into one FP32 accumulator, the same zero-filled padding rows, the same
// helper functions for SiLU and grad_bias), so either may run for any B <= kMaxB and the bytes
// are the same; tests/cuda/test_kernel_paths.cpp compares them byte for byte.
#pragma once

#include <cuda_runtime_api.h>

#include "adaln_mod_projection_kernels.hpp"

namespace rlk::cuda::qwenimage::bf16_stream {

// Largest batch this kernel takes: two 32-row grad_weight chunks of the mma.sync GEMM.
constexpr int kMaxB = 64;

// Whether the current device has the shared memory per block the kernel needs (up to 178 KB).
// A host attribute query, cached.
cudaError_t fits_current_device(bool* fits);

// partial[j, b, k] (the 8 fixed n-slices of d_temb, FP32), grad_weight and grad_bias, from temb,
// W and dy. grad_temb is left to the combine kernel.
cudaError_t backward_products(int B, const BackwardTensors& t, float* partial, cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::bf16_stream
