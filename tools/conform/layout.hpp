// What the gates read from a spec's arguments: per direction, which inputs and outputs are
// per-row (their shape starts with the batch symbol) and which outputs are reduced over the
// batch (every other written argument). No gate names an argument of a particular operator.
#pragma once

#include <string>
#include <vector>

#include "rlk/error.hpp"
#include "rlk/spec.hpp"

namespace rlk::conform {

struct DirectionLayout {
  Direction direction = Direction::forward;
  std::vector<const ArgumentSpec*> per_row_inputs;
  std::vector<const ArgumentSpec*> shared_inputs;  // not indexed by the batch (weights)
  std::vector<const ArgumentSpec*> per_row_outputs;
  std::vector<const ArgumentSpec*> reduced_outputs;

  std::vector<const ArgumentSpec*> inputs() const;
  std::vector<const ArgumentSpec*> outputs() const;
  std::vector<std::string> per_row_output_names() const;
};

struct OperatorLayout {
  std::string batch_symbol;
  std::vector<DirectionLayout> directions;  // the directions that write something

  // Refuses specs whose shapes use a symbol other than the batch symbol, or put it anywhere
  // but the leading dimension: the gates bind only the batch.
  static Result<OperatorLayout> of(const OpSpec& spec);
  const DirectionLayout* find(Direction direction) const;
};

std::vector<std::int64_t> bind_batch(const ArgumentSpec& argument, std::int64_t batch);

}  // namespace rlk::conform
