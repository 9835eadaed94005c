// Hopper (sm_90a) GEMMs of qwenimage_adaln_mod_projection, wgmma fed by TMA: the bf16 ones built
// from CUTLASS 3 collectives (adaln_mod_projection_sm90.cu), the fp32 3xTF32 ones written by hand
// (adaln_mod_projection_sm90_tf32x3.cu). The arithmetic contract is
// the one in docs/operators/qwenimage-adaln-mod-projection.md; docs/notes/cuda-kernels.md says
// why these keep every element's reduction order independent of B.
//
// Each launcher runs on `stream` and the current device, allocates nothing, never synchronizes
// the host, and uses fixed tile shapes with no split-K (every output tile is reduced by one CTA,
// reduction tiles in ascending order). Pointers are 16-byte aligned device pointers.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace rlk::cuda::qwenimage::sm90 {

// True when this build contains the sm_90a kernels (the CUDA architectures included 90).
bool available();

// How forward and d_temb tile their output. narrow / wide: W's side is the wgmma M side (128
// rows per tile) and one tile covers 32 / 128 batch rows. medium / tall_narrow (d_temb only; the
// forward refuses them with cudaErrorInvalidValue): 128 of W's columns by 64 batch rows / 192 of
// W's columns (one ping-pong consumer warpgroup) by 32 batch rows. swapped / swapped_narrow (forward
// only; d_temb refuses them likewise): the batch is the M side, 128 / 64 rows per tile (two
// consumer warpgroups / one), and one tile covers 144 rows of W. tall: 256 of W's rows (forward) or
// columns (d_temb) by 128 batch rows (two consumer warpgroups of 128). Every tiling gives the same
// bytes.
enum class BatchTile { narrow, wide, swapped, swapped_narrow, medium, tall_narrow, tall };

// grad_w: ping-pong (two warpgroups on two 128 x 128 tiles, one's epilogue under the other's
// MMAs), cooperative (two warpgroups on one 128 x 128 tile) or tall (two warpgroups on one tile of
// 256 of grad_weight's rows by 128 columns). Same bytes.
enum class GradWSchedule { cooperative, pingpong, tall };

// Rows of s that forward_gemm on `tile` reads: B rounded up to whole tiles of its batch rows (the
// swapped tiles' M, the others' N). Every tile loads s with TMA in boxes of a tile's batch rows;
// with the descriptor covering whole tiles and the rows past B zero in memory (the caller writes
// them) every box is in bounds. On an H100 that made the forward faster than the TMA's
// out-of-bounds fill wherever the last tile was partly past B and changed no other B measured: the
// swapped tiles 15, 6 and 19 us at B = 129, 160 and 300 (docs/evidence/h100-46f2adc-dev/), the
// 128 x 128 tiles 16, 13 and 18 us at B = 1100, 1500 and 2000 (docs/evidence/h100-9072020-dev/).
// Only rows below B reach the output, so the bytes are the same either way. At most B rounded up
// to kForwardSiluRowMultiple.
int forward_silu_rows(BatchTile tile, int B);
constexpr int kForwardSiluRowMultiple = 128;

// y[b, n] = round(sum_k W[n, k] s[b, k] + bias[n]) for b < B; n < 18432, k < 3072; s has
// forward_silu_rows(tile, B) rows, zero from B.
cudaError_t forward_gemm(BatchTile tile, int B, const void* weight, const void* silu,
                         const void* bias, void* out, cudaStream_t stream);

// partial[j, b, k] = sum over n in slice j (8 slices of 2304) of dy[b, n] W[n, k], FP32. With temb
// and silu given (the tall_narrow tiles where dtemb_silu_beside_fits), CTAs beside the GEMM's also
// write silu[b, k] = round(SiLU(temb[b, k])), silu_kernel's bytes, for the grid after it; both or
// neither (else cudaErrorInvalidValue, as for another tile or a B that does not fit).
cudaError_t dtemb_gemm(BatchTile tile, int B, const void* weight, const void* grad_out, float* partial,
                       cudaStream_t stream, const void* temb = nullptr, void* silu = nullptr);
// Whether the tall_narrow d_temb at B leaves SMs idle for s's CTAs on a device of sm_count SMs.
bool dtemb_silu_beside_fits(int B, int sm_count);

// gw[n, k] = round(sum_b dy[b, n] s[b, k]), b in ascending 64-row chunks from row 0. With
// leave_sms > 0 the persistent grid has that many CTAs fewer than the device has SMs (which CTA
// computes a tile changes, never its bytes), and the grid after it in the stream is placed as soon
// as each CTA has waited for the grids before it, on the SMs left free (cudaErrorInvalidValue
// where leave_sms is not below the SM count).
cudaError_t gradw_gemm(GradWSchedule schedule, int B, const void* grad_out, const void* silu,
                       void* grad_weight, cudaStream_t stream, int leave_sms = 0);

