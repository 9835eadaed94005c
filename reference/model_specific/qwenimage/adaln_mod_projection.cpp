// CPU reference and FP64 oracle for qwenimage_adaln_mod_projection.
// Contract: docs/operators/qwenimage-adaln-mod-projection.md. The reference must be compiled
// without FMA contraction (-ffp-contract=off) and without fast-math: every element is a fixed
// sequence of IEEE float operations, so its bytes are the same on every x86-64 machine.
#include "qwenimage/adaln_mod_projection.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

namespace rlk::reference::qwenimage {
namespace {

float widen(float value) { return value; }
float widen(bfloat16 value) { return to_float(value); }
double widen(double value) { return value; }

template <class T>
T narrow(float value) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bfloat16(value);
  } else {
    return value;
  }
}

// Element (row, col) of a strided matrix: data[row * row_stride + col * col_stride].
template <class Storage>
struct MatrixView {
  const Storage* data;
  std::int64_t row_stride;
  std::int64_t col_stride;

  Storage at(std::int64_t row, std::int64_t col) const {
    return data[row * row_stride + col * col_stride];
  }
};

// Runs body(first, last) over contiguous ranges of [0, count), one range per thread.
// Callers make each item write its own outputs, so the bytes never depend on `threads`.
template <class Body>
void for_each_range(std::int64_t count, int threads, const Body& body) {
  std::int64_t workers = threads > 0 ? threads : std::thread::hardware_concurrency();
  workers = std::clamp<std::int64_t>(workers, 1, std::max<std::int64_t>(count, 1));
  if (workers == 1) {
    body(std::int64_t{0}, count);
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t worker = 0; worker < workers; ++worker) {
    pool.emplace_back([&body, count, workers, worker] {
      body(count * worker / workers, count * (worker + 1) / workers);
    });
  }
}

// Blocking of the product loops. Output elements are produced in chunks of
// kRowChunk x kColChunk, one chunk per work item; within a chunk the reduction runs in
// slices of kDepthChunk: both operands' slices are packed (contiguous, widened to the
// accumulation type), and each depth step of the right-hand slice feeds kTileCols
// independent accumulators per row (so the compiler vectorizes across output columns while
// each element's own sum stays in ascending order), kRowGroup rows at a time.
constexpr std::int64_t kTileCols = 8;
constexpr std::int64_t kRowGroup = 4;
constexpr std::int64_t kRowChunk = 64;
constexpr std::int64_t kColChunk = 64;
constexpr std::int64_t kDepthChunk = 256;

// kTileCols accumulators of one row, as one GCC vector: element-wise IEEE operations, so each
// lane computes exactly what the scalar code would.
template <class Acc>
using Lanes [[gnu::vector_size(kTileCols * sizeof(Acc))]] = Acc;

// The reference's kernel: for each of Rows rows (packed kDepthChunk apart in `rows`) and each
// of the tile's kTileCols columns (packed kTileCols per depth step in `columns`), adds the
// products in ascending depth order to a float sum with Kahan-Babuska-Neumaier compensation.
// The branch-free two-sum yields exactly Neumaier's correction for finite values, so it
// vectorizes without changing a bit. Cloned for AVX2: wider vectors, same IEEE operations per
// lane (no FMA), so the bytes do not depend on which clone runs.
template <std::int64_t Rows>
[[gnu::target_clones("avx2", "default")]] void accumulate_tile(const float* rows,
                                                               const float* columns,
                                                               std::int64_t depth_count,
                                                               float* sum, float* correction) {
  Lanes<float> s[Rows];
  Lanes<float> c[Rows];
  for (std::int64_t r = 0; r < Rows; ++r) {
    std::memcpy(&s[r], sum + r * kColChunk, sizeof(s[r]));
    std::memcpy(&c[r], correction + r * kColChunk, sizeof(c[r]));
  }
  for (std::int64_t d = 0; d < depth_count; ++d) {
    Lanes<float> b;
    std::memcpy(&b, columns + d * kTileCols, sizeof(b));
    for (std::int64_t r = 0; r < Rows; ++r) {
      const Lanes<float> term = rows[r * kDepthChunk + d] * b;
      const Lanes<float> total = s[r] + term;
      const Lanes<float> term_part = total - s[r];
      c[r] += (s[r] - (total - term_part)) + (term - term_part);
      s[r] = total;
    }
  }
  for (std::int64_t r = 0; r < Rows; ++r) {
    std::memcpy(sum + r * kColChunk, &s[r], sizeof(s[r]));
    std::memcpy(correction + r * kColChunk, &c[r], sizeof(c[r]));
  }
}

// The oracle's kernel: the same loop in double, summed plainly (its order is free; double
// carries the precision), so the correction stays zero.
template <std::int64_t Rows>
void accumulate_tile(const double* rows, const double* columns, std::int64_t depth_count,
                     double* sum, double* /*correction*/) {
  Lanes<double> s[Rows];
  for (std::int64_t r = 0; r < Rows; ++r) {
    std::memcpy(&s[r], sum + r * kColChunk, sizeof(s[r]));
  }
  for (std::int64_t d = 0; d < depth_count; ++d) {
    Lanes<double> b;
    std::memcpy(&b, columns + d * kTileCols, sizeof(b));
    for (std::int64_t r = 0; r < Rows; ++r) {
      s[r] += rows[r * kDepthChunk + d] * b;
    }
  }
  for (std::int64_t r = 0; r < Rows; ++r) {
    std::memcpy(sum + r * kColChunk, &s[r], sizeof(s[r]));
  }
}

