// CPU reference and FP64 oracle for qwenimage_adaln_mod_projection.
// Contract: docs/operators/qwenimage-adaln-mod-projection.md (written once, there and in the spec).
#pragma once

#include <cstdint>

#include "rlk/bfloat16.hpp"
#include "rlk/tensor.hpp"

namespace rlk::reference::qwenimage {

// Shapes are parameters so tests can use small problems; the spec fixes K = 3072, N = 18432.
struct AdalnShape {
  std::int64_t B = 0;  // rows
  std::int64_t K = 0;  // in features (temb width)
  std::int64_t N = 0;  // out features
};

// T is float (float32 storage) or rlk::bfloat16 (bfloat16 storage).
template <class T>
void adaln_forward(const T* temb, const T* weight, const T* bias, T* out, AdalnShape shape,
                   int threads);
template <class T>
void adaln_backward(const T* temb, const T* weight, const T* grad_out, T* grad_temb,
                    T* grad_weight, T* grad_bias, AdalnShape shape, int threads);

// FP64 oracle on the storage values; `execution` selects where SiLU is rounded.
void adaln_forward_oracle(DType execution, const double* temb, const double* weight,
                          const double* bias, double* out, AdalnShape shape, int threads);
void adaln_backward_oracle(DType execution, const double* temb, const double* weight,
                           const double* grad_out, double* grad_temb, double* grad_weight,
                           double* grad_bias, AdalnShape shape, int threads);

}  // namespace rlk::reference::qwenimage
