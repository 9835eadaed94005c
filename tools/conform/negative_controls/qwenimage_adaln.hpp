// Negative controls for qwenimage_adaln_mod_projection.
#pragma once

#include "executor.hpp"

namespace rlk::conform::qwenimage {

// CPU, forward only: each dot product summed in 1 + B mod 7 blocks, so the order depends on B.
Implementation adaln_blocked_cpu(const Device& device);
// CUDA, both directions: the benchmark's cuBLAS baseline (SiLU kernels, cuBLASLt GEMMs with
// the default heuristic): the kernel and any split-K depend on the shape, so on B.
Result<Implementation> adaln_cublas(const Device& device);

}  // namespace rlk::conform::qwenimage