// Once a running sum is infinite or NaN, the correction is meaningless (inf - inf); the sum
// alone is what plain IEEE summation gives, so non-finite values propagate as IEEE does.
float finish_sum(float sum, float correction) {
  return std::isfinite(sum) ? sum + correction : sum;
}

double finish_sum(double sum, double correction) { return sum + correction; }

// For every (i, j) in [0, rows) x [0, cols): epilogue(i, j, sum over d ascending of
// a(i, d) * b(d, j)), with products and sums in Acc.
template <class Acc, class AStorage, class BStorage, class Epilogue>
void reduce_products(std::int64_t rows, std::int64_t cols, std::int64_t depth,
                     MatrixView<AStorage> a, MatrixView<BStorage> b, int threads,
                     const Epilogue& epilogue) {
  const std::int64_t row_chunks = (rows + kRowChunk - 1) / kRowChunk;
  const std::int64_t col_chunks = (cols + kColChunk - 1) / kColChunk;
  for_each_range(row_chunks * col_chunks, threads, [&](std::int64_t first, std::int64_t last) {
    std::vector<Acc> sum(kRowChunk * kColChunk);
    std::vector<Acc> correction(kRowChunk * kColChunk);
    std::vector<Acc> packed_rows(kRowChunk * kDepthChunk);
    std::vector<Acc> packed_columns(kColChunk * kDepthChunk);
    for (std::int64_t item = first; item < last; ++item) {
      const std::int64_t row_begin = item / col_chunks * kRowChunk;
      const std::int64_t col_begin = item % col_chunks * kColChunk;
      const std::int64_t row_count = std::min(kRowChunk, rows - row_begin);
      const std::int64_t col_count = std::min(kColChunk, cols - col_begin);
      const std::int64_t tiles = (col_count + kTileCols - 1) / kTileCols;
      std::fill(sum.begin(), sum.end(), Acc{0});
      std::fill(correction.begin(), correction.end(), Acc{0});
      for (std::int64_t depth0 = 0; depth0 < depth; depth0 += kDepthChunk) {
        const std::int64_t depth_count = std::min(kDepthChunk, depth - depth0);
        for (std::int64_t row = 0; row < row_count; ++row) {
          for (std::int64_t d = 0; d < depth_count; ++d) {
            packed_rows[row * kDepthChunk + d] = widen(a.at(row_begin + row, depth0 + d));
          }
        }
        for (std::int64_t tile = 0; tile < tiles; ++tile) {
          Acc* tile_columns = packed_columns.data() + tile * kDepthChunk * kTileCols;
          for (std::int64_t j = 0; j < kTileCols; ++j) {
            const std::int64_t col = tile * kTileCols + j;
            for (std::int64_t d = 0; d < depth_count; ++d) {
              tile_columns[d * kTileCols + j] =
                  col < col_count ? widen(b.at(depth0 + d, col_begin + col)) : Acc{0};
            }
          }
        }
        for (std::int64_t tile = 0; tile < tiles; ++tile) {
          const Acc* tile_columns = packed_columns.data() + tile * kDepthChunk * kTileCols;
          std::int64_t row = 0;
          for (; row + kRowGroup <= row_count; row += kRowGroup) {
            const std::int64_t offset = row * kColChunk + tile * kTileCols;
            accumulate_tile<kRowGroup>(packed_rows.data() + row * kDepthChunk, tile_columns,
                                      depth_count, sum.data() + offset,
                                      correction.data() + offset);
          }
          for (; row < row_count; ++row) {
            const std::int64_t offset = row * kColChunk + tile * kTileCols;
            accumulate_tile<1>(packed_rows.data() + row * kDepthChunk, tile_columns, depth_count,
                               sum.data() + offset, correction.data() + offset);
          }
        }
      }
      for (std::int64_t row = 0; row < row_count; ++row) {
        for (std::int64_t col = 0; col < col_count; ++col) {
          const std::int64_t at = row * kColChunk + col;
          epilogue(row_begin + row, col_begin + col, finish_sum(sum[at], correction[at]));
        }
      }
    }
  });
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

float silu_derivative(float x) {
  const float sigmoid = 1.0f / (1.0f + std::exp(-x));
  return sigmoid * (1.0f + x * (1.0f - sigmoid));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double silu_derivative(double x) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  return sigmoid * (1.0 + x * (1.0 - sigmoid));
}

// SiLU(temb) as stored in T (the contract's one intermediate rounding), held as float.
template <class T>
std::vector<float> stored_silu(const T* temb, std::int64_t count) {
  std::vector<float> activation(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    activation[i] = widen(narrow<T>(silu(widen(temb[i]))));
  }
  return activation;
}

// SiLU(temb) in float64, rounded to the execution dtype's storage as the reference stores it.
std::vector<double> stored_silu_oracle(DType execution, const double* temb, std::int64_t count) {
  std::vector<double> activation(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const double exact = silu(temb[i]);
    switch (execution) {
      case DType::float32:
        activation[i] = static_cast<float>(exact);
        break;
      case DType::bfloat16:
        activation[i] = round_to_bfloat16(static_cast<float>(exact));
        break;
      case DType::float64:
        activation[i] = exact;
        break;
    }
  }
  return activation;
}

// A column of ones turns a column sum into a product reduction (x * 1 is exact).
template <class Acc>
constexpr Acc kOne = 1;

// The three products of both directions, shared by reference (Acc = float, T = storage)
// and oracle (Acc = double, T = double):
//   out[b, n]         = sum_k  silu[b, k] * W[n, k]
//   grad_temb[b, k]   = sum_n  dy[b, n]   * W[n, k]   (times dsilu)
//   grad_weight[n, k] = sum_b  dy[b, n]   * silu[b, k]
//   grad_bias[n]      = sum_b  dy[b, n]
template <class Acc, class T, class Silu, class Store>
void forward_products(const Silu* activation, const T* weight, const T* bias, T* out,
                      AdalnShape shape, int threads, const Store& store) {
  const auto [B, K, N] = shape;
  reduce_products<Acc>(B, N, K, MatrixView<Silu>{activation, K, 1}, MatrixView<T>{weight, 1, K},
                       threads, [&](std::int64_t b, std::int64_t n, Acc total) {
                         out[b * N + n] = store(total + widen(bias[n]));
                       });
}

template <class Acc, class T, class Silu, class Store>
void backward_products(const T* temb, const Silu* activation, const T* weight, const T* grad_out,
                       T* grad_temb, T* grad_weight, T* grad_bias, AdalnShape shape, int threads,
                       const Store& store) {
  const auto [B, K, N] = shape;
  reduce_products<Acc>(B, K, N, MatrixView<T>{grad_out, N, 1}, MatrixView<T>{weight, K, 1},
                       threads, [&](std::int64_t b, std::int64_t k, Acc total) {
                         grad_temb[b * K + k] =
                             store(total * silu_derivative(widen(temb[b * K + k])));
                       });
  reduce_products<Acc>(N, K, B, MatrixView<T>{grad_out, 1, N}, MatrixView<Silu>{activation, K, 1},
                       threads, [&](std::int64_t n, std::int64_t k, Acc total) {
                         grad_weight[n * K + k] = store(total);
                       });
  reduce_products<Acc>(N, 1, B, MatrixView<T>{grad_out, 1, N}, MatrixView<Acc>{&kOne<Acc>, 0, 0},
                       threads, [&](std::int64_t n, std::int64_t, Acc total) {
                         grad_bias[n] = store(total);
                       });
}

const auto keep_double = [](double value) { return value; };

}  // namespace

