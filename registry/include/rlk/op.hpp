// An operator handle returned by Registry::get_op. It co-owns the plugin library it came
// from, so the library stays loaded for as long as any handle (or copy) is alive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rlk/device.hpp"
#include "rlk/error.hpp"
#include "rlk/spec.hpp"
#include "rlk/tensor.hpp"

namespace rlk {

struct RunOptions {
  void* stream = nullptr;     // cudaStream_t for CUDA ops; nullptr = legacy default stream
  void* workspace = nullptr;  // caller-owned device memory of at least workspace_bytes()
  std::uint64_t workspace_bytes = 0;
};

namespace detail {
struct OpInstance;
}

class Op {
 public:
  const OpSpec& spec() const;
  const std::string& key() const { return spec().key; }
  Device device() const;
  // Where the implementation comes from: "reference" or the plugin file's path.
  const std::string& implementation() const;

  // Validates `args` against the spec (names, dtypes, shapes, device, strides, alignment,
  // aliasing) and runs. On any error no output byte is written.
  Result<void> run(Direction direction, const TensorMap& args, const RunOptions& options = {}) const;
  Result<void> forward(const TensorMap& args, const RunOptions& options = {}) const {
    return run(Direction::forward, args, options);
  }
  Result<void> backward(const TensorMap& args, const RunOptions& options = {}) const {
    return run(Direction::backward, args, options);
  }
  // Device workspace (bytes) a call with these arguments needs; 0 if none.
  Result<std::uint64_t> workspace_bytes(Direction direction, const TensorMap& args) const;

  explicit Op(std::shared_ptr<const detail::OpInstance> instance) : instance_(std::move(instance)) {}

 private:
  std::shared_ptr<const detail::OpInstance> instance_;
};

// Checks a call's arguments against the spec; exposed for tools and tests.
Result<void> validate_call(const OpSpec& spec, Direction direction, const Device& device,
                           const TensorMap& args);

}  // namespace rlk
