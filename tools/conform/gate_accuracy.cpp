// Gate 1, accuracy: every output of every direction against the FP64 oracle and, when the
// device is not the CPU reference itself, against the CPU reference, under the spec's
// tolerance for the dtype.
#include <cstdio>

#include "compare.hpp"
#include "plan.hpp"

namespace rlk::conform {

Record judge_accuracy(const Case& c, const std::string& output, const HostTensor& got, const HostTensor& reference,
                      Tolerance tolerance, std::string check) {
  const AccuracyStats stats = compare_values(got, reference, tolerance);
  nlohmann::json numbers = stats.to_json();
  numbers["atol"] = tolerance.atol;
  numbers["rtol"] = tolerance.rtol;
  char line[320];
  std::snprintf(line, sizeof line, "vs %s: max abs %.3g, max rel %.3g, max ulp %.0f; worst [%lld] %.9g vs %.9g (%.0f ulp, %.3g of tolerance)",
                check.c_str(), stats.max_abs, stats.max_rel, stats.max_ulp, static_cast<long long>(stats.worst_index),
                stats.worst_value, stats.worst_reference, stats.worst_ulp, stats.worst_ratio);
  std::string detail = line;
  Status status = Status::passed;
  if (stats.violations > 0) {
    status = Status::failed;
    detail = std::to_string(stats.violations) + " of " + std::to_string(stats.elements) + " elements outside atol " +
             std::to_string(tolerance.atol) + " + rtol " + std::to_string(tolerance.rtol) + " * abs(ref)" +
             (stats.non_finite > 0 ? " (" + std::to_string(stats.non_finite) + " NaN/Inf: unwritten outputs stay NaN)" : "") +
             "; " + detail;
  } else if (mostly_zeros(stats)) {
    status = Status::mistrusted;
    detail = std::to_string(stats.reference_zeros) + " of " + std::to_string(stats.elements) +
             " reference elements are zero: the data cannot show an error; " + detail;
  }
  return make_record(c, output, std::move(check), status, std::move(detail), std::move(numbers));
}

std::vector<Case> plan_accuracy(const PlanContext& context) {
  std::vector<Case> cases;
  for (DType dtype : context.dtypes) {
    const Tolerance tolerance = context.spec->numeric(dtype)->tolerance;
    const bool compare_to_reference = context.implementation != "reference";
    // One unnamed set unless the spec names parameter sets (e.g. the image and text streams'
    // weights); each named set is its own case, "params=NAME/direction".
    std::vector<std::string> sets = context.spec->conformance.parameter_sets;
    const bool named_sets = !sets.empty();
    if (!named_sets) sets.emplace_back();
    for (std::uint64_t seed : context.sizes.seeds) {
      for (std::int64_t batch : context.sizes.accuracy_batches) {
        for (std::size_t set = 0; set < sets.size(); ++set) {
          for (const DirectionLayout& d : context.layout->directions) {
            const std::string tail = (named_sets ? "params=" + sets[set] + "/" : std::string()) + std::string(to_string(d.direction));
            Case c = batch_case("accuracy", dtype, seed, batch, tail);
            const Direction direction = d.direction;
            const std::string set_name = sets[set];
            c.run = [c, seed, batch, direction, tolerance, compare_to_reference, set, set_name](Workbench& bench) {
              std::vector<Record> records;
              auto fail_with = [&](const Error& e) {
                records.push_back(record_of_error(c.gate, c.id, dtype_name(c.dtype), e));
                return records;
              };
              auto synthetic = bench.first_rows(seed, c.dtype, direction, batch);
              if (!synthetic) return fail_with(synthetic.error());
              auto in_set = bench.with_parameter_set(std::move(*synthetic), seed, c.dtype, direction, set);
              if (!in_set) return fail_with(in_set.error());
              auto inputs = bench.with_checkpoint(std::move(*in_set), c.dtype);
              if (!inputs) return fail_with(inputs.error());
              auto judged = bench.run_with_oracle(direction, c.dtype, *inputs);
              if (!judged) return fail_with(judged.error());
              for (const auto& [name, values] : judged->got) {
                records.push_back(judge_accuracy(c, name, values, judged->oracle.at(name), tolerance, "fp64_oracle"));
              }
              if (compare_to_reference) {
                auto reference = bench.references()->reference(direction, *inputs);
                if (!reference) return fail_with(reference.error());
                for (const auto& [name, values] : judged->got) {
                  records.push_back(judge_accuracy(c, name, values, reference->at(name), tolerance, "cpu_reference"));
                }
              }
              if (!set_name.empty()) {
                for (Record& r : records) r.numbers["parameter_set"] = set_name;
              }
              if (const auto& checkpoint = bench.checkpoint()) {
                for (Record& r : records) {
                  r.numbers["checkpoint"] = {{"file", checkpoint->file}, {"tensor", checkpoint->tensor}, {"argument", checkpoint->argument}};
                }
              }
              return records;
            };
            cases.push_back(std::move(c));
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace rlk::conform