template <class T>
void adaln_forward(const T* temb, const T* weight, const T* bias, T* out, AdalnShape shape,
                   int threads) {
  const std::vector<float> activation = stored_silu(temb, shape.B * shape.K);
  forward_products<float>(activation.data(), weight, bias, out, shape, threads,
                          [](float value) { return narrow<T>(value); });
}

template <class T>
void adaln_backward(const T* temb, const T* weight, const T* grad_out, T* grad_temb,
                    T* grad_weight, T* grad_bias, AdalnShape shape, int threads) {
  const std::vector<float> activation = stored_silu(temb, shape.B * shape.K);
  backward_products<float>(temb, activation.data(), weight, grad_out, grad_temb, grad_weight,
                           grad_bias, shape, threads,
                           [](float value) { return narrow<T>(value); });
}

template void adaln_forward<float>(const float*, const float*, const float*, float*, AdalnShape,
                                   int);
template void adaln_forward<bfloat16>(const bfloat16*, const bfloat16*, const bfloat16*,
                                      bfloat16*, AdalnShape, int);
template void adaln_backward<float>(const float*, const float*, const float*, float*, float*,
                                    float*, AdalnShape, int);
template void adaln_backward<bfloat16>(const bfloat16*, const bfloat16*, const bfloat16*,
                                       bfloat16*, bfloat16*, bfloat16*, AdalnShape, int);

void adaln_forward_oracle(DType execution, const double* temb, const double* weight,
                          const double* bias, double* out, AdalnShape shape, int threads) {
  const std::vector<double> activation =
      stored_silu_oracle(execution, temb, shape.B * shape.K);
  forward_products<double>(activation.data(), weight, bias, out, shape, threads, keep_double);
}

void adaln_backward_oracle(DType execution, const double* temb, const double* weight,
                           const double* grad_out, double* grad_temb, double* grad_weight,
                           double* grad_bias, AdalnShape shape, int threads) {
  const std::vector<double> activation =
      stored_silu_oracle(execution, temb, shape.B * shape.K);
  backward_products<double>(temb, activation.data(), weight, grad_out, grad_temb, grad_weight,
                            grad_bias, shape, threads, keep_double);
}

}  // namespace rlk::reference::qwenimage
