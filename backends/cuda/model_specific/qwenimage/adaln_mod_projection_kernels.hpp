// Host-side entry points of the CUDA kernels for qwenimage_adaln_mod_projection.
// The arithmetic contract they keep is written once, in
// docs/operators/qwenimage-adaln-mod-projection.md and specs/qwenimage/adaln_mod_projection.yaml.
//
// Every launcher: runs on `stream`, allocates nothing, never synchronizes the host, and uses
// tile shapes, split counts and reduction orders that depend only on the dtype (never on B).
// Pointers are device pointers on the current device, contiguous row-major, 16-byte aligned,
// already validated by the caller.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "adaln_mod_projection_sm90.hpp"

namespace rlk::cuda::qwenimage {

enum class Storage { float32, bfloat16 };

// K = in features (3072), N = out features (18432) for Qwen-Image; kept as parameters so the
// launchers check them, but the kernels are tuned (and may require) exactly these values.
struct Problem {
  Storage storage = Storage::float32;
  std::int64_t B = 0;
  std::int64_t K = 3072;
  std::int64_t N = 18432;
};

struct ForwardTensors {
  const void* temb = nullptr;    // [B, K]
  const void* weight = nullptr;  // [N, K]
  const void* bias = nullptr;    // [N]
  void* out = nullptr;           // [B, N]
};

struct BackwardTensors {
  const void* temb = nullptr;      // [B, K]
  const void* weight = nullptr;    // [N, K]
  const void* grad_out = nullptr;  // [B, N]
  void* grad_temb = nullptr;       // [B, K]
  void* grad_weight = nullptr;     // [N, K]
  void* grad_bias = nullptr;       // [N]
};

// Which kernels run. `automatic` is what the operator uses; the other values exist so that the
// implementations can be compared byte for byte and timed. Every choice gives the same bytes.
//
// bf16, per GEMM: on a compute capability 9.0 device with a build that has them, the wgmma
// GEMMs (sm90::, variant chosen by B), elsewhere the mma.sync ones
// (tests/cuda/test_kernel_paths.cpp compares them). wgmma_narrow / wgmma_wide (batch tile
// 32 / 128) apply to forward and grad_temb, wgmma_medium / wgmma_tall_narrow (128 x 64 tiles /
// 192 x 32 with 192 of W's columns) to grad_temb, wgmma_swapped / wgmma_swapped_narrow (the
// batch on the wgmma M side, 128 / 64 rows per tile) to forward (sm90::BatchTile); wgmma_wide
// (cooperative) / wgmma_pingpong to grad_weight; wgmma_tall to all three (256 of W's rows or
// columns, or of grad_weight's rows, by 128; sm90::BatchTile::tall, sm90::GradWSchedule::tall);
// any other combination is refused with cudaErrorInvalidValue.
enum class GemmFamily {
  automatic,
  mma_sync,
  wgmma_narrow,
  wgmma_wide,
  wgmma_pingpong,
  wgmma_swapped,
  wgmma_swapped_narrow,
  wgmma_medium,
  wgmma_tall_narrow,
  wgmma_tall
};
// `streaming`: the streaming kernels for small batches where they exist (fp32 forward for B <= 16:
// the mma.sync tiles of 8 and 16 batch rows, tf32x3::, which compute SiLU themselves; with
// `automatic` only up to B = 8 where the wgmma kernels run, whose 16-row tile is faster from 9;
// bf16 forward for B <= bf16_stream::kMaxB, bf16
// grad_weight for B <= bf16_stream::kGradWMaxB and, where grad_temb is automatic, bf16 grad_temb
// for B <= bf16_stream::kDTembMaxB: always with `on`, with `automatic` only on devices without
// the wgmma GEMMs, whose 192 x 32 d_temb tiles are faster), on devices with the shared memory they
// need; `off` runs the tiled GEMMs (fp32) or the GEMM families above (bf16).
// tests/cuda/test_kernel_paths.cpp compares them. `on` is refused with cudaErrorInvalidValue where
// no streaming kernel applies (a larger B; a forced bf16 family for the GEMM the streaming kernel
// replaces: forward, grad_weight; a forced fp32 forward tiling; the fp32 backward, which has none),
// with cudaErrorNotSupported on a device without that memory.
enum class Streaming { automatic, off, on };
// fp32, per GEMM, all 3xTF32 chains on tensor cores. The forward (where the streaming tiles do not
// run: B past them, or streaming off): `narrow` 144 rows of W x 64 batch rows per CTA, `wide`
// 128 x 128 (tf32x3::, mma.sync), `wgmma_narrow` / `wgmma_medium` / `wgmma_wide` 64 x 32 / 128 x 64
// / 128 x 128 (rows of W x batch rows) on wgmma (sm90::fp32_forward_wgmma; automatic also takes its
// 64 x 8 and 64 x 16 tiles up to B = 16). d_temb: `narrow` the mma.sync kernel
// (tf32x3::dtemb_partials), `wgmma_narrow` / `wgmma_medium` / `wgmma_wide` the wgmma kernel with 32
// / 64 / 128 batch rows per tile (automatic also takes its 8- and 16-row tiles at small B).
// grad_weight: `narrow` mma.sync (tf32x3::grad_weight), `wgmma_wide` wgmma, and the wgmma kernel's
// stores `grad_weight_stores` (sm90::Fp32GradWStores; a store variant with the mma.sync kernel is
// refused with cudaErrorInvalidValue). Automatic: wgmma where
// the sm_90a kernels run. Any other value for a GEMM is refused with cudaErrorInvalidValue; a forced
// wgmma kernel where the sm_90a kernels cannot run, or a forward tiling this device lacks the shared
// memory for, with cudaErrorNotSupported. Same bytes whichever runs; bf16 calls ignore these fields.
enum class Fp32Tiles { automatic, narrow, wide, wgmma_narrow, wgmma_medium, wgmma_wide };
struct Fp32TileChoice {
  Fp32Tiles forward = Fp32Tiles::automatic;
  Fp32Tiles grad_temb = Fp32Tiles::automatic;
  Fp32Tiles grad_weight = Fp32Tiles::automatic;
  sm90::Fp32GradWStores grad_weight_stores = sm90::Fp32GradWStores::automatic;
};
struct KernelChoice {
  GemmFamily forward = GemmFamily::automatic;
  GemmFamily grad_temb = GemmFamily::automatic;
  GemmFamily grad_weight = GemmFamily::automatic;
  Streaming streaming = Streaming::automatic;
  Fp32TileChoice fp32{};
};

// Returns cudaErrorInvalidValue for shapes the kernels do not support.
std::size_t forward_workspace_bytes(const Problem& problem);
std::size_t backward_workspace_bytes(const Problem& problem);

cudaError_t launch_forward(const Problem& problem, const ForwardTensors& tensors, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream,
                           KernelChoice choice = {});
cudaError_t launch_backward(const Problem& problem, const BackwardTensors& tensors, void* workspace,
                            std::size_t workspace_bytes, cudaStream_t stream,
                            KernelChoice choice = {});

// Strict-math probe, compiled in the same translation unit as the kernels: launches a kernel
// on the current device checking that a subnormal survives a multiply and that IEEE division
// and sqrt are exact. Sets *strict to false in a fast-math build. Synchronizes (called once per
// device at op creation, never inside forward/backward).
cudaError_t run_strict_math_probe(bool* strict, char* detail, std::size_t detail_capacity);

}  // namespace rlk::cuda::qwenimage
