// The state the gates share within one run: the operator's executor, the host references,
// the synthetic inputs of each (seed, dtype) drawn once, and every row's outputs when run
// alone (B = 1), which most invariance gates compare against.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "call.hpp"
#include "executor.hpp"
#include "layout.hpp"
#include "oracle.hpp"

namespace rlk::conform {

// A real checkpoint tensor that replaces the synthetic input of the same shape (--weights).
struct Checkpoint {
  std::string file;
  std::string tensor;
  std::string argument;  // the shared input it replaces
  HostTensor values;     // as stored in the file
};

class Workbench {
 public:
  Workbench(const OpSpec& spec, const OperatorLayout& layout, std::unique_ptr<Executor> executor,
            const reference::ReferenceEntry* reference, std::int64_t pool_rows, std::optional<Checkpoint> checkpoint);

  const OpSpec& spec() const { return *spec_; }
  const OperatorLayout& layout() const { return *layout_; }
  Executor& executor() { return *executor_; }
  // Null when the operator has no FP64 oracle.
  HostReferences* references() { return references_ ? &*references_ : nullptr; }
  const std::optional<Checkpoint>& checkpoint() const { return checkpoint_; }
  std::int64_t pool_rows() const { return pool_rows_; }

  // The inputs of `direction` for `rows` of the seed's pool, in that order; a row of -1 is a
  // row of zeros in every per-row input. Shared inputs are the pool's (never copied).
  Result<CallInputs> inputs(std::uint64_t seed, DType dtype, Direction direction, std::span<const std::int64_t> rows);
  Result<CallInputs> first_rows(std::uint64_t seed, DType dtype, Direction direction, std::int64_t count);
  // The same with the checkpoint tensor in place of its synthetic input, when one was given.
  Result<CallInputs> with_checkpoint(CallInputs inputs, DType dtype);
  // The same with the shared (batch-free) inputs of `direction` drawn for parameter set `set`
  // (the spec's conformance.parameter_sets): set 0 is the seed's own draw, set j > 0 draws them
  // with the seed mixed with j; per-row inputs, and the input a checkpoint replaces, are left as
  // they are.
  Result<CallInputs> with_parameter_set(CallInputs inputs, std::uint64_t seed, DType dtype, Direction direction,
                                        std::size_t set);
  // A workbench over the same drawn inputs that runs another implementation (a negative
  // control); it has no references and its own row-alone results.
  std::unique_ptr<Workbench> sibling(std::unique_ptr<Executor> executor) const;
  // Per-row outputs of the first `count` pool rows run as one batch; the last one is kept.
  Result<const HostOutputs*> first_rows_per_row_outputs(std::uint64_t seed, DType dtype, Direction direction, std::int64_t count);
  // The operator's outputs on `inputs` and the FP64 oracle's on the same inputs; an error when
  // the operator has no oracle.
  struct Judged {
    HostOutputs got;
    HostOutputs oracle;
  };
  Result<Judged> run_with_oracle(Direction direction, DType dtype, const CallInputs& inputs);
  // Per-row outputs of pool row `row` run alone, computed once.
  Result<const HostOutputs*> alone(std::uint64_t seed, DType dtype, Direction direction, std::int64_t row);

 private:
  using Pool = std::map<std::string, std::shared_ptr<const HostTensor>, std::less<>>;
  Result<const Pool*> pool(std::uint64_t seed, DType dtype);

  const OpSpec* spec_;
  const OperatorLayout* layout_;
  std::unique_ptr<Executor> executor_;
  std::optional<HostReferences> references_;
  std::int64_t pool_rows_;
  std::optional<Checkpoint> checkpoint_;
  std::map<std::pair<std::uint64_t, DType>, Pool> pools_;
  std::map<std::tuple<std::uint64_t, DType, Direction, std::int64_t>, HostOutputs> alone_;
  std::map<DType, std::shared_ptr<const HostTensor>> checkpoint_in_dtype_;
  std::map<std::tuple<std::uint64_t, DType, std::size_t, std::string>, std::shared_ptr<const HostTensor>> set_draws_;
  std::optional<std::pair<std::tuple<std::uint64_t, DType, Direction, std::int64_t>, HostOutputs>> last_batch_;
};

// A fixed-seed generator for the harness's own perturbations, independent of input drawing.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt);

}  // namespace rlk::conform
