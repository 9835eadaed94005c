#include "oracle.hpp"

#include <algorithm>
#include <deque>
#include <vector>

namespace rlk::conform {
namespace {

// float64 copies kept: the shared inputs (weight, bias) of two parameter sets, so that going
// from one set's cases to the other's and on to the next batch converts nothing again.
constexpr std::size_t kConvertedShared = 4;

}  // namespace

HostTensor to_float64(const HostTensor& tensor) {
  HostTensor result = HostTensor::zeros(DType::float64, tensor.shape);
  const std::int64_t n = tensor.element_count();
  auto* values = reinterpret_cast<double*>(result.bytes.data());
  for (std::int64_t i = 0; i < n; ++i) values[i] = element_as_double(tensor, i);
  return result;
}

Result<HostOutputs> HostReferences::oracle(Direction direction, DType execution, const CallInputs& inputs) {
  const DirectionLayout* d = layout_->find(direction);
  std::deque<HostTensor> converted_inputs;
  HostOutputs outputs;
  TensorMap args;
  // The shared inputs of this call: their float64 copies are in `args` once converted, so none
  // of them may be evicted before the call returns (a checkpoint weight shared by every
  // parameter set made the oldest entry one of them).
  std::vector<const HostTensor*> in_use;
  for (const ArgumentSpec* argument : d->shared_inputs) {
    if (const auto slot = inputs.tensors.find(argument->name); slot != inputs.tensors.end()) in_use.push_back(slot->second.get());
  }
  for (const ArgumentSpec* argument : d->inputs()) {
    const auto& tensor = inputs.tensors.at(argument->name);
    const bool shared = std::ranges::find(d->shared_inputs, argument) != d->shared_inputs.end();
    if (shared) {
      auto found = std::ranges::find(converted_, tensor.get(), [](const auto& entry) { return entry.first.get(); });
      if (found == converted_.end()) {
        if (converted_.size() >= kConvertedShared) {
          const auto unused = std::ranges::find_if(
              converted_, [&](const auto& entry) { return std::ranges::find(in_use, entry.first.get()) == in_use.end(); });
          if (unused != converted_.end()) converted_.erase(unused);  // a list: the others stay where they are
        }
        converted_.emplace_back(tensor, to_float64(*tensor));
        found = std::prev(converted_.end());
      }
      args.emplace(argument->name, found->second.view());
    } else {
      converted_inputs.push_back(to_float64(*tensor));
      args.emplace(argument->name, converted_inputs.back().view());
    }
  }
  for (const ArgumentSpec* argument : d->outputs()) {
    auto [slot, _] = outputs.emplace(argument->name, HostTensor::zeros(DType::float64, bind_batch(*argument, inputs.batch)));
    args.emplace(argument->name, slot->second.view());
  }
  if (auto r = entry_->oracle(direction, execution, args, 0); !r) return std::unexpected(r.error().with_context("FP64 oracle"));
  return outputs;
}

Result<HostOutputs> HostReferences::reference(Direction direction, const CallInputs& inputs) {
  const DirectionLayout* d = layout_->find(direction);
  HostOutputs outputs;
  TensorMap args;
  std::optional<DType> dtype;
  for (const ArgumentSpec* argument : d->inputs()) {
    // The reference only reads its inputs; DLPack has no const tensors.
    auto& tensor = const_cast<HostTensor&>(*inputs.tensors.at(argument->name));
    dtype = tensor.dtype;
    args.emplace(argument->name, tensor.view());
  }
  for (const ArgumentSpec* argument : d->outputs()) {
    auto [slot, _] = outputs.emplace(argument->name, HostTensor::zeros(*dtype, bind_batch(*argument, inputs.batch)));
    args.emplace(argument->name, slot->second.view());
  }
  if (auto r = entry_->run(direction, args, 0); !r) return std::unexpected(r.error().with_context("CPU reference"));
  return outputs;
}

}  // namespace rlk::conform
