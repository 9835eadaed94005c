// Gate 9, negative control: a plainly non-invariant implementation of the operator
// (negative_control.hpp) goes through the batch-invariance comparison, direction by
// direction; the record passes when the comparison catches it in at least one direction. A
// harness that cannot catch a known non-invariant path proves nothing. A direction in which
// the baseline happens to be invariant for the batches tried (a GEMM whose heuristic needs no
// split-K at that shape) is reported, not failed.
#include <numeric>

#include "negative_control.hpp"
#include "plan.hpp"

namespace rlk::conform {
namespace {

struct Outcome {
  std::optional<Record> caught;  // the failing invariance record
  std::string summary;           // one phrase for the detail
  std::optional<Record> error;   // the baseline failed to run
};

Outcome try_direction(const Case& c, Workbench& control, std::uint64_t seed, Direction direction,
                      const std::vector<std::int64_t>& batches) {
  const std::string name(to_string(direction));
  std::int64_t checked = 0;
  for (std::int64_t batch : batches) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(batch));
    std::iota(rows.begin(), rows.end(), 0);
    auto inputs = control.inputs(seed, c.dtype, direction, rows);
    if (!inputs) return {std::nullopt, "", record_of_error(c.gate, c.id, dtype_name(c.dtype), inputs.error())};
    auto outputs = control.executor().run(direction, *inputs, control.layout().find(direction)->per_row_output_names());
    if (!outputs && outputs.error().code() == ErrorCode::not_implemented) return {std::nullopt, name + ": no baseline", std::nullopt};
    if (!outputs) return {std::nullopt, "", record_of_error(c.gate, c.id, dtype_name(c.dtype), outputs.error())};
    ++checked;
    for (Record& r : compare_rows_to_alone(c, control, seed, direction, *outputs, rows, name + " B=" + std::to_string(batch))) {
      if (r.status == Status::failed) return {std::move(r), name + ": caught at B=" + std::to_string(batch), std::nullopt};
      if (r.status != Status::passed) return {std::nullopt, "", std::move(r)};
    }
  }
  return {std::nullopt, name + ": invariant in all " + std::to_string(checked) + " batches tried", std::nullopt};
}

}  // namespace

std::vector<Case> plan_negative_control(const PlanContext& context) {
  std::vector<Case> cases;
  if (context.sizes.seeds.empty()) return cases;
  const std::uint64_t seed = context.sizes.seeds.front();
  const std::vector<std::int64_t> batches = context.sizes.negative_control_batches;
  const std::string key = context.spec->key;
  const Device device = context.device;
  for (DType dtype : context.dtypes) {
    Case c;
    c.gate = "negative_control";
    c.id = "negative_control/" + dtype_name(dtype) + "/seed=" + std::to_string(seed);
    c.dtype = dtype;
    c.seed = seed;
    c.run = [c, seed, batches, key, device](Workbench& bench) -> std::vector<Record> {
      auto baseline = find_negative_control(key, device);
      if (!baseline) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), baseline.error())};
      const std::string name = baseline->name;
      auto executor = Executor::create(std::move(*baseline), bench.layout());
      if (!executor) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), executor.error())};
      auto control = bench.sibling(std::move(*executor));
      std::string summary;
      std::optional<Record> caught;
      for (const DirectionLayout& d : bench.layout().directions) {
        if (d.per_row_outputs.empty()) continue;
        Outcome outcome = try_direction(c, *control, seed, d.direction, batches);
        if (outcome.error) {
          outcome.error->detail = "negative control (" + name + "): " + outcome.error->detail;
          return {std::move(*outcome.error)};
        }
        summary += (summary.empty() ? "" : "; ") + outcome.summary;
        if (outcome.caught && !caught) caught = std::move(outcome.caught);
      }
      if (!caught) {
        return {make_record(c, "", "caught", Status::failed,
                            "the invariance comparison did not catch the negative control (" + name + "): " + summary,
                            {{"baseline", name}})};
      }
      return {make_record(c, caught->output, "caught", Status::passed,
                          "the invariance comparison caught the negative control (" + name + "): " + summary + "; " +
                              caught->detail,
                          {{"baseline", name}, {"evidence", caught->numbers}})};
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace rlk::conform
