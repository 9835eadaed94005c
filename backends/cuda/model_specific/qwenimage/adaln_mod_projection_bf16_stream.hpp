// bf16 streaming kernels of qwenimage_adaln_mod_projection for small batches.
//
// forward (B <= kMaxB): at small B the forward is one read of W (113 MB); this kernel streams
// it through a deep cp.async pipeline (the GEMMs' tiles read it more slowly) and computes SiLU on
// the way, saving its launch.
// d_temb (B <= kDTembMaxB): the forward's pipeline over W read along n, for the GEMM's per-slice
// FP32 partials.
// grad_weight (B <= kGradWMaxB): at small B grad_weight is one write of a W-sized tensor; these
// kernels write it as each CTA's rows in address order (the pattern that reached the write
// ceiling in dev/write_check.cu), for the smallest B can compute SiLU itself (where no CTAs beside
// the wgmma d_temb wrote it), and writes grad_temb
// and grad_bias while its last rows are stored, saving two launches.
//
// All keep the bf16 contract exactly as the mma.sync GEMMs evaluate it (each element the same
// chain of mma.sync k16 steps over the reduction, ascending, into one FP32 accumulator; the
// forward's bias added in FP32; one rounding), so any of them may run for any B it takes and the
// bytes are the same; tests/cuda/test_kernel_paths.cpp compares them byte for byte.
#pragma once

#include <cuda_runtime_api.h>

namespace rlk::cuda::qwenimage::bf16_stream {

// Largest batch this kernel takes: one 8-column tile of the mma.sync instruction.
constexpr int kMaxB = 8;

// Whether the current device has the shared memory per block the forward needs (213 KB).
// A host attribute query, cached.
cudaError_t fits_current_device(bool* fits);

// y = round(sum_k W[n,k] s[b,k] + bias[n]) with s = SiLU(temb) computed here; bf16 tensors.
cudaError_t forward(int B, const void* temb, const void* weight, const void* bias, void* out,
                    cudaStream_t stream);

// Largest batch the d_temb kernel takes: one 8-column tile of the mma.sync instruction.
constexpr int kDTembMaxB = 8;

// Whether the current device has the shared memory per block the d_temb kernel needs (191 KB).
cudaError_t dtemb_fits_current_device(bool* fits);

// The d_temb GEMM's FP32 partials, partial[slice][b][k] = sum over the slice's rows n of
// grad_out[b,n] W[n,k] (kSplitN slices of N / kSplitN rows), as the GEMMs write them for
// backward_finish_kernel.
cudaError_t dtemb_partials(int B, const void* weight, const void* grad_out, float* partial, cudaStream_t stream);

// Largest batch the grad_weight kernels take: up to kGradWSmallMaxB (one k16 step of batch rows)
// the kernel that holds all of s in shared memory; above it, two k16 steps (the mma.sync GEMM's
// r-tile of 32 rows), the one that streams s in chunks of columns. Each runs the k16 steps that
// hold batch rows; the GEMMs' further steps, over zero rows, change no value (the .cu file says
// why), so the chains are the same.
constexpr int kGradWSmallMaxB = 16;
constexpr int kGradWMaxB = 32;

// Whether the current device has the shared memory per block both grad_weight kernels need
// (197 KB).
cudaError_t grad_weight_fits_current_device(bool* fits);

// The backward's other outputs, which the grad_weight kernel writes too (in place of
// backward_finish_kernel, with its arithmetic): grad_temb from the d_temb kernels' FP32 partials
// ([kSplitN][B][K], written by a kernel launched before grad_weight on the same stream) and temb,
// and grad_bias; bf16 tensors.
struct Finish {
  const float* partial;
  const void* temb;
  void* grad_temb;
  void* grad_bias;
};

// grad_weight[n,k] = round(sum_b grad_out[b,n] s[b,k]), and `finish`'s outputs; `s_or_temb` is
// s = SiLU(temb) as silu_kernel writes it when `silu_done`, else temb, and the kernel computes s
// the same way (B <= kGradWSmallMaxB only: a larger B without `silu_done` is cudaErrorInvalidValue).
cudaError_t grad_weight(int B, const void* s_or_temb, bool silu_done, const void* grad_out, void* grad_weight,
                        const Finish& finish, cudaStream_t stream);

}  // namespace rlk::cuda::qwenimage::bf16_stream