// fp32 forward on wgmma for the larger batches (adaln_mod_projection_sm90_tf32x3.cu): y[b, n] for
// b < B, the 3xTF32 chain of adaln_mod_projection_fp32_tf32x3.hpp (the same bytes as its tilings),
// from s's truncated pieces s_hi, s_lo ([B, 3072] each, device::tf32_cut of s = SiLU(temb) in FP32)
// and W in FP32. Output tiles of 64 rows of W by 8, 16 or 32 batch rows, or 128 by 64 or 128 (the
// same bytes).
// cudaErrorNotSupported in a build without sm_90a or where the driver has no tensor-map encoder;
// cudaErrorInvalidValue where B < 1 or a tensor map cannot be encoded (a pointer not 16-byte
// aligned).
// batch8 / batch16 / batch32: 64 rows of W (forward) or columns (d_temb) per CTA, one consumer
// warpgroup.
enum class Fp32WgmmaTile { batch8, batch16, batch32, batch64, batch128 };
cudaError_t fp32_forward_wgmma(Fp32WgmmaTile tile, int B, const float* s_hi, const float* s_lo, const float* weight,
                               const float* bias, float* out, cudaStream_t stream);

// The fp32 backward's two GEMMs on the same chains and instructions (A cut in registers, B's pieces
// cut beforehand):
// - fp32_dtemb_wgmma: d_temb's kSplitN slice partials, partial[z, b, k] = the chain over the n of
//   slice z (N / kSplitN each) of dy[b, n] W[n, k], with A = W (read along its columns) and B the
//   pieces of dy ([B, 18432] each). 64 columns of W by 8, 16 or 32 batch rows per CTA (batch8 ...
//   batch32, three CTAs per SM), or 128 by 64 / 128 (the same bytes).
// - fp32_grad_weight_wgmma: grad_weight[n, k] = the chain over the batch of dy[b, n] s[b, k], with
//   A = dy (read along its columns) and B the pieces of s transposed, s_t[k, b] ([3072, ld] each,
//   ld a multiple of 32 with zeros in columns B .. ld - 1); chunks of 32 batch rows from row 0, the
//   last zero-filled.
//   One CTA per SM takes every gridDim-th 128 x 128 tile; the sums leave through shared memory and
//   TMA stores.
//   With `combine.partial` set, its CTAs also write grad_temb once their tiles are stored:
//   device::dtemb_combine_vec of d_temb's partials (`count` = B * 3072 elements; the kernel before it
//   in the stream, or one before that, wrote them), the finish kernel's arithmetic.
// Errors as fp32_forward_wgmma (and cudaErrorInvalidValue for an ld that breaks the rule above).
struct Fp32Combine {
  const float* partial = nullptr;
  const float* temb = nullptr;
  float* grad_temb = nullptr;
  std::int64_t count = 0;
};
cudaError_t fp32_dtemb_wgmma(Fp32WgmmaTile tile, int B, const float* dy_hi, const float* dy_lo, const float* weight,
                             float* partial, cudaStream_t stream);
// How grad_weight's CTAs store a tile's sums (the bytes are the same either way; only the overlap
// of the staging writes with the stores differs): whole_tile writes all of a tile to staging and
// stores its boxes as one bulk group; box_by_box writes and stores each 64 x 32 box as its own
// group, so box j's staging waits only for the previous tile's box j to be read. automatic is
// whole_tile: box_by_box's gain alone does not survive behind d_temb. On an H200, ms, whole tile /
// box by box (dev/kernel_check.cu --fp32-tc-backward at 430fd40,
// docs/evidence/h200-430fd40-dev/kc-fp32.log): grad_weight alone B = 1 0.066 / 0.080, 256 0.260 /
// 0.249, 1024 0.913 / 0.867, 2048 2.160 / 1.718; d_temb (128 rows) then grad_weight, queued together,
// B = 1 0.221 / 0.235, 256 0.469 / 0.484, 384 0.712 / 0.778, 1024 1.744 / 2.029, 2048 4.007 / 3.982.
enum class Fp32GradWStores { automatic, whole_tile, box_by_box };
cudaError_t fp32_grad_weight_wgmma(int B, int ld, const float* grad_out, const float* s_t_hi, const float* s_t_lo,
                                   float* grad_weight, cudaStream_t stream, const Fp32Combine& combine = {},
                                   Fp32GradWStores stores = Fp32GradWStores::automatic);

// Whether the current device has the shared memory fp32_forward_wgmma needs, every tile (false in a
// build without sm_90a).
cudaError_t fp32_forward_wgmma_fits(bool* fits);

}  // namespace rlk::cuda::qwenimage::sm90
