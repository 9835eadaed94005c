// The fp32 forward of qwenimage_adaln_mod_projection on tensor cores: every element of y is the
// operator's FP32 3xTF32 chain (docs/operators/qwenimage-adaln-mod-projection.md, "Arithmetic
// contract"), evaluated with mma.sync m16n8k8 TF32 instructions on the contract's truncated pieces,
// cut from the FP32 operands inside the kernel (W's in registers after each fragment load, s's once
// per pipeline stage in shared memory), so nothing is written before the GEMM and no workspace is
// needed for pieces.
//
// One kernel template, four tilings: 144 rows of W per CTA against 8, 16 or 64 batch rows, or 128
// rows of W against 128 batch rows. Every tiling evaluates the same chain for every element (the
// tiling only decides which warp does it and when its operands arrive), so any of them may run for
// any B; tests/cuda/test_kernel_paths.cpp compares them byte for byte, and with the wgmma kernel
// that evaluates the same chain on sm_90a (sm90::fp32_forward_wgmma). The 8- and 16-row tilings
// read temb and compute SiLU themselves (streaming W once, for small batches); the others read s
// from the workspace, written by the SiLU kernel.
#pragma once

#include <cuda_runtime_api.h>

namespace rlk::cuda::qwenimage::tf32x3 {

enum class Tile { batch8, batch16, batch64, batch128 };

// Batch rows a tiling holds per CTA (the streaming tilings take B up to this).
constexpr int batch_rows(Tile t) {
  return t == Tile::batch8 ? 8 : t == Tile::batch16 ? 16 : t == Tile::batch64 ? 64 : 128;
}
constexpr bool computes_silu(Tile t) { return t == Tile::batch8 || t == Tile::batch16; }

// Whether the current device can run tiling `t` (its shared memory; a cached attribute query).
cudaError_t fits_current_device(Tile t, bool* fits);

// y[b, n] for b < B. `x` is temb for the tilings that compute SiLU, s = SiLU(temb) in FP32
// otherwise ([B, 3072] either way). B >= 1; the 8- and 16-row tilings take B <= batch_rows(t).
cudaError_t forward(Tile t, int B, const float* x, const float* weight, const float* bias, float* out,
                    cudaStream_t stream);

// The proposed tensor-core backward's two GEMMs on mma.sync, for devices without the sm_90a kernels:
// the chains of sm90::fp32_dtemb_wgmma and sm90::fp32_grad_weight_wgmma (adaln_mod_projection_sm90.hpp),
// element for element, from the FP32 operands (cut in the kernel). dtemb_partials writes
// partial[z, b, k] for the kSplitN slices z; grad_weight reads s = SiLU(temb) in FP32 ([B, 3072]).
// B >= 1.
cudaError_t dtemb_partials(int B, const float* weight, const float* grad_out, float* partial, cudaStream_t stream);
cudaError_t grad_weight(int B, const float* grad_out, const float* s, float* grad_weight, cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::tf32x3
