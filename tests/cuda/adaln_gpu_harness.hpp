// Host-side harness for the CUDA operator tests: random inputs with the spec's reference
// distributions, runs on the GPU through the public API (outputs poisoned with NaN bytes
// first), and the CPU reference / FP64 oracle on the same storage values.
#pragma once

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "rlk/bfloat16.hpp"
#include "rlk/reference.hpp"
#include "rlk/registry.hpp"

namespace rlk::cuda_test {

inline constexpr const char* kKey = "qwenimage_adaln_mod_projection";
inline constexpr std::int64_t K = 3072;
inline constexpr std::int64_t N = 18432;

// A host tensor in storage bytes.
struct HostTensor {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;

  std::int64_t count() const {
    std::int64_t c = 1;
    for (auto e : shape) c *= e;
    return c;
  }
  double value(std::int64_t i) const {
    if (dtype == DType::bfloat16) {
      bfloat16 b;
      std::memcpy(&b.bits, bytes.data() + 2 * i, 2);
      return to_float(b);
    }
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  // Bytes of row `r` of a [rows, width] tensor.
  std::vector<std::byte> row(std::int64_t r) const {
    const std::size_t width = bytes.size() / static_cast<std::size_t>(shape[0]);
    return {bytes.begin() + r * width, bytes.begin() + (r + 1) * width};
  }
};

inline HostTensor random_tensor(DType dtype, std::vector<std::int64_t> shape, double stddev, std::uint64_t seed) {
  HostTensor t{dtype, std::move(shape), {}};
  t.bytes.resize(static_cast<std::size_t>(t.count()) * element_size(dtype));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(stddev));
  for (std::int64_t i = 0; i < t.count(); ++i) {
    const float v = normal(rng);
    if (dtype == DType::bfloat16) {
      const bfloat16 b = to_bfloat16(v);
      std::memcpy(t.bytes.data() + 2 * i, &b.bits, 2);
    } else {
      std::memcpy(t.bytes.data() + 4 * i, &v, 4);
    }
  }
  return t;
}

// Rows [first, first + count) of a per-row tensor, or rows picked by `indices`.
inline HostTensor take_rows(const HostTensor& t, const std::vector<std::int64_t>& indices) {
  HostTensor out{t.dtype, t.shape, {}};
  out.shape[0] = static_cast<std::int64_t>(indices.size());
  for (auto r : indices) {
    const auto row = t.row(r);
    out.bytes.insert(out.bytes.end(), row.begin(), row.end());
  }
  return out;
}

inline std::vector<std::int64_t> iota_rows(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> rows(count);
  for (std::int64_t i = 0; i < count; ++i) rows[i] = first + i;
  return rows;
}

// The image and text streams differ only in their weights.
enum class ModStream { image, text };

struct Inputs {
  HostTensor temb, weight, bias, grad_out;
};

inline Inputs make_inputs(DType dtype, std::int64_t B, std::uint64_t seed, ModStream stream) {
  const std::uint64_t w = seed * 4 + (stream == ModStream::image ? 1 : 2);
  return Inputs{random_tensor(dtype, {B, K}, 2.0, seed * 4 + 3), random_tensor(dtype, {N, K}, 0.02, w * 1000003),
                random_tensor(dtype, {N}, 0.02, w * 1000033), random_tensor(dtype, {B, N}, 1.0, seed * 4 + 5)};
}

inline Inputs rows_of(const Inputs& all, const std::vector<std::int64_t>& rows) {
  return Inputs{take_rows(all.temb, rows), all.weight, all.bias, take_rows(all.grad_out, rows)};
}

struct Outputs {
  HostTensor out, grad_temb, grad_weight, grad_bias;
};

void check_cuda(cudaError_t status, const char* what);

// Device memory owned by a test; freed on destruction.
class DeviceTensor {
 public:
  DeviceTensor(const HostTensor& host, int device);
  DeviceTensor(DType dtype, std::vector<std::int64_t> shape, int device);  // poisoned with 0xFF bytes (NaN)
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  DLTensor view() const;
  HostTensor download() const;
  void* data() const { return data_; }

 private:
  DType dtype_;
  std::vector<std::int64_t> shape_;
  std::size_t bytes_ = 0;
  int device_ = 0;
  void* data_ = nullptr;
};

// Runs forward then backward on `op`'s device, on `stream` (nullptr: legacy default stream).
Outputs run_on_gpu(const Op& op, const Inputs& in, cudaStream_t stream = nullptr);
// Captures forward then backward on `stream` (a stream of `op`'s device other than the legacy
// default stream) into a CUDA graph in global capture mode, then launches the graph `launches`
// times; returns the outputs after each launch.
std::vector<Outputs> run_through_graph(const Op& op, const Inputs& in, cudaStream_t stream, int launches);
// The CPU FP32 reference through the registry (get_op(key, "cpu")).
Outputs run_reference(const Inputs& in);
// The FP64 oracle on the storage values; outputs as float64 tensors.
std::map<std::string, std::vector<double>> run_oracle(const Inputs& in);

// Number of elements outside atol + rtol * |ref|; the worst one is described in `worst`.
std::int64_t count_out_of_tolerance(const HostTensor& got, const std::vector<double>& ref, Tolerance tol, std::string& worst);
// A gtest failure naming `name`, the count and the worst element where any is out of tolerance.
void expect_within(const char* name, const HostTensor& got, const std::vector<double>& ref, Tolerance tol);
// The operator spec's tolerance for `dtype`.
Tolerance tolerance_of(DType dtype);

// An op on cuda:`device`, or a skip reason when the machine cannot provide one.
std::optional<Op> cuda_op_or_skip_reason(int device, std::string& reason);

}  // namespace rlk::cuda_test
