// Gate 7, row isolation: a probe row whose neighbours' per-row inputs hold adversarial values
// (the dtype's largest finite magnitudes, NaN, Inf, with alternating signs) keeps the bytes
// of its per-row outputs from when it runs alone.
#include <cmath>
#include <limits>

#include "plan.hpp"

namespace rlk::conform {
namespace {

struct Adversary {
  const char* name;
  double value;
};

constexpr Adversary kAdversaries[] = {
    {"huge", 0},  // the dtype's largest finite value, filled in per dtype
    {"nan", std::numeric_limits<double>::quiet_NaN()},
    {"inf", std::numeric_limits<double>::infinity()},
};

double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::float32: return std::numeric_limits<float>::max();
    case DType::bfloat16: return 3.3895313892515355e38;  // 0x7f7f
    case DType::float64: return std::numeric_limits<double>::max();
  }
  return 0;
}

}  // namespace

std::vector<Case> plan_row_isolation(const PlanContext& context) {
  std::vector<Case> cases;
  if (context.sizes.seeds.empty()) return cases;
  const std::uint64_t seed = context.sizes.seeds.front();
  std::vector<std::int64_t> batches = {3};
  if (!context.quick && !context.sizes.invariance_batches.empty() && context.sizes.invariance_batches.front() > 3) {
    batches.push_back(context.sizes.invariance_batches.front());
  }
  for (DType dtype : context.dtypes) {
    for (const DirectionLayout& d : context.layout->directions) {
      if (d.per_row_outputs.empty() || d.per_row_inputs.empty()) continue;
      const Direction direction = d.direction;
      for (std::int64_t batch : batches) {
        for (const Adversary& adversary : kAdversaries) {
          Case c = batch_case("row_isolation", dtype, seed, batch, std::string(adversary.name) + "/" + std::string(to_string(direction)));
          const double value = adversary.value == 0 ? largest_finite(dtype) : adversary.value;
          c.run = [c, seed, batch, direction, value, name = std::string(adversary.name)](Workbench& bench) -> std::vector<Record> {
            const std::int64_t probe = batch / 2;
            // Pool rows 0..B-1; the probe's own values come from pool row `probe`.
            std::vector<std::int64_t> rows(static_cast<std::size_t>(batch));
            for (std::int64_t i = 0; i < batch; ++i) rows[static_cast<std::size_t>(i)] = i;
            auto inputs = bench.inputs(seed, c.dtype, direction, rows);
            if (!inputs) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), inputs.error())};
            for (const ArgumentSpec* argument : bench.layout().find(direction)->per_row_inputs) {
              auto& slot = inputs->tensors.at(argument->name);
              HostTensor poisoned = *slot;
              const std::int64_t per_row = poisoned.element_count() / batch;
              for (std::int64_t r = 0; r < batch; ++r) {
                if (r == probe) continue;
                for (std::int64_t i = 0; i < per_row; ++i) {
                  set_element_from_double(poisoned, r * per_row + i, (i % 2 == 0) ? value : -value);
                }
              }
              slot = std::make_shared<const HostTensor>(std::move(poisoned));
            }
            auto batch_outputs = bench.executor().run(direction, *inputs, bench.layout().find(direction)->per_row_output_names());
            if (!batch_outputs) return {record_of_error(c.gate, c.id, dtype_name(c.dtype), batch_outputs.error())};
            std::vector<std::int64_t> judged(static_cast<std::size_t>(batch), -1);
            judged[static_cast<std::size_t>(probe)] = probe;
            return compare_rows_to_alone(c, bench, seed, direction, *batch_outputs, judged,
                                         "probe row " + std::to_string(probe) + " of B=" + std::to_string(batch) +
                                             " between rows of " + name);
          };
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

}  // namespace rlk::conform
