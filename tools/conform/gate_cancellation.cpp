// Gate 5, cancellation screen: the second half of the batch repeats the first with the spec's
// cancellation_input negated plus a perturbation of 2^-6 of its distribution's std, so the
// batch-reduced outputs are small sums of large cancelling terms. Every output of the
// directions that read that input is checked against the FP64 oracle under the spec's
// tolerance; the perturbation keeps the true result away from an exact zero.
#include <algorithm>
#include <random>

#include "plan.hpp"

namespace rlk::conform {
namespace {

constexpr double kPerturbation = 1.0 / 64;

}  // namespace

std::vector<Case> plan_cancellation(const PlanContext& context) {
  std::vector<Case> cases;
  const std::string input = context.spec->conformance.cancellation_input;
  if (input.empty()) return cases;
  const auto distribution = std::ranges::find(context.spec->conformance.inputs, input, &InputDistribution::argument);
  const double stddev = distribution == context.spec->conformance.inputs.end() ? 1.0 : distribution->stddev;
  // The accuracy batches made even, without the largest one when there are several: a pair
  // structure does not need it, and its FP64 backward oracle would cost more than the rest
  // of a GPU run.
  std::vector<std::int64_t> batches;
  for (std::int64_t b : context.sizes.accuracy_batches) batches.push_back(std::max<std::int64_t>(2, b + b % 2));
  std::ranges::sort(batches);
  if (batches.size() > 1) batches.pop_back();
  std::ranges::sort(batches);
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  if (context.quick && batches.size() > 1) batches.erase(batches.begin() + 1, batches.end());
  for (DType dtype : context.dtypes) {
    const Tolerance tolerance = context.spec->numeric(dtype)->tolerance;
    for (const DirectionLayout& d : context.layout->directions) {
      if (std::ranges::find(d.per_row_inputs, input, &ArgumentSpec::name) == d.per_row_inputs.end()) continue;
      const Direction direction = d.direction;
      for (std::uint64_t seed : context.sizes.seeds) {
        for (std::int64_t batch : batches) {
          Case c = batch_case("cancellation", dtype, seed, batch, to_string(direction));
          c.run = [c, seed, batch, direction, input, stddev, tolerance](Workbench& bench) -> std::vector<Record> {
            auto error = [&](const Error& e) { return std::vector<Record>{record_of_error(c.gate, c.id, dtype_name(c.dtype), e)}; };
            const std::int64_t half = batch / 2;
            std::vector<std::int64_t> rows(static_cast<std::size_t>(batch));
            for (std::int64_t i = 0; i < batch; ++i) rows[static_cast<std::size_t>(i)] = i % half;
            auto inputs = bench.inputs(seed, c.dtype, direction, rows);
            if (!inputs) return error(inputs.error());
            auto& slot = inputs->tensors.at(input);
            HostTensor mirrored = *slot;
            const std::int64_t per_row = mirrored.element_count() / batch;
            std::mt19937_64 generator(mix_seed(seed, 5));
            std::normal_distribution<double> noise(0.0, kPerturbation * stddev);
            for (std::int64_t i = half * per_row; i < batch * per_row; ++i) {
              set_element_from_double(mirrored, i, -element_as_double(mirrored, i) + noise(generator));
            }
            slot = std::make_shared<const HostTensor>(std::move(mirrored));
            auto judged = bench.run_with_oracle(direction, c.dtype, *inputs);
            if (!judged) return error(judged.error());
            std::vector<Record> records;
            for (const auto& [name, values] : judged->got) {
              records.push_back(judge_accuracy(c, name, values, judged->oracle.at(name), tolerance, "fp64_oracle"));
            }
            return records;
          };
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

}  // namespace rlk::conform
