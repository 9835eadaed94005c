// The CPU reference implementations and FP64 oracles, one entry per operator key.
// The CPU platform slot of a spec routes here; conformance uses the oracles.
#pragma once

#include <span>
#include <string_view>

#include "rlk/error.hpp"
#include "rlk/spec.hpp"
#include "rlk/tensor.hpp"

namespace rlk::reference {

struct ReferenceEntry {
  std::string_view key;
  // The reference under the spec's arithmetic contract, on CPU tensors whose dtype is the
  // execution dtype (float32 or bfloat16). Arguments are already validated against the spec.
  // Bytes never depend on `threads` (0 = hardware concurrency).
  Result<void> (*run)(Direction direction, const TensorMap& args, int threads);
  // The FP64 oracle: every tensor float64 on the CPU, holding the storage values of the
  // inputs; applies the contract's intermediate storage rounding for `execution` dtype
  // (e.g. SiLU rounded to bfloat16) and otherwise computes in float64.
  Result<void> (*oracle)(Direction direction, DType execution, const TensorMap& args, int threads);
};

const ReferenceEntry* find_reference(std::string_view key);
std::span<const ReferenceEntry> all_references();

}  // namespace rlk::reference
