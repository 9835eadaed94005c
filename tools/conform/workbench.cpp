#include "workbench.hpp"

#include <numeric>

#include "common/synthetic_inputs.hpp"

namespace rlk::conform {

Workbench::Workbench(const OpSpec& spec, const OperatorLayout& layout, std::unique_ptr<Executor> executor,
                     const reference::ReferenceEntry* reference, std::int64_t pool_rows, std::optional<Checkpoint> checkpoint)
    : spec_(&spec), layout_(&layout), executor_(std::move(executor)), pool_rows_(pool_rows), checkpoint_(std::move(checkpoint)) {
  if (reference != nullptr) references_.emplace(*reference, layout);
}

std::unique_ptr<Workbench> Workbench::sibling(std::unique_ptr<Executor> executor) const {
  auto other = std::make_unique<Workbench>(*spec_, *layout_, std::move(executor), nullptr, pool_rows_, std::nullopt);
  other->pools_ = pools_;
  return other;
}

Result<const Workbench::Pool*> Workbench::pool(std::uint64_t seed, DType dtype) {
  const auto key = std::make_pair(seed, dtype);
  if (const auto found = pools_.find(key); found != pools_.end()) return &found->second;
  Pool pool;
  const tools::SymbolBindings symbols = {{layout_->batch_symbol, pool_rows_}};
  for (const ArgumentSpec& argument : spec_->arguments) {
    if (argument.writes()) continue;
    auto drawn = tools::draw_input(*spec_, argument, dtype, symbols, seed);
    if (!drawn) return std::unexpected(drawn.error().with_context("drawing '" + argument.name + "'"));
    pool.emplace(argument.name, std::make_shared<const HostTensor>(std::move(*drawn)));
  }
  return &pools_.emplace(key, std::move(pool)).first->second;
}

Result<CallInputs> Workbench::inputs(std::uint64_t seed, DType dtype, Direction direction, std::span<const std::int64_t> rows) {
  auto drawn = pool(seed, dtype);
  if (!drawn) return std::unexpected(drawn.error());
  const DirectionLayout* d = layout_->find(direction);
  CallInputs call;
  call.batch = static_cast<std::int64_t>(rows.size());
  for (const ArgumentSpec* argument : d->shared_inputs) call.tensors.emplace(argument->name, (*drawn)->at(argument->name));
  for (const ArgumentSpec* argument : d->per_row_inputs) {
    const HostTensor& source = *(*drawn)->at(argument->name);
    for (std::int64_t row : rows) {
      if (row >= source.shape[0]) {
        return fail(ErrorCode::internal, "row " + std::to_string(row) + " beyond the " + std::to_string(source.shape[0]) +
                                             " rows drawn for '" + argument->name + "'");
      }
    }
    call.tensors.emplace(argument->name, std::make_shared<const HostTensor>(gather_rows(source, rows)));
  }
  return call;
}

Result<CallInputs> Workbench::first_rows(std::uint64_t seed, DType dtype, Direction direction, std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), 0);
  return inputs(seed, dtype, direction, rows);
}

Result<CallInputs> Workbench::with_checkpoint(CallInputs call, DType dtype) {
  if (!checkpoint_) return call;
  const auto slot = call.tensors.find(checkpoint_->argument);
  if (slot == call.tensors.end()) return call;
  auto& converted = checkpoint_in_dtype_[dtype];
  if (!converted) {
    HostTensor values = HostTensor::zeros(dtype, checkpoint_->values.shape);
    const std::int64_t n = values.element_count();
    for (std::int64_t i = 0; i < n; ++i) set_element_from_double(values, i, element_as_double(checkpoint_->values, i));
    converted = std::make_shared<const HostTensor>(std::move(values));
  }
  slot->second = converted;
  return call;
}

Result<CallInputs> Workbench::with_parameter_set(CallInputs call, std::uint64_t seed, DType dtype, Direction direction,
                                                std::size_t set) {
  if (set == 0) return call;
  const tools::SymbolBindings symbols = {{layout_->batch_symbol, pool_rows_}};
  for (const ArgumentSpec* argument : layout_->find(direction)->shared_inputs) {
    const auto slot = call.tensors.find(argument->name);
    if (slot == call.tensors.end()) continue;
    if (checkpoint_ && checkpoint_->argument == argument->name) continue;  // with_checkpoint replaces it
    auto& drawn = set_draws_[std::make_tuple(seed, dtype, set, argument->name)];
    if (!drawn) {
      auto values = tools::draw_input(*spec_, *argument, dtype, symbols, mix_seed(seed, 0x5e7000 + set));
      if (!values) {
        return std::unexpected(values.error().with_context("drawing '" + argument->name + "' for parameter set " + std::to_string(set)));
      }
      drawn = std::make_shared<const HostTensor>(std::move(*values));
    }
    slot->second = drawn;
  }
  return call;
}

Result<const HostOutputs*> Workbench::alone(std::uint64_t seed, DType dtype, Direction direction, std::int64_t row) {
  const auto key = std::make_tuple(seed, dtype, direction, row);
  if (const auto found = alone_.find(key); found != alone_.end()) return &found->second;
  const std::int64_t rows[] = {row};
  auto call = inputs(seed, dtype, direction, rows);
  if (!call) return std::unexpected(call.error());
  auto outputs = executor_->run(direction, *call, layout_->find(direction)->per_row_output_names());
  if (!outputs) return std::unexpected(outputs.error().with_context("row " + std::to_string(row) + " alone"));
  return &alone_.emplace(key, std::move(*outputs)).first->second;
}

Result<const HostOutputs*> Workbench::first_rows_per_row_outputs(std::uint64_t seed, DType dtype, Direction direction,
                                                                 std::int64_t count) {
  const auto key = std::make_tuple(seed, dtype, direction, count);
  if (last_batch_ && last_batch_->first == key) return &last_batch_->second;
  auto call = first_rows(seed, dtype, direction, count);
  if (!call) return std::unexpected(call.error());
  auto outputs = executor_->run(direction, *call, layout_->find(direction)->per_row_output_names());
  if (!outputs) return std::unexpected(outputs.error());
  last_batch_.emplace(key, std::move(*outputs));
  return &last_batch_->second;
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Result<Workbench::Judged> Workbench::run_with_oracle(Direction direction, DType dtype, const CallInputs& inputs) {
  auto got = executor_->run(direction, inputs);
  if (!got) return std::unexpected(got.error());
  if (!references_) return fail(ErrorCode::not_implemented, spec_->key + " has no FP64 oracle in reference.hpp");
  auto oracle = references_->oracle(direction, dtype, inputs);
  if (!oracle) return std::unexpected(oracle.error());
  return Judged{std::move(*got), std::move(*oracle)};
}

}  // namespace rlk::conform
