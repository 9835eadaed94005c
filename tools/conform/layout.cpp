#include "layout.hpp"

namespace rlk::conform {

std::vector<const ArgumentSpec*> DirectionLayout::inputs() const {
  auto all = per_row_inputs;
  all.insert(all.end(), shared_inputs.begin(), shared_inputs.end());
  return all;
}

std::vector<const ArgumentSpec*> DirectionLayout::outputs() const {
  auto all = per_row_outputs;
  all.insert(all.end(), reduced_outputs.begin(), reduced_outputs.end());
  return all;
}

std::vector<std::string> DirectionLayout::per_row_output_names() const {
  std::vector<std::string> names;
  for (const ArgumentSpec* argument : per_row_outputs) names.push_back(argument->name);
  return names;
}

Result<OperatorLayout> OperatorLayout::of(const OpSpec& spec) {
  OperatorLayout layout;
  layout.batch_symbol = spec.conformance.batch_symbol;
  for (const ArgumentSpec& argument : spec.arguments) {
    for (std::size_t i = 0; i < argument.shape.size(); ++i) {
      const std::string& symbol = argument.shape[i].symbol;
      if (symbol.empty()) continue;
      if (symbol != layout.batch_symbol || i != 0) {
        return fail(ErrorCode::not_implemented, spec.key + ": argument '" + argument.name + "' uses symbol " + symbol +
                                                    " in dimension " + std::to_string(i) + "; conformance binds only " +
                                                    layout.batch_symbol + " as the leading dimension");
      }
    }
  }
  for (Direction direction : {Direction::forward, Direction::backward}) {
    DirectionLayout d;
    d.direction = direction;
    for (const ArgumentSpec* argument : spec.arguments_of(direction)) {
      const bool per_row = !argument->shape.empty() && argument->shape[0].symbol == layout.batch_symbol;
      if (argument->writes()) {
        (per_row ? d.per_row_outputs : d.reduced_outputs).push_back(argument);
      } else {
        (per_row ? d.per_row_inputs : d.shared_inputs).push_back(argument);
      }
    }
    if (!d.outputs().empty()) layout.directions.push_back(std::move(d));
  }
  return layout;
}

const DirectionLayout* OperatorLayout::find(Direction direction) const {
  for (const DirectionLayout& d : directions) {
    if (d.direction == direction) return &d;
  }
  return nullptr;
}

std::vector<std::int64_t> bind_batch(const ArgumentSpec& argument, std::int64_t batch) {
  std::vector<std::int64_t> shape;
  for (const Dim& dim : argument.shape) shape.push_back(dim.symbol.empty() ? dim.extent : batch);
  return shape;
}

}  // namespace rlk::conform
