#include "common/synthetic_inputs.hpp"

#include <algorithm>
#include <random>

#include "rlk/bfloat16.hpp"

namespace rlk::tools {

Result<std::vector<std::int64_t>> bind_shape(const ArgumentSpec& argument, const SymbolBindings& symbols) {
  std::vector<std::int64_t> shape;
  for (const Dim& dim : argument.shape) {
    if (dim.symbol.empty()) {
      shape.push_back(dim.extent);
      continue;
    }
    const auto bound = symbols.find(dim.symbol);
    if (bound == symbols.end()) {
      return fail(ErrorCode::invalid_argument, "argument '" + argument.name + "': symbol " + dim.symbol + " is not bound");
    }
    shape.push_back(bound->second);
  }
  return shape;
}

Result<HostTensor> draw_input(const OpSpec& spec, const ArgumentSpec& argument, DType dtype, const SymbolBindings& symbols,
                              std::uint64_t seed) {
  const auto distribution = std::ranges::find(spec.conformance.inputs, argument.name, &InputDistribution::argument);
  if (distribution == spec.conformance.inputs.end()) {
    return fail(ErrorCode::spec_invalid, spec.file.string() + ": conformance.inputs has no distribution for '" + argument.name + "'");
  }
  auto shape = bind_shape(argument, symbols);
  if (!shape) return std::unexpected(shape.error());
  HostTensor tensor = HostTensor::zeros(dtype, std::move(*shape));

  const auto position =
      static_cast<std::uint32_t>(std::ranges::find(spec.arguments, argument.name, &ArgumentSpec::name) - spec.arguments.begin());
  std::seed_seq seeds{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), position};
  std::mt19937_64 generator(seeds);
  std::normal_distribution<double> normal(distribution->mean, distribution->stddev);
  const auto count = static_cast<std::size_t>(tensor.element_count());
  switch (dtype) {
    case DType::float32: {
      auto* values = reinterpret_cast<float*>(tensor.bytes.data());
      for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(normal(generator));
      break;
    }
    case DType::bfloat16: {
      auto* values = reinterpret_cast<bfloat16*>(tensor.bytes.data());
      for (std::size_t i = 0; i < count; ++i) values[i] = to_bfloat16(static_cast<float>(normal(generator)));
      break;
    }
    case DType::float64: {
      auto* values = reinterpret_cast<double*>(tensor.bytes.data());
      for (std::size_t i = 0; i < count; ++i) values[i] = normal(generator);
      break;
    }
  }
  return tensor;
}

}  // namespace rlk::tools
