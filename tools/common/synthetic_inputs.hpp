// Synthetic inputs drawn as an operator's spec says (conformance.inputs), shared by
// `rlk make-inputs`, `rlk run --seed-missing` and the conformance runner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rlk/safetensors.hpp"
#include "rlk/spec.hpp"

namespace rlk::tools {

// Symbol name -> extent, e.g. {"B", 2}.
using SymbolBindings = std::map<std::string, std::int64_t>;

Result<std::vector<std::int64_t>> bind_shape(const ArgumentSpec& argument, const SymbolBindings& symbols);
// Synthetic values for one input argument, drawn from the spec's conformance.inputs
// distribution and rounded once to `dtype`. Each argument has its own generator seeded from
// (seed, its position in the spec), so its values do not depend on which others are drawn.
Result<HostTensor> draw_input(const OpSpec& spec, const ArgumentSpec& argument, DType dtype,
                              const SymbolBindings& symbols, std::uint64_t seed);

}  // namespace rlk::tools
