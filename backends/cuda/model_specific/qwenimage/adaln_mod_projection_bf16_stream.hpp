// bf16 forward of qwenimage_adaln_mod_projection for small batches (B <= kMaxB): at small B the
// forward is one read of W (113 MB); this kernel streams it through a deep cp.async pipeline
// (the GEMMs' tiles read it more slowly) and computes SiLU on the way, saving its launch.
//
// It keeps the bf16 contract exactly as the mma.sync forward GEMM evaluates it (each element the
// same chain of mma.sync k16 steps over k ascending into one FP32 accumulator, the bias added in
// FP32, one rounding), so either may run for any B <= kMaxB and the bytes are the same;
// tests/cuda/test_kernel_paths.cpp compares them byte for byte.
#pragma once

#include <cuda_runtime_api.h>

namespace rlk::cuda::qwenimage::bf16_stream {

// Largest batch this kernel takes: one 8-column tile of the mma.sync instruction.
constexpr int kMaxB = 8;

// Whether the current device has the shared memory per block the kernel needs (213 KB).
// A host attribute query, cached.
cudaError_t fits_current_device(bool* fits);

// y = round(sum_k W[n,k] s[b,k] + bias[n]) with s = SiLU(temb) computed here; bf16 tensors.
cudaError_t forward(int B, const void* temb, const void* weight, const void* bias, void* out,
                    cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::bf16_stream
